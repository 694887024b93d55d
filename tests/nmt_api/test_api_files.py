"""`nmt_api.files` and the clients' `translate_file`: the request stream, the answer put back
together, and both clients against an in-process server on a fake model."""

import asyncio

import pytest

from nmt.types import DecodeOptions
from nmt_api import files, protos
from nmt_api.client import AsyncTranslationClient, TranslationClient
from tests.serving.file_fakes import fake_server

pb2, _ = protos.load()
MARKDOWN = b"# Hello\n\nI like green tea.\n"


def test_the_header_goes_first_with_the_options_then_the_bytes_in_chunks(monkeypatch):
    monkeypatch.setattr(files, "REQUEST_CHUNK_BYTES", 10)

    requests = list(files.file_requests(
        MARKDOWN, "notes.txt", format="markdown", overwrite=True, review=False, cue_by_cue=True,
        keep_placeholders=False, options=DecodeOptions(beam_size=2), glossary="medical",
        request_id="r1"))

    header = requests[0].header
    assert (header.name, header.format, header.overwrite, header.review, header.cue_by_cue,
            header.keep_placeholders) == ("notes.txt", pb2.FILE_FORMAT_MARKDOWN, True, False,
                                          True, False)
    assert header.options.beam_size == 2 and header.glossary.glossary_id == "medical"
    assert header.request_id == "r1"
    assert [r.data for r in requests] == [MARKDOWN[i:i + 10] for i in range(0, 28, 10)]
    assert not any(r.HasField("header") for r in requests[1:])


def test_an_empty_file_is_one_request():
    [request] = files.file_requests(b"", "empty.md")

    assert request.header.format == pb2.FILE_FORMAT_UNSPECIFIED and request.data == b""


def test_the_answer_is_its_chunks_in_order_and_the_first_summary():
    summary = pb2.FileSummary(name="a.fr.md", format=pb2.FILE_FORMAT_MARKDOWN, text="done",
                              counts={"written": 2}, size_bytes=6, model_version=3)
    responses = [pb2.TranslateFileResponse(summary=summary, data=b"ab"),
                 pb2.TranslateFileResponse(data=b"cd"), pb2.TranslateFileResponse(data=b"ef")]

    data, got = files.file_from_responses(responses)

    assert data == b"abcdef"
    assert (got.name, got.format, got.text, got.counts, got.model_version) == (
        "a.fr.md", "markdown", "done", {"written": 2}, 3)
    with pytest.raises(ValueError, match="the server's answer carried no summary"):
        files.file_from_responses(responses[1:])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with fake_server(tmp_path_factory.mktemp("model")) as (running, _):
        yield running


def test_both_clients_translate_a_file(server):
    with TranslationClient(server.target, timeout=30) as client:
        data, summary = client.translate_file(MARKDOWN, "notes.md")

    async def translate():
        async with AsyncTranslationClient(server.target, timeout=30) as client:
            return await client.translate_file(MARKDOWN, "notes.md", review=False)

    assert asyncio.run(translate()) == (data, summary)
    assert data == b"# HELLO\n\nI LIKE GREEN TEA.\n"
    assert (summary.name, summary.format, summary.model_version) == ("notes.fr.md", "markdown",
                                                                     1)
