"""The OpenAPI 3 description of the HTTP/JSON API, generated from the proto messages.

Schemas follow the proto3 JSON mapping that `google.protobuf.json_format`
reads and writes: lowerCamelCase property names, 64-bit integers as decimal
strings, maps as objects. Field descriptions are the `.proto` file's comments
when the source is there (a checkout); the server's limits are written into
the schemas (`maxItems`, `maxLength`, `maximum`).
"""

from __future__ import annotations

import functools
import subprocess
import sys
import tempfile
import types
from collections.abc import Sequence
from pathlib import Path

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from documents.file_formats import MEDIA_TYPES
from documents.glossary import MAX_TERM_CHARS
from nmt_api import protos
from serving.calls import MAX_HEADER_BYTES, MAX_HEADERS, MAX_REQUEST_ID_CHARS

OPENAPI_VERSION = "3.0.3"
# The whole-file route (`serving.http_files`): multipart/form-data in, the file out.
FILE_ROUTE = "/v1/files:translate"
F = FieldDescriptor
_SCALARS = {
    F.TYPE_DOUBLE: {"type": "number", "format": "double"},
    F.TYPE_FLOAT: {"type": "number", "format": "float"},
    F.TYPE_INT32: {"type": "integer", "format": "int32"},
    F.TYPE_SINT32: {"type": "integer", "format": "int32"},
    F.TYPE_SFIXED32: {"type": "integer", "format": "int32"},
    F.TYPE_UINT32: {"type": "integer", "format": "int64", "minimum": 0, "maximum": 2**32 - 1},
    F.TYPE_FIXED32: {"type": "integer", "format": "int64", "minimum": 0, "maximum": 2**32 - 1},
    F.TYPE_BOOL: {"type": "boolean"},
    F.TYPE_STRING: {"type": "string"},
    F.TYPE_BYTES: {"type": "string", "format": "byte"},
}
_INT64 = (F.TYPE_INT64, F.TYPE_UINT64, F.TYPE_SINT64, F.TYPE_FIXED64, F.TYPE_SFIXED64)
# Answered by every API endpoint, whatever it does; more per endpoint in `_ERRORS_OF`.
_ERRORS = {
    "400": "The body is not JSON, or not the request message (the message names the field), "
           "or a field is invalid.",
    "431": f"A header or the request line is over {MAX_HEADER_BYTES} bytes, or there are more "
           f"than {MAX_HEADERS} headers (an `X-Request-Id` keeps its first "
           f"{MAX_REQUEST_ID_CHARS} characters).",
    "503": "No model is loaded yet, or the server is shutting down; retry (see Retry-After).",
    "504": "The `X-Request-Timeout` passed before the answer.",
}
_ERRORS_OF = {
    "POST": {
        "413": "The body is over `maxMessageBytes`, or the request is over a limit "
               "(`maxSentences`, `maxChars`, `maxBeamSize`, `maxGlossaryEntries`).",
        "429": "The batching queue is full; retry with backoff (see Retry-After).",
    },
    "GET": {},
}
# Answered by one RPC only.
_ERRORS_OF_RPC = {
    "Translate": {
        "404": "`glossary.glossaryId` names no glossary of this server; the message lists "
               "those it has (`GET /v1/glossaries`).",
    },
    "TranslateFile": {
        "400": "The body is not multipart/form-data with a `file` part, a field is unknown "
               "or invalid, or the file cannot be read as its format (the message names the "
               "file and its line) or its format cannot be told from its name.",
        "404": "`glossary`'s `glossaryId` names no glossary of this server.",
    },
}


