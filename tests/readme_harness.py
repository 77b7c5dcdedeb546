"""Read the commands README.md shows and turn them into runnable argument lists.

Used by ``tests/test_readme_commands.py``. What is run:

- every line of every fenced ``sh`` block (``\\`` continuations joined, ``# comments``
  dropped, ``&&`` splitting a line into steps); the lines of one block run in order
  in one temporary folder, so a later line may use an earlier line's file;
- every line that starts with ``$ `` in any fenced block (a command shown with its
  output, in a ``text`` or unnamed fence);
- every inline code span that is a whole command of a known program (:data:`PROGRAMS`:
  ``dlscale``, ``mpiexec``, ``python``, ``pip``, also as ``DIR/bin/NAME``) with no
  placeholder (``dlscale plan resnet50 --epochs 90``, not ``dlscale sweep STUDY.toml``;
  not a fragment such as ``mpiexec -n 4`` or the program's name ``python -m dlscale``);
- every fenced ``python`` block, as a script run by this interpreter.

How a README command maps to what the test runs (:func:`to_steps`):

- ``python3 -m venv DIR``: not run (the tests already run in an installed environment);
- ``[DIR/bin/]pip install -e .`` or ``'.[EXTRA,...]'``: not run; instead each extra
  must exist in ``pyproject.toml`` and dlscale must be installed in this interpreter;
- ``[DIR/bin/]dlscale ...``: the ``dlscale`` script next to this interpreter
  (``python -m dlscale`` where there is none);
- ``[DIR/bin/]python[3] ...``: this interpreter;
- ``mpiexec -n K ...``: the ``mpiexec`` next to this interpreter with 2 ranks;
- smaller sizes where a flag allows (:data:`SMALL`): ``--nodes`` at most 64 nodes
  (a co-simulation, ``--cosim``, at most :data:`COSIM_MAX_NODES`), ``--budget-s 5``;
  and flags added for a small run where the command has none (:data:`ADDED`:
  ``calibrate --quick``, ``validate local --quick``, ``validate published --fidelity
  analytical``; a time-to-target run
  ``--iterations`` :data:`TARGET_ITERATIONS`, its ``--tune`` and ``--repeats`` kept;
  a named benchmark ``--quick`` where it has one);
- a few commands are not run, each with its reason (:data:`NOT_RUN`).

Anything else (another program, a pipe, a redirection) is an error: a README edit
that adds a command the harness cannot run fails the tests instead of being skipped.
"""

from __future__ import annotations

import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
MPIEXEC = BIN / "mpiexec"
MPI_RANKS = 2
MAX_NODES = 64

#: Flag -> rewrite of its value for a small run (only where the command has the flag).
SMALL = {
    "--nodes": lambda v: cap_nodes(v, MAX_NODES),
    "--budget-s": lambda v: "5",
}

#: Leading dlscale words -> flags appended for a small run (documented flags only).
ADDED = {
    ("calibrate",): ["--quick"],           # 4 B .. 64 KiB, allreduce only: ~7 s, not ~20 s
    ("validate", "local"): ["--quick"],    # 1 KiB .. 64 KiB, 100 iterations, 2 rounds
    # the simulated rows (co-simulated orderings, 4,600-node simulations) take minutes;
    # tests/test_validation_published.py checks them once
    ("validate", "published"): ["--fidelity", "analytical"],
}

#: Largest node count of a co-simulation (``--cosim``): its real numerics run per worker.
COSIM_MAX_NODES = 4
#: Step cap (``--iterations``) added to a ``--target-accuracy`` run that has none.
TARGET_ITERATIONS = 20

#: Programs an inline code span may start with to be a command (also ``DIR/bin/NAME``).
PROGRAMS = ("dlscale", "mpiexec", "mpirun", "python", "python3", "pip")

#: Text a command contains -> why the harness does not run it.
NOT_RUN = {
    "tests/typecheck.py": "mypy over the code base: tests/test_lint.py runs the same check",
    "-m pytest": "the test suite itself; .ci/run runs it (tests/test_readme.py checks "
                 "that the README's command is what .ci/run does)",
    "benchmarks/run.py": "only with a benchmark name: every benchmark in turn takes about "
                         "75 s on 2 cores and holds timings, which stay out of the tests",
}

#: Output flags whose value is a file (or folder) the command promises to write.
OUTPUT_FLAGS = ("-o", "--output", "--plot", "--plots", "--trace-out", "--json")

_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_,]*$")


class HarnessError(Exception):
    """The README shows a command the harness does not know how to run."""


@dataclass
class Step:
    """One process to run: its argv, the files it must leave behind, whether it uses MPI."""

    argv: list[str]
    outputs: list[str] = field(default_factory=list)
    mpi: bool = False


@dataclass
class Example:
    """One README example: the text as shown and where it came from."""

    where: str
    lines: list[str]
    #: What a ``python`` block prints, where a ``text`` block follows it directly.
    output: str | None = None

    @property
    def mpi(self) -> bool:
        return any(re.search(r"(^|\s)(mpiexec|mpirun)\s", ln) for ln in self.lines)


