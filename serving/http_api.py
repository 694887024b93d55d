"""HTTP/JSON beside gRPC: the same RPCs as JSON, health probes, OpenAPI and the page.

Served with aiohttp on the gRPC server's event loop, through the same
`TranslationServicer` (so the same model, batching queue, limits and errors):

    POST /v1/translate     Translate      TranslateRequest -> TranslateResponse
    POST /v1/align         Align          AlignRequest -> AlignResponse
    GET  /v1/model         GetModelInfo   -> GetModelInfoResponse
    GET  /v1/glossaries    ListGlossaries -> ListGlossariesResponse
    POST /v1/files:translate  TranslateFile  multipart/form-data -> the translated file
    GET  /healthz          the process is up (always 200)
    GET  /readyz           200 while the gRPC health status is SERVING, else 503
    GET  /v1/openapi.json  OpenAPI 3 description of the above
    GET  /                 the page (`serving/static/`)

Bodies and answers are the proto3 JSON mapping of the messages
(`google.protobuf.json_format`): lowerCamelCase field names as grpcurl shows
them (snake_case is accepted too), 64-bit integers as strings, every field
present in answers. Errors are `{"code": "INVALID_ARGUMENT", "message": ...}`
with the HTTP status of `serving.errors.http_status_for`. A caller's
`X-Request-Id` is echoed and logged; `X-Request-Timeout` (seconds) plays the
part of a gRPC deadline.

A file (`POST /v1/files:translate`) comes as multipart/form-data: a `file` part
and the other fields of a `FileHeader` as form fields, by their JSON (or proto)
names, message fields (`options`, `glossary`) as JSON text; the answer is the
translated file itself (its media type, `Content-Disposition` with its name) and
the `FileSummary` as JSON in the `X-Nmt-Summary` header.

Whatever a client sends is answered with such a JSON error, never a crash or
aiohttp's plain text: bodies nested deeper than `MAX_JSON_DEPTH`, and HTTP
that aiohttp cannot parse (a header over `serving.calls.MAX_HEADER_BYTES`, too many
headers, a broken chunked body), answered by `_JsonErrorHandler`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import math
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path

import grpc
from aiohttp import hdrs, http_exceptions, web
from aiohttp.web_urldispatcher import _default_expect_handler  # sends "100 Continue"
from google.protobuf import json_format

from nmt_api import protos
from serving.calls import (
    HTTP,
    MAX_HEADER_BYTES,
    MAX_HEADERS,
    MAX_REQUEST_ID_CHARS,
    REQUEST_ID_KEY,
    Call,
    finish,
    request_id,
    sentence_count,
)
from serving.errors import (
    DeadlineExpired,
    InvalidArgument,
    LimitExceeded,
    ModelUnavailable,
    ServingError,
    http_status_for,
)
from serving.http_files import file_response, read_form
from serving.interceptors import BearerToken
from serving.openapi import FILE_ROUTE, openapi_document
from serving.quotas import API_KEY_HEADER, Charge, Meter, Quotas, request_chars
from serving.servicer import TranslationServicer
from serving.validation import Limits

pb2, _ = protos.load()
log = logging.getLogger("nmt.serving.requests")

STATIC_DIR = Path(__file__).resolve().parent / "static"
TIMEOUT_HEADER = "X-Request-Timeout"  # seconds the caller will wait; the call's deadline
RETRY_AFTER_S = 1  # sent with 429 and 503
# The page loads nothing from elsewhere; its scripts and styles are files under /static/.
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'none'"),
}
_dumps = partial(json.dumps, ensure_ascii=False)
# Arrays and objects nested in a body; as deep as `json_format.ParseDict` goes by default.
MAX_JSON_DEPTH = 100
MAX_ERROR_ECHO_CHARS = 200  # characters of a client's input quoted back in an error


@dataclasses.dataclass(frozen=True)
class Endpoint:
    """One RPC over HTTP.

    Attributes:
        method: HTTP method.
        path: URL path.
        rpc: the `TranslationServicer` method (and the gRPC method's name).
        request: the request message; read from the JSON body for POST.
        response: the response message.
        summary: one line for the OpenAPI description.
    """

    method: str
    path: str
    rpc: str
    request: type
    response: type
    summary: str


ENDPOINTS = (
    Endpoint("POST", "/v1/translate", "Translate", pb2.TranslateRequest, pb2.TranslateResponse,
             "Translates sentences, or documents (`format`: plain text, HTML, XML); each "
             "translation comes with its alignment"),
    Endpoint("POST", "/v1/align", "Align", pb2.AlignRequest, pb2.AlignResponse,
             "Aligns given (source, target) pairs (forced decoding); with `format`, puts each "
             "marked-up source's tags onto its plain target"),
    Endpoint("GET", "/v1/model", "GetModelInfo", pb2.GetModelInfoRequest,
             pb2.GetModelInfoResponse, "The model being served and the server's limits"),
    Endpoint("GET", "/v1/glossaries", "ListGlossaries", pb2.ListGlossariesRequest,
             pb2.ListGlossariesResponse,
             "The server's named glossaries (`glossary.glossaryId` of /v1/translate)"),
)


class _BodyTooLarge(LimitExceeded):
    """A body over the message-size limit, refused before it is read whole."""


class _Context:
    """What `TranslationServicer` asks of a gRPC context: the time left before the deadline."""

    def __init__(self, deadline: float | None):
        self._deadline = deadline

    def time_remaining(self) -> float | None:
        if self._deadline is None:
            return None
        return max(0.0, self._deadline - asyncio.get_running_loop().time())


class HttpApi:
    """The HTTP/JSON endpoints and the page, over a `TranslationServicer`.

    Args:
        servicer: the gRPC servicer whose RPCs the endpoints call.
        metrics: request metrics (`protocol="http"`).
        limits: request limits (`max_message_bytes` caps bodies).
        ready: whether the service is ready (the gRPC health status is SERVING).
        auth_token: when set, the API (not the probes, the page or the OpenAPI
            description) needs `Authorization: Bearer <token>`.
        keys: API keys with quotas (`serving.quotas`): when set, the API needs
            a key (`Authorization: Bearer <key>` or `X-Api-Key: <key>`), checked
            before the body is read, and admitted against its limits once the
            body is parsed, before the model runs.
    """

    def __init__(self, servicer: TranslationServicer, metrics, limits: Limits,
                 ready: Callable[[], bool], auth_token: str | None = None,
                 keys: Quotas | None = None):
        self._servicer, self._metrics, self._limits = servicer, metrics, limits
        self._ready = ready
        self._token = BearerToken(auth_token) if auth_token else None
        self._keys = keys
        self._openapi: dict | None = None  # built at the first request (it runs protoc)
        self._closing = False
        self._in_flight: set[asyncio.Task] = set()
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None

    def application(self) -> web.Application:
        app = web.Application(middlewares=[_errors_as_json])
        for endpoint in ENDPOINTS:
            app.router.add_route(endpoint.method, endpoint.path, self._handler(endpoint),
                                 expect_handler=self._expect)
        app.router.add_post(FILE_ROUTE, self._translate_file,
                            expect_handler=partial(self._expect, files=True))
        app.router.add_get("/healthz", _healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/v1/openapi.json", self._openapi_json)
        app.router.add_get("/", _page)
        app.router.add_static("/static", STATIC_DIR)
        app.on_response_prepare.append(_security_headers)
        return app

    async def start(self, host: str, port: int) -> int:
        """Listens on `host:port` (0 picks a free port); returns the port."""
        self._runner = _Runner(self.application(), access_log=None,
                               handler_cancellation=True, shutdown_timeout=1.0,
                               max_line_size=MAX_HEADER_BYTES,
                               max_field_size=MAX_HEADER_BYTES, max_headers=MAX_HEADERS)
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, host, port)
        try:
            await self._site.start()
        except OSError as error:
            await self._runner.cleanup()
            self._runner = self._site = None
            raise ValueError(
                f"cannot listen for HTTP on {host}:{port} ({error}); is the port in use? "
                "Choose another with --http-port (0 turns HTTP off).") from error
        return self._runner.addresses[0][1]

    async def stop(self, grace: float) -> None:
        """Stops listening, refuses new requests (503), gives those in flight `grace` seconds."""
        self._closing = True
        site, self._site = self._site, None
        if site is not None:
            await site.stop()
        if self._in_flight:
            await asyncio.wait(set(self._in_flight), timeout=grace)
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()  # cancels what is still running

    # --- the API ---------------------------------------------------------------------------

    def _handler(self, endpoint: Endpoint):
        rpc = getattr(self._servicer, endpoint.rpc)

        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._call(request, endpoint.rpc, lambda call: self._answer(
                request, endpoint, rpc, call), _json_response)

        return handle

    async def _call(self, request: web.Request, method: str, answer, respond):
        """`respond(await answer(call), call)`, as one recorded call; errors as JSON."""
        call = Call(method, HTTP, request_id(request.headers.get(REQUEST_ID_KEY)),
                    request.remote or "")
        task = asyncio.current_task()
        self._in_flight.add(task)
        try:
            response = await answer(call)
        except asyncio.CancelledError:  # the client went away, or the server stopped
            finish(self._metrics, call, grpc.StatusCode.CANCELLED, http_status=499)
            raise
        except Exception as error:
            return self._error(request, call, error)
        finally:
            self._in_flight.discard(task)
        finish(self._metrics, call, grpc.StatusCode.OK, http_status=200)
        return await respond(response, call)

    async def _answer(self, request: web.Request, endpoint: Endpoint, rpc, call: Call):
        refusal = self._early_refusal(request)
        if refusal is not None:
            raise refusal
        deadline = self._deadline(request)
        message = (await self._parse(request, endpoint.request) if endpoint.method == "POST"
                   else endpoint.request())
        call.sentences = sentence_count(message)
        # The key's limits, before the model runs; a call that fails gets its characters back.
        with self._admit(request, message):
            return await self._in_time(request, deadline, rpc(message, _Context(deadline)))

    @staticmethod
    async def _in_time(request: web.Request, deadline: float | None, answer):
        """`await answer`, DeadlineExpired past the request's deadline."""
        try:
            async with asyncio.timeout_at(deadline) as scope:
                return await answer
        except TimeoutError:
            if scope.expired():
                raise DeadlineExpired(
                    f"the request was not answered within its {TIMEOUT_HEADER} of "
                    f"{request.headers[TIMEOUT_HEADER]} s; allow more time or send fewer "
                    "sentences per request") from None
            raise

    async def _translate_file(self, request: web.Request) -> web.StreamResponse:
        """`POST /v1/files:translate`: the uploaded file, translated (`serving.http_files`)."""
        return await self._call(request, "TranslateFile",
                                lambda call: self._answer_file(request), file_response)

    async def _answer_file(self, request: web.Request):
        refusal = self._early_refusal(request, files=True)
        if refusal is not None:
            raise refusal
        deadline = self._deadline(request)
        header, data = await read_form(request, self._limits)
        with self._metered(request) as meter:
            return await self._in_time(request, deadline, self._servicer.translate_file(
                header, data, deadline, meter))

    @contextlib.contextmanager
    def _metered(self, request: web.Request):
        """The file call's `Meter` (None without keys): admitted once, charged by the
        servicer once it knows the characters, all given back if the call fails."""
        if self._keys is None:
            yield None
            return
        key = self._keys.authenticate(request.headers.get(hdrs.AUTHORIZATION),
                                      request.headers.get(API_KEY_HEADER), "header")
        with self._keys.admit(key):
            meter = Meter(self._keys, key)
            try:
                yield meter
            except BaseException:
                meter.refund()
                raise

    def _admit(self, request: web.Request, message) -> Charge | contextlib.nullcontext:
        """The request's charge on its key (a no-op without keys); raises past a limit."""
        if self._keys is None:
            return contextlib.nullcontext()
        key = self._keys.authenticate(request.headers.get(hdrs.AUTHORIZATION),
                                      request.headers.get(API_KEY_HEADER), "header")
        return self._keys.admit(key, request_chars(message))

    def _early_refusal(self, request: web.Request, files: bool = False) -> Exception | None:
        """Why the request is refused before its body is read, if it is (`files`: the file
        route, whose body may hold a file of `max_file_bytes` and other fields of
        `max_message_bytes`)."""
        if self._closing:
            return ModelUnavailable("the server is shutting down; retry")
        if self._token is not None:
            refusal = self._token.refusal(request.headers.get(hdrs.AUTHORIZATION), "header")
            if refusal is not None:
                return refusal
        if self._keys is not None:
            try:
                self._keys.authenticate(request.headers.get(hdrs.AUTHORIZATION),
                                        request.headers.get(API_KEY_HEADER), "header")
            except ServingError as refusal:
                return refusal
        limit, flags, advice = (
            (self._limits.max_file_bytes + self._limits.max_message_bytes,
             "--max-file-bytes and --max-message-bytes", "split the file") if files
            else (self._limits.max_message_bytes, "--max-message-bytes",
                  "send fewer sentences per request"))
        if request.content_length is not None and request.content_length > limit:
            return _BodyTooLarge(
                f"the request body is larger than this server's limit of {limit} bytes "
                f"({flags}). Received: Content-Length {request.content_length}; {advice}.")
        return None

    async def _expect(self, request: web.Request, files: bool = False) -> None:
        """`Expect: 100-continue`: lets the body come only if it will be read."""
        if self._early_refusal(request, files) is None:
            await _default_expect_handler(request)
        # Otherwise no "100 Continue": the handler answers the error at once.

    @staticmethod
    def _deadline(request: web.Request) -> float | None:
        given = request.headers.get(TIMEOUT_HEADER)
        if given is None:
            return None
        try:
            seconds = float(given)
        except ValueError:
            seconds = math.nan
        if not (math.isfinite(seconds) and seconds > 0):
            raise InvalidArgument(
                f"the {TIMEOUT_HEADER} header must be a positive number of seconds, e.g. 2.5. "
                f"Received: {given[:40]!r}")
        return asyncio.get_running_loop().time() + seconds

    async def _parse(self, request: web.Request, message_class):
        """The body as a `message_class` message; InvalidArgument says what is wrong where."""
        name = message_class.DESCRIPTOR.name
        body = await self._read_body(request)
        if not body.strip():
            raise InvalidArgument(f"the body is empty; send a JSON {name}, e.g. "
                                  f"{json.dumps(_EXAMPLES[name], ensure_ascii=False)}")
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as error:
            raise InvalidArgument(
                f"the body is not valid UTF-8 (byte {body[error.start]:#04x} at offset "
                f"{error.start}); send UTF-8 JSON.") from None
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise InvalidArgument(
                f"the body is not JSON: {error.msg} at line {error.lineno} column {error.colno}; "
                f"send a JSON {name}.") from None
        except RecursionError:  # what `json` raises for deep nesting
            raise InvalidArgument(_too_deep(text, name)) from None
        if not isinstance(value, dict):
            raise InvalidArgument(
                f"the body must be a JSON object (a {name}). Received: a JSON "
                f"{type(value).__name__}, e.g. send "
                f"{json.dumps(_EXAMPLES[name], ensure_ascii=False)}")
        try:
            return json_format.ParseDict(value, message_class())
        except json_format.ParseError as error:  # its message may quote a huge value: cut it
            raise InvalidArgument(
                f"the body is not a valid {name}: {_cut(str(error), MAX_ERROR_ECHO_CHARS)}"
            ) from None

    async def _read_body(self, request: web.Request) -> bytes:
        """The body, refused as soon as it passes `max_message_bytes` (chunked bodies too)."""
        limit = self._limits.max_message_bytes
        body = bytearray()
        while chunk := await request.content.readany():
            body += chunk
            if len(body) > limit:
                raise _BodyTooLarge(
                    f"the request body is larger than this server's limit of {limit} bytes "
                    f"(--max-message-bytes). Received: more than {limit} bytes; send fewer "
                    "sentences per request.")
        return bytes(body)

    def _error(self, request: web.Request, call: Call, error: Exception) -> web.Response:
        status, code, details = http_status_for(error)
        if code == grpc.StatusCode.INTERNAL:
            log.error("unexpected error in %s (id %s)", call.method, call.id, exc_info=error)
        finish(self._metrics, call, code, details, http_status=status)
        headers = {"X-Request-Id": call.id}
        if status in (429, 503):  # a quota says when; a full queue or no model: soon
            headers[hdrs.RETRY_AFTER] = str(getattr(error, "retry_after_s", RETRY_AFTER_S))
        if status == 401:
            headers[hdrs.WWW_AUTHENTICATE] = 'Bearer realm="nmt"'
        response = _error_response(status, code.name, details, headers)
        if isinstance(error, _BodyTooLarge) or not request.content.at_eof():
            response.force_close()  # the rest of the body is never read
        return response

    # --- probes and documents --------------------------------------------------------------

    async def _readyz(self, request: web.Request) -> web.Response:
        ready = self._ready() and not self._closing
        return web.json_response({"status": "SERVING" if ready else "NOT_SERVING"},
                                 status=200 if ready else 503)

    async def _openapi_json(self, request: web.Request) -> web.Response:
        if self._openapi is None:
            self._openapi = await asyncio.to_thread(
                openapi_document, ENDPOINTS, self._limits,
                self._token is not None or self._keys is not None)
        return web.json_response(self._openapi, dumps=_dumps)


def _too_deep(text: str, name: str) -> str:
    """The error for a body nested deeper than `MAX_JSON_DEPTH`, naming where it gets too deep."""
    depth = 0
    for token in _JSON_TOKENS.finditer(text):
        char = token.group()
        if char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                where = f" (level {depth} opens at character {token.start()})"
                break
        elif char in "]}":
            depth -= 1
    else:
        where = ""
    return (f"the body nests arrays and objects more than {MAX_JSON_DEPTH} deep{where}; a "
            f"{name} needs a few levels at most: send e.g. "
            f"{json.dumps(_EXAMPLES[name], ensure_ascii=False)}")


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')  # a string (skipped) or a bracket


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def _message_json(message) -> bytes:
    """The proto3 JSON mapping of `message`, every field present, as UTF-8."""
    value = json_format.MessageToDict(message, always_print_fields_with_no_presence=True)
    return _dumps(value).encode()


async def _json_response(message, call: Call) -> web.Response:
    # In a thread: alignments make big answers, and the loop serves gRPC too.
    body = await asyncio.to_thread(_message_json, message)
    return web.Response(body=body, content_type="application/json", charset="utf-8",
                        headers={"X-Request-Id": call.id})


async def _healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "UP"})


