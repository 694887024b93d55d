"""`nmt.v1.TranslationService`: proto in, `Batcher`/`ModelStore` call, proto out.

Documents (`TranslateRequest.format`) are split into sentences (`documents.markup.
plan_document`, in a worker thread: parsing is CPU work), their sentences
queued in the batcher like any others, and joined again. Placeholders
(`TranslateRequest.keep_placeholders`, on unless a request turns them off) are
taken out of what the model reads and put back the same way: in sentences by
`documents.protection`, in documents by their plans. Align pairs with a
format (`AlignRequest.format`) are planned with `documents.markup.plan_projection`
and their tags put onto the given targets the same way. A request's glossary
(`TranslateRequest.glossary`, found by `serving.glossaries.GlossaryStore`) is
applied to the translations the batcher returns, after the placeholders are
back and the word-link rule applied, and before a document is joined (so its
tags follow the terms' links): the batcher and its cache see the same
sentences as without a glossary. Whole files (`TranslateFile`) are read,
translated through the batcher and written by `serving.files`, in worker
threads. Errors are raised, never turned into statuses here (see
`serving.interceptors`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures

import grpc

from documents.glossary_documents import apply_glossary_to_documents
from documents.markup import MarkupError, plan_document, plan_projection
from documents.protection import protect
from documents.sentences import join_documents, sentences_of
from documents.terminology import apply_glossary
from nmt.alignment import word_links
from nmt.types import DecodeOptions
from nmt_api import convert, protos
from nmt_api.protos import SERVICE_NAME
from serving.batching import Batcher
from serving.errors import InvalidArgument, LimitExceeded, ModelUnavailable
from serving.files import FILE_WORKERS, FileJob, file_responses, read_upload
from serving.glossaries import GlossaryStore
from serving.model_store import ModelStore
from serving.quotas import CALL_METER, Meter
from serving.validation import (
    Limits,
    ParsedAlignRequest,
    ParsedRequest,
    blank_target,
    lenient_deserializer,
    parse_align_request,
    parse_file_header,
    parse_request,
)

pb2, _ = protos.load()


class TranslationServicer:
    """The service's RPCs.

    Args:
        store: the model being served.
        batcher: the queue that runs model calls.
        limits: request limits.
        stream_window: requests of one stream translated at once; the stream
            is not read further until the oldest is answered (flow control).
        glossaries: the server's named glossaries; None: none (requests may
            still send entries).
    """

    def __init__(self, store: ModelStore, batcher: Batcher, limits: Limits,
                 stream_window: int = 8, glossaries: GlossaryStore | None = None):
        self._store, self._batcher, self._limits = store, batcher, limits
        self._window = stream_window
        self._glossaries = glossaries if glossaries is not None else GlossaryStore()
        self._file_workers = concurrent.futures.ThreadPoolExecutor(
            FILE_WORKERS, thread_name_prefix="nmt-file")

    def _default_options(self) -> DecodeOptions:
        """The decoding of options a request leaves unset: the served model's recommended
        decoding (`ModelInfo.default_options`); `DecodeOptions()` before a model loads."""
        try:
            info = self._store.translator.info
        except ModelUnavailable:  # the request is answered UNAVAILABLE
            return DecodeOptions()
        return getattr(info, "default_options", DecodeOptions())

    async def Translate(self, request, context):
        parsed = parse_request(request, self._limits, defaults=self._default_options())
        return await self._answer(parsed, 0, _deadline(context))

    async def TranslateStream(self, request_iterator, context):
        """Answers each request in order; an invalid request ends the stream with its status."""
        answers: asyncio.Queue = asyncio.Queue(maxsize=self._window)
        reader = asyncio.ensure_future(self._read(request_iterator, answers, _deadline(context)))
        try:
            while (answer := await answers.get()) is not None:
                yield await answer
        finally:
            reader.cancel()
            while not answers.empty():
                answer = answers.get_nowait()
                if answer is not None and not answer.cancel() and not answer.cancelled():
                    answer.exception()  # finished already: mark its error as seen

    async def Align(self, request, context):
        parsed = parse_align_request(request, self._limits)
        self._store.translator  # noqa: B018  (UNAVAILABLE before queueing when no model is loaded)
        if parsed.format is not None:
            return await self._project(parsed, _deadline(context))
        alignments, version = await self._batcher.align(parsed.sources, parsed.targets,
                                                        _deadline(context))
        return pb2.AlignResponse(
            alignments=_answers(alignments, parsed),
            request_id=parsed.request_id,
            model_version=version if version is not None else self._store.version or 0)

    async def _project(self, parsed: ParsedAlignRequest, deadline: float | None):
        """Each source's tags put onto its plain target through the pair's alignment."""
        plans = await asyncio.to_thread(_projection_plans, parsed)
        targets = [target for plan in plans for target in plan.targets]
        alignments, version = await self._batcher.align(sentences_of(plans), targets, deadline)
        documents = await asyncio.to_thread(
            join_documents, plans, _relinked(alignments, parsed))
        return pb2.AlignResponse(
            documents=[convert.document_to_proto(d, parsed.with_alignment,
                                                 parsed.with_attention) for d in documents],
            request_id=parsed.request_id,
            model_version=version if version is not None else self._store.version or 0)

    async def TranslateFile(self, request_iterator, context):
        """The file of the request stream, translated: its summary, then its bytes."""
        header, data = await read_upload(request_iterator, self._limits)
        summary, translated = await self.translate_file(header, data, _deadline(context),
                                                        CALL_METER.get())
        for response in file_responses(summary, translated):
            yield response

    async def translate_file(self, header, data: bytes, deadline: float | None = None,
                             meter: Meter | None = None):
        """`(FileSummary, translated bytes)` of a `FileHeader` and a file (gRPC and HTTP)."""
        parsed = parse_file_header(header, self._limits, self._default_options())
        self._store.translator  # noqa: B018  (UNAVAILABLE before parsing when no model is loaded)
        glossary = None
        if parsed.glossary is not None:  # before parsing: an unknown name fails at once
            glossary = await asyncio.to_thread(self._glossaries.resolve, parsed.glossary, "")
        job = FileJob(self._batcher, self._limits, parsed, deadline, meter, glossary)
        return await job.run(data, self._file_workers)

    async def GetModelInfo(self, request, context):
        return convert.model_info_to_proto(self._store.translator.info, self._limits)

    async def ListGlossaries(self, request, context):
        return pb2.ListGlossariesResponse(glossaries=[
            pb2.GlossaryInfo(name=g.name, entries=len(g.glossary), loaded_at=g.loaded_at_rfc3339,
                             file=g.file) for g in self._glossaries.glossaries()])

    async def _read(self, requests, answers: asyncio.Queue, deadline: float | None) -> None:
        """Starts one translation per request; a bad request ends the stream after the others."""
        index = 0
        try:
            async for request in requests:
                parsed = parse_request(request, self._limits, index=index,
                                       defaults=self._default_options())
                await answers.put(asyncio.ensure_future(self._answer(parsed, index, deadline)))
                index += 1
        except Exception as error:
            failed = asyncio.get_running_loop().create_future()
            failed.set_exception(error)
            await answers.put(failed)
        await answers.put(None)

    async def _answer(self, parsed: ParsedRequest, index: int, deadline: float | None):
        self._store.translator  # noqa: B018  (UNAVAILABLE before queueing when no model is loaded)
        glossary = None
        if parsed.glossary is not None:  # before queueing: an unknown name fails at once
            glossary = await asyncio.to_thread(self._glossaries.resolve, parsed.glossary,
                                               _where(index))
        if parsed.format is not None:
            return await self._answer_documents(parsed, index, deadline, glossary)
        protected = await asyncio.to_thread(protect, parsed.sentences, parsed.keep_placeholders)
        read = protected.sentences
        translations, version = await self._batcher.translate(read, parsed.options, deadline)
        translations = await asyncio.to_thread(protected.restore, translations)
        if glossary is None:
            answers = _answers(translations, parsed)
        else:
            answers = _messages(await asyncio.to_thread(
                _with_glossary, _relinked(translations, parsed), glossary), parsed)
        return pb2.TranslateResponse(
            translations=answers,
            request_id=parsed.request_id, request_index=index,
            model_version=version if version is not None else self._store.version or 0)

    async def _answer_documents(self, parsed: ParsedRequest, index: int,
                                deadline: float | None, glossary=None):
        """Each entry as one document: its sentences share the batcher with everyone's."""
        plans = await asyncio.to_thread(_plans, parsed, self._limits.max_sentences, index)
        translations, version = await self._batcher.translate(
            sentences_of(plans), parsed.options, deadline)
        documents = await asyncio.to_thread(
            apply_glossary_to_documents, plans, _relinked(translations, parsed), glossary)
        return pb2.TranslateResponse(
            documents=[convert.document_to_proto(d, parsed.with_alignment,
                                                 parsed.with_attention) for d in documents],
            request_id=parsed.request_id, request_index=index,
            model_version=version if version is not None else self._store.version or 0)


