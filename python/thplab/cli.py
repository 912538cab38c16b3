"""The `thplab` command line: run, show, knobs and machine live here; calibrate, validate,
seeds, compare and sweep in modules of their own (DELEGATED), imported only when used.

Exit status: 0 success; 2 bad input (workload, knob, machine, cost profile, arguments),
with `thplab: error: ...` naming the field on stderr and no output file written; 3 a model
invariant broke (a model bug: the message names the invariant and the simulated time, and
gives a one-line command replaying the saved workload); 4 a live-kernel or environment
failure after the run started (the machine was restored); 124 a run exceeded --timeout;
130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from thplab import __version__
from thplab.errors import InputError, InvariantError, LiveError

EXIT_INPUT = 2
EXIT_INVARIANT = 3
EXIT_LIVE = 4
EXIT_TIMEOUT = 124
EXIT_INTERRUPT = 130

# Subcommands provided by modules of their own, imported only when used.
DELEGATED = {
    "seeds": ("thplab.seeds", "run the four seed experiments; report with the published figures beside ours"),
    "sweep": ("thplab.sweep", "run a workload over a grid of knob values (on Ray); table and Parquet file"),
    "compare": ("thplab.compare", "compare saved results side by side, mmtests style (first = baseline)"),
    "calibrate": ("thplab.calibrate", "measure this host's costs and write a cost profile (TOML)"),
    "validate": (
        "thplab.validate",
        "run the validation scenarios on the live kernel and the model, counter by counter",
    ),
    "census": ("thplab.census", "THP on this machine's processes, per process/VMA, and what each policy would change"),
}

DESCRIPTION = """\
thplab: a laboratory for transparent huge pages (THP). It runs a workload (processes that
mmap, write, read, madvise, munmap, sleep and turn knobs) through a model of Linux 6.18
memory management and prints what the kernel itself would show: per-phase times,
/proc/vmstat, /proc/meminfo, /proc/buddyinfo, smaps_rollup, latencies. The same workload
can run on this machine's kernel (--backend kernel, as root) to compare."""

EPILOG = """\
examples:
  thplab run examples/seed000.json                   run a workload, print what the kernel shows
  thplab run W.json --set transparent_hugepage/enabled=always --json out/r.json
  thplab show out/r.json --html out/r.html           a saved result as a web page with plots
  thplab seeds                                       the four seed experiments, report in out/seeds/
  thplab sweep W.json --grid vm.compaction_proactiveness=0,20 --out out/sweep
  thplab knobs enabled                               knobs as sysfs shows them

Run `thplab COMMAND --help` for each command's options, examples and outputs.
The workload language: docs/workload.md.

exit status:
  0    ok
  2    bad input (the message names the field; nothing is written)
  3    a model invariant broke (a model bug: the message names the invariant and the
       simulated time, and gives a command replaying the saved workload)
  4    a live-kernel or environment failure after the run started (knobs restored)
  124  a run exceeded --timeout
  130  interrupted (Ctrl-C)"""

RUN_EPILOG = """\
examples:
  thplab run examples/seed000.json
  thplab run W.json --machine 2x512G,cpus=80 --set transparent_hugepage/enabled=always
  thplab run a.json b.yaml --json out/            one result file per workload in out/
  thplab run W.json --backend kernel              the same workload on this kernel (root)

output: the tables go to the terminal; --json writes the full result (the same schema for
both backends), which `thplab show` and `thplab compare` read."""

SHOW_EPILOG = """\
examples:
  thplab show out/r.json                  print it as `thplab run` did
  thplab show out/r.json --html r.html    one self-contained page: run summary, phases,
                                          vmstat deltas, plots of the sampled series and
                                          latencies, meminfo, buddyinfo"""

JSON_HELP = """write each result as JSON, atomically (temp file + rename). OUT is a file (one workload
only), a directory (existing, or ending in '/': created), which receives STEM.json for
each workload file STEM.json/.yaml, or a template with {name} (the workload's name), {stem}
(its file's name without suffix) or {index} (its position, from 0), e.g. out/{name}.json.
Nothing is written when any input is bad: every workload is checked before the first runs."""


def _err(msg: str) -> None:
    sys.stderr.write(f"thplab: error: {msg}\n")
    sys.stderr.flush()


# ---------------------------------------------------------------------------------------------
# run / show


