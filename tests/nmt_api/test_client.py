"""`nmt_api.client`: sync and async clients return what `nmt.inference.translator` returns."""

import asyncio

import grpc
import numpy as np
import pytest

from nmt.types import DecodeOptions, Hypothesis, Translation
from nmt_api.client import AsyncTranslationClient, TranslationClient

OPTIONS = DecodeOptions(beam_size=3, n_best=2)
SENTENCES = ["Hello.", "How are you today?", ""]
SOURCES = ["The cat is black.", "How are you today?"]
TARGETS = ["Le chat est noir.", "Comment allez-vous aujourd'hui ?"]


@pytest.fixture(scope="module")
def server(tiny_server):
    return tiny_server


@pytest.fixture(scope="module")
def direct(server):
    """The served translator itself: what a client must reproduce."""
    return server.server.store.translator


def _assert_same(served, expected):
    assert len(served) == len(expected)
    for got, want in zip(served, expected, strict=True):
        assert isinstance(got, Translation) and all(isinstance(h, Hypothesis) for h in got.nbest)
        assert got.source == want.source and got.source_tokens == want.source_tokens
        assert len(got.nbest) == len(want.nbest)
        for g, w in zip(got.nbest, want.nbest, strict=True):
            assert (g.text, g.target_tokens, g.word_alignment) == (
                w.text, w.target_tokens, w.word_alignment)
            assert g.score == pytest.approx(w.score, rel=1e-6)
            assert isinstance(g.alignment, np.ndarray) and g.alignment.shape == w.alignment.shape
            np.testing.assert_allclose(g.alignment, w.alignment, rtol=1e-6)


def test_translate_returns_the_translators_results(server, direct):
    with TranslationClient(server.target, timeout=60) as client:
        served = client.translate(SENTENCES, OPTIONS)

    _assert_same(served[:2], direct.translate(SENTENCES[:2], OPTIONS))
    assert served[2].text == "" and served[2].source == ""


def test_without_alignment_the_matrix_is_empty(server):
    with TranslationClient(server.target, timeout=60) as client:
        translation = client.translate(["Hello."], with_alignment=False)[0]

    assert translation.alignment.shape == (0, 0) and isinstance(translation.text, str)


def test_translate_stream_yields_one_list_per_batch_in_order(server, direct):
    batches = (batch for batch in [["Hello."], [], ["How are you today?", "Hello."]])

    with TranslationClient(server.target, timeout=60) as client:
        results = list(client.translate_stream(batches, OPTIONS))

    assert [len(r) for r in results] == [1, 0, 2]
    _assert_same(results[2], direct.translate(["How are you today?", "Hello."], OPTIONS))


def test_a_single_string_is_refused_before_sending(server):
    with TranslationClient(server.target) as client:
        with pytest.raises(TypeError, match="not a single string"):
            client.translate("Hello.")


@pytest.mark.parametrize("bad", ["Hello.", ["Hello.", 3]], ids=["string", "non-string"])
def test_bad_sentence_lists_fail_as_in_the_translator(server, direct, bad):
    with pytest.raises(TypeError) as local:
        direct.translate(bad)
    with TranslationClient(server.target) as client, pytest.raises(TypeError) as remote:
        client.translate(bad)

    assert str(remote.value) == str(local.value)


def test_align_returns_the_translators_alignments(server, direct):
    with TranslationClient(server.target, timeout=60) as client:
        served = client.align(SOURCES + [""], TARGETS + [""])

    _assert_same(served[:2], direct.align(SOURCES, TARGETS))
    for pair in served[:2]:
        assert pair.alignment.shape == (len(pair.target_tokens), len(pair.source_tokens))
        np.testing.assert_allclose(pair.alignment.sum(axis=1), 1.0, rtol=1e-4)
    assert served[2].text == "" and served[2].alignment.shape == (0, 0)


def test_align_without_alignment_the_matrix_is_empty(server):
    with TranslationClient(server.target, timeout=60) as client:
        [pair] = client.align(SOURCES[:1], TARGETS[:1], with_alignment=False)

    assert pair.alignment.shape == (0, 0) and pair.text == TARGETS[0] and pair.word_alignment


@pytest.mark.parametrize("sources, targets, match", [
    ("Hello.", ["Bonjour."], "sources must be a sequence of strings, not a single string"),
    (["Hello."], "Bonjour.", "targets must be a sequence of strings, not a single string"),
    (["Hello."], [b"Bonjour."], "target 0 must be a str. Received: bytes"),
])
def test_align_arguments_are_checked_before_sending(server, sources, targets, match):
    with TranslationClient(server.target) as client:
        with pytest.raises(TypeError, match=match):
            client.align(sources, targets)


def test_align_with_mismatched_counts_is_invalid_argument(server):
    with TranslationClient(server.target, timeout=60) as client:
        with pytest.raises(grpc.RpcError) as error:
            client.align(SOURCES, TARGETS[:1])

    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "2 sources and 1 targets" in error.value.details()


def test_errors_are_rpc_errors_with_the_servers_message(server):
    with TranslationClient(server.target, timeout=60) as client:
        with pytest.raises(grpc.RpcError) as error:
            client.translate(["Hello."], DecodeOptions(beam_size=20))

    assert error.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "beam_size" in error.value.details()


def test_model_info(server):
    with TranslationClient(server.target, timeout=60) as client:
        info = client.model_info()

    assert info["name"] == "tiny" and info["version"] == 1
    assert info["limits"]["max_sentences"] > 0


