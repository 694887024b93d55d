"""Model weights as NumPy files: averaged checkpoints, and weights cut into parts.

A machine that lends an accelerator may give back only files of a bounded size
(a Colab download, a job's artifacts); `save_parts` writes the weights as
`.npz` parts under that size, each array named by its index and Keras path, and
`load_parts` puts them back into a model of the same architecture on any
backend. NumPy and Keras only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import keras
import numpy as np

PARTS_INDEX = "weights.json"


def _plain(path: str) -> str:
    """A weight's path without the numbers Keras appends to repeated layer names
    (`seq2_seq_3/.../forward_lstm_6/...` -> `seq2_seq/.../forward_lstm/...`)."""
    return "/".join(re.sub(r"_\d+$", "", part) for part in path.split("/"))


def average_checkpoints(model: keras.Model, paths: Sequence[str | Path]) -> None:
    """Sets `model`'s weights to the mean of the `.weights.h5` files at `paths`
    (accumulated in float64)."""
    if not paths:
        raise ValueError("average_checkpoints needs at least one checkpoint. Received: []")
    total = None
    for path in paths:
        model.load_weights(path)
        values = [np.asarray(keras.ops.convert_to_numpy(w), np.float64) for w in model.weights]
        total = values if total is None else [t + v for t, v in zip(total, values, strict=True)]
    for weight, value in zip(model.weights, total, strict=True):
        weight.assign((value / len(paths)).astype(keras.backend.standardize_dtype(weight.dtype)))


def save_parts(model: keras.Model, directory: str | Path, max_bytes: int = 15 * 2**20,
               metadata: dict | None = None) -> list[Path]:
    """Writes `model.weights` as `weights-<k>.npz` files of at most `max_bytes` each
    (one array larger than that gets a file of its own) and `weights.json`.

    Returns:
        The files written, the index last.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    parts: list[dict[str, np.ndarray]] = [{}]
    size = 0
    for index, weight in enumerate(model.weights):
        value = keras.ops.convert_to_numpy(weight)
        if parts[-1] and size + value.nbytes > max_bytes:
            parts.append({})
            size = 0
        parts[-1][f"{index:04d}"] = value
        size += value.nbytes
    written = []
    for k, arrays in enumerate(parts):
        path = directory / f"weights-{k}.npz"
        np.savez(path, **arrays)
        written.append(path)
    index_path = directory / PARTS_INDEX
    index_path.write_text(json.dumps({
        "parts": [p.name for p in written],
        "paths": [w.path for w in model.weights],
        **(metadata or {}),
    }, indent=2) + "\n")
    return [*written, index_path]


def load_parts(model: keras.Model, directory: str | Path, new: Sequence = ()) -> dict:
    """Loads weights written by `save_parts` into `model` (built, same architecture).

    Args:
        new: weights of `model` the stored ones may lack (e.g. an alignment head
            added to a trained model): those absent keep their values.

    Returns:
        The index's metadata.

    Raises:
        ValueError: the weights do not match the model's, by count, path or shape.
    """
    directory = Path(directory)
    index = json.loads((directory / PARTS_INDEX).read_text())
    stored = [_plain(p) for p in index["paths"]]
    new_ids = {id(w) for w in new}
    # Stored weight k goes to the model's next weight of its path; only `new` ones
    # may be passed over.
    targets, k, matched = [], 0, True
    for weight in model.weights:
        if k < len(stored) and stored[k] == _plain(weight.path):
            targets.append((k, weight))
            k += 1
        elif id(weight) not in new_ids:
            matched = False
            break
    if not matched or k != len(stored):
        differing = sorted(set(stored) ^ {_plain(w.path) for w in model.weights})[:5]
        raise ValueError(f"{directory} holds the weights of another architecture "
                         f"({len(stored)} weights, model: {len(model.weights)}; differing: "
                         f"{differing}). Build the model from the run's config.yaml")
    values: dict[int, np.ndarray] = {}
    for name in index["parts"]:
        with np.load(directory / name) as arrays:
            values.update({int(key): arrays[key] for key in arrays.files})
    for k, weight in targets:
        if tuple(values[k].shape) != tuple(weight.shape):
            raise ValueError(f"{weight.path}: stored shape {values[k].shape}, model shape "
                             f"{tuple(weight.shape)}")
        weight.assign(values[k])
    return {k: v for k, v in index.items() if k not in ("parts", "paths")}
