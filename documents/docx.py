"""Word documents (.docx) translated: every paragraph, its formatting kept on the aligned words.

    document = read_docx(Path("report.docx").read_bytes(), "report.docx")
    translated = translate_docx(document, lambda s: translator.translate(s, options))
    Path("rapport.docx").write_bytes(translated.data)      # nmt_cli/files.py writes atomically

What is translated: the paragraphs of every part of the package that holds
text a reader sees, found by content type in `[Content_Types].xml`: the
document's body (tables, nested ones included), every header and footer of
every section (first-page and even-page ones too: each is a part of its own),
footnotes, endnotes and comments; text boxes, wherever they are, since their
paragraphs are paragraphs of the part that holds them (Word writes a text box
twice, as DrawingML and as its VML fallback: both are translated, the
sentences once). Each paragraph's runs become inline markup
(`documents.wordml`): a run's formatting is a tag around its text,
hyperlinks, content controls and fields are elements around theirs, tabs,
breaks, drawings, note references and bookmarks are kept verbatim; the markup
is planned by `documents.markup.plan_markup` and the tags go to the target
words aligned to those they enclosed, so bold, italic and links land on the
French words; the paragraph is written again from the translated markup, each
run with a copy of its formatting (`<w:rPr>`). Placeholders (`%s`, `{0}`)
come back exactly unless `placeholders=False`; code (monospace or code-styled
runs and paragraphs, hidden text) is kept as it is. The distinct sentences of
the whole document go to `translate` together, sorted by length, `batch_size`
a call.

Not translated: charts, SmartArt and embedded objects (parts of their own, in
DrawingML), the document's properties (title, subject), alternative text of
images, the glossary of building blocks, and Strict Open XML documents (refused:
save them as a Word Document). The paragraph properties, the section and page
setup and everything outside the paragraphs rewritten stay as they were.

Everything else is kept byte for byte: each zip member not translated is
copied as it is (content, name, order, date and compression method); a part
translated is written again from its tree (namespace prefixes, `mc:Ignorable`
and every element outside the paragraphs rewritten kept by lxml). The result is
read back before it is given.

Library: the parts' XML directly, with lxml and the standard zipfile, rather
than `python-docx`: python-docx reads no footnote, endnote or text box and
saves every part it loaded written again, and only lxml (which python-docx is
built on) keeps the namespace prefixes that `mc:Ignorable` names (ElementTree
renames them, and Word then refuses the file). The tests build their documents
with python-docx and read the results with it.

A file from a user is untrusted: at most `MAX_DOCX_MEMBERS` zip members and
`MAX_DOCX_BYTES` bytes once uncompressed, counted as they are read rather than
as the zip declares them (past either, `DocxLimitError`); no encrypted member,
no two members of one name. An XML part that declares a document type
(entities: billion laughs, external files) is refused, and lxml neither loads
DTDs nor reads the network. A bad file raises `DocxFileError` (a `ValueError`)
saying what is wrong.

Nothing here imports TensorFlow: `translate` is any sentences -> results with
`.text` and `.word_alignment` (`Translator.translate`, a client's `translate`).
"""

from __future__ import annotations

import dataclasses
import io
import posixpath
import re
import zipfile
import zlib
from urllib.parse import unquote

from lxml import etree

from documents.file_batches import FileOptions, Progress, translate_plans
from documents.markup import MarkupError, MarkupPlan, plan_markup
from documents.sentences import Translate
from documents.wordml import (
    ParagraphError,
    ParagraphMarkup,
    W,
    paragraph_verbatim,
    read_paragraph,
    write_paragraph,
)

# Limits on a file from a user, each checked in `read_docx` (tests/documents/test_docx.py).
MAX_DOCX_MEMBERS = 10_000  # zip members
MAX_DOCX_BYTES = 256 * 2**20  # all members together, uncompressed
_CHUNK = 2**20

_WORD = "application/vnd.openxmlformats-officedocument.wordprocessingml."
_MAIN = frozenset({_WORD + "document.main+xml", _WORD + "template.main+xml",
                   "application/vnd.ms-word.document.macroEnabled.main+xml",
                   "application/vnd.ms-word.template.macroEnabledTemplate.main+xml"})
# Content type -> what it is, for the parts translated (and the root element they must have).
TEXT_PARTS = {**{main: "document" for main in _MAIN}, _WORD + "header+xml": "hdr",
              _WORD + "footer+xml": "ftr", _WORD + "footnotes+xml": "footnotes",
              _WORD + "endnotes+xml": "endnotes", _WORD + "comments+xml": "comments"}
