"""Every flag acts or is refused (issue 26 item 5 and its "Done when").

The flags are read from the argparse parsers that :func:`dlscale.cli.build_parser`
builds (every subcommand, and ``simulate`` in both of its modes: one collective and
training), so a new flag without an entry in :data:`CHECKS` fails
:func:`test_every_flag_has_a_check`. Each entry is one of:

- :class:`Acts`: the command with the flag gives another output than without it,
  for the input the entry gives (stdout, stderr where stated, the exit status and
  every file the run writes), while the same command run twice gives the same
  output (so the difference is the flag's, not a clock's);
- :class:`Refused`: the flag is refused in that mode: exit status 2, one line on
  stderr naming the flag;
- :class:`Reaches`: for the MPI commands (``calibrate``, ``validate local``), whose
  measurements take minutes: the flag changes what the measuring function is asked
  for (its arguments, the MPI environment) or what the command writes from its
  report; the measuring function is replaced by a recorder, MPI by one fake rank.
- :class:`Custom`: a check of its own (the sweep's executor, jobs, resume).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from dlscale.cli import build_parser, main

ROOT = Path(__file__).resolve().parents[1]
PROFILE = str(ROOT / "examples" / "profiles" / "this-host.json")
TRACE = str(ROOT / "examples" / "traces" / "pytorch_resnet50_v100_b64.json")
TIMELINE = str(ROOT / "examples" / "traces" / "horovod_resnet50_4ranks.json")
REPORT = ROOT / "tests" / "data" / "validate_local_2ranks.json"

STUDY = ('name = "flags"\ncluster = "stampede2-skx"\nworkload = "resnet50"\nnodes = [1, 2]\n'
         '[vary]\ncollective = ["ring", "rabenseifner"]\n')
OTHER_STUDY = STUDY.replace('name = "flags"', 'name = "other"')

PRED = ["predict", "summit", "resnet50", "--nodes", "1,64"]
LLM = ["predict", "dgx1-v100", "gpt-1.7b"]
PRED_PS = ["predict", "summit", "vgg16", "--nodes", "1,4", "--runtime", "parameter-server"]
SIM_PS = ["simulate", "summit", "vgg16", "--nodes", "4", "--iterations", "2", "--runtime",
          "parameter-server"]
SIMT = ["simulate", "summit", "resnet50", "--nodes", "2", "--iterations", "2"]
NOISY = [*SIMT, "--noise", "lognormal:0.1"]
SKX = ["simulate", "stampede2-skx", "resnet50", "--nodes", "2", "--iterations", "2"]
EASGD = ["simulate", "cori-knl", "googlenet", "--nodes", "2", "--algorithm", "async-easgd",
         "--iterations", "4"]
COSIM = ["simulate", "cori-knl", "googlenet", "--nodes", "2", "--algorithm", "async-sgd",
         "--iterations", "10", "--cosim", "--format", "json"]
TARGET = ["simulate", "cori-knl", "googlenet", "--nodes", "2", "--algorithm", "async-sgd",
          "--target-accuracy", "0.5", "--iterations", "20"]
SIMC = ["simulate", "stampede2-skx", "--nodes", "4"]
WIDE = ["simulate", "stampede2-skx", "--nodes", "64", "--size-bytes", "1e7"]
SWEEP = ["sweep", "s.toml", "--executor", "serial", "--quiet"]
PLAN = ["plan", "resnet50", "--cluster", "summit", "--nodes", "1-64"]
LLM_PLAN = ["plan", "gpt-1.7b", "--cluster", "dgx1-v100", "--global-batch", "16", "--nodes", "1"]
# analytical only: you-sc17's simulated fidelity co-simulates its orderings (minutes)
PUBLISHED = ["validate", "published", "--case", "you-sc17", "--fidelity", "analytical"]
CALIBRATE = ["calibrate", "--quick"]
DAINT = str(ROOT / "validation" / "holdout" / "piz-daint-p100.toml")
FIT = ["fit", DAINT, "inception-v3", "--rates", str(ROOT / "examples" / "fit" /
                                                   "daint-inception-v3.toml"),
       "--runtime", "parameter-server", "--batch", "64", "--data", "synthetic", "-o", "f.json"]
FIT_CSV = ["fit", DAINT, "resnet50", "--rates", "r.csv", "-o", "f.json"]


def _rates(folder: Path) -> None:
    (folder / "r.csv").write_text("nodes,samples_per_s\n1,130\n2,250\n4,480\n")
    (folder / "e.csv").write_text("nodes,efficiency\n2,0.9\n")
LOCAL = ["validate", "local", "--quick"]

#: Wall-clock figures a run prints: blanked before outputs are compared.
_CLOCKS = [re.compile(r"simulated in [0-9.]+ s"), re.compile(r'"wall_s": [-0-9.e+]+'),
           re.compile(r'"(elapsed|started|finished)[a-z_]*": [^,}\n]+'),
           re.compile(r"\[\d\d:\d\d<[^\]]*\]")]  # a progress bar's elapsed time and rate


#: A progress bar's frames before its last: how many it draws depends on the clock
#: (it redraws at most every ``mininterval``), so only the last frame is compared.
_FRAMES = re.compile(r"(?:\r[^\r\n]*)+(\r[^\r\n]*)")


def _normal(text: str) -> str:
    for rx in _CLOCKS:
        text = rx.sub("<clock>", text)
    return _FRAMES.sub(r"\1", text)


@dataclass
class Outcome:
    rc: int
    out: str
    err: str
    files: dict[str, str]


def _files(folder: Path) -> dict[str, str]:
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name not in ("s.toml", "README.md") and not p.name.endswith(".lock"):
            data = p.read_bytes()
            try:
                text = data.decode()
            except UnicodeDecodeError:
                text = data.hex()
            if p.suffix == ".jsonl":  # appended as points finish: order is not a result
                text = "\n".join(sorted(text.splitlines()))
            out[p.relative_to(folder).as_posix()] = _normal(text)
    return out


def run_in(folder: Path, argv: list[str], capsys, setup: Callable[[Path], None] | None = None,
           tty: bool = False) -> Outcome:
    """Run ``dlscale argv`` with ``folder`` (fresh) as the working directory."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "s.toml").write_text(STUDY)
    if setup is not None:
        setup(folder)
    here = os.getcwd()
    os.chdir(folder)
    capsys.readouterr()
    try:
        if tty:
            sys.stderr.isatty = lambda: True  # type: ignore[method-assign]
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = int(exc.code or 0)
        finally:
            if tty:
                del sys.stderr.isatty
    finally:
        os.chdir(here)
    cap = capsys.readouterr()
    return Outcome(rc, _normal(cap.out), _normal(cap.err), _files(folder))


