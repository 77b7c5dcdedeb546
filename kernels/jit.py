"""``njit`` with numba's on-disk cache where there is somewhere to keep it.

numba's ``cache=True`` keeps each compiled function next to its source (the package's
``__pycache__``), else in the user's cache folder (``$XDG_CACHE_HOME/numba`` or
``~/.cache/numba``), or in ``$NUMBA_CACHE_DIR`` where it is set; a second process then
loads the machine code instead of compiling it again. Where none of these can be
written (a package installed read-only and a read-only home, as in some containers
and on compute nodes), numba refuses the decoration itself with a ``RuntimeError``
("cannot cache function ...: no locator available"), so importing any module that
decorates a function so ended in a traceback. :func:`njit` compiles such a function
without the cache instead: every process compiles it again (slower to start), the
same machine code and the same answers, and nothing is printed.

Examples
--------
>>> @njit()
... def twice(x):
...     return 2 * x
>>> twice(21)
42
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import numba

__all__ = ["njit"]

#: The decorated function's type, which the dispatcher stands for (called alike).
F = TypeVar("F", bound=Callable[..., Any])


def njit(**options: Any) -> Callable[[F], F]:
    """``numba.njit(cache=True, **options)`` where numba has a folder to cache the
    function in, else ``numba.njit(**options)`` (module docstring).

    Parameters
    ----------
    **options
        numba's ``njit`` options (``parallel``, ``inline``...), ``cache`` excepted.

    Returns
    -------
    callable
        The decorator (typed as returning the function it is given: the dispatcher
        is called as the function is).
    """
    if "cache" in options:
        raise TypeError("njit: the cache is this decorator's to set; do not pass cache")

    def decorate(fn: F) -> F:
        try:
            return cast(F, numba.njit(cache=True, **options)(fn))
        except RuntimeError as exc:
            if "no locator available" not in str(exc):
                raise
            return cast(F, numba.njit(**options)(fn))

    return decorate
