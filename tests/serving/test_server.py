"""Server life cycle: health, graceful shutdown, hot reload, TLS and auth, configuration."""

import asyncio
import json
import logging
import shutil
import threading
import time
import types

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from nmt.constants import METADATA_PATH
from nmt.types import Hypothesis, Translation
from nmt_api import protos
from nmt_api.client import TranslationClient
from nmt_api.protos import SERVICE_NAME
from serving.cache import CacheConfig
from serving.server import MAX_CONNECTION_AGE_S, ServerConfig, grpc_server_options
from serving.testing import ServerThread

pb2, pb2_grpc = protos.load()
SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def _config(model_dir, **overrides):
    return ServerConfig(**{"model_dir": model_dir, "host": "127.0.0.1", "port": 0,
                           "metrics_port": 0, "poll_interval_s": 0, **overrides})


def _status(channel, service=SERVICE_NAME):
    stub = health_pb2_grpc.HealthStub(channel)
    return stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=10).status


def _fast(sentences):
    return pb2.TranslateRequest(sentences=sentences, options=pb2.DecodeOptions(beam_size=1))


def _wait_for(predicate, timeout=60.0):
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.1)


def test_health_is_not_serving_until_warm_then_serving_then_not_serving_on_shutdown(
        tiny_model_dir, gate):
    gate.close()  # the warm-up call waits here
    running = ServerThread(_config(tiny_model_dir, grace_s=30), loader=gate.loader)
    channel = grpc.insecure_channel(running.target)
    stub = pb2_grpc.TranslationServiceStub(channel)
    try:
        assert gate.started.wait(60)  # loaded, warming up
        assert _status(channel) == NOT_SERVING and _status(channel, "") == NOT_SERVING
        for call in (lambda: stub.Translate(_fast(["Hello."]), timeout=10),
                     lambda: stub.Align(pb2.AlignRequest(sources=["Hi."], targets=["Salut."]),
                                        timeout=10),
                     lambda: stub.GetModelInfo(pb2.GetModelInfoRequest(), timeout=10)):
            with pytest.raises(grpc.RpcError) as error:
                call()
            assert error.value.code() == grpc.StatusCode.UNAVAILABLE
            assert "no model is loaded yet" in error.value.details()

        gate.open()
        running.wait_until_serving()
        assert _status(channel) == SERVING and _status(channel, "") == SERVING

        gate.close()  # hold a call in flight across the shutdown
        in_flight = stub.Translate.future(_fast(["Still translating."]), timeout=60)
        assert gate.started.wait(30)
        watch = health_pb2_grpc.HealthStub(channel).Watch(
            health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=30)
        assert next(watch).status == SERVING
        stopping = asyncio.run_coroutine_threadsafe(running.server.stop(), running.loop)
        assert next(watch).status == NOT_SERVING
        watch.cancel()
        with grpc.insecure_channel(running.target) as late_channel:
            with pytest.raises(grpc.RpcError) as error:
                pb2_grpc.TranslationServiceStub(late_channel).Translate(_fast(["Hi."]), timeout=5)
        assert error.value.code() == grpc.StatusCode.UNAVAILABLE

        gate.open()
        assert len(in_flight.result(60).translations) == 1  # finished within the grace period
        stopping.result(60)
    finally:
        gate.open()
        channel.close()
        running.stop()


def _publish_version(base, source, version, name):
    """Copies a version under a temporary name, then renames it into place (atomic)."""
    staging = base / f".staging-{version}"
    shutil.copytree(source, staging)
    metadata_path = staging / METADATA_PATH
    metadata = json.loads(metadata_path.read_text())
    metadata_path.write_text(json.dumps({**metadata, "name": name}))
    staging.rename(base / str(version))


