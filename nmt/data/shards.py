"""Pre-tokenized training shards, read without TensorFlow: NumPy batches on any backend.

`nmt shards` (`nmt.data.shard_writer`) tokenizes a corpus once, the way `nmt
train` does; `load_split`, `join_examples`, `plan_epoch` and `iter_batches` turn
the shards into padded int32 batches on any machine with NumPy (a JAX or
PyTorch trainer, a GPU host without TensorFlow):

    split = load_split("../runs/shards-en-fr-v10", "train")
    split = join_examples(split, count=round(0.05 * len(split)), max_pairs=3, seed=1)
    for source, target_in, target_out in iter_batches(
            split, max_tokens=6000, seed=1, epoch=0, pad_to=8):
        ...

The examples, their order, joined examples and (with `bucket_width=4`,
`max_length=100`) the batches are those of `nmt.data.encoding` and
`nmt.data.datasets` for the same corpus and config (tests/nmt/data/test_shards.py):
`source` = pieces + EOS, `target_in` = BOS + pieces, `target_out` = pieces +
EOS, padded on the right with PAD (0).

A shards directory holds `manifest.json` (vocabulary, the models' SHA-256,
options, counts, token totals), `<language>.spm.model` (the models that made
the ids, the files an export embeds) and one `<split>.npz` per split. Arrays
per stored row: `source_lengths`, `target_lengths` (pieces, no BOS/EOS),
`repeats` (consecutive copies of the row in the corpus: a recipe's weight
writes a pair several times), `domain` (index into the split's `domains`, the
corpus's third column); `source_ids`, `target_ids` (the rows' pieces,
concatenated, uint16); per example `pair_step` (the gap to the previous
example's pair in the TSV, so that alignments given a line per pair can
follow); dev only, `references` (its French lines, UTF-8, newline-joined).

NumPy and the standard library only.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from nmt.data.subwords import BOS_ID, EOS_ID, PAD_ID

log = logging.getLogger(__name__)

FORMAT = 1  # of the files below; `load_split` refuses others
MANIFEST_FILE = "manifest.json"

Batch = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclasses.dataclass(frozen=True, eq=False)
class ShardSplit:
    """One split of the shards in memory: its examples in `nmt train`'s order.

    Examples point at stored rows (a weight's copies share one row; joined
    examples get rows of their own).

    Attributes:
        source_ids: `(tokens,)` the rows' source pieces (no EOS), concatenated.
        source_splits: `(rows + 1,)` int64; row r is `source_ids[s[r]:s[r + 1]]`.
        target_ids: `(tokens,)` the rows' target pieces (no BOS or EOS).
        target_splits: `(rows + 1,)` int64.
        example_rows: `(examples,)` int64, the row of each example.
        pair_index: `(examples,)` int64, the example's pair among the TSV's
            pairs (blank lines skipped: a line of an alignment file); -1 for
            joined examples.
        domain: `(examples,)` int64 index into `domains`; -1 where none.
        domains: the corpus's third-column names (`nmt corpus`: the source).
        references: dev only: the French line of each example, else None.
        max_tokens_per_sentence: the limit the split was written with.
        link_values: with word links (`nmt.data.shard_links.attach_links`): `(links, 2)`
            int32 `(source piece, target piece)` links of the rows, concatenated;
            else None.
        link_splits: `(rows + 1,)` int64; row r's links are
            `link_values[l[r]:l[r + 1]]`; else None.
    """

    source_ids: np.ndarray
    source_splits: np.ndarray
    target_ids: np.ndarray
    target_splits: np.ndarray
    example_rows: np.ndarray
    pair_index: np.ndarray
    domain: np.ndarray
    domains: tuple[str, ...]
    references: tuple[str, ...] | None
    max_tokens_per_sentence: int
    link_values: np.ndarray | None = None
    link_splits: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.example_rows)

    @property
    def source_lengths(self) -> np.ndarray:
        """`(examples,)` int64: pieces + EOS, what the encoder reads."""
        return np.diff(self.source_splits)[self.example_rows] + 1

    @property
    def target_lengths(self) -> np.ndarray:
        """`(examples,)` int64: pieces + 1, the length of `target_in` and `target_out`."""
        return np.diff(self.target_splits)[self.example_rows] + 1

    def example(self, index: int) -> Batch:
        """`(source, target_in, target_out)` of one example, int32, unpadded."""
        source, target_in, target_out = make_batch(self, np.array([index]), pad_to=1)
        return source[0], target_in[0], target_out[0]


def read_manifest(directory: str | Path) -> dict:
    """The `manifest.json` of a shards directory."""
    path = Path(directory) / MANIFEST_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: is {directory} a shards directory "
                                "(`nmt shards --out`)?")
    return json.loads(path.read_text(encoding="utf-8"))


def load_split(directory: str | Path, split: str = "train") -> ShardSplit:
    """Loads one split of a shards directory (`write_shards`).

    Args:
        directory: the shards directory.
        split: `"train"` or `"dev"` (those the manifest lists).

    Returns:
        The split's examples in the order `nmt train` reads them, before
        joining (`join_examples`).
    """
    manifest = read_manifest(directory)
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{directory}: shards of format {manifest.get('format')!r}; this "
                         f"version reads format {FORMAT}. Rebuild them with `nmt shards`")
    if split not in manifest["splits"]:
        raise ValueError(f"split must be one of {sorted(manifest['splits'])}. "
                         f"Received: split={split!r}")
    facts = manifest["splits"][split]
    with np.load(Path(directory) / facts["file"]) as arrays:
        stored = {name: arrays[name] for name in arrays.files}
    rows = np.arange(len(stored["repeats"]), dtype=np.int64)
    example_rows = np.repeat(rows, stored["repeats"].astype(np.int64))
    domain = stored["domain"].astype(np.int64)[example_rows] if facts["domains"] else (
        np.full(len(example_rows), -1, np.int64))
    references = None
    if "references" in stored:
        references = tuple(stored["references"].tobytes().decode("utf-8").split("\n"))
        references = references if example_rows.size else ()
    return ShardSplit(
        source_ids=stored["source_ids"],
        source_splits=_splits(stored["source_lengths"]),
        target_ids=stored["target_ids"],
        target_splits=_splits(stored["target_lengths"]),
        example_rows=example_rows,
        pair_index=np.cumsum(stored["pair_step"].astype(np.int64)) - 1,
        domain=domain,
        domains=tuple(facts["domains"]),
        references=references,
        max_tokens_per_sentence=int(manifest["max_tokens_per_sentence"]),
    )


def _splits(lengths: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths.astype(np.int64))])


def _take(values: np.ndarray, splits: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The pieces of `rows`, in order, concatenated."""
    lengths = splits[rows + 1] - splits[rows]
    starts = np.repeat(splits[rows] - (np.cumsum(lengths) - lengths), lengths)
    return values[np.arange(int(lengths.sum()), dtype=np.int64) + starts]


