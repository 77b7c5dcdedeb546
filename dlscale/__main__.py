"""``python -m dlscale`` runs the command line."""

from dlscale.cli import main

raise SystemExit(main())
