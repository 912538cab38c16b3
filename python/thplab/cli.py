"""The `thplab` command line.

    thplab run WORKLOAD... [--machine M] [--set KNOB=VALUE ...] [--costs FILE] [--seed N]
                           [--check] [--trace EV[,EV]] [--backend model|kernel] [--timeout S] [--json OUT]
                           [--full] [-q]
    thplab show RESULT.json...      print saved results as `run` does
    thplab knobs [PATTERN] [--set KNOB=VALUE ...] [--json]
    thplab machine SPEC [--json]
    thplab calibrate ...            (thplab.calibrate)
    thplab validate ...             (thplab.validate)

Exit status: 0 success; 2 bad input (workload, knob, machine, cost profile, arguments),
with `thplab: error: ...` naming the field on stderr and no output file written; 3 a model
invariant broke (a model bug: the message names the invariant and the simulated time, and
gives a one-line command replaying the saved workload); 4 a live-kernel or environment
failure after the run started (the machine was restored); 124 a run exceeded --timeout;
130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import threading
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
    "calibrate": ("thplab.calibrate", "measure this host's costs and write a cost profile (TOML)"),
    "validate": ("thplab.validate", "compare the model against the live kernel"),
    "seeds": ("thplab.seeds", "run the four seed experiments and print our figures beside the published ones"),
    "compare": ("thplab.compare", "compare saved results, mmtests style (first = baseline)"),
}

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
    targets = _json_targets(args.json, workloads) if args.json else [None] * len(workloads)
    if args.json and (args.json.endswith(("/", os.sep))):
        Path(args.json).mkdir(parents=True, exist_ok=True)

    console = make_console()
    defaults = _knob_defaults()
    for (src, wl), target in zip(workloads, targets):
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

    results = [Result.load(p) for p in args.results]
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
        p = sub.add_parser(name, help=help_, description=(mod.__doc__ or help_).strip())
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
    parser = argparse.ArgumentParser(
        prog="thplab",
        description="A Linux-faithful laboratory for transparent huge pages.",
        epilog="Exit status: 0 ok; 2 bad input (the message names the field); 3 a model invariant broke "
        "(a model bug: the message gives a command replaying the saved workload); 4 a live-kernel or "
        "environment failure; 124 timeout; 130 interrupted.",
    )
    parser.add_argument("--version", action="version", version=f"thplab {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser(
        "run",
        help="run workloads and print what the kernel would show",
        description="Run each workload (JSON or YAML) and print per-phase times, vmstat deltas, "
        "meminfo, buddyinfo, smaps_rollup, latency and op errors.",
    )
    p.add_argument("workloads", nargs="+", metavar="WORKLOAD", help="workload file (.json, .yaml, .yml) or - for stdin")
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

    p = sub.add_parser("show", help="print saved results (from run --json) as `run` does")
    p.add_argument("results", nargs="+", metavar="RESULT.json")
    p.add_argument("--full", action="store_true", help="show every field")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser(
        "knobs",
        help="list every knob as sysfs shows it",
        description="Every knob the model honours: its value as sysfs shows it "
        "(`always [madvise] never`), default, accepted values, kind and meaning.",
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

    p = sub.add_parser("machine", help="parse a machine description and print it")
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
    if any(t.name == "thplab-run" and t.is_alive() for t in threading.enumerate()):
        try:
            sys.stdout.flush()
        except Exception:
            pass
        sys.stderr.flush()
        os._exit(code)
    return code


def _interrupted() -> int:
    try:
        sys.stderr.write("thplab: interrupted\n")
    except Exception:
        pass
    return _exit_now(EXIT_INTERRUPT)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