@dataclass
class Acts:
    base: list[str]
    extra: list[str]
    setup: Callable[[Path], None] | None = None
    stderr: bool = False
    tty: bool = False
    statuses: tuple[int, ...] = (0, 1)   # a plan nothing meets exits 1

    def check(self, tmp_path: Path, capsys, monkeypatch) -> None:
        def once(name, argv):
            o = run_in(tmp_path / name, argv, capsys, self.setup, self.tty)
            assert o.rc in self.statuses, (argv, o.err)
            return (o.rc, o.out, o.err if self.stderr else "", o.files)

        plain, again = once("a", self.base), once("b", self.base)
        assert plain == again, "the same command gave two outputs: a clock is not blanked"
        assert once("c", [*self.base, *self.extra]) != plain, f"{self.extra} changed nothing"


@dataclass
class Refused:
    argv: list[str]
    flag: str

    def check(self, tmp_path: Path, capsys, monkeypatch) -> None:
        o = run_in(tmp_path / "r", self.argv, capsys)
        assert o.rc == 2, (self.argv, o.out, o.err)
        assert o.err.count("\n") == 1 and self.flag in o.err, o.err
        assert o.files == {}, "a refused command wrote files"


class _Rank:
    """One MPI rank, for commands whose measurements are replaced by a recorder."""

    def Get_rank(self) -> int:
        return 0

    def Get_size(self) -> int:
        return 1

    def bcast(self, value: Any, root: int = 0) -> Any:
        return value

    def Barrier(self) -> None:
        return None

    def Abort(self, code: int = 1) -> None:  # pragma: no cover - only on a signal
        raise SystemExit(code)


def _report() -> dict:
    """A validate-local report (the recorded 2-rank one), as the measurement returns it."""
    from dlscale.validation.validate_local import summarize

    rows = json.loads(REPORT.read_text())["rows"]
    return {"rows": rows, "summary": summarize(rows)}


def _powered(folder: Path) -> None:
    (folder / "c.toml").write_text('base = "summit"\n[node]\npower_w = 2500\n')


def _restore(env: dict[str, str]) -> None:
    for k in [k for k in os.environ if k not in env]:
        del os.environ[k]
    os.environ.update(env)


