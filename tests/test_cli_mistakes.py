"""Every user mistake of issue 14 (items 4 and 5): one line on stderr, exit status 2, no
traceback, nothing written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dlscale.cli import main

STRONG = """\
name = "strong32"
model = "resnet50"
scaling = "strong"
global_batch = 32
batch_per_device = 32
"""

GRAPHML_DIRECTED = """<?xml version="1.0" encoding="UTF-8"?>
<graphml xmlns="http://graphml.graphdrawing.org/xmlns">
  <key id="k" for="node" attr.name="kind" attr.type="string"/>
  <key id="b" for="edge" attr.name="bandwidth_Bps" attr.type="double"/>
  <key id="l" for="edge" attr.name="latency_s" attr.type="double"/>
  <graph edgedefault="directed">
    <node id="h0"><data key="k">host</data></node>
    <node id="h1"><data key="k">host</data></node>
    <edge source="h0" target="h1"><data key="b">1e9</data><data key="l">1e-6</data></edge>
    <edge source="h1" target="h0"><data key="b">2e9</data><data key="l">1e-6</data></edge>
  </graph>
</graphml>
"""


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "latin1.toml").write_bytes(b'name = "caf\xe9"\n')
    (tmp_path / "deep.toml").write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "binary.dat").write_bytes(b"\x00\x01\x02\xff\xfe")
    (tmp_path / "words.txt").write_text("fast slow\n")
    (tmp_path / "strong.toml").write_text(STRONG)
    (tmp_path / "directed.graphml").write_text(GRAPHML_DIRECTED)
    (tmp_path / "taken.txt").write_text("keep")
    (tmp_path / "inf-epochs.toml").write_text('name = "w"\nmodel = "resnet50"\n'
                                              'batch_per_device = 32\nepochs = inf\n')
    (tmp_path / "nan-fusion.toml").write_text('name = "w"\nmodel = "resnet50"\n'
                                              'batch_per_device = 32\nfusion_threshold_MiB = nan\n')
    prof = '{"schema_version": 1, "p2p": {"intra-node": {"latency_s": 1e-6, ' \
           '"bandwidth_Bps": 1e10, "segments": [{"min_bytes": 0, "max_bytes": 1e9, ' \
           '"alpha_s": -1e-6, "beta_s_per_B": 1e-10}]}}}'
    (tmp_path / "negative.json").write_text(prof)
    (tmp_path / "latin1.json").write_bytes(b'{"schema_version": 1, "notes": ["\xe9"]}')
    (tmp_path / "st.toml").write_text('cluster = "summit"\nworkload = "resnet50"\nnodes = [1]\n')
    (tmp_path / "dup.toml").write_text('cluster = "summit"\nworkload = "resnet50"\nnodes = [1]\n'
                                       '[vary]\ntau = [2, 2]\n')
    (tmp_path / "cyc-a.toml").write_text('base = "cyc-b.toml"\n')
    (tmp_path / "cyc-b.toml").write_text('base = "cyc-a.toml"\n')
    return tmp_path


SIM = ["simulate", "summit", "resnet50", "--nodes", "2", "--iterations", "2"]

CASES = {
    # item 4: tracebacks before
    "non-UTF-8 cluster TOML": (["predict", "{d}/latin1.toml", "resnet50", "--nodes", "1"],
                               r"not UTF-8 text \(byte 0xe9"),
    "non-UTF-8 workload TOML": (["predict", "summit", "{d}/latin1.toml", "--nodes", "1"],
                                "not UTF-8"),
    "non-UTF-8 profile": (["predict", "summit", "resnet50", "--nodes", "1", "--profile",
                           "{d}/latin1.json"], "not UTF-8"),
    "non-UTF-8 study": (["sweep", "{d}/latin1.toml"], "not UTF-8"),
    "deeply nested TOML": (["predict", "{d}/deep.toml", "resnet50", "--nodes", "1"],
                           "nested too deeply"),
    "noise file is a folder": ([*SIM, "--noise", "empirical:{d}/folder"], "is a folder"),
    "noise file is binary": ([*SIM, "--noise", "empirical:{d}/binary.dat"], "noise file"),
    "noise file is text": ([*SIM, "--noise", "empirical:{d}/words.txt"],
                           "is not a list of step times"),
    "lognormal 1e308": ([*SIM, "--noise", "lognormal:1e308"], r"sigma must be a number in \[0, 2\]"),
    "seed -1 (training)": ([*SIM, "--seed", "-1"], "--seed: must be an integer >= 0"),
    "seed -1 (collective)": (["simulate", "summit", "--seed", "-1"], "--seed"),
    "cosim lr -1": ([*SIM, "--cosim", "--lr", "-1"], "lr must be a finite number >= 0"),
    "-o a folder": (["predict", "summit", "resnet50", "--nodes", "1", "-o", "{d}"], "is a folder"),
    "-o empty": (["predict", "summit", "resnet50", "--nodes", "1", "-o", ""], "empty file name"),
    "-o under /proc": (["predict", "summit", "resnet50", "--nodes", "1", "-o",
                        "/proc/dlscale-test.json"], "cannot create a file in /proc"),
    "sweep -o an existing file": (["sweep", "{d}/st.toml", "-o", "{d}/taken.txt"],
                                  "is not a folder"),
    # item 5: silently wrong before
    "global batch below ranks": (["predict", "summit", "{d}/strong.toml", "--nodes", "1,8"],
                                 "32 samples cannot be split over 48 ranks"),
    "lognormal 50": ([*SIM, "--noise", "lognormal:50"], "sigma must be"),
    "directed GraphML pair": (["simulate", "{d}/directed.graphml"], "different bandwidth_Bps"),
    "negative fit segment": (["predict", "summit", "resnet50", "--nodes", "1", "--profile",
                              "{d}/negative.json"], r"segments\[0\].alpha_s: must be a finite"),
    "plan epochs inf": (["plan", "resnet50", "--cluster", "summit", "--epochs", "inf", "-o",
                         "{d}/plan.json"], "epochs: must be a finite number"),
    "workload epochs inf": (["predict", "summit", "{d}/inf-epochs.toml", "--nodes", "1"],
                            "epochs: must be a finite number > 0, got inf"),
    "workload fusion nan": (["predict", "summit", "{d}/nan-fusion.toml", "--nodes", "1"],
                            "fusion_threshold_bytes: must be a finite number >= 0, got nan"),
    "plot extension": (["predict", "summit", "resnet50", "--nodes", "1", "--plot", "{d}/x.txt"],
                       "unknown plot format"),
    "nodes empty": (["predict", "summit", "resnet50", "--nodes", ""], "--nodes: empty"),
    "nodes beyond int": (["predict", "summit", "resnet50", "--nodes", "1-" + "9" * 25],
                         "more than any machine holds"),
    "plan top negative": (["plan", "resnet50", "--cluster", "summit", "--top", "-1", "-o",
                           "{d}/plan.json"], "--top: must be an integer >= 0"),
    "GraphML where TOML": (["predict", "{d}/directed.graphml", "resnet50", "--nodes", "1"],
                           "is a GraphML file, not TOML"),
    "duplicate vary value": (["sweep", "{d}/dup.toml"], "vary.tau: value 2 is given twice"),
    # issue 13: base files
    "base file cycle": (["predict", "{d}/cyc-a.toml", "resnet50", "--nodes", "1"],
                        r"cluster\.base: cycle .*cyc-a\.toml -> .*cyc-b\.toml -> .*cyc-a\.toml"),
}


@pytest.mark.parametrize("argv, match", list(CASES.values()), ids=list(CASES))
def test_mistake_is_one_line_and_exit_2(files, capsys, argv, match):
    import re

    before = sorted(p.name for p in files.iterdir())
    code = main([a.replace("{d}", str(files)) for a in argv])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"dlscale {argv[0]}: error: ")
    assert re.search(match, lines[0]), lines[0]
    assert sorted(p.name for p in files.iterdir()) == before  # nothing written
    assert out == ""  # nothing computed and printed before the error


@pytest.mark.parametrize("stage", ["main", "run"])
def test_ctrl_c_of_simulate_is_one_line_and_130(tmp_path, stage):
    """SIGINT while the command imports (``main``) or once it works (``run``): one line,
    exit status 130 (issue 26 item 4: during the imports it was a traceback). The test
    waits for the command's own marker (``DLSCALE_READY_FILE``), not for a sleep."""
    import time

    ready = tmp_path / "ready"
    env = {**os.environ, "DLSCALE_READY_FILE": str(ready)}
    proc = subprocess.Popen([sys.executable, "-m", "dlscale", "simulate", "summit", "resnet50",
                             "--nodes", "64", "--iterations", "100000", "--format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 120
    while not (ready.exists() and stage in ready.read_text().split()):
        assert proc.poll() is None and time.monotonic() < deadline, "no ready marker"
        time.sleep(0.01)  # polling the marker, not a wait for correctness
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["dlscale simulate: interrupted"]


@pytest.mark.parametrize("rank, printed", [("0", True), ("2", False)])
def test_a_launched_rank_other_than_0_keeps_a_refusal_to_itself(monkeypatch, capsys, rank,
                                                                 printed):
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", None)   # MPI not up in this process
    monkeypatch.setenv("PMI_RANK", rank)
    assert main(["predict", "summit", "resnet50", "--nodes", "0"]) == 2
    assert bool(capsys.readouterr().err) is printed


def test_an_interrupt_a_finalizer_swallowed_still_stops_the_command(capsys, monkeypatch):
    """A SIGINT that lands inside a weakref callback (an import lock's, during the
    imports) is printed by Python as "Exception ignored" and lost; CI saw the command
    then run to its end and exit 0. The handler remembers it and the command stops at
    its next step with the one line and 130."""
    import signal

    from dlscale import cli

    real = cli._main

    def swallowed(words):
        try:
            signal.raise_signal(signal.SIGINT)   # what the handler does, then lost
        except KeyboardInterrupt:
            pass
        return real(words)

    monkeypatch.setattr(cli, "_main", swallowed)
    assert cli.main(["catalog", "devices"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["dlscale catalog: interrupted"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_interrupt_another_exception_carries_is_one_line(capsys, monkeypatch):
    """A SIGINT inside numpy's C-extension import comes out as an ImportError
    ("PyCapsule_Import could not import module 'datetime'"; the sweep's interrupt test
    hit it under load): the remembered interrupt makes it the one line and 130; an
    ImportError without an interrupt stays an error."""
    import signal

    import pytest

    from dlscale import cli

    def interrupted_import(words):
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            raise ImportError("PyCapsule_Import could not import module \"datetime\"") \
                from None
        return 0

    monkeypatch.setattr(cli, "_main", interrupted_import)
    assert cli.main(["catalog", "devices"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["dlscale catalog: interrupted"]

    def interrupted_dataclass(words):   # seen in CI: the interrupt inside dataclass()
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance") from None
        return 0

    monkeypatch.setattr(cli, "_main", interrupted_dataclass)
    assert cli.main(["catalog", "devices"]) == 130
    assert capsys.readouterr().err.strip().splitlines() == ["dlscale catalog: interrupted"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler   # in process

    def broken_import(words):
        raise ImportError("no module named x")

    monkeypatch.setattr(cli, "_main", broken_import)
    with pytest.raises(ImportError, match="no module named x"):
        cli.main(["catalog", "devices"])


class _OneRank:
    """One MPI rank, for calibrate and validate local with their measurement replaced."""

    def Get_rank(self) -> int:
        return 0

    def Get_size(self) -> int:
        return 1

    def bcast(self, value, root=0):
        return value

    def Barrier(self) -> None:
        return None

    def Abort(self, code=1):  # pragma: no cover - only on a signal
        raise SystemExit(code)


def _signal_state():
    return (signal.pthread_sigmask(signal.SIG_BLOCK, []),
            signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))


@pytest.mark.parametrize("how", ["refused", "held", "normal", "error", "interrupt"])
@pytest.mark.parametrize("command", ["calibrate", "validate local"])
def test_calibrate_and_validate_local_in_process_leave_the_signals_as_they_were(
        how, command, tmp_path, capsys, monkeypatch):
    """calibrate and validate local hold SIGINT and SIGTERM until MPI is up (a held
    signal then aborts every rank); called in process (``main([...])``) they give the
    caller's handlers back on every way out, and a signal held and never acted on is
    not left for a later call. A refusal before MPI left the holder in place (the
    interrupt tests after it in the same process failed), a normal end Python's
    defaults instead of the caller's own handlers."""
    import argparse
    import json

    from dlscale import cli
    from dlscale.validation import calibrate_run, mpi_abort, mpi_env, validate_local
    from dlscale.validation.validate_local import summarize

    root = Path(__file__).resolve().parents[1]

    def measured(comm, *args, **kwargs):
        if how == "interrupt":
            raise KeyboardInterrupt
        if how == "error":
            raise RuntimeError("the measurement broke")
        if command == "calibrate":
            from dlscale.perfmodel.machine.profile import load_profile

            return load_profile(str(root / "examples" / "profiles" / "this-host.json"))
        rows = json.loads((root / "tests" / "data" / "validate_local_2ranks.json")
                          .read_text())["rows"]
        return {"rows": rows, "summary": summarize(rows)}

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(mpi_env, "get_mpi", lambda: argparse.Namespace(COMM_WORLD=_OneRank()))
    monkeypatch.setattr(calibrate_run, "calibrate", measured)
    monkeypatch.setattr(validate_local, "validate_local", measured)
    argv = [*command.split(), "--quick", "-o", str(tmp_path / "out.json")]
    if how == "held":   # a SIGTERM while the command starts, then its refusal
        real = cli._main

        def signalled(words):
            signal.raise_signal(signal.SIGTERM)
            return real(words)

        monkeypatch.setattr(cli, "_main", signalled)
    if how in ("refused", "held"):
        argv += ["--collectives", "alltoall"] if command == "calibrate" else ["--rounds", "0"]
    env = dict(os.environ)

    def own(signum, frame):  # pragma: no cover - only installed, never called
        raise AssertionError("the caller's handler")

    before = _signal_state()
    old_int = signal.signal(signal.SIGINT, own)
    old_term = signal.signal(signal.SIGTERM, own)
    try:
        mine = _signal_state()
        if how == "error":
            with pytest.raises(RuntimeError, match="the measurement broke"):
                main(argv)
        else:
            status = main(argv)
            assert status == {"refused": 2, "held": 2, "normal": 0, "interrupt": 130}[how], \
                capsys.readouterr().err
        after = _signal_state()
        held = list(mpi_abort._HELD)
    finally:
        signal.signal(signal.SIGINT, old_int)
        signal.signal(signal.SIGTERM, old_term)
        os.environ.clear()
        os.environ.update(env)   # the MPI settings the run made
    assert after == mine, f"{argv}: signal mask and SIGINT, SIGTERM handlers changed"
    assert held == []
    assert _signal_state() == before
