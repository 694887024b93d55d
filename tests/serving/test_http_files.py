"""`POST /v1/files:translate`: a file uploaded as a form, answered with the translated file,
its name and summary; errors as the JSON of every route."""

import http.client
import json
import uuid

import pytest

from serving.http_files import content_disposition
from serving.testing import free_port
from serving.validation import Limits
from tests.serving.file_fakes import fake_server
from tests.serving.test_serving_files import TEMPLATE

ROUTE = "/v1/files:translate"
LIMITS = Limits(max_file_bytes=4000, max_file_sentences=5, max_message_bytes=2000)
MARKDOWN = """# My trip

I went to the market **this morning**.
The vegetables were [fresh](market.md).

```sh
open paris.jpg
```
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with fake_server(tmp_path_factory.mktemp("model"), limits=LIMITS,
                     http_port=free_port()) as running:
        yield running


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes]]):
    """`(body, content type)` of a multipart/form-data form."""
    boundary = uuid.uuid4().hex
    parts = [(f'form-data; name="{name}"', value.encode()) for name, value in fields.items()]
    parts += [(f'form-data; name="{name}"; filename="{filename}"', data)
              for name, (filename, data) in files.items()]
    body = b"".join(f"--{boundary}\r\nContent-Disposition: {disposition}\r\n\r\n".encode()
                    + data + b"\r\n" for disposition, data in parts)
    return body + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def post(server, body: bytes, content_type: str, **headers):
    """`(status, headers, body bytes)` of a POST to the file route."""
    connection = http.client.HTTPConnection("127.0.0.1", server.server.http_port, timeout=30)
    try:
        connection.request("POST", ROUTE, body=body,
                           headers={"Content-Type": content_type, **headers})
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def upload(server, filename: str, data: bytes, **fields):
    return post(server, *multipart(fields, {"file": (filename, data)}))


def test_the_answer_is_the_translated_file_named_with_its_summary(served):
    server, model = served

    status, headers, body = upload(server, "trip.md", MARKDOWN.encode(), requestId="r1")

    assert status == 200
    assert body.decode() == MARKDOWN.replace(
        "I went to the market **this morning**.\nThe vegetables were [fresh](market.md).",
        "I WENT TO THE MARKET **THIS MORNING**. THE VEGETABLES WERE [FRESH](market.md).").replace(
        "# My trip", "# MY TRIP")
    assert headers["Content-Type"] == "text/markdown; charset=utf-8"
    assert headers["Content-Disposition"] == (
        "attachment; filename=\"trip.fr.md\"; filename*=UTF-8''trip.fr.md")
    summary = json.loads(headers["X-Nmt-Summary"])
    assert summary["name"] == "trip.fr.md" and summary["format"] == "FILE_FORMAT_MARKDOWN"
    assert summary["text"].startswith("2 of 2 paragraphs, headings and table cells translated")
    assert summary["counts"]["sentences"] == 3 and summary["requestId"] == "r1"
    assert headers["X-Request-Id"]


def test_options_are_form_fields_by_their_json_or_proto_names(served):
    server, _ = served

    status, _, body = upload(server, "messages.txt", TEMPLATE.encode(), format="po",
                             overwrite="true", review="false", options='{"beamSize": 2}')
    assert status == 200
    assert 'msgstr "THANK YOU."' in body.decode()
    assert body.decode().count("fuzzy") == 1  # the template's header's, as it was

    glossary = json.dumps({"entries": [{"source": "green tea", "target": "thé"}]})
    status, headers, body = upload(server, "upload.bin", TEMPLATE.encode(), name="messages.pot",
                                   keep_placeholders="false", glossary=glossary)
    assert status == 200 and json.loads(headers["X-Nmt-Summary"])["name"] == "messages.fr.po"
    assert 'msgstr "I LIKE thé."' in body.decode()


@pytest.mark.parametrize(("form", "expected"), [
    ({"files": {"file": ("notes.rtf", b"Notes.")}},
     "cannot tell the format of notes.rtf from its extension '.rtf'"),
    ({"files": {"file": ("notes.po", b"# Notes\n\nBuy bread.\n")}}, "notes.po:3: not PO syntax"),
    ({"files": {"upload": ("a.po", b"")}}, "the form has no `file` part"),
    ({"files": {"file": ("a.po", b"")}, "fields": {"beam": "2"}},
     "unknown form field 'beam': the fields are file, name, format, overwrite, review, "
     "cueByCue, keepPlaceholders, options, glossary, requestId"),
    ({"files": {"file": ("a.po", b"")}, "fields": {"review": "maybe"}},
     "form field 'review' must be true or false. Received: 'maybe'"),
    ({"files": {"file": ("a.po", b"")}, "fields": {"options": "{beamSize: 2}"}},
     "form field 'options' must be a JSON DecodeOptions"),
    ({"files": {"file": ("a.po", b"")}, "fields": {"format": "rtf"}},
     "the form is not a valid FileHeader"),
])
def test_a_bad_form_or_file_is_400_with_the_json_error(served, form, expected):
    status, headers, body = post(served[0], *multipart(form.get("fields", {}), form["files"]))

    assert status == 400 and headers["Content-Type"].startswith("application/json")
    answer = json.loads(body)
    assert answer["code"] == "INVALID_ARGUMENT" and expected in answer["message"]


def test_a_body_that_is_not_a_form_is_400_saying_how_to_send_it(served):
    status, _, body = post(served[0], TEMPLATE.encode(), "text/plain")

    assert status == 400
    assert json.loads(body)["message"].startswith(
        "send the file as multipart/form-data: a `file` part, and options as form fields")


def test_an_unknown_glossary_is_404(served):
    status, _, body = upload(served[0], "messages.pot", TEMPLATE.encode(),
                             glossary='{"glossaryId": "medical"}')

    assert status == 404 and json.loads(body)["code"] == "NOT_FOUND"


def test_a_file_over_the_limit_is_413_whether_its_length_is_told_or_not(served):
    server, model = served
    before = len(model.calls)
    body, content_type = multipart({}, {"file": ("messages.pot", b"\n" * 6000)})

    status, _, answer = post(server, body, content_type)  # Content-Length over both limits
    assert status == 413
    assert json.loads(answer) == {"code": "RESOURCE_EXHAUSTED", "message": (
        "the request body is larger than this server's limit of 6000 bytes (--max-file-bytes "
        f"and --max-message-bytes). Received: Content-Length {len(body)}; split the file.")}

    just_over = TEMPLATE.encode() + b"\n" * (LIMITS.max_file_bytes - len(TEMPLATE) + 1)
    status, _, body = upload(server, "messages.pot", just_over)  # the body fits, the file not
    assert status == 413
    assert json.loads(body)["message"].startswith(
        "the file is larger than this server's limit of 4000 bytes (--max-file-bytes)")
    assert len(model.calls) == before


def test_too_many_sentences_is_413(served):
    text = "".join(f'msgid "Sentence number {i}."\nmsgstr ""\n\n' for i in range(6))

    status, _, body = upload(served[0], "many.po", text.encode())

    assert status == 413 and "--max-file-sentences" in json.loads(body)["message"]


def test_the_openapi_description_has_the_route(served):
    from openapi_spec_validator import validate

    connection = http.client.HTTPConnection("127.0.0.1", served[0].server.http_port, timeout=30)
    connection.request("GET", "/v1/openapi.json")
    document = json.loads(connection.getresponse().read())
    connection.close()

    validate(document)

    operation = document["paths"][ROUTE]["post"]
    form = operation["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert form["required"] == ["file"] and form["properties"]["file"]["format"] == "binary"
    assert {"overwrite", "review", "cueByCue", "options", "glossary"} <= set(form["properties"])
    assert "text/x-gettext-translation" in operation["responses"]["200"]["content"]
    assert "X-Nmt-Summary" in operation["responses"]["200"]["headers"]
    assert "4000" in operation["responses"]["413"]["description"]
    assert document["components"]["schemas"]["FileSummary"]["properties"]["counts"]


def test_content_disposition_gives_an_ascii_name_and_the_utf8_one():
    assert content_disposition('rapport "final" é.fr.docx') == (
        "attachment; filename=\"rapport _final_ _.fr.docx\"; "
        "filename*=UTF-8''rapport%20%22final%22%20%C3%A9.fr.docx")


# --- API keys ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keyed(tmp_path_factory):
    from serving.keys import Quota
    from tests.serving.test_server_keys import _keys_file

    directory = tmp_path_factory.mktemp("keyed")
    tokens = _keys_file(directory / "keys.json", small=Quota(chars_per_day=10),
                        daily=Quota(chars_per_day=60))
    with fake_server(directory / "model", keys_file=directory / "keys.json",
                     http_port=free_port()) as running:
        yield running[0], tokens


def test_a_key_is_charged_its_files_sentences_and_refused_past_its_quota(keyed):
    server, tokens = keyed
    body, content_type = multipart({}, {"file": ("messages.pot", TEMPLATE.encode())})

    assert post(server, body, content_type)[0] == 401
    status, headers, _ = post(server, body, content_type, **{"X-Api-Key": tokens["daily"]})
    assert status == 200 and json.loads(headers["X-Nmt-Summary"])["sourceChars"] == "39"

    status, headers, answer = post(server, body, content_type,
                                   Authorization=f"Bearer {tokens['daily']}")
    assert status == 429 and int(headers["Retry-After"]) > 0
    assert "has 21 of its 60 characters a day left" in json.loads(answer)["message"]

    status, _, answer = post(server, body, content_type, **{"X-Api-Key": tokens["small"]})
    assert status == 413
    assert json.loads(answer)["message"] == (
        "this request has 39 characters, more than the key 'small' may send in a day (10); "
        "send it in smaller requests")
