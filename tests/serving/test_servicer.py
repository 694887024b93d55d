"""Every RPC, error code and limit against an in-process server with the tiny model."""

import asyncio
import json
import logging
import shutil
import time

import grpc
import numpy as np
import pytest

from nmt.constants import METADATA_PATH
from nmt.types import DecodeOptions, format_char_links, parse_char_links
from nmt_api import convert, protos
from nmt_api.client import TranslationClient
from serving.batching import BatchingConfig
from serving.metrics import ServingMetrics
from serving.model_store import ModelStore
from serving.server import ServerConfig
from serving.servicer import TranslationServicer
from serving.testing import ServerThread, free_port, scrape_metrics
from serving.validation import Limits

pb2, pb2_grpc = protos.load()
LIMITS = Limits(max_sentences=8, max_chars=60, max_message_bytes=1024, max_beam_size=6)
# One model call at a time: the tests fill the queue behind a call the gate holds.
QUEUE_BEHIND_ONE_CALL = BatchingConfig(max_batch_size=8, max_wait_ms=2, max_queue=12, workers=1)
FAST = DecodeOptions(beam_size=2)
TRANSLATE = "/nmt.v1.TranslationService/Translate"
ALIGN = "/nmt.v1.TranslationService/Align"
SOURCES = ["The cat is black.", "How are you today?", "Hello."]
TARGETS = ["Le chat est noir.", "Comment allez-vous aujourd'hui ?", "Bonjour."]


@pytest.fixture(scope="module")
def server(tiny_model_dir, module_gate):
    config = ServerConfig(
        model_dir=tiny_model_dir, host="127.0.0.1", port=0, metrics_port=free_port(),
        batching=QUEUE_BEHIND_ONE_CALL, limits=LIMITS,
        poll_interval_s=0)
    running = ServerThread(config, loader=module_gate.loader)
    running.wait_until_serving()
    yield running
    module_gate.open()
    running.stop()


