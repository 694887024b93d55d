"""XLIFF 1.2 and 2.x files translated: each `<source>` into its `<target>`, the rest as written.

    document = read_xliff(Path("strings.xlf").read_bytes(), "strings.xlf")
    translated = translate_xliff(document, lambda s: translator.translate(s, options))
    Path("strings.fr.xlf").write_bytes(translated.data)    # nmt_cli/files.py writes atomically

What is translated:
- XLIFF 1.2 (`urn:oasis:names:tc:xliff:document:1.2`): each `<trans-unit>`'s
  `<source>` into its `<target>`; where the unit has a `<seg-source>`, that
  one, so that the target keeps its `<mrk mtype="seg">` segments. XLIFF 2.0
  and 2.1 (`urn:oasis:names:tc:xliff:document:2.0`): each `<segment>` of each
  `<unit>`; `<ignorable>` is left alone. Sources in `<alt-trans>` are not units.
- Not: units under `translate="no"`, their own or inherited (1.2 `<group>`;
  2.x `<file>`, `<group>`); targets with content, unless `overwrite`; sources
  with no word for the model (whitespace, tags, CDATA, `translate="no"` inside),
  which stay without a target for a translator to fill.
- A source is XML markup and goes the way of `nmt translate --format xml`
  (`documents.markup`): paired inline elements (1.2 `g mrk`, 2.x `pc mrk`)
  around the target words aligned to what they enclosed; standalone ones (1.2
  `x bx ex`, 2.x `ph sc ec sm em cp`) and those holding native code rather
  than text (1.2 `ph bpt ept it`, `mrk mtype="protected"`; 2.x `mrk
  translate="no"`) verbatim, once each, at their aligned place. A start code
  never follows its end code (1.2 `bpt`/`ept` and `bx`/`ex` by `rid` or `id`,
  2.x `sc`/`ec` by `startRef`): where the alignment would put them so, the two
  swap. Placeholders (`%s`, `{0}`) are carried across unless `placeholders=False`.
  The distinct sentences of the whole file are translated together, sorted by
  length, `batch_size` a call.

How a machine translation is marked, for a reviewer:
- 1.2: `<target state="needs-review-translation" state-qualifier="mt-suggestion">`.
  The spec's state for a translation to review, and its qualifier for one
  "suggested by machine translation". Weblate shows it as translated, waiting
  for review, whereas `new` or `needs-translation` would count it as still
  needing a translation. The unit's `approved="yes"`, if it had one, becomes
  `"no"`. `review=False` writes `state="translated"` (the qualifier stays: it
  says where the text came from).
- 2.x: `<segment state="translated">`. XLIFF 2 has four states and no "needs
  review" one: `initial` is "not translated yet" (tools such as Crowdin read it
  as needing translation), `reviewed` and `final` are a reviewer's steps, so
  an unreviewed translation, machine or human, is `translated`. A `subState`
  the segment had refines its old state and is removed; none is invented,
  since a value needs the prefix of an authority that defines it.
- The target language, 1.2 `<file target-language>` and 2.x `<xliff trgLang>`,
  is set to `fr` where missing; a file for another language, or from another
  language than English, is refused.

Everything else is kept byte for byte: the new `<target>` text is spliced into
the file as written (a new target goes after `</source>`, or `</seg-source>`,
with the source's indentation), rather than the tree written again, which would
rewrite quotes, entities, namespace prefixes, empty elements and whitespace. The
result is read back and checked before it is given: the same units and sources,
each target as meant, holding each inline element of its source as often as it.

Parser: Python's expat (`xml.parsers.expat`), as in `documents.parsing`.
Splicing needs each element's offset in the file, which expat gives and
ElementTree, minidom and lxml do not (lxml: lines only); so no dependency. A
file from a user is untrusted: a document type that declares an entity (what
billion-laughs bombs and external-entity reads need) is refused, as
defusedxml's `forbid_entities` does; external DTDs and entities are never read,
and a reference to an entity declared nowhere (one an external DTD would
define) is refused rather than skipped; defusedxml would do the same with
expat, as a dependency. Malformed files raise `XliffFileError`
(a `ValueError`) naming the line and what to change.

Not handled: text between 2.x `<sm translate="no"/>` and its `<em/>` is
translated (the markers are carried like other standalone codes); CDATA
sections are kept untranslated; `<sub>` text inside native codes stays English.

Nothing here imports TensorFlow: `translate` is any sentences -> results with
`.text` and `.word_alignment` (`Translator.translate`, a client's `translate`).
"""

