"""Benchmark: transformer layouts priced per second (issue 29: at least 10,000).

``python benchmarks/bench_layouts.py [--repeats N] [--quick]`` lists every layout of
a few (model, machine, GPUs, global batch) cases
(:func:`dlscale.perfmodel.training.layout_space.layouts`) and prices each one whole
by :func:`~dlscale.perfmodel.training.parallel_time.llm_iteration`, the function
``predict`` calls (time, breakdown, memory, the largest microbatch that fits),
inside a fresh :func:`~dlscale.perfmodel.layoutmemo.pricing_memo` block per repeat
(a cold start each time: nothing is kept between repeats). ``priced/s`` is layouts
over the median wall time of the repeats (``spread`` the lowest and highest rate),
``cpu/s`` over the median CPU time of this process (less sensitive to other work on
the machine); ``search/s`` the whole search of ``plan`` (memory of every layout,
the time of those that fit, the ranking); ``plain/s`` ``llm_iteration`` without the
memo on the first 300 layouts; ``parts`` the pricing parts computed over those
answered from the block (counts, not times). Target: 10,000 layouts per second.
"""

from __future__ import annotations

import argparse
import statistics
import time

from dlscale.perfmodel.catalog.clusters import CLUSTERS
from dlscale.perfmodel.catalog.models_llm import get_llm
from dlscale.perfmodel.layoutmemo import pricing_memo
from dlscale.perfmodel.training.layout_search import search_layouts
from dlscale.perfmodel.training.layout_space import layouts
from dlscale.perfmodel.training.parallel_time import llm_iteration
from dlscale.validation.megatron_selene import SELENE

TARGET = 10_000.0

#: (label, model, cluster, GPUs, global batch).
CASES = (
    ("gpt3-175b selene 1024", "gpt3-175b", SELENE, 1024, 1536),
    ("gpt-1t selene 3072", "gpt-1t", SELENE, 3072, 3072),
    ("llama2-70b h100-pod 512", "llama2-70b", CLUSTERS["dgx-h100-superpod"], 512, 1024),
    ("gpt-1.7b dgx1-v100 8", "gpt-1.7b", CLUSTERS["dgx1-v100"], 8, 16),
)


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="2 repeats")
    args = ap.parse_args(argv)
    reps = 2 if args.quick else args.repeats
    print(f"{'case':<26} {'layouts':>8} {'fit':>6} {'priced/s':>10} {'spread':>15} "
          f"{'cpu/s':>9} {'search/s':>9} {'plain/s':>8} {'parts':>14} {'target':>8}")
    worst = float("inf")
    for label, name, cluster, gpus, batch in CASES:
        model = get_llm(name)
        lays = list(layouts(model, gpus, cluster.node.devices_per_node, batch))

        def price_all(model=model, cluster=cluster, lays=lays):
            with pricing_memo() as stats:
                for lay in lays:
                    llm_iteration(cluster, model, lay)
            return stats

        walls, cpus = [], []
        for _ in range(reps):
            stats, w, c = _timed(price_all)
            walls.append(w)
            cpus.append(c)
        searched, sw, _ = _timed(lambda m=model, c=cluster, g=gpus, b=batch:
                                 search_layouts(c, m, g, b))
        sample = lays[:300]
        _, pw, _ = _timed(lambda m=model, c=cluster, s=sample:
                          [llm_iteration(c, m, lay) for lay in s])
        rates = sorted(len(lays) / w for w in walls)
        rate = len(lays) / statistics.median(walls)
        worst = min(worst, rate)
        parts = f"{sum(stats.misses.values())}/{sum(stats.hits.values())}"
        print(f"{label:<26} {len(lays):>8} {len(searched.ranked):>6} {rate:>10,.0f} "
              f"{f'{rates[0]:,.0f}-{rates[-1]:,.0f}':>15} "
              f"{len(lays) / statistics.median(cpus):>9,.0f} {len(lays) / sw:>9,.0f} "
              f"{len(sample) / pw:>8,.0f} {parts:>14} {TARGET:>8,.0f}")
    print(f"slowest case: {worst:,.0f} layouts/s priced (target {TARGET:,.0f}): "
          f"{'met' if worst >= TARGET else 'NOT met'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
