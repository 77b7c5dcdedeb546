"""``python -m dlscale`` runs the command line.

The guard matters under ``mpiexec -n N python -m mpi4py.futures -m dlscale ...``:
every worker rank imports this module again (as ``__worker__``, to unpickle what
rank 0 sends), and must not run the command line a second time.
"""

from dlscale.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