def openapi_document(endpoints: Sequence, limits, auth: bool) -> dict:
    """The OpenAPI document of `endpoints` (see `serving.http_api.Endpoint`).

    Args:
        endpoints: the RPC endpoints, each with `method`, `path`, `rpc`,
            `request`, `response` (message classes) and `summary`.
        limits: the server's `serving.validation.Limits`, written into the schemas.
        auth: whether the API needs `Authorization: Bearer <token>`.
    """
    comments = proto_comments()
    schemas: dict[str, dict] = {}
    for endpoint in endpoints:
        for message in (endpoint.request, endpoint.response):
            _add_schema(message.DESCRIPTOR, schemas, comments)
    pb2, _ = protos.load()
    for message in (pb2.FileHeader, pb2.FileSummary):  # the file route's (not JSON) messages
        _add_schema(message.DESCRIPTOR, schemas, comments)
    _apply_limits(schemas, limits)
    schemas["Error"] = {
        "type": "object", "required": ["code", "message"],
        "properties": {
            "code": {"type": "string", "example": "INVALID_ARGUMENT",
                     "description": "The gRPC status code's name, as gRPC callers get it."},
            "message": {"type": "string", "description": "What is wrong and what to change."},
        }}
    schemas["Status"] = {"type": "object", "properties": {
        "status": {"type": "string", "enum": ["UP", "SERVING", "NOT_SERVING"]}}}
    paths = {e.path: {e.method.lower(): _operation(e, auth)} for e in endpoints}
    paths[FILE_ROUTE] = {"post": _file_operation(limits, auth, schemas)}
    paths["/healthz"] = {"get": _probe("Liveness: the process is up (always 200).", False)}
    paths["/readyz"] = {"get": _probe(
        "Readiness: 200 once the model is loaded and warmed up (gRPC health SERVING), 503 "
        "before and while shutting down.", True)}
    document = {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "nmt.v1 TranslationService over HTTP/JSON",
            "version": "v1",
            "description": (
                "English→French translation with attention alignments: the RPCs of the gRPC "
                "service `nmt.v1.TranslationService` as JSON (the proto3 JSON mapping, as "
                "grpcurl shows it). Each call may carry `X-Request-Id` (echoed, and logged "
                "with the call) and `X-Request-Timeout` (seconds; the call's deadline)."),
        },
        "paths": paths,
        "components": {"schemas": schemas},
    }
    if auth:
        document["components"]["securitySchemes"] = {"bearer": {"type": "http",
                                                                 "scheme": "bearer"}}
    return document


def _operation(endpoint, auth: bool) -> dict:
    errors = {**_ERRORS, **_ERRORS_OF[endpoint.method], **_ERRORS_OF_RPC.get(endpoint.rpc, {})}
    if auth:
        errors["401"] = "Missing or wrong `Authorization: Bearer <token>`."
    responses = {"200": {"description": "OK", "content": _json(endpoint.response)}}
    responses.update({status: {"description": text, "content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/Error"}}}}
        for status, text in sorted(errors.items())})
    operation = {
        "operationId": endpoint.rpc,
        "summary": endpoint.summary,
        "description": f"gRPC `nmt.v1.TranslationService/{endpoint.rpc}`.",
        "parameters": [
            {"name": "X-Request-Id", "in": "header", "required": False,
             "schema": {"type": "string", "maxLength": MAX_REQUEST_ID_CHARS},
             "description": "Your id for this call: echoed in the answer and logged."},
            {"name": "X-Request-Timeout", "in": "header", "required": False,
             "schema": {"type": "number", "exclusiveMinimum": True, "minimum": 0},
             "description": "Seconds to wait for the answer (the call's deadline)."},
        ],
        "responses": responses,
    }
    if endpoint.method == "POST":
        operation["requestBody"] = {"required": True, "content": _json(endpoint.request)}
    if auth:
        operation["security"] = [{"bearer": []}]
    return operation


def _file_operation(limits, auth: bool, schemas: dict) -> dict:
    """`POST FILE_ROUTE`: a `FileHeader`'s fields and a `file` part in, the file out."""
    fields = {name: dict(prop) for name, prop in schemas["FileHeader"]["properties"].items()}
    for name in ("options", "glossary"):  # JSON text in a form field
        fields[name] = {"type": "string", "description": "JSON: " + fields[name].get(
            "description", "")}
    form = {"type": "object", "required": ["file"], "properties": {
        "file": {"type": "string", "format": "binary",
                 "description": f"The file, at most {limits.max_file_bytes} bytes; its "
                                "filename gives `name` unless that field is sent."},
        **fields}}
    pb2, _ = protos.load()
    endpoint = types.SimpleNamespace(
        method="POST", rpc="TranslateFile", request=pb2.FileHeader, response=pb2.FileSummary,
        summary="Translates a whole file, its format kept (gettext PO/POT, XLIFF, SRT, WebVTT, "
                "Word .docx, Markdown), as `nmt translate-file` does")
    operation = _operation(endpoint, auth)
    operation["requestBody"] = {"required": True,
                                "content": {"multipart/form-data": {"schema": form}}}
    operation["responses"]["200"] = {
        "description": "The translated file, as an attachment named by `FileSummary.name`.",
        "headers": {"X-Nmt-Summary": {
            "description": "The `FileSummary`, as JSON (ASCII).",
            "schema": {"$ref": "#/components/schemas/FileSummary"}}},
        "content": {media: {"schema": {"type": "string", "format": "binary"}}
                    for media in sorted({m.split(";")[0] for m in MEDIA_TYPES.values()})}}
    operation["responses"]["413"]["description"] = (
        f"The file is over `maxFileBytes` ({limits.max_file_bytes}), or holds more than "
        f"`maxFileSentences` ({limits.max_file_sentences}) sentences to translate, or the "
        "other fields are over `maxMessageBytes`, or a decoding or glossary limit.")
    return operation


