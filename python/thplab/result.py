"""The result of a run, as the kernel itself would show it.

`Result` wraps the `RunResult` JSON document (crates/workload/src/result.rs) — the same
schema for the model and the live kernel — and offers pandas views of its tables.
The dict stays the source of truth: `.raw` is exactly what `to_json()` writes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

from thplab.atomic import write_atomic
from thplab.errors import InputError

__all__ = ["Result", "write_atomic"]


class Result:
    """One run's result. Construct from the result dict (or use `Result.load`,
    `Result.from_json`)."""

    def __init__(self, data: dict[str, Any]):
        if not isinstance(data, dict):
            raise InputError(f"result: expected a JSON object, got {type(data).__name__}")
        self._d = data

    # ---- construction and persistence ----
    @classmethod
    def from_json(cls, text: str | bytes) -> Result:
        try:
            return cls(json.loads(text))
        except (ValueError, UnicodeDecodeError) as e:
            raise InputError(f"result is not valid JSON: {e}") from None

    @classmethod
    def load(cls, path: str | os.PathLike) -> Result:
        p = Path(path)
        try:
            data = p.read_bytes()
        except OSError as e:
            raise InputError(f"{p}: cannot read result: {e.strerror or e}") from None
        try:
            return cls.from_json(data)
        except InputError as e:
            raise InputError(f"{p}: {e}") from None

    def to_json(self) -> str:
        """Pretty JSON (2-space indent, key order kept) ending in a newline;
        identical results give byte-identical text."""
        return json.dumps(self._d, indent=2, ensure_ascii=False, allow_nan=False) + "\n"

    def save(self, path: str | os.PathLike) -> Path:
        """Write the result to `path` atomically (temp file + rename in the same directory)."""
        return write_atomic(path, self.to_json())

    # ---- plain fields ----
    @property
    def raw(self) -> dict[str, Any]:
        return self._d

    def _get(self, key: str, default: Any) -> Any:
        v = self._d.get(key)
        return default if v is None else v

    @property
    def name(self) -> str:
        return self._get("workload", "")

    @property
    def backend(self) -> str:
        return self._get("backend", "")

    @property
    def seed(self) -> int:
        return self._get("seed", 0)

    @property
    def version(self) -> str:
        return self._get("thplab_version", "")

    @property
    def sim_time_ns(self) -> int:
        return self._get("sim_time_ns", 0)

    @property
    def machine(self) -> Any:
        return self._d.get("machine")

    @property
    def kernel(self) -> Any:
        return self._d.get("kernel")

    @property
    def knobs(self) -> dict[str, str]:
        return self._get("knobs", {})

    @property
    def vmstat(self) -> dict[str, int]:
        """/proc/vmstat at the end of the run."""
        return self._get("vmstat", {})

    @property
    def vmstat_delta(self) -> dict[str, int]:
        """/proc/vmstat change over the whole run."""
        return self._get("vmstat_delta", {})

    @property
    def meminfo(self) -> dict[str, int]:
        """/proc/meminfo at the end of the run, kB."""
        return self._get("meminfo", {})

    @property
    def buddyinfo_before(self) -> str:
        return self._get("buddyinfo_before", "")

    @property
    def buddyinfo_after(self) -> str:
        return self._get("buddyinfo_after", "")

    @property
    def pagetypeinfo(self) -> str:
        return self._get("pagetypeinfo", "")

    @property
    def processes(self) -> list[dict[str, Any]]:
        return self._get("processes", [])

    @property
    def trace(self) -> list[dict[str, Any]]:
        return self._get("trace", [])

    @property
    def extra(self) -> dict[str, Any]:
        return self._get("extra", {})

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Every op error of every process, each with its `process` name added."""
        out = []
        for p in self.processes:
            for e in p.get("errors") or []:
                out.append({"process": p.get("name", ""), **e})
        return out

    # ---- pandas views ----
    @property
    def phases(self) -> pd.DataFrame:
        """One row per phase, indexed by phase name (`process:phase`): process, start_ns,
        end_ns, time_ns (end - start), sys_ns, then every vmstat counter that changed in
        any phase (0 where it did not change in that phase), columns sorted by name."""
        import pandas as pd

        rows = self._get("phases", [])
        counters = sorted({k for ph in rows for k in (ph.get("vmstat_delta") or {})})
        base = ["process", "start_ns", "end_ns", "time_ns", "sys_ns"]
        records = []
        for ph in rows:
            start, end = ph.get("start_ns", 0), ph.get("end_ns", 0)
            rec = {
                "name": ph.get("name", ""),
                "process": ph.get("process", ""),
                "start_ns": start,
                "end_ns": end,
                "time_ns": end - start,
                "sys_ns": ph.get("sys_ns", 0),
            }
            delta = ph.get("vmstat_delta") or {}
            rec.update({c: delta.get(c, 0) for c in counters})
            records.append(rec)
        df = pd.DataFrame.from_records(records, columns=["name", *base, *counters])
        for c in df.columns[1:]:
            if c != "process":
                df[c] = df[c].astype("int64")
        return df.set_index("name")

    @property
    def series(self) -> pd.DataFrame:
        """The sampled time series: index `t_ns` (simulated ns), a `t_s` column (seconds),
        then one column per sampled quantity."""
        import pandas as pd

        s = self._get("series", {})
        cols = list(s.get("columns") or [])
        rows = s.get("rows") or []
        if not cols:
            return pd.DataFrame(columns=["t_s"], index=pd.Index([], name="t_ns", dtype="int64"))
        df = pd.DataFrame(rows, columns=cols, dtype="float64")
        tcol = cols[0]
        t = df.pop(tcol).astype("int64")
        df.index = pd.Index(t, name="t_ns")
        df.insert(0, "t_s", t.to_numpy() / 1e9)
        return df

    @property
    def smaps(self) -> pd.DataFrame:
        """smaps_rollup (kB) per process just before exit: index process name,
        columns pid then the rollup fields."""
        import pandas as pd

        procs = self.processes
        fields: list[str] = []
        for p in procs:
            for k in p.get("smaps_rollup") or {}:
                if k not in fields:
                    fields.append(k)
        records = [
            {
                "process": p.get("name", ""),
                "pid": p.get("pid", 0),
                **{f: (p.get("smaps_rollup") or {}).get(f, 0) for f in fields},
            }
            for p in procs
        ]
        df = pd.DataFrame.from_records(records, columns=["process", "pid", *fields])
        for c in df.columns[1:]:
            df[c] = df[c].astype("int64")
        return df.set_index("process")

    @property
    def latency(self) -> pd.DataFrame:
        """Latency percentiles: index distribution name (e.g. `thp_fault`), columns
        `count` then `p05` ... `p99` in ns."""
        import pandas as pd

        lat = self._get("latency", {})
        pcols = sorted({k for v in lat.values() for k in (v.get("ns") or {})}, key=_pct_key)
        records = [
            {"name": n, "count": v.get("count", 0), **{c: (v.get("ns") or {}).get(c) for c in pcols}}
            for n, v in lat.items()
        ]
        df = pd.DataFrame.from_records(records, columns=["name", "count", *pcols])
        df["count"] = df["count"].astype("int64")
        for c in pcols:
            df[c] = df[c].astype("Int64")
        return df.set_index("name")

    @property
    def tlb(self) -> pd.DataFrame:
        """TLB counters of access streams per process (index process name)."""
        import pandas as pd

        records = [
            {"process": p.get("name", ""), "access_ns": p.get("access_ns", 0), **(p.get("tlb") or {})}
            for p in self.processes
        ]
        return (
            pd.DataFrame.from_records(records).set_index("process")
            if records
            else pd.DataFrame(index=pd.Index([], name="process"))
        )

    @property
    def fragmentation(self) -> pd.DataFrame:
        """Per-zone fragmentation score, extfrag and fragmentation index per order."""
        import pandas as pd

        records = []
        for z in self._get("fragmentation", []):
            rec = {
                "node": z.get("node", 0),
                "zone": z.get("zone", ""),
                "fragmentation_score": z.get("fragmentation_score", 0),
            }
            for o, v in enumerate(z.get("extfrag") or []):
                rec[f"extfrag_{o}"] = v
            for o, v in enumerate(z.get("fragmentation_index") or []):
                rec[f"index_{o}"] = v
            records.append(rec)
        return pd.DataFrame.from_records(records)

    def __repr__(self) -> str:
        return (
            f"<Result {self.name!r} backend={self.backend} seed={self.seed} "
            f"sim_time={self.sim_time_ns / 1e9:.6f}s phases={len(self._get('phases', []))}>"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Result) and self._d == other._d

    # a Result wraps a mutable dict: equal by value, so not hashable
    __hash__ = None  # type: ignore[assignment]


def _pct_key(k: str) -> tuple[int, str]:
    digits = "".join(ch for ch in k if ch.isdigit())
    return (int(digits) if digits else 1000, k)
