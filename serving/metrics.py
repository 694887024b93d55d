"""Prometheus metrics of the translation service (`nmt_*`, base units).

All metrics live on the `CollectorRegistry` given to `ServingMetrics`, so
tests (and several servers in one process) each use their own registry.
"""

from __future__ import annotations

import threading

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info
from prometheus_client.exposition import start_http_server

BATCH_SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


class ServingMetrics:
    """The service's metrics on one registry.

    Args:
        registry: where to register them; a fresh `CollectorRegistry` if None.
    """

    def __init__(self, registry: CollectorRegistry | None = None):
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "nmt_requests",
            "Calls answered, by method, gRPC status code and protocol (grpc, http).",
            ["method", "code", "protocol"], registry=r)
        self.request_duration = Histogram(
            "nmt_request_duration_seconds",
            "Wall time from receiving a call to answering it, by method and protocol.",
            ["method", "protocol"], registry=r)
        self.batch_size = Histogram(
            "nmt_batch_size", "Sentences per model call.", buckets=BATCH_SIZE_BUCKETS,
            registry=r)
        self.batch_duration = Histogram(
            "nmt_batch_duration_seconds", "Wall time of one model call.", registry=r)
        self.queue_depth = Gauge(
            "nmt_queue_depth", "Sentences waiting for a model call.", registry=r)
        self.sentences = Counter(
            "nmt_translated_sentences", "Sentences translated.", registry=r)
        self.tokens = Counter(
            "nmt_translated_tokens", "Subword tokens translated, by side (source or target).",
            ["side"], registry=r)
        self.dropped = Counter(
            "nmt_dropped_sentences",
            "Queued sentences dropped before translation, by reason (deadline, cancelled).",
            ["reason"], registry=r)
        self.model_loads = Counter(
            "nmt_model_loads", "Model version loads, by result (success, failure).",
            ["result"], registry=r)
        self.glossary_loads = Counter(
            "nmt_glossary_loads", "Named glossary file loads (`--glossaries`), by result "
            "(success, failure).", ["result"], registry=r)
        self.model = Info(
            "nmt_model", "The model version being served, and the precision path it "
            "translates on (float32 or bfloat16 matrix products).", registry=r)
        self.cache_lookups = Counter(
            "nmt_cache_lookups", "Sentences looked up in the translation cache, by result "
            "(hit, miss).", ["result"], registry=r)
        self.cache_evictions = Counter(
            "nmt_cache_evictions", "Translations evicted from the cache to stay within its "
            "entry and byte limits.", registry=r)
        self.cache_entries = Gauge(
            "nmt_cache_entries", "Sentence translations in the cache.", registry=r)
        self.cache_bytes = Gauge(
            "nmt_cache_bytes", "Estimated memory the cached translations hold.", registry=r)
        self.inflight_shared = Counter(
            "nmt_inflight_shared_sentences", "Sentences answered by the translation of the same "
            "sentence (same options and model version) already queued or running for another "
            "request, without a model call of their own.", registry=r)
        for result in ("hit", "miss"):
            self.cache_lookups.labels(result=result)
        for result in ("success", "failure"):
            self.model_loads.labels(result=result)  # expose zeros before the first load
            self.glossary_loads.labels(result=result)
        for reason in ("deadline", "cancelled"):
            self.dropped.labels(reason=reason)
        for side in ("source", "target"):
            self.tokens.labels(side=side)


class MetricsHTTPServer:
    """Serves a registry's metrics over HTTP (`/metrics`) in a background thread.

    Args:
        registry: the registry to expose.
        host: address to bind.
        port: port to bind; 0 picks a free one (see `port` after `start`).
    """

    def __init__(self, registry: CollectorRegistry, host: str, port: int):
        self._registry, self._host, self._requested_port = registry, host, port
        self._httpd = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_port if self._httpd else self._requested_port

    def start(self) -> None:
        self._httpd, self._thread = start_http_server(
            self._requested_port, addr=self._host, registry=self._registry)

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