from __future__ import annotations

import codecs
import dataclasses
import html
import re
from collections import Counter
from collections.abc import Mapping
from xml.parsers import expat

from documents.file_batches import FileOptions, Progress, translate_plans
from documents.markup import MarkupError, MarkupPlan, plan_markup
from documents.sentences import SOURCE_LANGUAGE, TARGET_LANGUAGE, Translate

XLIFF_1 = "urn:oasis:names:tc:xliff:document:1.2"
XLIFF_2 = "urn:oasis:names:tc:xliff:document:2.0"  # XLIFF 2.0, 2.1 and 2.2 alike
VERSIONS = {XLIFF_1: "1.2", XLIFF_2: "2"}
# The machine translation's marks (see the module docstring).
STATE_1 = "needs-review-translation"
STATE_1_NO_REVIEW = "translated"
STATE_QUALIFIER_1 = "mt-suggestion"
STATE_2 = "translated"
# XLIFF 1.2 inline elements whose content is native code (or text not to translate).
_NATIVE_CODE_1 = frozenset({"ph", "bpt", "ept", "it"})
# What is translated at once, in each version.
_SEGMENT = {"1.2": "trans-unit", "2": "segment"}
# Start code -> end code, per version (matched by `rid` or `id`; 2.x: `startRef`).
_PAIRS = {"1.2": {"bpt": "ept", "bx": "ex"}, "2": {"sc": "ec"}}
_START_TAG = re.compile(r"""<([^\s/>]+)(?:\s+[^\s=/>]+\s*=\s*(?:"[^"]*"|'[^']*'))*\s*(/?)>""")
_ATTRIBUTE = re.compile(r"""\s+([^\s=/>]+)\s*=\s*("[^"]*"|'[^']*')""")
_DECLARED_ENCODING = re.compile(rb"""\s*<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z][\w.:-]*)["']""")
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
         (codecs.BOM_UTF16_BE, "utf-16-be"))

Span = tuple[int, int]


class XliffFileError(ValueError):
    """A file that is not XLIFF 1.2 or 2.x, or that cannot take a French translation; the
    message names the file (and line) and what to change."""


@dataclasses.dataclass(frozen=True)
class XliffOptions(FileOptions):
    """How an XLIFF file is translated (placeholders, batch_size: `FileOptions`).

    Attributes:
        overwrite: translate segments whose target has content too (default: keep it).
        review: mark each target written for review (1.2 `needs-review-translation`);
            False marks it `translated` (2.x: `translated` either way).
    """

    overwrite: bool = False
    review: bool = True


@dataclasses.dataclass(frozen=True)
class XliffSegment:
    """What is translated at once: a 1.2 `<trans-unit>`, a 2.x `<segment>`.

    Spans are `(start, end)` character offsets in `XliffDocument.text`.

    Attributes:
        unit: the unit's id (2.x: with the segment's, `unit/segment`), for messages.
        line: the line of its `<source>`.
        source: the markup to translate: `<source>`'s content (1.2: `<seg-source>`'s
            where the unit has one), as written.
        source_at: where `source` starts.
        target: `<target>`'s content as written; None without a `<target>`.
        translate: False under `translate="no"`.
        target_open: the `<target>` start tag (the whole element if empty: `<target/>`).
        target_close: the `</target>` end tag; None if empty or absent.
        insert_at: where a new `<target>` goes: after `</source>` (or `</seg-source>`).
        indent: the whitespace before `<source>`, written before a new `<target>`.
        prefix: the namespace prefix `<source>` is written with (`""`, `"xlf:"`).
        state_tag: 2.x: the `<segment>` start tag, which takes the state; 1.2: None.
        unit_tag: 1.2: the `<trans-unit>` start tag; 2.x: None.
        approved: 1.2: the unit says `approved="yes"`.
    """

    unit: str
    line: int
    source: str
    source_at: int
    target: str | None
    translate: bool
    target_open: Span | None
    target_close: Span | None
    insert_at: int
    indent: str
    prefix: str
    state_tag: Span | None
    unit_tag: Span | None
    approved: bool = False