def _json_targets(out: str, workloads: list[tuple[str, dict[str, Any]]]) -> list[Path]:
    """Where each result goes (see JSON_HELP); checked before anything runs."""
    templ = any(t in out for t in ("{name}", "{stem}", "{index}"))
    is_dir = out.endswith(("/", os.sep)) or Path(out).is_dir()
    if len(workloads) > 1 and not (templ or is_dir):
        raise InputError(
            f"--json {out}: with {len(workloads)} workloads, give a directory "
            f"(ending in '/') or a template with {{name}}, {{stem}} or {{index}}"
        )
    targets = []
    for i, (src, wl) in enumerate(workloads):
        name = wl.get("name") or "workload"
        stem = Path(src).stem if src != "-" else name
        if templ:
            try:
                p = Path(out.format(name=name, stem=stem, index=i))
            except (KeyError, IndexError, ValueError) as e:
                raise InputError(f"--json {out}: bad template ({e}); use {{name}}, {{stem}} or {{index}}") from None
        elif is_dir:
            p = Path(out) / f"{stem}.json"
        else:
            p = Path(out)
        targets.append(p)
    seen: dict[Path, int] = {}
    for i, p in enumerate(targets):
        if p.resolve() in seen:
            raise InputError(
                f"--json {out}: workloads {seen[p.resolve()]} and {i} would both be written "
                f"to {p}; use {{stem}} or {{index}} in the template"
            )
        seen[p.resolve()] = i
        parent = p.parent
        if is_dir and not templ and not parent.exists():
            continue  # created below
        if not parent.is_dir():
            raise InputError(f"--json {out}: directory {parent} does not exist")
    return targets


def _knob_defaults() -> dict[str, str]:
    from thplab.api import knob_registry

    return {k["name"]: k["default"] for k in knob_registry()}


def cmd_run(args: argparse.Namespace) -> int:
    from thplab import api
    from thplab.textout import make_console, render_result

    knobs = api.parse_knobs(args.set)
    machine = args.machine
    if machine is not None:
        api.parse_machine(machine)
    costs = api.load_costs(args.costs) if args.costs else None
    if args.seed is not None and args.seed < 0:
        raise InputError(f"--seed {args.seed}: expected a non-negative integer")
    if args.timeout is not None and not args.timeout > 0:
        raise InputError(f"--timeout {args.timeout}: expected a positive number of seconds")
    workloads = []
    for w in args.workloads:
        if w == "-":
            wl = api.load_workload(api.workload_text_from_bytes(sys.stdin.buffer.read(), "<stdin>"))
        else:
            wl = api.load_workload(Path(w))
        if args.trace is not None:
            trace = [t.strip() for t in args.trace.split(",") if t.strip()]
            try:
                wl = api.load_workload({**wl, "record": {**(wl.get("record") or {}), "trace": trace}})
            except InputError as e:
                raise InputError(str(e).replace("workload.record.trace", "--trace")) from None
        workloads.append((w, wl))
    if args.from_census:
        from thplab import census

        workloads = census.from_census_workloads(args.from_census, workloads)
    elif not workloads:
        _err("run: give a WORKLOAD file (or --from-census CENSUS.json)")
        raise SystemExit(EXIT_INPUT)  # as argparse does for a missing positional
    targets = _json_targets(args.json, workloads) if args.json else [None] * len(workloads)
    if args.json and (args.json.endswith(("/", os.sep))):
        Path(args.json).mkdir(parents=True, exist_ok=True)

    console = make_console()
    defaults = _knob_defaults()
    for (src, wl), target in zip(workloads, targets, strict=True):
        try:
            res = api.run(
                wl,
                machine=machine,
                knobs=knobs,
                costs=costs,
                seed=args.seed,
                backend=args.backend,
                check=args.check,
                timeout=args.timeout,
            )
        except InputError as e:
            raise InputError(f"{src}: {e}" if src != "-" and not str(e).startswith(src) else str(e)) from None
        except api.TimeoutExpired as e:
            raise api.TimeoutExpired(f"{src}: {e}") from None
        if not args.quiet:
            render_result(res, console, full=args.full, defaults=defaults)
        if target is not None:
            res.save(target)
            if not args.quiet:
                console.print(f"wrote {target}", style="dim", markup=False)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from thplab.result import Result
    from thplab.textout import make_console, render_result

    if args.html and len(args.results) != 1:
        raise InputError(f"--html {args.html}: give exactly one RESULT.json (got {len(args.results)})")
    results = [Result.load(p) for p in args.results]
    if args.html:
        from thplab import showhtml
        from thplab.atomic import write_atomic

        out = Path(args.html)
        if not out.parent.is_dir():
            raise InputError(f"--html {out}: directory {out.parent} does not exist")
        page = showhtml.render(results[0], source=args.results[0], defaults=_knob_defaults())
        write_atomic(out, page)
        print(f"wrote {out}")
        return 0
    console = make_console()
    defaults = _knob_defaults()
    for r in results:
        render_result(r, console, full=args.full, defaults=defaults)
    return 0


