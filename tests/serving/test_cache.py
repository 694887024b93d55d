"""The translation cache: limits, eviction order, model versions, metrics, and the batcher's use."""

import asyncio
import sys

import numpy as np
import pytest

from nmt.types import DecodeOptions, Hypothesis, Translation
from serving.batching import Batcher, BatchingConfig
from serving.cache import CacheConfig, TranslationCache, translation_bytes
from serving.metrics import ServingMetrics

GREEDY, BEAM = DecodeOptions(beam_size=1), DecodeOptions(beam_size=5)


def _translation(source: str, rows: int = 3) -> Translation:
    words = source.split()
    alignment = np.full((rows, len(words) + 1), 1.0 / (len(words) + 1), np.float32)
    return Translation(source=source, source_tokens=(*words, "</s>"), nbest=(Hypothesis(
        text=source.upper(), target_tokens=(*source.upper().split(), "</s>"), score=-1.0,
        alignment=alignment, word_alignment=((0, 0),), attention=alignment.copy()),))


def _value(metrics, name, **labels):
    return metrics.registry.get_sample_value(name, labels) or 0.0


def _cache(entries=100, mb=10.0):
    metrics = ServingMetrics()
    return TranslationCache(CacheConfig(max_entries=entries, max_mb=mb), metrics), metrics


def test_a_translation_kept_is_given_back_for_the_same_sentence_options_and_version():
    cache, metrics = _cache()
    kept = _translation("Save the file.")
    cache.put("Save the file.", GREEDY, 8, kept)
    assert cache.get("Save the file.", GREEDY, 8) is kept
    assert cache.get("Save the file.", BEAM, 8) is None  # other options: another output
    assert cache.get("save the file.", GREEDY, 8) is None  # the exact sentence is the key
    assert _value(metrics, "nmt_cache_lookups_total", result="hit") == 1
    assert _value(metrics, "nmt_cache_lookups_total", result="miss") == 2


def test_a_new_model_version_empties_the_cache():
    cache, metrics = _cache()
    cache.put("Save.", GREEDY, 8, _translation("Save."))
    assert cache.get("Save.", GREEDY, 9) is None
    assert len(cache) == 0 and cache.bytes == 0
    assert _value(metrics, "nmt_cache_entries") == 0
    assert cache.get("Save.", GREEDY, 8) is None  # version 8's entries are gone for good


def test_a_translation_made_by_another_version_than_the_caches_is_not_kept():
    # A reload while the sentence was translated: the old model's answer must not be kept.
    cache, _ = _cache()
    cache.get("Open.", GREEDY, 9)
    cache.put("Save.", GREEDY, 8, _translation("Save."))
    assert len(cache) == 0


def test_the_least_recently_used_entry_goes_first_past_the_entry_limit():
    cache, metrics = _cache(entries=2)
    for sentence in ("One.", "Two."):
        cache.put(sentence, GREEDY, 1, _translation(sentence))
    cache.get("One.", GREEDY, 1)  # "Two." is now the least recently used
    cache.put("Three.", GREEDY, 1, _translation("Three."))
    assert cache.get("Two.", GREEDY, 1) is None
    assert cache.get("One.", GREEDY, 1) is not None and cache.get("Three.", GREEDY, 1) is not None
    assert _value(metrics, "nmt_cache_evictions_total") == 1
    assert _value(metrics, "nmt_cache_entries") == 2


def test_the_byte_limit_evicts_and_the_byte_count_follows_the_entries():
    size = translation_bytes(_translation("a b c d", rows=50))
    cache, metrics = _cache(entries=1000, mb=2.5 * size / 1e6)
    for sentence in ("a b c d", "a b c e", "a b c f"):
        cache.put(sentence, GREEDY, 1, _translation(sentence, rows=50))
    assert len(cache) == 2 and cache.bytes == 2 * size
    assert cache.bytes <= cache.config.max_bytes
    assert _value(metrics, "nmt_cache_bytes") == 2 * size
    cache.put("a b c e", GREEDY, 1, _translation("a b c e", rows=50))  # replaced, not doubled
    assert len(cache) == 2 and cache.bytes == 2 * size


def test_a_translation_bigger_than_the_whole_limit_is_not_kept():
    cache, _ = _cache(mb=1e-4)  # 100 bytes
    cache.put("Save the file.", GREEDY, 1, _translation("Save the file."))
    assert len(cache) == 0 and cache.bytes == 0