def _where(index: int) -> str:
    """What an error message about a request of a stream starts with."""
    return "" if index == 0 else f"request {index} of the stream: "


def _with_glossary(translations, glossary) -> list:
    """Each translation with the glossary's terms written into each hypothesis."""
    return [apply_glossary(t, glossary)[0] for t in translations]


def _plans(parsed: ParsedRequest, max_sentences: int, index: int) -> list:
    """The documents' plans; malformed markup and too many sentences are refused."""
    where = _where(index)
    plans = []
    for i, text in enumerate(parsed.sentences):
        try:
            plans.append(plan_document(text, parsed.format, parsed.keep_placeholders))
        except MarkupError as error:
            raise InvalidArgument(f"{where}document {i} is not valid {parsed.format.upper()}: "
                                  f"{error}") from error
    count = sum(len(plan.sentences) for plan in plans)
    if count > max_sentences:
        raise LimitExceeded(
            f"{where}the documents hold too many sentences: at most {max_sentences} per "
            f"request. Received: {len(plans)} documents of {count} sentences; send fewer "
            "documents per request.")
    return plans


def _projection_plans(parsed: ParsedAlignRequest) -> list:
    """The pairs' projection plans; malformed markup and blank targets are refused."""
    plans = []
    for i, (source, target) in enumerate(zip(parsed.sources, parsed.targets, strict=True)):
        try:
            plan = plan_projection(source, target, parsed.format)
        except MarkupError as error:
            raise InvalidArgument(f"source {i} is not valid {parsed.format.upper()}: "
                                  f"{error}") from error
        if plan.sentences and not target.strip():
            raise InvalidArgument(blank_target(i))
        plans.append(plan)
    return plans


