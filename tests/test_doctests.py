"""Run the ``>>>`` examples of every dlscale module."""

import doctest
import importlib
import pkgutil

import pytest

import dlscale


def _modules():
    names = ["dlscale"]
    for info in pkgutil.walk_packages(dlscale.__path__, "dlscale."):
        names.append(info.name)
    for sub in ("perfmodel", "simulator", "kernels", "validation"):
        pkg = importlib.import_module(f"dlscale.{sub}")
        names.append(pkg.__name__)
        names += [i.name for i in pkgutil.walk_packages(pkg.__path__, f"dlscale.{sub}.")]
    # dlscale.__main__ is included: importing it must not run the command line (the
    # workers of `python -m mpi4py.futures -m dlscale` import it again, issue 17).
    return sorted(set(names))


@pytest.mark.parametrize("name", _modules())
def test_doctests(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
