"""One record per call, gRPC or HTTP alike: its request id, its metrics and its log line.

Each answered call counts once in `nmt_requests_total{method,code,protocol}`,
is timed in `nmt_request_duration_seconds{method,protocol}` and is logged as
one JSON line on the `nmt.serving.requests` logger:

    {"event": "rpc", "protocol": "http", "id": "…", "method": "Translate",
     "sentences": 2, "latency_ms": 41.3, "code": "OK", "peer": "127.0.0.1", "http_status": 200}
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import uuid

import grpc

from serving.metrics import ServingMetrics

log = logging.getLogger("nmt.serving.requests")

GRPC, HTTP = "grpc", "http"  # the `protocol` label's values
# The caller's request id: gRPC metadata key, and HTTP header (`X-Request-Id`).
REQUEST_ID_KEY = "x-request-id"
MAX_REQUEST_ID_CHARS = 64
# HTTP: bytes of the request line and of each header line, and headers per request
# (aiohttp's defaults, named so that errors and the OpenAPI description can say them).
MAX_HEADER_BYTES = 8190
MAX_HEADERS = 128


def request_id(given: str | None) -> str:
    """The caller's request id (cut to `MAX_REQUEST_ID_CHARS`), or a new random one."""
    return str(given or uuid.uuid4().hex[:16])[:MAX_REQUEST_ID_CHARS]


@dataclasses.dataclass
class Call:
    """What is recorded about one call.

    Attributes:
        method: the RPC's name (`Translate`, `Align`, ...), whatever the protocol.
        protocol: `GRPC` or `HTTP`.
        id: the request id (see `request_id`).
        peer: the caller's address.
        sentences: sentences (or Align pairs) received.
        started: `time.perf_counter()` when the call arrived.
    """

    method: str
    protocol: str
    id: str
    peer: str
    sentences: int = 0
    started: float = dataclasses.field(default_factory=time.perf_counter)


def finish(metrics: ServingMetrics, call: Call, code: grpc.StatusCode, error: str | None = None,
           **extra) -> None:
    """Counts, times and logs the answered call (errors INTERNAL at ERROR level).

    Args:
        metrics: where the request counter and latency histogram live.
        call: the call answered.
        code: its status code (HTTP calls too: the code of their JSON error).
        error: the details sent with an error status.
        **extra: more fields for the log line (e.g. `http_status`).
    """
    latency = time.perf_counter() - call.started
    metrics.requests.labels(method=call.method, code=code.name, protocol=call.protocol).inc()
    metrics.request_duration.labels(method=call.method, protocol=call.protocol).observe(latency)
    record = {"event": "rpc", "protocol": call.protocol, "id": call.id, "method": call.method,
              "sentences": call.sentences, "latency_ms": round(latency * 1000, 1),
              "code": code.name, "peer": call.peer, **extra}
    if error:
        record["error"] = error
    level = logging.ERROR if code == grpc.StatusCode.INTERNAL else logging.INFO
    log.log(level, json.dumps(record, ensure_ascii=False))


def sentence_count(request) -> int:
    """Sentences of a `TranslateRequest`, pairs of an `AlignRequest`, else 0."""
    return len(getattr(request, "sentences", None) or getattr(request, "sources", None) or ())