_CONTENT_TYPES = "[Content_Types].xml"
_TYPES_NS = "{http://schemas.openxmlformats.org/package/2006/content-types}"
_STRICT_W = "http://purl.oclc.org/ooxml/wordprocessingml/main"
_DECLARATION = re.compile(rb"""<\?xml[^>]*?encoding=["']([\w.:-]+)["'][^>]*\?>\s*""")
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # Compound File: encrypted OOXML, or .doc


class DocxFileError(ValueError):
    """A file that is not a Word document this module can read, or over a limit; the message
    names the file (and part) and what to change."""


class DocxLimitError(DocxFileError):
    """A file over `MAX_DOCX_MEMBERS` or `MAX_DOCX_BYTES` (a zip bomb, or too large): a
    server answers it as too large (413, RESOURCE_EXHAUSTED) rather than as malformed."""


@dataclasses.dataclass(frozen=True)
class DocxOptions(FileOptions):
    """How a Word document is translated: placeholders, batch_size (`FileOptions`)."""


@dataclasses.dataclass(frozen=True)
class DocxMember:
    """A zip member as read: its entry (name, date, compression) and its content."""

    info: zipfile.ZipInfo
    data: bytes


@dataclasses.dataclass(frozen=True)
class DocxDocument:
    """A Word document as read.

    Attributes:
        name: for messages (the path).
        members: the zip's members, in order.
        parts: the names of the members translated (`TEXT_PARTS`), in zip order.
        comment: the zip's comment, written back.
    """

    name: str
    members: tuple[DocxMember, ...]
    parts: tuple[str, ...]
    comment: bytes = b""

    def member(self, name: str) -> bytes:
        return next(member.data for member in self.members if member.info.filename == name)


@dataclasses.dataclass(frozen=True)
class DocxReport:
    """What a translation did.

    Attributes:
        parts: parts read for text (body, headers, footers, notes, comments).
        written: parts with a paragraph translated (the others are copied as they are).
        paragraphs: paragraphs with words, all translated.
        sentences: distinct sentences the model read.
    """

    parts: int
    written: int
    paragraphs: int
    sentences: int


@dataclasses.dataclass(frozen=True)
class DocxTranslation:
    """The translated document (`data`, a .docx) and what was done."""

    data: bytes
    report: DocxReport


# ---------------------------------------------------------------------------------------------
# Reading.


def read_docx(data: bytes, name: str = "<DOCX file>") -> DocxDocument:
    """Reads a Word document (.docx, .docm, .dotx) and checks the parts it will translate.

    Args:
        data: the file's bytes.
        name: the file's name, for error messages.

    Raises:
        DocxFileError: not a zip (or a damaged one), over a limit, an encrypted member,
            no `[Content_Types].xml` or Word document part, or a part translated that is
            not well-formed XML, declares a document type or is Strict Open XML.
    """
    if data.startswith(_OLE):
        raise DocxFileError(f"{name} is a password-protected Word document or an old binary "
                            ".doc: remove the password, or save it as a Word Document (.docx)")
    members, comment = _members(data, name)
    by_name = {member.info.filename: member for member in members}
    if _CONTENT_TYPES not in by_name:
        raise DocxFileError(f"{name} has no {_CONTENT_TYPES}: it is a zip, but not an Office "
                            "Open XML document; is it a .docx?")
    types = _content_types(by_name[_CONTENT_TYPES].data, name)
    parts = [member.info.filename for member in members
             if _content_type(types, member.info.filename) in TEXT_PARTS]
    if not any(_content_type(types, part) in _MAIN for part in parts):
        raise DocxFileError(f"{name} has no Word document part (content type {_WORD}"
                            "document.main+xml): is it a Word document? (.xlsx and .pptx "
                            "are not read)")
    for part in parts:
        _part_tree(by_name[part].data, name, part, TEXT_PARTS[_content_type(types, part)])
    return DocxDocument(name, tuple(members), tuple(parts), comment)