@dataclasses.dataclass(frozen=True)
class XliffLanguages:
    """A start tag that names the languages: 1.2 `<file>`, 2.x `<xliff>`.

    Attributes:
        tag: its span.
        line: its line.
        source: the source language as written (None if absent).
        target: the target language as written (None if absent).
    """

    tag: Span
    line: int
    source: str | None
    target: str | None


@dataclasses.dataclass(frozen=True)
class XliffDocument:
    """An XLIFF file as read.

    Attributes:
        name: for messages (the path).
        version: `"1.2"` or `"2"` (2.0, 2.1).
        encoding: the codec the file is written in (`utf-8` unless it declares another).
        bom: the byte-order mark the file starts with (b"" if none), written back.
        text: the file, decoded (the mark aside).
        segments: in file order.
        languages: the tags that name the languages (1.2: one per `<file>`).
    """

    name: str
    version: str
    encoding: str
    bom: bytes
    text: str
    segments: tuple[XliffSegment, ...]
    languages: tuple[XliffLanguages, ...]


@dataclasses.dataclass(frozen=True)
class XliffReport:
    """What a translation did.

    Attributes:
        segments: segments of the file (1.2: trans-units), those not to translate included.
        written: segments given a machine translation.
        kept: segments whose target was kept.
        skipped: segments under `translate="no"`.
        wordless: segments whose source has no word for the model (left as they are).
        texts: distinct sources translated.
        sentences: distinct sentences the model read.
    """

    segments: int
    written: int
    kept: int
    skipped: int
    wordless: int
    texts: int
    sentences: int


@dataclasses.dataclass(frozen=True)
class XliffTranslation:
    """The translated file (`data`, in the file's encoding) and what was done."""

    data: bytes
    report: XliffReport


# ---------------------------------------------------------------------------------------------
# Reading.


def read_xliff(data: bytes, name: str = "<XLIFF file>") -> XliffDocument:
    """Reads an XLIFF 1.2 or 2.x file and checks it can take a French translation.

    Args:
        data: the file's bytes.
        name: the file's name, for error messages.

    Raises:
        XliffFileError: not text in its encoding, not well-formed XML, an entity
            declared or undefined, not XLIFF 1.2 or 2.x, a unit without a source,
            or languages other than English into French (each names the line).
    """
    encoding, bom, text = _decoded(data, name)
    reader = _Reader(text, name)
    reader.parse()
    for languages in reader.languages:
        _check_languages(reader, languages)
    return XliffDocument(name, reader.version, encoding, bom, text, tuple(reader.segments),
                         tuple(reader.languages))


def _decoded(data: bytes, name: str) -> tuple[str, bytes, str]:
    """`(encoding, byte-order mark, text)`: the mark's encoding, else the declared one,
    else UTF-8 (XML's default)."""
    marked = [(bom, encoding) for bom, encoding in _BOMS if data.startswith(bom)]
    if marked:
        bom, encoding = marked[0]
    else:
        declared = _DECLARED_ENCODING.match(data)
        bom, encoding = b"", declared.group(1).decode("ascii") if declared else "utf-8"
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise XliffFileError(f"{name}:1: the XML declaration names the encoding {encoding!r}, "
                             "which Python does not know: convert the file to UTF-8") from None
    try:
        return encoding, bom, data[len(bom):].decode(encoding)
    except UnicodeDecodeError as error:
        raise XliffFileError(f"{name} is not {encoding} text (byte {error.start + len(bom)}): "
                             "is it an XLIFF file? Convert it to UTF-8, or declare its "
                             "encoding (<?xml version=\"1.0\" encoding=\"...\"?>)") from None


