"""Replacing a file atomically: readers see the old file or the whole new one, never a part.

Plain Python, no TensorFlow: the command (`nmt translate-file`, `nmt keys`) and
the server (the usage of API keys, `serving.quotas`) both write through it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomically(path: Path, data: bytes) -> None:
    """Writes `data` to a temporary file beside `path`, syncs it and renames it to `path`.

    The new file keeps the mode of the file it replaces (else the umask's default).
    """
    path = Path(path)
    mode = path.stat().st_mode & 0o777 if path.exists() else _default_mode()
    descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp",
                                             dir=path.parent)
    try:
        with os.fdopen(descriptor, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)  # makes the rename itself durable
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
