"""The errors thplab raises, each with the exit status the command line gives it
(`thplab --help` lists them; the Rust side's are thplab_workload::error)."""


class ThplabError(Exception):
    """Base of thplab's errors."""

    exit_status = 1


class InputError(ThplabError):
    """Bad input (workload, machine, knob, cost profile) or a refused run: exit status 2.
    The message names the field."""

    exit_status = 2


class InvariantError(ThplabError):
    """The model's invariant checker found impossible state (a model bug): exit status 3.
    `invariant` names it, `sim_time_ns` says when, and `repro` is the command that
    replays the run from the workload saved beside it (machine, knobs and seed included)."""

    exit_status = 3

    def __init__(self, message: str, invariant: str = "", sim_time_ns: int = 0, repro: str | None = None):
        super().__init__(message)
        self.invariant = invariant
        self.sim_time_ns = sim_time_ns
        self.repro = repro


class LiveError(ThplabError):
    """A live-kernel run that failed or was interrupted after it started (the machine was
    restored), or its environment failed: exit status 4."""

    exit_status = 4