def test_the_byte_estimate_counts_the_arrays_and_strings():
    translation = _translation("one two three", rows=4)
    hypothesis = translation.best
    arrays = hypothesis.alignment.nbytes + hypothesis.attention.nbytes  # 2 * 4 * 4 * 4
    strings = sum(sys.getsizeof(s) for s in ("one two three", "one", "two", "three", "</s>",
                                             "ONE TWO THREE", "ONE", "TWO", "THREE", "</s>"))
    assert arrays == 128
    assert translation_bytes(translation) == arrays + strings + 400 + 16


def test_cached_arrays_are_read_only():
    cache, _ = _cache()
    cache.put("Save.", GREEDY, 1, _translation("Save."))
    with pytest.raises(ValueError):
        cache.get("Save.", GREEDY, 1).best.alignment[0, 0] = 0.0


@pytest.mark.parametrize("entries, mb", [(0, 10.0), (10, 0)])
def test_a_zero_limit_turns_the_cache_off(entries, mb):
    cache, metrics = _cache(entries=entries, mb=mb)
    cache.put("Save.", GREEDY, 1, _translation("Save."))
    assert cache.get("Save.", GREEDY, 1) is None
    assert _value(metrics, "nmt_cache_lookups_total", result="miss") == 0


@pytest.mark.parametrize("entries, mb, named", [(-1, 10, "max_entries"), (1.5, 10, "max_entries"),
                                                (10, -1, "max_mb")])
def test_bad_limits_are_refused_by_name(entries, mb, named):
    with pytest.raises(ValueError, match=f"{named} must be .*Received: {named}="):
        CacheConfig(max_entries=entries, max_mb=mb)


class CountingModel:
    """Translates by uppercasing; records the sentences of every call."""

    def __init__(self, version=7):
        self.calls: list[list[str]] = []
        self.version = version

    def __call__(self, kind, inputs, options):
        self.calls.append(list(inputs))
        return self.version, [_translation(s) for s in inputs]


SMALL_CACHE = CacheConfig(max_entries=100, max_mb=10)


def _run(test, cache_config=SMALL_CACHE):
    model, metrics = CountingModel(), ServingMetrics()

    async def main():
        cache = TranslationCache(cache_config, metrics) if cache_config.enabled else None
        batcher = Batcher(model, BatchingConfig(workers=1), metrics, cache,
                          version=lambda: model.version)
        batcher.start()
        try:
            return await test(batcher, model, metrics)
        finally:
            await batcher.close()

    return asyncio.run(main())


def test_a_repeated_sentence_is_answered_from_the_cache_without_a_model_call():
    async def test(batcher, model, metrics):
        first, v1 = await batcher.translate(["Save.", "Open."], GREEDY)
        again, v2 = await batcher.translate(["Open.", "Save."], GREEDY)
        assert model.calls == [["Save.", "Open."]]
        assert [t.text for t in again] == ["OPEN.", "SAVE."]
        assert again[0] is first[1] and (v1, v2) == (7, 7)
        assert _value(metrics, "nmt_cache_lookups_total", result="hit") == 2
        assert _value(metrics, "nmt_translated_sentences_total") == 2

    _run(test)


def test_only_the_sentences_not_cached_go_to_the_model():
    async def test(batcher, model, _):
        await batcher.translate(["Save."], GREEDY)
        result, _ = await batcher.translate(["Save.", "Quit.", ""], GREEDY)
        assert model.calls == [["Save."], ["Quit."]]
        assert [t.text for t in result] == ["SAVE.", "QUIT.", ""]

    _run(test)


def test_a_sentence_repeated_in_one_request_is_translated_once_even_without_a_cache():
    async def test(batcher, model, _):
        result, version = await batcher.translate(["Save.", "Open.", "Save."], GREEDY)
        assert model.calls == [["Save.", "Open."]]
        assert [t.text for t in result] == ["SAVE.", "OPEN.", "SAVE."] and version == 7

    _run(test, CacheConfig(max_entries=0))


def test_after_a_reload_the_new_version_translates_again():
    async def test(batcher, model, _):
        await batcher.translate(["Save."], GREEDY)
        model.version = 8
        _, version = await batcher.translate(["Save."], GREEDY)
        assert model.calls == [["Save."], ["Save."]] and version == 8

    _run(test)


def test_other_decoding_options_are_not_answered_from_the_cache():
    async def test(batcher, model, _):
        await batcher.translate(["Save."], GREEDY)
        await batcher.translate(["Save."], BEAM)
        assert model.calls == [["Save."], ["Save."]]

    _run(test)


def test_a_request_answered_wholly_from_the_cache_names_the_version():
    async def test(batcher, _, __):
        await batcher.translate(["Save."], GREEDY)
        assert (await batcher.translate(["Save.", " "], GREEDY))[1] == 7
        assert (await batcher.translate([" "], GREEDY))[1] is None

    _run(test)
