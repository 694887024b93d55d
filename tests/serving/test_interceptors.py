"""Exception-to-status mapping, per-call records, bearer-token auth and API keys with quotas,
on a toy service."""

import asyncio
import dataclasses
import json
import logging
import threading
import time

import grpc
import pytest

from nmt.atomic_write import write_atomically
from serving.errors import InvalidArgument, LimitExceeded
from serving.interceptors import BearerTokenInterceptor, KeyInterceptor, RequestInterceptor
from serving.keys import KeysFile, Quota, new_key
from serving.metrics import ServingMetrics
from serving.quotas import KeyMetrics, Quotas


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
    def __init__(self, interceptors, handlers=()):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.port = self._run(self._start(interceptors, handlers))
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")

    def _run(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(30)

    async def _start(self, interceptors, handlers):
        self.server = grpc.aio.server(interceptors=interceptors)
        self.server.add_generic_rpc_handlers((*_handlers(), *handlers))
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
    give_up = time.monotonic() + 15  # the server notices the expiry later, on a busy machine
    while not _count(toy, "Slow", "DEADLINE_EXCEEDED") and time.monotonic() < give_up:
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


# --- API keys and quotas (KeyInterceptor) --------------------------------------------------


class Texts:
    """A toy request: sentences separated by `|` (what `request_chars` counts)."""

    def __init__(self, data: bytes):
        self.sentences = data.decode().split("|") if data else []


class Keyed:
    """A toy translation service whose requests carry sentences; records what it ran."""

    def __init__(self):
        self.ran: list[list[str]] = []

    async def translate(self, request, context):
        if request.sentences == ["bad"]:
            raise InvalidArgument("sentence 0 is bad")
        self.ran.append(request.sentences)
        await asyncio.sleep(0.05)  # the model call: concurrent calls overlap here
        return "|".join(request.sentences).upper().encode()

    async def stream(self, requests, context):
        async for request in requests:
            self.ran.append(request.sentences)
            yield "|".join(request.sentences).upper().encode()

    def handlers(self):
        return (grpc.method_handlers_generic_handler("test.Keyed", {
            "Translate": grpc.unary_unary_rpc_method_handler(
                self.translate, request_deserializer=Texts),
            "Stream": grpc.stream_stream_rpc_method_handler(
                self.stream, request_deserializer=Texts)}),
                grpc.method_handlers_generic_handler("grpc.reflection.v1.ServerReflection", {
                    "ServerReflectionInfo": grpc.unary_unary_rpc_method_handler(ok)}))


@pytest.fixture
def keyed(tmp_path):
    """A toy server with keys `acme` (3 requests a minute, 20 characters a day) and `other`."""
    path = tmp_path / "keys.json"
    tokens, keys = {}, []
    for name, quota in (("acme", Quota(requests_per_minute=3, chars_per_day=20)),
                        ("other", Quota())):
        tokens[name], key = new_key(name, quota)
        keys.append(key)
    write_atomically(path, KeysFile(tuple(keys)).to_json().encode())
    metrics, key_metrics = ServingMetrics(), KeyMetrics()
    quotas = Quotas(path, metrics=key_metrics)
    service = Keyed()
    server = ToyServer([RequestInterceptor(metrics), KeyInterceptor(quotas)], service.handlers())
    server.metrics, server.key_metrics, server.quotas = metrics, key_metrics, quotas
    server.tokens, server.service = tokens, service
    yield server
    server.stop()


def _with_key(token):
    return (("authorization", f"Bearer {token}"),)


def _revoke(server, name):
    keys_file = server.quotas.keys_file
    revoked = keys_file.replaced(dataclasses.replace(keys_file.named(name), revoked=True))
    write_atomically(server.quotas.path, revoked.to_json().encode())
    assert server._run(server.quotas.refresh())


@pytest.mark.parametrize("metadata, code, expected", [
    ((), grpc.StatusCode.UNAUTHENTICATED, "needs an API key"),
    ((("authorization", "Bearer nmt_0123456789ab_" + "x" * 43),),
     grpc.StatusCode.UNAUTHENTICATED, "not valid for this server"),
    ((("x-api-key", "guess"),), grpc.StatusCode.UNAUTHENTICATED, "not valid for this server"),
])
def test_calls_without_a_valid_key_are_unauthenticated_and_never_run(keyed, metadata, code,
                                                                      expected):
    for call in (lambda: keyed.channel.unary_unary("/test.Keyed/Translate")(b"hi",
                                                                           metadata=metadata),
                 lambda: list(keyed.channel.stream_stream("/test.Keyed/Stream")(
                     iter([b"a"]), metadata=metadata))):
        with pytest.raises(grpc.RpcError) as error:
            call()
        assert error.value.code() == code and expected in error.value.details()
    assert keyed.service.ran == []


def test_a_key_passes_as_bearer_or_x_api_key_and_health_and_reflection_need_none(keyed):
    token = keyed.tokens["other"]
    assert keyed.call("/test.Keyed/Translate", b"hi", metadata=_with_key(token)) == b"HI"
    assert keyed.call("/test.Keyed/Translate", b"yo", metadata=(("x-api-key", token),)) == b"YO"
    assert keyed.call("/grpc.health.v1.Health/Check") == b"ok:x"
    assert keyed.call("/grpc.reflection.v1.ServerReflection/ServerReflectionInfo") == b"ok:x"


def test_a_key_revoked_while_the_server_runs_is_permission_denied(keyed):
    token = keyed.tokens["acme"]
    assert keyed.call("/test.Keyed/Translate", b"hi", metadata=_with_key(token)) == b"HI"
    _revoke(keyed, "acme")

    with pytest.raises(grpc.RpcError) as error:
        keyed.call("/test.Keyed/Translate", b"hi", metadata=_with_key(token))
    assert error.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "'acme' was revoked" in error.value.details()


def test_over_the_rate_limit_is_resource_exhausted_with_retry_after(keyed):
    token = keyed.tokens["acme"]
    for _ in range(3):
        keyed.call("/test.Keyed/Translate", b"a", metadata=_with_key(token))

    with pytest.raises(grpc.RpcError) as error:
        keyed.call("/test.Keyed/Translate", b"a", metadata=_with_key(token))
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "at its limit of 3 requests per minute" in error.value.details()
    trailing = dict(error.value.trailing_metadata())
    assert 55 <= int(trailing["retry-after"]) <= 60 and trailing["x-request-id"]
    assert keyed.key_metrics.rejections.labels(reason="requests_per_minute")._value.get() == 1
    assert keyed.metrics.registry.get_sample_value("nmt_requests_total", {
        "method": "Translate", "code": "RESOURCE_EXHAUSTED", "protocol": "grpc"}) == 1
    assert len(keyed.service.ran) == 3


def test_concurrent_calls_of_one_key_pass_its_limit_no_more_than_one_by_one(keyed):
    translate = keyed.channel.unary_unary("/test.Keyed/Translate")
    futures = [translate.future(b"a", metadata=_with_key(keyed.tokens["acme"]))
               for _ in range(12)]

    codes = []
    for future in futures:
        try:
            future.result()
            codes.append(grpc.StatusCode.OK)
        except grpc.RpcError as error:
            codes.append(error.code())
    assert codes.count(grpc.StatusCode.OK) == 3
    assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) == 9