def _members(data: bytes, name: str) -> tuple[list[DocxMember], bytes]:
    """The zip's members read within the limits, and its comment."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            if len(infos) > MAX_DOCX_MEMBERS:
                raise DocxLimitError(f"{name} holds {len(infos)} zip members; the limit is "
                                    f"MAX_DOCX_MEMBERS={MAX_DOCX_MEMBERS}: is it a Word "
                                    "document?")
            names = [info.filename for info in infos]
            if len(set(names)) != len(names):
                twice = next(n for n in names if names.count(n) > 1)
                raise DocxFileError(f"{name} holds two zip members named {twice!r}: the file "
                                    "is damaged; save it again from Word")
            members, budget = [], MAX_DOCX_BYTES
            for info in infos:
                if info.flag_bits & 0x1:
                    raise DocxFileError(f"{name}: the zip member {info.filename!r} is "
                                        "encrypted: save the document without a password")
                content = _read_member(archive, info, budget, name)
                budget -= len(content)
                members.append(DocxMember(info, content))
            return members, archive.comment
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError,
            ValueError) as error:
        if isinstance(error, DocxFileError):
            raise
        raise DocxFileError(f"{name} is not a readable zip ({error}): is it a .docx, and "
                            "was it copied whole?") from None


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: int,
                 name: str) -> bytes:
    """A member's content, refused once past `budget` bytes (a zip bomb's declared sizes
    are not trusted)."""
    chunks, size = [], 0
    with archive.open(info) as stream:
        while chunk := stream.read(min(_CHUNK, budget - size + 1)):
            chunks.append(chunk)
            size += len(chunk)
            if size > budget:
                raise DocxLimitError(
                    f"{name} uncompresses to more than MAX_DOCX_BYTES={MAX_DOCX_BYTES} bytes "
                    f"(at the zip member {info.filename!r}): a zip bomb, or a document too "
                    "large to translate here; split it, or compress its images")
    return b"".join(chunks)


def _parser() -> etree.XMLParser:
    # One per parse: lxml parsers are not to be shared between threads.
    return etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                           huge_tree=False, remove_blank_text=False)


def _xml(data: bytes, name: str, part: str) -> etree._ElementTree:
    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as error:
        raise DocxFileError(f"{name}: {part} is not well-formed XML (line {error.lineno}: "
                            f"{error.msg}): the file is damaged; open it in Word and save it "
                            "again") from None
    tree = root.getroottree()
    if tree.docinfo.doctype:
        raise DocxFileError(f"{name}: {part} declares a document type ({tree.docinfo.doctype}): "
                            "a Word document's parts have none, and entities are refused in "
                            "files to translate (they can expand into gigabytes or read other "
                            "files); save the document again from Word")
    return tree


def _content_types(data: bytes, name: str) -> tuple[dict[str, str], dict[str, str]]:
    """`(defaults by extension, overrides by part name)`, both lower-cased."""
    root = _xml(data, name, _CONTENT_TYPES).getroot()
    defaults = {e.get("Extension", "").lower(): e.get("ContentType", "")
                for e in root.iter(f"{_TYPES_NS}Default")}
    overrides = {unquote(e.get("PartName", "")).lower(): e.get("ContentType", "")
                 for e in root.iter(f"{_TYPES_NS}Override")}
    return defaults, overrides


def _content_type(types: tuple[dict[str, str], dict[str, str]], member: str) -> str:
    defaults, overrides = types
    found = overrides.get("/" + member.lower())
    if found is not None:
        return found
    return defaults.get(posixpath.splitext(member)[1][1:].lower(), "")


def _part_tree(data: bytes, name: str, part: str, root_name: str) -> etree._ElementTree:
    tree = _xml(data, name, part)
    root = tree.getroot()
    if root.tag == f"{{{_STRICT_W}}}{root_name}":
        raise DocxFileError(f"{name} is a Strict Open XML document, which is not read: save "
                            "it in Word as a Word Document (.docx), not Strict Open XML")
    if root.tag != f"{{{W}}}{root_name}":
        raise DocxFileError(f"{name}: {part}'s root element is {root.tag}, not a WordprocessingML "
                            f"<w:{root_name}>: the file is damaged; save it again from Word")
    return tree


# ---------------------------------------------------------------------------------------------
# Translating.


def translate_docx(document: DocxDocument, translate: Translate,
                   options: DocxOptions = DocxOptions(), *,
                   progress: Progress | None = None) -> DocxTranslation:
    """Translates every paragraph of the document's text parts (see the module docstring).

    Args:
        document: from `read_docx`.
        translate: sentences -> one result per sentence (`.text`, `.word_alignment`).
        options: placeholders, batch size.
        progress: called with `(sentences done, sentences)` after each call of `translate`.

    Returns:
        The new .docx's bytes and a `DocxReport`.

    Raises:
        DocxFileError: a paragraph over a markup limit (`documents.markup`), or the
            result would not read back as meant (a bug: nothing is given).
    """
    trees, paragraphs, counts = {}, [], {}  # every paragraph read before any is written
    for part, root in _part_roots(document):
        trees[part] = _part_tree(document.member(part), document.name, part, root)
        read = [(part, read_paragraph(p)) for p in trees[part].iter(f"{{{W}}}p")]
        paragraphs += read
        counts[part] = len(read)
    plans = _plans(document, paragraphs, options)
    todo = [(part, p) for part, p in paragraphs if plans[p.markup].sentences]
    translated, sentences = translate_plans({m: p for m, p in plans.items() if p.sentences},
                                            translate, options.batch_size, progress)
    for part, paragraph in todo:
        try:
            write_paragraph(paragraph, translated[paragraph.markup].text)
        except ParagraphError as error:
            raise DocxFileError(f"{document.name}: a paragraph of {part} would not be written "
                                f"as meant, so nothing was written; please report this with "
                                f"the file ({error})") from None
    written = {part for part, _ in todo}
    changed = {part: _serialized(trees[part], document.member(part)) for part in written}
    data = _zipped(document, changed)
    _check(document, data, {part: counts[part] for part in written})
    report = DocxReport(parts=len(document.parts), written=len(written), paragraphs=len(todo),
                        sentences=sentences)
    return DocxTranslation(data, report)


def _part_roots(document: DocxDocument) -> list[tuple[str, str]]:
    types = _content_types(document.member(_CONTENT_TYPES), document.name)
    return [(part, TEXT_PARTS[_content_type(types, part)]) for part in document.parts]


def _plans(document: DocxDocument, paragraphs: list[tuple[str, ParagraphMarkup]],
           options: DocxOptions) -> dict[str, MarkupPlan]:
    """Each distinct paragraph markup's plan; one over a markup limit is refused."""
    plans = {}
    for part, paragraph in paragraphs:
        if paragraph.markup in plans:
            continue
        try:
            plans[paragraph.markup] = plan_markup(paragraph.markup, "xml",
                                                  placeholders=options.placeholders,
                                                  verbatim=paragraph_verbatim)
        except MarkupError as error:
            raise DocxFileError(f"{document.name}: a paragraph of {part} cannot be translated "
                                f"(its markup, counted from its start: {error})") from None
    return plans


