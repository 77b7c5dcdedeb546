"""``validate local --timeline``: a recorded run written as a Horovod timeline that the
project's own reader (``dlscale fit --horovod-timeline``) parses, with the spans as
recorded; bad values refused in one line before any work."""

import json
import os

import pytest

from dlscale.cli import main
from dlscale.perfmodel.compute.horovod import read_horovod_timeline
from dlscale.perfmodel.errors import ConfigError
from dlscale.perfmodel.fitting.rates_table import message_observations
from dlscale.validation.timeline import horovod_timeline, write_timeline
from tests.mpi_helpers import mpi_or_skip, run_script

TENSORS = [("fc1.weight", 32768), ("fc1.bias", 512), ("fc2.weight", 5120), ("fc2.bias", 40)]


def _spans(hosts=("h", "h"), refs=(0.0, 0.0)):
    """Two ranks, two iterations: (start, computed, called, returned, updated) in s."""
    r0 = [(10.0, 10.0001, 10.0001, 10.0004, 10.00041), (10.0005, 10.0006, 10.0006, 10.0010,
                                                          10.00101)]
    r1 = [(10.0, 10.0002, 10.0002, 10.0004, 10.00042), (10.0005, 10.00065, 10.00065, 10.0011,
                                                          10.00111)]
    return {"algorithm": "sgd-allreduce", "hosts": list(hosts), "clock_refs": list(refs),
            "marks": [r0, r1], "tensors": TENSORS}


def test_the_written_timeline_reads_back_with_the_spans_as_recorded(tmp_path):
    path = tmp_path / "t.json"
    write_timeline(horovod_timeline(_spans(), source="test"), path)
    h = read_horovod_timeline(path)
    assert (h.ranks, h.iterations, h.tensors) == (2, 2, 4)
    # negotiation: first call to last call (100 and 50 us); allreduce: last call to the
    # last return (200 and 450 us); nothing overlaps the backward pass
    assert h.negotiation_s == pytest.approx((100e-6 + 50e-6) / 2)
    assert h.allreduce_s == pytest.approx((200e-6 + 450e-6) / 2)
    assert h.exposed_s == pytest.approx(h.allreduce_s) and h.overlap == pytest.approx(0.0)
    # the four tensors ride one fused message: the whole gradient's bytes
    obs = message_observations(h, 1, {"fc1": 32768 + 512, "fc2": 5120 + 40}, "t")
    assert [(o.size_bytes, o.value) for o in obs] == [(38440.0, pytest.approx(325e-6))]
    doc = json.loads(path.read_text())
    ranks = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e.get("name") == "process_name" and e["args"]["name"].startswith("rank")}
    spans = {(ranks[e["pid"]], e["name"], e["ts"], e["dur"]) for e in doc["traceEvents"]
             if e["ph"] == "X" and e["pid"] in ranks}
    assert ("rank 1", "COMPUTE", 500.0, 150.0) in spans           # 10.0005 .. 10.00065 s
    assert ("rank 0", "MPI_ALLREDUCE", 600.0, 400.0) in spans
    assert ("rank 1", "SGD_UPDATE", 1100.0, 10.0) in spans
    assert doc["otherData"]["clock"].startswith("one host")
    assert doc["otherData"]["tensor_bytes"]["fc2.bias"] == 40


def test_ranks_on_several_hosts_are_aligned_at_the_barrier():
    # rank 1's clock reads 5 s ahead: its readings are moved back by the barrier offset
    spans = _spans(hosts=("a", "b"), refs=(1.0, 6.0))
    spans["marks"][1] = [tuple(t + 5.0 for t in it) for it in spans["marks"][1]]
    doc = horovod_timeline(spans)
    assert doc["otherData"]["clock"].startswith("several hosts")
    assert doc == {**horovod_timeline(_spans()), "otherData": doc["otherData"]}


