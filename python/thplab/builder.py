"""A fluent builder for workloads: Python that writes the workload language.

    from thplab.builder import Workload
    w = Workload("seed000", seed=1)
    p = w.process("test")
    r = p.mmap("buf", "10G")
    p.madvise(r, "hugepage")
    p.write(r, every="2M", length="4K", byte=0, bytes=1, data=0xFF)
    p.madvise(r, "pageout").munmap(r)
    w.knob("transparent_hugepage/enabled", "madvise")
    w.save("seed000.json")

Ops return their process, so they chain; `mmap` and `kalloc` return a handle (`Region`,
`KallocSet`) to pass to later ops. Sizes are bytes (int) or strings such as "2M", "10G";
durations are ns (int) or strings such as "500ms". The Rust parser is the judge:
`to_json()`, `validate()` and `save()` check the document with it and raise InputError
naming the field.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thplab import _native
from thplab.atomic import write_atomic
from thplab.errors import InputError

__all__ = ["KallocSet", "Process", "Region", "Workload"]

Size = int | str
Duration = int | float | str


@dataclass(frozen=True)
class Region:
    """A mapping made by `Process.mmap`."""

    name: str
    size: Size
    process: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class KallocSet:
    """A set of unmovable kernel pages made by `Process.kalloc`."""

    name: str
    size: Size
    process: str

    def __str__(self) -> str:
        return self.name


def _advice(a: str) -> str:
    a = str(a).strip().lower()
    return a[5:] if a.startswith("madv_") else a


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


class Process:
    """One process of a workload: a name, a start time and a list of ops."""

    def __init__(self, workload: Workload, name: str, start: Duration | None = None):
        self._workload = workload
        self.name = name
        self.start = start
        self.ops: list[dict[str, Any]] = []

    # ---- helpers ----
    def _ref(self, r: Region | KallocSet | str, kind: type) -> str:
        if isinstance(r, (Region, KallocSet)):
            if not isinstance(r, kind):
                want = "a region from mmap" if kind is Region else "a kalloc set"
                raise InputError(f"process {self.name!r}: op needs {want}, got {type(r).__name__} {r.name!r}")
            if r.process != self.name:
                raise InputError(
                    f"process {self.name!r}: {r.name!r} belongs to process {r.process!r}; regions are per process"
                )
            return r.name
        if isinstance(r, str):
            return r
        raise InputError(f"process {self.name!r}: expected a region handle or name, got {type(r).__name__}")

    def _range(
        self,
        op: str,
        region: Any,
        offset: Size | None,
        length: Size | None,
        every: Size | None,
        kind: type = Region,
        **fields: Any,
    ) -> Process:
        self.ops.append(
            _drop_none(
                {
                    "op": op,
                    "region": self._ref(region, kind),
                    "offset": offset,
                    "length": length,
                    "every": every,
                    **fields,
                }
            )
        )
        return self

    def op(self, op: str, **fields: Any) -> Process:
        """Append a raw op (escape hatch; fields as in the language)."""
        self.ops.append(_drop_none({"op": op, **fields}))
        return self

    # ---- the language ----
    def mmap(self, name: str, size: Size, populate: bool = False, align: Size | None = None) -> Region:
        """Anonymous private mapping: mmap(NULL, size, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS)."""
        self.ops.append(
            _drop_none(
                {"op": "mmap", "name": name, "size": size, "populate": True if populate else None, "align": align}
            )
        )
        return Region(name, size, self.name)

    def munmap(
        self, region: Region | str, offset: Size | None = None, length: Size | None = None, every: Size | None = None
    ) -> Process:
        return self._range("munmap", region, offset, length, every)

    def mprotect(
        self,
        region: Region | str,
        prot: str,
        offset: Size | None = None,
        length: Size | None = None,
        every: Size | None = None,
    ) -> Process:
        """prot: "none", "r" or "rw"."""
        return self._range("mprotect", region, offset, length, every, prot=prot)

    def madvise(
        self,
        region: Region | str,
        advice: str,
        offset: Size | None = None,
        length: Size | None = None,
        every: Size | None = None,
    ) -> Process:
        """advice: hugepage, nohugepage, cold, pageout, free, dontneed, collapse, willneed
        (the MADV_ prefix is accepted too)."""
        return self._range("madvise", region, offset, length, every, advice=_advice(advice))

    def write(
        self,
        region: Region | str,
        offset: Size | None = None,
        length: Size | None = None,
        every: Size | None = None,
        byte: int | None = None,
        bytes: int | None = None,
        data: int | str | None = None,
    ) -> Process:
        """For every 4 KiB page of the range, write `bytes` bytes at `byte` within the page:
        `data` is a byte value (memset), "random" or "text"."""
        return self._range("write", region, offset, length, every, byte=byte, bytes=bytes, data=data)

    def read(
        self,
        region: Region | str,
        offset: Size | None = None,
        length: Size | None = None,
        every: Size | None = None,
        byte: int | None = None,
    ) -> Process:
        """A one-byte load at `byte` of every 4 KiB page of the range."""
        return self._range("read", region, offset, length, every, byte=byte)

    def access(
        self,
        region: Region | str,
        pattern: str = "seq",
        count: int | None = None,
        duration: Duration | None = None,
        write: float | None = None,
        stride: Size | None = None,
        theta: float | None = None,
        offset: Size | None = None,
        length: Size | None = None,
    ) -> Process:
        """A stream of 8-byte loads/stores (pattern seq, random or zipf): `count` of them or for `duration`."""
        return self._range(
            "access",
            region,
            offset,
            length,
            None,
            pattern=pattern,
            count=count,
            duration=duration,
            write=write,
            stride=stride,
            theta=theta,
        )

    def sleep(self, duration: Duration) -> Process:
        self.ops.append({"op": "sleep", "duration": duration})
        return self

    def set(self, knob: str, value: Any) -> Process:
        """Write a knob (sysfs/sysctl file) at this point of the run."""
        self.ops.append({"op": "set", "knob": knob, "value": value})
        return self

    def prctl(self, thp_disable: bool = True) -> Process:
        """prctl(PR_SET_THP_DISABLE, thp_disable)."""
        self.ops.append({"op": "prctl", "thp_disable": bool(thp_disable)})
        return self

    def kalloc(self, name: str, size: Size, order: int | None = None) -> KallocSet:
        """Hold `size` bytes of unmovable kernel memory (pipe buffers), in blocks of `order`."""
        self.ops.append(_drop_none({"op": "kalloc", "name": name, "size": size, "order": order}))
        return KallocSet(name, size, self.name)

    def kfree(
        self, kset: KallocSet | str, offset: Size | None = None, length: Size | None = None, every: Size | None = None
    ) -> Process:
        """Release part (a range over its bytes) of a kalloc set."""
        return self._range("kfree", kset, offset, length, every, kind=KallocSet)

    def drop_caches(self, value: int = 3) -> Process:
        self.ops.append({"op": "drop_caches", "value": value})
        return self

    def move_pages(
        self,
        region: Region | str,
        node: int,
        offset: Size | None = None,
        length: Size | None = None,
        every: Size | None = None,
    ) -> Process:
        return self._range("move_pages", region, offset, length, every, node=node)

    def phase(self, name: str) -> Process:
        """Start a phase: counters and times are reported per phase."""
        self.ops.append({"op": "phase", "name": name})
        return self

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({"name": self.name, "start": self.start, "ops": list(self.ops)})


def format_workload(doc: dict[str, Any], indent: int = 2) -> str:
    """Workload JSON laid out for people: top-level fields one per line, each process's
    fields on its first line and each op on a line of its own."""
    sp = " " * indent
    lines = ["{"]
    items = list(doc.items())
    for i, (k, v) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if k == "processes" and isinstance(v, list):
            lines.append(f"{sp}{json.dumps(k)}: [")
            for pi, proc in enumerate(v):
                pcomma = "," if pi < len(v) - 1 else ""
                head = {pk: pv for pk, pv in proc.items() if pk != "ops"}
                head_txt = json.dumps(head)[1:-1]
                ops = proc.get("ops", [])
                if not ops:
                    lines.append(f'{sp * 2}{{{head_txt}{", " if head_txt else ""}"ops": []}}{pcomma}')
                    continue
                lines.append(f'{sp * 2}{{{head_txt}{", " if head_txt else ""}"ops": [')
                for oi, op in enumerate(ops):
                    lines.append(f"{sp * 3}{json.dumps(op)}{',' if oi < len(ops) - 1 else ''}")
                lines.append(f"{sp * 2}]}}{pcomma}")
            lines.append(f"{sp}]{comma}")
        else:
            lines.append(f"{sp}{json.dumps(k)}: {json.dumps(v)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


class Workload:
    """A workload document under construction."""

    def __init__(self, name: str = "workload", seed: int | None = None, description: str | None = None):
        self.name = name
        self.seed = seed
        self.description = description
        self._machine: Any = None
        self._knobs: dict[str, Any] = {}
        self._record: dict[str, Any] = {}
        self._processes: list[Process] = []

    def process(self, name: str | None = None, start: Duration | None = None) -> Process:
        """Add a process (started `start` after the run begins) and return it."""
        name = name or f"p{len(self._processes)}"
        if any(p.name == name for p in self._processes):
            raise InputError(f"workload {self.name!r}: duplicate process name {name!r}")
        p = Process(self, name, start)
        self._processes.append(p)
        return p

    def knob(self, name: str, value: Any) -> Workload:
        """Set a knob's value at the start of the run."""
        self._knobs[name] = value
        return self

    def machine(self, spec: str | dict[str, Any]) -> Workload:
        """The machine: shorthand such as "24G" or "2x512G,cpus=80,swap=zram:8G", or the full form."""
        self._machine = spec
        return self

    def record(
        self, fault_latency: bool | None = None, series_interval: Duration | None = None, trace: list[str] | None = None
    ) -> Workload:
        """What to record beyond the counters: fault latency percentiles, a time series
        sampled every `series_interval`, tracepoints to export."""
        self._record.update(
            _drop_none(
                {
                    "fault_latency": fault_latency,
                    "series_interval": series_interval,
                    "trace": list(trace) if trace is not None else None,
                }
            )
        )
        return self

    def describe(self, text: str) -> Workload:
        self.description = text
        return self

    # ---- output ----
    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name}
        if self.description:
            d["description"] = self.description
        if self.seed is not None:
            d["seed"] = self.seed
        if self._machine is not None:
            d["machine"] = self._machine
        if self._knobs:
            d["knobs"] = dict(self._knobs)
        if self._record:
            d["record"] = dict(self._record)
        d["processes"] = [p.to_dict() for p in self._processes]
        return d

    def validate(self) -> dict[str, Any]:
        """Check with the Rust parser; returns the normalised document."""
        try:
            return json.loads(_native.parse_workload_json(json.dumps(self.to_dict())))
        except ValueError as e:
            raise InputError(f"workload {self.name!r}: {e}") from None

    def to_json(self, indent: int | None = 2, validate: bool = True) -> str:
        """The workload as JSON text (as built, not normalised); validated first by default.
        With an indent, one op per line (the layout of examples/*.json); indent=None: one line."""
        if validate:
            self.validate()
        if indent is None:
            return json.dumps(self.to_dict())
        return format_workload(self.to_dict(), indent)

    def save(self, path: str | os.PathLike) -> Path:
        """Validate and write atomically; YAML for .yaml/.yml, JSON otherwise."""
        path = Path(path)
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            self.validate()
            text = yaml.safe_dump(self.to_dict(), sort_keys=False)
        else:
            text = self.to_json()
        return write_atomic(path, text)

    def run(self, **kwargs: Any):
        """`thplab.run(self, **kwargs)`."""
        from thplab.api import run

        return run(self, **kwargs)

    def __repr__(self) -> str:
        return f"<Workload {self.name!r} processes={[p.name for p in self._processes]}>"
