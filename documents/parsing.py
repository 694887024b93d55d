"""HTML and XML parsed into a flat list of items that tile the document: the first step of
`documents.markup`.

Text, start and end tags, and points (standalone tags, comments, elements not
to translate, kept verbatim) become `Item`s with their character offsets in the
document as given; nesting and the limits below are checked here, and
malformed markup raises `MarkupError` naming the position and what to change.
The items are this package's internals (`documents.markup` builds its
sentences from them).
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable, Mapping
from html.parser import HTMLParser
from xml.parsers import expat

from documents.placeholders import Piece

FORMATS = ("html", "xml")
# Limits, each checked in one place and raising MarkupError (tests/documents/test_markup.py).
MAX_MARKUP_CHARS = 1_000_000  # characters of one document
MAX_DEPTH = 200  # elements nested inside each other
MAX_TAG_CHARS = 10_000  # characters of one start tag, attributes included

HTML_BLOCK = frozenset("""
    address article aside blockquote body caption center col colgroup dd details dialog dir
    div dl dt fieldset figcaption figure footer form frame frameset h1 h2 h3 h4 h5 h6 head
    header hgroup hr html legend li main menu nav noscript ol optgroup option p section
    summary table tbody td tfoot th thead title tr ul
""".split())
HTML_VOID = frozenset(
    "area base br col embed hr img input link meta param source track wbr".split())
HTML_OPAQUE = frozenset("code pre script style textarea svg math template".split())
_WRAPPER = "nmt-markup-root"  # the element expat's input is wrapped in
# An XML element's name (as written, prefix included) and attributes -> whether it is kept
# verbatim, as one piece (XLIFF 1.2 `<ph>`: its content is native code, not text).
Verbatim = Callable[[str, Mapping[str, str]], bool]


class MarkupError(ValueError):
    """Malformed or over-limit markup; the message names the position and what to change.

    Attributes:
        position: 0-based character offset in the document as given.
    """

    def __init__(self, text: str, position: int, problem: str, fix: str):
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        super().__init__(f"{problem} at character {position} (line {line}, column {column}); "
                         f"{fix}")
        self.position = position



# ---------------------------------------------------------------------------------------------
# Parsing: the document as a flat list of items that tile it.


@dataclasses.dataclass(eq=False)
class Element:
    name: str
    start: int  # where its start tag begins
    block: bool = False
    open_end: int = 0  # where its start tag ends
    close_start: int = 0
    close_end: int = 0


@dataclasses.dataclass(eq=False)
class Item:
    """One piece of the document: `text`, `open`, `close` or `point` (kept verbatim)."""

    kind: str
    start: int
    end: int
    plain: str = ""  # text: the characters it stands for
    element: Element | None = None
    block: bool = False  # point: a block element (ends sentences)
    space: bool = False  # point: stands for a space in the plain text (HTML <br>)
    piece: Piece | None = None  # point: a verbatim piece of the text (a placeholder)


class _Builder:
    """Turns parser events into items; checks nesting and limits; folds opaque elements."""

    def __init__(self, text: str):
        self.text = text
        self.items: list[Item] = []
        self.stack: list[Element] = []
        self.opaque: Element | None = None  # the untranslated element being skipped

    def data(self, start: int, end: int, plain: str) -> None:
        if self.opaque is None and start < end:
            self.items.append(Item("text", start, end, plain))

    def point(self, start: int, end: int, block: bool = False) -> None:
        if self.opaque is None:
            self.items.append(Item("point", start, end, block=block))
        if block:
            self._blocks_ancestors()

    def void(self, start: int, end: int, block: bool = False, space: bool = False) -> None:
        """A standalone element (`<br>`, `<x/>`): a point, once its size is checked."""
        self.check_tag(start, end)
        self.point(start, end, block)
        if space and self.opaque is None:
            self.items[-1].space = True

    def check_tag(self, start: int, end: int) -> None:
        """Raises MarkupError if a start tag is over MAX_TAG_CHARS or one element too deep."""
        if end - start > MAX_TAG_CHARS:
            raise MarkupError(self.text, start, f"A start tag of {end - start} characters",
                              f"the limit is MAX_TAG_CHARS={MAX_TAG_CHARS}: shorten its "
                              "attributes")
        if len(self.stack) >= MAX_DEPTH:
            raise MarkupError(self.text, start, f"More than {MAX_DEPTH} nested elements",
                              f"the limit is MAX_DEPTH={MAX_DEPTH}: remove wrapper elements")

    def start(self, name: str, start: int, end: int, opaque: bool, block: bool) -> None:
        self.check_tag(start, end)
        element = Element(name, start, block=block, open_end=end)
        if block:
            self._blocks_ancestors()
        self.stack.append(element)
        if self.opaque is None and opaque:
            self.opaque = element
        elif self.opaque is None:
            self.items.append(Item("open", start, end, element=element))

    def end(self, name: str, start: int, end: int) -> None:
        if not self.stack:
            raise MarkupError(self.text, start, f"The end tag </{name}> closes nothing",
                              "remove it or add its start tag")
        element = self.stack[-1]
        if element.name != name:
            raise MarkupError(
                self.text, start, f"The end tag </{name}> crosses <{element.name}> (opened at "
                f"character {element.start})", f"close <{element.name}> first")
        self.stack.pop()
        element.close_start, element.close_end = start, end
        if self.opaque is element:
            self.opaque = None
            self.point(element.start, end, element.block)
        elif self.opaque is None:
            self.items.append(Item("close", start, end, element=element))

    def finish(self) -> list[Item]:
        if self.stack:
            element = self.stack[-1]
            raise MarkupError(self.text, element.start, f"<{element.name}> is never closed",
                              f"add </{element.name}> where it ends")
        return self.items

    def _blocks_ancestors(self) -> None:
        for element in self.stack:
            element.block = True


def _check_length(text: str) -> None:
    if not isinstance(text, str):
        raise TypeError(f"A document must be a str. Received: {type(text).__name__}")
    if len(text) > MAX_MARKUP_CHARS:
        raise MarkupError(text, MAX_MARKUP_CHARS, f"A document of {len(text)} characters",
                          f"the limit is MAX_MARKUP_CHARS={MAX_MARKUP_CHARS}: split it")


def _no_translate(attrs) -> bool:
    """`translate="no"` (or `its:translate`), or `class="notranslate"`."""
    for name, value in attrs:
        value = (value or "").strip().lower()
        if (name == "translate" or name.endswith(":translate")) and value == "no":
            return True
        if name == "class" and "notranslate" in value.split():
            return True
    return False


class _HtmlEvents(HTMLParser):
    """html.parser events as `(kind, line, column, payload)`; positions made offsets later."""

    def __init__(self):
        super().__init__(convert_charrefs=False)
        self.events: list[tuple] = []

    def _add(self, kind: str, payload=None) -> None:
        self.events.append((kind, *self.getpos(), payload))

    def handle_starttag(self, tag, attrs):
        self._add("start", (tag, attrs, self.get_starttag_text()))

    def handle_startendtag(self, tag, attrs):
        self._add("void", (tag, attrs, self.get_starttag_text()))

    def handle_endtag(self, tag):
        self._add("end", tag)

    def handle_data(self, data):
        self._add("data")

    def handle_entityref(self, name):
        self._add("entity")

    def handle_charref(self, name):
        self._add("entity")

    def handle_comment(self, data):
        self._add("other")

    def handle_decl(self, decl):
        self._add("other")

    def handle_pi(self, data):
        self._add("other")

    def unknown_decl(self, data):
        self._add("other")


def _parse_html(text: str) -> list[Item]:
    parser = _HtmlEvents()
    parser.feed(text)
    parser.close()
    line_starts = [0] + [i + 1 for i, char in enumerate(text) if char == "\n"]
    starts = [line_starts[line - 1] + column for _, line, column, _ in parser.events]
    builder = _Builder(text)
    for i, (kind, _, _, payload) in enumerate(parser.events):
        start = starts[i]
        end = starts[i + 1] if i + 1 < len(starts) else len(text)
        _html_event(builder, text, kind, start, end, payload)
    return builder.finish()


def _html_event(builder: _Builder, text: str, kind: str, start: int, end: int, payload) -> None:
    raw = text[start:end]
    if kind in ("data", "entity"):
        if "<" in raw and builder.opaque is None:  # what html.parser could not parse
            raise MarkupError(text, start + raw.index("<"),
                              "A '<' that starts no complete tag or comment",
                              "close the tag or comment, or write the character as &lt;")
        builder.data(start, end, raw if kind == "data" else html.unescape(raw))
    elif kind == "end":
        builder.end(payload, start, end)
    elif kind == "other":
        builder.point(start, end)
    else:
        tag, attrs, tag_text = payload
        if kind == "void" or tag in HTML_VOID:
            builder.void(start, start + len(tag_text), block=tag in HTML_BLOCK,
                         space=tag == "br")
        else:
            opaque = tag in HTML_OPAQUE or _no_translate(attrs)
            builder.start(tag, start, start + len(tag_text), opaque, tag in HTML_BLOCK)


class _XmlEvents:
    """expat events as `(kind, byte_index, payload)` over the wrapped document."""

    def __init__(self):
        self.events: list[tuple] = []
        self.parser = expat.ParserCreate()
        self.depth = 0
        p = self.parser
        p.StartElementHandler = self._start
        p.EndElementHandler = self._end
        p.CharacterDataHandler = lambda data: self._add("data", data)
        p.CommentHandler = lambda data: self._add("other")
        p.ProcessingInstructionHandler = lambda target, data: self._add("other")
        p.StartCdataSectionHandler = lambda: self._add("cdata")
        p.EndCdataSectionHandler = lambda: self._add("cdata_end")

    def _add(self, kind: str, payload=None) -> None:
        self.events.append((kind, self.parser.CurrentByteIndex, payload))

    def _start(self, name, attrs):
        self.depth += 1
        if self.depth > MAX_DEPTH + 1:  # the wrapper is one more
            raise _TooDeep(self.parser.CurrentByteIndex)
        self._add("start", (name, tuple(attrs.items())))

    def _end(self, name):
        self.depth -= 1
        self._add("end", name)


class _TooDeep(Exception):
    def __init__(self, byte_index: int):
        super().__init__(byte_index)
        self.byte_index = byte_index


def _parse_xml(text: str, verbatim: Verbatim | None = None) -> list[Item]:
    head = f"<{_WRAPPER}>"
    wrapped = f"{head}{text}</{_WRAPPER}>"
    events = _XmlEvents()
    error = None
    try:
        events.parser.Parse(wrapped, True)
    except _TooDeep as too_deep:
        error = too_deep
    except expat.ExpatError as expat_error:
        error = expat_error
    chars = _byte_to_char(wrapped)
    body = [(kind, chars[index] - len(head), payload)
            for kind, index, payload in events.events[1:]]  # without the wrapper's start
    if error is None:
        body.pop()  # the wrapper's end
    index = getattr(error, "byte_index", None) or events.parser.ErrorByteIndex
    stop = len(text) if error is None else min(chars[index] - len(head), len(text))
    builder = _Builder(text)
    for i, (kind, start, payload) in enumerate(body):
        end = body[i + 1][1] if i + 1 < len(body) else stop
        if kind == "start" and text[start:end].endswith("/>"):
            kind = "void"
        elif kind == "end" and start == end:
            continue  # the end of <x/>, handled with its start
        _xml_event(builder, text, kind, start, end, payload, verbatim)
    if isinstance(error, _TooDeep):
        builder.check_tag(stop, stop)  # raises: MAX_DEPTH elements are open
    if error is not None:
        _raise_expat(text, builder, stop, error)
    return builder.finish()


def _byte_to_char(text: str) -> list[int]:
    """Character offset of each UTF-8 byte offset of `text` (and of its end)."""
    chars = []
    for i, char in enumerate(text):
        chars.extend([i] * len(char.encode("utf-8")))
    chars.append(len(text))
    return chars


def _raise_expat(text: str, builder: _Builder, position: int, error: expat.ExpatError):
    """expat's error as a MarkupError; nesting errors name the element concerned."""
    message = expat.errors.messages[error.code]
    if text[position - 2:position] == "</":
        position -= 2
    if message == expat.errors.XML_ERROR_TAG_MISMATCH and not builder.stack:
        raise MarkupError(text, position, "An end tag closes nothing",
                          "remove it or add its start tag") from None
    if message == expat.errors.XML_ERROR_TAG_MISMATCH:
        element = builder.stack[-1]
        if position >= len(text):
            raise MarkupError(text, element.start, f"<{element.name}> is never closed",
                              f"add </{element.name}> where it ends") from None
        raise MarkupError(text, position, f"An end tag crosses <{element.name}> (opened at "
                          f"character {element.start})", f"close <{element.name}> first"
                          ) from None
    hint = ""
    if message == expat.errors.XML_ERROR_UNDEFINED_ENTITY:
        hint = "; XML knows only &amp; &lt; &gt; &quot; &apos; and numeric ones such as &#160;"
    raise MarkupError(text, position, f"Malformed XML ({message}{hint})",
                      "make the document well-formed XML") from None


def _xml_event(builder: _Builder, text: str, kind: str, start: int, end: int, payload,
               verbatim: Verbatim | None = None) -> None:
    if kind == "data":
        builder.data(start, end, payload)
    elif kind == "start":
        name, attrs = payload
        kept = _no_translate(attrs) or (verbatim is not None and verbatim(name, dict(attrs)))
        builder.start(name, start, end, kept, False)
    elif kind == "void":
        builder.void(start, end)
    elif kind == "end":
        builder.end(payload, start, end)
    elif kind == "cdata":
        builder.start("![CDATA[", start, start, True, False)
    elif kind == "cdata_end":
        builder.end("![CDATA[", start, end)
    else:
        builder.point(start, end)


def _parse(text: str, format: str, verbatim: Verbatim | None = None) -> list[Item]:
    """The document's items; `verbatim` picks further XML elements to keep whole."""
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}. Received: format={format!r}")
    _check_length(text)
    return _parse_html(text) if format == "html" else _parse_xml(text, verbatim)
