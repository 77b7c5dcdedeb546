"""Stopping a sweep (issue 27, items 1-3): a signal stops workers busy with long chunks
at once and keeps every finished point; a second signal cuts a slow stop short; a dead
worker, a file that cannot grow and a read-only folder are each one line.

The long chunks are :func:`sweep_fakes.blocking_eval`'s, which never end: the tests
synchronise on the marks it leaves and on the rows the sweep writes, never on a sleep
(the timeouts are safety nets).
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from dlscale.cli import main
from dlscale.study import load_study
from dlscale.sweep import run_sweep
from dlscale.sweep_guard import LOCK_NAME

sys.path.insert(0, str(Path(__file__).parent))
import sweep_fakes
from sweep_waits import SAFETY_S, gone, rows, until

#: The CLI with the grace between a worker's SIGTERM and its SIGKILL made 10 minutes,
#: so that only a second signal can end the stop of a worker that ignores SIGTERM.
SLOW_STOP = [sys.executable, "-c", "import sys, dlscale.sweep_guard as g; "
             "g.TERM_GRACE_S = 600.0; from dlscale.cli import main; sys.exit(main(sys.argv[1:]))"]
DLSCALE = [sys.executable, "-m", "dlscale"]


def _study(folder: Path) -> Path:
    """Four groups of four node counts: tau 1 and 2 finish, tau 3 and 4 block."""
    cluster, workload = sweep_fakes.write_configs(folder)
    f = folder / "st.toml"
    f.write_text(f'cluster = "{cluster.name}"\nworkload = "{workload.name}"\n'
                 'nodes = [1, 2, 4, 8]\n[vary]\ntau = [1, 2, 3, 4]\n')
    return f


def _cmd(prog: list[str], study: Path, out: Path, evaluator: str, *extra: str) -> list[str]:
    return [*prog, "sweep", str(study), "-o", str(out), "-j", "2", "--evaluator",
            f"sweep_fakes:{evaluator}", "--quiet", "--no-plots", "--format", "none", *extra]


def _env(marks: Path, **flags: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(Path(__file__).parent),
            sweep_fakes.MARKS_ENV: str(marks), **flags}




def _default_sigint() -> None:
    """In the child: SIGINT as a terminal gives it (a test run in the background, where
    the shell ignores SIGINT, would make every child ignore it too)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _busy_sweep(tmp_path: Path, prog: list[str], **flags: str):
    """A sweep whose tau 1-2 points are written and whose two workers are blocked."""
    study, out, marks = _study(tmp_path), tmp_path / "o", tmp_path / "marks"
    marks.mkdir()
    proc = subprocess.Popen(_cmd(prog, study, out, "blocking_eval"), env=_env(marks, **flags),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_default_sigint)
    until(lambda: (marks / "started-3").exists() and (marks / "started-4").exists()
           and rows(out) == 8, proc, "two blocked workers and 8 written rows")
    workers = [int((marks / f"started-{t}").read_text()) for t in (3, 4)]
    return proc, study, out, marks, workers


