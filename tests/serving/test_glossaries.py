"""Glossaries on the server: the store of named glossaries, and requests with a glossary over
gRPC, HTTP/JSON and both Python clients, against an in-process server with the tiny model."""

import asyncio
import json
import logging
import re
import time
import urllib.error
import urllib.request

import grpc
import pytest
from prometheus_client import CollectorRegistry

from documents.glossary import Glossary
from documents.terminology import PLACEMENTS
from nmt.types import DecodeOptions
from nmt_api import protos
from nmt_api.client import AsyncTranslationClient, TranslationClient
from serving.errors import InvalidArgument, NotFound
from serving.glossaries import GlossaryStore
from serving.http_api import ENDPOINTS
from serving.metrics import ServingMetrics
from serving.openapi import openapi_document
from serving.server import ServerConfig
from serving.testing import ServerThread, free_port, scrape_metrics
from serving.validation import GlossaryRequest, Limits

pb2, pb2_grpc = protos.load()
LIMITS = Limits(max_sentences=8, max_chars=200, max_glossary_entries=4)
FAST = DecodeOptions(beam_size=2)
ANIMALS = "black cat\tchat noir\ndog\tchien\nFirefox\tFirefox\n"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


# --- the store ----------------------------------------------------------------------------


def _store(tmp_path, files: dict[str, str], metrics=None) -> GlossaryStore:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    store = GlossaryStore(tmp_path, metrics)
    store.refresh()
    return store


def _rewrite(path, text: str) -> None:
    """Writes `text` and moves the file's time on, as a later save would."""
    stamp = path.stat().st_mtime_ns if path.exists() else time.time_ns()
    path.write_text(text, encoding="utf-8")
    import os

    os.utime(path, ns=(stamp + 2_000_000_000, stamp + 2_000_000_000))


def test_each_tsv_and_csv_file_is_a_glossary_named_after_it(tmp_path):
    (tmp_path / "sub").mkdir()
    store = _store(tmp_path, {"animals.tsv": ANIMALS, "medical.csv": "source,target\nflu,grippe\n",
                              "notes.txt": "a\tb\n", ".hidden.tsv": "a\tb\n"})

    listed = store.glossaries()

    assert [(g.name, g.file, len(g.glossary)) for g in listed] == [
        ("animals", "animals.tsv", 3), ("medical", "medical.csv", 1)]
    assert all(RFC3339.match(g.loaded_at_rfc3339) for g in listed)
    assert GlossaryStore(None).glossaries() == [] and not GlossaryStore(None).refresh()


def test_a_bad_file_is_refused_whole_with_its_line_and_the_previous_version_kept(tmp_path,
                                                                                   caplog):
    metrics = ServingMetrics(CollectorRegistry())
    store = _store(tmp_path, {"animals.tsv": ANIMALS}, metrics)
    before = store.glossaries()[0]
    _rewrite(tmp_path / "animals.tsv", "cat\tchat\ncat without a tab\n")

    with caplog.at_level(logging.ERROR, "nmt.serving.glossaries"):
        assert not store.refresh()
        assert not store.refresh(), "a file that failed is not read again until it changes"

    [record] = [json.loads(r.getMessage()) for r in caplog.records]
    assert record["event"] == "glossary_load_failed" and record["name"] == "animals"
    assert "animals.tsv, line 2: expected 2 columns" in record["error"]
    assert record["serving"].startswith("the version loaded at ")
    assert store.glossaries() == [before]
    _rewrite(tmp_path / "animals.tsv", "cat\tchat\n")
    assert store.refresh()
    [after] = store.glossaries()
    assert [e.target for e in after.glossary.entries] == ["chat"]
    counts = {labels: value for (name, labels), value in
              _samples(metrics.registry).items() if name == "nmt_glossary_loads_total"}
    assert counts == {(("result", "failure"),): 1.0, (("result", "success"),): 2.0}


def _samples(registry):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in registry.collect() for s in family.samples}


