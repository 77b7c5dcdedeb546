"""Leave-scale-out (issue 25 item 3 and its Done-when line): fit on the smallest scales of
published scaling tables, predict the largest with the fitted profile.

Each table (``examples/fit/``, each file citing its source and saying which figures are
stated) is fitted by :func:`dlscale.api.fit` on every row but the one at the largest
node count, the profile written, and the largest scale predicted through the profile as
a user would (``load_cluster(..., profile)``, the run's ``--runtime``, the measured or
fitted single-device compute). Each machine is the holdout trial's one description
(``validation/holdout/*.toml``, fixed before any prediction of that trial ran); nothing
here is tuned: the fit's only inputs are the table's smaller rows and the cited ranges.

What the method reaches (the README quotes it; a test here holds the quote to this
computation): median error of the largest scale 1.8 % over 7
tables from 4 sources, worst 10.6 % (Horovod VGG-16 at 512 GPUs: the one 128-GPU point
fixes the overlap, which does not give the further fall to 68 %). At the central values,
with the same compute, the median is 3.5 % and the worst 16.2 %: the fit shrinks three
misses (VGG-16 16.2 -> 10.6 %, TensorFlow's K80 ResNet-50 9.3 -> 1.8 %, Piz Daint's 3.5
-> 0.8 %) and leaves the other four tables' errors as they were. The test asserts the
issue's target (median <= 10 %) and that the worst error is no worse than at the central
values.
"""

from __future__ import annotations

import dataclasses
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from dlscale import api
from dlscale.perfmodel.catalog.runtimes import apply_runtime
from dlscale.perfmodel.compute.measured import MeasuredCompute
from dlscale.perfmodel.fitting.rates_table import read_rates
from dlscale.perfmodel.machine.config import load_cluster
from dlscale.perfmodel.machine.profile import load_profile
from dlscale.perfmodel.training.predict import predict

ROOT = Path(__file__).resolve().parents[1]
FIT = ROOT / "examples" / "fit"
HOLD = ROOT / "validation" / "holdout"


@dataclass(frozen=True)
class Table:
    """A published scaling table and the one description of its machine."""

    name: str
    table: str
    source: str                  # source family (independence of the tables)
    cluster: str
    workload: str
    runtime: str | None = None
    overrides: dict[str, Any] = field(default_factory=dict)
    baseline: str = "node"


SYNTH64 = {"batch_per_device": 64, "data": "synthetic"}
TABLES = (
    Table("tf-k80-inception-v3", "tf-k80-inception-v3.toml", "TensorFlow benchmarks",
          "aws-p2-8xlarge-x8.toml", "inception-v3", "parameter-server", SYNTH64),
    Table("tf-k80-resnet50", "tf-k80-resnet50.toml", "TensorFlow benchmarks",
          "aws-p2-8xlarge-x8.toml", "resnet50", "parameter-server", SYNTH64),
    Table("daint-inception-v3", "daint-inception-v3.toml", "Bugliarello 2017",
          "piz-daint-p100.toml", "inception-v3", "parameter-server", SYNTH64),
    Table("dell-mxnet-googlenet", "dell-mxnet-googlenet.csv", "Dell EMC 2016",
          "dell-c4130-p100-edr.toml", "googlenet", None, {"batch_per_device": 36}),
    *(Table(f"horovod-{m}", f"horovod-{m}.csv", "Horovod docs", "uber-horovod-pascal.toml", m,
            None, {"batch_per_device": 64, "collective": "ring"}, "device")
      for m in ("inception-v3", "resnet101", "vgg16")),
)


def _workload(t: Table, measured: MeasuredCompute | None) -> Any:
    w = api.load_workload(t.workload, overrides=t.overrides)
    if measured is not None:
        w = dataclasses.replace(w, model=dataclasses.replace(w.model, measured=measured))
    return w


