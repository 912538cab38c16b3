"""The live-kernel backend: run a workload on this machine's own kernel.

The work is done by the native runner ``thplab-live`` (crates/live): one real process per
workload process, real mmap/madvise/prctl/... calls, knob files written and restored,
swap devices set up and torn down. This module finds the runner, calls it and returns
its result (the ``RunResult`` schema, backend "kernel").

The runner is found via ``$THPLAB_LIVE_BIN``, else ``<repo>/target/release/thplab-live``,
else ``thplab-live`` on PATH.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from thplab.errors import InputError, LiveError

DEFAULT_TIMEOUT = 1800.0


__all__ = ["LiveError"]  # re-exported: a live run that failed after it started (thplab.errors)


def find_binary() -> str:
    env = os.environ.get("THPLAB_LIVE_BIN")
    if env:
        if not os.access(env, os.X_OK):
            raise InputError(f"THPLAB_LIVE_BIN={env} is not an executable file")
        return env
    repo = Path(__file__).resolve().parents[2]
    cand = repo / "target" / "release" / "thplab-live"
    if cand.is_file() and os.access(cand, os.X_OK):
        return str(cand)
    found = shutil.which("thplab-live")
    if found:
        return found
    raise InputError(
        "the live-kernel runner thplab-live was not found: build it with `make build` "
        f"(expected {cand}), put it on PATH, or set THPLAB_LIVE_BIN"
    )


def _check_workload(workload) -> str:
    from thplab import _native as n

    if isinstance(workload, (str, os.PathLike)) and Path(workload).is_file():
        text = Path(workload).read_text()
    elif isinstance(workload, str):
        text = workload
    elif isinstance(workload, dict):
        text = json.dumps(workload)
    else:
        raise InputError("workload: expected a dict, JSON text or a file path")
    try:
        n.parse_workload_json(text)
    except ValueError as e:
        raise InputError(str(e)) from None
    return text


def _invoke(args: list[str], timeout: float | None) -> subprocess.CompletedProcess:
    """Run the runner; on Ctrl-C let it restore the machine before re-raising."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=None if timeout is None else timeout + 60)
    except KeyboardInterrupt:
        # The runner got the SIGINT too (same process group); make sure, and wait for its restore.
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGINT)
        p.wait()
        raise
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate()
        raise LiveError(f"the live run did not stop at its time limit; it was terminated ({err.strip()})") from None
    return subprocess.CompletedProcess(args, p.returncode, out, err)


def invoke_json(args: list[str], timeout: float | None, out: Path, what: str) -> dict:
    """Run thplab-live and read the JSON it wrote to `out`. Exit status 2 is bad input or
    a refusal (InputError); any other failure is a LiveError naming `what`."""
    r = _invoke(args, timeout)
    if r.returncode == 2:
        raise InputError(_message(r.stderr))
    if r.returncode != 0:
        raise LiveError(f"{what} failed (exit {r.returncode}): {_message(r.stderr)}")
    return json.loads(out.read_text())


def _message(err: str) -> str:
    lines = [ln.removeprefix("thplab-live: ") for ln in err.strip().splitlines() if ln.strip()]
    return "; ".join(lines) or "thplab-live failed without a message"


def _no_huge_page_advice() -> None:
    """This process drives live runs: the model's arrays in it are no longer advised with
    MADV_HUGEPAGE, which would put this process on khugepaged's list for its whole life and
    keep a workload's MADV_HUGEPAGE from waking khugepaged (host_alloc.rs `set_advise`). A
    process that advised before its first live run (a model run of 32 MiB arrays or more)
    is on the list already: `thplab validate` starts with a live run.

    NumPy advises its arrays of 4 MiB or more alike (on Linux, unless NUMPY_MADVISE_HUGEPAGE=0
    at its import), and pyarrow's default pool (mimalloc) its 1 GiB arenas: both off too,
    for a module imported already by its own switch, else by the variable it reads at
    import. seed 003's quick table had put a test session on the list through pyarrow, and
    the khugepaged wake-up test then saw no collapse in 3 s (2026-12-05)."""
    from thplab import _native

    _native.set_huge_page_advice(False)
    if "numpy" in sys.modules:
        import numpy._core.multiarray as np_multiarray

        np_multiarray._set_madvise_hugepage(False)
    else:
        os.environ["NUMPY_MADVISE_HUGEPAGE"] = "0"
    if "pyarrow" in sys.modules:
        import pyarrow

        pyarrow.set_memory_pool(pyarrow.system_memory_pool())
    else:
        os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"