@pytest.fixture(scope="module")
def client(server):
    with TranslationClient(server.target, timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def stub(server):
    with grpc.insecure_channel(server.target) as channel:
        yield pb2_grpc.TranslationServiceStub(channel)


def _request(sentences, **options):
    return pb2.TranslateRequest(sentences=sentences, options=pb2.DecodeOptions(**options))


def _code(call) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as error:
        call()
    return error.value.code(), error.value.details()


def test_translate_matches_the_translator(server, client):
    sentences = ["Hello.", "How are you today?"]
    direct = server.server.store.translator.inner.translate(sentences, FAST)

    served = client.translate(sentences, FAST)

    for got, want in zip(served, direct, strict=True):
        assert got.source == want.source and got.source_tokens == want.source_tokens
        assert got.text == want.text and got.target_tokens == want.target_tokens
        assert got.word_alignment == want.word_alignment
        assert got.score == pytest.approx(want.score, rel=1e-6)
        assert got.alignment.shape == want.alignment.shape
        np.testing.assert_allclose(got.alignment, want.alignment, rtol=1e-6)
        assert got.confidence == pytest.approx(want.confidence, rel=1e-6)
        np.testing.assert_allclose(got.best.word_scores, want.best.word_scores, rtol=1e-6)
        np.testing.assert_allclose(got.best.piece_scores, want.best.piece_scores, rtol=1e-6)
        assert len(got.best.piece_scores) == len(got.target_tokens)


def test_response_fields(stub):
    request = _request(["Hello.", "Good night."], beam_size=3, n_best=2)
    request.request_id = "job-7"

    response = stub.Translate(request)

    assert response.request_id == "job-7" and response.model_version == 1
    assert len(response.translations) == 2
    for translation in response.translations:
        scores = [h.score for h in translation.hypotheses]
        assert len(scores) == 2 and scores == sorted(scores, reverse=True)
        best = translation.hypotheses[0]
        assert len(best.alignment) == len(best.target_tokens)
        assert all(len(row.weights) == len(translation.source_tokens) for row in best.alignment)
        np.testing.assert_allclose([sum(r.weights) for r in best.alignment], 1.0, rtol=1e-4)


def test_without_alignment_no_matrix_is_sent(stub):
    request = _request(["Hello."], beam_size=1)
    request.with_alignment = False

    hypothesis = stub.Translate(request).translations[0].hypotheses[0]

    assert len(hypothesis.alignment) == 0 and hypothesis.word_alignment


def test_an_empty_request_gets_an_empty_answer(stub):
    assert len(stub.Translate(pb2.TranslateRequest()).translations) == 0


def test_awkward_text_is_answered(client):
    sentences = ["", "   ", "a\x00b\x07c", "\x1b[31mred\x1b[0m", "\u200b«déjà»\u202e", "😀 " * 5]

    translations = client.translate(sentences, FAST)

    assert len(translations) == len(sentences)
    assert translations[0].text == "" and translations[1].text == ""
    assert all(t.source == s for t, s in zip(translations, sentences, strict=True))


def test_invalid_utf8_is_invalid_argument(server):
    data = pb2.TranslateRequest(sentences=["ok", "ab"]).SerializeToString().replace(
        b"ab", b"\xc3(")
    with grpc.insecure_channel(server.target) as channel:
        raw = channel.unary_unary(TRANSLATE, response_deserializer=pb2.TranslateResponse.FromString)
        code, details = _code(lambda: raw(data, timeout=30))

    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert "sentence 1 is not valid UTF-8" in details


@pytest.mark.parametrize("options, field", [
    ({"beam_size": 0}, "beam_size"), ({"beam_size": 2, "n_best": 3}, "n_best"),
    ({"length_penalty": 9.0}, "length_penalty"),
])
def test_invalid_options_are_invalid_argument(stub, options, field):
    code, details = _code(lambda: stub.Translate(_request(["a"], **options)))

    assert code == grpc.StatusCode.INVALID_ARGUMENT and field in details and "Received" in details


@pytest.mark.parametrize("sentences, options, expected", [
    (["a"] * 9, {}, "at most 8 per request. Received: 9"),
    (["x" * 61], {}, "at most 60 characters. Received: 61"),
    (["a"], {"beam_size": 7}, "limit of 6. Received: beam_size=7"),
    (["😀" * 60] * 8, {}, "1024"),  # 1.9 kB: over the message size limit
])
def test_limits_are_resource_exhausted_and_say_the_limit(stub, sentences, options, expected):
    code, details = _code(lambda: stub.Translate(_request(sentences, **options)))

    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert expected in details


def test_a_full_queue_is_resource_exhausted(server, stub, module_gate):
    gate = module_gate
    gate.close()
    try:
        blocker = stub.Translate.future(_request(["Hold the model."], beam_size=1))
        assert gate.started.wait(30)
        queued = stub.Translate.future(_request([f"q{i}" for i in range(8)], beam_size=1))
        time.sleep(0.2)
        code, details = _code(lambda: stub.Translate(_request(["one", "too", "many", "x", "y"],
                                                              beam_size=1)))
    finally:
        gate.open()

    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "queue limit 12" in details
    assert len(blocker.result(60).translations) == 1 and len(queued.result(60).translations) == 8


def test_a_request_past_its_deadline_is_dropped_from_the_queue(server, stub, module_gate):
    gate = module_gate
    gate.close()
    try:
        blocker = stub.Translate.future(_request(["Hold the model."], beam_size=1))
        assert gate.started.wait(30)
        code, _ = _code(lambda: stub.Translate(_request(["deadline probe"]), timeout=0.3))
    finally:
        gate.open()

    assert code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert len(blocker.result(60).translations) == 1
    stub.Translate(_request(["after"], beam_size=1))  # the queue moved past the probe
    assert not any("deadline probe" in call for call in gate.calls)
    dropped = server.server.metrics.registry.get_sample_value(
        "nmt_dropped_sentences_total", {"reason": "deadline"})
    assert dropped == 1


def test_stream_answers_each_request_in_order(client):
    batches = [["Hello."], [], ["Good night.", "Thank you.", ""], ["Yes."]]

    results = list(client.translate_stream(iter(batches), FAST))

    assert [[t.source for t in result] for result in results] == batches


def test_stream_responses_name_their_request(stub):
    requests = [_request(["a"], beam_size=1), _request(["b", "c"], beam_size=1)]
    requests[1].request_id = "second"

    responses = list(stub.TranslateStream(iter(requests)))

    assert [(r.request_index, r.request_id, len(r.translations)) for r in responses] == [
        (0, "", 1), (1, "second", 2)]


def test_a_bad_request_ends_the_stream_with_its_status_after_the_earlier_answers(client):
    results = []
    with pytest.raises(grpc.RpcError) as error:
        for result in client.translate_stream([["Hello."], ["a"] * 9, ["never"]], FAST):
            results.append(result)

    assert len(results) == 1
    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "request 1 of the stream: too many sentences" in error.value.details()


def test_model_info(client):
    info = client.model_info()

    assert info["name"] == "tiny" and info["version"] == 1
    assert info["attribution"] == "test fixture"
    assert info["source_vocab_size"] == 200 and info["target_vocab_size"] == 200
    assert info["metadata"]["model_config"]["hidden_dim"] == 32
    assert info["limits"] == {"max_sentences": 8, "max_chars": 60, "max_message_bytes": 1024,
                              "max_beam_size": 6, "max_glossary_entries": 1000,
                              "max_file_bytes": 10 * 1024 * 1024, "max_file_sentences": 10_000}
    assert (info["precision"], info["precisions"]) == ("float32", ["float32"])


def test_reflection_lists_the_services(server):
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    with grpc.insecure_channel(server.target) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        response = next(stub.ServerReflectionInfo(iter([request])))

    names = {s.name for s in response.list_services_response.service}
    assert {"nmt.v1.TranslationService", "grpc.health.v1.Health"} <= names


def test_reflection_describes_the_align_rpc(server):
    from google.protobuf import descriptor_pb2
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    with grpc.insecure_channel(server.target) as channel:
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(
            file_containing_symbol="nmt.v1.TranslationService")
        response = next(stub.ServerReflectionInfo(iter([request])))

    files = [descriptor_pb2.FileDescriptorProto.FromString(raw)
             for raw in response.file_descriptor_response.file_descriptor_proto]
    methods = {m.name: (m.input_type, m.output_type)
               for f in files for service in f.service for m in service.method}
    assert methods["Align"] == (".nmt.v1.AlignRequest", ".nmt.v1.AlignResponse")


def test_metrics_endpoint_counters_move(server, client, stub):
    port = server.server.metrics_port
    before = scrape_metrics(port)
    client.translate(["Hello.", "Good night."], FAST)
    _code(lambda: stub.Translate(_request(["a"], beam_size=0)))

    after = scrape_metrics(port)

    def delta(name, **labels):
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0) - before.get(key, 0)

    assert delta("nmt_requests_total", method="Translate", code="OK", protocol="grpc") == 1
    assert delta("nmt_requests_total", method="Translate", code="INVALID_ARGUMENT",
                 protocol="grpc") == 1
    assert delta("nmt_request_duration_seconds_count", method="Translate", protocol="grpc") == 2
    assert delta("nmt_translated_sentences_total") == 2
    assert delta("nmt_translated_tokens_total", side="source") > 0
    assert delta("nmt_translated_tokens_total", side="target") > 0
    assert delta("nmt_batch_size_count") >= 1 and delta("nmt_batch_size_sum") == 2
    assert after[("nmt_queue_depth", ())] == 0
    served = [dict(labels) for (name, labels), value in after.items()
              if name == "nmt_model_info" and value == 1]
    assert [(s["name"], s["version"], s["precision"]) for s in served] == [
        ("tiny", "1", "float32")]


