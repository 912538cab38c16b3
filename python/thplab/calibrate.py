"""``thplab calibrate``: measure this host's cost primitives and write a cost profile.

The native runner (``thplab-live calibrate``) measures on warmed memory, with repetitions:
clearing and copying 4 KiB and 2 MiB, memchr_inv over a page (best and worst case), a 4 KiB,
THP and zero-page fault round trip, the first touch of a 2 MiB block left idle long enough for
the guest to report it to its host, zram swap-out/swap-in per content class and compressor,
and swap-file write/read. This module turns the samples into a profile (median of the
repetitions; ``spread`` = relative standard deviation) that ``thplab run --costs FILE`` uses.
"""

from __future__ import annotations

import datetime
import json
import statistics
import sys
import tempfile
from pathlib import Path

import tomllib

from thplab.atomic import write_atomic
from thplab.errors import InputError
from thplab.live import LiveError, find_binary, invoke_json

CLASSES = ("same", "sparse", "text", "random")


HELP_DESCRIPTION = """\
Measure what this machine's kernel takes for the model's cost primitives (clearing and copying
4 KiB and 2 MiB pages, page and THP faults, zero-page faults, zram and swap-file traffic) and
write them as a cost profile, which `thplab run --costs FILE` uses for simulated times. The zram
and swap-file costs need root (every setting is restored); without it they keep their defaults."""

HELP_EPILOG = """\
examples:
  thplab calibrate --out host.toml
  thplab calibrate --quick --out /tmp/quick.toml       fewer, smaller repetitions
  thplab run W.json --costs host.toml

output: the TOML profile (written atomically) and a table of each primitive's median and spread."""


def add_arguments(parser) -> None:
    parser.add_argument(
        "--out", default="thplab-costs.toml", help="cost profile to write (TOML; default thplab-costs.toml)"
    )
    parser.add_argument("--quick", action="store_true", help="fewer, smaller repetitions (seconds, for tests)")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per primitive (default 7, quick 3)")


def _med(v):
    return statistics.median(v)


def _spread(v):
    if len(v) < 2:
        return 0.0
    m = statistics.mean(v)
    return statistics.stdev(v) / m if m else 0.0