# ---------------------------------------------------------------------------------------------
# knobs / machine


def cmd_knobs(args: argparse.Namespace) -> int:
    from thplab import api
    from thplab.textout import knob_accepted, knob_show, make_console, render_knobs

    reg = api.knob_registry()
    current = {k["name"]: k["default"] for k in reg}
    changed = set()
    for name, value in api.parse_knobs(args.set):
        current[name] = value
        changed.add(name)
    if args.pattern:
        reg = [k for k in reg if args.pattern.lower() in k["name"].lower()]
        if not reg:
            raise InputError(f"no knob matches `{args.pattern}`")
    if args.json:
        out = [
            {**k, "value": current[k["name"]], "shown": knob_show(k, current[k["name"]]), "accepted": knob_accepted(k)}
            for k in reg
        ]
        sys.stdout.write(json.dumps(out, indent=2) + "\n")
        return 0
    render_knobs(reg, current, make_console(), changed=changed)
    return 0


def cmd_machine(args: argparse.Namespace) -> int:
    from thplab import api
    from thplab.textout import make_console, render_machine

    m = api.parse_machine(args.spec)
    if args.json:
        sys.stdout.write(json.dumps(m, indent=2) + "\n")
        return 0
    render_machine(m, make_console())
    return 0


# ---------------------------------------------------------------------------------------------
# the parser


