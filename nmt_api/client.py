"""Python clients of the gRPC translation service (`nmt.v1.TranslationService`).

They return the same types as `nmt.inference.translator.Translator` (`nmt.types`, with
alignment matrices as NumPy arrays) and need neither TensorFlow nor a model:

    from nmt_api.client import TranslationClient

    with TranslationClient("localhost:50051") as client:
        for t in client.translate(["How are you?"]):
            print(t.text, t.best.pharaoh(), t.alignment.shape)  # (T, S)
        [pair] = client.align(["How are you?"], ["Comment allez-vous ?"])
        [page] = client.translate_documents(["Click <b>Save</b>. Then quit."], "html")
        page.text, [s.target_span for s in page.sentences]
        [tagged] = client.align_documents(["Click <b>Save</b>."], ["Cliquez sur Enregistrer."],
                                          "html")
        tagged.text  # "Cliquez sur <b>Enregistrer</b>."
        [t] = client.translate(["Wear a face mask."], glossary=[("face mask", "masque")])
        t.best.applied_terms  # (AppliedTerm(source="face mask", target="masque", ...),)
        client.translate(["..."], glossary="medical")   # a server glossary (list_glossaries())
        data, summary = client.translate_file(Path("guide.md").read_bytes(), "guide.md")
        summary.name, summary.text  # "guide.fr.md", "3 of 3 paragraphs, ... translated, ..."

Errors are `grpc.RpcError`s: `error.code()` is the status (INVALID_ARGUMENT,
RESOURCE_EXHAUSTED, UNAVAILABLE, ...) and `error.details()` says what to change.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Sequence
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from nmt.types import DecodeOptions, DocumentTranslation, Translation, sentence_list
from nmt_api import convert, protos
from nmt_api.files import FileSummary, file_from_async_responses, file_from_responses, file_requests
from nmt_api.protos import SERVICE_NAME

pb2, pb2_grpc = protos.load()

# Responses carry alignment matrices; allow large ones (the server limits requests).
_CHANNEL_OPTIONS = [("grpc.max_receive_message_length", 256 * 1024 * 1024),
                    ("grpc.max_send_message_length", 256 * 1024 * 1024)]
# gRPC's client-side load-balancing policies: `pick_first` (its default) keeps one
# connection; `round_robin` connects to every address the target resolves to and spreads
# calls over them (a Kubernetes headless Service: `dns:///nmt-grpc.NAMESPACE:50051`).
LOAD_BALANCING = ("pick_first", "round_robin")


def channel_options(load_balancing: str | None = None) -> list[tuple[str, object]]:
    """The client's channel arguments, with `load_balancing` (None: gRPC's default).

    Raises:
        ValueError: a policy not in `LOAD_BALANCING`.
    """
    if load_balancing is None:
        return list(_CHANNEL_OPTIONS)
    if load_balancing not in LOAD_BALANCING:
        raise ValueError(f"load_balancing must be one of {LOAD_BALANCING} or None. "
                         f"Received: load_balancing={load_balancing!r}")
    return [*_CHANNEL_OPTIONS, ("grpc.lb_policy_name", load_balancing)]


def _view(with_alignment: bool = True, with_attention: bool = False,
          links: str | None = None, link_threshold: float | None = None) -> dict:
    """The request fields that choose what each hypothesis carries."""
    view = {"with_alignment": with_alignment, "with_attention": with_attention}
    if links:
        view["word_links"] = pb2.WordLinks(rule=links, threshold=link_threshold)
    return view


# `translate_documents`' formats and their `TextFormat` values: {"text": 1, "html": 2, ...}.
DOCUMENT_FORMATS = {name.removeprefix("TEXT_FORMAT_").lower(): value
                    for name, value in pb2.TextFormat.items() if value}


# What `glossary=` takes: a server glossary's name, entries ((source, target) pairs,
# {"source", "target"} mappings, an `documents.glossary.Glossary`), or a `Glossary` message.
GlossaryArg = str | Iterable[Any] | Any


def _request(sentences: list[str], options: DecodeOptions | None, request_id: str = "",
             format: str | None = None, keep_placeholders: bool = True,
             glossary: GlossaryArg | None = None, glossary_exact_case: bool | None = None,
             **view):
    # Set only when off: a request that keeps them is the same bytes as before the field.
    given = {} if keep_placeholders else {"keep_placeholders": False}
    if glossary is not None:  # likewise: a request without one is the same bytes as before
        given["glossary"] = convert.glossary_to_proto(glossary, glossary_exact_case)
    return pb2.TranslateRequest(
        sentences=sentences, options=convert.options_to_proto(options),
        request_id=request_id, format=_text_format(format), **given, **_view(**view))


def _glossary_fields(glossary: GlossaryArg | None, exact_case: bool | None) -> dict:
    """`_request`'s glossary arguments, the message built once (a stream sends it each time)."""
    if glossary is None:
        return {}
    return {"glossary": convert.glossary_to_proto(glossary, exact_case)}


