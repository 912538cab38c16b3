"""Errors the command line turns into exit status 2 with a clear message."""


class InputError(Exception):
    """Bad input (workload, machine, knob, cost profile) or a refused run: exit status 2."""
