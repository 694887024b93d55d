"""Where things are on disk: the shared data directory and an export's version directories.

No TensorFlow import, so the server's model watcher, the benchmarks and the
tests can use it before (or without) loading a model.
"""

from __future__ import annotations

import os
from pathlib import Path

# The environment variable naming the data directory (the Anki fra-eng corpus in
# `anki-fra-eng/`, the Alibi gold alignments in `alibi-enfr-alignments/`).
DATA_DIR_ENV = "NMT_DATA_DIR"
_REPO_ROOT = Path(__file__).resolve().parent.parent
# A SavedModel directory holds this file (TensorFlow Serving layout `<base>/<version>/`).
SAVED_MODEL_FILE = "saved_model.pb"


def data_dir() -> Path:
    """The data directory: `$NMT_DATA_DIR`, else `shared/data` beside the checkout.

    The default is `<repo>/../shared/data`. The directory may not exist; callers
    that need it check and say so.
    """
    value = os.environ.get(DATA_DIR_ENV, "")
    return Path(value).expanduser() if value else _REPO_ROOT.parent / "shared" / "data"


def version_dirs(base: str | os.PathLike) -> dict[int, Path]:
    """The complete-looking version directories under `base`: `{version: path}`.

    A version directory is named by a number and holds `saved_model.pb` (one
    still being written does not yet). A missing `base` has none.
    """
    base = Path(base)
    if not base.is_dir():
        return {}
    return {int(p.name): p for p in base.iterdir()
            if p.name.isdigit() and (p / SAVED_MODEL_FILE).exists()}


def resolve_version_dir(path: str | os.PathLike) -> Path:
    """A version directory itself, or the highest `<n>/` inside a base directory.

    Raises:
        FileNotFoundError: `path` is neither (the message names it).
    """
    path = Path(path)
    if (path / SAVED_MODEL_FILE).exists():
        return path
    versions = version_dirs(path)
    if not versions:
        raise FileNotFoundError(
            f"No SavedModel at {path}: expected {path}/{SAVED_MODEL_FILE} or numbered version "
            f"directories like {path}/1/{SAVED_MODEL_FILE}"
        )
    return versions[max(versions)]