@dataclass
class Reaches:
    """The flag changes the measuring function's call (or what is written from it)."""

    base: list[str]
    extra: list[str]

    def check(self, tmp_path: Path, capsys, monkeypatch) -> None:
        from dlscale.perfmodel.machine.profile import load_profile
        from dlscale.validation import calibrate_run, mpi_env, validate_local

        calls: list[Any] = []
        keep = {k: v for k, v in os.environ.items()}

        def record(result):
            def fake(comm, *args, **kwargs):
                env = {k: v for k, v in os.environ.items() if keep.get(k) != v}
                calls.append((args, {k: v for k, v in kwargs.items() if k != "argv"}, env))
                return result()
            return fake

        fake_mpi = argparse.Namespace(COMM_WORLD=_Rank())
        monkeypatch.setattr(mpi_env, "get_mpi", lambda: fake_mpi)
        monkeypatch.setattr(calibrate_run, "calibrate", record(lambda: load_profile(PROFILE)))
        monkeypatch.setattr(validate_local, "validate_local", record(_report))
        seen = []
        try:
            for name, argv in (("a", self.base), ("c", [*self.base, *self.extra])):
                calls.clear()
                _restore(keep)
                o = run_in(tmp_path / name, argv, capsys)
                assert o.rc == 0, (argv, o.err)
                seen.append((calls[:], o.out, o.files))
        finally:
            _restore(keep)  # the MPI settings a run made (os.environ, not monkeypatch's)
        assert seen[0] != seen[1], f"{self.extra} changed nothing the run was asked for"


@dataclass
class Custom:
    fn: Callable[..., None]

    def check(self, tmp_path: Path, capsys, monkeypatch) -> None:
        self.fn(tmp_path, capsys, monkeypatch)


def _refuse_all(base: list[str], values: dict[str, list[str]]) -> dict[str, Refused]:
    return {flag: Refused([*base, flag, *v], flag) for flag, v in values.items()}


def _executor_acts(tmp_path, capsys, monkeypatch):
    """Same results on every executor (by design); the one named is the one built."""
    import importlib

    sweep = importlib.import_module("dlscale.sweep")
    built = []
    for name, make in list(sweep.EXECUTORS.items()):
        monkeypatch.setitem(sweep.EXECUTORS, name,
                            lambda jobs, _n=name, _m=make: built.append((_n, jobs)) or _m(jobs))
    assert run_in(tmp_path / "a", SWEEP, capsys).rc == 0
    assert run_in(tmp_path / "b", [*SWEEP, "--executor", "process", "-j", "2"], capsys).rc == 0
    assert built == [("serial", None), ("process", 2)]


def _resume_acts(tmp_path, capsys, monkeypatch):
    """``--resume`` keeps the finished points: the evaluator is not called again."""
    calls = []

    def counted(cluster, workload, nodes, seeds):
        from dlscale.sweep_points import analytical

        calls.append(list(nodes))
        return analytical(cluster, workload, nodes, seeds)

    monkeypatch.setattr(sys.modules[__name__], "counted", counted, raising=False)
    argv = [*SWEEP, "-o", "out", "--evaluator", f"{__name__}:counted", "--no-plots"]
    folder = tmp_path / "w"
    first = run_in(folder, argv, capsys)
    assert first.rc == 0 and calls
    os.chdir(folder)
    try:
        for extra, ran in (([], True), (["--resume"], False)):
            calls.clear()
            assert main([*argv, *extra]) == 0
            assert bool(calls) is ran, extra
    finally:
        os.chdir(ROOT)
    capsys.readouterr()


def _other_study(folder: Path) -> None:
    (folder / "o.toml").write_text(OTHER_STUDY)
    assert main(["sweep", "o.toml", "-o", "s.toml.out", "--executor", "serial", "--quiet",
                 "--no-plots"]) == 0


def _other_study_here(folder: Path) -> None:
    here = os.getcwd()
    os.chdir(folder)
    try:
        _other_study(folder)
    finally:
        os.chdir(here)


def _timeline_acts(tmp_path, capsys, monkeypatch):
    """``validate local --timeline FILE``: the measurement is asked to record, and the
    command writes its timeline, which the Horovod reader parses (without the flag:
    neither)."""
    from dlscale.perfmodel.compute.horovod import read_horovod_timeline
    from dlscale.validation import mpi_env, validate_local

    asked = []
    spans = {"algorithm": "sgd-allreduce", "hosts": ["h", "h"], "clock_refs": [0.0, 0.0],
             "tensors": [("fc1.weight", 32768)],
             "marks": [[(1.0, 1.0001, 1.0001, 1.0003, 1.00031)],
                       [(1.0, 1.0002, 1.0002, 1.0003, 1.00031)]]}

    def fake(comm, *args, **kwargs):
        asked.append(kwargs.get("timeline"))
        return {**_report(), **({"timeline": spans} if kwargs.get("timeline") else {})}

    monkeypatch.setattr(mpi_env, "get_mpi", lambda: argparse.Namespace(COMM_WORLD=_Rank()))
    monkeypatch.setattr(validate_local, "validate_local", fake)
    keep = dict(os.environ)
    try:
        plain = run_in(tmp_path / "a", [*LOCAL, "--plot", "none"], capsys)
        got = run_in(tmp_path / "b", [*LOCAL, "--plot", "none", "--timeline", "t.json"], capsys)
    finally:
        _restore(keep)
    assert plain.rc == got.rc == 0 and asked == [None, "sgd-allreduce"]
    assert "t.json" not in plain.files and "wrote t.json" in got.out
    h = read_horovod_timeline(tmp_path / "b" / "t.json")
    assert (h.ranks, h.iterations) == (2, 1) and h.allreduce_s == pytest.approx(100e-6)