def join_examples(split: ShardSplit, *, count: int, max_pairs: int, seed: int,
                  max_tokens_per_sentence: int | None = None) -> ShardSplit:
    """The split with `count` more examples, each 2 to `max_pairs` random examples joined.

    `nmt.data.encoding.concatenate_examples` without TensorFlow: the same
    draws from the same seed, so the same examples (tested): `nmt train` makes
    `round(data.join_fraction * len(corpus))` of them with `optim.seed`.
    A joined source is its members' pieces then one EOS, its target the
    members' targets, its word links (if the split has them) the members'
    links shifted by the pieces before them; those longer than
    `max_tokens_per_sentence` on either side are not added.

    Args:
        split: the training split (`load_split`).
        count: joined examples to draw (0 returns `split`).
        max_pairs: the most examples in one joined example (>= 2).
        seed: the run's seed.
        max_tokens_per_sentence: default: the split's.

    Returns:
        A new `ShardSplit`: the examples, then the joined ones (`pair_index`
        and `domain` -1).
    """
    if count < 0 or max_pairs < 2:
        raise ValueError("count must be >= 0 and max_pairs >= 2. Received: "
                         f"count={count!r}, max_pairs={max_pairs!r}")
    if count == 0 or len(split) < 2:
        return split
    limit = max_tokens_per_sentence or split.max_tokens_per_sentence
    rng = np.random.default_rng((seed, 0x6A6F696E))  # "join", as concatenate_examples
    sizes = rng.integers(2, max_pairs + 1, size=count)
    members = rng.integers(0, len(split), size=int(sizes.sum()))
    starts = np.cumsum(sizes) - sizes
    source_len = np.add.reduceat(split.source_lengths[members] - 1, starts) + 1  # with EOS
    target_len = np.add.reduceat(split.target_lengths[members] - 1, starts) + 1  # with BOS
    keep = np.maximum(source_len, target_len) <= limit  # (count,)
    rows = split.example_rows[members[np.repeat(keep, sizes)]]
    added = int(keep.sum())
    log.info("Added %d joined examples of 2 to %d pairs", added, max_pairs)
    first_new = len(split.source_splits) - 1
    links = {}
    if split.link_values is not None:
        links = _joined_links(split, rows, np.repeat(np.flatnonzero(keep), sizes[keep]))
    return dataclasses.replace(
        split,
        **links,
        source_ids=np.concatenate([split.source_ids, _take(split.source_ids,
                                                           split.source_splits, rows)]),
        source_splits=_append_splits(split.source_splits, source_len[keep] - 1),
        target_ids=np.concatenate([split.target_ids, _take(split.target_ids,
                                                           split.target_splits, rows)]),
        target_splits=_append_splits(split.target_splits, target_len[keep] - 1),
        example_rows=np.concatenate([split.example_rows,
                                     np.arange(first_new, first_new + added, dtype=np.int64)]),
        pair_index=np.concatenate([split.pair_index, np.full(added, -1, np.int64)]),
        domain=np.concatenate([split.domain, np.full(added, -1, np.int64)]),
        references=None,
    )