@pytest.mark.parametrize("change,msg", [
    (lambda s: s.update(marks=s["marks"][:1], hosts=["h"], clock_refs=[0.0]),
     "timeline: 1 rank(s); a timeline of collectives needs at least 2"),
    (lambda s: s["marks"][1].pop(), "timeline: ranks recorded [1, 2] iterations"),
    (lambda s: s.update(marks=[[], []]), "timeline: ranks recorded [0] iterations"),
])
def test_a_bad_recording_is_one_line(change, msg):
    spans = _spans()
    change(spans)
    with pytest.raises(ConfigError) as info:
        horovod_timeline(spans)
    assert str(info.value).startswith(msg) and "\n" not in str(info.value)


def test_timeline_without_its_algorithm_is_refused_before_mpi(capsys, tmp_path):
    out = tmp_path / "t.json"
    assert main(["validate", "local", "--quick", "--algorithms", "sgd-ring", "--timeline",
                 str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--timeline: records the first sgd-allreduce run" in err
    assert not out.exists()


def test_the_api_refuses_a_timeline_that_is_not_a_bool():
    from dlscale import api

    with pytest.raises(ConfigError, match="timeline: must be True or False, got 'yes'"):
        api.validate("local", timeline="yes")
    with pytest.raises(ConfigError, match="timeline: records the first sgd-allreduce run"):
        api.validate("local", timeline=True, algorithms=["sync-easgd"])


RECORD = """
import json, sys
from mpi4py import MPI
from dlscale.validation.mpi_training import train
from dlscale.validation.timeline import horovod_timeline, write_timeline
res = train(MPI.COMM_WORLD, "sgd-allreduce", iterations=8, warmup=2, record=True)
plain = train(MPI.COMM_WORLD, "sgd-allreduce", iterations=8, warmup=2)
if MPI.COMM_WORLD.Get_rank() == 0:
    write_timeline(horovod_timeline(res.spans), sys.argv[1])
    print("RESULT " + json.dumps({"marks": res.spans["marks"], "plain": plain.spans,
                                  "dict": sorted(res.to_dict()), "comm_s": res.comm_s}))
"""


@pytest.mark.mpi
@pytest.mark.slow
def test_a_recorded_two_rank_run_reads_back(tmp_path):
    mpi_or_skip()
    path = tmp_path / "t.json"
    proc = run_script(2, RECORD, str(path), timeout=120)
    assert proc.returncode == 0, proc.stderr
    line, = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    got = json.loads(line[len("RESULT "):])
    assert got["plain"] is None and "spans" not in got["dict"]
    for rank in got["marks"]:
        assert len(rank) == 8 and all(list(it) == sorted(it) for it in rank)
    h = read_horovod_timeline(path)
    assert (h.ranks, h.iterations, h.tensors) == (2, 8, 4)
    # the timeline's allreduce (last call to last return) is within each rank's own
    # call-to-return span per iteration (each rank measures its own as comm_s)
    per_rank = [sum(it[3] - it[2] for it in rank) / 8 for rank in got["marks"]]
    assert 0 < h.allreduce_s <= sum(per_rank) + 1e-9
    assert h.exposed_s == pytest.approx(h.allreduce_s)


def test_an_unwritable_timeline_is_refused_before_any_measurement(capsys, monkeypatch, tmp_path):
    import argparse

    from dlscale.validation import mpi_env, validate_local
    from tests.test_flags import _Rank, _restore

    ran = []
    monkeypatch.setattr(mpi_env, "get_mpi", lambda: argparse.Namespace(COMM_WORLD=_Rank()))
    monkeypatch.setattr(validate_local, "validate_local", lambda *a, **k: ran.append(1))
    (tmp_path / "afile").write_text("")
    bad = tmp_path / "afile" / "t.json"          # a folder that is a file
    monkeypatch.chdir(tmp_path)
    keep = dict(os.environ)
    try:
        assert main(["validate", "local", "--quick", "--plot", "none", "--timeline",
                     str(bad)]) == 2
    finally:
        _restore(keep)     # the MPI settings start_mpi made (os.environ)
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "--timeline" in err and not ran
