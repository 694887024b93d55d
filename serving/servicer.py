"""`nmt.v1.TranslationService`: proto in, `Batcher`/`ModelStore` call, proto out.

Errors are raised, never turned into statuses here (see `serving.interceptors`).
"""

from __future__ import annotations

import asyncio

import grpc

from nmt import word_links
from nmt_api import convert, protos
from nmt_api.protos import SERVICE_NAME
from serving.batching import Batcher
from serving.errors import InvalidArgument
from serving.model_store import ModelStore
from serving.validation import (
    Limits,
    ParsedRequest,
    lenient_deserializer,
    parse_align_request,
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
    """

    def __init__(self, store: ModelStore, batcher: Batcher, limits: Limits,
                 stream_window: int = 8):
        self._store, self._batcher, self._limits = store, batcher, limits
        self._window = stream_window

    async def Translate(self, request, context):
        parsed = parse_request(request, self._limits)
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
        alignments, version = await self._batcher.align(parsed.sources, parsed.targets,
                                                        _deadline(context))
        return pb2.AlignResponse(
            alignments=_answers(alignments, parsed),
            request_id=parsed.request_id,
            model_version=version if version is not None else self._store.version or 0)

    async def GetModelInfo(self, request, context):
        return convert.model_info_to_proto(self._store.translator.info, self._limits)

    async def _read(self, requests, answers: asyncio.Queue, deadline: float | None) -> None:
        """Starts one translation per request; a bad request ends the stream after the others."""
        index = 0
        try:
            async for request in requests:
                parsed = parse_request(request, self._limits, index=index)
                await answers.put(asyncio.ensure_future(self._answer(parsed, index, deadline)))
                index += 1
        except Exception as error:
            failed = asyncio.get_running_loop().create_future()
            failed.set_exception(error)
            await answers.put(failed)
        await answers.put(None)

    async def _answer(self, parsed: ParsedRequest, index: int, deadline: float | None):
        self._store.translator  # noqa: B018  (UNAVAILABLE before queueing when no model is loaded)
        translations, version = await self._batcher.translate(
            parsed.sentences, parsed.options, deadline)
        return pb2.TranslateResponse(
            translations=_answers(translations, parsed),
            request_id=parsed.request_id, request_index=index,
            model_version=version if version is not None else self._store.version or 0)


def _answers(translations, parsed) -> list:
    """Translation messages as the request asked: word-link rule, matrices."""
    if parsed.links is not None:
        try:
            translations = [word_links.relink(t, parsed.links.rule, parsed.links.threshold)
                            for t in translations]
        except ValueError as error:
            raise InvalidArgument(str(error)) from error
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
    })
