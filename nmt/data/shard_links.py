"""Word links for the shards: guided alignment and the alignment head without TensorFlow.

`nmt align-corpus` writes one Pharaoh line of piece links per pair of the
training TSV (`training.corpus_alignment`). `attach_links` gives each stored
row of a shard split its line's links, checked against the row's pieces;
`shards.join_examples` then shifts them into joined examples, and
`shards.gold_alignment` makes a batch's 0/1 matrices, the `(batch, T, S)` gold of
`nmt.alignment.guided_alignment` (row j = target piece j, column i = source
piece i): what `nmt train`'s pipeline (`nmt.data.datasets`) gives for the same
pairs (tests/nmt/data/test_shard_links.py).

    split = attach_links(load_split(shards_dir), "alignments.txt", pair_count)

The copies of a pair that a recipe's weight writes share one stored row, so
they take the first copy's links. NumPy and the standard library only.
"""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np

from nmt.data.shards import ShardSplit


def read_links(path: str | Path) -> tuple[np.ndarray, np.ndarray]:
    """Reads a plain Pharaoh file (`i-j i-j ...`, a line per pair, empty lines too).

    Returns:
        `(values, splits)`: int32 `(links, 2)` as `(i, j)`, and int64
        `(lines + 1,)` with line k's links at `values[splits[k]:splits[k + 1]]`.

    Raises:
        ValueError: a line holds something other than `i-j` links (naming it).
    """
    text = Path(path).read_text(encoding="utf-8")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    counts = np.fromiter((line.count("-") for line in lines), np.int64, len(lines))
    if not counts.sum() and not text.strip():  # no links at all (NumPy refuses no numbers)
        return np.zeros((0, 2), np.int32), np.zeros(len(lines) + 1, np.int64)
    try:  # parsed in C: str.split would make a Python string of every number (GBs)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # malformed text warns in older NumPy
            values = np.fromstring(text.replace("-", " "), dtype=np.int64, sep=" ")
    except (ValueError, DeprecationWarning):
        values = None
    if values is None or len(values) != 2 * counts.sum() or (values < 0).any():
        for number, line in enumerate(lines, 1):
            for link in line.split():
                i, dash, j = link.partition("-")
                if not (dash and i.isdigit() and j.isdigit()):
                    raise ValueError(f"{path}:{number}: {link!r} is not an i-j link. Training "
                                     "links are plain Pharaoh (`nmt align-corpus` writes them)")
        raise ValueError(f"{path}: not plain Pharaoh i-j links")
    return (values.reshape(-1, 2).astype(np.int32),
            np.concatenate([[0], np.cumsum(counts)]))


def attach_links(split: ShardSplit, path: str | Path, pair_count: int) -> ShardSplit:
    """The split with each stored row's word links, from a Pharaoh file of the TSV's pairs.

    Args:
        split: a split as `load_split` returns it (before `join_examples`).
        path: one Pharaoh line of piece links per pair of the TSV the shards
            were written from (blank lines skipped), `nmt align-corpus`'s file.
        pair_count: the TSV's pairs (the manifest's `pairs_read`).

    Raises:
        ValueError: the file's line count is not `pair_count`, the split is
            already joined, or a link falls outside its pair's pieces.
    """
    if (split.pair_index < 0).any():
        raise ValueError("attach_links takes a split before join_examples: joined examples "
                         "take their members' links there")
    values, splits = read_links(path)
    if len(splits) - 1 != pair_count:
        raise ValueError(f"{path} has {len(splits) - 1} lines but the shards were written from "
                         f"{pair_count} pairs: the links must have one Pharaoh line per pair of "
                         "the same TSV, in order (`nmt align-corpus` on that corpus)")
    rows = len(split.source_splits) - 1
    first = np.searchsorted(split.example_rows, np.arange(rows))  # a row's first example
    lines = split.pair_index[first]  # (rows,)
    counts = splits[lines + 1] - splits[lines]
    starts = np.repeat(splits[lines] - (np.cumsum(counts) - counts), counts)
    row_values = values[np.arange(int(counts.sum()), dtype=np.int64) + starts]
    row_of_link = np.repeat(np.arange(rows), counts)
    outside = ((row_values[:, 0] >= np.diff(split.source_splits)[row_of_link])
               | (row_values[:, 1] >= np.diff(split.target_splits)[row_of_link]))
    if outside.any():
        k = int(np.flatnonzero(outside)[0])
        row = row_of_link[k]
        raise ValueError(
            f"{path}:{lines[row] + 1}: link {row_values[k, 0]}-{row_values[k, 1]} is outside the "
            f"pair, which has {np.diff(split.source_splits)[row]} source and "
            f"{np.diff(split.target_splits)[row]} target pieces. The links must index the "
            "shards' SentencePiece pieces (`nmt align-corpus` with the same tokenizer)")
    return dataclasses.replace(split, link_values=row_values,
                               link_splits=np.concatenate([[0], np.cumsum(counts)]))
