"""thplab: a fast, Linux-faithful laboratory for transparent huge pages.

import thplab
r = thplab.run("examples/seed000.json", machine="24G,swap=zram:10G",
               knobs={"transparent_hugepage/enabled": "always"})
r.phases, r.vmstat_delta, r.meminfo, r.smaps, r.latency, r.series
"""

from thplab._native import version as _version

__version__ = _version()

from thplab.api import TimeoutExpired, knob_registry, load_workload, run
from thplab.builder import Workload
from thplab.errors import InputError
from thplab.result import Result

__all__ = ["InputError", "Result", "TimeoutExpired", "Workload", "__version__", "knob_registry", "load_workload", "run"]
