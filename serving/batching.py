"""Dynamic batching: sentences of concurrent requests share model calls.

Sentences to translate and (source, target) pairs to align wait in one queue.
A batch is formed when a model worker is free and a group of items of the
same kind (and, for translations, the same decoding options) reaches
`max_batch_size`, or the oldest item has waited `max_wait_ms` (by default 0:
at once, since items that arrive while the workers are busy batch together
anyway, and waiting only adds latency when the server is idle). A batch
holds the oldest item plus the others of its group closest to it in length,
so padding stays small. At
most `workers` model calls run at once, in threads, so the event loop never
blocks; while they run, the queue fills and the next batch forms at once.

Items whose request was cancelled, or whose deadline passed, are dropped
from the queue without a model call. A sentence repeated within a request is
translated once; with a `serving.cache.TranslationCache`, a sentence already
translated by the model version serving is answered from it.

In-flight sharing (single-flight): a sentence that another request already
queued or is translating, with the same decoding options under the same model
version (the cache's key), is not queued again: the request joins that item
and gets the same translation, or the same error. Each request waits on its
own future, so one that is cancelled or whose deadline passes leaves alone;
the item is dropped only when no request waits for it any more. The map of
shareable items holds only items queued or running. It does not depend on
the cache, which only helps once a translation is finished.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from nmt.types import DecodeOptions, Hypothesis, Translation
from serving.cache import TranslationCache
from serving.errors import DeadlineExpired, ModelUnavailable, QueueFull
from serving.metrics import ServingMetrics

TRANSLATE, ALIGN = "translate", "align"  # the kinds of model call

# (kind, inputs, options) -> (model version, translations); blocking, runs in a worker thread.
# TRANSLATE: inputs are sentences, options a `DecodeOptions`. ALIGN: inputs are
# (source, target) pairs, options None. One translation per input, in order.
RunBatch = Callable[[str, list, DecodeOptions | None], tuple[int, list[Translation]]]


@dataclasses.dataclass(frozen=True)
class BatchingConfig:
    """How sentences are grouped into model calls.

    Attributes:
        enabled: share model calls between requests; when False every request
            is translated on its own (still split into `max_batch_size` chunks)
            and never joins a sentence in flight for another request.
        max_batch_size: sentences (or Align pairs) per model call.
        max_wait_ms: longest a sentence waits for others to join its batch
            while a worker is free.
        max_queue: sentences and pairs allowed to wait; beyond it requests are
            refused with RESOURCE_EXHAUSTED (HTTP 429).
        workers: model calls running at once. Three suit 2 cores with one
            TensorFlow thread per operation (`nmt serve`'s default): while one
            call runs a serial stretch of small operations, the others use the
            idle core (`bench/load_test.py`).
    """

    enabled: bool = True
    max_batch_size: int = 32
    max_wait_ms: float = 0.0
    max_queue: int = 4096
    workers: int = 3

    def __post_init__(self) -> None:
        for name in ("max_batch_size", "max_queue", "workers"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer. Received: {name}={value!r}")
        if not 0 <= self.max_wait_ms <= 10_000:
            raise ValueError(
                f"max_wait_ms must be in [0, 10000]. Received: max_wait_ms={self.max_wait_ms!r}")


@dataclasses.dataclass(eq=False)
class _Waiter:
    """One request waiting for an item: its own future, so it can leave without the others."""

    future: asyncio.Future  # -> (translation, model version)
    deadline: float | None  # loop time


@dataclasses.dataclass(eq=False)
class _Item:
    payload: str | tuple[str, str]  # a sentence (TRANSLATE) or a (source, target) pair (ALIGN)
    kind: str
    options: DecodeOptions | None
    key: Hashable  # items with equal keys may share a batch
    length: int  # characters, to batch items of similar length together
    enqueued: float  # loop time
    waiters: list[_Waiter]  # the request that queued it, then those that joined it
    shared_key: Hashable | None  # its key in `Batcher._in_flight`; None: never shared

    @property
    def wanted(self) -> bool:
        """Whether some request still waits for this item."""
        return any(not waiter.future.done() for waiter in self.waiters)


def blank_translation(source: str) -> Translation:
    """The answer for a blank sentence (or pair of blanks): one empty hypothesis, no model call."""
    empty = Hypothesis(text="", target_tokens=(), score=0.0,
                       alignment=np.zeros((0, 0), np.float32), word_alignment=())
    return Translation(source=source, source_tokens=(), nbest=(empty,))


class Batcher:
    """Queues sentences and pairs and runs them through `run_batch` in batches.

    Args:
        run_batch: the blocking model call (see `RunBatch`).
        config: batching settings.
        metrics: batch size, queue depth, translated and dropped counts.
        cache: translations of sentences seen before; None translates every one.
        version: the model version serving now (None before the first load),
            which cached translations must have been made by.
    """

    def __init__(self, run_batch: RunBatch, config: BatchingConfig, metrics: ServingMetrics,
                 cache: TranslationCache | None = None,
                 version: Callable[[], int | None] = lambda: None):
        self._run_batch, self.config, self._metrics = run_batch, config, metrics
        self._cache, self._version = cache, version
        self._pending: list[_Item] = []
        # (sentence, options, version) -> its item while queued or running, for later requests.
        self._in_flight: dict[Hashable, _Item] = {}
        self._wakeup = asyncio.Event()
        self._slots = asyncio.Semaphore(config.workers)
        self._running: set[asyncio.Task] = set()
        self._executor = ThreadPoolExecutor(config.workers, thread_name_prefix="nmt-model")
        self._dispatcher: asyncio.Task | None = None

    @property
    def depth(self) -> int:
        """Sentences and pairs waiting in the queue."""
        return len(self._pending)

    @property
    def in_flight(self) -> int:
        """Sentences queued or being translated that another request may join."""
        return len(self._in_flight)

    def start(self) -> None:
        self._dispatcher = asyncio.get_running_loop().create_task(self._dispatch())

    async def close(self) -> None:
        """Stops dispatching; sentences still queued fail with UNAVAILABLE."""
        if self._dispatcher is not None:
            self._dispatcher.cancel()
            await asyncio.gather(self._dispatcher, return_exceptions=True)
        for item in self._pending:
            self._settle(item, error=ModelUnavailable("the server is shutting down; retry"))
        self._pending.clear()
        await asyncio.gather(*self._running, return_exceptions=True)
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def translate(self, sentences: Sequence[str], options: DecodeOptions,
                        deadline: float | None = None) -> tuple[list[Translation], int | None]:
        """Translates `sentences` in shared batches.

        Args:
            sentences: the request's sentences; blank ones are answered directly,
                cached ones from the cache, repeated ones once, and those another
                request already queued (same options and model version) by that
                request's translation.
            options: decoding options (only equal options share a batch).
            deadline: loop time after which queued sentences are dropped.

        Returns:
            `(translations, version)`: one translation per sentence, in order, and
            the model version that produced them (None if neither the model nor
            the cache was needed).
        """
        version = self._version()  # the cache's and the in-flight map's
        results: list[Translation | None] = [None] * len(sentences)
        positions: dict[str, list[int]] = {}  # each sentence to translate -> where it goes
        hits = 0
        for i, sentence in enumerate(sentences):
            if not sentence.strip():
                results[i] = blank_translation(sentence)
            elif (hit := self._lookup(sentence, options, version)) is not None:
                results[i], hits = hit, hits + 1
            else:
                positions.setdefault(sentence, []).append(i)
        if not positions:
            return results, version if hits else None
        todo = list(positions)
        translations, made_by = await self._submit(TRANSLATE, todo, options,
                                                   [False] * len(todo), deadline, version)
        for sentence, translation in zip(todo, translations, strict=True):
            for i in positions[sentence]:
                results[i] = translation
        return results, made_by

    def _lookup(self, sentence: str, options: DecodeOptions, version: int | None
                ) -> Translation | None:
        return None if self._cache is None else self._cache.get(sentence, options, version)

    async def align(self, sources: Sequence[str], targets: Sequence[str],
                    deadline: float | None = None) -> tuple[list[Translation], int | None]:
        """Aligns (source, target) pairs in batches shared with other `align` calls.

        Args:
            sources: the request's sources.
            targets: one target per source; a pair of two blanks is answered
                directly with an empty alignment.
            deadline: loop time after which queued pairs are dropped.

        Returns:
            `(translations, version)`: one translation per pair, in order (its
            hypothesis is the target, with alignment `(T, S)`), and the model
            version that produced them (None if no model call was needed).
        """
        pairs = list(zip(sources, targets, strict=True))
        blank = [not s.strip() and not t.strip() for s, t in pairs]
        return await self._submit(ALIGN, pairs, None, blank, deadline)

    async def _submit(self, kind: str, inputs: list, options: DecodeOptions | None,
                      blank: list[bool], deadline: float | None, version: int | None = None
                      ) -> tuple[list[Translation], int | None]:
        """Queues (or joins in flight) the inputs that are not blank and waits for all of them."""
        results: list = [blank_translation(_source(x)) if b else None
                         for x, b in zip(inputs, blank, strict=True)]
        todo = [i for i, r in enumerate(results) if r is None]
        shared_keys = [self._shared_key(kind, inputs[i], options, version) for i in todo]
        self._check_room(sum(key not in self._in_flight for key in shared_keys))
        # Without batching each request's items form a group of their own.
        batch_key = (kind, options) if self.config.enabled else (kind, options, object())
        now = asyncio.get_running_loop().time()
        futures = [self._attach(_Item(inputs[i], kind, options, batch_key, _length(inputs[i]),
                                      now, [], key), deadline)
                   for i, key in zip(todo, shared_keys, strict=True)]
        self._metrics.queue_depth.set(self.depth)
        self._wakeup.set()
        try:
            done = await asyncio.gather(*futures)
        except BaseException:
            for future in futures:
                future.cancel()  # its item leaves the queue once no request waits for it
            raise
        for i, (translation, _) in zip(todo, done, strict=True):
            results[i] = translation
        return results, max((made_by for _, made_by in done), default=None)

    def _shared_key(self, kind: str, payload, options: DecodeOptions | None,
                    version: int | None) -> Hashable | None:
        """What another request must ask for to join this input in flight; None: no sharing.

        The cache's key: what the model reads, the decoding options and the model
        version serving (so nothing queued before a reload answers a request after
        it). Align pairs are not shared, as they are not cached.
        """
        if kind != TRANSLATE or not self.config.enabled:
            return None
        return payload, options, version

    def _check_room(self, adding: int) -> None:
        if self.depth + adding > self.config.max_queue:
            raise QueueFull(
                f"the server is busy: {self.depth} sentences are queued and this request adds "
                f"{adding} (queue limit {self.config.max_queue}); retry with backoff")

    def _attach(self, item: _Item, deadline: float | None) -> asyncio.Future:
        """A future of `(translation, version)`: joins the same item in flight, or queues `item`."""
        waiter = _Waiter(asyncio.get_running_loop().create_future(), deadline)
        joined = self._in_flight.get(item.shared_key) if item.shared_key is not None else None
        if joined is not None:
            joined.waiters.append(waiter)
            self._metrics.inflight_shared.inc()
            return waiter.future
        item.waiters.append(waiter)
        self._pending.append(item)
        if item.shared_key is not None:
            self._in_flight[item.shared_key] = item
        return waiter.future

    def _settle(self, item: _Item, result: tuple | None = None,
                error: BaseException | None = None) -> None:
        """Answers every request still waiting for `item` and stops sharing it."""
        if item.shared_key is not None and self._in_flight.get(item.shared_key) is item:
            del self._in_flight[item.shared_key]
        for waiter in item.waiters:
            if waiter.future.done():  # cancelled by its request, or past its deadline
                continue
            if error is not None:
                waiter.future.set_exception(error)
            else:
                waiter.future.set_result(result)

    # --- the dispatcher ----------------------------------------------------------------------

    async def _dispatch(self) -> None:
        while True:
            await self._slots.acquire()
            try:
                batch = await self._next_batch()
            except BaseException:
                self._slots.release()
                raise
            task = asyncio.get_running_loop().create_task(self._execute(batch))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _next_batch(self) -> list[_Item]:
        while True:
            self._drop_dead()
            batch, wait = self._ready() if self._pending else (None, None)
            if batch:
                return batch
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), wait)
            except TimeoutError:
                pass

    def _ready(self) -> tuple[list[_Item] | None, float | None]:
        """A batch to run now, or None and how long to wait for one."""
        groups: dict[Hashable, list[_Item]] = defaultdict(list)
        for item in self._pending:  # oldest first, so groups are ordered by their oldest
            groups[item.key].append(item)
        for group in groups.values():
            if len(group) >= self.config.max_batch_size:
                return self._take(group, group[0]), None
        oldest = self._pending[0]
        wait = oldest.enqueued + self.config.max_wait_ms / 1000 - asyncio.get_running_loop().time()
        if wait <= 0 or not self.config.enabled:
            return self._take(groups[oldest.key], oldest), None
        return None, wait

    def _take(self, group: list[_Item], anchor: _Item) -> list[_Item]:
        """Up to `max_batch_size` items of `group`: `anchor` and those nearest it in length."""
        size = self.config.max_batch_size
        if len(group) <= size:
            chosen = group
        else:
            ordered = sorted(group, key=lambda item: item.length)
            p = ordered.index(anchor)
            starts = range(max(0, p - size + 1), min(p, len(ordered) - size) + 1)
            spread = lambda s: ordered[s + size - 1].length - ordered[s].length  # noqa: E731
            start = min(starts, key=spread)
            chosen = ordered[start:start + size]
        taken = {id(item) for item in chosen}
        self._pending = [item for item in self._pending if id(item) not in taken]
        self._metrics.queue_depth.set(self.depth)
        return chosen

    def _drop_dead(self) -> None:
        """Removes items no request waits for any more (cancelled, or past its deadline)."""
        now = asyncio.get_running_loop().time()
        alive = []
        for item in self._pending:
            expired = _expire(item, now)
            if item.wanted:
                alive.append(item)
                continue
            self._settle(item)  # out of the in-flight map: nobody waits for it
            self._metrics.dropped.labels(reason="deadline" if expired else "cancelled").inc()
        if len(alive) != len(self._pending):
            self._pending = alive
            self._metrics.queue_depth.set(self.depth)

    async def _execute(self, batch: list[_Item]) -> None:
        loop = asyncio.get_running_loop()
        inputs = [item.payload for item in batch]
        self._metrics.batch_size.observe(len(batch))
        started = time.perf_counter()
        try:
            version, translations = await loop.run_in_executor(
                self._executor, self._run_batch, batch[0].kind, inputs, batch[0].options)
        except Exception as error:
            for item in batch:
                self._settle(item, error=error)  # every request waiting for it, joined or not
            return
        finally:
            self._metrics.batch_duration.observe(time.perf_counter() - started)
            self._slots.release()
        self._count(translations)
        for item, translation in zip(batch, translations, strict=True):
            if self._cache is not None and item.kind == TRANSLATE:
                # Once per model translation, by the version that made it; kept even
                # when its requests have gone, as the model did the work.
                self._cache.put(item.payload, item.options, version, translation)
            self._settle(item, (translation, version))

    def _count(self, translations: list[Translation]) -> None:
        self._metrics.sentences.inc(len(translations))
        self._metrics.tokens.labels(side="source").inc(
            sum(len(t.source_tokens) for t in translations))
        self._metrics.tokens.labels(side="target").inc(
            sum(len(t.target_tokens) for t in translations))


def _expire(item: _Item, now: float) -> bool:
    """Fails the item's requests whose deadline passed; whether any request's had."""
    expired = False
    for waiter in item.waiters:
        if waiter.deadline is None or now < waiter.deadline:
            continue
        expired = True
        if not waiter.future.done():  # else gRPC or HTTP cancelled the call at its deadline
            waiter.future.set_exception(DeadlineExpired(
                "the deadline passed while the request waited in the queue; allow more "
                "time or send fewer sentences per request"))
    return expired


def _source(payload: str | tuple[str, str]) -> str:
    return payload if isinstance(payload, str) else payload[0]


def _length(payload: str | tuple[str, str]) -> int:
    return len(payload) if isinstance(payload, str) else len(payload[0]) + len(payload[1])
