"""Training and evaluation batches: epochs planned in NumPy, padded by tf.data.

Training batches are planned in NumPy: the epoch's examples are shuffled
with a generator seeded by `(seed, epoch)`, grouped into length buckets,
cut into batches of about `max_tokens` padded tokens and the batches are
shuffled. The plan is deterministic, so `skip_batches` resumes an epoch
exactly where an interrupted run stopped. tf.data then only gathers and pads
each planned batch (graph ops, no Python in the input pipeline).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from nmt.data.encoding import EncodedCorpus
from nmt.data.shards import check_batching, plan_in_order, plan_length_batches
from nmt.data.tokenizer import BOS_ID, EOS_ID, PAD_ID


def gold_alignment_matrix(links, target_length, source_length):
    """Dense 0/1 gold matrices from per-example link lists.

    Args:
        links: int `tf.RaggedTensor` `(batch, None)`: each row is the flat
            list `[i0, j0, i1, j1, ...]` of (source piece, target piece)
            links of one example.
        target_length: T of the batch (decoder steps, EOS included).
        source_length: S of the batch (source pieces, EOS included).

    Returns:
        float32 `(batch, T, S)`: 1 where a link is, 0 elsewhere. Links
        beyond `(T, S)` are ignored.
    """
    links = tf.cast(links, tf.int32)
    pairs = tf.reshape(links.flat_values, [-1, 2])  # (links, 2) as (i, j)
    rows = tf.cast(links.value_rowids()[::2], tf.int32)  # (links,) example of each link
    inside = (pairs[:, 0] < source_length) & (pairs[:, 1] < target_length)
    indices = tf.stack([rows, pairs[:, 1], pairs[:, 0]], axis=1)  # (links, 3) as (b, t, s)
    indices = tf.boolean_mask(indices, inside)
    shape = tf.stack([links.nrows(out_type=tf.int32), target_length, source_length])
    counts = tf.scatter_nd(indices, tf.ones([tf.shape(indices)[0]], tf.float32), shape)
    return tf.minimum(counts, 1.0)  # a repeated link counts once


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
    check_batching(
        max_tokens=max_tokens,
        seed=seed,
        epoch=epoch,
        bucket_width=bucket_width,
        max_length=max_length,
    )
    source_len, target_len = corpus.source.lengths, corpus.target.lengths + 1
    return plan_length_batches(np.maximum(source_len, target_len), max_tokens=max_tokens,
                               seed=seed, epoch=epoch, bucket_width=bucket_width,
                               max_length=max_length)


def make_train_dataset(
    corpus: EncodedCorpus,
    *,
    max_tokens: int,
    seed: int,
    epoch: int,
    skip_batches: int = 0,
    bucket_width: int = 4,
    max_length: int = 100,
    input_context: tf.distribute.InputContext | None = None,
) -> tf.data.Dataset:
    """One epoch of token-budget batches, deterministic for `(seed, epoch)`.

    See `plan_epoch` for how batches are made. `skip_batches=k` yields the
    same batches as an uninterrupted run from its (k+1)-th batch on, to
    resume training mid-epoch.

    With an `input_context` (`tf.distribute.Strategy.distribute_datasets_from_function`),
    the epoch's batches are dealt to the strategy's replicas, one batch
    (of up to `max_tokens`) per replica and step (see `deal_to_replicas`),
    and this input pipeline yields those of its own replicas; `skip_batches`
    then counts steps.

    Args:
        corpus: the encoded training corpus.
        max_tokens: padded tokens per batch, counted as batch × max(S, T).
        seed: the run's seed.
        epoch: the 0-based epoch number.
        skip_batches: batches (steps) of this epoch already trained on.
        bucket_width: granularity of the length buckets, in tokens.
        max_length: examples whose source or decoder sequence is longer are
            skipped.
        input_context: which replicas this input pipeline feeds, or None for
            one replica.

    Returns:
        A `tf.data.Dataset` of `((source, target_in), target_out)`: source
        `(batch, S)` int32 ending with EOS, target_in `(batch, T)` =
        BOS + target, target_out `(batch, T)` = target + EOS, all padded with
        `PAD_ID` to the batch's longest sequence. When the corpus has
        alignments, each element has a third member, the float32 gold
        alignment `(batch, T, S)` of `nmt.alignment.guided_alignment`. Its cardinality
        is known.
    """
    check_batching(skip_batches=skip_batches)
    batches = plan_epoch(
        corpus,
        max_tokens=max_tokens,
        seed=seed,
        epoch=epoch,
        bucket_width=bucket_width,
        max_length=max_length,
    )
    local = 1
    if input_context is not None:
        replicas = input_context.num_replicas_in_sync
        local = replicas // input_context.num_input_pipelines
        batches = deal_to_replicas(
            batches, replicas=replicas, first=input_context.input_pipeline_id * local, count=local
        )
    steps = len(batches) // local
    if not 0 <= skip_batches <= steps:
        raise ValueError(
            f"skip_batches must be between 0 and the epoch's {steps} batches (steps). "
            f"Received: skip_batches={skip_batches!r}"
        )
    return _batches_dataset(corpus, batches[skip_batches * local :])


def deal_to_replicas(
    batches: list[np.ndarray], *, replicas: int, first: int, count: int
) -> list[np.ndarray]:
    """The planned batches that replicas `first` to `first + count - 1` train on.

    Step k gives replica r the batch `k * replicas + r`. The epoch's last
    `len(batches) % replicas` batches, too few for a step, are left out, so
    every replica takes the same number of steps. The result lists step by
    step, the step's replicas in order, which is how a `tf.distribute` input
    pipeline hands its elements to its local replicas.

    Args:
        batches: an epoch's batches in training order (`plan_epoch`).
        replicas: replicas in sync (all workers' devices).
        first: the first replica of this input pipeline.
        count: the replicas this input pipeline feeds.

    Returns:
        `(len(batches) // replicas) * count` batches.
    """
    if not (0 <= first and 1 <= count and first + count <= replicas):
        raise ValueError(
            "Replicas first..first+count-1 must lie in 0..replicas-1. "
            f"Received: replicas={replicas!r}, first={first!r}, count={count!r}"
        )
    steps = len(batches) // replicas
    return [batches[k * replicas + r] for k in range(steps) for r in range(first, first + count)]


def make_eval_batches(corpus: EncodedCorpus, *, max_tokens: int) -> tf.data.Dataset:
    """Batches in corpus order, for evaluation (same elements as training).

    Consecutive examples are grouped while batch × max(S, T) stays within
    `max_tokens`; every example is included exactly once.
    """
    batches = plan_in_order(np.maximum(corpus.source.lengths, corpus.target.lengths + 1),
                            max_tokens=max_tokens)
    return _batches_dataset(corpus, batches)


def _batches_dataset(corpus: EncodedCorpus, batches: list[np.ndarray]) -> tf.data.Dataset:
    """Gathers and pads planned batches with graph ops (no Python per batch)."""
    sizes = np.array([len(b) for b in batches], dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    order = tf.constant(np.concatenate(batches) if batches else np.zeros(0, np.int64))
    source_ids, target_ids, *alignments = corpus.ragged_tensors
    links = alignments[0] if alignments else None

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
