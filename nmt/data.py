"""Corpus readers, cleaning, encoding and the tf.data pipelines for training.

The flow is: `read_pairs` → `clean_pairs` → `encode_pairs` (tokenizes the
whole corpus once, in large batches) → `make_train_dataset` once per epoch.

Training batches are planned in NumPy: the epoch's examples are shuffled
with a generator seeded by `(seed, epoch)`, grouped into length buckets,
cut into batches of about `max_tokens` padded tokens and the batches are
shuffled. The plan is deterministic, so `skip_batches` resumes an epoch
exactly where an interrupted run stopped. tf.data then only gathers and pads
each planned batch (graph ops, no Python in the input pipeline).
"""

from __future__ import annotations

import dataclasses
import functools
import gzip
import io
import logging
import shutil
import urllib.request
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf

from nmt.guided_alignment import gold_alignment_matrix
from nmt.tokenizer import BOS_ID, EOS_ID, PAD_ID

if TYPE_CHECKING:
    from nmt.tokenizer import TokenizerPair

logger = logging.getLogger(__name__)

Pair = tuple[str, str]

ANKI_URL = "https://www.manythings.org/anki/fra-eng.zip"
ANKI_MEMBER = "fra.txt"
# manythings.org answers 403 to urllib's default User-Agent.
_USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0 Safari/537.36"
)


# --------------------------------------------------------------------------- reading


