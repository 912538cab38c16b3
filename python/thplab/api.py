"""The Python API: `thplab.run(workload, ...) -> Result`.

Input handling lives here (workload files, YAML, knob lists, cost profiles, machine
arguments); every check of *meaning* is done by the Rust side (`thplab._native`), whose
ValueError messages name the bad field and are passed on unchanged as `InputError`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from thplab import _native
from thplab.errors import InputError
from thplab.result import Result

__all__ = [
    "BACKENDS",
    "TimeoutExpired",
    "knob_registry",
    "load_costs",
    "load_workload",
    "parse_knobs",
    "parse_machine",
    "run",
]

BACKENDS = ("model", "kernel")
WORKLOAD_SUFFIXES = (".json", ".yaml", ".yml")


class TimeoutExpired(Exception):
    """A run did not finish within its `timeout` (seconds)."""


def _read_text(path: Path, what: str) -> str:
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a {what} file") from None
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what} file") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read {what} file: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise InputError(
            f"{path}: {what} file is not valid UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}, line {line})"
        ) from None


def _yaml_to_json(text: str, origin: str) -> str:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise InputError(f"{origin}: workload is not valid YAML{where}: {problem}") from None
    try:
        return json.dumps(doc)
    except (TypeError, ValueError) as e:
        raise InputError(f"{origin}: YAML workload holds a value JSON cannot express: {e}") from None


def workload_text_from_bytes(data: bytes, origin: str) -> str:
    """JSON text of a workload given as raw bytes (JSON or YAML), e.g. read from stdin."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{origin}: workload is not valid UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})"
        ) from None
    return text if text.lstrip().startswith("{") else _yaml_to_json(text, origin)


def _workload_text(workload: Any) -> tuple[str, str]:
    """(JSON text, origin for messages) of any accepted workload form."""
    from thplab.builder import Workload as Builder  # local: builder imports api

    if isinstance(workload, Builder):
        return workload.to_json(validate=False), f"workload {workload.name!r}"
    if isinstance(workload, Mapping):
        try:
            return json.dumps(workload), "workload"
        except (TypeError, ValueError) as e:
            raise InputError(f"workload: not expressible as JSON: {e}") from None
    if isinstance(workload, bytes):
        try:
            workload = workload.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputError(f"workload is not valid UTF-8 text (byte at offset {e.start})") from None
    if isinstance(workload, str) and workload.lstrip().startswith(("{", "[")):
        return workload, "workload"
    if isinstance(workload, (str, os.PathLike)):
        path = Path(workload)
        text = _read_text(path, "workload")
        if path.suffix.lower() in (".yaml", ".yml"):
            return _yaml_to_json(text, str(path)), str(path)
        return text, str(path)
    raise InputError(
        f"workload: expected a path, a dict, JSON text or a thplab.builder.Workload, got {type(workload).__name__}"
    )


def load_workload(workload: Any) -> dict[str, Any]:
    """Load and validate a workload (path to .json/.yaml/.yml, dict, JSON text or builder);
    returns it normalised by the Rust parser (canonical knob names, sizes as `10G`)."""
    text, origin = _workload_text(workload)
    try:
        normalised = _native.parse_workload_json(text)
    except ValueError as e:
        raise InputError(f"{origin}: {e}" if origin != "workload" else str(e)) from None
    return json.loads(normalised)


def _knob_value(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, float, str)):
        return str(v)
    raise InputError(f"knob value {v!r}: expected a string or a number")


def parse_knobs(knobs: Mapping[str, Any] | Iterable[Any] | None) -> list[tuple[str, str]]:
    """Validate knob assignments: a dict, a list of (name, value) pairs, or a list of
    `NAME=VALUE` strings. Returns [(canonical name, normalised value)] in the given order."""
    if knobs is None:
        return []
    if isinstance(knobs, Mapping):
        items: Iterable[Any] = knobs.items()
    elif isinstance(knobs, (str, bytes)):
        items = [knobs]
    else:
        items = knobs
    out = []
    for item in items:
        if isinstance(item, str):
            name, sep, value = item.partition("=")
            if not sep or not name.strip():
                raise InputError(
                    f"knob assignment `{item}`: expected NAME=VALUE (e.g. transparent_hugepage/enabled=always)"
                )
        else:
            try:
                name, value = item
            except (TypeError, ValueError):
                raise InputError(f"knob assignment {item!r}: expected a (name, value) pair") from None
        try:
            out.append(_native.check_knob(str(name).strip(), _knob_value(value)))
        except ValueError as e:
            raise InputError(str(e)) from None
    return out