class _Offsets:
    """Character offsets of increasing UTF-8 byte offsets of `text` (expat reads a str as
    UTF-8 and counts its bytes)."""

    def __init__(self, text: str):
        self.utf8 = text.encode("utf-8", "surrogatepass")
        self.ascii = len(self.utf8) == len(text)
        self.byte = self.char = 0

    def __call__(self, byte: int) -> int:
        if self.ascii:
            return byte
        if byte < self.byte:
            self.byte = self.char = 0
        self.char += len(self.utf8[self.byte:byte].decode("utf-8", "surrogatepass"))
        self.byte = byte
        return self.char


@dataclasses.dataclass(eq=False)
class _Open:
    """An element being read."""

    local: str  # its name without namespace
    xliff: bool  # in the file's XLIFF namespace
    attrs: dict[str, str]
    tag: Span  # its start tag
    empty: bool  # written `<x/>`
    line: int
    role: str  # "structure", "content" (source, target) or "other" (not read)
    translate: bool
    children: dict[str, tuple[_Open, Span | None]] = dataclasses.field(default_factory=dict)


class _Reader:
    """expat events -> segments and language tags, with the offsets of what is edited."""

    def __init__(self, text: str, name: str):
        self.text, self.name = text, name
        self.offsets = _Offsets(text)
        self.stack: list[_Open] = []
        self.namespace = ""
        self.version = ""
        self.segments: list[XliffSegment] = []
        self.languages: list[XliffLanguages] = []
        p = self.parser = expat.ParserCreate(namespace_separator=" ")
        p.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        p.StartElementHandler = self._start
        p.EndElementHandler = self._end
        p.EntityDeclHandler = self._entity_declared
        p.SkippedEntityHandler = self._entity_skipped
        p.ExternalEntityRefHandler = self._external_entity

    def parse(self) -> None:
        try:
            self.parser.Parse(self.text, True)
        except expat.ExpatError as error:
            message = expat.errors.messages[error.code]
            raise XliffFileError(f"{self.name}:{error.lineno}: not well-formed XML ({message}, "
                                 f"column {error.offset + 1}): {_fix(message)}") from None
        if not self.version:
            raise XliffFileError(f"{self.name}: no <xliff> element: is it an XLIFF file?")

    def _where(self) -> str:
        return f"{self.name}:{self.parser.CurrentLineNumber}"

    def _entity_declared(self, entity, is_parameter, *_) -> None:
        raise XliffFileError(
            f"{self._where()}: the document type declares the entity {entity!r}: entities are "
            "refused in files to translate (they can expand a few lines into gigabytes, or read "
            "other files); remove the <!ENTITY> declarations and write the text itself")

    def _entity_skipped(self, entity, is_parameter) -> None:
        raise XliffFileError(
            f"{self._where()}: the entity &{entity}; is declared nowhere in the file (external "
            "DTDs are not read): write the character itself or a numeric reference (&#160;)")

    def _external_entity(self, *_) -> int:
        raise XliffFileError(f"{self._where()}: an external entity: remove it, external files "
                             "are not read")

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        start = self.offsets(self.parser.CurrentByteIndex)
        tag = _START_TAG.match(self.text, start)
        namespace, _, local = name.rpartition(" ")
        line = self.parser.CurrentLineNumber
        if not self.stack:
            self._root(namespace, local, attrs, line)
        parent = self.stack[-1] if self.stack else None
        xliff = namespace == self.namespace
        translate = parent.translate if parent is not None else True
        if "translate" in attrs and (parent is None or parent.role == "structure"):
            translate = attrs["translate"].strip() != "no"
        element = _Open(local, xliff, attrs, (start, tag.end()), tag.group(2) == "/", line,
                        _role(parent, local, xliff, self.version), translate)
        self.stack.append(element)
        if (parent is None) if self.version == "2" else (xliff and local == "file"):
            self._languages(element)

    def _root(self, namespace: str, local: str, attrs: dict[str, str], line: int) -> None:
        if local != "xliff":
            raise XliffFileError(f"{self.name}:{line}: the root element is <{local}>, not "
                                 "<xliff>: is it an XLIFF file?")
        version = attrs.get("version", "")
        found = VERSIONS.get(namespace) or (not namespace and (
            "1.2" if version.startswith("1.") else "2" if version.startswith("2.") else None))
        if not found:
            raise XliffFileError(
                f"{self.name}:{line}: XLIFF in the namespace {namespace or '(none)'!r} (version "
                f"{version or 'not given'!r}): only XLIFF 1.2 ({XLIFF_1}) and 2.x ({XLIFF_2}) "
                "are read; convert it to one of them first (Okapi Rainbow does)")
        self.namespace, self.version = namespace, found

    def _languages(self, element: _Open) -> None:
        source, target = _language_attributes(self.version)
        self.languages.append(XliffLanguages(element.tag, element.line, element.attrs.get(source),
                                             element.attrs.get(target)))

    def _end(self, name: str) -> None:
        element = self.stack.pop()
        close = None
        if not element.empty:
            start = self.offsets(self.parser.CurrentByteIndex)
            close = (start, self.text.index(">", start) + 1)
        parent = self.stack[-1] if self.stack else None
        if element.role == "content":
            if element.local in parent.children:
                raise XliffFileError(f"{self.name}:{element.line}: a second <{element.local}> in "
                                     f"one <{_SEGMENT[self.version]}>: keep one")
            parent.children[element.local] = (element, close)
        elif element.role == "structure" and element.local == _SEGMENT[self.version]:
            self.segments.append(self._segment(element, parent))

    def _segment(self, element: _Open, parent: _Open | None) -> XliffSegment:
        unit = element.attrs.get("id", "")
        if self.version == "2":
            unit = "/".join(filter(None, (parent.attrs.get("id", ""), unit)))
        children = element.children
        if "source" not in children:
            raise XliffFileError(f"{self.name}:{element.line}: the <{_SEGMENT[self.version]}> "
                                 f"{unit!r} has no <source>: add it")
        source, source_close = children["source"]
        read, read_close = children.get("seg-source", (source, source_close))
        target, target_close = children.get("target", (None, None))
        before = self.text[self.text.rfind(">", 0, source.tag[0]) + 1:source.tag[0]]
        text = self.text
        return XliffSegment(
            unit=unit, line=source.line, source=_content(text, read, read_close),
            source_at=read.tag[1], target=None if target is None else _content(
                text, target, target_close),
            translate=element.translate, target_open=None if target is None else target.tag,
            target_close=target_close, insert_at=(read_close or read.tag)[1],
            indent=before if not before.strip() else "",
            prefix=_START_TAG.match(text, source.tag[0]).group(1)[:-len("source")],
            state_tag=element.tag if self.version == "2" else None,
            unit_tag=element.tag if self.version == "1.2" else None,
            approved=self.version == "1.2" and element.attrs.get("approved") == "yes")