async def _page(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC_DIR / "index.html")


async def _security_headers(request: web.Request, response: web.StreamResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)


def _error_response(status: int, code: str, message: str,
                    headers: dict | None = None) -> web.Response:
    return web.json_response({"code": code, "message": message}, status=status, dumps=_dumps,
                             headers=headers)


# aiohttp's own HTTP errors (unknown path, wrong method, ...) as JSON errors too.
_CODES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 405: "UNIMPLEMENTED",
          413: "RESOURCE_EXHAUSTED"}


@web.middleware
async def _errors_as_json(request: web.Request, handler):
    try:
        return await handler(request)
    except web.HTTPException as error:
        if error.status < 400:
            raise
        if error.status == 404:
            message = (f"no such path: {request.path}; the API is under /v1/ "
                       "(see /v1/openapi.json)")
        elif error.status == 405:
            allowed = error.headers.get(hdrs.ALLOW, "")
            message = f"{request.method} is not allowed on {request.path}; use {allowed}"
        else:
            message = error.text or error.reason
        headers = {k: v for k, v in error.headers.items()
                   if k not in (hdrs.CONTENT_TYPE, hdrs.CONTENT_LENGTH)}
        return _error_response(error.status, _CODES.get(error.status, "UNKNOWN"), message,
                               headers)