def load_costs(costs: str | os.PathLike | None) -> str | None:
    """A cost profile from a TOML file path or TOML text; returns it complete as TOML."""
    if costs is None:
        return None
    if isinstance(costs, os.PathLike) or (isinstance(costs, str) and "\n" not in costs and "=" not in costs):
        path = Path(costs)
        text = _read_text(path, "cost profile")
        origin = f"{path}: "
    else:
        text, origin = str(costs), ""
    try:
        return _native.parse_costs(text)
    except ValueError as e:
        raise InputError(f"{origin}{e}") from None


def parse_machine(machine: str | Mapping[str, Any] | os.PathLike | None) -> dict[str, Any] | None:
    """Validate a machine: shorthand (`24G`, `2x512G,cpus=80,swap=zram:8G`), JSON text, a dict,
    or a path to a .json/.yaml file holding the full form. Returns the full form as a dict."""
    text = _machine_text(machine)
    if text is None:
        return None
    try:
        return json.loads(_native.parse_machine(text))
    except ValueError as e:
        raise InputError(str(e)) from None


def _machine_text(machine: Any) -> str | None:
    if machine is None:
        return None
    if isinstance(machine, Mapping):
        return json.dumps(machine)
    if isinstance(machine, os.PathLike) or (isinstance(machine, str) and machine.lower().endswith(WORKLOAD_SUFFIXES)):
        path = Path(machine)
        text = _read_text(path, "machine")
        if path.suffix.lower() in (".yaml", ".yml"):
            try:
                return json.dumps(yaml.safe_load(text))
            except (yaml.YAMLError, TypeError, ValueError) as e:
                raise InputError(f"{path}: machine is not valid YAML: {e}") from None
        return text
    if isinstance(machine, str):
        return machine
    raise InputError(f"machine: expected a shorthand string, a dict or a file, got {type(machine).__name__}")


def knob_registry() -> list[dict[str, Any]]:
    """Every knob: name, kind, path, default, values, live_value, doc."""
    return json.loads(_native.knob_registry())


class RunThread(threading.Thread):
    """The worker thread of one model run. `finished` is set when the run has returned or
    raised: unlike `is_alive()`, it cannot be wrong after a Ctrl-C. (CPython 3.11's
    Thread._wait_for_tstate_lock, interrupted by KeyboardInterrupt inside join(), releases
    the *running* thread's state lock and marks it stopped — bpo-45274's handler — so
    `is_alive()` then says False while the native run goes on.)"""

    def __init__(self, fn):
        super().__init__(name="thplab-run", daemon=True)
        self._fn = fn
        self.finished = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.value = self._fn()
        except BaseException as e:
            self.error = e
        finally:
            self.finished.set()


def run_in_flight() -> bool:
    """Is a model run still busy in a worker thread (abandoned after Ctrl-C or a timeout)?"""
    return any(isinstance(t, RunThread) and not t.finished.is_set() for t in threading.enumerate())


def _call(fn, timeout: float | None):
    """Run `fn()` in a worker thread (the native model releases the GIL), so that the caller
    stays responsive to Ctrl-C and a timeout can be honoured. On timeout the worker is
    abandoned (it is a daemon thread) and TimeoutExpired is raised."""
    t = RunThread(fn)
    deadline = None if timeout is None else time.monotonic() + timeout
    t.start()
    # Wait in short slices: a blocking wait would delay KeyboardInterrupt until the end.
    while not t.finished.is_set():
        left = 0.05 if deadline is None else min(0.05, deadline - time.monotonic())
        if left <= 0:
            raise TimeoutExpired(f"the run did not finish within {timeout:g} s")
        t.finished.wait(left)
    if t.error is not None:
        raise t.error
    return t.value