# --- Align -----------------------------------------------------------------------------------


def _align_request(sources, targets, **fields):
    return pb2.AlignRequest(sources=sources, targets=targets, **fields)


def test_align_matches_the_translator(server, client):
    direct = server.server.store.translator.inner.align(SOURCES, TARGETS)

    served = client.align(SOURCES, TARGETS)

    for got, want in zip(served, direct, strict=True):
        assert (got.source, got.source_tokens) == (want.source, want.source_tokens)
        assert (got.text, got.target_tokens) == (want.text, want.target_tokens)
        assert got.word_alignment == want.word_alignment
        assert got.score == pytest.approx(want.score, rel=1e-6)
        np.testing.assert_allclose(got.alignment, want.alignment, rtol=1e-6)
        assert got.confidence == pytest.approx(want.confidence, rel=1e-6)
        np.testing.assert_allclose(got.best.word_scores, want.best.word_scores, rtol=1e-6)
        np.testing.assert_allclose(got.best.piece_scores, want.best.piece_scores, rtol=1e-6)
        assert len(got.best.word_scores) == len(got.text.split())


def test_align_answers_one_forced_translation_per_pair(server, stub, caplog):
    before = server.server.metrics.registry.get_sample_value(
        "nmt_requests_total", {"method": "Align", "code": "OK", "protocol": "grpc"}) or 0

    with caplog.at_level(logging.INFO, logger="nmt.serving.requests"):
        response = stub.Align(_align_request(SOURCES, TARGETS, request_id="pairs-1"))

    assert response.request_id == "pairs-1" and response.model_version == 1
    assert len(response.alignments) == len(SOURCES)
    for pair, source, target in zip(response.alignments, SOURCES, TARGETS, strict=True):
        [hypothesis] = pair.hypotheses
        assert hypothesis.text == target
        matrix = np.array([row.weights for row in hypothesis.alignment])
        assert matrix.shape == (len(hypothesis.target_tokens), len(pair.source_tokens))  # (T, S)
        np.testing.assert_allclose(matrix.sum(axis=1), 1.0, rtol=1e-4)
        links = convert.parse_pharaoh(hypothesis.word_alignment)
        assert links and all(0 <= i < len(source.split()) and 0 <= j < len(target.split())
                             for i, j in links)
    assert server.server.metrics.registry.get_sample_value(
        "nmt_requests_total", {"method": "Align", "code": "OK", "protocol": "grpc"}) == before + 1
    [line] = [json.loads(r.getMessage()) for r in caplog.records
              if r.name == "nmt.serving.requests"]
    assert (line["method"], line["sentences"]) == ("Align", len(SOURCES))