def cap_nodes(spec: str, cap: int) -> str:
    """A ``--nodes`` value whose largest node count is at most ``cap``.

    >>> cap_nodes("1-4608", 64), cap_nodes("1-8", 64), cap_nodes("128", 64)
    ('1-64', '1-8', '64')
    >>> cap_nodes("1,2,4,4608", 64), cap_nodes("100-1000:100", 64)
    ('1,2,4', '64')
    """
    if "," in spec:
        kept = [p for p in spec.split(",") if int(p) <= cap]
        return ",".join(kept) or str(cap)
    m = re.fullmatch(r"(\d+)-(\d+)(:\d+)?", spec)
    if m:
        lo, hi = int(m.group(1)), int(m.group(2))
        if lo > cap or (m.group(3) and lo + int(m.group(3)[1:]) > cap):
            return str(min(lo, cap))
        return f"{lo}-{min(hi, cap)}{m.group(3) or ''}"
    return str(min(int(spec), cap))


def is_placeholder(token: str) -> bool:
    """Whether a token is a synopsis placeholder (``N``, ``STUDY.toml``, ``[--x]``)."""
    if any(c in token for c in "[]|") or "..." in token:
        return True
    return bool(_PLACEHOLDER.match(re.split(r"[.=]", token, maxsplit=1)[0]))


def sh_blocks(readme: str) -> list[Example]:
    """The fenced ``sh`` blocks, one :class:`Example` each (logical lines)."""
    out = []
    for m in re.finditer(r"^```sh\n(.*?)^```", readme, re.S | re.M):
        lineno = readme[:m.start()].count("\n") + 1
        text = m.group(1).replace("\\\n", " ")
        lines = [ln.strip() for ln in text.splitlines()]
        lines = [ln for ln in lines if ln and not ln.startswith("#")]
        out.append(Example(f"README.md:{lineno}", lines))
    return out


def dollar_lines(readme: str) -> list[Example]:
    """The ``$ COMMAND`` lines of every fenced block, one :class:`Example` each."""
    out = []
    for m in re.finditer(r"^```[^\n]*\n(.*?)^```", readme, re.S | re.M):
        first = readme[:m.start()].count("\n") + 2
        for i, ln in enumerate(m.group(1).splitlines()):
            if ln.startswith("$"):
                out.append(Example(f"README.md:{first + i}", [ln[1:].strip()]))
    return out


def python_blocks(readme: str) -> list[Example]:
    r"""The fenced ``python`` blocks, each one program (:attr:`Example.lines` holds it
    whole); a ``text`` block right after one is what it prints (:attr:`Example.output`).

    >>> [b.output for b in python_blocks("```python\nprint(1)\n```\n\n```text\n1\n```\n")]
    ['1\n']
    """
    return [Example(f"README.md:{readme[:m.start()].count(chr(10)) + 1}", [m.group(1)],
                    m.group(3))
            for m in re.finditer(r"^```python\n(.*?)^```\n\n?(```text\n(.*?)^```)?", readme,
                                 re.S | re.M)]


def inline_commands(readme: str) -> list[Example]:
    """Inline code spans outside fenced blocks that are whole commands without placeholders."""
    prose = re.sub(r"^```.*?^```", "", readme, flags=re.S | re.M)
    out = []
    for m in re.finditer(r"`([^`]+)`", prose):
        if "\n\n" in m.group(1):
            continue  # not a span: an unpaired backtick
        text = " ".join(m.group(1).split())  # a span may wrap across lines
        words = text.split()
        if len(words) < 2 or Path(words[0]).name not in PROGRAMS:
            continue  # not a command, or the bare name (`dlscale`)
        if words[1:] == ["-m", "dlscale"] or (Path(words[0]).name in ("mpiexec", "mpirun")
                                               and len(words) <= 3):
            continue  # the program's name (`python -m dlscale`), a fragment (`mpiexec -n 4`)
        if any(is_placeholder(w) for w in words):
            continue  # a synopsis (`dlscale sweep STUDY.toml`)
        out.append(Example(f"README.md inline `{text}`", [text]))
    return out


def synopsis_keys(readme: str) -> list[tuple[str, ...]]:
    """The subcommands of the ``## Command line`` summary: their leading literal words.

    ``mpiexec -n N dlscale calibrate [--budget-s S]`` gives ``("calibrate",)``,
    ``dlscale validate published [--case NAME]`` gives ``("validate", "published")``.
    """
    part = readme.split("## Command line", 1)[1]
    block = re.search(r"^```\n(.*?)^```", part, re.S | re.M).group(1)
    keys = []
    for line in block.splitlines():
        words = line.split()
        if not words or line[0].isspace() or "dlscale" not in words:
            continue
        key = []
        for w in words[words.index("dlscale") + 1:]:
            if w.startswith(("-", "[")) or is_placeholder(w):
                break
            key.append(w)
        keys.append(tuple(key))
    return keys