def _role(parent: _Open | None, local: str, xliff: bool, version: str) -> str:
    """`structure` for the elements read, `content` for a segment's source and target,
    `other` for the rest (and all inside a source or target)."""
    if parent is None:
        return "structure"
    if not xliff or parent.role != "structure":
        return "other"
    if parent.local == _SEGMENT[version]:
        return "content" if local in ("source", "target", "seg-source") else "other"
    if version == "1.2":
        return "structure" if local in ("file", "body", "group", "trans-unit") else "other"
    return "structure" if local in ("file", "group", "unit", "segment") else "other"


def _language_attributes(version: str) -> tuple[str, str]:
    return ("source-language", "target-language") if version == "1.2" else ("srcLang", "trgLang")


def _content(text: str, element: _Open, close: Span | None) -> str:
    return "" if close is None else text[element.tag[1]:close[0]]


def _fix(message: str) -> str:
    """What to change, for an expat error message."""
    if message == expat.errors.XML_ERROR_UNDEFINED_ENTITY:
        return ("XML knows only &amp; &lt; &gt; &quot; &apos; and numeric references such as "
                "&#160;: write the character itself")
    if message == expat.errors.XML_ERROR_TAG_MISMATCH:
        return "an end tag does not match the element open there: close elements in order"
    if message == expat.errors.XML_ERROR_NO_ELEMENTS:
        return "the file has no element: is it an XLIFF file?"
    return "make the file well-formed XML (`xmllint --noout FILE` shows where)"