def _open_text(path: str | Path) -> io.TextIOBase:
    """Opens a UTF-8 text file, gzip-compressed when its name ends in `.gz`."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="\n")
    return open(path, encoding="utf-8-sig", newline="\n")


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
    pairs = []
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
            pairs.append((columns[0].strip(), columns[1].strip()))
    return pairs


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


# --------------------------------------------------------------------------- encoding


@dataclasses.dataclass(frozen=True, eq=False)
class RaggedIds:
    """Variable-length token id sequences stored flat (CSR layout).

    Attributes:
        values: `(total_tokens,)` int32, all sequences concatenated.
        row_splits: `(num_sequences + 1,)` int64; sequence i is
            `values[row_splits[i]:row_splits[i + 1]]`.
    """

    values: np.ndarray
    row_splits: np.ndarray

    def __post_init__(self) -> None:
        splits = self.row_splits
        if splits.ndim != 1 or len(splits) < 1 or splits[0] != 0 or splits[-1] != len(self.values):
            raise ValueError(
                "row_splits must start at 0 and end at len(values). Received: "
                f"row_splits={splits!r}, len(values)={len(self.values)}"
            )

    @classmethod
    def from_lists(cls, sequences: Iterable[Sequence[int]]) -> RaggedIds:
        sequences = [np.asarray(s, dtype=np.int32) for s in sequences]
        lengths = np.array([len(s) for s in sequences], dtype=np.int64)
        values = np.concatenate(sequences) if sequences else np.zeros(0, np.int32)
        return cls(values.astype(np.int32), np.concatenate([[0], np.cumsum(lengths)]))

    def __len__(self) -> int:
        return len(self.row_splits) - 1

    def __getitem__(self, index: int) -> np.ndarray:
        return self.values[self.row_splits[index] : self.row_splits[index + 1]]

    @property
    def lengths(self) -> np.ndarray:
        """`(num_sequences,)` int64."""
        return np.diff(self.row_splits)

    def take(self, indices: np.ndarray) -> RaggedIds:
        """The sequences at `indices`, in that order (vectorised gather)."""
        indices = np.asarray(indices, dtype=np.int64)
        lengths = self.lengths[indices]
        splits = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        offsets = np.repeat(self.row_splits[indices] - splits[:-1], lengths)
        positions = np.arange(splits[-1], dtype=np.int64) + offsets
        return RaggedIds(self.values[positions], splits)

    def append(self, token: int) -> RaggedIds:
        """Every sequence with `token` added at its end."""
        splits = self.row_splits + np.arange(len(self.row_splits), dtype=np.int64)
        values = np.full(splits[-1], token, dtype=np.int32)
        is_old = np.ones(splits[-1], dtype=bool)
        is_old[splits[1:] - 1] = False
        values[is_old] = self.values
        return RaggedIds(values, splits)

    def to_tensor(self) -> tf.RaggedTensor:
        """A `(num_sequences, None)` int32 `tf.RaggedTensor`."""
        return tf.RaggedTensor.from_row_splits(self.values, self.row_splits, validate=False)


@dataclasses.dataclass(frozen=True, eq=False)
class EncodedCorpus:
    """A tokenized parallel corpus.

    Attributes:
        source: source ids, each sequence ending with EOS.
        target: target ids without BOS or EOS (the pipeline adds them).
        indices: `(num_pairs,)` int64, the index of each kept pair in the
            pairs given to `encode_pairs`.
        dropped: pairs left out because a side was longer than allowed.
        alignments: for guided alignment, each pair's links as the flat
            list `[i0, j0, i1, j1, ...]` of (source piece, target piece)
            positions (see `nmt.guided_alignment`); None without guidance.
    """

    source: RaggedIds
    target: RaggedIds
    indices: np.ndarray
    dropped: int = 0
    alignments: RaggedIds | None = None

    def __post_init__(self) -> None:
        if not len(self.source) == len(self.target) == len(self.indices):
            raise ValueError(
                "source, target and indices must have the same length. Received: "
                f"{len(self.source)}, {len(self.target)}, {len(self.indices)}"
            )
        if self.alignments is not None and len(self.alignments) != len(self.source):
            raise ValueError(
                "alignments must have one row per pair. Received: "
                f"{len(self.alignments)} rows for {len(self.source)} pairs"
            )

    def with_alignments(self, alignments: RaggedIds) -> EncodedCorpus:
        """The same corpus with guided-alignment links, one row per pair."""
        return dataclasses.replace(self, alignments=alignments)

    def __len__(self) -> int:
        return len(self.source)

    @functools.cached_property
    def _tensors(self) -> tuple[tf.RaggedTensor, ...]:
        # Built once and reused by every epoch's dataset.
        tensors = (self.source.to_tensor(), self.target.to_tensor())
        if self.alignments is not None:
            tensors += (self.alignments.to_tensor(),)
        return tensors


def encode_pairs(
    pairs: Sequence[Pair],
    tokenizers: TokenizerPair,
    batch: int = 4096,
    *,
    max_tokens_per_sentence: int = 100,
) -> EncodedCorpus:
    """Tokenizes all pairs once, appends EOS to sources and drops over-long pairs.

    Args:
        pairs: `(source, target)` sentences.
        tokenizers: the project's `TokenizerPair` (uses `.source` and
            `.target`).
        batch: sentences per tokenizer call.
        max_tokens_per_sentence: a pair is dropped when its source with EOS,
            or its target with BOS (the decoder's length), is longer.

    Returns:
        An `EncodedCorpus`; `dropped` says how many pairs were left out.
    """
    if batch < 1 or max_tokens_per_sentence < 2:
        raise ValueError(
            "batch must be positive and max_tokens_per_sentence at least 2. Received: "
            f"batch={batch!r}, max_tokens_per_sentence={max_tokens_per_sentence!r}"
        )
    source = _tokenize_all(tokenizers.source, [s for s, _ in pairs], batch).append(EOS_ID)
    target = _tokenize_all(tokenizers.target, [t for _, t in pairs], batch)
    keep = (source.lengths <= max_tokens_per_sentence) & (
        target.lengths + 1 <= max_tokens_per_sentence
    )
    indices = np.flatnonzero(keep).astype(np.int64)
    dropped = len(pairs) - len(indices)
    if dropped:
        logger.info(
            "Dropped %d of %d pairs longer than %d tokens",
            dropped,
            len(pairs),
            max_tokens_per_sentence,
        )
    return EncodedCorpus(source.take(indices), target.take(indices), indices, dropped)


def _tokenize_all(tokenizer, texts: list[str], batch: int) -> RaggedIds:
    values, lengths = [], []
    for start in range(0, len(texts), batch):
        ids = tokenizer.tokenize(tf.constant(texts[start : start + batch], dtype=tf.string))
        values.append(ids.flat_values.numpy().astype(np.int32))
        lengths.append(np.diff(ids.row_splits.numpy()))
    if not texts:
        return RaggedIds(np.zeros(0, np.int32), np.zeros(1, np.int64))
    splits = np.concatenate([[0], np.cumsum(np.concatenate(lengths))]).astype(np.int64)
    return RaggedIds(np.concatenate(values), splits)


# --------------------------------------------------------------------------- batching


def plan_epoch(
    corpus: EncodedCorpus,
    *,
    max_tokens: int,
    seed: int,
    epoch: int,
    bucket_width: int = 4,
    max_length: int = 100,
) -> list[np.ndarray]:
    """The batches of one training epoch, as arrays of example indices.

    Examples are shuffled with `np.random.default_rng((seed, epoch))`, put
    into buckets by their longer side L = max(source, target + 1) rounded up
    to a multiple of `bucket_width`, and cut into batches of
    `max(1, max_tokens // bucket_upper)` examples (so batch × L ≤ max_tokens
    unless one example alone is longer than max_tokens). The batches are then
    shuffled. Examples longer than `max_length` on either side are skipped.

    Args:
        corpus, max_tokens, seed, epoch, bucket_width, max_length: as for
            `make_train_dataset`.

    Returns:
        A list of int64 index arrays into `corpus`, in training order.
    """
    _check_batching(
        max_tokens=max_tokens,
        seed=seed,
        epoch=epoch,
        bucket_width=bucket_width,
        max_length=max_length,
    )
    source_len, target_len = corpus.source.lengths, corpus.target.lengths + 1
    length = np.maximum(source_len, target_len)
    upper = -(-length // bucket_width) * bucket_width
    rng = np.random.default_rng((seed, epoch))
    order = rng.permutation(len(corpus))
    order = order[length[order] <= max_length]
    order = order[np.argsort(upper[order], kind="stable")]  # (examples,) grouped by bucket
    bounds = np.flatnonzero(np.diff(upper[order])) + 1
    batches = []
    for members in np.split(order, bounds) if len(order) else []:
        size = max(1, max_tokens // int(upper[members[0]]))
        batches.extend(np.split(members, np.arange(size, len(members), size)))
    return [batches[i] for i in rng.permutation(len(batches))]


def _check_batching(**values: int) -> None:
    for name, value in values.items():
        minimum = 0 if name in ("seed", "epoch", "skip_batches") else 1
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
            raise ValueError(f"{name} must be an integer >= {minimum}. Received: {name}={value!r}")


def make_train_dataset(
    corpus: EncodedCorpus,
    *,
    max_tokens: int,
    seed: int,
    epoch: int,
    skip_batches: int = 0,
    bucket_width: int = 4,
    max_length: int = 100,
) -> tf.data.Dataset:
    """One epoch of token-budget batches, deterministic for `(seed, epoch)`.

    See `plan_epoch` for how batches are made. `skip_batches=k` yields the
    same batches as an uninterrupted run from its (k+1)-th batch on, to
    resume training mid-epoch.

    Args:
        corpus: the encoded training corpus.
        max_tokens: padded tokens per batch, counted as batch × max(S, T).
        seed: the run's seed.
        epoch: the 0-based epoch number.
        skip_batches: batches of this epoch already trained on.
        bucket_width: granularity of the length buckets, in tokens.
        max_length: examples whose source or decoder sequence is longer are
            skipped.

    Returns:
        A `tf.data.Dataset` of `((source, target_in), target_out)`: source
        `(batch, S)` int32 ending with EOS, target_in `(batch, T)` =
        BOS + target, target_out `(batch, T)` = target + EOS, all padded with
        `PAD_ID` to the batch's longest sequence. When the corpus has
        alignments, each element has a third member, the float32 gold
        alignment `(batch, T, S)` of `nmt.guided_alignment`. Its cardinality
        is known.
    """
    _check_batching(skip_batches=skip_batches)
    batches = plan_epoch(
        corpus,
        max_tokens=max_tokens,
        seed=seed,
        epoch=epoch,
        bucket_width=bucket_width,
        max_length=max_length,
    )
    if not 0 <= skip_batches <= len(batches):
        raise ValueError(
            f"skip_batches must be between 0 and the epoch's {len(batches)} batches. "
            f"Received: skip_batches={skip_batches!r}"
        )
    return _batches_dataset(corpus, batches[skip_batches:])


def make_eval_batches(corpus: EncodedCorpus, *, max_tokens: int) -> tf.data.Dataset:
    """Batches in corpus order, for evaluation (same elements as training).

    Consecutive examples are grouped while batch × max(S, T) stays within
    `max_tokens`; every example is included exactly once.
    """
    _check_batching(max_tokens=max_tokens)
    length = np.maximum(corpus.source.lengths, corpus.target.lengths + 1)
    batches, start, longest = [], 0, 0
    for index, value in enumerate(length.tolist()):
        longest = max(longest, value)
        if index > start and (index - start + 1) * longest > max_tokens:
            batches.append(np.arange(start, index))
            start, longest = index, value
    if len(corpus):
        batches.append(np.arange(start, len(corpus)))
    return _batches_dataset(corpus, batches)


def _batches_dataset(corpus: EncodedCorpus, batches: list[np.ndarray]) -> tf.data.Dataset:
    """Gathers and pads planned batches with graph ops (no Python per batch)."""
    sizes = np.array([len(b) for b in batches], dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    order = tf.constant(np.concatenate(batches) if batches else np.zeros(0, np.int64))
    source_ids, target_ids = corpus._tensors[:2]
    links = corpus._tensors[2] if corpus.alignments is not None else None

    def make_batch(start, size):
        index = order[start : start + size]  # (batch,)
        source = tf.gather(source_ids, index)  # (batch, None) ragged
        target = tf.gather(target_ids, index)  # (batch, None) ragged
        bos = tf.RaggedTensor.from_tensor(tf.fill([size, 1], BOS_ID))  # (batch, 1)
        eos = tf.RaggedTensor.from_tensor(tf.fill([size, 1], EOS_ID))  # (batch, 1)
        target_in = tf.concat([bos, target], axis=1)  # (batch, None)
        target_out = tf.concat([target, eos], axis=1)  # (batch, None)
        source = source.to_tensor(PAD_ID)  # (batch, S)
        target_out = target_out.to_tensor(PAD_ID)  # (batch, T)
        element = ((source, target_in.to_tensor(PAD_ID)), target_out)
        if links is None:
            return element
        gold = gold_alignment_matrix(
            tf.gather(links, index), tf.shape(target_out)[1], tf.shape(source)[1]
        )  # (batch, T, S)
        return element + (gold,)

    dataset = tf.data.Dataset.from_tensor_slices((starts, sizes))
    dataset = dataset.map(make_batch, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return dataset.prefetch(tf.data.AUTOTUNE)


# --------------------------------------------------------------------------- download


def download_anki(dest_dir: str | Path, *, url: str = ANKI_URL, timeout: float = 60.0) -> Path:
    """Downloads the Anki fra-eng release and extracts `fra.txt`.

    Needs internet access. Nothing is downloaded when `dest_dir/fra.txt`
    already exists.

    Args:
        dest_dir: where to put the zip file and `fra.txt`.
        url: the zip file to download.
        timeout: seconds to wait for the server.

    Returns:
        The path of `fra.txt` (`English<TAB>French<TAB>attribution` lines,
        readable with `read_pairs`).
    """
    dest_dir = Path(dest_dir)
    if (dest_dir / ANKI_MEMBER).exists():
        return dest_dir / ANKI_MEMBER
    dest_dir.mkdir(parents=True, exist_ok=True)
    zip_path = dest_dir / Path(url).name
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    partial = zip_path.with_name(zip_path.name + ".part")
    with urllib.request.urlopen(request, timeout=timeout) as response, open(partial, "wb") as out:
        shutil.copyfileobj(response, out)
    partial.replace(zip_path)
    return extract_anki(zip_path, dest_dir)


def extract_anki(zip_path: str | Path, dest_dir: str | Path) -> Path:
    """Extracts `fra.txt` (only that member) from an Anki zip file.

    Returns:
        The path of the extracted `fra.txt` in `dest_dir`.
    """
    dest = Path(dest_dir) / ANKI_MEMBER
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path) as archive:
        if ANKI_MEMBER not in archive.namelist():
            raise ValueError(
                f"{zip_path} has no {ANKI_MEMBER}. Received members: {archive.namelist()}"
            )
        partial = dest.with_name(dest.name + ".part")
        with archive.open(ANKI_MEMBER) as member, open(partial, "wb") as out:
            shutil.copyfileobj(member, out)
    partial.replace(dest)
    return dest
