"""HTTP/JSON API: every endpoint, every error status, auth, bodies, batching shared with gRPC."""

import asyncio
import http.client
import json
import logging
import socket
import threading
import time

import grpc
import pytest
from google.protobuf import json_format

from nmt_api import protos
from serving.batching import BatchingConfig
from serving.server import ServerConfig
from serving.testing import ServerThread, free_port, scrape_metrics
from serving.validation import Limits

pb2, pb2_grpc = protos.load()
LIMITS = Limits(max_sentences=8, max_chars=60, max_message_bytes=1024, max_beam_size=6)
# One model call at a time: the tests fill the queue behind a call the gate holds.
QUEUE_BEHIND_ONE_CALL = BatchingConfig(max_batch_size=8, max_wait_ms=2, max_queue=12, workers=1)
FAST = {"beamSize": 2}
SOURCES = ["The cat is black.", "How are you today?"]
TARGETS = ["Le chat est noir.", "Comment allez-vous aujourd'hui ?"]


def _config(model_dir, **overrides):
    return ServerConfig(**{
        "model_dir": model_dir, "host": "127.0.0.1", "port": 0, "metrics_port": 0,
        "http_port": free_port(), "poll_interval_s": 0, "limits": LIMITS, **overrides})


@pytest.fixture(scope="module")
def server(tiny_model_dir, module_gate):
    running = ServerThread(_config(
        tiny_model_dir, metrics_port=free_port(),
        batching=QUEUE_BEHIND_ONE_CALL),
        loader=module_gate.loader)
    running.wait_until_serving()
    yield running
    module_gate.open()
    running.stop()


@pytest.fixture(scope="module")
def stub(server):
    with grpc.insecure_channel(server.target) as channel:
        yield pb2_grpc.TranslationServiceStub(channel)


class Answer:
    def __init__(self, response: http.client.HTTPResponse):
        self.status, self.headers = response.status, response.headers
        self.text = response.read().decode()
        self.json = json.loads(self.text) if "json" in (response.getheader(
            "Content-Type") or "") else None


def _http(port, method, path, body=None, headers=None, timeout=60) -> Answer:
    """One request; `body` is JSON-encoded unless it is bytes."""
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        return Answer(connection.getresponse())
    finally:
        connection.close()


def _post(server, path, body, **headers) -> Answer:
    return _http(server.server.http_port, "POST", path, body, headers)


def _get(server, path, **headers) -> Answer:
    return _http(server.server.http_port, "GET", path, None, headers)


def _as_json(message) -> dict:
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


# --- endpoints -------------------------------------------------------------------------------


def test_translate_answers_the_json_mapping_of_the_grpc_answer(server, stub):
    answer = _post(server, "/v1/translate", {"sentences": SOURCES, "options": FAST,
                                             "requestId": "web-1"})

    grpc_answer = stub.Translate(pb2.TranslateRequest(
        sentences=SOURCES, options=pb2.DecodeOptions(beam_size=2), request_id="web-1"))
    assert answer.status == 200 and answer.headers["Content-Type"].startswith("application/json")
    assert answer.json == _as_json(grpc_answer)
    best = answer.json["translations"][0]["hypotheses"][0]
    assert set(best) == {"text", "targetTokens", "score", "alignment", "wordAlignment",
                         "attention", "confidence", "wordScores", "pieceScores", "appliedTerms"}
    assert best["appliedTerms"] == [], "no glossary, no term"
    assert best["confidence"] < 0 and len(best["pieceScores"]) == len(best["targetTokens"])
    assert len(best["wordScores"]) == len(best["text"].split())
    assert len(best["alignment"]) == len(best["targetTokens"])
    assert best["attention"] == []  # only with "withAttention": true
    assert answer.json["modelVersion"] == "1"  # int64: a string in proto3 JSON