def test_async_client(server, direct):
    async def main():
        async with AsyncTranslationClient(server.target, timeout=60) as client:
            await client.wait_until_serving(timeout=10)
            translated = await client.translate(SENTENCES[:2], OPTIONS)

            async def batches():
                yield ["Hello."]
                yield ["How are you today?"]

            streamed = [r async for r in client.translate_stream(batches(), OPTIONS)]
            aligned = await client.align(SOURCES, TARGETS)
            with pytest.raises(TypeError, match="sources must be a sequence"):
                await client.align("Hello.", ["Bonjour."])
            return translated, streamed, aligned, await client.model_info()

    translated, streamed, aligned, info = asyncio.run(main())

    expected = direct.translate(SENTENCES[:2], OPTIONS)
    _assert_same(translated, expected)
    _assert_same([r[0] for r in streamed], expected)
    _assert_same(aligned, direct.align(SOURCES, TARGETS))
    assert info["version"] == 1


DOCUMENTS = ["Hello. How are you today?\n\nThe cat is black.", "Click <b>Save</b>. Then quit."]


def _same_documents(served, direct, formats):
    from documents.markup import plan_document
    from documents.sentences import join_documents, sentences_of
    from nmt.types import DocumentTranslation

    for document, source, format in zip(served, DOCUMENTS, formats, strict=True):
        plan = plan_document(source, format)
        [want] = join_documents([plan], direct.translate(sentences_of([plan]), OPTIONS))
        assert isinstance(document, DocumentTranslation) and document.source == source
        assert (document.text, document.link_spans) == (want.text, want.link_spans)
        _assert_same([s.result for s in document.sentences], [s.result for s in want.sentences])


def test_translate_documents_returns_what_the_documents_module_joins(server, direct):
    with TranslationClient(server.target, timeout=60) as client:
        text = client.translate_documents(DOCUMENTS[:1], "text", OPTIONS)
        page = client.translate_documents(DOCUMENTS[1:], "html", OPTIONS)
        with pytest.raises(grpc.RpcError) as error:
            client.translate_documents(["<b>Unclosed."], "html")

    _same_documents(text + page, direct, ["text", "html"])
    assert error.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "at character 0" in error.value.details()


def test_async_translate_documents(server, direct):
    async def main():
        async with AsyncTranslationClient(server.target, timeout=60) as client:
            return (await client.translate_documents(DOCUMENTS[:1], "text", OPTIONS)
                    + await client.translate_documents(DOCUMENTS[1:], "html", OPTIONS))

    _same_documents(asyncio.run(main()), direct, ["text", "html"])


TAGGED = ["Click <b>Save</b> now.", '<x id="1"/>']
PLAIN = ["Cliquez sur Enregistrer maintenant.", ""]


def _same_projections(served, direct, format):
    from documents.markup import plan_projection
    from documents.sentences import join_documents, sentences_of

    plans = [plan_projection(s, t, format) for s, t in zip(TAGGED, PLAIN, strict=True)]
    targets = [target for plan in plans for target in plan.targets]
    expected = join_documents(plans, direct.align(sentences_of(plans), targets))
    for got, want, source in zip(served, expected, TAGGED, strict=True):
        assert got.source == source and (got.text, got.link_spans) == (want.text, want.link_spans)
        _assert_same([s.result for s in got.sentences], [s.result for s in want.sentences])
    assert len(served) == len(TAGGED)


def test_align_documents_projects_the_sources_tags(server, direct):
    with TranslationClient(server.target, timeout=60) as client:
        served = client.align_documents(TAGGED, PLAIN, "xml")
        with pytest.raises(ValueError, match="format must be one of"):
            client.align_documents(TAGGED, PLAIN, "pdf")
        with pytest.raises(TypeError, match="targets must be a sequence"):
            client.align_documents(TAGGED, "Cliquez.")

    _same_projections(served, direct, "xml")
    assert served[0].text.count("<b>") == 1 and served[1].text == '<x id="1"/>'


def test_async_align_documents(server, direct):
    async def main():
        async with AsyncTranslationClient(server.target, timeout=60) as client:
            return await client.align_documents(TAGGED, PLAIN, "xml")

    _same_projections(asyncio.run(main()), direct, "xml")


PLACEHOLDERS = ["Hello %s, you have {0} new messages.", "Hello."]


def test_placeholders_come_back_as_the_protection_module_gives_them(server, direct):
    from documents.protection import translate_protected

    def in_process(sentences):
        return direct.translate(sentences, OPTIONS)

    async def main():
        async with AsyncTranslationClient(server.target, timeout=60) as client:
            kept = await client.translate(PLACEHOLDERS, OPTIONS)
            off = await client.translate(PLACEHOLDERS, OPTIONS, keep_placeholders=False)
            streamed = [r async for r in client.translate_stream(
                [PLACEHOLDERS], OPTIONS, keep_placeholders=False)]
            return kept, off, streamed

    with TranslationClient(server.target, timeout=60) as client:
        kept = client.translate(PLACEHOLDERS, OPTIONS)
        off = client.translate(PLACEHOLDERS, OPTIONS, keep_placeholders=False)
        [streamed] = client.translate_stream([PLACEHOLDERS], OPTIONS)
    async_kept, async_off, [async_streamed] = asyncio.run(main())
    expected = translate_protected(PLACEHOLDERS, in_process)

    for served in (kept, streamed, async_kept):
        _assert_same(served, expected)
    assert "%s" in kept[0].text and "{0}" in kept[0].text
    for served in (off, async_off, async_streamed):
        _assert_same(served, in_process(PLACEHOLDERS))
