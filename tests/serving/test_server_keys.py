"""`nmt serve --keys`: API keys and quotas on the real server, gRPC and HTTP/JSON alike."""

import dataclasses
import http.client
import json

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from nmt.atomic_write import write_atomically
from nmt_api import protos
from serving.cli import add_serve_parser, config_from_args
from serving.keys import (
    KeysFile,
    KeysFileError,
    Quota,
    new_key,
    read_keys,
    read_usage,
    usage_path_for,
)
from serving.server import ServerConfig, TranslationServer
from serving.testing import ServerThread, free_port, scrape_metrics

pb2, pb2_grpc = protos.load()
FAST = {"beamSize": 1}


def _keys_file(path, **quotas) -> dict[str, str]:
    tokens, keys = {}, []
    for name, quota in quotas.items():
        tokens[name], key = new_key(name, quota, taken_ids={k.id for k in keys})
        keys.append(key)
    write_atomically(path, KeysFile(tuple(keys)).to_json().encode())
    return tokens


def _http(port, method, path, body=None, **headers):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        data = None if body is None else json.dumps(body).encode()
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        text = response.read().decode()
        return response.status, response.headers, (json.loads(text) if "json" in (
            response.getheader("Content-Type") or "") else text)
    finally:
        connection.close()


@pytest.fixture(scope="module")
def keyed(tiny_model_dir, tmp_path_factory):
    path = tmp_path_factory.mktemp("keys") / "keys.json"
    tokens = _keys_file(path, acme=Quota(requests_per_minute=3), small=Quota(chars_per_day=10),
                        other=Quota())
    config = ServerConfig(model_dir=tiny_model_dir, host="127.0.0.1", port=0,
                          metrics_port=free_port(), http_port=free_port(), poll_interval_s=0,
                          keys_file=path)
    running = ServerThread(config)
    running.wait_until_serving()
    running.tokens, running.path = tokens, path
    yield running
    running.stop()


def test_grpc_calls_need_a_key_and_health_does_not(keyed):
    with grpc.insecure_channel(keyed.target) as channel:
        stub = pb2_grpc.TranslationServiceStub(channel)
        request = pb2.TranslateRequest(sentences=["Hello."])
        with pytest.raises(grpc.RpcError) as error:
            stub.Translate(request)
        assert error.value.code() == grpc.StatusCode.UNAUTHENTICATED
        assert "needs an API key" in error.value.details()
        answer = stub.Translate(request, metadata=(("x-api-key", keyed.tokens["other"]),))
        assert len(answer.translations) == 1
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
        assert health.status == health_pb2.HealthCheckResponse.SERVING


def test_http_statuses_401_429_with_retry_after_and_open_probes(keyed):
    port = keyed.server.http_port
    body = {"sentences": ["Hello."], "options": FAST}
    status, headers, answer = _http(port, "POST", "/v1/translate", body)
    assert (status, answer["code"]) == (401, "UNAUTHENTICATED")
    assert headers["WWW-Authenticate"].startswith("Bearer")

    bearer = {"Authorization": f"Bearer {keyed.tokens['acme']}"}
    for _ in range(3):
        assert _http(port, "POST", "/v1/translate", body, **bearer)[0] == 200
    status, headers, answer = _http(port, "GET", "/v1/model", **bearer)
    assert (status, answer["code"]) == (429, "RESOURCE_EXHAUSTED")
    assert 55 <= int(headers["Retry-After"]) <= 60
    assert "at its limit of 3 requests per minute" in answer["message"]
    for path in ("/healthz", "/readyz", "/"):
        assert _http(port, "GET", path)[0] == 200
    metrics = scrape_metrics(keyed.server.metrics_port)
    assert metrics[("nmt_quota_rejections_total", (("reason", "requests_per_minute"),))] >= 1


def test_http_daily_characters_refuse_the_whole_request(keyed):
    port = keyed.server.http_port
    key = {"X-Api-Key": keyed.tokens["small"]}
    assert _http(port, "POST", "/v1/translate", {"sentences": ["Hi there"], "options": FAST},
                 **key)[0] == 200  # 8 of 10
    status, headers, answer = _http(port, "POST", "/v1/translate",
                                    {"sentences": ["Hi", "Yo"], "options": FAST}, **key)
    assert (status, answer["code"]) == (429, "RESOURCE_EXHAUSTED")
    assert int(headers["Retry-After"]) > 0 and "this request has 4" in answer["message"]
    status, _, answer = _http(port, "POST", "/v1/translate",
                              {"sentences": ["x" * 11], "options": FAST}, **key)
    assert status == 413 and "send it in smaller requests" in answer["message"]


def test_a_key_revoked_in_the_file_is_403_at_its_next_call(keyed):
    current = read_keys(keyed.path)
    write_atomically(keyed.path, current.replaced(dataclasses.replace(
        current.named("other"), revoked=True)).to_json().encode())
    assert keyed.run(keyed.server.quotas.refresh())  # what the poll does

    status, _, answer = _http(keyed.server.http_port, "GET", "/v1/model",
                              **{"X-Api-Key": keyed.tokens["other"]})
    assert (status, answer["code"]) == (403, "PERMISSION_DENIED")


def test_usage_is_saved_at_shutdown(tiny_model_dir, tmp_path):
    path = tmp_path / "keys.json"
    tokens = _keys_file(path, acme=Quota())
    running = ServerThread(ServerConfig(model_dir=tiny_model_dir, host="127.0.0.1", port=0,
                                        metrics_port=0, http_port=free_port(),
                                        poll_interval_s=0, keys_file=path))
    try:
        running.wait_until_serving()
        _http(running.server.http_port, "POST", "/v1/translate",
              {"sentences": ["Hello."], "options": FAST}, **{"X-Api-Key": tokens["acme"]})
    finally:
        running.stop()
    usage = read_usage(usage_path_for(path))
    assert (usage.keys["acme"].requests, usage.keys["acme"].chars) == (1, 6)


def test_a_bad_keys_file_refuses_to_start_and_keys_exclude_a_token(tmp_path):
    path = tmp_path / "keys.json"
    path.write_text('{"version": 1, "keys": [}')
    with pytest.raises(KeysFileError, match="line 1 column"):
        TranslationServer(ServerConfig(model_dir=tmp_path, keys_file=path))
    with pytest.raises(ValueError, match="use one"):
        ServerConfig(model_dir=tmp_path, keys_file=path, auth_token="s3cret")


def test_nmt_serve_keys_options(tmp_path):
    import argparse

    parser = argparse.ArgumentParser()
    add_serve_parser(parser.add_subparsers())
    args = parser.parse_args(["serve", "--model", str(tmp_path), "--keys", "k.json",
                              "--keys-usage", "u.json"])
    config = config_from_args(args)
    assert (str(config.keys_file), str(config.keys_usage_file)) == ("k.json", "u.json")