def run_kernel(
    workload,
    machine=None,
    knobs=(),
    timeout: float | None = None,
    *,
    max_mem_share: float | None = None,
    dry_run: bool = False,
) -> dict:
    """Run ``workload`` on the live kernel; returns a dict in the RunResult schema (backend "kernel").

    machine: None (the workload's; only its swap devices are used live), a shorthand string or a dict.
    knobs: (name, value) pairs applied over the workload's knobs.
    timeout: seconds (default 1800); the run is stopped and the machine restored when it expires.
    Raises InputError for bad input and refusals (nothing was changed), LiveError when the run
    failed or was interrupted (everything was restored).
    """
    text = _check_workload(workload)
    binary = find_binary()
    _no_huge_page_advice()
    with tempfile.TemporaryDirectory(prefix="thplab-live-") as d:
        wf = Path(d) / "workload.json"
        wf.write_text(text)
        out = Path(d) / "result.json"
        args = [binary, "run", "--workload", str(wf), "--out", str(out)]
        if machine is not None:
            args += ["--machine", machine if isinstance(machine, str) else json.dumps(machine)]
        for k, v in knobs or ():
            args += ["--knob", f"{k}={v}"]
        t = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        if t <= 0:
            raise InputError("timeout must be positive")
        args += ["--timeout", str(t)]
        if max_mem_share is not None:
            args += ["--max-mem-share", str(max_mem_share)]
        if dry_run:
            args.append("--dry-run")
        return invoke_json(args, t, out, "live run")


KHUGEPAGED = Path("/sys/kernel/mm/transparent_hugepage/khugepaged")


def khugepaged_list_held(timeout: float = 1.0) -> bool | None:
    """Does khugepaged's list of mms hold some live process's mm now? None where the files
    cannot be read or written (not root, no THP).

    An mm joins the list at its first THP-eligible VMA (khugepaged_enter_vma: a
    MADV_HUGEPAGE, or any anonymous VMA while enabled=always) and leaves it only when it
    exits (collect_mm_slot). While the list is not empty khugepaged sleeps out
    scan_sleep_millisecs between passes, and a workload's MADV_HUGEPAGE wakes nothing
    (__khugepaged_enter wakes it only for an empty list): its first collapse then waits for
    the timer, where on an empty list it comes at once.

    Probe: a write of scan_sleep_millisecs (its own value) ends the wait and wakes khugepaged
    (scan_sleep_millisecs_store: khugepaged_sleep_expire = 0); a pass that reaches the
    list's end counts a full scan. The first pass may only collect the slot of an mm that
    exited with khugepaged's cursor on it (__khugepaged_exit leaves that one to the next
    pass), so a second pass decides. An empty list moves nothing: each probe then waits its
    whole ``timeout``. An mm larger than one pass's pages_to_scan takes several passes (each
    a timer apart) to end one, and is not seen."""

    def a_pass_ends() -> bool:
        before = (KHUGEPAGED / "full_scans").read_text()
        knob = KHUGEPAGED / "scan_sleep_millisecs"
        knob.write_text(knob.read_text().strip())
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if (KHUGEPAGED / "full_scans").read_text() != before:
                return True
            time.sleep(0.01)
        return False

    try:
        return a_pass_ends() and a_pass_ends()
    except OSError:
        return None


def state() -> dict:
    """Knob values, /proc/swaps and zram state as the runner sees them (to check nothing changed)."""
    r = subprocess.run([find_binary(), "state"], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def restore() -> str:
    """Undo what an interrupted run left behind (the restore journal)."""
    r = subprocess.run([find_binary(), "restore"], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise LiveError(_message(r.stderr))
    return _message(r.stderr)