def reweight_domains(split: ShardSplit, weights: dict[str, float], *, seed: int) -> ShardSplit:
    """The split with each named domain's examples taken `weight` times: every example
    `floor(weight)` times, and a draw (fixed by `seed`) of the rest without repeats,
    `round(weight × count)` in all; unnamed domains keep theirs. Example order is kept
    (epochs shuffle it).

    Args:
        split: a split with domains (`load_split`), before `join_examples`.
        weights: `{domain: weight >= 0}` (the corpus's source names).
        seed: the run's seed.

    Raises:
        ValueError: a name that is not one of the split's domains.
    """
    unknown = sorted(set(weights) - set(split.domains))
    if unknown:
        raise ValueError(f"data.domain_weights names {unknown}, not domains of these shards: "
                         f"{list(split.domains)}")
    rng = np.random.default_rng((seed, 0x7765696768))  # "weigh"
    copies = np.ones(len(split), np.int64)
    for index, name in enumerate(split.domains):
        if name not in weights:
            continue
        members = np.flatnonzero(split.domain == index)
        whole, rest = divmod(round(weights[name] * len(members)), len(members) or 1)
        copies[members] = whole
        copies[rng.choice(members, size=rest, replace=False)] += 1
    kept = np.repeat(np.arange(len(split)), copies)
    return dataclasses.replace(split, example_rows=split.example_rows[kept],
                               pair_index=split.pair_index[kept], domain=split.domain[kept])


def _row_links(split: ShardSplit, rows: np.ndarray) -> np.ndarray:
    """`(links, 2)` the word links of `rows`, in order, concatenated."""
    return np.stack([_take(split.link_values[:, side], split.link_splits, rows)
                     for side in (0, 1)], axis=1)