def test_a_request_that_would_pass_the_daily_characters_is_refused_whole(keyed):
    token = keyed.tokens["acme"]
    keyed.call("/test.Keyed/Translate", b"twelve chars", metadata=_with_key(token))

    with pytest.raises(grpc.RpcError) as error:  # 12 + 9 > 20
        keyed.call("/test.Keyed/Translate", b"four|fives", metadata=_with_key(token))
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "has 8 of its 20 characters a day left (UTC) and this request has 9" in (
        error.value.details())
    assert int(dict(error.value.trailing_metadata())["retry-after"]) >= 1
    assert keyed.service.ran == [["twelve chars"]]  # never reached the model


def test_the_characters_of_a_failed_call_are_given_back(keyed):
    with pytest.raises(grpc.RpcError) as error:
        keyed.call("/test.Keyed/Translate", b"bad", metadata=_with_key(keyed.tokens["acme"]))

    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    usage = keyed.quotas.usage().keys["acme"]
    assert (usage.requests, usage.chars) == (1, 0)


def test_a_stream_ends_at_the_message_that_passes_the_daily_characters(keyed):
    responses = keyed.channel.stream_stream("/test.Keyed/Stream")(
        iter([b"abcdefgh", b"ijklmnop", b"qrstuvwx", b"y"]), metadata=_with_key(
            keyed.tokens["acme"]))

    received = []
    with pytest.raises(grpc.RpcError) as error:
        for response in responses:
            received.append(response)
    assert received == [b"ABCDEFGH", b"IJKLMNOP"]
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "retry-after" in dict(error.value.trailing_metadata())
    assert keyed.quotas.usage().keys["acme"].chars == 16


def test_a_key_revoked_mid_stream_ends_the_stream_at_its_next_message(keyed):
    next_message = threading.Event()

    def messages():
        yield b"first"
        next_message.wait(10)
        yield b"second"

    responses = keyed.channel.stream_stream("/test.Keyed/Stream")(
        messages(), metadata=_with_key(keyed.tokens["other"]))
    assert next(responses) == b"FIRST"
    _revoke(keyed, "other")
    next_message.set()

    with pytest.raises(grpc.RpcError) as error:
        next(responses)
    assert error.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert keyed.service.ran == [["first"]]