def profile_from_samples(cal: dict, base_toml: str | None = None) -> tuple[dict, list[tuple[str, float, float, str]]]:
    """Build a cost profile (as a dict) from the runner's samples.

    Returns (profile, rows) where rows are (name, median, spread, note) for the report.
    """
    if base_toml is None:
        from thplab import _native as n

        base_toml = n.default_costs()
    prof = tomllib.loads(base_toml)
    S = cal["samples"]
    V = cal.get("values", {})
    rows = []
    spread = {}

    def have(k):
        return k in S and S[k]

    def put(field, value, src, note=""):
        prof[field] = round(max(0.0, value)) if isinstance(prof.get(field), int) else float(value)
        sp = _spread(S[src]) if src in S else 0.0
        spread[field] = round(sp, 4)
        rows.append((field, prof[field], sp, note))

    for f, k in [
        ("clear_4k_ns", "clear_4k"),
        ("clear_2m_ns", "clear_2m"),
        ("copy_4k_ns", "copy_4k"),
        ("copy_2m_ns", "copy_2m"),
        ("memchr_inv_4k_ns", "memchr_inv_4k_worst"),
        ("touch_page_ns", "touch_page"),
        ("syscall_ns", "syscall"),
        ("fault_zero_ns", "fault_zero"),
    ]:
        if have(k):
            put(f, _med(S[k]), k)
    if have("cpu_ghz"):
        prof["cpu_ghz"] = round(_med(S["cpu_ghz"]), 3)
        spread["cpu_ghz"] = round(_spread(S["cpu_ghz"]), 4)
        rows.append(("cpu_ghz", prof["cpu_ghz"], spread["cpu_ghz"], "dependent-add chain"))
    if have("memchr_inv_4k_best"):
        rows.append(
            (
                "(memchr_inv_4k best case)",
                _med(S["memchr_inv_4k_best"]),
                _spread(S["memchr_inv_4k_best"]),
                "first byte non-zero; not a profile field",
            )
        )
    if have("fault_4k_total"):
        put(
            "fault_4k_ns",
            _med(S["fault_4k_total"]) - prof["clear_4k_ns"],
            "fault_4k_total",
            "4K write fault minus clear_4k",
        )
    if have("fault_2m_total"):
        put(
            "fault_2m_ns",
            _med(S["fault_2m_total"]) - prof["clear_2m_ns"],
            "fault_2m_total",
            "THP write fault minus clear_2m",
        )
    if have("refault_reported_2m_total") and have("fault_2m_total"):
        warm = _med(S["fault_2m_total"])
        cold = [x for x in S["refault_reported_2m_total"] if x > 10 * warm]
        frac = len(cold) / len(S["refault_reported_2m_total"])
        if cold:
            put(
                "refault_reported_2m_ns",
                _med(cold) - warm,
                "refault_reported_2m_total",
                f"{frac:.0%} of idle blocks were reported; extra cost over a warm THP fault",
            )
            spread["refault_reported_2m_ns"] = round(_spread(cold), 4)
        else:
            put(
                "refault_reported_2m_ns",
                0,
                "refault_reported_2m_total",
                "no idle block cost more than 10x a warm THP fault (no free page reporting?)",
            )
    # zram: swap-out/in per page per class; compression = extra over the same-filled path.
    zram = prof.setdefault("zram", {})
    algs = sorted({k.split(".")[1] for k in S if k.startswith("zram.")})
    for alg in algs:
        z = dict(zram.get(alg, zram.get("lzo-rle", {})))

        def g(c: str, d: str, alg: str = alg) -> float:
            return _med(S[f"zram.{alg}.{c}.{d}"])

        same_chk = _med(S["same_filled_4k"]) if have("same_filled_4k") else z.get("same_ns", 250)
        z["same_ns"] = round(same_chk)
        for c in ("sparse", "text", "random"):
            z[f"{c}_compress_ns"] = round(max(0.0, g(c, "out") - g("same", "out")) + same_chk)
            z[f"{c}_decompress_ns"] = round(max(0.0, g(c, "in") - g("same", "in")) + prof["clear_4k_ns"])
            b = V.get(f"zram.{alg}.{c}.bytes")
            if b is not None:
                z[f"{c}_bytes"] = round(b)
            spread[f"zram.{alg}.{c}_compress_ns"] = round(_spread(S[f"zram.{alg}.{c}.out"]), 4)
            spread[f"zram.{alg}.{c}_decompress_ns"] = round(_spread(S[f"zram.{alg}.{c}.in"]), 4)
        zram[alg] = z
        for c in CLASSES:
            for d, what in (("out", "swap-out (MADV_PAGEOUT) per page"), ("in", "swap-in fault per page")):
                k = f"zram.{alg}.{c}.{d}"
                rows.append(
                    (
                        f"zram {alg} {c} {d}",
                        _med(S[k]),
                        _spread(S[k]),
                        what + (f", {V.get(f'zram.{alg}.{c}.bytes', 0):.0f} B stored" if d == "out" else ""),
                    )
                )
    if have("file.write_page"):
        f = dict(prof.get("file", {}))
        f["write_latency_ns"] = round(_med(S["file.write_single"]))
        f["read_latency_ns"] = round(_med(S["file.read_single"]))
        f["write_mb_per_s"] = max(1, round(4096 / _med(S["file.write_page"]) * 1e9 / 1e6))
        f["read_mb_per_s"] = max(1, round(4096 / _med(S["file.read_seq_page"]) * 1e9 / 1e6))
        f["random_penalty_ns"] = 0
        prof["file"] = f
        for k, note in [
            ("file.write_single", "one page out and written back"),
            ("file.read_single", "one isolated page read back (with readahead)"),
            ("file.write_page", "bulk write per page"),
            ("file.read_seq_page", "sequential read-back per page"),
        ]:
            rows.append((k, _med(S[k]), _spread(S[k]), note))
            spread[k.replace(".", "_")] = round(_spread(S[k]), 4)
    host = cal.get("host") or "host"
    prof["name"] = f"calibrated-{host}"
    date = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    prof["source"] = (
        f"calibrated on {host} (kernel {cal.get('kernel', '?')}) {date} by thplab calibrate"
        f"{' --quick' if cal.get('quick') else ''}, {cal.get('reps')} repetitions; medians, spread = relative stddev"
    )
    prof["spread"] = spread
    return prof, rows


