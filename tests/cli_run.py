"""Running the command line inside a test: ``main(argv)`` with its exit status, whether
it returns one or argparse raises ``SystemExit``, and what it printed."""

from __future__ import annotations

from typing import Any

from dlscale.cli import main


def run_cli(argv: list[str], capsys: Any) -> tuple[int, str, str]:
    """``(status, stdout, stderr)`` of ``dlscale ARGV``; output printed before the call
    is dropped (``capsys``: pytest's fixture)."""
    capsys.readouterr()
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = int(exc.code or 0)
    cap = capsys.readouterr()
    return rc, cap.out, cap.err
