"""`TranslateFile` end to end over gRPC, on a server whose fake model shouts: the file's
content and structure, the summary, the limits, bad files and glossaries, the stream."""

import asyncio
import concurrent.futures
import threading

import grpc
import polib
import pytest
from grpc import RpcError, StatusCode

from nmt_api import files as client_files
from nmt_api import protos
from nmt_api.client import TranslationClient
from serving import files as server_files
from serving.validation import Limits
from tests.serving.file_fakes import fake_server, shouted

pb2, pb2_grpc = protos.load()
LIMITS = Limits(max_file_bytes=4000, max_file_sentences=5)
TEMPLATE = r'''# Messages of a small example program.
#, fuzzy
msgid ""
msgstr ""
"Project-Id-Version: example 1.0\n"
"Content-Type: text/plain; charset=UTF-8\n"

#: src/main.c:4
msgid "I like green tea."
msgstr ""

#: src/main.c:9
#, c-format
msgid "%d cat sleeps."
msgid_plural "%d cats sleep."
msgstr[0] ""
msgstr[1] ""

#: src/main.c:12
msgctxt "button"
msgid "Thank you."
msgstr "Merci."
'''
XLIFF = '''<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file source-language="en" datatype="plaintext" original="app">
    <body>
      <trans-unit id="tea"><source>I like <g id="1">green</g> tea.</source></trans-unit>
      <trans-unit id="brand" translate="no"><source>Acme</source></trans-unit>
    </body>
  </file>
</xliff>
'''
SRT = """1
00:00:01,000 --> 00:00:02,500
I like

2
00:00:02,500 --> 00:00:04,000
<i>green</i> tea.
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with fake_server(tmp_path_factory.mktemp("model"), limits=LIMITS) as running:
        yield running


@pytest.fixture
def client(served):
    server, model = served
    model.calls[1:] = []  # the warm-up stays
    with TranslationClient(server.target, timeout=30) as client:
        yield client


def _model(served):
    return served[1]


def test_a_po_template_comes_back_filled_with_its_summary(served, client):
    data, summary = client.translate_file(TEMPLATE.encode(), "po/messages.pot",
                                          request_id="job-7")

    catalog = {(e.msgctxt, e.msgid): e for e in polib.pofile(data.decode())}
    assert catalog[(None, "I like green tea.")].msgstr == "I LIKE GREEN TEA."
    assert catalog[(None, "I like green tea.")].flags == ["fuzzy"]
    assert catalog[(None, "%d cat sleeps.")].msgstr_plural == {0: "%d CAT SLEEPS.",
                                                               1: "%d CATS SLEEP."}
    assert catalog[("button", "Thank you.")].msgstr == "Merci."  # kept
    assert "#: src/main.c:9\n#, fuzzy, c-format\n" in data.decode()  # comments kept
    assert _model(served).read == ["cat sleeps.", "cats sleep.", "I like green tea."]
    assert summary == client_files.FileSummary(
        name="messages.fr.po", format="po", media_type="text/x-gettext-translation; charset=utf-8",
        text="2 of 3 messages translated (fuzzy), 1 translations kept, 0 obsolete entries left "
             "as they were; 3 sentences",
        counts={"messages": 3, "written": 2, "kept": 1, "obsolete": 0, "texts": 3,
                "sentences": 3},
        size_bytes=len(data), source_chars=len("cat sleeps.cats sleep.I like green tea."),
        model_version=1, request_id="job-7")


def test_the_options_reach_the_format(client):
    data, summary = client.translate_file(TEMPLATE.encode(), "messages.pot", overwrite=True,
                                          review=False)

    catalog = {(e.msgctxt, e.msgid): e for e in polib.pofile(data.decode())}
    assert catalog[("button", "Thank you.")].msgstr == "THANK YOU."
    assert not any("fuzzy" in e.flags for e in catalog.values())
    assert summary.counts["written"] == 3

    _, whole = client.translate_file(SRT.encode(), "film.srt")
    data, by_cue = client.translate_file(SRT.encode(), "film.srt", cue_by_cue=True)
    assert (whole.counts["merged"], by_cue.counts["merged"]) == (1, 0)
    assert data.decode() == SRT.replace("I like", "I LIKE").replace("green</i> tea.",
                                                                    "GREEN</i> TEA.")


def test_an_xliff_file_is_filled_for_review_and_named_by_its_format(client):
    data, summary = client.translate_file(XLIFF.encode(), "strings", format="xliff")

    text = data.decode()
    assert ('<target state="needs-review-translation" state-qualifier="mt-suggestion">'
            'I LIKE <g id="1">GREEN</g> TEA.</target>') in text
    assert 'target-language="fr"' in text and text.count("<target") == 1
    assert (summary.name, summary.format, summary.media_type) == (
        "strings.fr.xlf", "xliff", "application/xliff+xml")


def test_a_file_in_many_messages_both_ways(served, monkeypatch):
    monkeypatch.setattr(client_files, "REQUEST_CHUNK_BYTES", 100)
    monkeypatch.setattr(server_files, "RESPONSE_CHUNK_BYTES", 64)  # the server is in-process
    requests = list(client_files.file_requests(TEMPLATE.encode(), "messages.pot"))
    assert len(requests) == 4 and not requests[1].HasField("header")

    with grpc.insecure_channel(served[0].target) as channel:
        stub = pb2_grpc.TranslationServiceStub(channel)
        responses = list(stub.TranslateFile(iter(requests), timeout=30))

    assert responses[0].HasField("summary")
    assert not any(r.HasField("summary") for r in responses[1:])
    data, summary = client_files.file_from_responses(responses)
    assert len(responses) == -(-len(data) // 64) and summary.size_bytes == len(data)
    assert 'msgstr "I LIKE GREEN TEA."' in data.decode()


@pytest.mark.parametrize(("data", "name", "expected"), [
    (b"Some notes.\n", "notes.rtf", "cannot tell the format of notes.rtf from its extension "
                                    "'.rtf': supported are .po (po), "),
    (b"# Notes\n\nBuy bread.\n", "notes.po", "notes.po:3: not PO syntax (not a comment, keyword "
                                             "or quoted string): is it a PO or POT file?"),
    (b"1\n00:00:01,000 -> 00:00:02,000\nHi.\n", "film.srt", "film.srt:2: "),
    (b"PK\x03\x04 not a zip", "report.docx", "report.docx is not a readable zip"),
])
def test_a_file_that_cannot_be_read_is_invalid_argument_naming_it(served, client, data, name,
                                                                  expected):
    with pytest.raises(RpcError) as error:
        client.translate_file(data, name)

    assert error.value.code() == StatusCode.INVALID_ARGUMENT
    assert error.value.details().startswith(expected)
    assert _model(served).read == []


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(served, client):
    big = TEMPLATE.encode() + b"\n" * LIMITS.max_file_bytes

    with pytest.raises(RpcError) as error:
        client.translate_file(big, "messages.pot")

    assert error.value.code() == StatusCode.RESOURCE_EXHAUSTED
    assert error.value.details() == (
        "the file is larger than this server's limit of 4000 bytes (--max-file-bytes). "
        "Received: more than 4000 bytes; split the file, or ask the operator for a larger "
        "limit.")
    assert _model(served).read == []


def test_a_file_with_too_many_sentences_is_refused_before_the_model_reads_any(served, client):
    text = "".join(f'msgid "Sentence number {i}."\nmsgstr ""\n\n' for i in range(6))

    with pytest.raises(RpcError) as error:
        client.translate_file(text.encode(), "many.po")

    assert error.value.code() == StatusCode.RESOURCE_EXHAUSTED
    assert error.value.details() == (
        "many.po has more sentences to translate than this server's limit of 5 a file "
        "(--max-file-sentences). Received: 6 distinct sentences; split the file.")
    assert _model(served).read == []


def test_a_glossary_is_written_into_the_file_and_an_unknown_name_is_not_found(client):
    data, _ = client.translate_file(TEMPLATE.encode(), "messages.pot",
                                    glossary=[("green tea", "thé vert")])
    assert 'msgstr "I LIKE thé vert."' in data.decode()

    with pytest.raises(RpcError) as error:
        client.translate_file(TEMPLATE.encode(), "messages.pot", glossary="medical")
    assert error.value.code() == StatusCode.NOT_FOUND
    assert "glossary_id 'medical' is not a glossary of this server" in error.value.details()


def test_the_stream_starts_with_its_header_and_has_one_only(served):
    header = pb2.FileHeader(name="messages.pot")
    cases = [
        ((), "the stream ended before its first request; send a header"),
        ((pb2.TranslateFileRequest(data=b"x"),), "request 0 has none"),
        ((pb2.TranslateFileRequest(header=header),
          pb2.TranslateFileRequest(header=header)), "request 1 has one too"),
        ((pb2.TranslateFileRequest(header=pb2.FileHeader()),), "the header has no file name"),
    ]
    with grpc.insecure_channel(served[0].target) as channel:
        stub = pb2_grpc.TranslationServiceStub(channel)
        for requests, expected in cases:
            with pytest.raises(RpcError) as error:
                list(stub.TranslateFile(iter(requests), timeout=30))
            assert error.value.code() == StatusCode.INVALID_ARGUMENT
            assert expected in error.value.details()


def test_the_client_checks_its_arguments_before_it_sends():
    with pytest.raises(TypeError, match="data must be the file's bytes. Received: str"):
        client_files.file_requests("msgid", "a.po")
    with pytest.raises(ValueError, match=r"format must be one of \('po', 'xliff', 'srt', "
                                         r"'vtt', 'docx', 'markdown'\)"):
        client_files.file_requests(b"", "a.po", format="rtf")


def test_the_server_says_its_file_limits(client):
    limits = client.model_info()["limits"]

    assert (limits["max_file_bytes"], limits["max_file_sentences"]) == (4000, 5)


# --- API keys: one request a file, charged the characters of its sentences -------------------


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    from serving.keys import Quota
    from tests.serving.test_server_keys import _keys_file

    directory = tmp_path_factory.mktemp("keyed")
    tokens = _keys_file(directory / "keys.json", small=Quota(chars_per_day=10),
                        daily=Quota(chars_per_day=60, requests_per_minute=2))
    with fake_server(directory / "model", keys_file=directory / "keys.json") as running:
        yield running[0], tokens


def _usage(server, name):
    async def usage():
        return server.server.quotas.usage().keys.get(name)

    return server.run(usage())


def test_a_file_is_one_request_charged_its_sentences_characters(keyed, monkeypatch):
    server, tokens = keyed
    monkeypatch.setattr(client_files, "REQUEST_CHUNK_BYTES", 50)  # 8 messages, one request
    with TranslationClient(server.target, timeout=30, token=tokens["daily"]) as client:
        _, summary = client.translate_file(TEMPLATE.encode(), "messages.pot")

        assert summary.source_chars == 39
        used = _usage(server, "daily")
        assert (used.requests, used.chars) == (1, 39)

        with pytest.raises(RpcError) as error:  # 39 + 39 > 60: refused whole, nothing charged
            client.translate_file(TEMPLATE.encode(), "messages.pot")
    assert error.value.code() == StatusCode.RESOURCE_EXHAUSTED
    assert error.value.details().startswith(
        "the key 'daily' has 21 of its 60 characters a day left (UTC) and this request has 39; "
        "nothing of it was translated.")
    assert dict(error.value.trailing_metadata())["retry-after"].isdigit()
    used = _usage(server, "daily")
    assert (used.requests, used.chars, used.rejected) == (2, 39, 1)


def test_a_key_without_the_quota_for_the_file_is_refused_and_charged_nothing(keyed):
    server, tokens = keyed
    with TranslationClient(server.target, timeout=30, token=tokens["small"]) as client:
        with pytest.raises(RpcError) as error:
            client.translate_file(TEMPLATE.encode(), "messages.pot")
        assert error.value.code() == StatusCode.RESOURCE_EXHAUSTED
        assert error.value.details() == (
            "this request has 39 characters, more than the key 'small' may send in a day (10); "
            "send it in smaller requests")
        with pytest.raises(RpcError) as error:  # a bad file: its request counted, no chars
            client.translate_file(b"# Notes\n\nBuy bread.\n", "notes.po")
        assert error.value.code() == StatusCode.INVALID_ARGUMENT
    assert _usage(server, "small").chars == 0


def test_a_file_needs_a_key(keyed):
    server, _ = keyed
    with TranslationClient(server.target, timeout=30) as client:
        with pytest.raises(RpcError) as error:
            client.translate_file(TEMPLATE.encode(), "messages.pot")
    assert error.value.code() == StatusCode.UNAUTHENTICATED


# --- FileJob on its own: the worker thread, the batcher's requests, cancellation ------------


class FakeBatcher:
    """`Batcher.translate` that shouts, records each request and its thread, and can hold."""

    def __init__(self):
        self.requests: list[tuple[list[str], str]] = []
        self.open = asyncio.Event()
        self.open.set()
        self.reached = asyncio.Event()
        self.cancelled = False

    async def translate(self, sentences, options, deadline=None):
        self.requests.append((list(sentences), threading.current_thread().name))
        self.reached.set()
        try:
            await self.open.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return [shouted(s) for s in sentences], 7


def _job(batcher, **limits):
    from documents.file_formats import FileSettings
    from nmt.types import DecodeOptions
    from serving.validation import ParsedFileHeader

    parsed = ParsedFileHeader("messages.pot", "po", FileSettings(), DecodeOptions(), "")
    return server_files.FileJob(batcher, Limits(**limits), parsed)


def test_the_file_is_read_in_a_worker_thread_and_its_sentences_go_through_the_batcher(
        monkeypatch):
    read_in = []

    def read_file(*args):
        read_in.append(threading.current_thread().name)
        return server_files_read_file(*args)

    server_files_read_file = server_files.read_file
    monkeypatch.setattr(server_files, "read_file", read_file)
    batcher = FakeBatcher()

    async def translate():
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="files") as executor:
            return await _job(batcher, max_sentences=2).run(TEMPLATE.encode(), executor)

    summary, data = asyncio.run(translate())

    assert read_in[0].startswith("files")  # parsed off the event loop
    assert [(sentences, thread) for sentences, thread in batcher.requests] == [
        (["cat sleeps.", "cats sleep."], "MainThread"),  # on the loop, max_sentences a request
        (["I like green tea."], "MainThread")]
    assert 'msgstr "I LIKE GREEN TEA."' in data.decode() and summary.model_version == 7


def test_a_cancelled_file_stops_its_worker_thread_and_its_model_request():
    batcher = FakeBatcher()
    batcher.open.clear()

    async def cancel_midway():
        executor = concurrent.futures.ThreadPoolExecutor(1)
        job = asyncio.ensure_future(_job(batcher).run(TEMPLATE.encode(), executor))
        await batcher.reached.wait()  # the worker thread waits for the model
        job.cancel()
        with pytest.raises(asyncio.CancelledError):
            await job
        free = asyncio.wrap_future(executor.submit(lambda: "free"))
        try:
            return await asyncio.wait_for(free, 30)  # its one thread is free again
        finally:
            batcher.open.set()  # (were it still waiting, this would let it end)
            executor.shutdown(wait=False)

    assert asyncio.run(cancel_midway()) == "free"
    assert len(batcher.requests) == 1 and batcher.cancelled