def _text_format(format: str | None) -> int:
    """The `TextFormat` value of a document format (None: sentences)."""
    if format is None:
        return pb2.TEXT_FORMAT_UNSPECIFIED
    if format not in DOCUMENT_FORMATS:
        raise ValueError(f"format must be one of {tuple(DOCUMENT_FORMATS)}. "
                         f"Received: format={format!r}")
    return DOCUMENT_FORMATS[format]


def _align_request(sources: list[str], targets: list[str], format: str | None = None, **view):
    return pb2.AlignRequest(sources=sources, targets=targets, format=_text_format(format),
                            **_view(**view))


def _credentials(root_certificates: bytes | None, token: str | None):
    metadata = (("authorization", f"Bearer {token}"),) if token else ()
    tls = grpc.ssl_channel_credentials(root_certificates) if root_certificates else None
    return tls, metadata


class TranslationClient:
    """Blocking client.

    Args:
        target: `host:port` of the server.
        timeout: deadline of each call in seconds (of the whole stream for
            `translate_stream`); None for no deadline.
        root_certificates: PEM CA certificate(s); connects with TLS when given.
        token: bearer token, sent as `authorization: Bearer <token>`.
        load_balancing: `"round_robin"` to spread calls over every address
            `target` resolves to (e.g. `dns:///nmt-grpc.default:50051`, a headless
            Service); None or `"pick_first"`: one connection (gRPC's default).
    """

    def __init__(self, target: str, *, timeout: float | None = None,
                 root_certificates: bytes | None = None, token: str | None = None,
                 load_balancing: str | None = None):
        tls, self._metadata = _credentials(root_certificates, token)
        options = channel_options(load_balancing)
        self._channel = (grpc.secure_channel(target, tls, options) if tls
                         else grpc.insecure_channel(target, options))
        self._stub = pb2_grpc.TranslationServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self.timeout = timeout

    def translate(self, sentences: Sequence[str], options: DecodeOptions | None = None, *,
                  with_alignment: bool = True, with_attention: bool = False,
                  links: str | None = None, link_threshold: float | None = None,
                  keep_placeholders: bool = True, glossary: GlossaryArg | None = None,
                  glossary_exact_case: bool | None = None) -> list[Translation]:
        """Translates sentences in one request.

        Args:
            sentences: English sentences (at most the server's `max_sentences`).
            options: decoding options; None takes the server's defaults.
            with_alignment: whether to receive the alignment matrices; without
                them `alignment` is an empty `(0, 0)` array (word links still come).
            with_attention: whether to receive the decoder's own attention too
                (`Hypothesis.attention`; None without it).
            links: a rule of `nmt.alignment.word_links.LINK_RULES` for the word
                links (argmax, threshold, intersect, grow); None: the model's.
            link_threshold: the rule's threshold; None: the server's default.
            keep_placeholders: give placeholders (`%s`, `{0}`, `&amp;`...) back
                exactly, once each (`TranslateRequest.keep_placeholders`); False
                lets the model read them as text.
            glossary: terms to write into the translations
                (`TranslateRequest.glossary`, docs/glossaries.md): a server
                glossary's name (`list_glossaries`), `(source, target)` pairs or
                `{"source": ..., "target": ...}` mappings (at most the server's
                `max_glossary_entries`), an `documents.glossary.Glossary`
                (e.g. `Glossary.read("terms.tsv")`), or a `Glossary` message
                (entries and a name together). None: no glossary.
            glossary_exact_case: match terms only as written; None: the
                glossary's own `exact_case` (a `Glossary`'s), else False.

        Returns:
            One `Translation` per sentence, in order; with a glossary each
            hypothesis's `applied_terms` says which terms were written where.

        Raises:
            TypeError: `glossary` is none of the above.
            grpc.RpcError: NOT_FOUND for a glossary name the server does not
                have; INVALID_ARGUMENT for a bad entry (the details number it);
                RESOURCE_EXHAUSTED over a limit.
        """
        sentences = sentence_list(sentences)
        request = _request(sentences, options, with_alignment=with_alignment,
                           with_attention=with_attention, links=links,
                           link_threshold=link_threshold, keep_placeholders=keep_placeholders,
                           glossary=glossary, glossary_exact_case=glossary_exact_case)
        response = self._stub.Translate(request,
                                        timeout=self.timeout, metadata=self._metadata)
        return convert.translations_from_response(response, sentences)

    def translate_documents(self, documents: Sequence[str], format: str = "text",
                            options: DecodeOptions | None = None, *,
                            with_alignment: bool = True, with_attention: bool = False,
                            links: str | None = None, link_threshold: float | None = None,
                            keep_placeholders: bool = True,
                            glossary: GlossaryArg | None = None,
                            glossary_exact_case: bool | None = None
                            ) -> list[DocumentTranslation]:
        """Translates documents (paragraphs, HTML or XML) in one request.

        Each document is split into sentences on the server; its sentences
        share model calls with every other request's.

        Args:
            documents: English documents (at most the server's `max_sentences`
                documents of at most `max_chars` characters each, and
                `max_sentences` sentences in all).
            format: `text` (plain text: sentences and paragraphs), `html` or
                `xml` (inline tags carried across through the word links).
            options / with_alignment / with_attention / links /
                link_threshold / keep_placeholders / glossary /
                glossary_exact_case: as for `translate`, for every sentence.

        Returns:
            One `DocumentTranslation` per document, in order: `text` is the
            translated document; per sentence its `source_span` (in the
            document as given), `target_span` (in `text`) and `result` (a
            `Translation` of the sentence as the model read it); `link_spans`
            the word links as character spans; with a glossary,
            `applied_terms` the terms written, as spans on the document and
            on `text`.

        Raises:
            ValueError: `format` is not text, html or xml.
            grpc.RpcError: INVALID_ARGUMENT for malformed markup (the details
                name the document and the character position);
                RESOURCE_EXHAUSTED over a limit.
        """
        documents = sentence_list(documents, "documents")
        request = _request(documents, options, format=format, with_alignment=with_alignment,
                           with_attention=with_attention, links=links,
                           link_threshold=link_threshold, keep_placeholders=keep_placeholders,
                           glossary=glossary, glossary_exact_case=glossary_exact_case)
        response = self._stub.Translate(request, timeout=self.timeout, metadata=self._metadata)
        return convert.documents_from_response(response, documents)

    def translate_stream(self, batches: Iterable[Sequence[str]],
                         options: DecodeOptions | None = None, *,
                         keep_placeholders: bool = True, glossary: GlossaryArg | None = None,
                         glossary_exact_case: bool | None = None
                         ) -> Iterator[list[Translation]]:
        """Translates batches over one `TranslateStream` call (`keep_placeholders`,
        `glossary` and `glossary_exact_case` as for `translate`, sent with every batch).

        Yields:
            One list of translations per input batch, in input order. The
            server reads ahead a few batches only, so `batches` may be a long
            (lazy) iterable.
        """
        sent: dict[int, list[str]] = {}
        given = _glossary_fields(glossary, glossary_exact_case)

        def requests():
            for index, batch in enumerate(batches):
                sent[index] = sentence_list(batch)
                yield _request(sent[index], options, request_id=str(index),
                               keep_placeholders=keep_placeholders, **given)

        responses = self._stub.TranslateStream(requests(), timeout=self.timeout,
                                               metadata=self._metadata)
        for response in responses:
            yield convert.translations_from_response(response, sent.pop(response.request_index))

    def align(self, sources: Sequence[str], targets: Sequence[str], *,
              with_alignment: bool = True, with_attention: bool = False,
              links: str | None = None,
              link_threshold: float | None = None) -> list[Translation]:
        """Forced alignment of given (source, target) pairs in one request.

        Args:
            sources: English sentences (at most the server's `max_sentences`).
            targets: one French sentence per source; blank only where the
                source is blank too.
            with_alignment: whether to receive the alignment matrices; without
                them `alignment` is an empty `(0, 0)` array (word links still come).
            with_attention / links / link_threshold: as for `translate`.

        Returns:
            One `Translation` per pair, in order: `text` is the target,
            `alignment` has shape `(T, S)` (T target pieces, S source pieces),
            `word_alignment` links the whitespace words of source and target,
            and `score` is the target's total log-probability.

        Raises:
            TypeError: `sources` or `targets` is a single string, or holds a
                non-string.
            grpc.RpcError: INVALID_ARGUMENT if the counts differ or a target
                is blank for a non-blank source; RESOURCE_EXHAUSTED over a limit.
        """
        sources = sentence_list(sources, "sources")
        targets = sentence_list(targets, "targets")
        request = _align_request(sources, targets, with_alignment=with_alignment,
                                 with_attention=with_attention, links=links,
                                 link_threshold=link_threshold)
        response = self._stub.Align(request, timeout=self.timeout, metadata=self._metadata)
        return convert.alignments_from_response(response, sources)

    def align_documents(self, sources: Sequence[str], targets: Sequence[str],
                        format: str = "html", *, with_alignment: bool = True,
                        with_attention: bool = False, links: str | None = None,
                        link_threshold: float | None = None) -> list[DocumentTranslation]:
        """Puts each marked-up source's tags onto its given plain target, in one request.

        Each source is aligned whole (never split) to its target by forced
        decoding, and its inline tags are put around the target words aligned
        to the words they enclosed (as `nmt align --format` does).

        Args:
            sources: English segments with markup (or plain text for `text`),
                at most the server's `max_sentences`.
            targets: one plain French translation per source (`&` and `<`
                are text); blank only where the source has no word.
            format: `html`, `xml` (tags projected) or `text` (plain: the
                answer carries the character links only).
            with_alignment / with_attention / links / link_threshold: as for
                `align`.

        Returns:
            One `DocumentTranslation` per pair, in order: `text` is the target
            with the source's tags; `sentences` the one aligned segment (its
            `result.source` the source's words as aligned, its `result` the
            forced alignment), none for a source without a word;
            `link_spans` the word links as characters of the source as given
            and of `text`.

        Raises:
            ValueError: `format` is not text, html or xml.
            grpc.RpcError: INVALID_ARGUMENT for malformed markup (the details
                name the source and the character position) or a blank
                target for a source with words; RESOURCE_EXHAUSTED over a limit.
        """
        sources = sentence_list(sources, "sources")
        targets = sentence_list(targets, "targets")
        request = _align_request(sources, targets, format, with_alignment=with_alignment,
                                 with_attention=with_attention, links=links,
                                 link_threshold=link_threshold)
        response = self._stub.Align(request, timeout=self.timeout, metadata=self._metadata)
        return convert.documents_from_response(response, sources)

    def translate_file(self, data: bytes, name: str, **options) -> tuple[bytes, FileSummary]:
        """Translates a whole file, its format kept, over one `TranslateFile` call.

        Args:
            data: the file's bytes (at most the server's `max_file_bytes`).
            name: its name, e.g. "messages.pot": the extension gives the format
                unless `format=` is given; errors name the file by it.
            **options: `format` ("po", "xliff", "srt", "vtt", "docx",
                "markdown"; None: from `name`), `overwrite` (PO, XLIFF: replace
                translations there are; False), `review` (mark them for review:
                PO fuzzy, XLIFF needs-review; True), `cue_by_cue` (subtitles;
                False), `keep_placeholders` (True), `options` (`DecodeOptions`;
                None: the server's), `glossary` and `glossary_exact_case` (as
                for `translate`), `request_id` (echoed in the summary).

        Returns:
            `(the translated file's bytes, FileSummary)`; the summary's `name`
            is a name for the translation ("messages.fr.po") and `text` what
            `nmt translate-file` prints.

        Raises:
            TypeError, ValueError: a bad argument (see `nmt_api.files.file_requests`).
            grpc.RpcError: INVALID_ARGUMENT for a file the server cannot read
                (the details name the file and line) or of no known format;
                RESOURCE_EXHAUSTED over `max_file_bytes` or `max_file_sentences`;
                NOT_FOUND for a glossary name the server does not have.
        """
        requests = file_requests(data, name, **options)
        responses = self._stub.TranslateFile(requests, timeout=self.timeout,
                                             metadata=self._metadata)
        return file_from_responses(responses)

    def model_info(self) -> dict:
        """The served model (name, version, attention, vocabularies, scores, ...) and limits."""
        response = self._stub.GetModelInfo(pb2.GetModelInfoRequest(), timeout=self.timeout,
                                           metadata=self._metadata)
        return convert.model_info_from_proto(response)

    def list_glossaries(self) -> list[dict]:
        """The server's named glossaries: per glossary its `name` (for `glossary=`),
        `entries`, `loaded_at` (RFC 3339, UTC) and `file`; [] when it has none."""
        response = self._stub.ListGlossaries(pb2.ListGlossariesRequest(), timeout=self.timeout,
                                             metadata=self._metadata)
        return convert.glossaries_from_proto(response)

    def default_options(self) -> DecodeOptions:
        """The served model's decoding for requests that set no options (its recommended
        decoding, e.g. greedy for a distilled model; `DecodeOptions()` from an older
        server)."""
        return DecodeOptions(**self.model_info()["default_options"])

    def wait_until_serving(self, timeout: float = 60.0) -> None:
        """Blocks until the health service reports SERVING; `TimeoutError` after `timeout` s."""
        end = time.monotonic() + timeout
        while True:
            try:
                status = self._health.Check(
                    health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=2.0).status
                if status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass  # not listening yet
            if time.monotonic() > end:
                raise TimeoutError(f"the server was not SERVING within {timeout} s")
            time.sleep(0.2)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> TranslationClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class AsyncTranslationClient:
    """`asyncio` client with the same methods as `TranslationClient`, as coroutines.

    `translate_stream` is an async iterator and accepts a plain or an async
    iterable of batches. Use it as `async with AsyncTranslationClient(...)`.
    """

    def __init__(self, target: str, *, timeout: float | None = None,
                 root_certificates: bytes | None = None, token: str | None = None,
                 load_balancing: str | None = None):
        tls, self._metadata = _credentials(root_certificates, token)
        options = channel_options(load_balancing)
        self._channel = (grpc.aio.secure_channel(target, tls, options) if tls
                         else grpc.aio.insecure_channel(target, options))
        self._stub = pb2_grpc.TranslationServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self.timeout = timeout

    async def translate(self, sentences: Sequence[str], options: DecodeOptions | None = None,
                        *, with_alignment: bool = True, with_attention: bool = False,
                        links: str | None = None, link_threshold: float | None = None,
                        keep_placeholders: bool = True, glossary: GlossaryArg | None = None,
                        glossary_exact_case: bool | None = None) -> list[Translation]:
        """See `TranslationClient.translate`."""
        sentences = sentence_list(sentences)
        request = _request(sentences, options, with_alignment=with_alignment,
                           with_attention=with_attention, links=links,
                           link_threshold=link_threshold, keep_placeholders=keep_placeholders,
                           glossary=glossary, glossary_exact_case=glossary_exact_case)
        response = await self._stub.Translate(request,
                                              timeout=self.timeout, metadata=self._metadata)
        return convert.translations_from_response(response, sentences)

    async def translate_documents(self, documents: Sequence[str], format: str = "text",
                                  options: DecodeOptions | None = None, *,
                                  with_alignment: bool = True, with_attention: bool = False,
                                  links: str | None = None, link_threshold: float | None = None,
                                  keep_placeholders: bool = True,
                                  glossary: GlossaryArg | None = None,
                                  glossary_exact_case: bool | None = None
                                  ) -> list[DocumentTranslation]:
        """See `TranslationClient.translate_documents`."""
        documents = sentence_list(documents, "documents")
        request = _request(documents, options, format=format, with_alignment=with_alignment,
                           with_attention=with_attention, links=links,
                           link_threshold=link_threshold, keep_placeholders=keep_placeholders,
                           glossary=glossary, glossary_exact_case=glossary_exact_case)
        response = await self._stub.Translate(request, timeout=self.timeout,
                                              metadata=self._metadata)
        return convert.documents_from_response(response, documents)

    async def translate_stream(
        self, batches: Iterable[Sequence[str]] | AsyncIterable[Sequence[str]],
        options: DecodeOptions | None = None, *, keep_placeholders: bool = True,
        glossary: GlossaryArg | None = None, glossary_exact_case: bool | None = None,
    ) -> AsyncIterator[list[Translation]]:
        """See `TranslationClient.translate_stream`."""
        sent: dict[int, list[str]] = {}
        given = _glossary_fields(glossary, glossary_exact_case)

        async def requests():
            index = 0
            async for batch in _aiter(batches):
                sent[index] = sentence_list(batch)
                yield _request(sent[index], options, request_id=str(index),
                               keep_placeholders=keep_placeholders, **given)
                index += 1

        call = self._stub.TranslateStream(requests(), timeout=self.timeout,
                                          metadata=self._metadata)
        async for response in call:
            yield convert.translations_from_response(response, sent.pop(response.request_index))

    async def align(self, sources: Sequence[str], targets: Sequence[str], *,
                    with_alignment: bool = True, with_attention: bool = False,
                    links: str | None = None,
                    link_threshold: float | None = None) -> list[Translation]:
        """See `TranslationClient.align`."""
        sources = sentence_list(sources, "sources")
        targets = sentence_list(targets, "targets")
        request = _align_request(sources, targets, with_alignment=with_alignment,
                                 with_attention=with_attention, links=links,
                                 link_threshold=link_threshold)
        response = await self._stub.Align(request, timeout=self.timeout,
                                          metadata=self._metadata)
        return convert.alignments_from_response(response, sources)

    async def align_documents(self, sources: Sequence[str], targets: Sequence[str],
                              format: str = "html", *, with_alignment: bool = True,
                              with_attention: bool = False, links: str | None = None,
                              link_threshold: float | None = None) -> list[DocumentTranslation]:
        """See `TranslationClient.align_documents`."""
        sources = sentence_list(sources, "sources")
        targets = sentence_list(targets, "targets")
        request = _align_request(sources, targets, format, with_alignment=with_alignment,
                                 with_attention=with_attention, links=links,
                                 link_threshold=link_threshold)
        response = await self._stub.Align(request, timeout=self.timeout,
                                          metadata=self._metadata)
        return convert.documents_from_response(response, sources)

    async def translate_file(self, data: bytes, name: str,
                             **options) -> tuple[bytes, FileSummary]:
        """See `TranslationClient.translate_file`."""
        requests = file_requests(data, name, **options)
        call = self._stub.TranslateFile(_aiter(requests), timeout=self.timeout,
                                        metadata=self._metadata)
        return await file_from_async_responses(call)

    async def model_info(self) -> dict:
        """See `TranslationClient.model_info`."""
        response = await self._stub.GetModelInfo(pb2.GetModelInfoRequest(),
                                                 timeout=self.timeout, metadata=self._metadata)
        return convert.model_info_from_proto(response)

    async def list_glossaries(self) -> list[dict]:
        """See `TranslationClient.list_glossaries`."""
        response = await self._stub.ListGlossaries(pb2.ListGlossariesRequest(),
                                                   timeout=self.timeout, metadata=self._metadata)
        return convert.glossaries_from_proto(response)

    async def default_options(self) -> DecodeOptions:
        """See `TranslationClient.default_options`."""
        return DecodeOptions(**(await self.model_info())["default_options"])

    async def wait_until_serving(self, timeout: float = 60.0) -> None:
        """See `TranslationClient.wait_until_serving`."""
        end = time.monotonic() + timeout
        while True:
            try:
                response = await self._health.Check(
                    health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=2.0)
                if response.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            if time.monotonic() > end:
                raise TimeoutError(f"the server was not SERVING within {timeout} s")
            await asyncio.sleep(0.2)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> AsyncTranslationClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


async def _aiter(items):
    if isinstance(items, AsyncIterable):
        async for item in items:
            yield item
    else:
        for item in items:
            yield item