def test_align_without_alignment_sends_no_matrix_but_the_links(stub):
    response = stub.Align(_align_request(SOURCES[:1], TARGETS[:1], with_alignment=False))

    hypothesis = response.alignments[0].hypotheses[0]
    assert len(hypothesis.alignment) == 0 and hypothesis.word_alignment
    assert len(hypothesis.target_tokens) > 0


def test_align_answers_a_blank_pair_with_an_empty_alignment(client):
    blank, pair = client.align(["  ", "Hello."], ["", "Bonjour."])

    assert blank.text == "" and blank.alignment.shape == (0, 0) and blank.word_alignment == ()
    assert pair.text == "Bonjour." and pair.alignment.shape[1] == len(pair.source_tokens)


@pytest.mark.parametrize("sources, targets, expected", [
    (["a", "b"], ["A"], "Received: 2 sources and 1 targets"),
    (["a", "b"], ["A", " "], "pair 1: the target is empty but the source is not"),
])
def test_align_malformed_pairs_are_invalid_argument(stub, sources, targets, expected):
    code, details = _code(lambda: stub.Align(_align_request(sources, targets)))

    assert code == grpc.StatusCode.INVALID_ARGUMENT and expected in details


@pytest.mark.parametrize("sources, targets, expected", [
    (["a"] * 9, ["A"] * 9, "at most 8 per request. Received: 9 pairs"),
    (["a"], ["x" * 61], "target 0 is too long: at most 60 characters. Received: 61"),
    (["😀" * 60] * 8, ["a"] * 8, "1024"),  # over the message size limit
])
def test_align_limits_are_resource_exhausted(stub, sources, targets, expected):
    code, details = _code(lambda: stub.Align(_align_request(sources, targets)))

    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and expected in details


def test_align_invalid_utf8_names_the_target(server):
    data = _align_request(["ok", "ok"], ["ok", "ab"]).SerializeToString().replace(
        b"ab", b"\xc3(")
    with grpc.insecure_channel(server.target) as channel:
        raw = channel.unary_unary(ALIGN, response_deserializer=pb2.AlignResponse.FromString)
        code, details = _code(lambda: raw(data, timeout=30))

    assert code == grpc.StatusCode.INVALID_ARGUMENT and "target 1 is not valid UTF-8" in details


def queue_behind_a_held_call(server, stub, gate, start_calls, depth: int = 4):
    """Holds the model in one call, starts `start_calls()` behind it and waits until
    `depth` sentences are queued -> `(held call, model calls before, started calls)`."""
    batcher = server.server._batcher
    gate.close()
    try:
        blocker = stub.Translate.future(_request(["Hold the model."], beam_size=1))
        assert gate.started.wait(30)
        first = len(gate.calls)
        calls = start_calls()
        end = time.monotonic() + 30
        while batcher.depth < depth:
            assert time.monotonic() < end, "the requests never queued"
            time.sleep(0.01)
    finally:
        gate.open()
    return blocker, first, calls


def test_concurrent_align_requests_share_a_model_call_but_not_with_translations(
        server, stub, module_gate):
    gate = module_gate
    blocker, first, calls = queue_behind_a_held_call(server, stub, gate, lambda: [
        stub.Align.future(_align_request(SOURCES[:2], TARGETS[:2])),
        stub.Translate.future(_request(["Translate me."], beam_size=1)),
        stub.Align.future(_align_request(SOURCES[2:], TARGETS[2:]))])

    assert len(blocker.result(60).translations) == 1
    first_pairs, translated, last_pair = (call.result(60) for call in calls)
    assert [t.hypotheses[0].text for t in first_pairs.alignments] == TARGETS[:2]
    assert len(translated.translations) == 1
    assert [t.hypotheses[0].text for t in last_pair.alignments] == TARGETS[2:]
    later = sorted(sorted(call) for call in gate.calls[first:])
    assert later == [sorted(SOURCES), ["Translate me."]]