def _write_readme_acts(tmp_path, capsys, monkeypatch):
    """``--write-readme`` rewrites the results block (here of one analytical-only case,
    for speed)."""
    from dlscale.commands import validate_published

    monkeypatch.setattr(validate_published, "CASE_MODULES",
                        {"cavdar-isc19": validate_published.CASE_MODULES["cavdar-isc19"]})
    readme = tmp_path / "README.md"
    shutil.copy(ROOT / "validation" / "README.md", readme)
    before = readme.read_text()
    assert main(["validate", "published", "--write-readme", str(readme)]) == 0
    assert readme.read_text() != before
    capsys.readouterr()


def _version_acts(tmp_path, capsys, monkeypatch):
    from dlscale import __version__

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out == f"dlscale {__version__}\n"


_TRAINING_VALUES = {
    "--algorithm": ["sync-easgd"], "--iterations": ["3"], "--noise": ["lognormal:0.1"],
    "--network": ["flow"], "--cosim": [], "--compare": ["sync-sgd,async-sgd"], "--tau": ["2"],
    "--lr": ["0.1"], "--lr-schedule": ["warmup:2"], "--target-accuracy": ["0.5"],
    "--tune": [], "--repeats": ["2"], "--max-sim-time": ["1"], "--eval-every": ["2"],
    "--hidden": ["8"], "--cosim-model": ["cnn"], "--plot": ["p.png"], "--baseline": ["device"],
    "--measured-samples-per-s": ["500@32"], "--measured-trace": [TRACE],
    "--horovod-timeline": [TIMELINE], "--runtime": ["gloo"], "--batch": ["16"],
    "--precision": ["fp16"], "--global-batch": ["64"], "--ps-servers": ["2"],
    "--ps-placement": ["separate"], "--ps-strategy": ["greedy"],
    "--data": ["synthetic"], "--loader-rate": ["100"], "--dispatch-us": ["10"],
    "--grouping": ["graph-aware"],
}

#: A run whose input pipeline bounds the step (DGX-1: 40 host cores, 8 V100 at fp16).
LOADED = ["dgx1-v100", "resnet50", "--nodes", "1", "--precision", "fp16", "--batch", "256"]

