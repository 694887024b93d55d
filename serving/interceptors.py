"""Server interceptors.

- `RequestInterceptor`: the one place where exceptions become gRPC statuses;
  also counts and times every call and logs one structured (JSON) line per
  call with its id, method, sentences, latency and status code.
- `BearerTokenInterceptor`: optional `authorization: Bearer <token>` check.

Health checks pass both untouched, so probes work without a token and do not
flood the request metrics.
"""

from __future__ import annotations

import asyncio
import hmac
import inspect
import json
import logging
import time
import uuid
from collections.abc import Callable

import grpc

from serving.errors import Unauthenticated, status_for
from serving.metrics import ServingMetrics

log = logging.getLogger("nmt.serving.requests")

HEALTH_PREFIX = "/grpc.health.v1.Health/"
REQUEST_ID_KEY = "x-request-id"

_HANDLER_KINDS = {  # (request_streaming, response_streaming) -> (factory, behavior field)
    (False, False): (grpc.unary_unary_rpc_method_handler, "unary_unary"),
    (False, True): (grpc.unary_stream_rpc_method_handler, "unary_stream"),
    (True, False): (grpc.stream_unary_rpc_method_handler, "stream_unary"),
    (True, True): (grpc.stream_stream_rpc_method_handler, "stream_stream"),
}


def _with_behavior(handler: grpc.RpcMethodHandler, wrap: Callable) -> grpc.RpcMethodHandler:
    """A copy of `handler` whose behavior is `wrap(behavior, request_streaming)`."""
    factory, field = _HANDLER_KINDS[(handler.request_streaming, handler.response_streaming)]
    behavior = wrap(getattr(handler, field), handler.request_streaming)
    return factory(behavior, request_deserializer=handler.request_deserializer,
                   response_serializer=handler.response_serializer)


class _Call:
    """What is logged about one RPC."""

    def __init__(self, method: str, context: grpc.aio.ServicerContext):
        metadata = {key: value for key, value in (context.invocation_metadata() or ())}
        self.id = str(metadata.get(REQUEST_ID_KEY) or uuid.uuid4().hex[:16])[:64]
        self.method = method
        self.peer = context.peer()
        self.sentences = 0
        self.started = time.perf_counter()


class RequestInterceptor(grpc.aio.ServerInterceptor):
    """Maps exceptions to statuses, and records each call (metrics and one log line).

    Args:
        metrics: `nmt_requests_total` and `nmt_request_duration_seconds` go here.
    """

    def __init__(self, metrics: ServingMetrics):
        self._metrics = metrics

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        if handler is None or handler_call_details.method.startswith(HEALTH_PREFIX):
            return handler
        method = handler_call_details.method.rsplit("/", 1)[-1]
        return _with_behavior(handler, lambda behavior, streaming: self._observed(
            behavior, method, streaming))

    def _observed(self, behavior, method: str, request_streaming: bool):
        if inspect.isasyncgenfunction(behavior):
            async def streaming(request, context):
                call, request = self._begin(method, context, request, request_streaming)
                try:
                    async for response in behavior(request, context):
                        yield response
                except BaseException as error:
                    await self._fail(call, context, error)
                self._finish(call, grpc.StatusCode.OK)

            return streaming

        async def unary(request, context):
            call, request = self._begin(method, context, request, request_streaming)
            try:
                response = await behavior(request, context)
            except BaseException as error:
                await self._fail(call, context, error)
            self._finish(call, grpc.StatusCode.OK)
            return response

        return unary

    def _begin(self, method: str, context, request, request_streaming: bool):
        """`(call, request)`: a request stream is wrapped to count its sentences."""
        call = _Call(method, context)
        context.set_trailing_metadata(((REQUEST_ID_KEY, call.id),))
        if request_streaming:
            return call, self._counting(call, request)
        call.sentences = _sentence_count(request)
        return call, request

    @staticmethod
    async def _counting(call: _Call, requests):
        async for request in requests:
            call.sentences += _sentence_count(request)
            yield request

    async def _fail(self, call: _Call, context, error: BaseException) -> None:
        """Records the failed call, then re-raises or aborts with the mapped status."""
        if isinstance(error, asyncio.CancelledError | GeneratorExit):
            remaining = context.time_remaining()
            expired = remaining is not None and remaining <= 0
            self._finish(call, grpc.StatusCode.DEADLINE_EXCEEDED if expired
                         else grpc.StatusCode.CANCELLED)
            raise error
        if isinstance(error, grpc.aio.AbortError):  # a handler aborted on its own
            self._finish(call, context.code() or grpc.StatusCode.UNKNOWN, context.details())
            raise error
        code, details = status_for(error)
        if code == grpc.StatusCode.INTERNAL:
            log.error("unexpected error in %s (id %s)", call.method, call.id, exc_info=error)
        self._finish(call, code, details)
        await context.abort(code, details, trailing_metadata=((REQUEST_ID_KEY, call.id),))

    def _finish(self, call: _Call, code: grpc.StatusCode, error: str | None = None) -> None:
        latency = time.perf_counter() - call.started
        self._metrics.requests.labels(method=call.method, code=code.name).inc()
        self._metrics.request_duration.labels(method=call.method).observe(latency)
        record = {"event": "rpc", "id": call.id, "method": call.method,
                  "sentences": call.sentences, "latency_ms": round(latency * 1000, 1),
                  "code": code.name, "peer": call.peer}
        if error:
            record["error"] = error
        level = logging.ERROR if code == grpc.StatusCode.INTERNAL else logging.INFO
        log.log(level, json.dumps(record, ensure_ascii=False))


def _sentence_count(request) -> int:
    """Sentences of a `TranslateRequest`, pairs of an `AlignRequest`, else 0."""
    return len(getattr(request, "sentences", None) or getattr(request, "sources", ()))


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):
    """Refuses calls without `authorization: Bearer <token>` (health checks excepted).

    Args:
        token: the expected token (compared in constant time).
    """

    def __init__(self, token: str):
        if not token:
            raise ValueError("token must be a non-empty string. Received: token=''")
        self._expected = f"Bearer {token}".encode()

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        if handler is None or handler_call_details.method.startswith(HEALTH_PREFIX):
            return handler
        metadata = {key: value for key, value in (handler_call_details.invocation_metadata or ())}
        given = metadata.get("authorization", "")
        if hmac.compare_digest(str(given).encode(), self._expected):
            return handler
        reason = ("missing authorization metadata" if not given
                  else "the bearer token is not valid")
        return _with_behavior(handler, lambda behavior, streaming: _refuse(reason))


def _refuse(reason: str):
    async def refuse(request, context):
        raise Unauthenticated(
            f"{reason}; send the metadata `authorization: Bearer <token>` with the token the "
            "server was started with")

    return refuse