def test_a_new_file_loads_a_removed_one_unloads_an_unchanged_one_is_not_read(tmp_path,
                                                                             monkeypatch):
    store = _store(tmp_path, {"animals.tsv": ANIMALS})
    reads = []
    original = Glossary.read
    monkeypatch.setattr(Glossary, "read", lambda path, **kw: reads.append(path.name)
                        or original(path, **kw))
    (tmp_path / "medical.tsv").write_text("flu\tgrippe\n", encoding="utf-8")

    assert store.refresh() and reads == ["medical.tsv"]
    (tmp_path / "animals.tsv").unlink()
    assert store.refresh()
    assert [g.name for g in store.glossaries()] == ["medical"] and reads == ["medical.tsv"]


def test_two_files_of_one_name_are_both_refused(tmp_path, caplog):
    with caplog.at_level(logging.ERROR, "nmt.serving.glossaries"):
        store = _store(tmp_path, {"animals.tsv": ANIMALS, "animals.csv": "cat,chat\n"})

    assert store.glossaries() == []
    assert "animals.csv and animals.tsv share the name 'animals'" in caplog.text


def test_resolve_inline_named_both_and_exact_case(tmp_path):
    store = _store(tmp_path, {"animals.tsv": ANIMALS})

    assert store.resolve(None) is None
    named = store.resolve(GlossaryRequest(glossary_id="animals"))
    assert named is store.glossaries()[0].glossary
    exact = store.resolve(GlossaryRequest(exact_case=True, glossary_id="animals"))
    assert exact.exact_case and exact is store.resolve(
        GlossaryRequest(exact_case=True, glossary_id="animals")), "made once"
    both = store.resolve(GlossaryRequest((("dog", "toutou"), ("hand", "main")), False,
                                         "animals"))
    assert {e.source: e.target for e in both.entries} == {
        "black cat": "chat noir", "dog": "toutou", "Firefox": "Firefox", "hand": "main"}
    inline = store.resolve(GlossaryRequest((("dog", "toutou"),)))
    assert [e.target for e in inline.entries] == ["toutou"]


@pytest.mark.parametrize("entries, expected", [
    ((("cat", "chat"), ("<b>dog</b>", "chien")), r"^glossary: entry 2: the source holds markup"),
    ((("%s dog", "chien"),), r"^glossary: entry 1: the source holds the placeholder '%s'"),
    ((("", "chien"),), r"^glossary: entry 1: the source is empty"),
    ((("cat", "chat"), ("Cat", "matou")), r"entry 2: 'Cat' is already translated 'chat' "
                                          r"\(entry 1\)"),
    ((("cat", "c" * 201),), r"entry 1: the target has 201 characters, over MAX_TERM_CHARS"),
])
def test_a_bad_inline_entry_is_invalid_argument_naming_it(tmp_path, entries, expected):
    with pytest.raises(InvalidArgument, match=expected):
        GlossaryStore(tmp_path).resolve(GlossaryRequest(entries))


def test_an_unknown_name_is_not_found_naming_those_there(tmp_path):
    with pytest.raises(NotFound, match=r"^request 2 of the stream: glossary_id 'pets' is not a "
                                       r"glossary of this server: it has 'animals'"):
        _store(tmp_path, {"animals.tsv": ANIMALS}).resolve(
            GlossaryRequest(glossary_id="pets"), "request 2 of the stream: ")
    with pytest.raises(NotFound, match=r"it serves none \(start it with --glossaries DIR\)"):
        GlossaryStore(None).resolve(GlossaryRequest(glossary_id="pets"))


def test_the_server_refuses_a_missing_glossary_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"glossary directory .*nowhere does not exist"):
        ServerConfig(model_dir=tmp_path, glossaries_dir=tmp_path / "nowhere")