def test_model_info_reports_the_aer_recorded_in_the_export(tiny_model_dir, tmp_path):
    base = tmp_path / "models"
    shutil.copytree(tiny_model_dir / "1", base / "1")
    metadata_path = base / "1" / METADATA_PATH
    metadata = json.loads(metadata_path.read_text())
    # What `nmt evaluate --json` writes, merged the way `nmt export --metadata` merges it.
    metadata.update({"scores": {"test_bleu": 12.5, "alibi_aer": 0.4321},
                     "alignment": {"aer": 0.4321, "precision": 0.5, "recall": 0.6}})
    metadata_path.write_text(json.dumps(metadata))
    store = ModelStore(base, ServingMetrics())
    assert store.refresh()
    servicer = TranslationServicer(store, batcher=None, limits=LIMITS)

    response = asyncio.run(servicer.GetModelInfo(pb2.GetModelInfoRequest(), None))

    assert dict(response.scores) == pytest.approx({"test_bleu": 12.5, "alibi_aer": 0.4321})
    assert json.loads(response.metadata_json)["alignment"]["aer"] == 0.4321


@pytest.fixture(scope="module")
def both_paths_base(tiny_model_dir, tmp_path_factory):
    """A base directory whose version 1 is the tiny model with both precision paths."""
    from nmt.inference.export import export_saved_model, module_from_export

    base = tmp_path_factory.mktemp("both") / "models"
    export_saved_model(module_from_export(tiny_model_dir / "1", "both"), base, 1)
    return base


@pytest.mark.parametrize("flags, expected", [("avx2", "float32"), ("avx512_bf16", "bfloat16")])
def test_model_info_and_metrics_say_which_path_auto_chose(both_paths_base, tmp_path, monkeypatch,
                                                          flags, expected):
    from nmt.inference import precision

    (tmp_path / "cpuinfo").write_text(f"flags\t\t: fpu sse2 {flags}\n")
    monkeypatch.setattr(precision, "CPUINFO", tmp_path / "cpuinfo")
    metrics = ServingMetrics()
    store = ModelStore(both_paths_base, metrics)  # the default loader: auto
    assert store.refresh()
    servicer = TranslationServicer(store, batcher=None, limits=LIMITS)

    response = asyncio.run(servicer.GetModelInfo(pb2.GetModelInfoRequest(), None))

    assert (response.precision, list(response.precisions)) == (expected,
                                                              ["float32", "bfloat16"])
    assert metrics.registry.get_sample_value(
        "nmt_model_info", {"name": "tiny", "version": "1", "attention": "luong-general",
                           "precision": expected}) == 1


# --- word-link rules and the decoder's attention ----------------------------------------------


@pytest.mark.parametrize("rule, threshold", [("intersect", None), ("grow", 0.2),
                                             ("threshold", 0.1)])
def test_a_word_link_rule_reads_the_links_as_the_translator_does(server, client, rule,
                                                                threshold):
    translator = server.server.store.translator.inner
    options = {"links": rule, "link_threshold": threshold}
    in_process = {"link_threshold": threshold} if threshold else {}
    served = client.align(SOURCES, TARGETS, **options)
    direct = translator.align(SOURCES, TARGETS, links=rule, **in_process)
    assert [t.word_alignment for t in served] == [t.word_alignment for t in direct]
    served = client.translate(SOURCES, FAST, **options)
    direct = translator.translate(SOURCES, FAST, links=rule, **in_process)
    assert [t.word_alignment for t in served] == [t.word_alignment for t in direct]


def test_attention_comes_only_when_asked(client):
    [plain] = client.align(SOURCES[:1], TARGETS[:1])
    [asked] = client.align(SOURCES[:1], TARGETS[:1], with_attention=True)
    assert plain.best.attention is None
    # The tiny model has no alignment head: its alignment is its attention.
    np.testing.assert_allclose(asked.best.attention, asked.best.alignment)
    [translated] = client.translate(SOURCES[:1], FAST, with_attention=True)
    assert translated.best.attention.shape == translated.best.alignment.shape