def test_proto_field_names_are_accepted_too(server):
    answer = _post(server, "/v1/translate", {"sentences": ["Hello."],
                                             "options": {"beam_size": 3, "n_best": 2},
                                             "with_alignment": False})

    [translation] = answer.json["translations"]
    assert answer.status == 200 and len(translation["hypotheses"]) == 2
    assert translation["hypotheses"][0]["alignment"] == []


def test_keep_placeholders_is_a_json_field_on_by_default(server, stub):
    sentences = ["Set %s on %d objects."]
    kept = _post(server, "/v1/translate", {"sentences": sentences, "options": FAST})
    off = _post(server, "/v1/translate", {"sentences": sentences, "options": FAST,
                                          "keepPlaceholders": False})

    assert kept.json == _as_json(stub.Translate(pb2.TranslateRequest(
        sentences=sentences, options=pb2.DecodeOptions(beam_size=2))))
    text = kept.json["translations"][0]["hypotheses"][0]["text"]
    assert text.count("%s") == 1 and text.count("%d") == 1 and text.index("%s") < text.index("%d")
    assert off.json == _as_json(stub.Translate(pb2.TranslateRequest(
        sentences=sentences, options=pb2.DecodeOptions(beam_size=2), keep_placeholders=False)))


def test_align_answers_the_json_mapping_of_the_grpc_answer(server, stub):
    answer = _post(server, "/v1/align", {"sources": SOURCES, "targets": TARGETS})

    grpc_answer = stub.Align(pb2.AlignRequest(sources=SOURCES, targets=TARGETS))
    assert answer.status == 200 and answer.json == _as_json(grpc_answer)
    assert [a["hypotheses"][0]["text"] for a in answer.json["alignments"]] == TARGETS


def test_align_with_a_format_answers_the_json_mapping_of_the_grpc_answer(server, stub):
    sources, targets = ["Click <b>Save</b> now.", "<br>"], ["Cliquez sur Enregistrer.", ""]

    answer = _post(server, "/v1/align", {"sources": sources, "targets": targets,
                                         "format": "TEXT_FORMAT_HTML"})

    grpc_answer = stub.Align(pb2.AlignRequest(sources=sources, targets=targets,
                                              format=pb2.TEXT_FORMAT_HTML))
    assert answer.status == 200 and answer.json == _as_json(grpc_answer)
    assert answer.json["alignments"] == []
    tagged, tags_only = answer.json["documents"]
    assert tagged["text"].count("<b>") == 1 and tagged["text"].count("</b>") == 1
    assert tagged["sentences"][0]["sentence"] == "Click Save now."
    assert tags_only == {"text": "<br>", "sentences": [], "charAlignment": "",
                         "appliedTerms": []}


def test_align_with_malformed_markup_is_400_naming_the_source(server):
    answer = _post(server, "/v1/align", {"sources": ["Hi <b>there."], "targets": ["Salut."],
                                         "format": "TEXT_FORMAT_HTML"})

    assert answer.status == 400 and answer.json["code"] == "INVALID_ARGUMENT"
    assert "source 0 is not valid HTML: <b> is never closed at character 3" in (
        answer.json["message"])


PAGE = "<p>Click <b>Save</b> now.</p><p>Thank you.</p>"


def test_documents_answer_the_json_mapping_of_the_grpc_answer(server, stub):
    answer = _post(server, "/v1/translate", {"sentences": [PAGE, ""], "format": "TEXT_FORMAT_HTML",
                                             "options": FAST, "withAlignment": False})

    grpc_answer = stub.Translate(pb2.TranslateRequest(
        sentences=[PAGE, ""], format=pb2.TEXT_FORMAT_HTML, options=pb2.DecodeOptions(beam_size=2),
        with_alignment=False))
    assert answer.status == 200 and answer.json == _as_json(grpc_answer)
    assert answer.json["translations"] == []
    page, blank = answer.json["documents"]
    assert blank == {"text": "", "sentences": [], "charAlignment": "", "appliedTerms": []}
    assert page["text"].count("<b>") == 1 and page["text"].startswith("<p>")
    assert [s["sentence"] for s in page["sentences"]] == ["Click Save now.", "Thank you."]
    first = page["sentences"][0]
    assert PAGE[first["sourceStart"]:first["sourceEnd"]] == "Click <b>Save</b> now."
    assert set(first["translation"]["hypotheses"][0]) >= {"text", "wordAlignment", "score"}