#: (mode, flag) -> check. A mode is the subcommand path; ``simulate`` has two.
CHECKS: dict[tuple[str, str], Any] = {
    ("dlscale", "--version"): Custom(_version_acts),
    # catalog
    ("catalog", "--kind"): Acts(["catalog", "show", "summit"], ["--kind", "node"]),
    ("catalog", "--format"): Acts(["catalog", "devices"], ["--format", "json"]),
    ("catalog", "--output"): Acts(["catalog", "devices"], ["-o", "devices.json"]),
    # predict
    **{("predict", f): Acts(PRED, extra) for f, extra in {
        "--nodes": ["--nodes", "1,2"], "--algorithm": ["--algorithm", "sync-easgd"],
        "--collective": ["--collective", "binomial-tree"],
        "--precision": ["--precision", "fp16"],
        "--batch": ["--batch", "64"], "--global-batch": ["--global-batch", "768"],
        "--baseline": ["--baseline", "device"], "--runtime": ["--runtime", "gloo"],
        "--noise": ["--noise", "lognormal:0.1"], "--plot": ["--plot", "p.png"],
        "--measured-samples-per-s": ["--measured-samples-per-s", "500@32"],
        "--trace": ["--trace", f"{TRACE}@64"],
        "--format": ["--format", "json"], "--output": ["-o", "rows.csv"],
    }.items()},
    **{("predict", f): Acts(PRED_PS, extra) for f, extra in {
        "--ps-servers": ["--ps-servers", "1"], "--ps-placement": ["--ps-placement", "separate"],
        "--ps-strategy": ["--ps-strategy", "greedy"]}.items()},
    **{("simulate CLUSTER WORKLOAD", f): Acts(SIM_PS, extra) for f, extra in {
        "--ps-servers": ["--ps-servers", "1"], "--ps-placement": ["--ps-placement", "separate"],
        "--ps-strategy": ["--ps-strategy", "greedy"]}.items()},
    # predict, the transformer path (a parallel layout)
    **{("predict", f): Acts(base, extra) for f, (base, extra) in {
        "--tp": (LLM, ["--tp", "2"]), "--pp": (LLM, ["--pp", "2"]),
        "--microbatch": (LLM, ["--microbatch", "2"]),
        "--schedule": ([*LLM, "--pp", "2", "--global-batch", "16"], ["--schedule", "gpipe"]),
        "--virtual": ([*LLM, "--pp", "2", "--global-batch", "16", "--schedule", "interleaved",
                       "--virtual", "2"], ["--virtual", "4"]),
        "--zero": (LLM, ["--zero", "1"]), "--recompute": (LLM, ["--recompute", "full"]),
        "--sp": ([*LLM, "--tp", "2"], ["--sp"]),
        "--ep": (["predict", "dgx-h100-superpod", "mixtral-8x7b", "--nodes", "1"],
                 ["--ep", "4"])}.items()},
    # simulate, the transformer path (tests/test_simulate_llm_cli.py: its other flags)
    **{("simulate CLUSTER WORKLOAD", f): Acts(["simulate", *LLM[1:], *base], extra)
       for f, (base, extra) in {
        "--tp": ([], ["--tp", "2"]), "--pp": ([], ["--pp", "2"]),
        "--microbatch": ([], ["--microbatch", "2"]),
        "--schedule": (["--pp", "2", "--global-batch", "16"], ["--schedule", "gpipe"]),
        "--virtual": (["--pp", "2", "--global-batch", "16", "--schedule", "interleaved",
                       "--virtual", "2"], ["--virtual", "4"]),
        "--zero": ([], ["--zero", "1"]), "--recompute": ([], ["--recompute", "full"]),
        "--sp": (["--tp", "2"], ["--sp"])}.items()},
    ("simulate CLUSTER WORKLOAD", "--ep"): Acts(
        ["simulate", "dgx-h100-superpod", "mixtral-8x7b", "--nodes", "1"], ["--ep", "2"]),
    **{("simulate CLUSTER", f): Refused([*SIMC, f, *v], f) for f, v in {
        "--tp": ["2"], "--pp": ["2"], "--microbatch": ["2"], "--schedule": ["gpipe"],
        "--virtual": ["2"], "--zero": ["1"], "--recompute": ["full"], "--sp": [],
        "--ep": ["2"]}.items()},
    ("predict", "--tau"): Acts([*PRED, "--algorithm", "async-easgd"], ["--tau", "4"]),
    ("predict", "--data"): Acts(["predict", *LOADED], ["--data", "synthetic"]),
    ("predict", "--loader-rate"): Acts(PRED, ["--loader-rate", "100"]),
    ("predict", "--dispatch-us"): Acts(PRED, ["--dispatch-us", "500"]),
    ("predict", "--grouping"): Acts([*PRED, "--runtime", "horovod-legacy-nccl"],
                                    ["--grouping", "graph-aware"]),
    ("predict", "--horovod-timeline"): Acts([*PRED, "--measured-samples-per-s", "500@64"],
                                            ["--horovod-timeline", f"{TIMELINE}@64"]),
    ("predict", "--profile"): Acts(["predict", "stampede2-skx", "resnet50", "--nodes", "2"],
                                   ["--profile", PROFILE]),
    # simulate CLUSTER WORKLOAD (training)
    **{("simulate CLUSTER WORKLOAD", f): Acts(base, extra) for f, (base, extra) in {
        "--nodes": (SIMT, ["--nodes", "4"]), "--collective": (SIMT, ["--collective", "binomial-tree"]),
        "--mode": (SIMT, ["--mode", "flow"]),
        "--placement": (["simulate", "stampede2-skx", "resnet50", "--nodes", "64",
                         "--iterations", "2"], ["--placement", "random"]),
        "--seed": (NOISY, ["--seed", "3"]), "--format": (SIMT, ["--format", "json"]),
        "--output": (SIMT, ["-o", "rows.json"]), "--trace-out": (SIMT, ["--trace-out", "t.json"]),
        "--profile": (SKX, ["--profile", PROFILE]), "--batch": (SIMT, ["--batch", "16"]),
        "--precision": (SIMT, ["--precision", "fp16"]),
        "--global-batch": (SIMT, ["--global-batch", "64"]), "--runtime": (SIMT, ["--runtime", "gloo"]),
        "--algorithm": (SIMT, ["--algorithm", "sync-easgd"]),
        "--iterations": (NOISY, ["--iterations", "5"]),
        "--noise": (SIMT, ["--noise", "lognormal:0.1"]),
        "--network": (SIMT, ["--network", "analytical"]),
        "--cosim": ([*COSIM[:-3], "--format", "json"], ["--cosim"]),
        "--compare": (SIMT, ["--compare", "sync-sgd,sync-easgd"]), "--tau": (EASGD, ["--tau", "4"]),
        "--lr": (COSIM, ["--lr", "0.5"]), "--lr-schedule": (COSIM, ["--lr-schedule", "step:2:0.5"]),
        "--target-accuracy": (COSIM, ["--target-accuracy", "0.5"]),
        "--tune": (TARGET, ["--tune"]), "--repeats": (TARGET, ["--repeats", "2"]),
        "--max-sim-time": (TARGET, ["--max-sim-time", "1e-3"]),
        "--eval-every": (COSIM, ["--eval-every", "3"]), "--hidden": (COSIM, ["--hidden", "8"]),
        "--cosim-model": (COSIM, ["--cosim-model", "cnn"]), "--plot": (SIMT, ["--plot", "p.png"]),
        "--baseline": (SIMT, ["--baseline", "device"]),
        "--measured-samples-per-s": (SIMT, ["--measured-samples-per-s", "500@32"]),
        "--measured-trace": (SIMT, ["--measured-trace", f"{TRACE}@64"]),
        "--horovod-timeline": ([*SIMT, "--measured-samples-per-s", "500@64"],
                               ["--horovod-timeline", f"{TIMELINE}@64"]),
        "--data": (["simulate", *LOADED, "--iterations", "2"], ["--data", "synthetic"]),
        "--loader-rate": (SIMT, ["--loader-rate", "100"]),
        "--dispatch-us": (SIMT, ["--dispatch-us", "500"]),
        "--grouping": ([*SIMT, "--runtime", "horovod-legacy-nccl"], ["--grouping", "graph-aware"]),
    }.items()},
    **{("simulate CLUSTER WORKLOAD", f): r for f, r in _refuse_all(SIMT, {
        "--ranks": ["4"], "--operation": ["allgather"], "--size-bytes": ["1e6"],
        "--intranode": ["summit"], "--gamma": ["1e-10"], "--top": ["2"]}).items()},
    # simulate CLUSTER (one collective)
    **{("simulate CLUSTER", f): Acts(base, extra) for f, (base, extra) in {
        "--nodes": (SIMC, ["--nodes", "2"]), "--ranks": (SIMC, ["--ranks", "4"]),
        "--operation": (SIMC, ["--operation", "allgather"]),
        "--collective": (SIMC, ["--collective", "recursive-doubling"]),
        "--size-bytes": (SIMC, ["--size-bytes", "1e3"]), "--mode": (SIMC, ["--mode", "flow"]),
        "--placement": (WIDE, ["--placement", "random"]),
        "--seed": ([*WIDE, "--placement", "random"], ["--seed", "5"]),
        "--intranode": (["simulate", "summit", "--nodes", "2"], ["--intranode", "summit"]),
        "--gamma": (SIMC, ["--gamma", "1e-10"]), "--top": (SIMC, ["--top", "1"]),
        "--format": (SIMC, ["--format", "json"]), "--output": (SIMC, ["-o", "c.json"]),
        "--trace-out": (SIMC, ["--trace-out", "t.json"]), "--profile": (SIMC, ["--profile", PROFILE]),
    }.items()},
    **{("simulate CLUSTER", f): r for f, r in _refuse_all(SIMC, _TRAINING_VALUES).items()},
    # --trace reads a profiler trace in predict and plan; simulate refuses it (it writes
    # its own trace with --trace-out), so no user's trace is overwritten
    ("simulate CLUSTER", "--trace"): Refused([*SIMC, "--trace", "t.json"], "--trace-out"),
    ("simulate CLUSTER WORKLOAD", "--trace"): Refused([*SIMT, "--trace", "t.json"], "--trace-out"),
    # sweep
    ("sweep", "--output"): Acts(SWEEP, ["-o", "elsewhere"]),
    ("sweep", "--executor"): Custom(_executor_acts),
    ("sweep", "--jobs"): Custom(_executor_acts),
    ("sweep", "--resume"): Custom(_resume_acts),
    # without --force another study's folder is refused (2); with it, replaced
    ("sweep", "--force"): Acts(SWEEP, ["--force"], setup=_other_study_here, statuses=(0, 2)),
    ("sweep", "--quiet"): Acts(SWEEP[:-1], ["--quiet"], stderr=True, tty=True),
    ("sweep", "--no-plots"): Acts(SWEEP, ["--no-plots"]),
    ("sweep", "--evaluator"): Acts(SWEEP, ["--evaluator", "sweep_fakes:ring_eval"]),
    ("sweep", "--baseline"): Acts(SWEEP, ["--baseline", "device"]),
    ("sweep", "--format"): Acts(SWEEP, ["--format", "csv"]),
    ("sweep", "--profile"): Acts(SWEEP, ["--profile", PROFILE]),
    # plan
    **{("plan", f): Acts(PLAN, extra) for f, extra in {
        "--cluster": ["--cluster", "stampede2-skx"], "--epochs": ["--epochs", "10"],
        "--samples": ["--samples", "1e6"], "--deadline-h": ["--deadline-h", "20"],
        "--throughput": ["--throughput", "2e4"], "--min-efficiency": ["--min-efficiency", "0.99"],
        "--max-nodes": ["--max-nodes", "4"],
        "--price": ["--price", "summit=2"], "--algorithms": ["--algorithms", "sync-easgd"],
        "--collectives": ["--collectives", "binomial-tree"], "--nodes": ["--nodes", "1,2"],
        "--batch": ["--batch", "64"], "--global-batch": ["--global-batch", "1024"],
        "--baseline": ["--baseline", "device"], "--rank-by": ["--rank-by", "nodes"],
        "--runtime": ["--runtime", "gloo"],
        "--measured-samples-per-s": ["--measured-samples-per-s", "500@32"],
        "--trace": ["--trace", f"{TRACE}@64"], "--top": ["--top", "1"],
        "--output": ["-o", "other.json"], "--plan-on": ["--plan-on", "low"],
        "--noise": ["--noise", "lognormal:0.1"],
    }.items()},
    # plan TRANSFORMER: the layout search (each refused on the data-parallel path:
    # tests/test_plan_llm.py)
    **{("plan", f): Acts(LLM_PLAN, extra) for f, extra in {
        "--tokens-per-day": ["--tokens-per-day", "1e9"], "--tokens": ["--tokens", "1e10"],
        "--tp": ["--tp", "1"], "--pp": ["--pp", "2"], "--microbatch": ["--microbatch", "1"],
        "--zero": ["--zero", "0"], "--recompute": ["--recompute", "none"],
        "--sp": ["--sp", "off"], "--schedule": ["--schedule", "1f1b"],
        "--dp-overlap": ["--dp-overlap", "never"], "--precision": ["--precision", "bf16"],
    }.items()},
    ("plan", "--ep"): Acts(["plan", "mixtral-8x7b", "--cluster", "dgx-h100-superpod",
                            "--global-batch", "32", "--nodes", "4", "--recompute",
                            "selective", "--sp", "on"], ["--ep", "8"]),
    ("plan", "--horovod-timeline"): Acts([*PLAN, "--measured-samples-per-s", "500@64"],
                                         ["--horovod-timeline", f"{TIMELINE}@64"]),
    # a budget drops plans below the table's top rows: the file of every plan shows it
    ("plan", "--budget"): Acts([*PLAN, "--price", "summit=2", "-o", "p.json"], ["--budget", "200"]),
    ("plan", "--budget-node-hours"): Acts([*PLAN, "-o", "p.json"], ["--budget-node-hours", "500"]),
    ("plan", "--max-power-kw"): Acts(["plan", "resnet50", "--cluster", "c.toml", "--nodes",
                                      "1-64"], ["--max-power-kw", "20"], setup=_powered),
    # fit
    ("fit", "--rates"): Acts(FIT, ["--rates", "r.csv"], setup=_rates),
    ("fit", "--horovod-timeline"): Acts(FIT, ["--horovod-timeline", TIMELINE]),
    ("fit", "--nodes"): Acts(FIT, ["--nodes", "1,2"]),
    ("fit", "--measured-samples-per-s"): Acts(FIT_CSV, ["--measured-samples-per-s", "130@64"],
                                              setup=_rates),
    ("fit", "--trace"): Acts(FIT_CSV, ["--trace", f"{TRACE}@64"], setup=_rates),
    ("fit", "--runtime"): Acts(FIT_CSV, ["--runtime", "parameter-server"], setup=_rates),
    ("fit", "--batch"): Acts(FIT_CSV, ["--batch", "16"], setup=_rates),
    ("fit", "--collective"): Acts(FIT_CSV, ["--collective", "binomial-tree"], setup=_rates),
    ("fit", "--data"): Acts(["fit", "dgx1-p100", "resnet50", "--rates", "r.csv", "--nodes", "1",
                             "-o", "f.json"],
                            ["--data", "synthetic"], setup=_rates),
    ("fit", "--baseline"): Acts(["fit", "summit", "vgg16", "--rates", "e.csv", "-o", "f.json"],
                                ["--baseline", "device"], setup=_rates),
    ("fit", "--output"): Acts(FIT, ["-o", "g.json"]),
    ("fit", "--format"): Acts(FIT, ["--format", "json"]),
    # calibrate (MPI: the measurements are recorded, not run)
    **{("calibrate", f): Reaches(base, extra) for f, (base, extra) in {
        "--output": (CALIBRATE, ["-o", "p.json"]), "--budget-s": (CALIBRATE, ["--budget-s", "3"]),
        "--quick": (["calibrate"], ["--quick"]), "--min-size": (CALIBRATE, ["--min-size", "64"]),
        "--max-size": (CALIBRATE, ["--max-size", "1024"]),
        "--size-step": (["calibrate"], ["--size-step", "2"]),
        "--collectives": (["calibrate"], ["--collectives", "allreduce"]),
        "--rank-counts": (CALIBRATE, ["--rank-counts", "1"]),
        "--allreduce-algorithm": (CALIBRATE, ["--allreduce-algorithm", "ring"]),
        "--no-kernels": (CALIBRATE, ["--no-kernels"]), "--yield": (CALIBRATE, ["--yield", "on"]),
        "--quiet": (CALIBRATE, ["--quiet"]),
    }.items()},
    # validate local (MPI, as calibrate)
    **{("validate local", f): Reaches(base, extra) for f, (base, extra) in {
        "--budget-s": (LOCAL, ["--budget-s", "3"]), "--quick": (["validate", "local"], ["--quick"]),
        "--min-size": (LOCAL, ["--min-size", "4096"]), "--max-size": (LOCAL, ["--max-size", "8192"]),
        "--iterations": (LOCAL, ["--iterations", "50"]), "--rounds": (LOCAL, ["--rounds", "1"]),
        "--algorithms": (LOCAL, ["--algorithms", "sgd-ring"]), "--output": (LOCAL, ["-o", "r.json"]),
        "--plot": (LOCAL, ["--plot", "none"]), "--quiet": (LOCAL, ["--quiet"]),
        "--oversubscribe": (LOCAL, ["--oversubscribe"]), "--yield": (LOCAL, ["--yield", "on"]),
    }.items()},
    ("validate local", "--timeline"): Custom(_timeline_acts),
    # validate published
    ("validate published", "--case"): Acts(PUBLISHED, ["--case", "cavdar-isc19"]),
    ("validate published", "--format"): Acts(PUBLISHED, ["--format", "json"]),
    ("validate published", "--fidelity"): Acts(
        ["validate", "published", "--case", "laanait-summit", "--fidelity", "analytical"],
        ["--fidelity", "simulated"]),
    ("validate published", "--plots"): Acts(PUBLISHED, ["--plots", "figs"]),
    ("validate published", "--output"): Acts(PUBLISHED, ["-o", "rows.json"]),
    ("validate published", "--write-readme"): Custom(_write_readme_acts),
}


