"""One front end for validate and calibrate (issue 28): ``dlscale validate`` and
``dlscale calibrate`` ask :func:`dlscale.api.validate` and :func:`dlscale.api.calibrate`,
and print what those return. Real runs, no fakes: the published case runs its model,
the MPI questions measure this machine under ``mpiexec``."""

from __future__ import annotations

import json
import re

import pytest

import dlscale
from dlscale import api, cli
from dlscale.measure import PUBLISHED_BASELINE
from dlscale.output import to_jsonable
from dlscale.perfmodel.errors import ConfigError
from dlscale.provenance import Provenance
from dlscale.validation.report import format_results
from tests.mpi_helpers import mpi_or_skip, run_script

#: One analytical-only case: seconds, not the minutes of every simulated row.
CASE = ["--case", "cavdar-isc19", "--fidelity", "analytical"]


def _published():
    return api.validate("published", cases=["cavdar-isc19"], fidelities=["analytical"])


def test_validate_published_command_prints_what_the_api_returns(capsys, tmp_path):
    res = _published()
    assert isinstance(res, dlscale.ValidateResult) and len(res) == res.meta["rows"] > 0
    assert {r["case"] for r in res.rows} == {"cavdar-isc19"}
    assert res.meta["within"] == sum(r["within"] is True for r in res.rows)
    assert set(res.raw) == {"cavdar-isc19"}          # the case's outputs, for its figure
    out = tmp_path / "rows.json"
    assert cli.main(["validate", "published", *CASE, "--format", "json", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    doc = {"meta": to_jsonable(res.meta), "rows": to_jsonable(res.rows)}
    assert printed == json.dumps(doc, indent=1, allow_nan=False) + "\n"
    assert out.read_text() == printed
    assert cli.main(["validate", "published", *CASE]) == 0
    prov = Provenance(baseline=PUBLISHED_BASELINE)
    assert capsys.readouterr().out == "\n".join([*prov.header_lines(),
                                                 format_results(res.rows)]) + "\n"


def test_validate_published_same_question_same_rows():
    assert _published().rows == _published().rows


@pytest.mark.parametrize("call, msg", [
    (lambda: api.validate("publish"), "validate: unknown 'publish'; valid: published, local"),
    (lambda: api.validate("published", case=["x"]),
     "validate published: unknown option case; valid: cases, fidelities"),
    (lambda: api.validate("published", cases=["nope"]), "case: unknown name 'nope'"),
    (lambda: api.validate("published", cases="cavdar-isc19"),
     "cases: must be a list of names, got 'cavdar-isc19'"),
    (lambda: api.validate("published", fidelities=["sim"]), "fidelities: unknown name 'sim'"),
    (lambda: api.validate("local", algorithms=["sgd"]), "algorithms: unknown ['sgd']"),
    (lambda: api.validate("local", budget_s=0), "budget_s: must be > 0, got 0"),
    (lambda: api.validate("local", rounds=0), "rounds: must be an integer >= 1, got 0"),
    (lambda: api.validate("local", quick=True), "validate local: unknown option quick"),
    (lambda: api.calibrate(budget=3), "calibrate: unknown option budget; valid: "
                                      "allreduce_algorithm, argv, budget_s"),
    (lambda: api.calibrate([0, 8]), "sizes: must be message sizes in bytes"),
    (lambda: api.calibrate(collectives=["alltoall"]), "collectives: unknown ['alltoall']"),
    (lambda: api.calibrate(budget_s=-1), "budget_s: must be > 0, got -1"),
    (lambda: api.calibrate(comm=object(), yield_mode="on"),
     "yield_mode: MPI reads it when it starts; with comm given it has started"),
])
def test_a_bad_question_is_one_line_before_any_work(call, msg):
    """Refused before MPI starts or anything is measured (no mpiexec here)."""
    with pytest.raises(ConfigError, match=re.escape(msg)) as info:
        call()
    assert "\n" not in str(info.value)


#: Under ``mpiexec -n 2``: the command runs with the API function wrapped by a
#: recorder (the real function is called; its result is kept), and rank 0 checks
#: that what the command printed and wrote is that result.
SCRIPT = """
import json, sys
import dlscale.api
from dlscale import cli
kept = []
def _keep(real):
    def wrapped(*a, **k):
        kept.append(real(*a, **k))
        return kept[-1]
    return wrapped
name, out = sys.argv[1], sys.argv[2]
setattr(dlscale.api, name, _keep(getattr(dlscale.api, name)))
argv = {"calibrate": ["calibrate", "--quick", "--budget-s", "2", "--max-size", "4096",
                      "--no-kernels", "--quiet", "-o", out],
        "validate": ["validate", "local", "--quick", "--budget-s", "3", "--max-size", "16384",
                     "--iterations", "20", "--algorithms", "sgd-allreduce", "--quiet",
                     "-o", out, "--plot", "none", "--timeline", out + ".timeline"]}[name]
status = cli.main(argv)
from mpi4py import MPI
res, = kept
if MPI.COMM_WORLD.Get_rank() == 0:
    with open(out) as fh:
        written = json.load(fh)
    print("RESULT " + json.dumps({"status": status, "written": written, "rows": res.rows,
                                  "meta": res.meta, "profile": res.profile.to_dict()
                                  if name == "calibrate" else None}))
else:
    assert status == 0 and res.rows == [] and res.meta["rank"] == 1, (status, res)
"""


def _result(proc):
    assert proc.returncode == 0, proc.stderr
    line, = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    return proc.stdout, json.loads(line[len("RESULT "):])


@pytest.mark.mpi
@pytest.mark.slow
def test_calibrate_command_writes_what_the_api_returns(tmp_path):
    mpi_or_skip()
    from dlscale.commands.calibrate import summary_lines
    from dlscale.measure import calibrate_rows
    from dlscale.perfmodel.machine.profile import load_profile

    out = tmp_path / "profile.json"
    stdout, got = _result(run_script(2, SCRIPT, "calibrate", str(out), timeout=120))
    assert got["status"] == 0 and got["written"] == got["profile"]
    prof = load_profile(out)
    assert got["rows"] == json.loads(json.dumps(calibrate_rows(prof)))
    assert {r["name"] for r in got["rows"]} >= {"intra-node latency_s", "intra-node bandwidth_Bps"}
    assert got["meta"]["provenance"]["ranks"] == 2
    assert got["meta"]["provenance"]["command_s"] == prof.provenance["command_s"]
    assert stdout.splitlines()[:len(summary_lines(prof))] == summary_lines(prof)


@pytest.mark.mpi
@pytest.mark.slow
def test_validate_local_command_writes_what_the_api_returns(tmp_path):
    mpi_or_skip()
    out = tmp_path / "report.json"
    stdout, got = _result(run_script(2, SCRIPT, "validate", str(out), timeout=180))
    written = got["written"]
    assert got["status"] == 0 and written["rows"] == got["rows"] and got["rows"]
    assert written["provenance"] == got["meta"]["provenance"]
    assert all(written[k] == got["meta"][k] for k in ("summary", "profile", "notes"))
    assert {r["kind"] for r in got["rows"]} == {"allreduce", "training"}
    assert f"wrote {out}" in stdout
    # the first sgd-allreduce run as a Horovod timeline, which fit's reader takes
    from dlscale.perfmodel.compute.horovod import read_horovod_timeline

    h = read_horovod_timeline(f"{out}.timeline")
    assert (h.ranks, h.iterations, h.tensors) == (2, 20, 4) and h.allreduce_s > 0
    assert f"wrote {out}.timeline" in stdout and "timeline" not in written