def dlscale_words(line: str) -> tuple[str, ...]:
    """The words after the ``dlscale`` program in a command line (empty if none).

    >>> dlscale_words("mpiexec -n 2 python -m mpi4py.futures -m dlscale sweep s.toml")
    ('sweep', 's.toml')
    """
    for step in line.split("&&"):
        words = _args_of(shlex.split(step, comments=True))
        if words:
            return words
    return ()


def _args_of(words: list[str]) -> tuple[str, ...]:
    for i, w in enumerate(words):
        if Path(w).name == "dlscale":
            return tuple(words[i + 1:])
    return ()


def dlscale_program() -> list[str]:
    """This interpreter's ``dlscale`` script, or ``python -m dlscale``."""
    script = BIN / "dlscale"
    return [str(script)] if script.exists() else [sys.executable, "-m", "dlscale"]


def _check_install(words: list[str]) -> None:
    """``pip install [-q] -e SPEC``: SPEC is this project, its extras exist, it is installed."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    specs = [w for w in words[words.index("install") + 1:] if not w.startswith("-")]
    if len(specs) != 1 or not re.fullmatch(r"\.(\[[\w,-]+\])?", specs[0]):
        raise HarnessError(f"pip install {' '.join(specs)}: the harness knows only "
                           "'pip install -e .' and '.[extra,...]'")
    extras = re.findall(r"[\w-]+", specs[0][1:])
    known = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    missing = [e for e in extras if e not in known]
    if missing:
        raise HarnessError(f"pip install {specs[0]}: no extra {missing} in pyproject.toml "
                           f"(has {sorted(known)})")
    try:
        distribution("dlscale")
    except PackageNotFoundError:
        raise HarnessError("dlscale is not installed in this interpreter") from None


def _rewrite(words: list[str]) -> list[str]:
    out = list(words)
    for i, w in enumerate(out[:-1]):
        if w == "--nodes" and "--cosim" in out:
            out[i + 1] = cap_nodes(out[i + 1], COSIM_MAX_NODES)
        elif w in SMALL:
            out[i + 1] = SMALL[w](out[i + 1])
    if "--target-accuracy" in out and "--iterations" not in out:
        out += ["--iterations", str(TARGET_ITERATIONS)]
    bench = [w for w in out if w.endswith("benchmarks/run.py")]
    if bench:  # a named benchmark's smoke run, where it has one
        names = out[out.index(bench[0]) + 1:]
        if names and all('"--quick"' in (ROOT / "benchmarks" / f"bench_{n}.py").read_text()
                          for n in names if (ROOT / "benchmarks" / f"bench_{n}.py").is_file()):
            out.append("--quick")
    return out


def to_steps(line: str) -> list[Step] | str:
    """The processes one README command line runs, or the reason it is not run.

    Raises :class:`HarnessError` for a program or shell syntax the harness does not map.
    """
    for text, why in NOT_RUN.items():
        if text in line and not (text == "benchmarks/run.py"
                                 and re.search(r"run\.py\s+\w", line)):
            return why
    steps = []
    for part in line.split("&&"):
        lexer = shlex.shlex(part, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
        bad = [w for w in words if w and set(w) <= set("|&;<>()")]
        if bad:
            raise HarnessError(f"{line!r}: shell syntax {bad} is not run by the harness")
        if not words:
            continue
        prefix: list[str] = []
        mpi = False
        if words[0] in ("mpiexec", "mpirun"):
            if len(words) < 4 or words[1] not in ("-n", "-np"):
                raise HarnessError(f"{line!r}: the harness runs 'mpiexec -n K PROGRAM ...' only")
            prefix, words, mpi = [str(MPIEXEC), "-n", str(MPI_RANKS)], words[3:], True
        prog = Path(words[0]).name
        if prog in ("python", "python3") and words[1:3] == ["-m", "venv"]:
            continue
        if prog == "pip" or (prog.startswith("python") and words[1:3] == ["-m", "pip"]):
            _check_install(words)
            continue
        if prog == "dlscale":
            argv = [*dlscale_program(), *words[1:]]
        elif prog in ("python", "python3"):
            argv = [sys.executable, *words[1:]]
        else:
            raise HarnessError(f"{line!r}: unknown program {words[0]!r}; map it in "
                               "tests/readme_harness.py or list it in NOT_RUN with the reason")
        argv = _rewrite(argv)
        args = _args_of(words)
        for lead, extra in ADDED.items():
            if args[:len(lead)] == lead:
                argv += extra
        outputs = [argv[i + 1] for i, w in enumerate(argv[:-1]) if w in OUTPUT_FLAGS]
        steps.append(Step(prefix + argv, outputs, mpi))
    return steps


def uncovered(readme: str, examples: list[Example]) -> list[tuple[str, ...]]:
    """Summary forms (:func:`synopsis_keys`) that no runnable example starts with."""
    run = []
    for ex in examples:
        for line in ex.lines:
            if not isinstance(to_steps(line), str):
                run.append(dlscale_words(line))
    return [k for k in synopsis_keys(readme) if not any(w[:len(k)] == k for w in run)]
