"""Metric names follow Prometheus conventions and are served over HTTP."""

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from serving.metrics import MetricsHTTPServer, ServingMetrics
from serving.testing import scrape_metrics

EXPECTED = {
    "nmt_requests": "counter",
    "nmt_request_duration_seconds": "histogram",
    "nmt_batch_size": "histogram",
    "nmt_batch_duration_seconds": "histogram",
    "nmt_queue_depth": "gauge",
    "nmt_translated_sentences": "counter",
    "nmt_translated_tokens": "counter",
    "nmt_dropped_sentences": "counter",
    "nmt_model_loads": "counter",
    "nmt_glossary_loads": "counter",
    "nmt_model": "info",
    "nmt_cache_lookups": "counter",
    "nmt_cache_evictions": "counter",
    "nmt_cache_entries": "gauge",
    "nmt_cache_bytes": "gauge",
    "nmt_inflight_shared_sentences": "counter",
}


def test_names_and_types():
    metrics = ServingMetrics()

    assert {f.name: f.type for f in metrics.registry.collect()} == EXPECTED
    metrics.requests.labels(method="Translate", code="OK", protocol="grpc").inc()
    metrics.request_duration.labels(method="Translate", protocol="grpc").observe(0.01)
    text = generate_latest(metrics.registry).decode()
    names = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    assert {"nmt_requests_total", "nmt_request_duration_seconds_bucket", "nmt_model_info",
            "nmt_translated_tokens_total", "nmt_queue_depth"} <= names
    assert 'nmt_model_loads_total{result="failure"} 0.0' in text


def test_registries_are_independent():
    first, second = ServingMetrics(), ServingMetrics()
    first.sentences.inc(3)

    assert second.registry.get_sample_value("nmt_translated_sentences_total") == 0
    assert first.registry.get_sample_value("nmt_translated_sentences_total") == 3


def test_http_endpoint_serves_the_registry():
    metrics = ServingMetrics()
    metrics.requests.labels(method="Translate", code="OK", protocol="http").inc(2)
    server = MetricsHTTPServer(metrics.registry, "127.0.0.1", 0)
    server.start()
    try:
        samples = scrape_metrics(server.port)
    finally:
        server.stop()

    assert samples[("nmt_requests_total",
                    (("code", "OK"), ("method", "Translate"), ("protocol", "http")))] == 2