def _relinked(translations, parsed) -> list:
    """The translations with the word-link rule the request asked for."""
    if parsed.links is None:
        return translations
    try:
        return [word_links.relink(t, parsed.links.rule, parsed.links.threshold)
                for t in translations]
    except ValueError as error:
        raise InvalidArgument(str(error)) from error


def _answers(translations, parsed) -> list:
    """Translation messages as the request asked: word-link rule, matrices."""
    return _messages(_relinked(translations, parsed), parsed)


def _messages(translations, parsed) -> list:
    """Translation messages, with the matrices the request asked for."""
    return [convert.translation_to_proto(t, parsed.with_alignment, parsed.with_attention)
            for t in translations]


def _deadline(context) -> float | None:
    """The call's deadline in event-loop time, or None without one."""
    remaining = context.time_remaining()
    return None if remaining is None else asyncio.get_running_loop().time() + remaining


def generic_handler(servicer: TranslationServicer) -> grpc.GenericRpcHandler:
    """The service's method handlers; requests with text that is not UTF-8 get INVALID_ARGUMENT."""
    translate_request = lenient_deserializer(pb2.TranslateRequest)
    response = pb2.TranslateResponse.SerializeToString
    return grpc.method_handlers_generic_handler(SERVICE_NAME, {
        "Translate": grpc.unary_unary_rpc_method_handler(
            servicer.Translate, request_deserializer=translate_request,
            response_serializer=response),
        "TranslateStream": grpc.stream_stream_rpc_method_handler(
            servicer.TranslateStream, request_deserializer=translate_request,
            response_serializer=response),
        "Align": grpc.unary_unary_rpc_method_handler(
            servicer.Align, request_deserializer=lenient_deserializer(pb2.AlignRequest),
            response_serializer=pb2.AlignResponse.SerializeToString),
        "GetModelInfo": grpc.unary_unary_rpc_method_handler(
            servicer.GetModelInfo, request_deserializer=pb2.GetModelInfoRequest.FromString,
            response_serializer=pb2.GetModelInfoResponse.SerializeToString),
        "ListGlossaries": grpc.unary_unary_rpc_method_handler(
            servicer.ListGlossaries, request_deserializer=pb2.ListGlossariesRequest.FromString,
            response_serializer=pb2.ListGlossariesResponse.SerializeToString),
        "TranslateFile": grpc.stream_stream_rpc_method_handler(
            servicer.TranslateFile,
            request_deserializer=lenient_deserializer(pb2.TranslateFileRequest),
            response_serializer=pb2.TranslateFileResponse.SerializeToString),
    })
