"""Exception-to-status mapping, per-call records and bearer-token auth, on a toy service."""

import asyncio
import json
import logging
import threading

import grpc
import pytest

from serving.errors import InvalidArgument, LimitExceeded
from serving.interceptors import BearerTokenInterceptor, RequestInterceptor
from serving.metrics import ServingMetrics


async def ok(request, context):
    return b"ok:" + request


async def over_limit(request, context):
    raise LimitExceeded("at most 3 sentences. Received: 4")


async def bad_value(request, context):
    raise ValueError("beam_size must be positive. Received: beam_size=0")


async def crash(request, context):
    raise RuntimeError("/secret/internal/path exploded")


async def slow(request, context):
    await asyncio.sleep(10)
    return b"late"


async def stream(requests, context):
    async for request in requests:
        if request == b"bad":
            raise InvalidArgument("request 2 of the stream: bad")
        yield request.upper()


def _handlers():
    unary = {name: grpc.unary_unary_rpc_method_handler(fn) for name, fn in [
        ("Ok", ok), ("OverLimit", over_limit), ("BadValue", bad_value), ("Crash", crash),
        ("Slow", slow)]}
    unary["Stream"] = grpc.stream_stream_rpc_method_handler(stream)
    health = {"Check": grpc.unary_unary_rpc_method_handler(ok)}
    return (grpc.method_handlers_generic_handler("test.Toy", unary),
            grpc.method_handlers_generic_handler("grpc.health.v1.Health", health))


class ToyServer:
    def __init__(self, interceptors):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.port = self._run(self._start(interceptors))
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")

    def _run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    async def _start(self, interceptors):
        self.server = grpc.aio.server(interceptors=interceptors)
        self.server.add_generic_rpc_handlers(_handlers())
        port = self.server.add_insecure_port("127.0.0.1:0")
        await self.server.start()
        return port

    def call(self, method, request=b"x", **kwargs):
        return self.channel.unary_unary(method)(request, **kwargs)

    def stop(self):
        self.channel.close()
        self._run(self.server.stop(0))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def toy():
    metrics = ServingMetrics()
    server = ToyServer([RequestInterceptor(metrics)])
    server.metrics = metrics
    yield server
    server.stop()


@pytest.fixture(scope="module")
def guarded():
    server = ToyServer([RequestInterceptor(ServingMetrics()), BearerTokenInterceptor("s3cret")])
    yield server
    server.stop()


def _count(toy, method, code):
    return toy.metrics.registry.get_sample_value(
        "nmt_requests_total", {"method": method, "code": code, "protocol": "grpc"}) or 0


@pytest.mark.parametrize("method, code, details", [
    ("OverLimit", grpc.StatusCode.RESOURCE_EXHAUSTED, "at most 3 sentences. Received: 4"),
    ("BadValue", grpc.StatusCode.INVALID_ARGUMENT, "beam_size must be positive"),
])
def test_errors_become_their_status_with_their_message(toy, method, code, details):
    before = _count(toy, method, code.name)
    with pytest.raises(grpc.RpcError) as error:
        toy.call(f"/test.Toy/{method}")

    assert error.value.code() == code and details in error.value.details()
    assert _count(toy, method, code.name) == before + 1


def test_unexpected_errors_are_internal_logged_with_traceback_and_not_leaked(toy, caplog):
    with caplog.at_level(logging.INFO, logger="nmt.serving.requests"):
        with pytest.raises(grpc.RpcError) as error:
            toy.call("/test.Toy/Crash")

    assert error.value.code() == grpc.StatusCode.INTERNAL
    assert "secret" not in error.value.details()
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert tracebacks and "exploded" in str(tracebacks[0].exc_info[1])


def test_one_structured_line_per_call_with_the_callers_request_id(toy, caplog):
    with caplog.at_level(logging.INFO, logger="nmt.serving.requests"):
        response, call = toy.channel.unary_unary("/test.Toy/Ok").with_call(
            b"hi", metadata=(("x-request-id", "req-42"),))

    assert response == b"ok:hi"
    assert ("x-request-id", "req-42") in tuple(call.trailing_metadata())
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name.endswith("requests")]
    assert len(lines) == 1
    line = lines[0]
    assert line["id"] == "req-42" and line["method"] == "Ok" and line["code"] == "OK"
    assert line["sentences"] == 0 and line["latency_ms"] >= 0 and "peer" in line


def test_a_deadline_is_recorded_as_deadline_exceeded(toy):
    with pytest.raises(grpc.RpcError) as error:
        toy.call("/test.Toy/Slow", timeout=0.2)

    assert error.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    for _ in range(50):  # the server side notices the expiry a moment later
        if _count(toy, "Slow", "DEADLINE_EXCEEDED"):
            break
        threading.Event().wait(0.05)
    assert _count(toy, "Slow", "DEADLINE_EXCEEDED") == 1


def test_a_stream_answers_until_the_bad_request_then_ends_with_its_status(toy):
    responses = toy.channel.stream_stream("/test.Toy/Stream")(iter([b"a", b"b", b"bad", b"c"]))

    received = []
    with pytest.raises(grpc.RpcError) as error:
        for response in responses:
            received.append(response)

    assert received == [b"A", b"B"]
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "request 2 of the stream" in error.value.details()


def test_health_checks_are_not_counted(toy):
    toy.call("/grpc.health.v1.Health/Check")

    assert _count(toy, "Check", "OK") == 0


@pytest.mark.parametrize("metadata, reason", [
    ((), "missing authorization metadata"),
    ((("authorization", "Bearer wrong"),), "the bearer token is not valid"),
    ((("authorization", "s3cret"),), "the bearer token is not valid"),
])
def test_calls_without_the_right_token_are_unauthenticated(guarded, metadata, reason):
    for call in (lambda: guarded.call("/test.Toy/Ok", metadata=metadata),
                 lambda: list(guarded.channel.stream_stream("/test.Toy/Stream")(
                     iter([b"a"]), metadata=metadata))):
        with pytest.raises(grpc.RpcError) as error:
            call()
        assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert reason in error.value.details() and "Bearer <token>" in error.value.details()


def test_the_right_token_passes_and_health_needs_none(guarded):
    assert guarded.call("/test.Toy/Ok", metadata=(("authorization", "Bearer s3cret"),)) == b"ok:x"
    assert guarded.call("/grpc.health.v1.Health/Check") == b"ok:x"


def test_an_empty_token_is_refused():
    with pytest.raises(ValueError, match="non-empty"):
        BearerTokenInterceptor("")
