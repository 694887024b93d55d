"""Server interceptors.

- `RequestInterceptor`: the one place where exceptions become gRPC statuses;
  also counts and times every call and logs one structured (JSON) line per
  call with its id, method, sentences, latency and status code (`serving.calls`,
  shared with the HTTP/JSON API).
- `BearerTokenInterceptor`: optional `authorization: Bearer <token>` check
  (`BearerToken`, shared with the HTTP/JSON API).

Health checks pass both untouched, so probes work without a token and do not
flood the request metrics.
"""

from __future__ import annotations

import asyncio
import hmac
import inspect
import logging
from collections.abc import Callable

import grpc

from serving.calls import GRPC, REQUEST_ID_KEY, Call, finish, request_id, sentence_count
from serving.errors import Unauthenticated, status_for
from serving.metrics import ServingMetrics

log = logging.getLogger("nmt.serving.requests")

HEALTH_PREFIX = "/grpc.health.v1.Health/"
BEARER = "Bearer "  # the scheme of the `authorization` metadata (and HTTP header)

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


def _new_call(method: str, context: grpc.aio.ServicerContext) -> Call:
    metadata = {key: value for key, value in (context.invocation_metadata() or ())}
    return Call(method, GRPC, request_id(metadata.get(REQUEST_ID_KEY)), context.peer())


class RequestInterceptor(grpc.aio.ServerInterceptor):
    """Maps exceptions to statuses, and records each call (metrics and one log line).

    Args:
        metrics: `nmt_requests_total` and `nmt_request_duration_seconds` go here
            (see `serving.calls`).
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
        call = _new_call(method, context)
        context.set_trailing_metadata(((REQUEST_ID_KEY, call.id),))
        if request_streaming:
            return call, self._counting(call, request)
        call.sentences = sentence_count(request)
        return call, request

    @staticmethod
    async def _counting(call: Call, requests):
        async for request in requests:
            call.sentences += sentence_count(request)
            yield request

    async def _fail(self, call: Call, context, error: BaseException) -> None:
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

    def _finish(self, call: Call, code: grpc.StatusCode, error: str | None = None) -> None:
        finish(self._metrics, call, code, error)


class BearerToken:
    """The check of an `authorization: Bearer <token>` value, gRPC metadata or HTTP header.

    Args:
        token: the expected token (compared in constant time).
    """

    def __init__(self, token: str):
        if not token:
            raise ValueError("token must be a non-empty string. Received: token=''")
        self._expected = f"{BEARER}{token}".encode()

    def refusal(self, given: str | None, carrier: str = "metadata") -> Unauthenticated | None:
        """None if `given` carries the token, else the error to answer with.

        Args:
            given: the `authorization` value received (None or "" when absent).
            carrier: what the caller should send it in, for the message
                ("metadata" for gRPC, "header" for HTTP).
        """
        if given and hmac.compare_digest(str(given).encode(), self._expected):
            return None
        reason = (f"missing authorization {carrier}" if not given
                  else "the bearer token is not valid")
        return Unauthenticated(
            f"{reason}; send the {carrier} `authorization: Bearer <token>` with the token the "
            "server was started with")


class BearerTokenInterceptor(grpc.aio.ServerInterceptor):
    """Refuses calls without `authorization: Bearer <token>` (health checks excepted).

    Args:
        token: the expected token (compared in constant time).
    """

    def __init__(self, token: str):
        self._check = BearerToken(token)

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        if handler is None or handler_call_details.method.startswith(HEALTH_PREFIX):
            return handler
        metadata = {key: value for key, value in (handler_call_details.invocation_metadata or ())}
        refusal = self._check.refusal(metadata.get("authorization"))
        if refusal is None:
            return handler
        return _with_behavior(handler, lambda behavior, streaming: _refuse(refusal))


def _refuse(error: Unauthenticated):
    async def refuse(request, context):
        raise error

    return refuse
