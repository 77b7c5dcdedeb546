"""Where the simulator's prediction of a local training run parts from the closed form.

``validate local`` reports the simulator's figure for each training run next to the
judged closed form (:mod:`.local_model`); over the launches recorded in
``validation/README.md`` it is below the measurement in every run. This script
prints, for the synchronous runs of a report, the two predictions' parts from the
same profile: compute (with the straggler) and communication, so the missing
mechanism can be read off rather than guessed.

Run: ``python -m dlscale.validation.diagnose_local validate-local.json``.

Examples
--------
>>> import json, pathlib
>>> data = pathlib.Path(__file__).resolve().parents[1] / "tests" / "data"
>>> report = json.loads((data / "validate_local_2ranks.json").read_text())
>>> parts = breakdown(report["profile"], "sgd-allreduce", 2, 38440)
>>> sorted(parts)
['closed_comm_s', 'closed_compute_s', 'closed_s', 'closed_update_s', 'sim_comm_s', 'sim_compute_s', 'sim_s']
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

from dlscale.perfmodel.machine.profile import MachineProfile
from dlscale.perfmodel.training.iteration import iteration_times
from dlscale.validation import local_model, local_sim

__all__ = ["breakdown", "main", "resimulate"]

SYNCHRONOUS = ("sgd-ring", "sgd-allreduce", "sync-easgd")


def breakdown(profile: dict[str, Any], algorithm: str, p: int,
              message_bytes: float) -> dict[str, float]:
    """Both predictions' parts (seconds) of one synchronous run of ``p`` ranks.

    Parameters
    ----------
    profile : dict
        A calibration profile (as in the report's ``profile``).
    algorithm : str
        One of :data:`SYNCHRONOUS`.
    p : int
        Ranks.
    message_bytes : float
        The run's gradient bytes.
    """
    prof = MachineProfile.from_dict(profile, where="report.profile")
    cf = local_model.predict_training(prof, algorithm, p, message_bytes)
    cluster = local_sim.local_cluster(prof, p)
    work = local_sim.local_workload(prof, cluster, algorithm, p)
    it = iteration_times(cluster, work, [1])
    return {"closed_s": cf["iteration_s"], "closed_compute_s": cf["compute_s"],
            "closed_comm_s": cf["comm_s"],
            "closed_update_s": cf["iteration_s"] - cf["compute_s"] - cf["comm_s"],
            "sim_s": float(it.iteration_s[0]), "sim_compute_s": float(it.compute_s[0]),
            "sim_comm_s": float(it.comm_s[0])}


def resimulate(report: dict[str, Any]) -> list[tuple[str, float, float]]:
    """The simulator's figure of every training row of a report, computed again from
    its profile with the code as it is now: ``(case, measured_s, simulated_s)``.

    Parameters
    ----------
    report : dict
        A ``validate local`` JSON report (its ``profile``, ``rows`` and ``training``).
    """
    prof = MachineProfile.from_dict(report["profile"], where="report.profile")
    out = []
    for row in report.get("rows", []):
        if row["kind"] != "training" or "simulated_s" not in row:
            continue
        alg = row["case"].split()[0]
        runs = [t for t in report["training"]
                if t["algorithm"] == alg and t["ranks"] == row["ranks"]]
        sim = local_sim.simulate_local_run(prof, alg, row["ranks"], runs[0]["iterations"])
        out.append((row["case"], row["measured_s"], sim["simulated_s"]))
    return out


def main(argv: list[str] | None = None) -> int:
    """Print the parts of every synchronous run of a ``validate local`` JSON report,
    then every training run's simulated figure from the code as it is now."""
    args = sys.argv[1:] if argv is None else argv
    report = json.loads(open(args[0], encoding="utf-8").read())
    print(f"{'run':<18} {'measured_us':>11} {'closed_us':>9} {'compute':>8} {'comm':>6} "
          f"{'update':>6} {'sim_us':>7} {'compute':>8} {'comm':>6}")
    for run in report["training"]:
        if run["algorithm"] not in SYNCHRONOUS:
            continue
        b = breakdown(report["profile"], run["algorithm"], run["ranks"], run["message_bytes"])
        us = {k: v * 1e6 for k, v in b.items()}
        print(f"{run['algorithm'] + ' p=' + str(run['ranks']):<18} "
              f"{run['iteration_median_s'] * 1e6:>11.1f} {us['closed_s']:>9.1f} "
              f"{us['closed_compute_s']:>8.1f} {us['closed_comm_s']:>6.1f} "
              f"{us['closed_update_s']:>6.1f} {us['sim_s']:>7.1f} {us['sim_compute_s']:>8.1f} "
              f"{us['sim_comm_s']:>6.1f}")
    again = resimulate(report)
    for case, measured, sim in again:
        print(f"simulated now: {case:<18} {sim * 1e6:>7.1f} us, {100 * (sim / measured - 1):+.1f} %")
    if again:
        errs = sorted(abs(sim / m - 1) for _, m, sim in again)
        print(f"simulated now: median |error| {100 * float(np.median(errs)):.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
