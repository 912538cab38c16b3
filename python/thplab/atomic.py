"""The one way thplab writes an output file: atomically."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["write_atomic"]


def write_atomic(path: str | os.PathLike, data: str | bytes) -> Path:
    """Write `data` (text is UTF-8 encoded) to `path` atomically: a temporary file in the
    same directory, fsync, then rename over the target. On any failure (including Ctrl-C)
    the temporary file is removed and `path` is left as it was, absent or with its old
    contents. Returns the path."""
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path