def _check_seed_timeout(seed: Any, timeout: Any) -> None:
    """A run's seed (a non-negative integer) and timeout (positive seconds), when given."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise InputError(f"seed {seed!r}: expected a non-negative integer")
    if timeout is not None and not timeout > 0:
        raise InputError(f"timeout {timeout!r}: expected a positive number of seconds")


def run(
    workload: Any,
    machine: Any = None,
    knobs: Any = None,
    costs: str | os.PathLike | None = None,
    seed: int | None = None,
    backend: str = "model",
    check: bool = False,
    timeout: float | None = None,
) -> Result:
    """Run a workload and return its Result.

    workload: path (.json/.yaml/.yml), dict, JSON text or `thplab.builder.Workload`.
    machine:  shorthand (`24G`, `2x512G,cpus=80,swap=zram:8G`), JSON text, dict or file;
              default: the workload's machine, else 24G.
    knobs:    dict or list of (name, value) / `NAME=VALUE`, applied over the workload's.
    costs:    cost profile, a TOML file path or TOML text (model backend).
    seed:     overrides the workload's seed.
    backend:  "model" (the Rust model) or "kernel" (the live kernel, thplab.live).
    check:    run the model's invariant checker during and after the run (also: THPLAB_CHECK=1).
    timeout:  seconds; raises TimeoutExpired when exceeded.
    Raises InputError for bad input, naming the field.
    """
    if backend not in BACKENDS:
        raise InputError(f"backend `{backend}`: expected one of: {', '.join(BACKENDS)}")
    _check_seed_timeout(seed, timeout)
    wl = load_workload(workload)
    knob_pairs = parse_knobs(knobs)
    mtext = _machine_text(machine)
    mspec = parse_machine(mtext) if mtext is not None else None
    costs_toml = load_costs(costs)

    if backend == "kernel":
        if costs_toml is not None:
            raise InputError("--costs applies to the model backend only")
        try:
            import importlib

            live = importlib.import_module("thplab.live")
        except ImportError as e:
            if getattr(e, "name", None) in ("thplab.live", "thplab"):
                raise InputError(
                    "backend `kernel` is not available: the module thplab.live "
                    "(the live-kernel runner) is not installed in this build"
                ) from None
            raise
        data = (
            live.run_kernel(wl, machine=mspec, knobs=knob_pairs, timeout=timeout, seed=seed, check=check)
            if _accepts(live.run_kernel, "seed")
            else live.run_kernel(wl, machine=mspec, knobs=knob_pairs, timeout=timeout)
        )
        return _as_result(data)

    wtext = json.dumps(wl)
    try:
        # THPLAB_CHECK=1 (set by `make test`) turns the invariant checker on for every model run
        check = check or os.environ.get("THPLAB_CHECK") == "1"
        out = _call(lambda: _native.run_model(wtext, mtext, knob_pairs, costs_toml, seed, check), timeout)
    except ValueError as e:
        raise InputError(str(e)) from None
    return Result.from_json(out)


def run_shared(
    workloads: list[Any],
    machine: Any = None,
    knobs: Any = None,
    costs: str | os.PathLike | None = None,
    seed: int | None = None,
    check: bool = False,
    threads: int = 1,
    timeout: float | None = None,
) -> list[Result]:
    """Run several model workloads that differ only from some op of their processes
    onwards (and in name and record.fault_latency): the common prefix runs once, then each
    workload continues from a copy of the whole state, `threads` at a time (each copy holds
    the model's full state: mind the host's memory). The results are those of separate
    `run` calls. Workloads of another form run one by one."""
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise InputError(f"threads {threads!r}: expected a positive integer")
    _check_seed_timeout(seed, timeout)
    texts = [json.dumps(load_workload(w)) for w in workloads]
    knob_pairs = parse_knobs(knobs)
    mtext = _machine_text(machine)
    if mtext is not None:
        parse_machine(mtext)
    costs_toml = load_costs(costs)
    check = check or os.environ.get("THPLAB_CHECK") == "1"
    try:
        outs = _call(
            lambda: _native.run_model_shared(texts, mtext, knob_pairs, costs_toml, seed, check, threads), timeout
        )
    except ValueError as e:
        raise InputError(str(e)) from None
    return [Result.from_json(o) for o in outs]


def _accepts(fn, name: str) -> bool:
    import inspect

    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _as_result(data: Any) -> Result:
    if isinstance(data, Result):
        return data
    if isinstance(data, (str, bytes)):
        return Result.from_json(data)
    return Result(data)