# ---------------------------------------------------------------------------------------------
# Writing.


def _serialized(tree: etree._ElementTree, original: bytes) -> bytes:
    """The part's tree as UTF-8, after the original's XML declaration where that one names
    UTF-8 (Word's `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>` and its line
    end), else after lxml's."""
    found = _DECLARATION.match(original)
    if found and found.group(1).lower() in (b"utf-8", b"utf8"):
        return found.group(0) + etree.tostring(tree, encoding="UTF-8", xml_declaration=False)
    return etree.tostring(tree, xml_declaration=True, encoding="UTF-8",
                          standalone=tree.docinfo.standalone)


def _zipped(document: DocxDocument, changed: dict[str, bytes]) -> bytes:
    """The zip again: each member in its place, with its entry's name, date, attributes and
    compression; the content of those in `changed` replaced."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.comment = document.comment
        for member in document.members:
            old = member.info
            info = zipfile.ZipInfo(old.filename, old.date_time)
            info.compress_type = old.compress_type
            info.comment, info.create_system = old.comment, old.create_system
            info.external_attr, info.internal_attr = old.external_attr, old.internal_attr
            archive.writestr(info, changed.get(old.filename, member.data))
    return buffer.getvalue()


def _check(document: DocxDocument, data: bytes, paragraphs: dict[str, int]) -> None:
    """Raises DocxFileError where `data` does not read back as a Word document with the
    same members, the same parts translated and as many paragraphs in each part written."""
    try:
        again = read_docx(data, document.name)
        problem = None
        if [m.info.filename for m in again.members] != [m.info.filename
                                                         for m in document.members]:
            problem = "the zip members"
        elif again.parts != document.parts:
            problem = "the parts with text"
        roots = dict(_part_roots(again))
        for part, count in paragraphs.items():
            tree = _part_tree(again.member(part), document.name, part, roots[part])
            if problem is None and sum(1 for _ in tree.iter(f"{{{W}}}p")) != count:
                problem = f"the paragraphs of {part}"
    except DocxFileError as error:
        problem = str(error)
    if problem is not None:
        raise DocxFileError(f"{document.name}: {problem} would not read back as meant, so "
                            "nothing was written; please report this with the file")