@pytest.mark.parametrize("body, expected", [
    ({"sentences": ["Fine.", "Hi <b>there."], "format": "TEXT_FORMAT_HTML"},
     "document 1 is not valid HTML: <b> is never closed at character 3 (line 1, column 4)"),
    ({"sentences": ["<a>x"], "format": "TEXT_FORMAT_XML"}, "document 0 is not valid XML"),
    ({"sentences": ["Hi."], "format": "HTML"}, "Invalid enum value HTML"),
])
def test_malformed_documents_are_400_naming_the_position(server, body, expected):
    answer = _post(server, "/v1/translate", body)

    assert answer.status == 400 and answer.json["code"] == "INVALID_ARGUMENT"
    assert expected in answer.json["message"]


def test_model_info(server, stub):
    answer = _get(server, "/v1/model")

    assert answer.status == 200
    assert answer.json == _as_json(stub.GetModelInfo(pb2.GetModelInfoRequest()))
    assert answer.json["name"] == "tiny" and answer.json["version"] == "1"
    assert (answer.json["precision"], answer.json["precisions"]) == ("float32", ["float32"])
    assert answer.json["limits"] == {"maxSentences": 8, "maxChars": 60,
                                     "maxMessageBytes": "1024", "maxBeamSize": 6,
                                     "maxGlossaryEntries": 1000, "maxFileBytes": "10485760",
                                     "maxFileSentences": 10000}


def test_probes(server):
    assert (_get(server, "/healthz").status, _get(server, "/healthz").json) == (
        200, {"status": "UP"})
    assert (_get(server, "/readyz").status, _get(server, "/readyz").json) == (
        200, {"status": "SERVING"})


def test_openapi_describes_every_endpoint_with_the_servers_limits(server):
    from openapi_spec_validator import validate

    answer = _get(server, "/v1/openapi.json")

    document = answer.json
    validate(document)
    assert {path: set(ops) for path, ops in document["paths"].items()} == {
        "/v1/translate": {"post"}, "/v1/align": {"post"}, "/v1/model": {"get"},
        "/v1/glossaries": {"get"}, "/healthz": {"get"}, "/readyz": {"get"},
        "/v1/files:translate": {"post"}}
    translate = document["paths"]["/v1/translate"]["post"]
    assert {"200", "400", "413", "429", "431", "503", "504"} <= set(translate["responses"])
    assert "security" not in translate  # this server has no token
    schemas = document["components"]["schemas"]
    sentences = schemas["TranslateRequest"]["properties"]["sentences"]
    assert sentences["maxItems"] == 8 and sentences["items"]["maxLength"] == 60
    assert schemas["DecodeOptions"]["properties"]["beamSize"]["maximum"] == 6
    assert set(schemas["Hypothesis"]["properties"]) == {
        "text", "targetTokens", "score", "alignment", "wordAlignment", "attention",
        "confidence", "wordScores", "pieceScores", "appliedTerms"}
    assert "mean log-probability" in schemas["Hypothesis"]["properties"]["confidence"][
        "description"]
    assert set(schemas["WordLinks"]["properties"]) == {"rule", "threshold"}
    assert "Pharaoh" in schemas["Hypothesis"]["properties"]["wordAlignment"]["description"]
    text_format = schemas["TranslateRequest"]["properties"]["format"]
    assert text_format["enum"] == ["TEXT_FORMAT_UNSPECIFIED", "TEXT_FORMAT_TEXT",
                                   "TEXT_FORMAT_HTML", "TEXT_FORMAT_XML"]
    assert "documents" in text_format["description"]
    documents = schemas["TranslateResponse"]["properties"]["documents"]
    assert documents["items"] == {"$ref": "#/components/schemas/DocumentTranslation"}
    align_format = schemas["AlignRequest"]["properties"]["format"]
    assert align_format["enum"] == text_format["enum"] and "tag" in align_format["description"]
    projected = schemas["AlignResponse"]["properties"]["documents"]
    assert projected["items"] == {"$ref": "#/components/schemas/DocumentTranslation"}
    assert set(schemas["DocumentTranslation"]["properties"]) == {
        "text", "sentences", "charAlignment", "appliedTerms"}
    assert set(schemas["DocumentSentence"]["properties"]) == {
        "sourceStart", "sourceEnd", "targetStart", "targetEnd", "sentence", "translation"}
    assert "end excluded" in schemas["DocumentSentence"]["properties"]["sourceEnd"].get(
        "description", "") + schemas["DocumentSentence"]["properties"]["sourceStart"].get(
        "description", "")