def leave_largest_out(t: Table, tmp: Path) -> dict[str, Any]:
    """Fit on all rows but the largest node count; the largest's errors, fitted and not."""
    table = read_rates(FIT / t.table)
    largest = max(o.nodes for o in table.points)
    held_out = [o for o in table.points if o.nodes == largest]
    kept = sorted({o.nodes for o in table.points if o.nodes < largest})
    profile = tmp / f"{t.name}.json"
    result = api.fit(HOLD / t.cluster, t.workload, FIT / t.table, nodes=kept,
                     runtime=t.runtime, workload_overrides=t.overrides, baseline=t.baseline,
                     output=profile)
    assert {o.nodes for o in result.observations} == set(kept)  # the largest is held out
    sd = table.single_device
    measured = MeasuredCompute(batch=sd[1], samples_per_s=sd[0]) if sd else None
    fitted = load_profile(profile).fitted
    if "compute" in fitted:   # the single-device rate the fit set, as the report says
        measured = MeasuredCompute(batch=fitted["compute"]["batch"],
                                   samples_per_s=fitted["compute"]["samples_per_s"])
    cluster = apply_runtime(load_cluster(HOLD / t.cluster, profile), t.runtime)
    plain = apply_runtime(load_cluster(HOLD / t.cluster), t.runtime)
    w = _workload(t, measured)
    out = {"name": t.name, "largest": largest, "fitted": result.fitted,
           "held": sorted(result.held), "result": result}
    for key, c in (("error", cluster), ("central_error", plain)):
        p = predict(c, w, [largest], t.baseline)
        errs = [float(getattr(p, o.quantity)[0]) / o.value - 1 for o in held_out]
        out[key] = max(errs, key=abs)
    return out


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory) -> list[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("leave-scale-out")
    return [leave_largest_out(t, tmp) for t in TABLES]


def test_the_tables_are_published_and_independent():
    assert len(TABLES) >= 3 and len({t.source for t in TABLES}) >= 3
    for t in TABLES:
        text = (FIT / t.table).read_text()
        assert "stated" in text, f"{t.table}: says which figures its source states"
        assert len({o.nodes for o in read_rates(FIT / t.table).points}) >= 2


def test_fitted_values_lie_in_their_cited_ranges(outcomes):
    for o in outcomes:
        result = o["result"]
        for p in result.params:
            v = result.fitted.get(p.name, p.central)
            assert p.low <= v <= p.high, (o["name"], p.name, v)
        assert len(result.fitted) <= len(result.observations)
        assert all(why for _, why in result.held.values())


def test_median_error_of_the_largest_scale_within_ten_percent(outcomes):
    errors = [abs(o["error"]) for o in outcomes]
    central = [abs(o["central_error"]) for o in outcomes]
    lines = [f"{o['name']}: {o['largest']} nodes, fitted {o['error']:+.1%} (central "
             f"{o['central_error']:+.1%}), fitted {o['fitted']}, held {o['held']}"
             for o in outcomes]
    print("\n".join(lines))
    assert statistics.median(errors) <= 0.10, lines
    assert max(errors) <= max(central), lines


#: README's words for a table's name where its paragraph names it.
_README_NAMES = {"horovod-vgg16": "Horovod's VGG-16", "tf-k80-resnet50":
                 "TensorFlow's K80 ResNet-50", "daint-inception-v3": "Piz Daint's Inception-v3"}


def test_the_readme_quotes_these_errors(outcomes):
    """README.md's fit section quotes this trial's medians and worsts, and each table the
    fit moves; they had drifted unseen (3.1 / 11.4 / 1.6 / 22.8 % against the live 1.8 /
    10.6 / 3.5 / 16.2 %) before this test."""
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    text = " ".join(readme.split("Fitted on the smaller scales", 1)[1].split("\n\n")[0].split())
    pct = r"(\d+\.\d) %"
    found = re.search(rf"the median error is {pct} \(worst {pct}, Horovod's VGG-16 at 512 GPUs"
                      rf".*? at the central values with the same compute it is {pct} "
                      rf"\(worst {pct}\)", text)
    assert found is not None, text
    errors = [abs(o["error"]) for o in outcomes]
    central = [abs(o["central_error"]) for o in outcomes]
    live = (statistics.median(errors), max(errors), statistics.median(central), max(central))
    assert found.groups() == tuple(f"{100 * v:.1f}" for v in live), (found.groups(), live)
    worst = max(outcomes, key=lambda o: abs(o["error"]))
    assert (worst["name"], worst["largest"]) == ("horovod-vgg16", 128)   # 512 GPUs
    moved = [o for o in outcomes if round(o["error"], 3) != round(o["central_error"], 3)]
    for o in moved:
        assert (f"{_README_NAMES[o['name']]} {100 * abs(o['central_error']):.1f} % to "
                f"{100 * abs(o['error']):.1f} %") in text, o["name"]
    words = {3: "three", 4: "four"}
    assert f"the fit shrinks {words[len(moved)]} misses" in text
    assert all(abs(o["error"]) < abs(o["central_error"]) for o in moved)
    assert f"leaves the other {words[len(outcomes) - len(moved)]} tables' errors" in text
