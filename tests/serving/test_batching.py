"""Dynamic batching with a fake model: grouping, limits, deadlines, cancellation, Align."""

import asyncio
import threading
import time

import pytest

from nmt.types import DecodeOptions, Hypothesis, Translation
from serving.batching import ALIGN, TRANSLATE, Batcher, BatchingConfig
from serving.errors import DeadlineExpired, ModelUnavailable, QueueFull
from serving.metrics import ServingMetrics


class FakeModel:
    """Uppercases sentences, or "aligns" a pair as its target; records each call; can be held.

    `calls` holds `(inputs, options)` of every call and `kinds` its kind.
    """

    def __init__(self):
        self.calls: list[tuple[list, DecodeOptions | None]] = []
        self.kinds: list[str] = []
        self.gate = threading.Event()
        self.gate.set()
        self.started = threading.Event()
        self.fail_with: Exception | None = None

    def __call__(self, kind, inputs, options):
        self.calls.append((list(inputs), options))
        self.kinds.append(kind)
        self.started.set()
        self.gate.wait(10)
        if self.fail_with is not None:
            raise self.fail_with
        pairs = inputs if kind == ALIGN else [(s, s.upper()) for s in inputs]
        return 7, [Translation(source=s, source_tokens=tuple(s.split()), nbest=(Hypothesis(
            text=t, target_tokens=tuple(t.split()), score=-1.0,
            alignment=None, word_alignment=()),)) for s, t in pairs]

    def hold(self):
        self.started.clear()
        self.gate.clear()

    async def wait_started(self):
        assert await asyncio.to_thread(self.started.wait, 10)


def run(test, config=None, model=None, metrics=None):
    """Runs `test(batcher, model, metrics)` on a fresh loop with a started batcher
    (one worker by default: the tests hold its model call to fill the queue)."""
    config = config or BatchingConfig(workers=1)
    model = model or FakeModel()
    metrics = metrics or ServingMetrics()

    async def main():
        batcher = Batcher(model, config, metrics)
        batcher.start()
        try:
            return await test(batcher, model, metrics)
        finally:
            model.gate.set()
            await batcher.close()

    return asyncio.run(main())


def _value(metrics, name, **labels):
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def _blocker(batcher, model):
    """Occupies the only worker until `model.gate` is set."""
    model.hold()
    task = asyncio.ensure_future(batcher.translate(["blocker"], DecodeOptions()))
    await model.wait_started()
    return task


def test_concurrent_requests_share_one_batch_and_get_their_own_results():
    async def test(batcher, model, metrics):
        requests = [["a b"], ["c", "d e"], ["f", "g", "h"]]
        results = await asyncio.gather(*(batcher.translate(r, DecodeOptions()) for r in requests))
        assert [len(call) for call, _ in model.calls] == [6]
        for request, (translations, version) in zip(requests, results, strict=True):
            assert [t.text for t in translations] == [s.upper() for s in request]
            assert version == 7

    run(test, BatchingConfig(workers=1, max_wait_ms=100))


def test_different_options_never_share_a_batch():
    async def test(batcher, model, metrics):
        greedy, beam = DecodeOptions(beam_size=1), DecodeOptions(beam_size=4)
        await asyncio.gather(batcher.translate(["a", "b"], greedy),
                             batcher.translate(["c"], beam), batcher.translate(["d"], greedy))
        groups = sorted((options.beam_size, sorted(s)) for s, options in model.calls)
        assert groups == [(1, ["a", "b", "d"]), (4, ["c"])]

    run(test, BatchingConfig(workers=1, max_wait_ms=100))


def test_batches_are_at_most_max_batch_size():
    async def test(batcher, model, metrics):
        translations, _ = await batcher.translate([f"s{i}" for i in range(10)], DecodeOptions())
        assert [t.text for t in translations] == [f"S{i}" for i in range(10)]
        assert sorted(len(call) for call, _ in model.calls) == [2, 4, 4]

    run(test, BatchingConfig(workers=1, max_batch_size=4))


def test_a_batch_takes_the_oldest_sentence_and_those_nearest_it_in_length():
    async def test(batcher, model, metrics):
        blocker = await _blocker(batcher, model)
        lengths = [10, 1, 11, 30]  # the 10 is the oldest
        tasks = [asyncio.ensure_future(batcher.translate(["x" * n], DecodeOptions()))
                 for n in lengths]
        await asyncio.sleep(0.05)
        model.gate.set()
        await asyncio.gather(blocker, *tasks)
        batches = [sorted(len(s) for s in call) for call, _ in model.calls[1:]]
        assert batches == [[10, 11], [1, 30]]

    run(test, BatchingConfig(workers=1, max_batch_size=2))