def test_hot_reload_serves_a_good_new_version_and_keeps_it_over_a_broken_one(
        tiny_model_dir, tmp_path, caplog):
    base = tmp_path / "models"
    base.mkdir()
    _publish_version(base, tiny_model_dir / "1", 1, "tiny-v1")
    running = ServerThread(_config(base, poll_interval_s=0.2, cache=CacheConfig()))
    client = TranslationClient(running.target, timeout=60)
    registry = running.server.metrics.registry
    hits = lambda: registry.get_sample_value("nmt_cache_lookups_total", {"result": "hit"})  # noqa: E731
    try:
        running.wait_until_serving()
        assert client.model_info()["version"] == 1
        with grpc.insecure_channel(running.target) as channel:
            stub = pb2_grpc.TranslationServiceStub(channel)
            first, again = (stub.Translate(_fast(["Hello."])) for _ in range(2))
        assert again.translations[0] == first.translations[0] and hits() == 1

        _publish_version(base, tiny_model_dir / "1", 2, "tiny-v2")
        _wait_for(lambda: client.model_info()["version"] == 2)
        assert client.model_info()["name"] == "tiny-v2"
        with grpc.insecure_channel(running.target) as channel:
            response = pb2_grpc.TranslationServiceStub(channel).Translate(_fast(["Hello."]))
        assert response.model_version == 2 and hits() == 1  # version 1's answer not served

        with caplog.at_level(logging.ERROR, logger="nmt.serving.model_store"):
            (base / "3").mkdir()
            (base / "3" / "saved_model.pb").write_bytes(b"this is not a SavedModel")
            _wait_for(lambda: registry.get_sample_value(
                "nmt_model_loads_total", {"result": "failure"}) == 1)
        failures = [json.loads(r.getMessage()) for r in caplog.records
                    if "model_load_failed" in r.getMessage()]
        assert failures[0]["version"] == 3 and failures[0]["serving_version"] == 2
        time.sleep(0.5)  # a few more polls: the broken version is not retried
        assert registry.get_sample_value("nmt_model_loads_total", {"result": "failure"}) == 1
        assert client.model_info()["version"] == 2
        assert client.translate(["Good night."])[0].source == "Good night."
    finally:
        client.close()
        running.stop()


def test_tls_and_bearer_token(tiny_model_dir, tls_files):
    cert, key = tls_files
    running = ServerThread(_config(tiny_model_dir, tls_cert=cert, tls_key=key,
                                   auth_token="s3cret"))
    root = cert.read_bytes()
    try:
        running.wait_until_serving()
        with TranslationClient(running.target, root_certificates=root, token="s3cret",
                               timeout=60) as client:
            assert client.translate(["Hello."])[0].source == "Hello."
            client.wait_until_serving(timeout=10)  # health needs no token

        for token in (None, "wrong"):
            with TranslationClient(running.target, root_certificates=root, token=token,
                                   timeout=30) as client:
                with pytest.raises(grpc.RpcError) as error:
                    client.translate(["Hello."])
                assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED

        with TranslationClient(running.target, token="s3cret", timeout=5) as plaintext:
            with pytest.raises(grpc.RpcError) as error:
                plaintext.translate(["Hello."])
            assert error.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        running.stop()


def test_config_is_validated(tmp_path):
    cert = tmp_path / "cert.pem"
    cert.write_text("x")
    with pytest.raises(ValueError, match="both a certificate and a key"):
        _config(tmp_path, tls_cert=cert)
    with pytest.raises(FileNotFoundError, match="TLS file not found"):
        _config(tmp_path, tls_cert=cert, tls_key=tmp_path / "missing.pem")
    with pytest.raises(ValueError, match=r"port=70000"):
        _config(tmp_path, port=70000)
    with pytest.raises(ValueError, match="auth_token is empty"):
        _config(tmp_path, auth_token="")
    assert "s3cret" not in repr(_config(tmp_path, auth_token="s3cret"))


def test_a_port_in_use_is_an_error(tiny_model_dir):
    running = ServerThread(_config(tiny_model_dir))
    try:
        with pytest.raises(ValueError, match="is the port in use"):
            ServerThread(_config(tiny_model_dir, port=running.server.port))
    finally:
        running.stop()


def test_SERVICE_NAME_is_the_proto_service():
    assert SERVICE_NAME == "nmt.v1.TranslationService"


