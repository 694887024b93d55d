"""Server interceptors.

- `RequestInterceptor`: the one place where exceptions become gRPC statuses;
  also counts and times every call and logs one structured (JSON) line per
  call with its id, method, sentences, latency and status code (`serving.calls`,
  shared with the HTTP/JSON API).
- `BearerTokenInterceptor`: optional `authorization: Bearer <token>` check
  (`BearerToken`, shared with the HTTP/JSON API).
- `KeyInterceptor`: optional API keys with quotas (`serving.quotas`): the
  key of each call, and each request (each message of a stream) admitted
  against its limits, with its characters, before the servicer reads it.

Health checks pass all of them untouched, so probes work without a token and
do not flood the request metrics; `KeyInterceptor` lets reflection pass too.
The auth interceptors go after `RequestInterceptor` (which maps their errors
to statuses); all run on the server's event loop.
"""

from __future__ import annotations

import asyncio
import collections
import hmac
import inspect
import logging
from collections.abc import Callable

import grpc

from serving.calls import GRPC, REQUEST_ID_KEY, Call, finish, request_id, sentence_count
from serving.errors import ServingError, Unauthenticated, status_for
from serving.metrics import ServingMetrics
from serving.quotas import (
    API_KEY_HEADER,
    CALL_METER,
    METERED_BY_SERVICER,
    Meter,
    Quotas,
    request_chars,
)

log = logging.getLogger("nmt.serving.requests")

HEALTH_PREFIX = "/grpc.health.v1.Health/"
REFLECTION_PREFIX = "/grpc.reflection."  # v1alpha and v1: what grpcurl asks before a call
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
        # An error may carry metadata of its own (`QuotaExceeded`: retry-after).
        trailing = ((REQUEST_ID_KEY, call.id), *getattr(error, "trailing_metadata", ()))
        await context.abort(code, details, trailing_metadata=trailing)

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


class KeyInterceptor(grpc.aio.ServerInterceptor):
    """Calls need an API key of the keys file, and each request passes its quotas.

    The key comes as `authorization: Bearer <key>` or `x-api-key: <key>`
    metadata. A unary request is admitted (`Quotas.admit`, with its
    characters) when the call starts; each message of a request stream when
    the servicer reads it, so a stream whose key is revoked, or that reaches a
    limit, ends at that message with its status after the answers before it.
    The characters of a call that ends in an error are given back (of a
    stream: those of the requests not yet answered, answers coming in request
    order). Health and reflection calls need no key. An RPC of
    `serving.quotas.METERED_BY_SERVICER` (`TranslateFile`) is admitted once,
    whatever the number of its messages, and charged by the servicer through
    the call's `Meter` (`serving.quotas.CALL_METER`) once it knows the
    characters; all of them are given back if the call fails.

    Args:
        quotas: the keys and their usage.
    """

    def __init__(self, quotas: Quotas):
        self._quotas = quotas

    async def intercept_service(self, continuation, handler_call_details):
        handler = await continuation(handler_call_details)
        method = handler_call_details.method
        if handler is None or method.startswith((HEALTH_PREFIX, REFLECTION_PREFIX)):
            return handler
        metadata = {key: value for key, value in (handler_call_details.invocation_metadata or ())}
        try:
            key = self._quotas.authenticate(metadata.get("authorization"),
                                            metadata.get(API_KEY_HEADER))
        except ServingError as error:
            refusal = error  # `error` is unbound after the `except` block
            return _with_behavior(handler, lambda behavior, streaming: _refuse(refusal))
        if method.rsplit("/", 1)[-1] in METERED_BY_SERVICER:
            return _with_behavior(handler, lambda behavior, streaming: _metered_by_servicer(
                behavior, self._quotas, key))
        return _with_behavior(handler, lambda behavior, streaming: self._metered(
            behavior, key, streaming))

    def _metered(self, behavior, key, request_streaming: bool):
        quotas = self._quotas
        if request_streaming:
            return _metered_stream(behavior, quotas, key)
        if inspect.isasyncgenfunction(behavior):
            async def unary_stream(request, context):
                with quotas.admit(key, request_chars(request)):  # refunded if the call fails
                    async for response in behavior(request, context):
                        yield response

            return unary_stream

        async def unary(request, context):
            with quotas.admit(key, request_chars(request)):  # refunded if the call fails
                return await behavior(request, context)

        return unary


def _metered_stream(behavior, quotas: Quotas, key):
    """`behavior` of a request stream, each message admitted as the servicer reads it."""

    async def admitted(requests, charges: collections.deque):
        async for request in requests:
            charges.append(quotas.admit(key, request_chars(request)))
            yield request

    if inspect.isasyncgenfunction(behavior):
        async def stream_stream(requests, context):
            charges = collections.deque()  # of the requests not answered yet, oldest first
            try:
                async for response in behavior(admitted(requests, charges), context):
                    if charges:
                        charges.popleft()  # answered: its characters stay charged
                    yield response
            except BaseException:
                for charge in charges:
                    charge.refund()
                raise

        return stream_stream

    async def stream_unary(requests, context):
        charges = collections.deque()
        try:
            return await behavior(admitted(requests, charges), context)
        except BaseException:
            for charge in charges:
                charge.refund()
            raise

    return stream_unary


def _metered_by_servicer(behavior, quotas: Quotas, key):
    """`behavior` (a response stream) admitted once, its `Meter` in `CALL_METER` for the
    servicer; every charge given back if the call fails."""

    async def metered(request, context):
        with quotas.admit(key):  # one request, its characters not known yet
            meter = Meter(quotas, key)
            CALL_METER.set(meter)  # in this call's own task: seen by the servicer
            try:
                async for response in behavior(request, context):
                    yield response
            except BaseException:
                meter.refund()
                raise

    return metered


def _refuse(error: ServingError):
    async def refuse(request, context):
        raise error

    return refuse