def _flag(action: argparse.Action) -> str:
    return next((s for s in action.option_strings if s.startswith("--")), action.option_strings[0])


def parser_flags() -> list[tuple[str, str]]:
    """``(mode, flag)`` of every option of every (sub)parser; ``simulate`` twice."""
    out: list[tuple[str, str]] = []

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, [*path, name])
            elif action.option_strings and not isinstance(action, argparse._HelpAction):
                modes = (["simulate CLUSTER", "simulate CLUSTER WORKLOAD"]
                         if path == ["simulate"] else [" ".join(path) or "dlscale"])
                out.extend((m, _flag(action)) for m in modes)

    walk(build_parser(), [])
    return out


def test_every_flag_has_a_check():
    flags = parser_flags()
    missing = [f for f in flags if f not in CHECKS]
    stale = [k for k in CHECKS if k not in flags]
    assert not missing, f"flags with no entry in CHECKS (acts how, or refused?): {missing}"
    assert not stale, f"entries for flags that no longer exist: {stale}"


@pytest.mark.parametrize("mode,flag", sorted(CHECKS), ids=[f"{m}:{f}" for m, f in sorted(CHECKS)])
def test_flag_acts_or_is_refused(mode, flag, tmp_path, capsys, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "tests"))
    CHECKS[(mode, flag)].check(tmp_path, capsys, monkeypatch)