def test_a_lone_sentence_waits_max_wait_for_company():
    async def test(batcher, model, metrics):
        started = time.perf_counter()
        await batcher.translate(["alone"], DecodeOptions())
        return time.perf_counter() - started

    assert run(test, BatchingConfig(workers=1, max_wait_ms=150)) >= 0.14


def test_by_default_a_lone_sentence_runs_at_once_and_the_busy_time_fills_the_next_batch():
    async def test(batcher, model, metrics):
        blocker = await _blocker(batcher, model)  # went alone, without waiting
        tasks = [asyncio.ensure_future(batcher.translate([s], DecodeOptions())) for s in "abc"]
        await asyncio.sleep(0.05)
        model.gate.set()
        await asyncio.gather(blocker, *tasks)
        assert [call for call, _ in model.calls] == [["blocker"], ["a", "b", "c"]]

    assert BatchingConfig().max_wait_ms == 0
    run(test)


def test_without_batching_requests_never_share_a_call():
    async def test(batcher, model, metrics):
        requests = [["a", "b"], ["c"], ["d", "e", "f"]]
        await asyncio.gather(*(batcher.translate(r, DecodeOptions()) for r in requests))
        assert sorted(sorted(call) for call, _ in model.calls) == sorted(requests)

    run(test, BatchingConfig(workers=1, enabled=False, max_wait_ms=100))


def test_a_request_whose_deadline_passes_in_the_queue_is_dropped_untranslated():
    async def test(batcher, model, metrics):
        blocker = await _blocker(batcher, model)
        deadline = asyncio.get_running_loop().time() + 0.05
        late = asyncio.ensure_future(batcher.translate(["too late"], DecodeOptions(), deadline))
        await asyncio.sleep(0.15)
        model.gate.set()
        await blocker
        with pytest.raises(DeadlineExpired, match="deadline passed while the request waited"):
            await late
        assert all("too late" not in call for call, _ in model.calls)
        assert _value(metrics, "nmt_dropped_sentences_total", reason="deadline") == 1
        assert batcher.depth == 0

    run(test)


def test_a_cancelled_request_is_dropped_untranslated():
    async def test(batcher, model, metrics):
        blocker = await _blocker(batcher, model)
        gone = asyncio.ensure_future(batcher.translate(["gone", "too"], DecodeOptions()))
        await asyncio.sleep(0.01)
        gone.cancel()
        model.gate.set()
        await blocker
        await batcher.translate(["after"], DecodeOptions())  # the dispatcher went past it
        assert [call for call, _ in model.calls] == [["blocker"], ["after"]]
        assert _value(metrics, "nmt_dropped_sentences_total", reason="cancelled") == 2

    run(test)


def test_a_full_queue_refuses_requests_with_resource_exhausted():
    async def test(batcher, model, metrics):
        blocker = await _blocker(batcher, model)
        queued = asyncio.ensure_future(batcher.translate(["a", "b", "c"], DecodeOptions()))
        await asyncio.sleep(0.01)
        full = r"3 sentences are queued .* adds 1 \(queue limit 3\)"
        with pytest.raises(QueueFull, match=full):
            await batcher.translate(["d"], DecodeOptions())
        model.gate.set()
        await asyncio.gather(blocker, queued)

    run(test, BatchingConfig(workers=1, max_queue=3))


def test_a_model_error_fails_its_batch_and_the_batcher_carries_on():
    model = FakeModel()

    async def test(batcher, model, metrics):
        model.fail_with = RuntimeError("model broke")
        with pytest.raises(RuntimeError, match="model broke"):
            await batcher.translate(["a"], DecodeOptions())
        model.fail_with = None
        translations, _ = await batcher.translate(["b"], DecodeOptions())
        assert translations[0].text == "B"

    run(test, model=model)


def test_blank_sentences_are_answered_without_the_model():
    async def test(batcher, model, metrics):
        translations, version = await batcher.translate(["", "  \t"], DecodeOptions())
        assert model.calls == [] and version is None
        assert [t.text for t in translations] == ["", ""]
        assert translations[0].alignment.shape == (0, 0) and translations[0].source_tokens == ()
        mixed, _ = await batcher.translate(["", "hi"], DecodeOptions())
        assert [t.text for t in mixed] == ["", "HI"] and model.calls[0][0] == ["hi"]

    run(test)


