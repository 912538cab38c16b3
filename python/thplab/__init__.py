"""thplab: a fast, Linux-faithful laboratory for transparent huge pages.

    import thplab
    r = thplab.run("examples/seed000.json", machine="24G,swap=zram:10G",
                   knobs={"transparent_hugepage/enabled": "always"})
    r.phases, r.vmstat_delta, r.meminfo, r.smaps, r.latency, r.series
"""
from thplab._native import version as _version

__version__ = _version()

from thplab.errors import InputError  # noqa: E402
from thplab.result import Result  # noqa: E402
from thplab.api import TimeoutExpired, knob_registry, load_workload, run  # noqa: E402
from thplab.builder import Workload  # noqa: E402

__all__ = ["__version__", "run", "load_workload", "knob_registry", "Result", "Workload", "InputError",
           "TimeoutExpired"]