def test_openapi_names_the_entry_limit_the_term_length_and_not_found():
    document = openapi_document(ENDPOINTS, LIMITS, auth=False)

    schemas = document["components"]["schemas"]
    assert schemas["Glossary"]["properties"]["entries"]["maxItems"] == 4
    assert schemas["GlossaryEntry"]["properties"]["source"]["maxLength"] == 200
    assert "glossary" in schemas["TranslateRequest"]["properties"]
    assert "appliedTerms" in schemas["Hypothesis"]["properties"]
    assert "404" in document["paths"]["/v1/translate"]["post"]["responses"]
    assert "404" not in document["paths"]["/v1/align"]["post"]["responses"]
    assert "maxGlossaryEntries" in document["paths"]["/v1/translate"]["post"]["responses"][
        "413"]["description"]
    listed = document["paths"]["/v1/glossaries"]["get"]["responses"]["200"]
    assert listed["content"]["application/json"]["schema"]["$ref"].endswith(
        "ListGlossariesResponse")


# --- the server ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def glossary_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("glossaries")
    (directory / "animals.tsv").write_text(ANIMALS, encoding="utf-8")
    return directory


@pytest.fixture(scope="module")
def server(tiny_model_dir, glossary_dir, module_gate):
    config = ServerConfig(model_dir=tiny_model_dir, host="127.0.0.1", port=0,
                          metrics_port=free_port(), http_port=free_port(), limits=LIMITS,
                          poll_interval_s=0.2, glossaries_dir=glossary_dir)
    running = ServerThread(config, loader=module_gate.loader)
    running.wait_until_serving()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def client(server):
    with TranslationClient(server.target, timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def stub(server):
    with grpc.insecure_channel(server.target) as channel:
        yield pb2_grpc.TranslationServiceStub(channel)


def _http(server, method, path, body=None):
    """`(status, JSON answer)` of an HTTP call."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.server.http_port}{path}", method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def _check_terms(source: str, hypothesis) -> None:
    """Each applied term's spans slice its source and what was written."""
    for term in hypothesis.applied_terms:
        assert source[slice(*term.source_span)].casefold().startswith(term.source.casefold())
        assert hypothesis.text[slice(*term.target_span)] == term.target
        assert term.placement in PLACEMENTS


def test_list_glossaries_over_grpc_and_http(server, client):
    [listed] = client.list_glossaries()
    status, answer = _http(server, "GET", "/v1/glossaries")

    assert (listed["name"], listed["entries"], listed["file"]) == ("animals", 3, "animals.tsv")
    assert RFC3339.match(listed["loaded_at"])
    assert status == 200 and answer == {"glossaries": [{
        "name": "animals", "entries": 3, "loadedAt": listed["loaded_at"],
        "file": "animals.tsv"}]}
    assert client.model_info()["limits"]["max_glossary_entries"] == 4


def test_a_named_glossary_is_written_into_every_hypothesis(server, client, module_gate):
    sentence = "The black cat sleeps."
    module_gate.calls.clear()

    [plain] = client.translate([sentence], DecodeOptions(beam_size=2, n_best=2))
    [glossed] = client.translate([sentence], DecodeOptions(beam_size=2, n_best=2),
                                 glossary="animals")

    assert module_gate.calls == [[sentence], [sentence]], "the model reads the same sentences"
    for before, after in zip(plain.nbest, glossed.nbest, strict=True):
        [term] = after.applied_terms
        assert (term.source, term.target.casefold()) == ("black cat", "chat noir")
        assert sentence[slice(*term.source_span)] == "black cat"
        _check_terms(sentence, after)
        assert before.applied_terms == ()
    assert "chat noir" in glossed.text.casefold()


def test_inline_entries_case_and_an_entry_that_replaces_the_named_one(client):
    sentence = "The Black Cat sleeps."

    [inline] = client.translate([sentence], FAST, glossary=[("black cat", "chat noir")])
    [exact] = client.translate([sentence], FAST, glossary=[("black cat", "chat noir")],
                               glossary_exact_case=True)
    [plain] = client.translate([sentence], FAST)
    both = pb2.Glossary(glossary_id="animals",
                        entries=[pb2.GlossaryEntry(source="black cat", target="minou noir")])
    [replaced] = client.translate([sentence], FAST, glossary=both)

    assert [t.source_span for t in inline.best.applied_terms] == [(4, 13)]
    _check_terms(sentence, inline.best)
    assert exact.best.applied_terms == () and exact.text == plain.text
    assert [t.target.casefold() for t in replaced.best.applied_terms] == ["minou noir"]


def test_a_request_without_a_glossary_is_answered_as_before(stub):
    plain = pb2.TranslateRequest(sentences=["The cat sleeps.", "Hello."],
                                 options=pb2.DecodeOptions(beam_size=2))
    empty = pb2.TranslateRequest()
    empty.CopyFrom(plain)
    empty.glossary.SetInParent()
    unmatched = pb2.TranslateRequest()
    unmatched.CopyFrom(plain)
    unmatched.glossary.entries.add(source="face mask", target="masque")

    answers = [stub.Translate(r, timeout=60) for r in (plain, empty, unmatched)]

    assert answers[0].SerializeToString() == answers[1].SerializeToString()
    assert answers[0].SerializeToString() == answers[2].SerializeToString(), (
        "a glossary none of whose terms occur changes nothing")


def test_documents_carry_the_terms_on_the_document_and_the_tags_follow_them(client):
    document = "<p>Look: the <b>black cat</b> and the dog.</p>"

    [translated] = client.translate_documents([document], "html", FAST, glossary="animals")

    assert "<b>chat noir</b>" in translated.text.casefold()
    terms = {t.source: t for t in translated.applied_terms}
    assert set(terms) == {"black cat", "dog"}
    for term in terms.values():
        assert document[slice(*term.source_span)] == term.source
        assert translated.text[slice(*term.target_span)] == term.target
    [sentence] = translated.sentences
    _check_terms(sentence.result.source, sentence.result.best)


def test_a_stream_applies_the_glossary_to_every_request(client):
    replies = list(client.translate_stream([["The black cat."], ["A dog."]], FAST,
                                           glossary="animals"))

    assert [[t.target.casefold() for t in r[0].best.applied_terms] for r in replies] == [
        ["chat noir"], ["chien"]]


def test_the_async_client_takes_a_glossary_and_lists_them(server):
    async def calls():
        async with AsyncTranslationClient(server.target, timeout=60) as client:
            [translation] = await client.translate(["A dog."], FAST,
                                                   glossary=[{"source": "dog",
                                                              "target": "chien"}])
            [document] = await client.translate_documents(["A dog. A cat."], "text", FAST,
                                                          glossary="animals")
            return translation, document, await client.list_glossaries()

    translation, document, listed = asyncio.run(calls())

    assert [t.target.casefold() for t in translation.best.applied_terms] == ["chien"]
    assert [(t.source, t.source_span) for t in document.applied_terms] == [("dog", (2, 5))]
    assert [g["name"] for g in listed] == ["animals"]


@pytest.mark.parametrize("glossary, code, status, expected", [
    ({"glossaryId": "pets"}, "NOT_FOUND", 404, "glossary_id 'pets' is not a glossary of this "
                                               "server: it has 'animals'"),
    ({"entries": [{"source": "a", "target": "b"}] * 5}, "RESOURCE_EXHAUSTED", 413,
     "too many glossary entries: at most 4 per request"),
    ({"entries": [{"source": "cat", "target": "<i>chat</i>"}]}, "INVALID_ARGUMENT", 400,
     "glossary: entry 1: the target holds markup ('<i>')"),
    ({"entries": [{"source": "{name}", "target": "nom"}]}, "INVALID_ARGUMENT", 400,
     "glossary: entry 1: the source holds the placeholder '{name}'"),
])
def test_bad_glossaries_get_a_status_that_says_what_to_change(server, stub, glossary, code,
                                                              status, expected):
    from google.protobuf import json_format

    body = {"sentences": ["The cat."], "glossary": glossary}
    request = json_format.ParseDict(body, pb2.TranslateRequest())

    with pytest.raises(grpc.RpcError) as error:
        stub.Translate(request, timeout=60)
    got_status, answer = _http(server, "POST", "/v1/translate", body)

    assert error.value.code().name == code and expected in error.value.details()
    assert (got_status, answer["code"]) == (status, code) and expected in answer["message"]


def test_http_translate_answers_the_terms_as_json(server):
    status, answer = _http(server, "POST", "/v1/translate", {
        "sentences": ["The black cat, a dog and a term longer than the sentence."],
        "options": {"beamSize": 2},
        "glossary": {"entries": [
            {"source": "black cat", "target": "chat noir"}, {"source": "cat", "target": "chat"},
            {"source": "the black cat in the hat sat on the mat", "target": "long"}],
            "glossaryId": "animals"}})

    assert status == 200
    terms = answer["translations"][0]["hypotheses"][0]["appliedTerms"]
    assert [(t["source"], t["sourceStart"], t["sourceEnd"]) for t in terms] == [
        ("black cat", 4, 13), ("dog", 17, 20)], "longest match first; a longer term: no match"
    assert {t["placement"] for t in terms} <= {"TERM_PLACEMENT_" + p.upper() for p in PLACEMENTS}


def test_the_form_matched_and_the_form_written_reach_every_client(server, client):
    entries = [("black cat", "chat noir")]
    [translation] = client.translate(["Two black cats."], FAST, glossary=entries)
    status, answer = _http(server, "POST", "/v1/translate", {
        "sentences": ["Two black cats."], "options": {"beamSize": 2},
        "glossary": {"entries": [{"source": "black cat", "target": "chat noir"}]}})

    [term] = translation.best.applied_terms
    assert (term.matched, term.form, term.target) == ("black cats", "plural", "chats noirs")
    assert status == 200
    [as_json] = answer["translations"][0]["hypotheses"][0]["appliedTerms"]
    assert (as_json["matched"], as_json["form"], as_json["target"]) == (
        "black cats", "plural", "chats noirs")


def test_a_changed_file_is_reloaded_and_a_bad_one_keeps_the_version_in_use(
        server, client, glossary_dir, caplog):
    path = glossary_dir / "animals.tsv"
    before = client.list_glossaries()[0]["loaded_at"]
    try:
        with caplog.at_level(logging.ERROR, "nmt.serving.glossaries"):
            _rewrite(path, ANIMALS + "horse\n")
            _wait(lambda: "glossary_load_failed" in caplog.text)
        assert "animals.tsv, line 4: expected 2 columns" in caplog.text
        [still] = client.translate(["A dog."], FAST, glossary="animals")
        assert [t.target.casefold() for t in still.best.applied_terms] == ["chien"]
        assert client.list_glossaries()[0]["loaded_at"] == before

        _rewrite(path, ANIMALS.replace("chien", "toutou"))
        _wait(lambda: client.list_glossaries()[0]["entries"] == 3 and client.translate(
            ["A dog."], FAST, glossary="animals")[0].best.applied_terms[0].target.casefold()
            == "toutou")
        (glossary_dir / "medical.tsv").write_text("flu\tgrippe\n", encoding="utf-8")
        _wait(lambda: [g["name"] for g in client.list_glossaries()] == ["animals", "medical"])
        metrics = scrape_metrics(server.server.config.metrics_port)
        assert metrics[("nmt_glossary_loads_total", (("result", "failure"),))] >= 1
    finally:
        (glossary_dir / "medical.tsv").unlink(missing_ok=True)
        _rewrite(path, ANIMALS)
        _wait(lambda: [g["name"] for g in client.list_glossaries()] == ["animals"])


def _wait(condition, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise AssertionError("the server did not pick up the change in time")
        time.sleep(0.1)