def test_the_page_and_its_files_are_served_with_a_strict_policy(server):
    page = _get(server, "/")

    assert page.status == 200 and page.headers["Content-Type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["Content-Security-Policy"]
    assert page.headers["X-Content-Type-Options"] == "nosniff"
    for asset in ("/static/page.js", "/static/page.css"):
        assert asset in page.text and _get(server, asset).status == 200
    assert "http://" not in page.text and "https://" not in page.text  # nothing from elsewhere


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize("body, expected", [
    (b"", "the body is empty"),
    (b"{\"sentences\": [", "the body is not JSON: Expecting value at line 1 column 16"),
    (b"\xff\xfe{}", "the body is not valid UTF-8 (byte 0xff at offset 0)"),
    ([["Hello."]], "the body must be a JSON object (a TranslateRequest). Received: a JSON list"),
    ({"sentence": ["Hello."]}, 'no field named "sentence"'),
    ({"sentences": "Hello."}, "Failed to parse sentences field"),
    ({"sentences": ["a"], "options": {"beamSize": "x"}}, "Failed to parse beamSize field"),
    ({"sentences": ["a"], "options": {"beamSize": 0}}, "beam_size must be between 1 and 64"),
    ({"sentences": ["a"], "withAlignment": "yes"}, "withAlignment"),
])
def test_malformed_bodies_are_400_naming_what_is_wrong(server, body, expected):
    answer = _post(server, "/v1/translate", body)

    assert answer.status == 400 and answer.json["code"] == "INVALID_ARGUMENT"
    assert expected in answer.json["message"]


def test_align_pairs_that_do_not_pair_up_are_400(server):
    answer = _post(server, "/v1/align", {"sources": ["a", "b"], "targets": ["A"]})

    assert answer.status == 400 and "Received: 2 sources and 1 targets" in answer.json["message"]


@pytest.mark.parametrize("path, body, expected", [
    ("/v1/translate", {"sentences": ["a"] * 9}, "at most 8 per request. Received: 9"),
    ("/v1/translate", {"sentences": ["x" * 61]}, "at most 60 characters. Received: 61"),
    ("/v1/translate", {"sentences": ["a"], "options": {"beamSize": 7}},
     "limit of 6. Received: beam_size=7"),
    ("/v1/align", {"sources": ["a"], "targets": ["x" * 61]}, "target 0 is too long"),
    ("/v1/translate", {"sentences": ["😀" * 50] * 8},
     "larger than this server's limit of 1024 bytes"),
])
def test_requests_over_a_limit_are_413_and_say_the_limit(server, path, body, expected):
    answer = _post(server, path, body)

    assert answer.status == 413 and answer.json["code"] == "RESOURCE_EXHAUSTED"
    assert expected in answer.json["message"]


def _raw_exchange(port, head: bytes, body: bytes = b"", timeout=10) -> bytes:
    """Sends `head` (and `body`), returns what the server says until it closes or pauses."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head + body)
        received = b""
        while b"\r\n\r\n" not in received or not received.rstrip().endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        return received


def test_an_oversized_body_is_refused_from_its_length_before_it_is_sent(server):
    port = server.server.http_port
    head = (b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: 50000000\r\nExpect: 100-continue\r\n\r\n")

    reply = _raw_exchange(port, head)  # the 50 MB never follow

    assert reply.startswith(b"HTTP/1.1 413") and b"100 Continue" not in reply
    assert b"Content-Length 50000000" in reply and b"Connection: close" in reply


def test_a_chunked_body_is_refused_once_it_passes_the_limit(server):
    port = server.server.http_port
    head = (b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"[" * 600
    body = b"%x\r\n%s\r\n" % (len(chunk), chunk) * 2  # 1200 bytes so far, no last chunk

    reply = _raw_exchange(port, head, body)

    assert reply.startswith(b"HTTP/1.1 413") and b"more than 1024 bytes" in reply


def _json_reply(reply: bytes) -> tuple[int, dict, bytes]:
    """`(status, JSON body, head)` of a raw HTTP answer."""
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body), head


def test_a_huge_value_is_not_echoed_whole_in_the_error(server):
    answer = _post(server, "/v1/translate", {"sentences": "x" * 900})

    assert answer.status == 400 and "Failed to parse sentences field" in answer.json["message"]
    assert len(answer.json["message"]) < 400 and "characters)" in answer.json["message"]


def test_nesting_past_the_decoders_depth_is_400_not_500(server):
    answer = _post(server, "/v1/translate", b"[" * 1020)  # the decoder recurses before failing

    assert answer.status == 400 and answer.json["code"] == "INVALID_ARGUMENT"
    assert "more than 100 deep (level 101 opens at character 100)" in answer.json["message"]


@pytest.mark.parametrize("body, position", [
    (b"[" * 100_000 + b"]" * 100_000, 100),
    (b'{"a":' * 100_000 + b"1" + b"}" * 100_000, 500),
    (b'{"sentences": ["[{"], "x": ' + b"[" * 100_000, 126),  # brackets in strings do not count
])
def test_100000_nested_arrays_or_objects_are_400_naming_where(tiny_model_dir, body, position):
    running = ServerThread(_config(tiny_model_dir, limits=Limits(max_message_bytes=1 << 20)))
    try:
        running.wait_until_serving()
        answer = _post(running, "/v1/translate", body)
        after = _post(running, "/v1/translate", {"sentences": ["Hi."], "options": FAST})
    finally:
        running.stop()

    assert answer.status == 400 and answer.json["code"] == "INVALID_ARGUMENT"
    assert (f"nests arrays and objects more than 100 deep (level 101 opens at character "
            f"{position})") in answer.json["message"]
    assert '"sentences"' in answer.json["message"]  # an example of what to send
    assert after.status == 200  # the server is fine


def test_a_header_over_the_limit_is_431_as_json(server, caplog):
    port = server.server.http_port
    head = (b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nX-Request-Id: " + b"r" * 10_000
            + b"\r\nContent-Length: 2\r\n\r\n{}")

    with caplog.at_level(logging.INFO, logger="nmt.serving.requests"):
        status, error, reply_head = _json_reply(_raw_exchange(port, head))

    assert status == 431 and error["code"] == "RESOURCE_EXHAUSTED"
    assert "limit of 8190 bytes" in error["message"] and "X-Request-Id" in error["message"]
    assert b"application/json" in reply_head and b"nosniff" in reply_head
    assert any('"bad_http"' in r.getMessage() for r in caplog.records)


def test_a_long_request_id_under_the_header_limit_is_cut_and_echoed(server):
    answer = _post(server, "/v1/translate", {"sentences": ["Hi."], "options": FAST},
                   **{"X-Request-Id": "r" * 5000})

    assert answer.status == 200 and answer.headers["X-Request-Id"] == "r" * 64


@pytest.mark.parametrize("head, status, expected", [
    (b"POST /v1/translate HTTP/1.1\r\nHost: x\r\n" + b"X-A: b\r\n" * 200
     + b"Content-Length: 2\r\n\r\n{}", 431, "limit of 128; send fewer headers"),
    (b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
     400, "not valid HTTP/1.1: Invalid character in chunk size"),
    (b"GARBAGE\r\n\r\n", 400, "not valid HTTP/1.1"),
])
def test_http_that_cannot_be_parsed_is_a_json_error(server, head, status, expected):
    answer_status, error, _ = _json_reply(_raw_exchange(server.server.http_port, head))

    assert answer_status == status and expected in error["message"]
    assert error["code"] == ("RESOURCE_EXHAUSTED" if status == 431 else "INVALID_ARGUMENT")


def test_unknown_paths_and_methods_are_json_errors(server):
    missing = _get(server, "/v1/translat")
    wrong = _get(server, "/v1/translate")

    assert missing.status == 404 and missing.json["code"] == "NOT_FOUND"
    assert "/v1/openapi.json" in missing.json["message"]
    assert wrong.status == 405 and wrong.json["code"] == "UNIMPLEMENTED"
    assert wrong.headers["Allow"] == "POST" and "use POST" in wrong.json["message"]


def test_a_full_queue_is_429_with_retry_after(server, stub, module_gate):
    gate = module_gate
    gate.close()
    try:
        blocker = stub.Translate.future(pb2.TranslateRequest(
            sentences=["Hold the model."], options=pb2.DecodeOptions(beam_size=1)))
        assert gate.started.wait(30)
        queued = stub.Translate.future(pb2.TranslateRequest(
            sentences=[f"q{i}" for i in range(8)], options=pb2.DecodeOptions(beam_size=1)))
        _wait_for(lambda: server.server._batcher.depth == 8)
        answer = _post(server, "/v1/translate", {"sentences": ["a", "b", "c", "d", "e"]})
    finally:
        gate.open()

    assert answer.status == 429 and answer.json["code"] == "RESOURCE_EXHAUSTED"
    assert "queue limit 12" in answer.json["message"] and answer.headers["Retry-After"] == "1"
    assert len(blocker.result(60).translations) == 1 and len(queued.result(60).translations) == 8


def test_a_request_past_its_timeout_is_504_and_leaves_the_queue(server, stub, module_gate):
    gate = module_gate
    gate.close()
    try:
        blocker = stub.Translate.future(pb2.TranslateRequest(
            sentences=["Hold the model."], options=pb2.DecodeOptions(beam_size=1)))
        assert gate.started.wait(30)
        answer = _post(server, "/v1/translate", {"sentences": ["http deadline probe"]},
                       **{"X-Request-Timeout": "0.3"})
    finally:
        gate.open()

    assert answer.status == 504 and answer.json["code"] == "DEADLINE_EXCEEDED"
    assert "X-Request-Timeout" in answer.json["message"]
    assert len(blocker.result(60).translations) == 1
    _post(server, "/v1/translate", {"sentences": ["after"], "options": {"beamSize": 1}})
    assert not any("http deadline probe" in call for call in gate.calls)


def test_a_client_that_goes_away_leaves_the_queue(server, stub, module_gate, caplog):
    gate, registry = module_gate, server.server.metrics.registry
    dropped = registry.get_sample_value("nmt_dropped_sentences_total", {"reason": "cancelled"})
    gate.close()
    try:
        blocker = stub.Translate.future(pb2.TranslateRequest(
            sentences=["Hold the model."], options=pb2.DecodeOptions(beam_size=1)))
        assert gate.started.wait(30)
        body = json.dumps({"sentences": ["abandoned by its client"]}).encode()
        with caplog.at_level(logging.INFO, logger="nmt.serving.requests"):
            with socket.create_connection(("127.0.0.1", server.server.http_port)) as sock:
                sock.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Length: %d"
                             b"\r\n\r\n%s" % (len(body), body))
                _wait_for(lambda: server.server._batcher.depth == 1)
            _wait_for(lambda: any('"CANCELLED"' in r.getMessage() for r in caplog.records))
    finally:
        gate.open()

    assert len(blocker.result(60).translations) == 1
    _post(server, "/v1/translate", {"sentences": ["after"], "options": {"beamSize": 1}})
    assert not any("abandoned by its client" in call for call in gate.calls)
    assert registry.get_sample_value(
        "nmt_dropped_sentences_total", {"reason": "cancelled"}) == dropped + 1


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "inf"])
def test_a_bad_timeout_header_is_400(server, value):
    answer = _post(server, "/v1/translate", {"sentences": ["a"]}, **{"X-Request-Timeout": value})

    assert answer.status == 400 and "X-Request-Timeout header" in answer.json["message"]


# --- ids, logs, metrics, batching ------------------------------------------------------------


def test_request_id_is_echoed_logged_and_counted_as_http(server, caplog):
    metrics = server.server.metrics.registry
    labels = {"method": "Translate", "code": "OK", "protocol": "http"}
    before = metrics.get_sample_value("nmt_requests_total", labels) or 0
    errors = {**labels, "code": "INVALID_ARGUMENT"}
    errors_before = metrics.get_sample_value("nmt_requests_total", errors) or 0

    with caplog.at_level(logging.INFO, logger="nmt.serving.requests"):
        answer = _post(server, "/v1/translate", {"sentences": SOURCES, "options": FAST},
                       **{"X-Request-Id": "web-42"})
        _post(server, "/v1/translate", b"nope")

    assert answer.status == 200 and answer.headers["X-Request-Id"] == "web-42"
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name.endswith("requests")]
    ok, bad = lines
    assert (ok["protocol"], ok["id"], ok["method"], ok["code"], ok["http_status"],
            ok["sentences"]) == ("http", "web-42", "Translate", "OK", 200, 2)
    assert (bad["code"], bad["http_status"]) == ("INVALID_ARGUMENT", 400) and bad["error"]
    assert len(bad["id"]) == 16  # one was made up
    assert metrics.get_sample_value("nmt_requests_total", labels) == before + 1
    assert metrics.get_sample_value("nmt_requests_total", errors) == errors_before + 1
    scraped = scrape_metrics(server.server.metrics_port)
    assert scraped[("nmt_request_duration_seconds_count",
                    (("method", "Translate"), ("protocol", "http")))] >= 1


def test_concurrent_http_and_grpc_requests_share_model_calls(server, stub, module_gate):
    gate, batcher = module_gate, server.server._batcher
    gate.close()
    answers = {}
    try:
        blocker = stub.Translate.future(pb2.TranslateRequest(
            sentences=["Hold the model."], options=pb2.DecodeOptions(beam_size=2)))
        assert gate.started.wait(30)
        first = len(gate.calls)
        threads = [threading.Thread(target=lambda i=i: answers.update({i: _post(
            server, "/v1/translate", {"sentences": [f"From the web {i}."], "options": FAST})}))
            for i in range(2)]
        for thread in threads:
            thread.start()
        from_grpc = stub.Translate.future(pb2.TranslateRequest(
            sentences=["From gRPC."], options=pb2.DecodeOptions(beam_size=2)))
        http_align = threading.Thread(target=lambda: answers.update(align=_post(
            server, "/v1/align", {"sources": SOURCES[:1], "targets": TARGETS[:1]})))
        http_align.start()
        grpc_align = stub.Align.future(pb2.AlignRequest(sources=SOURCES[1:],
                                                         targets=TARGETS[1:]))
        _wait_for(lambda: batcher.depth == 5)
    finally:
        gate.open()
    for thread in [*threads, http_align]:
        thread.join(60)

    assert len(blocker.result(60).translations) == 1
    assert from_grpc.result(60).translations[0].hypotheses[0].text is not None
    assert all(answers[i].status == 200 for i in range(2)) and answers["align"].status == 200
    assert len(grpc_align.result(60).alignments) == 1
    later = sorted(sorted(call) for call in gate.calls[first:])
    assert later == [sorted(["From the web 0.", "From the web 1.", "From gRPC."]),
                     sorted(SOURCES)]


# --- life cycle and auth (servers of their own) ----------------------------------------------


def _wait_for(predicate, timeout=30.0):
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def test_not_ready_until_the_model_serves_then_draining_on_shutdown(tiny_model_dir, gate):
    gate.close()  # the warm-up waits here
    running = ServerThread(_config(tiny_model_dir, grace_s=30), loader=gate.loader)
    try:
        assert gate.started.wait(60)
        assert _get(running, "/healthz").status == 200
        not_ready = _get(running, "/readyz")
        assert (not_ready.status, not_ready.json) == (503, {"status": "NOT_SERVING"})
        for answer in (_post(running, "/v1/translate", {"sentences": ["Hi."]}),
                       _get(running, "/v1/model")):
            assert answer.status == 503 and answer.json["code"] == "UNAVAILABLE"
            assert "no model is loaded yet" in answer.json["message"]
            assert answer.headers["Retry-After"] == "1"

        gate.open()
        running.wait_until_serving()
        assert _get(running, "/readyz").status == 200

        gate.close()  # hold a request in flight across the shutdown
        in_flight = {}
        thread = threading.Thread(target=lambda: in_flight.update(answer=_post(
            running, "/v1/translate", {"sentences": ["Still translating."],
                                       "options": {"beamSize": 1}})))
        thread.start()
        assert gate.started.wait(30)
        stopping = asyncio.run_coroutine_threadsafe(running.server.stop(), running.loop)
        _wait_for(lambda: not running.server._serving.is_set())
        with pytest.raises(OSError):  # no longer listening
            _get(running, "/readyz")
        gate.open()
        thread.join(60)
        assert in_flight["answer"].status == 200  # finished within the grace period
        assert len(in_flight["answer"].json["translations"]) == 1
        stopping.result(60)
    finally:
        gate.open()
        running.stop()


def test_bearer_token(tiny_model_dir):
    running = ServerThread(_config(tiny_model_dir, auth_token="s3cret"))
    try:
        running.wait_until_serving()
        body = {"sentences": ["Hello."], "options": {"beamSize": 1}}
        good = _post(running, "/v1/translate", body, Authorization="Bearer s3cret")
        assert good.status == 200 and len(good.json["translations"]) == 1
        for headers, reason in (({}, "missing authorization header"),
                                ({"Authorization": "Bearer wrong"}, "not valid"),
                                ({"Authorization": "s3cret"}, "not valid")):
            for answer in (_post(running, "/v1/translate", body, **headers),
                           _post(running, "/v1/align", b"not even JSON", **headers),
                           _get(running, "/v1/model", **headers)):
                assert answer.status == 401 and answer.json["code"] == "UNAUTHENTICATED"
                assert reason in answer.json["message"]
                assert "Authorization: Bearer <token>" in answer.json["message"].replace(
                    "authorization", "Authorization")
                assert answer.headers["WWW-Authenticate"].startswith("Bearer")
        for path in ("/healthz", "/readyz", "/", "/static/page.js"):  # no token needed
            assert _get(running, path).status == 200
        document = _get(running, "/v1/openapi.json").json
        assert document["paths"]["/v1/translate"]["post"]["security"] == [{"bearer": []}]
        assert "401" in document["paths"]["/v1/model"]["get"]["responses"]
    finally:
        running.stop()


def test_http_is_off_with_port_0_and_a_port_in_use_is_an_error(tiny_model_dir):
    off = ServerThread(_config(tiny_model_dir, http_port=0))
    try:
        assert off.server.http_port is None
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            with pytest.raises(ValueError, match="--http-port"):
                ServerThread(_config(tiny_model_dir, http_port=taken.getsockname()[1]))
    finally:
        off.stop()


def test_config_validates_the_http_port(tmp_path):
    with pytest.raises(ValueError, match=r"http_port=70000"):
        ServerConfig(model_dir=tmp_path, http_port=70000)
