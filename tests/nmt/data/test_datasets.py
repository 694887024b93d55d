"""`nmt.data.datasets`: epoch plans, the token budget, exact resume and evaluation order."""

import numpy as np
import pytest
import tensorflow as tf

from nmt.data.datasets import deal_to_replicas, make_eval_batches, make_train_dataset, plan_epoch
from nmt.data.encoding import EncodedCorpus, RaggedIds
from nmt.data.tokenizer import BOS_ID, EOS_ID, PAD_ID


def _random_corpus(count=500, seed=0, long_example=False):
    """A corpus of random ids; lengths 1-40, each source ending with EOS."""
    rng = np.random.default_rng(seed)
    sources = [list(rng.integers(4, 50, size=rng.integers(0, 40))) + [EOS_ID] for _ in range(count)]
    targets = [list(rng.integers(4, 50, size=rng.integers(1, 40))) for _ in range(count)]
    if long_example:
        sources[3] = [7] * 299 + [EOS_ID]
    return EncodedCorpus(
        RaggedIds.from_lists(sources), RaggedIds.from_lists(targets), np.arange(count)
    )


def _batches(dataset):
    return [
        (source.numpy(), target_in.numpy(), target_out.numpy())
        for (source, target_in), target_out in dataset
    ]


def _same(batches, others):
    if len(batches) != len(others):
        return False
    pairs = zip(batches, others, strict=True)
    return all(np.array_equal(a, b) for x, y in pairs for a, b in zip(x, y, strict=True))


def test_train_batches_match_the_plan_and_the_token_budget():
    corpus = _random_corpus(long_example=True)
    kwargs = {"max_tokens": 256, "seed": 3, "epoch": 0, "max_length": 400}
    plan = plan_epoch(corpus, **kwargs)
    dataset = make_train_dataset(corpus, **kwargs)
    assert int(dataset.cardinality()) == len(plan)
    assert sorted(np.concatenate(plan).tolist()) == list(range(len(corpus)))
    for indices, (source, target_in, target_out) in zip(plan, _batches(dataset), strict=True):
        assert source.dtype == target_in.dtype == target_out.dtype == np.int32
        assert source.shape[0] == target_in.shape[0] == len(indices)
        assert target_in.shape == target_out.shape
        if len(indices) > 1:
            assert len(indices) * max(source.shape[1], target_in.shape[1]) <= 256
        _check_rows(corpus, indices, source, target_in, target_out)
    assert [3] in [p.tolist() for p in plan]  # the 300-token example is alone


def _check_rows(corpus, indices, source, target_in, target_out):
    """Compares each padded row with the corpus sequence it came from."""
    assert source.shape[1] == corpus.source.lengths[indices].max()
    assert target_in.shape[1] == corpus.target.lengths[indices].max() + 1
    for row, index in enumerate(indices):
        src, tgt = corpus.source[index].tolist(), corpus.target[index].tolist()
        pad_s, pad_t = source.shape[1] - len(src), target_in.shape[1] - len(tgt) - 1
        assert source[row].tolist() == src + [PAD_ID] * pad_s
        assert target_in[row].tolist() == [BOS_ID] + tgt + [PAD_ID] * pad_t
        assert target_out[row].tolist() == tgt + [EOS_ID] + [PAD_ID] * pad_t


def test_train_order_is_deterministic_per_seed_and_epoch():
    corpus = _random_corpus()

    def plan(seed, epoch):
        return [b.tolist() for b in plan_epoch(corpus, max_tokens=200, seed=seed, epoch=epoch)]

    assert plan(1, 0) == plan(1, 0)
    assert plan(1, 1) != plan(1, 0)
    assert plan(2, 0) != plan(1, 0)
    assert plan(1, 2) != plan(2, 1)  # not merely seed + epoch
    first = _batches(make_train_dataset(corpus, max_tokens=200, seed=1, epoch=0))
    again = _batches(make_train_dataset(corpus, max_tokens=200, seed=1, epoch=0))
    assert _same(first, again)


def test_skip_batches_resumes_exactly():
    corpus = _random_corpus()
    kwargs = {"max_tokens": 300, "seed": 5, "epoch": 2}
    full = _batches(make_train_dataset(corpus, **kwargs))
    resumed = _batches(make_train_dataset(corpus, skip_batches=7, **kwargs))
    assert len(resumed) == len(full) - 7
    assert _same(full[7:], resumed)
    assert _batches(make_train_dataset(corpus, skip_batches=len(full), **kwargs)) == []
    with pytest.raises(ValueError, match="skip_batches"):
        make_train_dataset(corpus, skip_batches=len(full) + 1, **kwargs)


def test_deal_to_replicas_gives_each_replica_its_own_batch_per_step():
    batches = [np.array([i]) for i in range(11)]  # 11 batches: 2 steps of 4 replicas, 3 left
    dealt = deal_to_replicas(batches, replicas=4, first=2, count=2)
    assert [b.tolist() for b in dealt] == [[2], [3], [6], [7]]
    pipelines = [deal_to_replicas(batches, replicas=4, first=f, count=1) for f in range(4)]
    assert sorted(int(b[0]) for p in pipelines for b in p) == list(range(8))
    assert deal_to_replicas(batches[:3], replicas=4, first=0, count=4) == []
    with pytest.raises(ValueError, match="first=3, count=2"):
        deal_to_replicas(batches, replicas=4, first=3, count=2)


def test_input_context_yields_its_replicas_batches_and_skips_steps():
    corpus = _random_corpus()
    kwargs = {"max_tokens": 300, "seed": 5, "epoch": 1}
    full = _batches(make_train_dataset(corpus, **kwargs))
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1,
                                         num_replicas_in_sync=4)
    mine = _batches(make_train_dataset(corpus, input_context=context, **kwargs))
    steps = len(full) // 4
    expected = [full[4 * k + r] for k in range(steps) for r in (2, 3)]
    assert _same(mine, expected)
    resumed = _batches(make_train_dataset(corpus, input_context=context, skip_batches=3, **kwargs))
    assert _same(resumed, expected[6:])
    with pytest.raises(ValueError, match="skip_batches"):
        make_train_dataset(corpus, input_context=context, skip_batches=steps + 1, **kwargs)


def test_max_length_skips_long_examples():
    corpus = _random_corpus()
    plan = plan_epoch(corpus, max_tokens=500, seed=0, epoch=0, max_length=20)
    kept = np.concatenate(plan)
    longest = np.maximum(corpus.source.lengths, corpus.target.lengths + 1)
    assert sorted(kept.tolist()) == np.flatnonzero(longest <= 20).tolist()


@pytest.mark.parametrize(
    "kwargs", [{"max_tokens": 0}, {"seed": -1}, {"bucket_width": 0}, {"epoch": 1.5}]
)
def test_batching_arguments_are_validated(kwargs):
    arguments = {"max_tokens": 100, "seed": 0, "epoch": 0, **kwargs}
    with pytest.raises(ValueError, match="Received"):
        plan_epoch(_random_corpus(20), **arguments)


def test_eval_batches_keep_corpus_order():
    corpus = _random_corpus(200, seed=4, long_example=True)
    batches = _batches(make_eval_batches(corpus, max_tokens=128))
    start = 0
    for source, target_in, target_out in batches:
        indices = np.arange(start, start + len(source))
        if len(indices) > 1:
            assert len(indices) * max(source.shape[1], target_in.shape[1]) <= 128
        _check_rows(corpus, indices, source, target_in, target_out)
        start += len(source)
    assert start == len(corpus)
