"""Sweeps and plans answer "which is best?" (issue 26 items 10 and 12).

Plans ranked by cost rank the priced clusters by cost and show the others as
unpriced; ``plan`` writes a file only when asked; a sweep's summary is ranked by the
study's ``rank_by`` and names its best point, the one its heatmap and Pareto plot mark.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from dlscale.cli import main
from dlscale.plan import plan
from dlscale.study import load_study

PRICED = {"summit": 3.0, "cori-knl": 1.0, "stampede2-knl": 0.5}
FOUR = ["summit", "cori-knl", "stampede2-knl", "stampede2-skx"]


def test_cost_ranks_the_priced_clusters_and_leaves_the_unpriced_unpriced():
    res = plan("resnet50", FOUR, samples=1e8, nodes=[1, 8, 64], prices=PRICED,
               collectives=["ring"])
    assert res.meta["rank_by"] == "cost" and res.meta["unpriced"] == ["stampede2-skx"]
    costs = [r["cost"] for r in res.rows]
    priced = [c for c in costs if c is not None]
    assert priced and priced == sorted(priced) and all(c > 0 for c in priced)
    # every priced plan first, then the unpriced ones by node-hours, their cost None (not 0)
    first_none = costs.index(None)
    assert all(c is None for c in costs[first_none:])
    tail = [r["node_hours"] for r in res.rows[first_none:]]
    assert tail == sorted(tail) and {r["cluster"] for r in res.rows[first_none:]} == {"stampede2-skx"}


def test_the_plan_table_says_which_clusters_lack_a_price(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["plan", "resnet50", "--samples", "1e8", "--nodes", "1,8", "--collectives", "ring",
            *(a for c in FOUR for a in ("--cluster", c)),
            *(a for k, v in PRICED.items() for a in ("--price", f"{k}={v}")), "--top", "100"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "ranked by cost" in out.splitlines()[0]
    assert ("unpriced: stampede2-skx (no price per node-hour; give one with --price "
            "stampede2-skx=PRICE or price_per_node_hour in the cluster file); ranked after "
            "the priced clusters, by node-hours") in out
    rows = [ln.split() for ln in out.splitlines() if ln.split()[:1] and ln.split()[0].isdigit()]
    skx = [r for r in rows if r[1] == "stampede2-skx"]
    assert skx and all("unpriced" in r for r in skx) and rows[-1][1] == "stampede2-skx"
    best = next(ln for ln in out.splitlines() if ln.startswith("best "))
    assert best.startswith("best (by cost): ") and ": cost " in best
    assert list(tmp_path.iterdir()) == []  # no -o: nothing written


def test_plan_writes_nothing_unasked_also_when_nothing_is_feasible(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["plan", "resnet50", "--cluster", "summit", "--samples", "1e8",
                 "--deadline-h", "1e-6"]) == 1
    out = capsys.readouterr().out
    assert "infeasible:" in out and "written:" not in out
    assert list(tmp_path.iterdir()) == []
    assert main(["plan", "resnet50", "--cluster", "summit", "--samples", "1e8",
                 "--deadline-h", "1e-6", "-o", "p.json"]) == 1
    assert json.loads((tmp_path / "p.json").read_text())["meta"]["feasible"] is False


def test_no_price_anywhere_ranks_by_node_hours_and_says_so(capsys):
    assert main(["plan", "resnet50", "--cluster", "summit", "--samples", "1e8",
                 "--nodes", "1,8"]) == 0
    out = capsys.readouterr().out
    assert "ranked by node_hours" in out.splitlines()[0]
    assert "no cluster has a price, so ranked by node-hours" in out
    header = next(ln for ln in out.splitlines() if ln.startswith("rank "))
    assert "cost" not in header.split()


TOPOLOGIES = """\
name = "topo"
cluster = "summit"
workload = "resnet50"
nodes = [1, 64, 4608]
rank_by = "RANK"

[vary]
collective = ["ring", "hierarchical"]

[[zip]]
"cluster.name" = ["fat-tree", "dragonfly"]
"network.topology" = [
  {},
  {family = "dragonfly", groups = 64, routers_per_group = 16, terminals_per_router = 5, global_links_per_router = 4, max_nodes = 4608},
]
"""


def _study(tmp_path: Path, rank_by: str):
    f = tmp_path / f"{rank_by}.toml"
    f.write_text(TOPOLOGIES.replace("RANK", rank_by))
    return f


def test_the_sweep_summary_is_ranked_and_names_its_best_point(capsys, tmp_path):
    f = _study(tmp_path, "time_to_train_s")
    assert main(["sweep", str(f), "-o", str(tmp_path / "o"), "--executor", "serial",
                 "--quiet", "--no-plots"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.startswith("point "))
    cols = lines[header].split()
    # a cell "0.93 [0.71-0.95]" is a value and its range: one cell, the value first
    rows = [dict(zip(cols, (c.split(" [")[0] for c in re.findall(r"\S+ \[[^\]]*\]|\S+", ln)),
                     strict=True)) for ln in lines[header + 1:header + 13]]
    times = [float(r["time_to_train_s"].replace(",", "")) for r in rows]
    assert times == sorted(times)
    assert "ranked by time_to_train_s (lowest first)" in out
    best = next(ln for ln in lines if ln.startswith("best "))
    assert best.startswith(f"best (lowest time_to_train_s): point {rows[0]['point']}: ")
    assert "name=fat-tree" in best and "4608 nodes" in best
    # names, not raw JSON; no None; no all-zero cost column (and a line says why)
    assert "{" not in out and "None" not in out and "network.topology" not in cols
    assert "cost" not in cols and "cost: no cluster in this study has a price" in out


def test_heatmap_and_pareto_mark_the_sweep_tables_best(tmp_path, monkeypatch):
    import dlscale.sweep_plots as sp
    from dlscale.sweep import run_sweep
    from dlscale.sweep_select import best_row

    figs = {}

    def keep(fig, path):
        figs[Path(path).name] = fig
        return Path(path)

    monkeypatch.setattr(sp, "_save", keep)
    study = load_study(_study(tmp_path, "node_hours"))  # best at few nodes, not the largest
    res = run_sweep(study, tmp_path / "o", executor="serial", quiet=True, plots=False)
    top = best_row(res.rows, "node_hours")
    assert top is not None and top["nodes"] < 4608
    sp.plot_study(study, res.rows, tmp_path / "o", "sub")
    ax = figs["heatmap.png"].axes[0]
    assert f"({top['nodes']} nodes, the best point)" in ax.get_title()
    (box,) = [p for p in ax.patches if p.get_label().startswith("best: point")]
    assert box.get_label() == f"best: point {top['point']}"
    xs = [t.get_text() for t in ax.get_xticklabels()]
    ys = [t.get_text() for t in ax.get_yticklabels()]
    j, i = (round(v + 0.5) for v in box.get_xy())  # the cell of the best point
    assert (xs[j], ys[i]) == (top["collective"], top["name"])
    labels = figs["pareto.png"].axes[0].get_legend_handles_labels()[1]
    assert any(lb.startswith(f"best by node_hours: point {top['point']} ") for lb in labels)
    assert "{" not in " ".join(xs + ys)