def _check_languages(reader: _Reader, languages: XliffLanguages) -> None:
    source, target = _language_attributes(reader.version)
    where = f"{reader.name}:{languages.line}"
    if languages.source and not _is_language(languages.source, SOURCE_LANGUAGE):
        raise XliffFileError(f"{where}: {source}=\"{languages.source}\"; this model translates "
                             f"from English: give a file whose source is English "
                             f"({source}=\"{SOURCE_LANGUAGE}\")")
    if languages.target and not _is_language(languages.target, TARGET_LANGUAGE):
        raise XliffFileError(f"{where}: {target}=\"{languages.target}\"; this model translates "
                             f"into French: give a file for French ({target}=\"{TARGET_LANGUAGE}"
                             f"\", fr-CA...) or one without {target}")


def _is_language(tag: str, language: str) -> bool:
    """Whether a language tag (`fr`, `fr-CA`, `fr_FR`) names `language`."""
    return re.match(rf"{language}(?:[_-]|$)", tag.strip(), re.I) is not None


# ---------------------------------------------------------------------------------------------
# Translating.


def translate_xliff(document: XliffDocument, translate: Translate,
                    options: XliffOptions = XliffOptions(), *,
                    progress: Progress | None = None) -> XliffTranslation:
    """Fills the targets that need a translation (see the module docstring).

    Args:
        document: from `read_xliff`.
        translate: sentences -> one result per sentence (`.text`, `.word_alignment`).
        options: overwrite, review, placeholders, batch size.
        progress: called with `(sentences done, sentences)` after each call of `translate`.

    Returns:
        The file's new bytes and an `XliffReport`.

    Raises:
        XliffFileError: a source over a markup limit (`documents.markup`), or the
            result would not read back as meant (a bug: nothing is given).
    """
    segments = document.segments
    wanted = [i for i, s in enumerate(segments) if s.translate and s.source.strip() and (
        options.overwrite or not (s.target or "").strip())]
    plans = _plans(document, [segments[i] for i in wanted], options)
    todo = [i for i in wanted if plans[segments[i].source].sentences]
    joined, sentences = translate_plans({s: p for s, p in plans.items() if p.sentences},
                                        translate, options.batch_size, progress)
    translated = {source: _codes_in_order(translation.text, document.version)
                  for source, translation in joined.items()}
    written = {i: _writable(translated[segments[i].source], document.encoding) for i in todo}
    edits = [*_language_edits(document)]
    for i, content in written.items():
        edits += _segment_edits(document, segments[i], content, options)
    text = _spliced(document.text, edits)
    data = document.bom + text.encode(document.encoding)
    _check(document, data, written)
    translatable = [i for i, s in enumerate(segments) if s.translate]
    kept = sum(i not in written and bool((segments[i].target or "").strip())
               for i in translatable)
    report = XliffReport(segments=len(segments), written=len(written), kept=kept,
                         skipped=len(segments) - len(translatable),
                         wordless=len(wanted) - len(todo), texts=len(set(translated)),
                         sentences=sentences)
    return XliffTranslation(data, report)


def _writable(markup: str, encoding: str) -> str:
    """`markup` with each character `encoding` cannot write as a character reference."""
    return markup.encode(encoding, "xmlcharrefreplace").decode(encoding)


