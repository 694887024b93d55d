"""A bounded cache of sentence translations, so repeated sentences skip the model.

UI strings, documents with repeated headings and retried requests send the
same sentence again and again. The batcher looks each sentence up here
before queueing it:

    cache = TranslationCache(CacheConfig(max_entries=50_000, max_mb=128), metrics)
    hit = cache.get(sentence, options, version)      # a Translation, or None
    cache.put(sentence, options, version, translation)

The key is everything that changes the output: the sentence exactly as it
goes to the model (after document splitting, placeholder and glossary
protection), the decoding options, and the model version. A new version
empties the cache at its first lookup, so nothing translated by the old
model is served after a reload. Entries are evicted least recently used
first, when either the entry limit or the byte limit (an estimate of the
arrays and strings each translation holds) is passed.

Everything runs on the server's event loop (the batcher's `translate` and the
completion of its futures), so there is no lock. Arrays of a cached
translation are made read-only: the same objects answer many requests.
"""

from __future__ import annotations

import dataclasses
import sys
from collections import OrderedDict
from collections.abc import Hashable

import numpy as np

from nmt.types import DecodeOptions, Hypothesis, Translation
from serving.metrics import ServingMetrics

DEFAULT_MAX_ENTRIES = 50_000
DEFAULT_MAX_MB = 128
# Python objects around the arrays and strings of one hypothesis (dataclass, tuples, floats).
_HYPOTHESIS_OVERHEAD = 400


@dataclasses.dataclass(frozen=True)
class CacheConfig:
    """How big the translation cache may grow.

    Attributes:
        max_entries: sentences kept; 0 turns the cache off.
        max_mb: megabytes (10**6 bytes, estimated) the kept translations may
            hold; 0 turns the cache off.
    """

    max_entries: int = DEFAULT_MAX_ENTRIES
    max_mb: float = DEFAULT_MAX_MB

    def __post_init__(self) -> None:
        if not isinstance(self.max_entries, int) or self.max_entries < 0:
            raise ValueError("max_entries must be an integer >= 0 (0 turns the cache off). "
                             f"Received: max_entries={self.max_entries!r}")
        if not 0 <= self.max_mb <= 1_000_000:
            raise ValueError("max_mb must be in [0, 1000000] (0 turns the cache off). "
                             f"Received: max_mb={self.max_mb!r}")

    @property
    def enabled(self) -> bool:
        return self.max_entries > 0 and self.max_mb > 0

    @property
    def max_bytes(self) -> int:
        return int(self.max_mb * 1_000_000)


def translation_bytes(translation: Translation) -> int:
    """An estimate of the memory one translation holds: its strings, arrays and objects."""
    total = _strings_bytes((translation.source, *translation.source_tokens))
    for hypothesis in translation.nbest:
        total += _HYPOTHESIS_OVERHEAD + _strings_bytes((hypothesis.text,
                                                        *hypothesis.target_tokens))
        total += 16 * len(hypothesis.word_alignment)  # one small tuple per link, ints interned
        total += sum(a.nbytes for a in _arrays(hypothesis))
    return total


def _strings_bytes(strings) -> int:
    return sum(sys.getsizeof(s) for s in strings)


def _arrays(hypothesis: Hypothesis) -> list[np.ndarray]:
    values = (hypothesis.alignment, hypothesis.attention, hypothesis.word_matrix,
              hypothesis.word_scores, hypothesis.piece_scores)
    return [v for v in values if isinstance(v, np.ndarray)]


class TranslationCache:
    """Least-recently-used sentence translations of one model version.

    Args:
        config: the entry and byte limits.
        metrics: lookups by result, evictions, entries and bytes.
    """

    def __init__(self, config: CacheConfig, metrics: ServingMetrics):
        self.config = config
        self._metrics = metrics
        self._entries: OrderedDict[Hashable, tuple[Translation, int]] = OrderedDict()
        self._bytes = 0
        self._version: int | None = None

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        """The estimated bytes of the translations kept."""
        return self._bytes

    def get(self, sentence: str, options: DecodeOptions, version: int | None
            ) -> Translation | None:
        """The translation kept for `sentence` under `options` by model `version`, or None.

        A `version` other than the one the entries were made by empties the cache.
        """
        if not self.config.enabled:
            return None
        self._start_version(version)
        key = (sentence, options)
        entry = self._entries.get(key)
        if entry is None:
            self._metrics.cache_lookups.labels(result="miss").inc()
            return None
        self._entries.move_to_end(key)
        self._metrics.cache_lookups.labels(result="hit").inc()
        return entry[0]

    def put(self, sentence: str, options: DecodeOptions, version: int | None,
            translation: Translation) -> None:
        """Keeps `translation` of `sentence`, evicting the least recently used past a limit.

        A translation bigger than the whole byte limit is not kept; one made by
        another version than the cache's (a reload while it was translated) is
        not kept either.
        """
        if not self.config.enabled or version is None:
            return
        if self._version is not None and version != self._version:
            return
        self._start_version(version)
        size = translation_bytes(translation)
        if size > self.config.max_bytes:
            return
        key = (sentence, options)
        old = self._entries.pop(key, None)
        if old is not None:
            self._bytes -= old[1]
        _freeze(translation)
        self._entries[key] = (translation, size)
        self._bytes += size
        while len(self._entries) > self.config.max_entries or self._bytes > self.config.max_bytes:
            _, (_, evicted) = self._entries.popitem(last=False)
            self._bytes -= evicted
            self._metrics.cache_evictions.inc()
        self._publish()

    def clear(self) -> None:
        self._entries.clear()
        self._bytes = 0
        self._publish()

    def _start_version(self, version: int | None) -> None:
        if version is not None and version != self._version:
            self._version = version
            self.clear()

    def _publish(self) -> None:
        self._metrics.cache_entries.set(len(self._entries))
        self._metrics.cache_bytes.set(self._bytes)


def _freeze(translation: Translation) -> None:
    """Makes the arrays read-only: one cached object answers many requests."""
    for hypothesis in translation.nbest:
        for array in _arrays(hypothesis):
            array.flags.writeable = False