def _tv(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    raise TypeError(v)


def to_toml(prof: dict, comments: list[str] = ()) -> str:
    """A small TOML writer for the profile's shape (scalars, tables, one level of sub-tables)."""
    out = [f"# {c}" for c in comments]
    tables = []
    for k, v in prof.items():
        if isinstance(v, dict):
            tables.append((k, v))
        else:
            out.append(f"{k} = {_tv(v)}")
    for k, v in tables:
        subs = [(sk, sv) for sk, sv in v.items() if isinstance(sv, dict)]
        plain = [(sk, sv) for sk, sv in v.items() if not isinstance(sv, dict)]
        out.append("")
        out.append(f"[{k}]")
        for sk, sv in plain:
            out.append(f"{json.dumps(sk)} = {_tv(sv)}")
        for sk, sv in subs:
            out.append("")
            out.append(f"[{k}.{json.dumps(sk)}]")
            for a, b in sv.items():
                out.append(f"{a} = {_tv(b)}")
    return "\n".join(out) + "\n"


def run_native(quick: bool, reps: int | None, timeout: float = 300.0) -> dict:
    with tempfile.TemporaryDirectory(prefix="thplab-cal-") as d:
        out = Path(d) / "cal.json"
        args = [find_binary(), "calibrate", "--out", str(out)]
        if quick:
            args.append("--quick")
        if reps is not None:
            args += ["--reps", str(reps)]
        return invoke_json(args, timeout, out, "calibration")


def _print_rows(rows, cal, path):
    try:
        from rich.console import Console
        from rich.table import Table

        t = Table(title=f"thplab calibrate: {cal.get('host')} ({cal.get('elapsed_s', 0):.1f} s)")
        for c in ("primitive", "value", "spread", "note"):
            t.add_column(c, justify="right" if c in ("value", "spread") else "left")
        for name, v, sp, note in rows:
            t.add_row(name, f"{v:,.1f}" if isinstance(v, float) else f"{v:,}", f"{sp:.1%}", note)
        Console().print(t)
    except ImportError:  # pragma: no cover
        for name, v, sp, note in rows:
            print(f"{name:40s} {v:>14,.1f} {sp:7.1%}  {note}")
    for n_ in cal.get("notes", []):
        print(f"note: {n_}")
    print(f"wrote {path}")


def cmd(args) -> int:
    if args.reps is not None and not (1 <= args.reps <= 1000):
        raise InputError("--reps must be 1..1000")
    cal = run_native(args.quick, args.reps)
    prof, rows = profile_from_samples(cal)
    text = to_toml(prof, [f"thplab cost profile, {prof['source']}"] + [f"note: {x}" for x in cal.get("notes", [])])
    from thplab import _native as n

    try:
        n.parse_costs(text)
    except ValueError as e:  # pragma: no cover - a bug here, not bad input
        raise LiveError(f"calibrate produced an invalid profile: {e}") from e
    path = write_atomic(args.out, text)
    _print_rows(rows, cal, path)
    return 0


if __name__ == "__main__":  # pragma: no cover
    import argparse

    p = argparse.ArgumentParser(prog="thplab calibrate")
    add_arguments(p)
    sys.exit(cmd(p.parse_args()))