class HeldTranslator:
    """A translator without TensorFlow: uppercases, records each call, waits while `gate` is
    clear. `load` is the server's loader (any `<n>/saved_model.pb` loads as version n)."""

    def __init__(self):
        self.calls: list[list[str]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.info = None

    def load(self, path):
        self.info = types.SimpleNamespace(name="held", version=int(path.name), attention="dot",
                                          precision="float32", precision_reason="test")
        return self

    def translate(self, sentences, options=None):
        self.calls.append(list(sentences))
        assert self.gate.wait(60), "the test never opened the gate"
        return [Translation(source=s, source_tokens=(s,), nbest=(Hypothesis(
            text=s.upper(), target_tokens=(s.upper(),), score=-1.0,
            alignment=np.ones((1, 1), np.float32), word_alignment=((0, 0),)),))
            for s in sentences]


@pytest.fixture
def fake_model_dir(tmp_path):
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "saved_model.pb").write_bytes(b"")
    return tmp_path


def test_concurrent_identical_requests_reach_the_model_once_without_a_cache(fake_model_dir):
    model = HeldTranslator()
    running = ServerThread(_config(fake_model_dir), loader=model.load)
    registry = running.server.metrics.registry
    shared = lambda: registry.get_sample_value("nmt_inflight_shared_sentences_total")  # noqa: E731
    try:
        assert not running.server.config.cache.enabled
        running.wait_until_serving()
        warmed_up = len(model.calls)
        model.gate.clear()
        with grpc.insecure_channel(running.target) as channel:
            stub = pb2_grpc.TranslationServiceStub(channel)
            calls = [stub.Translate.future(_fast(["Same sentence."]), timeout=60)
                     for _ in range(4)]
            _wait_for(lambda: shared() == 3)
            model.gate.set()
            texts = [call.result(60).translations[0].hypotheses[0].text for call in calls]
    finally:
        model.gate.set()
        running.stop()

    assert texts == ["SAME SENTENCE."] * 4
    assert model.calls[warmed_up:] == [["Same sentence."]]


def test_connection_age_reaches_the_grpc_server_options(tmp_path):
    off = dict(grpc_server_options(_config(tmp_path)))
    aged = dict(grpc_server_options(_config(tmp_path, max_connection_age_s=60)))
    graced = dict(grpc_server_options(_config(tmp_path, max_connection_age_s=90.5,
                                              max_connection_age_grace_s=30)))

    assert "grpc.max_connection_age_ms" not in off
    assert "grpc.max_connection_age_grace_ms" not in off
    assert aged["grpc.max_connection_age_ms"] == 60_000
    assert "grpc.max_connection_age_grace_ms" not in aged  # calls in flight run to their end
    assert graced["grpc.max_connection_age_ms"] == 90_500
    assert graced["grpc.max_connection_age_grace_ms"] == 30_000
    assert off["grpc.max_receive_message_length"] == aged["grpc.max_receive_message_length"]


def test_a_server_with_connection_ageing_serves(fake_model_dir):
    config = _config(fake_model_dir, max_connection_age_s=MAX_CONNECTION_AGE_S,
                     max_connection_age_grace_s=0)
    with ServerThread(config, loader=HeldTranslator().load) as running:
        running.wait_until_serving()
        with grpc.insecure_channel(running.target) as channel:
            response = pb2_grpc.TranslationServiceStub(channel).Translate(_fast(["Hi."]),
                                                                          timeout=30)
    assert response.translations[0].hypotheses[0].text == "HI."


@pytest.mark.parametrize("age, grace, match", [
    (-1, None, r"max_connection_age_s must be 0 \(off\) or between 1 and 2147483 seconds: "
               r"pass e.g. --max-connection-age 60.*Received: max_connection_age_s=-1"),
    (0.5, None, r"Received: max_connection_age_s=0.5"),
    (MAX_CONNECTION_AGE_S + 1, None, r"Received: max_connection_age_s=2147484"),
    (60, -1, r"max_connection_age_grace_s must be between 0 and 2147483 seconds, or unset.*"
             r"Received: max_connection_age_grace_s=-1"),
    (0, 30, r"applies only to aged connections: add --max-connection-age SECONDS"),
])
def test_connection_age_is_validated(tmp_path, age, grace, match):
    with pytest.raises(ValueError, match=match):
        _config(tmp_path, max_connection_age_s=age, max_connection_age_grace_s=grace)
