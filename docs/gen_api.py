"""The reference part of `docs/api.md`, generated from the sources so that it cannot drift.

- gRPC: `proto/nmt_api/v1/translation.proto`, read through the descriptors
  protoc writes with `--include_source_info` (which carry the comments): the
  service and its RPCs, every message with its fields, every enum with its
  values, each with its comment.
- HTTP/JSON: the OpenAPI description the server serves at `/v1/openapi.json`
  (`serving.openapi.openapi_document` over `serving.http_api.ENDPOINTS`),
  built with the default limits and with auth on, so that every answer a
  route can give is listed.

The MkDocs hook `docs/hooks.py` puts the text into `docs/api.md` when the site
is built; `python docs/gen_api.py` prints it.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from google.protobuf import descriptor_pb2

from nmt_api import protos

FD = descriptor_pb2.FieldDescriptorProto
# Paths into a FileDescriptorProto, as `SourceCodeInfo.Location.path` spells them.
FILE_MESSAGE, FILE_ENUM, FILE_SERVICE = 4, 5, 6
MESSAGE_FIELD, MESSAGE_NESTED, MESSAGE_ENUM = 2, 3, 4
ENUM_VALUE = 2
SERVICE_METHOD = 2
_SCALAR_NAMES = {
    FD.TYPE_DOUBLE: "double", FD.TYPE_FLOAT: "float", FD.TYPE_INT64: "int64",
    FD.TYPE_UINT64: "uint64", FD.TYPE_INT32: "int32", FD.TYPE_FIXED64: "fixed64",
    FD.TYPE_FIXED32: "fixed32", FD.TYPE_BOOL: "bool", FD.TYPE_STRING: "string",
    FD.TYPE_BYTES: "bytes", FD.TYPE_UINT32: "uint32", FD.TYPE_SFIXED32: "sfixed32",
    FD.TYPE_SFIXED64: "sfixed64", FD.TYPE_SINT32: "sint32", FD.TYPE_SINT64: "sint64",
}
# JSON Schema keywords that carry a limit, and how a reader says them.
_LIMIT_WORDS = {"maxItems": "at most {} entries", "maxLength": "at most {} characters",
                "minimum": "at least {}", "maximum": "at most {}"}
# The range of a uint32 field, which the description spells out for every such field.
_UINT32_RANGE = (0, 2**32 - 1)


def proto_descriptor(proto_root: Path = protos.PROTO_ROOT,
                     proto_file: str = protos.PROTO_FILE) -> descriptor_pb2.FileDescriptorProto:
    """The `.proto` file's descriptor, comments included.

    Args:
        proto_root: the include directory the file's path is relative to.
        proto_file: the file, relative to `proto_root`.

    Returns:
        The file's `FileDescriptorProto`, with `source_code_info`.

    Raises:
        RuntimeError: protoc failed (its message says where).
    """
    import grpc_tools

    include = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "descriptor.pb"
        # In its own process, as `nmt_api.protos` runs it.
        done = subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", f"-I{proto_root}", f"-I{include}",
             "--include_source_info", f"--descriptor_set_out={out}", proto_file],
            capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"protoc failed on {proto_root / proto_file} "
                               f"(exit code {done.returncode}): {done.stderr.strip()}")
        files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    [file] = [f for f in files.file if f.name == proto_file]
    return file


def comments(file: descriptor_pb2.FileDescriptorProto) -> dict[tuple[int, ...], list[str]]:
    """The comments of the file's declarations, as paragraphs, by descriptor path.

    A declaration's leading comment comes first, then its trailing one; a
    blank comment line separates paragraphs.
    """
    found = {}
    for location in file.source_code_info.location:
        text = "\n\n".join(c for c in (location.leading_comments, location.trailing_comments)
                           if c.strip())
        if text:
            paragraphs = re.split(r"\n\s*\n", text.strip("\n"))
            found[tuple(location.path)] = [" ".join(line.strip() for line in p.splitlines())
                                           for p in paragraphs if p.strip()]
    return found


def inline(text: str) -> str:
    """`text` made safe for one Markdown table cell or line.

    Outside code spans, `|` would end the cell, `<` would open an HTML tag and
    `*` or `_` could start emphasis; code spans are kept as they are.

    Args:
        text: one line of plain text with `backtick` code spans.

    Returns:
        The same text, escaped.
    """
    parts = re.split(r"(`[^`]*`)", text)
    for i in range(0, len(parts), 2):  # the even parts are outside code spans
        part = parts[i].replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*")
        part = re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", part)
        parts[i] = part.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "".join(parts)


def _anchor(name: str) -> str:
    """The `id` MkDocs gives a heading that is just `name` (toc's slugify)."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", name).strip().lower())


def _link(type_name: str, package: str) -> str:
    """A link to the section of a message or enum, from its full name `.pkg.Name`."""
    name = type_name.removeprefix(f".{package}.")
    return f"[`{name}`](#{_anchor(name)})"


def _messages(file: descriptor_pb2.FileDescriptorProto
              ) -> Iterator[tuple[str, tuple[int, ...], descriptor_pb2.DescriptorProto]]:
    """`(name, path, message)` of every message, nested ones as `Outer.Inner`, map entries aside."""
    def walk(messages, prefix: str, path: tuple[int, ...], kind: int):
        for i, message in enumerate(messages):
            if message.options.map_entry:
                continue
            name, here = f"{prefix}{message.name}", (*path, kind, i)
            yield name, here, message
            yield from walk(message.nested_type, f"{name}.", here, MESSAGE_NESTED)

    yield from walk(file.message_type, "", (), FILE_MESSAGE)


def _enums(file: descriptor_pb2.FileDescriptorProto
           ) -> Iterator[tuple[str, tuple[int, ...], descriptor_pb2.EnumDescriptorProto]]:
    """`(name, path, enum)` of every enum, top-level and nested."""
    for i, enum in enumerate(file.enum_type):
        yield enum.name, (FILE_ENUM, i), enum
    for name, path, message in _messages(file):
        for i, enum in enumerate(message.enum_type):
            yield f"{name}.{enum.name}", (*path, MESSAGE_ENUM, i), enum


def _field_type(field: descriptor_pb2.FieldDescriptorProto,
                file: descriptor_pb2.FileDescriptorProto) -> str:
    if field.type in (FD.TYPE_MESSAGE, FD.TYPE_ENUM):
        entry = _map_entry(field, file)
        if entry is not None:
            key, value = entry.field
            return f"`map<{_scalar(key, file)}, {_scalar(value, file)}>`"
        kind = _link(field.type_name, file.package)
    else:
        kind = f"`{_SCALAR_NAMES[field.type]}`"
    if field.label == FD.LABEL_REPEATED:
        return f"repeated {kind}"
    return f"optional {kind}" if field.proto3_optional else kind


def _scalar(field: descriptor_pb2.FieldDescriptorProto,
            file: descriptor_pb2.FileDescriptorProto) -> str:
    if field.type in (FD.TYPE_MESSAGE, FD.TYPE_ENUM):
        return field.type_name.removeprefix(f".{file.package}.")
    return _SCALAR_NAMES[field.type]


def _map_entry(field: descriptor_pb2.FieldDescriptorProto,
               file: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.DescriptorProto | None:
    """The map-entry message a `map<K, V>` field is made of, or None for any other field."""
    if field.label != FD.LABEL_REPEATED or field.type != FD.TYPE_MESSAGE:
        return None

    def walk(messages, prefix: str):
        for message in messages:
            yield f"{prefix}.{message.name}", message
            yield from walk(message.nested_type, f"{prefix}.{message.name}")

    entry = dict(walk(file.message_type, f".{file.package}")).get(field.type_name)
    return entry if entry is not None and entry.options.map_entry else None


def _paragraphs(paragraphs: list[str]) -> list[str]:
    return [line for p in paragraphs for line in (inline(p), "")]


def render_grpc(file: descriptor_pb2.FileDescriptorProto) -> list[str]:
    """The gRPC part: services and RPCs, messages and their fields, enums and their values."""
    notes = comments(file)
    lines = []
    for s, service in enumerate(file.service):
        full = f"{file.package}.{service.name}"
        lines += [f"## gRPC service `{full}`", "",
                  f"Package `{file.package}`, from `proto/{file.name}`. "
                  "Each RPC's full name is `/" + full + "/<RPC>`.", ""]
        lines += _paragraphs(notes.get((FILE_SERVICE, s), []))
        lines += ["| RPC | request | response | what it does |", "|---|---|---|---|"]
        for m, method in enumerate(service.method):
            request = ("stream " if method.client_streaming else "") + _link(
                method.input_type, file.package)
            response = ("stream " if method.server_streaming else "") + _link(
                method.output_type, file.package)
            text = " ".join(notes.get((FILE_SERVICE, s, SERVICE_METHOD, m), []))
            lines.append(f"| `{method.name}` | {request} | {response} | {inline(text)} |")
        lines.append("")
    lines += ["## Messages", "",
              "Field names as the `.proto` declares them; over HTTP/JSON and in grpcurl "
              "each field goes by its JSON name (the proto3 JSON mapping; the snake_case "
              "name is accepted too). A field marked optional may be left unset; an "
              "unset field without that mark reads as its zero value.", ""]
    for name, path, message in _messages(file):
        lines += [f"### {name}", ""]
        lines += _paragraphs(notes.get(path, []))
        if not message.field:
            lines += ["No fields.", ""]
            continue
        lines += ["| field | JSON name | number | type | description |", "|---|---|---:|---|---|"]
        for f, field in enumerate(message.field):
            text = " ".join(notes.get((*path, MESSAGE_FIELD, f), []))
            lines.append(f"| `{field.name}` | `{field.json_name}` | {field.number} | "
                         f"{_field_type(field, file)} | {inline(text)} |")
        lines.append("")
    lines += ["## Enums", "",
              "Over HTTP/JSON an enum value is written as its name, e.g. "
              "`\"TEXT_FORMAT_HTML\"`.", ""]
    for name, path, enum in _enums(file):
        lines += [f"### {name}", ""]
        lines += _paragraphs(notes.get(path, []))
        lines += ["| value | number | description |", "|---|---:|---|"]
        for v, value in enumerate(enum.value):
            text = " ".join(notes.get((*path, ENUM_VALUE, v), []))
            lines.append(f"| `{value.name}` | {value.number} | {inline(text)} |")
        lines.append("")
    return lines


def _schema_link(schema: dict, known: set[str]) -> str:
    """A link to the message section a `$ref` schema names, or the schema's name."""
    name = schema["$ref"].rsplit("/", 1)[-1]
    return f"[`{name}`](#{_anchor(name)})" if name in known else f"`{name}`"


def _body(content: dict, known: set[str]) -> str:
    """The JSON body's message, or the media types of another body (a file)."""
    if "application/json" in content:
        return _schema_link(content["application/json"]["schema"], known)
    return ", ".join(f"`{media}`" for media in content)


def _request_body(content: dict, known: set[str]) -> str:
    if "application/json" in content:
        return f"Request body: {_body(content, known)} as JSON."
    [(media, body)] = content.items()
    fields = ", ".join(f"`{name}`" for name in body["schema"]["properties"])
    return f"Request body: `{media}`, with the fields {fields}."


def _limits(schemas: dict) -> list[tuple[str, str]]:
    """`(schema.property, what it allows)` for every limit written into the schemas."""
    def words(schema: dict) -> list[str]:
        if (schema.get("minimum"), schema.get("maximum")) == _UINT32_RANGE:
            schema = {k: v for k, v in schema.items() if k not in ("minimum", "maximum")}
        return [_LIMIT_WORDS[k].format(schema[k]) for k in _LIMIT_WORDS if k in schema]

    found = []
    for name, schema in sorted(schemas.items()):
        for prop_name, prop in schema.get("properties", {}).items():
            limits = words(prop) + [f"each {w}" for w in words(prop.get("items", {}))]
            if limits:
                found.append((f"{name}.{prop_name}", ", ".join(limits)))
    return found


def render_http(document: dict, messages: set[str]) -> list[str]:
    """The HTTP/JSON part, from an OpenAPI 3 document.

    Args:
        document: the OpenAPI description (`serving.openapi.openapi_document`).
        messages: names of the messages the gRPC part has a section for; their
            schemas link there.
    """
    schemas = document["components"]["schemas"]
    lines = ["## HTTP/JSON routes", "", inline(document["info"]["description"]), "",
             "| method | path | gRPC | what it does |", "|---|---|---|---|"]
    routes = [(method.upper(), path, operation)
              for path, operations in document["paths"].items()
              for method, operation in operations.items()]
    for method, path, operation in routes:
        rpc = f"`{operation['operationId']}`" if "operationId" in operation else ""
        lines.append(f"| {method} | [`{path}`](#{_anchor(f'{method} {path}')}) | {rpc} | "
                     f"{inline(operation['summary'])} |")
    lines.append("")
    for method, path, operation in routes:
        lines += [f"### {method} {path}", "", inline(operation.get("description", "")), ""]
        if "requestBody" in operation:
            lines += [_request_body(operation["requestBody"]["content"], messages), ""]
        if operation.get("security"):
            lines += ["Needs `Authorization: Bearer <token>` when the server has a token "
                      "(`NMT_AUTH_TOKEN`).", ""]
        parameters = operation.get("parameters", [])
        if parameters:
            lines += ["| header | type | description |", "|---|---|---|"]
            for p in parameters:
                kind = p["schema"]["type"] + (f", at most {p['schema']['maxLength']} characters"
                                              if "maxLength" in p["schema"] else "")
                lines.append(f"| `{p['name']}` | {kind} | {inline(p['description'])} |")
            lines.append("")
        lines += ["| status | body | when |", "|---|---|---|"]
        for status, response in sorted(operation["responses"].items()):
            body = _body(response["content"], messages) if "content" in response else ""
            lines.append(f"| {status} | {body} | {inline(response['description'])} |")
        lines.append("")
    lines += ["### Other bodies", ""]
    for name in sorted(set(schemas) - messages):
        lines += [f"`{name}`:", "", "| property | type | description |", "|---|---|---|"]
        for prop_name, prop in schemas[name]["properties"].items():
            kind = prop.get("type", "")
            if "enum" in prop:
                kind += ": " + ", ".join(f"`{v}`" for v in prop["enum"])
            lines.append(f"| `{prop_name}` | {kind} | {inline(prop.get('description', ''))} |")
        lines.append("")
    limits = _limits(schemas)
    if limits:
        lines += ["### Limits in the description", "",
                  "A server writes its limits into the schemas of its `/v1/openapi.json`; "
                  "with the default options they are:", "",
                  "| schema property | allowed |", "|---|---|"]
        lines += [f"| `{where}` | {what} |" for where, what in limits]
        lines.append("")
    return lines


def render() -> str:
    """The whole reference: the gRPC service, then the HTTP/JSON routes, in Markdown."""
    from serving.http_api import ENDPOINTS
    from serving.openapi import openapi_document
    from serving.validation import Limits

    file = proto_descriptor()
    messages = {name for name, _, _ in _messages(file)}
    document = openapi_document(ENDPOINTS, Limits(), auth=True)
    lines = render_grpc(file) + render_http(document, messages)
    check_anchors(lines)
    return "\n".join(lines).rstrip() + "\n"


def check_anchors(lines: list[str]) -> None:
    """Refuses two headings with one anchor: links would all go to the first.

    Raises:
        ValueError: naming the headings that share an anchor.
    """
    seen: dict[str, str] = {}
    for line in lines:
        if line.startswith("#"):
            title = line.lstrip("#").strip().replace("`", "")
            anchor = _anchor(title)
            if anchor in seen:
                raise ValueError(f"the headings {seen[anchor]!r} and {title!r} share the anchor "
                                 f"#{anchor}; rename one of them")
            seen[anchor] = title


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write here instead of standard output")
    args = parser.parse_args(argv)
    text = render()
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