def _verbatim_1(name: str, attrs: Mapping[str, str]) -> bool:
    """XLIFF 1.2 inline elements kept whole: native code, and `mrk mtype="protected"`."""
    local = name.rpartition(":")[2]
    return local in _NATIVE_CODE_1 or (local == "mrk" and attrs.get("mtype") == "protected")


def _plans(document: XliffDocument, segments: list[XliffSegment],
           options: XliffOptions) -> dict[str, MarkupPlan]:
    """Each distinct source's plan; a source over a markup limit is refused with its line."""
    verbatim = _verbatim_1 if document.version == "1.2" else None
    plans = {}
    for segment in segments:
        if segment.source in plans:
            continue
        try:
            plans[segment.source] = plan_markup(segment.source, "xml",
                                                placeholders=options.placeholders,
                                                verbatim=verbatim)
        except MarkupError as error:
            at = segment.source_at + error.position
            line = document.text.count("\n", 0, at) + 1
            raise XliffFileError(f"{document.name}:{line}: the source of {segment.unit!r} (its "
                                 f"characters counted from its start): {error}") from None
    return plans


# ---------------------------------------------------------------------------------------------
# Inline codes: read from a source or target (well-formed markup), put in order.


@dataclasses.dataclass(frozen=True)
class _Code:
    """An inline element of a fragment: its name (prefix aside), attributes and span."""

    local: str
    attrs: tuple[tuple[str, str], ...]
    span: Span


def _codes(markup: str) -> list[_Code]:
    """Every element of a well-formed fragment, in document order, nested ones included."""
    head = "<w>"
    wrapped = f"{head}{markup}</w>"
    offsets = _Offsets(wrapped)
    parser = expat.ParserCreate()
    open_codes: list[tuple[str, tuple, int, bool]] = []
    found: list[tuple[int, _Code]] = []

    def start(name, attrs):
        at = offsets(parser.CurrentByteIndex)
        empty = _START_TAG.match(wrapped, at).group(2) == "/"
        open_codes.append((name, tuple(sorted(attrs.items())), at, empty))

    def end(name):
        name, attrs, at, empty = open_codes.pop()
        if name == "w" and not open_codes:
            return
        stop = _START_TAG.match(wrapped, at).end() if empty else wrapped.index(
            ">", offsets(parser.CurrentByteIndex)) + 1
        found.append((at, _Code(name.rpartition(":")[2], attrs,
                                (at - len(head), stop - len(head)))))

    parser.StartElementHandler, parser.EndElementHandler = start, end
    parser.Parse(wrapped, True)
    return [code for _, code in sorted(found, key=lambda pair: pair[0])]


def _codes_in_order(markup: str, version: str) -> str:
    """`markup` with each end code after its start code: a pair the alignment reversed swaps."""
    pairs = _PAIRS[version]
    starts, ends = {}, {}
    for code in _codes(markup):
        attrs = dict(code.attrs)
        if code.local in pairs:
            starts[(code.local, attrs.get("rid", attrs.get("id")))] = code.span
        elif code.local in pairs.values():
            begin = next(a for a, b in pairs.items() if b == code.local)
            key = attrs.get("startRef") if version == "2" else attrs.get("rid", attrs.get("id"))
            ends[(begin, key)] = code.span
    swaps = {}
    for key, end in ends.items():
        start = starts.get(key)
        if start is not None and end[1] <= start[0]:
            swaps[start], swaps[end] = markup[end[0]:end[1]], markup[start[0]:start[1]]
    spans = sorted(swaps)
    if any(a[1] > b[0] for a, b in zip(spans, spans[1:], strict=False)):
        return markup  # nested codes: not a pair the projection reversed
    return _spliced(markup, [(a, b, swaps[(a, b)]) for a, b in spans])


# ---------------------------------------------------------------------------------------------
# Edits: start tags given attributes, targets written; spliced into the text as written.