def test_an_unknown_word_link_rule_is_invalid_argument(stub):
    request = pb2.TranslateRequest(sentences=["Hi."], word_links=pb2.WordLinks(rule="best"))
    with pytest.raises(grpc.RpcError) as error:
        stub.Translate(request)
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "rule='best'" in error.value.details()
    request = pb2.AlignRequest(sources=["Hi."], targets=["Salut."],
                               word_links=pb2.WordLinks(rule="grow", threshold=2.0))
    with pytest.raises(grpc.RpcError) as error:
        stub.Align(request)
    assert "threshold=2.0" in error.value.details()


def test_model_info_says_where_the_alignment_comes_from(client):
    info = client.model_info()
    assert (info["alignment"], info["word_links"]) == ("attention", "argmax")


# --- documents (TranslateRequest.format) -------------------------------------------------------

DOCUMENT = "Hello. How are you today?\n\nGood night."
PAGE = "<p>Click <b>Save</b> now.</p><p>Thank you.</p>"


def _in_process_documents(server, documents, format):
    """What the server should answer: the translator's sentences, joined (documents)."""
    from documents.markup import plan_document
    from documents.sentences import join_documents, sentences_of

    plans = [plan_document(document, format) for document in documents]
    results = server.server.store.translator.inner.translate(sentences_of(plans), FAST)
    return join_documents(plans, results)


@pytest.mark.parametrize("documents, format", [
    ([DOCUMENT, "", "  \n "], "text"),
    ([PAGE, "<br/>"], "html"),
    (['Press <g id="1">OK</g> to <x id="2"/>continue.', ""], "xml"),
])
def test_documents_are_their_sentences_translated_and_joined(server, client, documents, format):
    direct = _in_process_documents(server, documents, format)

    served = client.translate_documents(documents, format, FAST)

    assert len(served) == len(documents)
    for got, want, source in zip(served, direct, documents, strict=True):
        assert got.source == source and got.text == want.text
        assert [(s.source_span, s.target_span) for s in got.sentences] == [
            (s.source_span, s.target_span) for s in want.sentences]
        assert got.link_spans == want.link_spans
        for sentence, expected in zip(got.sentences, want.sentences, strict=True):
            assert sentence.result.source == expected.result.source  # as the model read it
            assert sentence.result.target_tokens == expected.result.target_tokens
            assert sentence.result.word_alignment == expected.result.word_alignment
            np.testing.assert_allclose(sentence.result.best.piece_scores,  # each sentence's
                                       expected.result.best.piece_scores, rtol=1e-6)
    assert served[0].sentences and not served[-1].sentences  # blank or no word: none


def test_document_response_fields(stub):
    request = _request([DOCUMENT], beam_size=3, n_best=2)
    request.format = pb2.TEXT_FORMAT_TEXT
    request.with_alignment = False

    response = stub.Translate(request)

    assert len(response.translations) == 0 and len(response.documents) == 1
    [document] = response.documents
    assert [(s.source_start, s.source_end) for s in document.sentences] == [
        (0, 6), (7, 25), (27, 38)]
    assert [s.sentence for s in document.sentences] == [
        "Hello.", "How are you today?", "Good night."]
    for sentence in document.sentences:
        assert len(sentence.translation.hypotheses) == 2
        assert len(sentence.translation.hypotheses[0].alignment) == 0  # with_alignment false
        assert document.text[sentence.target_start:sentence.target_end] == (
            sentence.translation.hypotheses[0].text)
    assert "\n\n" in document.text  # the paragraph break is kept
    assert document.char_alignment == format_char_links(parse_char_links(document.char_alignment))
    for (s0, s1), (t0, t1) in parse_char_links(document.char_alignment):
        assert DOCUMENT[s0:s1].strip() == DOCUMENT[s0:s1] and " " not in document.text[t0:t1]


def test_placeholders_come_back_exactly_unless_the_request_turns_them_off(server, client):
    from documents.placeholders import find_placeholders

    def placeholders(text):
        return sorted(p.text for p in find_placeholders(text))

    inner = server.server.store.translator.inner
    sentence = "Hello %s, you have {0} new messages."  # read as "Hello you have new messages."
    [kept] = client.translate([sentence], FAST)
    [read] = inner.translate(["Hello you have new messages."], FAST)

    assert placeholders(kept.text) == ["%s", "{0}"] and kept.source == sentence
    assert kept.source_tokens == read.source_tokens and kept.target_tokens == read.target_tokens
    assert kept.text.replace("%s,", "").replace("{0}", "").split() == read.text.split()
    assert all(0 <= i < 7 and 0 <= j < len(kept.text.split()) for i, j in kept.word_alignment)
    assert len(kept.best.word_scores) == len(kept.text.split())
    [raw] = client.translate([sentence], FAST, keep_placeholders=False)
    assert raw.text == inner.translate([sentence], FAST)[0].text
    [only] = client.translate(["'%s':"], FAST)
    assert only.text == "'%s':"
    [document] = client.translate_documents(["Saved %d files. Delete '%s'?"], "text", FAST)
    assert placeholders(document.text) == ["%d", "%s"]


