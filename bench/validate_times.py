"""How far the model's times are from the live kernel's: the geometric mean of model/kernel
over every phase time of every validation scenario (examples/validate), and the phases
furthest off. Prints ratios; no thresholds (`thplab validate` gates them). Phases shorter than
1 ms live (validate.TIME_RATIO_FLOOR_NS: mostly the runner's phase-boundary cost) are left
out of the mean, as are milestones timed while another process's mm held khugepaged's list
(validate.compare_times' "held").

With --costs, a "host" column gives each scenario's host speed: the live runner's 4 KiB fault
probe as its runs started against the profile's (validate.host_speed); runs saved before the
probe show "-".

The kernel side comes from saved live runs (`thplab validate --save-kernel-results DIR`,
each with its repetitions' times), replayed through the model with the same knobs and
machine; with --live (root) the scenarios run on this machine's kernel first.

With --reporting-start, the model's runs start so on a guest that reports free pages
(validate's option of that name: found, the default, backed, idle). With --host-speed, the model's CPU-side
costs run at a host speed (validate's option: auto, the default, off, or a factor).

    .venv/bin/python bench/validate_times.py [--kernel-results DIR] [--costs FILE] [--live] [--quick]
        [--reporting-start backed|idle|found] [--host-speed auto|off|X]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

from thplab import validate as v

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DIR = ROOT / "out" / "validate-kernel"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel-results", default=str(DEFAULT_DIR), metavar="DIR")
    ap.add_argument("--costs", default=None, metavar="FILE", help="cost profile for the model (thplab calibrate)")
    ap.add_argument("--live", action="store_true", help="run the scenarios on this kernel first (root, minutes)")
    ap.add_argument("--quick", action="store_true", help="with --live: one run per scenario, no warm-up")
    ap.add_argument(
        "--reporting-start",
        default=v.DEFAULT_REPORTING_START,
        choices=v.REPORTING_STARTS,
        help="the model's start (validate)",
    )
    ap.add_argument(
        "--host-speed",
        default="auto",
        metavar="auto|off|X",
        help="the model's host speed (validate's, auto by default)",
    )
    a = ap.parse_args()
    scale_speed = v.parse_host_speed(a.host_speed)
    costs = Path(a.costs).read_text() if a.costs else None
    kdir = Path(a.kernel_results)
    sc = v.load_scenarios(None)
    if a.live:
        if os.geteuid() != 0:
            print("--live needs root", file=sys.stderr)
            return 2
        reps, short_reps, warmup = (1, 1, 0) if a.quick else (3, v.DEFAULT_SHORT_REPS, 1)
        rep = v.validate(
            sc,
            save_dir=str(kdir),
            costs_text=costs,
            reps=reps,
            short_reps=short_reps,
            warmup=warmup,
            reporting_start=a.reporting_start,
            scale_speed=scale_speed,
        )
    elif kdir.is_dir() and any(kdir.glob("*.json")):
        rep = v.validate(
            sc,
            kernel_dir=str(kdir),
            costs_text=costs,
            reporting_start=a.reporting_start,
            scale_speed=scale_speed,
        )
    else:
        print(
            f"no saved kernel results in {kdir}: run `sudo .venv/bin/thplab validate --save-kernel-results {kdir}` "
            "(or this script with --live) first; nothing to compare"
        )
        return 0
    rows = [
        (name, t)
        for name, s in rep["scenarios"].items()
        for t in s["times"]
        if t["status"] != "info" and t.get("ratio") and t["kernel_ns"] >= v.TIME_RATIO_FLOOR_NS
    ]
    # a milestone timed while another process's mm held khugepaged's list measures that
    # process, not the model (validate.compare_times): left out, and counted
    held = [(name, t) for name, t in rows if t["status"] == "held"]
    rows = [r for r in rows if r[1]["status"] != "held"]
    if not rows:
        print("no phase times to compare")
        return 0
    logs = [math.log(t["ratio"]) for _, t in rows]
    gm = math.exp(sum(logs) / len(logs))
    spread = math.exp((sum(x * x for x in logs) / len(logs)) ** 0.5)
    within = sum(1 for _, t in rows if t["status"] == "ok")
    # the host's speed as each scenario's live runs started, against the profile (validate.host_speed)
    speed = {name: s.get("host_speed") for name, s in rep["scenarios"].items()}
    print(f"{'scenario':40s} {'phase':36s} {'kernel ms':>11s} {'model ms':>11s} {'ratio':>7s} {'host':>6s}")
    for name, t in sorted(rows, key=lambda r: abs(math.log(r[1]["ratio"])), reverse=True):
        hs = f"{speed[name]:5.2f}x" if speed.get(name) else "     -"
        print(
            f"{name:40s} {t['phase'][:36]:36s} {t['kernel_ns'] / 1e6:11.2f} {t['model_ns'] / 1e6:11.2f} "
            f"{t['ratio']:6.2f}x {hs}{'' if t['status'] == 'ok' else '  ' + t['status']}"
        )
    print(
        f"geometric mean model/kernel over {len(rows)} phase times of {len(rep['scenarios'])} scenarios: {gm:.3f}x "
        f"(geometric spread {spread:.2f}x); within ±{v.TIME_TOLERANCE:.0%}: {within}/{len(rows)}"
        + (f"; costs {a.costs}" if a.costs else "; default costs")
    )
    if held:
        print(
            f"left out: {len(held)} milestone(s) timed while another process's mm held khugepaged's list ("
            + ", ".join(name for name, _ in held)
            + ")"
        )
    h = rep["time_summary"].get("host_speed")
    if h:
        print(
            f"host speed (the live runner's 4 KiB fault probe against the profile's, validate.probe_reference_ns): "
            f"median {h['median']:.2f}x, {h['min']:.2f}-{h['max']:.2f}x; above 1 the live side ran slow against "
            "the calibration"
        )
    if rep.get("host_speed_applied"):
        print(f"the model ran at host speed {rep['host_speed_applied']:.2f}x (--host-speed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
