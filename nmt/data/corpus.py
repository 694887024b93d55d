"""Reading and cleaning a parallel corpus: `read_pairs` → `clean_pairs`.

Text files are UTF-8 (a byte-order mark is dropped), optionally
gzip-compressed, and split on "\\n" only, so a U+2028 inside a sentence
stays in it. No TensorFlow import: the evaluation readers and the command
line read files with `read_lines` before any model is loaded.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

Pair = tuple[str, str]


# --------------------------------------------------------------------------- reading


def _open_text(path: str | Path) -> io.TextIOBase:
    """Opens a UTF-8 text file, gzip-compressed when its name ends in `.gz`."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="\n")
    return open(path, encoding="utf-8-sig", newline="\n")


def iter_pairs(path: str | Path) -> Iterator[tuple[int, str, str, str]]:
    """Streams `English<TAB>French[<TAB>origin]` lines without holding the file.

    Blank lines are skipped; columns after the third are ignored.

    Args:
        path: a UTF-8 TSV file, optionally `.gz`.

    Yields:
        `(line_number, english, french, origin)`, each side stripped of
        surrounding whitespace; `origin` is "" when the line has no third column.

    Raises:
        ValueError: a line has fewer than two columns (its number and text).
    """
    with _open_text(path) as lines:
        for number, line in enumerate(lines, start=1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            columns = line.split("\t")
            if len(columns) < 2:
                raise ValueError(
                    f"{path}:{number}: expected 'English<TAB>French'. Received: {line!r}"
                )
            origin = columns[2].strip() if len(columns) > 2 else ""
            yield number, columns[0].strip(), columns[1].strip(), origin


def read_pairs(path: str | Path) -> list[Pair]:
    """Reads `English<TAB>French` lines.

    Blank lines are skipped and columns after the second (the attribution
    column of the raw Anki file) are ignored.

    Args:
        path: a UTF-8 TSV file, optionally `.gz`.

    Returns:
        `(english, french)` pairs in file order, each side stripped of
        surrounding whitespace.
    """
    return [(english, french) for _, english, french, _ in iter_pairs(path)]


def read_lines(path: str | Path) -> list[str]:
    """Reads one sentence a line (UTF-8, optionally `.gz`).

    Blank lines are kept (as ""), so that line k of an output written for
    these sentences is the translation of line k.
    """
    with _open_text(path) as lines:
        return [line.rstrip("\r\n") for line in lines]


# --------------------------------------------------------------------------- cleaning


@dataclasses.dataclass(frozen=True)
class CleaningConfig:
    """What `clean_pairs` keeps. Words are whitespace-separated.

    Attributes:
        max_words: longest side allowed, in words.
        max_ratio: largest allowed ratio longer/shorter side in words; only
            applied when both sides have more than 3 words (short pairs such
            as "Go." / "Va-t'en !" vary too much to judge).
        min_words: shortest side allowed, in words.
        dedupe: drop exact repeats of a pair (after whitespace collapsing).
    """

    max_words: int = 50
    max_ratio: float = 3.0
    min_words: int = 1
    dedupe: bool = True

    def __post_init__(self) -> None:
        if self.min_words < 1:
            raise ValueError(
                f"min_words must be at least 1. Received: min_words={self.min_words!r}"
            )
        if self.max_words < self.min_words:
            raise ValueError(
                "max_words must be at least min_words. Received: "
                f"max_words={self.max_words!r}, min_words={self.min_words!r}"
            )
        if self.max_ratio < 1:
            raise ValueError(
                f"max_ratio must be at least 1. Received: max_ratio={self.max_ratio!r}"
            )


@dataclasses.dataclass(frozen=True)
class CleaningStats:
    """How many pairs `clean_pairs` kept, and why it dropped the others.

    Each dropped pair is counted once, under the first rule it broke, in the
    order empty, too_long, ratio, duplicates.
    """

    kept: int
    too_long: int
    ratio: int
    empty: int
    duplicates: int

    @property
    def total(self) -> int:
        return self.kept + self.too_long + self.ratio + self.empty + self.duplicates


def clean_pairs(
    pairs: Iterable[Pair], config: CleaningConfig = CleaningConfig()
) -> tuple[list[Pair], CleaningStats]:
    """Collapses whitespace and drops empty, over-long, unbalanced and repeated pairs.

    Args:
        pairs: `(english, french)` pairs.
        config: the thresholds.

    Returns:
        `(kept_pairs, stats)`; kept pairs are in input order, with runs of
        whitespace (including non-breaking spaces) collapsed to one space.
    """
    kept, _, stats = clean_pairs_with_indices(pairs, config)
    return kept, stats


def clean_pairs_with_indices(
    pairs: Iterable[Pair], config: CleaningConfig = CleaningConfig()
) -> tuple[list[Pair], np.ndarray, CleaningStats]:
    """`clean_pairs`, also returning the input index of every kept pair.

    Returns:
        `(kept_pairs, indices, stats)`: `indices` is int64 `(len(kept_pairs),)`,
        so that data given line by line for the input pairs (alignments)
        can follow the pairs that were kept.
    """
    counts = dict.fromkeys(("kept", "too_long", "ratio", "empty", "duplicates"), 0)
    seen: set[Pair] = set()
    kept: list[Pair] = []
    indices: list[int] = []
    for index, (source, target) in enumerate(pairs):
        source_words, target_words = source.split(), target.split()
        pair = (" ".join(source_words), " ".join(target_words))
        reason = _drop_reason(len(source_words), len(target_words), config)
        if reason is None and config.dedupe and pair in seen:
            reason = "duplicates"
        counts[reason or "kept"] += 1
        if reason is None:
            seen.add(pair)
            kept.append(pair)
            indices.append(index)
    return kept, np.asarray(indices, dtype=np.int64), CleaningStats(**counts)


def _drop_reason(source_len: int, target_len: int, config: CleaningConfig) -> str | None:
    shorter, longer = sorted((source_len, target_len))
    if shorter < config.min_words:
        return "empty"
    if longer > config.max_words:
        return "too_long"
    if shorter > 3 and longer / shorter > config.max_ratio:
        return "ratio"
    return None