def test_a_sentence_without_placeholders_is_translated_as_with_them_off(client):
    sentences = ["The cat is black.", "50 % off { and } R&D", "Hello."]
    kept = client.translate(sentences, FAST)
    off = client.translate(sentences, FAST, keep_placeholders=False)
    for a, b in zip(kept, off, strict=True):
        assert (a.source, a.text, a.source_tokens, a.target_tokens, a.word_alignment) == (
            b.source, b.text, b.source_tokens, b.target_tokens, b.word_alignment)
        np.testing.assert_array_equal(a.alignment, b.alignment)


def test_sentences_stay_the_default(stub):
    response = stub.Translate(_request([DOCUMENT], beam_size=1))

    assert len(response.translations) == 1 and len(response.documents) == 0


@pytest.mark.parametrize("documents, format, expected", [
    (["Fine.", "Hi <b>there."], pb2.TEXT_FORMAT_HTML,
     "document 1 is not valid HTML: <b> is never closed at character 3 (line 1, column 4)"),
    (["<a>x</b>"], pb2.TEXT_FORMAT_XML, "document 0 is not valid XML"),
    (["<!-- no end"], pb2.TEXT_FORMAT_HTML, "at character 0"),
    (["Hello."], 9, "format must be one of TEXT_FORMAT_UNSPECIFIED, TEXT_FORMAT_TEXT"),
])
def test_malformed_documents_are_invalid_argument_naming_the_position(stub, documents, format,
                                                                     expected):
    request = _request(documents, beam_size=1)
    request.format = format

    code, details = _code(lambda: stub.Translate(request))

    assert code == grpc.StatusCode.INVALID_ARGUMENT and expected in details


@pytest.mark.parametrize("documents, expected", [
    (["Hello. " * 9], "document 0 is too long: at most 60 characters. Received: 63"),
    (["Yes. No. Stop. Go. Run."] * 2 + ["Thank you."],
     "at most 8 per request. Received: 3 documents of 9 sentences"),
    (["Hi."] * 9, "too many documents: at most 8 per request. Received: 9 documents"),
])
def test_document_limits_are_resource_exhausted(stub, documents, expected):
    request = _request(documents, beam_size=1)
    request.format = pb2.TEXT_FORMAT_TEXT

    code, details = _code(lambda: stub.Translate(request))

    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and expected in details


def test_a_documents_sentences_share_model_calls_with_other_requests(server, stub, module_gate):
    gate = module_gate
    document = _request([DOCUMENT], beam_size=1)
    document.format = pb2.TEXT_FORMAT_TEXT
    blocker, first, calls = queue_behind_a_held_call(server, stub, gate, lambda: [
        stub.Translate.future(document),
        stub.Translate.future(_request(["A sentence."], beam_size=1))])

    assert len(blocker.result(60).translations) == 1
    from_document, sentence = (call.result(60) for call in calls)
    assert len(from_document.documents[0].sentences) == 3 and len(sentence.translations) == 1
    assert [sorted(call) for call in gate.calls[first:]] == [
        sorted(["Hello.", "How are you today?", "Good night.", "A sentence."])]


def test_documents_in_a_stream(stub):
    documents = _request([PAGE], beam_size=1)
    documents.format = pb2.TEXT_FORMAT_HTML

    responses = list(stub.TranslateStream(iter([_request(["a"], beam_size=1), documents])))

    assert [len(r.translations) for r in responses] == [1, 0]
    assert responses[1].documents[0].text.count("<b>") == 1


@pytest.mark.parametrize("rule", ["intersect", "grow"])
def test_a_documents_word_links_follow_the_requests_rule(server, client, rule):
    translator = server.server.store.translator.inner
    [document] = client.translate_documents([DOCUMENT], "text", FAST, links=rule)
    direct = translator.translate([s.result.source for s in document.sentences], FAST,
                                  links=rule)
    assert [s.result.word_alignment for s in document.sentences] == [
        t.word_alignment for t in direct]


def test_the_client_refuses_an_unknown_format(client):
    with pytest.raises(ValueError, match="format must be one of"):
        client.translate_documents([DOCUMENT], "pdf")


