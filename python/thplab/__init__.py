"""thplab: a fast, Linux-faithful laboratory for transparent huge pages."""
from thplab._native import version as _version

__version__ = _version()