def test_close_finishes_the_batch_in_flight_and_fails_queued_ones_with_unavailable():
    model = FakeModel()

    async def main():
        batcher = Batcher(model, BatchingConfig(workers=1), ServingMetrics())
        batcher.start()
        blocker = await _blocker(batcher, model)
        queued = asyncio.ensure_future(batcher.translate(["queued"], DecodeOptions()))
        await asyncio.sleep(0.01)
        closing = asyncio.ensure_future(batcher.close())
        await asyncio.sleep(0.01)
        model.gate.set()  # the batch in flight finishes; the queued one never starts
        await closing
        with pytest.raises(ModelUnavailable, match="shutting down"):
            await queued
        translations, _ = await blocker
        assert translations[0].text == "BLOCKER"
        assert [call for call, _ in model.calls] == [["blocker"]]

    asyncio.run(main())


def test_metrics_count_batches_sentences_and_tokens():
    async def test(batcher, model, metrics):
        await asyncio.gather(batcher.translate(["a b", "c"], DecodeOptions()),
                             batcher.translate(["d e f"], DecodeOptions()))
        assert _value(metrics, "nmt_batch_size_count") == 1
        assert _value(metrics, "nmt_batch_size_sum") == 3
        assert _value(metrics, "nmt_translated_sentences_total") == 3
        assert _value(metrics, "nmt_translated_tokens_total", side="source") == 6
        assert _value(metrics, "nmt_translated_tokens_total", side="target") == 6
        assert _value(metrics, "nmt_queue_depth") == 0

    run(test, BatchingConfig(workers=1, max_wait_ms=100))


def test_concurrent_align_requests_share_one_batch_and_get_their_own_results():
    async def test(batcher, model, metrics):
        requests = [(["a b"], ["A B c"]), (["c", "d e"], ["C", "D E"])]
        results = await asyncio.gather(*(batcher.align(s, t) for s, t in requests))
        assert model.kinds == [ALIGN]
        assert model.calls == [([("a b", "A B c"), ("c", "C"), ("d e", "D E")], None)]
        for (sources, targets), (translations, version) in zip(requests, results, strict=True):
            assert [t.source for t in translations] == sources
            assert [t.text for t in translations] == targets
            assert version == 7
        assert _value(metrics, "nmt_batch_size_count") == 1
        assert _value(metrics, "nmt_batch_size_sum") == 3

    run(test, BatchingConfig(workers=1, max_wait_ms=100))


def test_align_and_translate_never_share_a_model_call():
    async def test(batcher, model, metrics):
        (translated, _), (aligned, _) = await asyncio.gather(
            batcher.translate(["a", "b"], DecodeOptions()), batcher.align(["c"], ["C!"]))
        assert sorted(zip(model.kinds, (c for c, _ in model.calls), strict=True)) == [
            (ALIGN, [("c", "C!")]), (TRANSLATE, ["a", "b"])]
        assert [t.text for t in translated] == ["A", "B"] and aligned[0].text == "C!"

    run(test, BatchingConfig(workers=1, max_wait_ms=100))


def test_blank_pairs_are_answered_without_the_model():
    async def test(batcher, model, metrics):
        aligned, version = await batcher.align(["", " "], ["", "\t"])
        assert model.calls == [] and version is None
        assert [t.text for t in aligned] == ["", ""] and aligned[1].alignment.shape == (0, 0)
        mixed, _ = await batcher.align(["", "", "hi"], ["", "Salut", "Salut"])
        assert model.calls == [([("", "Salut"), ("hi", "Salut")], None)]  # a blank source alone
        assert [t.text for t in mixed] == ["", "Salut", "Salut"]

    run(test)


def test_align_pairs_count_against_the_same_queue_and_deadlines():
    async def test(batcher, model, metrics):
        blocker = await _blocker(batcher, model)
        queued = asyncio.ensure_future(batcher.align(["a", "b"], ["A", "B"]))
        deadline = asyncio.get_running_loop().time() + 0.05
        late = asyncio.ensure_future(batcher.align(["late"], ["tard"], deadline))
        await asyncio.sleep(0.01)
        with pytest.raises(QueueFull, match=r"3 sentences are queued .* \(queue limit 3\)"):
            await batcher.translate(["d"], DecodeOptions())
        await asyncio.sleep(0.1)
        model.gate.set()
        await asyncio.gather(blocker, queued)
        with pytest.raises(DeadlineExpired):
            await late
        assert model.calls[1:] == [([("a", "A"), ("b", "B")], None)]

    run(test, BatchingConfig(workers=1, max_queue=3))