def _add_delegated(sub: argparse._SubParsersAction, name: str, load: bool) -> str | None:
    """Add subcommand `name`, provided by module DELEGATED[name]: add_arguments(parser) and
    cmd(args). The module is imported only when `name` is the command being run; returns
    why it is unavailable, or None."""
    module, help_ = DELEGATED[name]
    if load:
        try:
            mod = importlib.import_module(module)
            add, cmd = mod.add_arguments, mod.cmd
        except ImportError as e:
            missing = getattr(e, "name", None) == module
            return f"module {module} is not installed" if missing else f"cannot import {module}: {e}"
        except AttributeError:
            return f"module {module} has no add_arguments()/cmd()"
        p = sub.add_parser(
            name,
            help=help_,
            description=getattr(mod, "HELP_DESCRIPTION", None) or help_,
            epilog=getattr(mod, "HELP_EPILOG", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        add(p)
        p.set_defaults(func=cmd)
        return None
    sub.add_parser(name, help=help_)
    return None


def _subcommand_of(argv: Sequence[str]) -> str | None:
    for a in argv:
        if not a.startswith("-"):
            return a
    return None


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(prog="thplab", description=DESCRIPTION, epilog=EPILOG, formatter_class=raw)
    parser.add_argument("--version", action="version", version=f"thplab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser(
        "run",
        help="run workloads in the model (or the live kernel) and print what the kernel shows",
        description="Run each workload (a JSON or YAML file, see docs/workload.md) and print per-phase "
        "times, /proc/vmstat deltas, /proc/meminfo, /proc/buddyinfo, smaps_rollup, latencies and op errors.",
        epilog=RUN_EPILOG,
        formatter_class=raw,
    )
    p.add_argument("workloads", nargs="*", metavar="WORKLOAD", help="workload file (.json, .yaml, .yml) or - for stdin")
    p.add_argument(
        "--from-census",
        metavar="CENSUS.json",
        help="start from the memory layout of a `thplab census` (its processes replayed), then run WORKLOAD",
    )
    p.add_argument(
        "--machine",
        "-m",
        metavar="M",
        help="machine: shorthand (24G, 2x512G,cpus=80,swap=zram:8G), JSON, or a .json/.yaml file "
        "(default: the workload's, else 24G)",
    )
    p.add_argument(
        "--set",
        "-s",
        action="append",
        default=[],
        metavar="KNOB=VALUE",
        help="set a knob (repeatable), e.g. transparent_hugepage/enabled=always",
    )
    p.add_argument("--costs", metavar="FILE", help="cost profile (TOML), e.g. from `thplab calibrate`")
    p.add_argument("--seed", type=int, metavar="N", help="override the workload's seed")
    p.add_argument("--check", action="store_true", help="run the model's invariant checker (slower)")
    p.add_argument(
        "--trace",
        metavar="EV[,EV]",
        help="export these tracepoints into the result's trace (model backend), instead of the "
        "workload's record.trace: NAME (e.g. mm_compaction_end), SYSTEM:NAME, SYSTEM "
        "(compaction, vmscan, huge_memory, kmem, migrate, oom, thplab) or all",
    )
    p.add_argument(
        "--backend",
        choices=("model", "kernel"),
        default="model",
        help="model (default) or kernel (the live kernel; needs root)",
    )
    p.add_argument("--timeout", type=float, metavar="S", help="give up on a run after S seconds (exit 124)")
    p.add_argument("--json", metavar="OUT", help=JSON_HELP)
    p.add_argument("--full", action="store_true", help="show every meminfo, smaps_rollup and percentile field")
    p.add_argument("--quiet", "-q", action="store_true", help="print nothing but errors")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "show",
        help="show saved results (from run --json) in the terminal or as an HTML page",
        description="Print saved results (written by `thplab run --json`) as `thplab run` does, "
        "or render one as a self-contained HTML page.",
        epilog=SHOW_EPILOG,
        formatter_class=raw,
    )
    p.add_argument("results", nargs="+", metavar="RESULT.json")
    p.add_argument("--full", action="store_true", help="show every meminfo, smaps_rollup and percentile field")
    p.add_argument("--html", metavar="OUT.html", help="write one result as an HTML page with plots (atomically)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser(
        "knobs",
        help="list every knob as sysfs shows it",
        description="Every knob the model honours: its value as sysfs shows it "
        "(`always [madvise] never`), default, accepted values, kind and meaning.",
        epilog="examples:\n  thplab knobs\n  thplab knobs khugepaged\n"
        "  thplab knobs enabled --set enabled=always      the value after an assignment\n"
        "  thplab knobs --json                            the registry, for scripts",
        formatter_class=raw,
    )
    p.add_argument("pattern", nargs="?", metavar="PATTERN", help="only knobs whose name contains PATTERN")
    p.add_argument(
        "--set",
        "-s",
        action="append",
        default=[],
        metavar="KNOB=VALUE",
        help="show the values as they would be after these assignments",
    )
    p.add_argument("--json", action="store_true", help="print the registry as JSON")
    p.set_defaults(func=cmd_knobs)

    p = sub.add_parser(
        "machine",
        help="parse a machine description and print it",
        description="Check a machine description (for --machine) and print its full form: nodes, "
        "memory, CPUs, swap devices, TLB.",
        epilog="examples:\n  thplab machine 24G\n  thplab machine 2x512G,cpus=80,swap=zram:8G\n"
        "  thplab machine 1T --json",
        formatter_class=raw,
    )
    p.add_argument("spec", metavar="SPEC", help="shorthand (24G, 2x512G,cpus=80,swap=zram:8G), JSON, or a file")
    p.add_argument("--json", action="store_true", help="print the full form as JSON")
    p.set_defaults(func=cmd_machine)

    wanted = _subcommand_of(argv)
    parser.set_defaults(unavailable=None)
    for name in DELEGATED:
        why = _add_delegated(sub, name, load=(wanted == name))
        if why:
            parser.set_defaults(unavailable=f"`thplab {name}` is not available in this build: {why}")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(argv)
        unavailable = parser.get_default("unavailable")
        if unavailable:
            _err(unavailable)
            return EXIT_INPUT
        args = parser.parse_args(argv)
        rc = args.func(args)
        return int(rc) if isinstance(rc, int) else 0
    except InputError as e:
        _err(str(e))
        return EXIT_INPUT
    except InvariantError as e:
        _err(str(e))
        return _exit_now(EXIT_INVARIANT)
    except LiveError as e:
        _err(str(e))
        return _exit_now(EXIT_LIVE)
    except KeyboardInterrupt:
        return _interrupted()
    except BrokenPipeError:
        # The reader went away (thplab ... | head): stop quietly.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except Exception as e:
        from thplab.api import TimeoutExpired

        if isinstance(e, TimeoutExpired):
            _err(str(e))
            return _exit_now(EXIT_TIMEOUT)
        raise


def _exit_now(code: int) -> int:
    """Return `code`, or leave at once when a model run is still busy in a worker thread
    (it cannot be stopped; waiting for it would defeat Ctrl-C and --timeout)."""
    from thplab.api import run_in_flight

    if run_in_flight():
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()  # the reader may be gone (EPIPE) or stdout closed
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.flush()
        os._exit(code)
    return code


def _interrupted() -> int:
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write("thplab: interrupted\n")
    return _exit_now(EXIT_INTERRUPT)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
