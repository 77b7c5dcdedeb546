"""``dlscale simulate CLUSTER TRANSFORMER``: one front end, every flag acts or is refused.

The layout flags are held to acting in ``tests/test_flags.py``; here every other flag
of ``simulate`` either acts on the transformer path (nodes, global batch, noise,
seed, format, output) or is refused in one line naming it, before any work, and the
printed rows are :func:`dlscale.api.simulate_transformer`'s.
"""

from __future__ import annotations

import argparse
import json

import pytest

from dlscale.api import simulate_transformer
from dlscale.cli import build_parser, main
from dlscale.commands.simulate_llm import ACTS

try:  # tests/ imported as a package, or as plain files (pytest puts tests/ on sys.path)
    from tests.cli_run import run_cli as _run
except ImportError:  # pragma: no cover
    from cli_run import run_cli as _run  # type: ignore[no-redef]

BASE = ["simulate", "dgx1-v100", "gpt-1.7b"]
MULTI = "dgx-h100-superpod"


def _simulate_actions() -> list[argparse.Action]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [a for a in sub.choices["simulate"]._actions
            if a.option_strings and not isinstance(a, argparse._HelpAction)]


def _value(action: argparse.Action) -> list[str]:
    if action.nargs == 0:
        return []
    if action.choices:
        return [str(list(action.choices)[-1])]
    if action.type is int:
        return ["2"]
    if action.type is float:
        return ["1.0"]
    return ["x.json" if "trace" in action.dest else "2"]


REFUSED = [a for a in _simulate_actions() if a.dest not in ACTS]


@pytest.mark.parametrize("action", REFUSED, ids=[a.option_strings[-1] for a in REFUSED])
def test_a_flag_the_transformer_path_does_not_read_is_refused(action, capsys, tmp_path,
                                                              monkeypatch):
    monkeypatch.chdir(tmp_path)
    flag = next(s for s in action.option_strings if s.startswith("--"))
    rc, out, err = _run([*BASE, flag, *_value(action)], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1 and flag in err, (flag, err)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("extra,base", [
    (["--global-batch", "16"], []),
    (["--noise", "lognormal:0.1"], []), (["--seed", "3"], ["--noise", "lognormal:0.1"]),
    (["--format", "json"], []),
])
def test_the_flags_it_reads_act(extra, base, capsys):
    plain = _run([*BASE, *base], capsys)
    assert plain == _run([*BASE, *base], capsys) and plain[0] == 0
    assert _run([*BASE, *base, *extra], capsys) != plain


def test_trace_out_writes_the_stages_passes(capsys, tmp_path):
    path = tmp_path / "t.json"
    rc, _, _ = _run([*BASE, "--pp", "2", "--global-batch", "8", "--trace-out", str(path)],
                    capsys)
    events = json.loads(path.read_text())["traceEvents"]
    names = {e["name"].split()[0] for e in events if e["ph"] == "X"}
    assert rc == 0 and {"F", "B", "send", "optimizer"} <= names


def test_nodes_acts(capsys):
    one = _run(["simulate", MULTI, "gpt-1.7b", "--tp", "8"], capsys)
    two = _run(["simulate", MULTI, "gpt-1.7b", "--tp", "8", "--nodes", "2"], capsys)
    assert one[0] == two[0] == 0 and one != two


def test_the_command_prints_and_writes_the_api_rows(capsys, tmp_path):
    out = tmp_path / "rows.json"
    rc, text, _ = _run(["simulate", MULTI, "gpt-1.7b", "--pp", "2", "--global-batch", "16",
                        "--nodes", "1,2", "--format", "json", "-o", str(out)], capsys)
    assert rc == 0
    api = simulate_transformer(MULTI, "gpt-1.7b", [1, 2], pp=2, global_batch=16)
    printed = json.loads(text)["rows"]
    assert [r["iteration_s"] for r in printed] == [r["iteration_s"] for r in api.rows]
    assert printed == json.loads(json.dumps(api.rows))
    assert json.loads(out.read_text())["rows"] == printed


@pytest.mark.parametrize("argv,field", [
    (["--zero", "4"], "parallel.zero"), (["--tp", "3"], "nodes"), (["--sp"], "parallel.sp"),
    (["--noise", "gauss:1"], "noise"), (["--nodes", "0"], "nodes"),
    (["-o", "{file}/r.json"], "-o"), (["--trace-out", "{file}/t.json"], "--trace-out"),
])
def test_bad_input_is_one_line_before_any_work(argv, field, capsys, tmp_path):
    (tmp_path / "file").write_text("a regular file, not a folder\n")
    argv = [a.format(file=tmp_path / "file") for a in argv]
    rc, out, err = _run([*BASE, *argv], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1 and field in err, err


def test_a_simulated_transformer_carries_predicts_band_as_the_data_parallel_simulate_does(
        capsys):
    """Issue 25 item 2 on this path: each simulated iteration and TFLOP/s carries the
    band predict prints for the layout, relative to predict's central answer, applied to
    the simulated value (the data-parallel simulate's rule); it printed none before."""
    import dataclasses

    from dlscale.perfmodel.catalog import get_cluster
    from dlscale.perfmodel.catalog.models_llm import get_llm
    from dlscale.perfmodel.training.llm_ranges import llm_band
    from dlscale.perfmodel.training.parallel import ParallelLayout

    res = simulate_transformer("dgx-h100-superpod", "gpt-1.7b", 1, tp=8, global_batch=4,
                               noise="lognormal:0.02", seed=3)
    row = res.rows[0]
    c = dataclasses.replace(get_cluster("dgx-h100-superpod"), noise="lognormal:0.02")
    lay = ParallelLayout(tp=8, pp=1, dp=1, micro=1, global_batch=4)
    central, band = llm_band(c, get_llm("gpt-1.7b"), lay)
    for k in ("iteration_s", "tflops_per_gpu"):
        v, mid = row[k], getattr(central, k)
        assert row[f"{k}_low"] == min(v, v * band[k][0] / mid)
        assert row[f"{k}_high"] == max(v, v * band[k][1] / mid)
        assert row[f"{k}_low"] < v < row[f"{k}_high"]
    rc = main(["simulate", "dgx-h100-superpod", "gpt-1.7b", "--tp", "8", "--nodes", "1",
               "--global-batch", "4", "--noise", "lognormal:0.02", "--seed", "3"])
    out = capsys.readouterr().out
    import re

    assert rc == 0 and len(re.findall(r"[0-9.]+ \[[0-9.,]+-[0-9.,]+\]", out)) == 2