@pytest.mark.parametrize("kwargs, match", [
    ({"max_batch_size": 0}, "max_batch_size=0"),
    ({"workers": 0}, "workers=0"),
    ({"max_wait_ms": -1}, "max_wait_ms=-1"),
])
def test_config_is_validated(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BatchingConfig(**kwargs)


# --- in-flight sharing: one model translation for concurrent requests of one sentence -------


def test_concurrent_requests_for_a_queued_sentence_reach_the_model_once():
    async def test(batcher, model, metrics):
        blocker = await _blocker(batcher, model)
        requests = [["Save."], ["Save.", "Open."], ["Save."]]
        tasks = [asyncio.ensure_future(batcher.translate(r, DecodeOptions())) for r in requests]
        await asyncio.sleep(0.01)
        assert batcher.depth == 2  # "Save." and "Open."
        assert batcher.in_flight == 3  # and "blocker", running
        model.gate.set()
        results = await asyncio.gather(blocker, *tasks)
        assert [call for call, _ in model.calls] == [["blocker"], ["Save.", "Open."]]
        assert [[t.text for t in ts] for ts, _ in results[1:]] == [
            ["SAVE."], ["SAVE.", "OPEN."], ["SAVE."]]
        assert results[1][0][0] is results[3][0][0]
        assert _value(metrics, "nmt_inflight_shared_sentences_total") == 2
        assert _value(metrics, "nmt_translated_sentences_total") == 3
        assert batcher.in_flight == 0  # only sentences in flight are kept

    run(test)


def test_a_request_joins_a_sentence_the_model_is_translating():
    async def test(batcher, model, metrics):
        model.hold()
        first = asyncio.ensure_future(batcher.translate(["Running."], DecodeOptions()))
        await model.wait_started()
        second = asyncio.ensure_future(batcher.translate(["Running."], DecodeOptions()))
        await asyncio.sleep(0.01)
        assert batcher.depth == 0  # joined, not queued
        model.gate.set()
        (a, version_a), (b, version_b) = await asyncio.gather(first, second)
        assert model.calls == [(["Running."], DecodeOptions())]
        assert a[0].text == b[0].text == "RUNNING." and version_a == version_b == 7

    run(test)


def test_a_model_error_reaches_every_request_waiting_for_the_sentence():
    async def test(batcher, model, metrics):
        model.hold()
        model.fail_with = RuntimeError("model broke")
        tasks = [asyncio.ensure_future(batcher.translate(["Doomed."], DecodeOptions()))
                 for _ in range(3)]
        await model.wait_started()
        await asyncio.sleep(0.01)
        model.gate.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert [str(r) for r in results] == ["model broke"] * 3
        assert len(model.calls) == 1 and batcher.in_flight == 0
        model.fail_with = None
        translations, _ = await batcher.translate(["Doomed."], DecodeOptions())
        assert translations[0].text == "DOOMED." and len(model.calls) == 2  # not stuck

    run(test)


def test_cancelling_the_first_request_leaves_the_others_their_translation():
    async def test(batcher, model, metrics):
        blocker = await _blocker(batcher, model)
        first = asyncio.ensure_future(batcher.translate(["Shared."], DecodeOptions()))
        await asyncio.sleep(0.01)
        second = asyncio.ensure_future(batcher.translate(["Shared."], DecodeOptions()))
        await asyncio.sleep(0.01)
        first.cancel()
        model.gate.set()
        translations, _ = await second
        await blocker
        assert first.cancelled() and translations[0].text == "SHARED."
        assert [call for call, _ in model.calls] == [["blocker"], ["Shared."]]
        assert _value(metrics, "nmt_dropped_sentences_total", reason="cancelled") == 0

    run(test)


def test_cancelling_the_first_request_while_the_model_runs_leaves_the_others_their_translation():
    async def test(batcher, model, metrics):
        model.hold()
        first = asyncio.ensure_future(batcher.translate(["Running."], DecodeOptions()))
        await model.wait_started()
        second = asyncio.ensure_future(batcher.translate(["Running."], DecodeOptions()))
        await asyncio.sleep(0.01)
        first.cancel()
        model.gate.set()
        translations, version = await second
        assert first.cancelled() and translations[0].text == "RUNNING." and version == 7

    run(test)


def test_a_sentence_every_request_left_is_dropped_untranslated():
    async def test(batcher, model, metrics):
        blocker = await _blocker(batcher, model)
        tasks = [asyncio.ensure_future(batcher.translate(["Gone."], DecodeOptions()))
                 for _ in range(2)]
        await asyncio.sleep(0.01)
        for task in tasks:
            task.cancel()
        model.gate.set()
        await blocker
        await batcher.translate(["After."], DecodeOptions())  # the dispatcher went past it
        assert [call for call, _ in model.calls] == [["blocker"], ["After."]]
        assert _value(metrics, "nmt_dropped_sentences_total", reason="cancelled") == 1
        assert batcher.in_flight == 0

    run(test)


def test_each_request_keeps_its_own_deadline_on_a_shared_sentence():
    async def test(batcher, model, metrics):
        blocker = await _blocker(batcher, model)
        soon = asyncio.get_running_loop().time() + 0.05
        early = asyncio.ensure_future(batcher.translate(["Shared."], DecodeOptions(), soon))
        patient = asyncio.ensure_future(batcher.translate(["Shared."], DecodeOptions()))
        await asyncio.sleep(0.15)
        model.gate.set()
        await blocker
        translations, _ = await patient
        with pytest.raises(DeadlineExpired):
            await early
        assert translations[0].text == "SHARED."
        assert [call for call, _ in model.calls] == [["blocker"], ["Shared."]]

    run(test)


def test_different_options_do_not_share_a_sentence_in_flight():
    async def test(batcher, model, metrics):
        blocker = await _blocker(batcher, model)
        greedy, beam = DecodeOptions(beam_size=1), DecodeOptions(beam_size=4)
        tasks = [asyncio.ensure_future(batcher.translate(["Same."], options))
                 for options in (greedy, beam)]
        await asyncio.sleep(0.01)
        model.gate.set()
        await asyncio.gather(blocker, *tasks)
        assert sorted((o.beam_size, call) for call, o in model.calls[1:]) == [
            (1, ["Same."]), (4, ["Same."])]
        assert _value(metrics, "nmt_inflight_shared_sentences_total") == 0

    run(test)


def test_a_request_after_a_reload_does_not_join_a_sentence_queued_before_it():
    model, serving = FakeModel(), [7]

    async def main():
        batcher = Batcher(model, BatchingConfig(workers=1), ServingMetrics(),
                          version=lambda: serving[0])
        batcher.start()
        try:
            blocker = await _blocker(batcher, model)
            before = asyncio.ensure_future(batcher.translate(["Same."], DecodeOptions()))
            await asyncio.sleep(0.01)
            serving[0] = 8
            after = asyncio.ensure_future(batcher.translate(["Same."], DecodeOptions()))
            await asyncio.sleep(0.01)
            assert batcher.depth == 2
            model.gate.set()
            await asyncio.gather(blocker, before, after)
        finally:
            model.gate.set()
            await batcher.close()

    asyncio.run(main())
    assert [call for call, _ in model.calls] == [["blocker"], ["Same.", "Same."]]


def test_a_request_joining_sentences_in_flight_needs_no_room_in_the_queue():
    async def test(batcher, model, metrics):
        blocker = await _blocker(batcher, model)
        queued = asyncio.ensure_future(batcher.translate(["a", "b"], DecodeOptions()))
        await asyncio.sleep(0.01)
        joined = asyncio.ensure_future(batcher.translate(["b", "a"], DecodeOptions()))
        with pytest.raises(QueueFull, match=r"2 sentences are queued .* adds 1"):
            await batcher.translate(["a", "c"], DecodeOptions())
        model.gate.set()
        await asyncio.gather(blocker, queued)
        translations, _ = await joined
        assert [t.text for t in translations] == ["B", "A"]

    run(test, BatchingConfig(workers=1, max_queue=2))


def test_without_batching_requests_do_not_share_a_sentence_in_flight():
    async def test(batcher, model, metrics):
        await asyncio.gather(*(batcher.translate(["Same."], DecodeOptions()) for _ in range(2)))
        assert [call for call, _ in model.calls] == [["Same."], ["Same."]]

    run(test, BatchingConfig(workers=1, enabled=False))