# --- tags projected onto given targets (AlignRequest.format) ----------------------------------

TAGGED = ["Click <b>Save</b> now.", "<br/>", 'Press <g id="1">OK</g>.', " The cat is black. "]
PLAIN = ["Cliquez sur Enregistrer maintenant.", "", "Appuyez sur OK.", "Le chat est noir."]


def _in_process_projections(server, sources, targets, format, **links):
    """What the server should answer: the translator's alignments, joined (documents.markup)."""
    from documents.markup import plan_projection
    from documents.sentences import join_documents, sentences_of

    plans = [plan_projection(s, t, format) for s, t in zip(sources, targets, strict=True)]
    targets = [target for plan in plans for target in plan.targets]
    results = server.server.store.translator.inner.align(sentences_of(plans), targets, **links)
    return join_documents(plans, results)


@pytest.mark.parametrize("pairs, format", [((0, 1), "html"), ((2,), "xml"), ((3,), "text")])
def test_align_with_a_format_projects_the_sources_tags(server, client, pairs, format):
    sources, targets = [TAGGED[i] for i in pairs], [PLAIN[i] for i in pairs]
    direct = _in_process_projections(server, sources, targets, format)

    served = client.align_documents(sources, targets, format)

    assert len(served) == len(sources)
    for got, want, source in zip(served, direct, sources, strict=True):
        assert got.source == source and got.text == want.text
        assert got.link_spans == want.link_spans
        assert [(s.source_span, s.target_span) for s in got.sentences] == [
            (s.source_span, s.target_span) for s in want.sentences]
        for sentence, expected in zip(got.sentences, want.sentences, strict=True):
            assert sentence.result.source == expected.result.source
            assert sentence.result.text == expected.result.text  # the target, as given
            assert sentence.result.word_alignment == expected.result.word_alignment
            assert sentence.result.score == pytest.approx(expected.result.score, rel=1e-6)
    if format == "html":
        assert served[0].text.count("<b>") == served[0].text.count("</b>") == 1
        assert served[1].text == "<br/>" and served[1].sentences == ()  # no word: no alignment


def test_align_with_a_format_answers_documents_not_alignments(stub):
    request = _align_request(TAGGED[:1], PLAIN[:1], format=pb2.TEXT_FORMAT_HTML,
                             with_alignment=False, request_id="tags-1")

    response = stub.Align(request)

    assert len(response.alignments) == 0 and response.request_id == "tags-1"
    [document] = response.documents
    [sentence] = document.sentences
    assert sentence.sentence == "Click Save now."
    assert (sentence.source_start, sentence.source_end) == (0, len(TAGGED[0]))
    [hypothesis] = sentence.translation.hypotheses
    assert hypothesis.text == PLAIN[0] and len(hypothesis.alignment) == 0
    for (s0, s1), (t0, t1) in parse_char_links(document.char_alignment):
        assert TAGGED[0][s0:s1] in ("Click", "Save", "now.")
        assert document.text[t0:t1] in PLAIN[0].split()


@pytest.mark.parametrize("rule", ["intersect", "grow"])
def test_align_with_a_format_follows_the_requests_link_rule(server, client, rule):
    direct = _in_process_projections(server, TAGGED[:1], PLAIN[:1], "html", links=rule)

    [served] = client.align_documents(TAGGED[:1], PLAIN[:1], "html", links=rule)

    assert served.text == direct[0].text
    assert served.sentences[0].result.word_alignment == (
        direct[0].sentences[0].result.word_alignment)


@pytest.mark.parametrize("sources, targets, format, expected", [
    (["Fine.", "Hi <b>there."], ["Bien.", "Salut."], pb2.TEXT_FORMAT_HTML,
     "source 1 is not valid HTML: <b> is never closed at character 3 (line 1, column 4)"),
    (["<a>x</b>"], ["x"], pb2.TEXT_FORMAT_XML, "source 0 is not valid XML"),
    (["<b>Save</b>"], [" "], pb2.TEXT_FORMAT_HTML,
     "pair 0: the target is empty but the source is not"),
    (["Hello."], ["Bonjour."], 9, "format must be one of TEXT_FORMAT_UNSPECIFIED"),
])
def test_align_with_a_format_refuses_malformed_pairs(stub, sources, targets, format, expected):
    request = _align_request(sources, targets, format=format)

    code, details = _code(lambda: stub.Align(request))

    assert code == grpc.StatusCode.INVALID_ARGUMENT and expected in details