def _stopped(proc: subprocess.Popen[str], status: int) -> str:
    try:
        _, err = proc.communicate(timeout=SAFETY_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the sweep still ran {SAFETY_S} s after the signal: {proc.communicate()}")
    assert proc.returncode == status, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def _resume_gives_a_full_sweeps_bytes(tmp_path: Path, study: Path, out: Path) -> None:
    full = tmp_path / "full"
    run_sweep(load_study(study), full, executor="serial", quiet=True, plots=False,
              evaluators={"analytical": sweep_fakes.ring_eval})
    done = subprocess.run(_cmd(DLSCALE, study, out, "ring_eval", "--resume"),
                          env=_env(tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (out / "results.csv").read_bytes() == (full / "results.csv").read_bytes()


# --- item 1: a signal stops the workers of long chunks, and keeps what finished -------

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_workers_in_endless_chunks_and_keeps_every_finished_point(tmp_path, sig):
    proc, study, out, _marks, workers = _busy_sweep(tmp_path, DLSCALE)
    try:
        proc.send_signal(sig)
        err = _stopped(proc, 128 + sig)
    finally:
        proc.kill()
    assert err.startswith(f"dlscale sweep: interrupted ({signal.Signals(sig).name}); "
                          "8 finished points kept in "), err
    assert all(gone(w) for w in workers)
    assert not (out / LOCK_NAME).exists()
    _resume_gives_a_full_sweeps_bytes(tmp_path, study, out)


# --- item 2: a second signal ends a stop at once ------------------------------------

def test_second_signal_kills_workers_that_ignore_sigterm(tmp_path):
    proc, _study_path, out, marks, workers = _busy_sweep(tmp_path, SLOW_STOP,
                                                         SWEEP_FAKES_STUBBORN="1")
    try:
        proc.send_signal(signal.SIGINT)
        until(lambda: (marks / "term-3").exists() and (marks / "term-4").exists(), proc,
               "SIGTERM to both workers")
        assert proc.poll() is None  # 600 s of grace: it waits for the workers
        proc.send_signal(signal.SIGINT)
        err = _stopped(proc, 130)
    finally:
        proc.kill()
    assert "interrupted (SIGINT); 8 finished points kept" in err
    assert all(gone(w) for w in workers)
    assert rows(out) == 8


def test_signals_in_a_row_stop_with_one_line(tmp_path):
    proc, _study_path, _out, _marks, workers = _busy_sweep(tmp_path, DLSCALE)
    try:
        for sig in (signal.SIGINT, signal.SIGINT, signal.SIGTERM):
            proc.send_signal(sig)
        err = _stopped(proc, 130)
    finally:
        proc.kill()
    assert "interrupted (SIGINT); 8 finished points kept" in err
    assert all(gone(w) for w in workers)


# --- item 3: a dead worker, a file that cannot grow, a read-only folder --------------

def test_a_killed_worker_is_one_line_and_finished_points_are_kept(tmp_path):
    study, out, marks = _study(tmp_path), tmp_path / "o", tmp_path / "marks"
    marks.mkdir()
    proc = subprocess.run(_cmd(DLSCALE, study, out, "blocking_eval", "-j", "1"),
                          env=_env(marks, SWEEP_FAKES_SUICIDE="1"), capture_output=True,
                          text=True, timeout=SAFETY_S)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("dlscale sweep: error: a worker process died (killed by "
                                  "SIGKILL) while running points; 8 finished points kept in ")
    assert rows(out) == 8 and not (out / LOCK_NAME).exists()
    _resume_gives_a_full_sweeps_bytes(tmp_path, study, out)


def _file_limit(limit: int) -> Callable[[], None]:
    def limit_files() -> None:  # in the child: a write past `limit` bytes fails (EFBIG)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return limit_files


def test_a_results_file_that_cannot_grow_is_one_line_and_written_points_are_kept(tmp_path):
    """A full disk, as the kernel says it to a writer: results.jsonl may grow to 4 kB
    (RLIMIT_FSIZE; a row is about 1 kB), then each write fails."""
    study, out = _study(tmp_path), tmp_path / "o"
    proc = subprocess.run(_cmd(DLSCALE, study, out, "ring_eval", "-j", "1"), env=_env(tmp_path),
                          capture_output=True, text=True, timeout=SAFETY_S,
                          preexec_fn=_file_limit(4096))
    err = proc.stderr
    assert proc.returncode == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"dlscale sweep: error: {out / 'results.jsonl'}: cannot write: File "
                          "too large; "), err
    assert "--resume" in err
    whole = (out / "results.jsonl").read_text().splitlines()[:-1]  # the last one is cut
    assert [json.loads(x)["point"] for x in whole] == list(range(len(whole)))
    assert 0 < len(whole) < 16 and f"; {len(whole)} finished points kept in " in err
    assert not (out / LOCK_NAME).exists()
    _resume_gives_a_full_sweeps_bytes(tmp_path, study, out)


def test_no_space_left_is_one_line(tmp_path, monkeypatch, capsys):
    """ENOSPC itself, from the write of the log's third chunk (the write is patched)."""
    study, out = _study(tmp_path), tmp_path / "o"
    real, calls = os.write, []

    def write(fd: int, data: bytes) -> int:
        if os.readlink(f"/proc/self/fd/{fd}") == str(out / "results.jsonl"):
            calls.append(len(data))
            if len(calls) >= 3:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)
    code = main(_cmd([], study, out, "ring_eval", "--executor", "serial"))
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert ("results.jsonl: cannot write: No space left on device; 8 finished points kept"
            in err)
    assert rows(out) == 8


@pytest.mark.parametrize("how", ["chmod", "read-only file system"])
def test_a_read_only_output_folder_is_one_line_before_any_work(tmp_path, monkeypatch, capsys,
                                                               how):
    study, out = _study(tmp_path), tmp_path / "o"
    out.mkdir()
    (out / "keep.txt").write_text("earlier results")
    if how == "chmod":
        out.chmod(0o555)
        if os.access(out, os.W_OK):
            out.chmod(0o755)
            pytest.skip("the user may write in a read-only folder (root)")
    else:  # what a file system mounted read-only answers to every creation in it
        real = os.open

        def ro_open(path, flags, *args, **kw):
            if Path(path).parent == out and flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
            return real(path, flags, *args, **kw)

        monkeypatch.setattr(os, "open", ro_open)
    try:
        code = main(_cmd([], study, out, "ring_eval"))
    finally:
        out.chmod(0o755)
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1, err
    assert err.startswith(f"dlscale sweep: error: -o: cannot write in the folder {str(out)!r}: ")
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