def _set_attributes(tag: str, values: Mapping[str, str | None]) -> str:
    """A start tag as written with `values` set (a value kept in its quotes), added after
    its last attribute, or removed (None)."""
    name = _START_TAG.match(tag)
    edits, last = [], len(name.group(1)) + 1
    present = set()
    while attribute := _ATTRIBUTE.match(tag, last):
        last = attribute.end()
        key = attribute.group(1)
        if key not in values:
            continue
        present.add(key)
        if values[key] is None:
            edits.append((attribute.start(), attribute.end(), ""))
        else:
            quote = attribute.group(2)[0]
            edits.append((attribute.start(2), attribute.end(2),
                          f"{quote}{html.escape(values[key])}{quote}"))
    added = "".join(f' {key}="{html.escape(value)}"' for key, value in values.items()
                    if key not in present and value is not None)
    if added:
        edits.append((last, last, added))
    return _spliced(tag, edits)


def _language_edits(document: XliffDocument) -> list[tuple[int, int, str]]:
    attribute = "target-language" if document.version == "1.2" else "trgLang"
    edits = []
    for languages in document.languages:
        if languages.target is None:
            start, end = languages.tag
            tag = _set_attributes(document.text[start:end], {attribute: TARGET_LANGUAGE})
            edits.append((start, end, tag))
    return edits


def _segment_edits(document: XliffDocument, segment: XliffSegment, content: str,
                   options: XliffOptions) -> list[tuple[int, int, str]]:
    """The edits that write `content` as the segment's target, and mark it."""
    text, edits = document.text, []
    if document.version == "1.2":
        target_attributes = {"state": STATE_1 if options.review else STATE_1_NO_REVIEW,
                             "state-qualifier": STATE_QUALIFIER_1}
        if segment.approved:
            start, end = segment.unit_tag
            edits.append((start, end, _set_attributes(text[start:end], {"approved": "no"})))
    else:
        target_attributes = {}
        start, end = segment.state_tag
        edits.append((start, end, _set_attributes(text[start:end],
                                                  {"state": STATE_2, "subState": None})))
    if segment.target_open is None:
        name = f"{segment.prefix}target"
        tag = _set_attributes(f"<{name}>", target_attributes)
        edits.append((segment.insert_at, segment.insert_at,
                      f"{segment.indent}{tag}{content}</{name}>"))
        return edits
    start, end = segment.target_open
    tag = _set_attributes(text[start:end], target_attributes)
    if segment.target_close is None:  # <target/>
        name = _START_TAG.match(tag).group(1)
        tag = re.sub(r"\s*/>$", ">", tag)
        edits.append((start, end, f"{tag}{content}</{name}>"))
    else:
        edits.append((start, segment.target_close[0], f"{tag}{content}"))
    return edits


def _spliced(text: str, edits: list[tuple[int, int, str]]) -> str:
    """`text` with each `(start, end, new)` edit made (they do not overlap)."""
    pieces, cursor = [], 0
    for start, end, new in sorted(edits, key=lambda edit: edit[:2]):
        pieces += [text[cursor:start], new]
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)


# ---------------------------------------------------------------------------------------------
# The check: the file written reads back as meant.


def _check(document: XliffDocument, data: bytes, written: dict[int, str]) -> None:
    """Raises XliffFileError where `data` does not read back as the file with the targets
    `written`: the same segments and sources, each target as meant, and every target written
    holding the inline elements of its source, each as often."""
    again = read_xliff(data, document.name)
    problem = None
    if len(again.segments) != len(document.segments):
        problem = "the segments"
    for i, (old, new) in enumerate(zip(document.segments, again.segments, strict=False)):
        if problem is not None:
            break
        target = written.get(i, old.target)
        if (new.unit, new.source, new.translate, new.target) != (
                old.unit, old.source, old.translate, target):
            problem = f"the segment {old.unit!r} (line {old.line})"
        elif i in written and Counter(_signature(new.target)) != Counter(
                _signature(new.source)):
            problem = f"the inline elements of the segment {old.unit!r} (line {old.line})"
    if problem is not None:
        raise XliffFileError(f"{document.name}: {problem} would not read back as meant, so "
                             "nothing was written; please report this with the file")


def _signature(markup: str) -> list[tuple]:
    return [(code.local, code.attrs) for code in _codes(markup)]