def _probe(description: str, can_fail: bool) -> dict:
    content = {"application/json": {"schema": {"$ref": "#/components/schemas/Status"}}}
    responses = {"200": {"description": "OK", "content": content}}
    if can_fail:
        responses["503"] = {"description": "Not ready", "content": content}
    return {"summary": description.split(":")[0], "description": description,
            "responses": responses}


def _json(message) -> dict:
    name = message.DESCRIPTOR.name
    return {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}


def _add_schema(message: Descriptor, schemas: dict, comments: dict) -> None:
    if message.name in schemas:
        return
    schema: dict = {"type": "object", "properties": {}}
    schemas[message.name] = schema  # before the fields: a message may refer to itself
    if message.full_name in comments:
        schema["description"] = comments[message.full_name]
    for field in message.fields:
        prop = _field_schema(field, schemas, comments)
        description = comments.get(f"{message.full_name}.{field.name}")
        if description:
            # A `$ref` takes no sibling keywords in OpenAPI 3.0: wrap it to describe it.
            prop = {"allOf": [prop]} if "$ref" in prop else dict(prop)
            prop["description"] = description
        schema["properties"][field.json_name] = prop


def _field_schema(field: FieldDescriptor, schemas: dict, comments: dict) -> dict:
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        value = field.message_type.fields_by_name["value"]
        return {"type": "object",
                "additionalProperties": _value_schema(value, schemas, comments)}
    item = _value_schema(field, schemas, comments)
    return {"type": "array", "items": item} if field.is_repeated else item


def _value_schema(field: FieldDescriptor, schemas: dict, comments: dict) -> dict:
    if field.type == F.TYPE_MESSAGE:
        _add_schema(field.message_type, schemas, comments)
        return {"$ref": f"#/components/schemas/{field.message_type.name}"}
    if field.type == F.TYPE_ENUM:
        return {"type": "string", "enum": [v.name for v in field.enum_type.values]}
    if field.type in _INT64:
        return {"type": "string", "format": "int64", "pattern": "^-?[0-9]+$",
                "description": "A 64-bit integer, written as a decimal string."}
    return dict(_SCALARS[field.type])


def _apply_limits(schemas: dict, limits) -> None:
    """Writes the server's limits into the request schemas."""
    for message, fields in (("TranslateRequest", ("sentences",)),
                            ("AlignRequest", ("sources", "targets"))):
        for name in fields:
            prop = schemas.get(message, {}).get("properties", {}).get(name)
            if prop is not None:
                prop["maxItems"] = limits.max_sentences
                prop["items"] = {**prop["items"], "maxLength": limits.max_chars}
    beam = schemas.get("DecodeOptions", {}).get("properties", {}).get("beamSize")
    if beam is not None:
        beam.update(minimum=1, maximum=limits.max_beam_size)
    entries = schemas.get("Glossary", {}).get("properties", {}).get("entries")
    if entries is not None:
        entries["maxItems"] = limits.max_glossary_entries
    for side in ("source", "target"):
        term = schemas.get("GlossaryEntry", {}).get("properties", {}).get(side)
        if term is not None:
            term["maxLength"] = MAX_TERM_CHARS


@functools.cache
def proto_comments() -> dict[str, str]:
    """`{"nmt.v1.Message": text, "nmt.v1.Message.field": text}` from the `.proto` comments.

    Empty when the `.proto` source is not there (an installed package) or
    protoc fails. protoc runs in its own process (see `nmt_api.protos`).
    """
    source = protos.PROTO_ROOT / protos.PROTO_FILE
    if not source.exists():
        return {}
    try:
        import grpc_tools

        include = Path(grpc_tools.__file__).parent / "_proto"
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "descriptor.pb"
            subprocess.run(
                [sys.executable, "-m", "grpc_tools.protoc", f"-I{protos.PROTO_ROOT}",
                 f"-I{include}", "--include_source_info", f"--descriptor_set_out={out}",
                 protos.PROTO_FILE],
                capture_output=True, check=True, timeout=60)
            files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    except (ImportError, OSError, subprocess.SubprocessError):
        return {}
    return _comments(files.file[0])


def _comments(file: descriptor_pb2.FileDescriptorProto) -> dict[str, str]:
    """Leading comments of the file's messages and their fields, by full name."""
    text = {tuple(location.path): _tidy(location.leading_comments)
            for location in file.source_code_info.location if location.leading_comments}
    found = {}
    for i, message in enumerate(file.message_type):  # path: 4 = message_type, 2 = field
        name = f"{file.package}.{message.name}"
        if (4, i) in text:
            found[name] = text[(4, i)]
        for j, field in enumerate(message.field):
            if (4, i, 2, j) in text:
                found[f"{name}.{field.name}"] = text[(4, i, 2, j)]
    return found


def _tidy(comment: str) -> str:
    return " ".join(line.strip() for line in comment.strip().splitlines())