def _append_splits(splits: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    return np.concatenate([splits, splits[-1] + np.cumsum(lengths.astype(np.int64))])


def _joined_links(split: ShardSplit, rows: np.ndarray, group: np.ndarray) -> dict:
    """`link_values` and `link_splits` with the joined rows' links appended.

    Args:
        rows: `(members,)` the stored row of each member of the kept joined
            examples, in order.
        group: `(members,)` the joined example each member belongs to
            (non-decreasing).
    """
    source = np.diff(split.source_splits)[rows]  # pieces, no EOS
    target = np.diff(split.target_splits)[rows]
    first = np.r_[True, group[1:] != group[:-1]]  # (members,) a group's first member
    starts = np.flatnonzero(first)

    def offsets(lengths):  # pieces of the group's members before each member
        before = np.cumsum(lengths) - lengths
        return before - np.repeat(before[starts], np.diff(np.r_[starts, len(rows)]))

    counts = np.diff(split.link_splits)[rows]  # (members,) links of each member
    shift = np.stack([offsets(source), offsets(target)], axis=1)  # (members, 2)
    member_links = _row_links(split, rows) + np.repeat(shift, counts, axis=0)
    per_example = np.add.reduceat(counts, starts) if len(rows) else counts[:0]
    return {"link_values": np.concatenate([split.link_values,
                                           member_links.astype(np.int32)]),
            "link_splits": _append_splits(split.link_splits, per_example)}


# --------------------------------------------------------------------------- batches


def check_batching(**values: int) -> None:
    """Raises a ValueError naming the first batching setting that is not a whole number
    at or above its minimum (0 for seed, epoch and skip_batches, else 1)."""
    for name, value in values.items():
        minimum = 0 if name in ("seed", "epoch", "skip_batches") else 1
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
            raise ValueError(f"{name} must be an integer >= {minimum}. Received: {name}={value!r}")


def bucket_lengths(length: np.ndarray, bucket_width: int,
                   bucket_bounds: tuple[int, ...] | None = None) -> np.ndarray:
    """The padded length L of each example's bucket: `length` rounded up to a
    multiple of `bucket_width`, or with `bucket_bounds` (increasing) to the first
    bound at least as long (beyond the last bound, to a multiple of `bucket_width`)."""
    upper = -(-np.asarray(length) // bucket_width) * bucket_width
    if bucket_bounds:
        bounds = np.asarray(bucket_bounds, dtype=np.int64)
        if np.any(np.diff(bounds) <= 0) or bounds[0] < 1:
            raise ValueError("bucket_bounds must be increasing positive lengths. "
                             f"Received: bucket_bounds={bucket_bounds!r}")
        slot = np.searchsorted(bounds, length)
        upper = np.where(slot < len(bounds), bounds[np.minimum(slot, len(bounds) - 1)], upper)
    return upper


def plan_epoch(split: ShardSplit, *, max_tokens: int, seed: int, epoch: int,
               bucket_width: int = 8, max_length: int | None = None,
               fixed_rows: bool = False, bucket_bounds: tuple[int, ...] | None = None,
               rows_multiple: int = 1) -> list[np.ndarray]:
    """The batches of one training epoch, as arrays of example indices.

    `nmt.data.datasets.plan_epoch` without TensorFlow (the same batches for
    the same arguments, tested): examples shuffled with
    `np.random.default_rng((seed, epoch))`, put into buckets by their longer
    side L = max(source + EOS, target + 1) rounded up to a multiple of
    `bucket_width`, cut into batches of `max(1, max_tokens // L)` examples,
    and the batches shuffled.

    Args:
        split: the examples (`load_split`, `join_examples`).
        max_tokens: padded tokens per batch, batch × L.
        seed: the run's seed.
        epoch: the 0-based epoch number.
        bucket_width: granularity of the length buckets, in tokens.
        max_length: examples longer than this on either side are skipped;
            default: the split's `max_tokens_per_sentence` (none skipped).
            `nmt train` passes none, so `datasets.plan_epoch`'s 100 applies.
        fixed_rows: every batch of a bucket has `max(1, max_tokens // L)`
            rows: a bucket's last batch is filled up with the bucket's first
            examples of the epoch (a few examples twice an epoch), so that
            with `iter_batches(fixed_rows=True)` each bucket makes one shape.
        rows_multiple: with `fixed_rows`, each batch's rows are a multiple of this
            (the devices of data parallelism), at least one multiple.
        bucket_bounds: the buckets' lengths instead of multiples of
            `bucket_width` (`bucket_lengths`): few buckets, few shapes to
            compile, e.g. `(16, 24, 32, 48, 64, 96, 128)`.

    Returns:
        A list of int64 index arrays into `split`, in training order.
    """
    max_length = split.max_tokens_per_sentence if max_length is None else max_length
    return plan_length_batches(
        np.maximum(split.source_lengths, split.target_lengths), max_tokens=max_tokens,
        seed=seed, epoch=epoch, bucket_width=bucket_width, max_length=max_length,
        fixed_rows=fixed_rows, bucket_bounds=bucket_bounds, rows_multiple=rows_multiple)


def plan_length_batches(length: np.ndarray, *, max_tokens: int, seed: int, epoch: int,
                        bucket_width: int, max_length: int, fixed_rows: bool = False,
                        bucket_bounds: tuple[int, ...] | None = None,
                        rows_multiple: int = 1) -> list[np.ndarray]:
    """`plan_epoch` over the examples' longer sides `length` `(examples,)`; also
    `nmt.data.datasets.plan_epoch`'s plan."""
    check_batching(max_tokens=max_tokens, seed=seed, epoch=epoch, bucket_width=bucket_width,
                    max_length=max_length, rows_multiple=rows_multiple)
    upper = bucket_lengths(length, bucket_width, bucket_bounds)
    rng = np.random.default_rng((seed, epoch))
    order = rng.permutation(len(length))
    order = order[length[order] <= max_length]
    order = order[np.argsort(upper[order], kind="stable")]  # (examples,) grouped by bucket
    bounds = np.flatnonzero(np.diff(upper[order])) + 1
    batches = []
    for members in np.split(order, bounds) if len(order) else []:
        size = max(1, max_tokens // int(upper[members[0]]))
        # Data parallelism splits the rows evenly over the devices.
        size = max(rows_multiple, size // rows_multiple * rows_multiple)
        if fixed_rows and len(members) % size:
            members = np.concatenate([members, np.resize(members, size - len(members) % size)])
        batches.extend(np.split(members, np.arange(size, len(members), size)))
    return [batches[i] for i in rng.permutation(len(batches))]


def plan_eval(split: ShardSplit, *, max_tokens: int) -> list[np.ndarray]:
    """Batches in split order, every example once (`datasets.make_eval_batches`'s plan)."""
    return plan_in_order(np.maximum(split.source_lengths, split.target_lengths),
                         max_tokens=max_tokens)


def plan_in_order(lengths: np.ndarray, *, max_tokens: int) -> list[np.ndarray]:
    """Consecutive examples grouped while batch × the longest stays within `max_tokens`;
    every example in exactly one batch (an example longer than `max_tokens` alone).

    Args:
        lengths: `(examples,)` each example's padded length, the longer of its sides.
        max_tokens: the token budget of a batch.

    Returns:
        int64 index arrays, in order.
    """
    check_batching(max_tokens=max_tokens)
    batches, start, longest = [], 0, 0
    for index, value in enumerate(np.asarray(lengths).tolist()):
        longest = max(longest, value)
        if index > start and (index - start + 1) * longest > max_tokens:
            batches.append(np.arange(start, index))
            start, longest = index, value
    if len(lengths):
        batches.append(np.arange(start, len(lengths)))
    return batches


def make_batch(split: ShardSplit, indices: np.ndarray, *, pad_to: int = 8,
               length: int | None = None) -> Batch:
    """Pads the examples at `indices` into one batch.

    Args:
        split: the examples.
        indices: `(batch,)` example indices (a `plan_epoch` batch).
        pad_to: padded lengths are rounded up to a multiple of this.
        length: pad both sides to this length instead (at least the longest).

    Returns:
        int32 `(source (batch, S), target_in (batch, T), target_out (batch, T))`:
        source = pieces + EOS, target_in = BOS + pieces, target_out = pieces +
        EOS, padded on the right with PAD (0).
    """
    check_batching(pad_to=pad_to)
    rows = split.example_rows[np.asarray(indices, dtype=np.int64)]  # (batch,)
    source_width = int(np.diff(split.source_splits)[rows].max(initial=0)) + 1
    target_width = int(np.diff(split.target_splits)[rows].max(initial=0)) + 1
    if length is not None:
        if length < max(source_width, target_width):
            raise ValueError(f"length must be at least the batch's longest side "
                             f"({max(source_width, target_width)}). Received: length={length!r}")
        source_width = target_width = length
    source_width, target_width = (-(-w // pad_to) * pad_to for w in (source_width, target_width))
    source = _pad(split.source_ids, split.source_splits, rows, source_width, suffix=EOS_ID)
    target_in = _pad(split.target_ids, split.target_splits, rows, target_width, prefix=BOS_ID)
    target_out = _pad(split.target_ids, split.target_splits, rows, target_width, suffix=EOS_ID)
    return source, target_in, target_out


def gold_alignment(split: ShardSplit, indices: np.ndarray, target_width: int,
                   source_width: int) -> np.ndarray:
    """float32 `(batch, target_width, source_width)`: 1 at each link (row j = target
    piece j, column i = source piece i) of the examples at `indices`, else 0."""
    if split.link_values is None:
        raise ValueError("this split has no word links: `nmt.data.shard_links.attach_links` first")
    rows = split.example_rows[np.asarray(indices, dtype=np.int64)]
    counts = split.link_splits[rows + 1] - split.link_splits[rows]
    links = _row_links(split, rows)
    gold = np.zeros((len(rows), target_width, source_width), np.float32)
    gold[np.repeat(np.arange(len(rows)), counts), links[:, 1], links[:, 0]] = 1.0
    return gold


def _pad(values: np.ndarray, splits: np.ndarray, rows: np.ndarray, width: int, *,
         prefix: int | None = None, suffix: int | None = None) -> np.ndarray:
    """`(len(rows), width)` int32: each row's pieces after `prefix`, then `suffix`, then PAD."""
    lengths = splits[rows + 1] - splits[rows]  # (batch,)
    shift = 0 if prefix is None else 1
    columns = np.arange(width)[None, :] - shift  # (1, width): position in the row's pieces
    inside = (columns >= 0) & (columns < lengths[:, None])  # (batch, width)
    out = np.full((len(rows), width), PAD_ID, dtype=np.int32)
    out[inside] = values[(splits[rows][:, None] + columns)[inside]]
    if prefix is not None:
        out[:, 0] = prefix
    if suffix is not None:
        out[np.arange(len(rows)), lengths + shift] = suffix
    return out


def iter_batches(split: ShardSplit, *, max_tokens: int, seed: int, epoch: int,
                 skip_batches: int = 0, bucket_width: int = 8, pad_to: int = 8,
                 max_length: int | None = None, fixed_rows: bool = False,
                 bucket_bounds: tuple[int, ...] | None = None,
                 rows_multiple: int = 1, gold: bool = False) -> Iterator[tuple]:
    """One epoch of token-budget batches, deterministic for `(seed, epoch)`.

    Batches of `plan_epoch`, padded by `make_batch`. `skip_batches=k` starts
    at the epoch's (k+1)-th batch, what an uninterrupted run would see next:
    resuming a run at step s of epoch e is `iter_batches(..., epoch=e,
    skip_batches=s - steps before e)`; `len(plan_epoch(...))` is the epoch's
    number of batches.

    Args:
        split: the examples (`load_split`, then `join_examples`).
        max_tokens, seed, epoch, bucket_width, max_length, fixed_rows,
            bucket_bounds, rows_multiple: as for `plan_epoch`.
        skip_batches: batches of this epoch already trained on.
        pad_to: padded lengths are multiples of it (e.g. 8, so that a JIT
            compiler sees few shapes); `bucket_width` must be a multiple of
            it, so a batch stays within `max_tokens`. With `fixed_rows` both
            sides are padded to the bucket's L: one shape per bucket.
        gold: also yield the batch's `gold_alignment` (a split with links).

    Yields:
        int32 `(source (B, S), target_in (B, T), target_out (B, T))` with
        B × max(S, T) <= max_tokens (unless one example alone is longer);
        with `gold`, float32 `(B, T, S)` fourth.
    """
    check_batching(skip_batches=skip_batches, pad_to=pad_to, bucket_width=bucket_width)
    if bucket_width % pad_to or any(bound % pad_to for bound in bucket_bounds or ()):
        raise ValueError("bucket_width and bucket_bounds must be multiples of pad_to, so that "
                         "padded batches keep to max_tokens. Received: "
                         f"bucket_width={bucket_width!r}, bucket_bounds={bucket_bounds!r}, "
                         f"pad_to={pad_to!r}")
    batches = plan_epoch(split, max_tokens=max_tokens, seed=seed, epoch=epoch,
                         bucket_width=bucket_width, max_length=max_length, fixed_rows=fixed_rows,
                         bucket_bounds=bucket_bounds, rows_multiple=rows_multiple)
    if not 0 <= skip_batches <= len(batches):
        raise ValueError(f"skip_batches must be between 0 and the epoch's {len(batches)} "
                         f"batches. Received: skip_batches={skip_batches!r}")
    longest = np.maximum(split.source_lengths, split.target_lengths)
    for indices in batches[skip_batches:]:
        length = None
        if fixed_rows:
            length = int(bucket_lengths(longest[indices].max(), bucket_width, bucket_bounds))
        batch = make_batch(split, indices, pad_to=pad_to, length=length)
        if gold:
            batch += (gold_alignment(split, indices, batch[1].shape[1], batch[0].shape[1]),)
        yield batch