class _JsonErrorHandler(web.RequestHandler):
    """aiohttp's connection handler, answering what it cannot parse with our JSON errors.

    aiohttp answers HTTP it cannot parse (a request line or header over
    `MAX_HEADER_BYTES`, more than `MAX_HEADERS` headers, a bad chunk size, a
    method that is not one) before any handler or middleware runs, in plain
    text; this handler answers them as every other error, and closes the
    connection as aiohttp does.
    """

    def handle_error(self, request, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> web.StreamResponse:
        if request.writer.output_size > 0:  # as aiohttp: the answer has begun
            raise ConnectionError("the answer was sent already; cannot send the error")
        status, code, details = _protocol_error(status, exc, message)
        if status == 500:
            log.error("unexpected error answering %s", request.remote, exc_info=exc)
        else:
            log.info(_dumps({"event": "bad_http", "protocol": HTTP, "peer": request.remote,
                             "http_status": status, "error": details}))
        response = _error_response(status, code, details, dict(SECURITY_HEADERS))
        response.force_close()  # closes the connection: what follows cannot be read
        return response


def _protocol_error(status: int, exc: BaseException | None,
                    message: str | None) -> tuple[int, str, str]:
    """`(HTTP status, code, message)` for a request aiohttp could not parse."""
    if isinstance(exc, http_exceptions.LineTooLong):
        return 431, "RESOURCE_EXHAUSTED", (
            f"the request line or a header is longer than this server's limit of "
            f"{MAX_HEADER_BYTES} bytes; send shorter headers and URLs (only the first "
            f"{MAX_REQUEST_ID_CHARS} characters of an X-Request-Id are kept).")
    if isinstance(exc, http_exceptions.BadHttpMessage) and "too many headers" in str(
            exc.message).lower():
        return 431, "RESOURCE_EXHAUSTED", (
            f"the request has more headers than this server's limit of {MAX_HEADERS}; "
            "send fewer headers.")
    if status == 500:
        return 500, "INTERNAL", "internal error; the server log has the details"
    problem = " ".join(str(message or getattr(exc, "message", "") or exc).split())
    return status, _CODES.get(status, "UNKNOWN"), (
        f"the request is not valid HTTP/1.1: {_cut(problem, MAX_ERROR_ECHO_CHARS)}; check "
        "the client (and any proxy in between).")


class _Runner(web.AppRunner):
    """`web.AppRunner` whose connections are `_JsonErrorHandler`s."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        return _JsonErrorServer(server.request_handler, request_factory=server.request_factory,
                                handler_cancellation=server.handler_cancellation,
                                loop=asyncio.get_running_loop(), **server._kwargs)


class _JsonErrorServer(web.Server):
    def __call__(self) -> web.RequestHandler:
        return _JsonErrorHandler(self, loop=self._loop, **self._kwargs)


_EXAMPLES = {
    "TranslateRequest": {"sentences": ["Hello."], "options": {"beamSize": 5}},
    "AlignRequest": {"sources": ["Hello."], "targets": ["Bonjour."]},
}

