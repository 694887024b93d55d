"""A tokenized parallel corpus: `RaggedIds`, `EncodedCorpus` and `encode_pairs`.

`encode_pairs` tokenizes the whole corpus once, in large batches, and keeps
the ids flat in NumPy (`RaggedIds`, a CSR layout), so that batching an epoch
(`nmt.data.datasets`) is index arithmetic, not tokenization.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import tensorflow as tf

from nmt.data.corpus import Pair
from nmt.data.tokenizer import EOS_ID

if TYPE_CHECKING:
    from nmt.data.tokenizer import TokenizerPair

logger = logging.getLogger(__name__)


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
            pairs given to `encode_pairs`; -1 for the examples that
            `concatenate_examples` adds.
        dropped: pairs left out because a side was longer than allowed.
        alignments: for guided alignment, each pair's links as the flat
            list `[i0, j0, i1, j1, ...]` of (source piece, target piece)
            positions (see `nmt.alignment.guided_alignment`); None without guidance.
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
    def ragged_tensors(self) -> tuple[tf.RaggedTensor, ...]:
        """`(source, target[, alignments])` as ragged `(num_pairs, None)` int32 tensors.

        Built once and reused by every epoch's dataset (`nmt.data.datasets`).
        """
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


def concatenate_examples(
    corpus: EncodedCorpus,
    *,
    count: int,
    max_pairs: int,
    max_tokens_per_sentence: int,
    seed: int,
) -> EncodedCorpus:
    """The corpus with `count` more examples, each 2 to `max_pairs` random pairs joined.

    Short training sentences teach attention nothing about long inputs: a model
    trained on them drifts after twenty words. A joined example is what the
    tokenizer makes of the pairs' texts separated by a space (pieces of a new
    sentence start with a word boundary), so it is a real long pair: its
    source is the members' sources without their inner EOS, its target the
    members' targets, and its guided-alignment links are the members' links
    shifted by the lengths before them. The draw depends on `seed` only, so a
    resumed run sees the same examples. Joined examples longer than
    `max_tokens_per_sentence` on either side are not added.

    Args:
        corpus: the encoded training corpus (with or without alignments).
        count: joined examples to draw (0 returns `corpus`).
        max_pairs: the most pairs in one joined example (>= 2).
        max_tokens_per_sentence: as for `encode_pairs`.
        seed: the run's seed.

    Returns:
        A new `EncodedCorpus`: the original examples, then the joined ones
        (`indices` -1).
    """
    if count < 0 or max_pairs < 2:
        raise ValueError(
            "count must be >= 0 and max_pairs >= 2. Received: "
            f"count={count!r}, max_pairs={max_pairs!r}"
        )
    if count == 0 or len(corpus) < 2:
        return corpus
    rng = np.random.default_rng((seed, 0x6A6F696E))  # "join": independent of epoch shuffles
    sizes = rng.integers(2, max_pairs + 1, size=count)
    members = rng.integers(0, len(corpus), size=int(sizes.sum()))
    source_lengths = corpus.source.lengths - 1  # without EOS
    target_lengths = corpus.target.lengths
    sources, targets, links = [], [], []
    for group in np.split(members, np.cumsum(sizes)[:-1]):
        source_len = int(source_lengths[group].sum()) + 1  # with EOS
        target_len = int(target_lengths[group].sum()) + 1  # with BOS
        if max(source_len, target_len) > max_tokens_per_sentence:
            continue
        sources.append(np.concatenate([corpus.source[m][:-1] for m in group] + [[EOS_ID]]))
        targets.append(np.concatenate([corpus.target[m] for m in group]))
        if corpus.alignments is not None:
            source_offsets = np.cumsum(source_lengths[group]) - source_lengths[group]
            target_offsets = np.cumsum(target_lengths[group]) - target_lengths[group]
            shifted = []
            for m, i0, j0 in zip(group, source_offsets, target_offsets, strict=True):
                pair_links = corpus.alignments[m].reshape(-1, 2) + np.array([i0, j0])
                shifted.append(pair_links.reshape(-1))
            links.append(np.concatenate(shifted))
    added = len(sources)
    logger.info("Added %d joined examples of 2 to %d pairs", added, max_pairs)
    alignments = None
    if corpus.alignments is not None:
        alignments = _concat_ragged(corpus.alignments, RaggedIds.from_lists(links))
    return EncodedCorpus(
        _concat_ragged(corpus.source, RaggedIds.from_lists(sources)),
        _concat_ragged(corpus.target, RaggedIds.from_lists(targets)),
        np.concatenate([corpus.indices, np.full(added, -1, np.int64)]),
        corpus.dropped,
        alignments,
    )


def _concat_ragged(first: RaggedIds, second: RaggedIds) -> RaggedIds:
    splits = np.concatenate([first.row_splits, second.row_splits[1:] + first.row_splits[-1]])
    return RaggedIds(np.concatenate([first.values, second.values]).astype(np.int32), splits)


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
