"""Inline markup (HTML or XML) carried across a translation through the word alignment.

A marked-up document is parsed (Python's `html.parser` for HTML, expat for
XML), its tags are taken out, the plain text is split into sentences and
translated like any other sentence, and the tags are put back around the
target words aligned to the words they enclosed (as Firefox's Bergamot
engine does):

    plans = split_markup(texts, "html")
    results = translator.translate(sentences_of(plans))    # nmt.documents.sentences
    documents = join_documents(plans, results)             # .text: the translated markup

    project_markup("Click <b>Save</b>.", "Cliquez sur Enregistrer.", links, "html")
    -> "Cliquez sur <b>Enregistrer</b>."                   # a given translation

What goes where:
- Block elements (HTML `p div li h1 td`..., and any element that holds one)
  end sentences and stay exactly where they are; XML has none: sentences
  are found in the whole text.
- Inline elements (HTML `b i a span`..., any XML element such as XLIFF
  `<g>`) inside a sentence are put around the longest run of target
  words linked to the words they enclosed (words linked to nothing between
  two of them included). For placing tags only, a word with one orthographic
  cognate in the target (same first four letters, accents aside) links to it
  alone, and an element whose words link to nothing goes to the target words
  that attend most to them in the result's soft word matrix (`word_matrix`,
  where it has one); without one it is kept, empty, next to the target of
  its neighbours. Nesting is kept:
  a child stays inside its parent, siblings never overlap (they may swap).
  An element that encloses whole sentences stays where it is; one that
  crosses a sentence boundary joins those sentences into one.
- Standalone elements (`<br>`, `<img>`, `<x/>`), comments, processing
  instructions, elements not to translate (`translate="no"`,
  `class="notranslate"`, HTML `code pre script style textarea svg math
  template`) and elements enclosing no word are kept verbatim, as one
  piece, at the target position of the word they follow (or, when a space
  separated them from it, precede).
- Tags are copied verbatim (attributes as written); everything outside the
  sentences (blocks, whitespace between sentences, entities there) is
  copied as given. Translated text is escaped (`&amp; &lt; &gt;`); the
  whitespace inside a sentence is the translation's.

Malformed input is refused, never repaired: a `MarkupError` (a
`ValueError`) names the character position and what to change. Refused:
unclosed, unopened or crossed tags (HTML end tags are required except for
void elements), a `<` that starts no complete tag (unterminated comments
and tags), XML that expat rejects, and input over the limits below.

Offsets: `MarkupTranslation.link_spans` gives each word link as character
spans on the markup as given and on the translated markup.
"""

from __future__ import annotations

import bisect
import dataclasses
import html
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from html.parser import HTMLParser
from xml.parsers import expat

from nmt.documents.offsets import SpanLink, word_spans
from nmt.documents.sentences import (
    DocumentPlan,
    DocumentTranslation,
    SentenceResult,
    TextLinks,
    TranslatedSentence,
    sentence_spans,
    split_document,
)
from nmt.documents.sentences import join as join_plain

FORMATS = ("html", "xml")
DOCUMENT_FORMATS = ("text", *FORMATS)  # what `plan_document` reads: plain text or markup
# Limits, each checked in one place and raising MarkupError (tests/nmt/documents/test_markup.py).
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
class _Element:
    name: str
    start: int  # where its start tag begins
    block: bool = False
    open_end: int = 0  # where its start tag ends
    close_start: int = 0
    close_end: int = 0


@dataclasses.dataclass(eq=False)
class _Item:
    """One piece of the document: `text`, `open`, `close` or `point` (kept verbatim)."""

    kind: str
    start: int
    end: int
    plain: str = ""  # text: the characters it stands for
    element: _Element | None = None
    block: bool = False  # point: a block element (ends sentences)
    space: bool = False  # point: stands for a space in the plain text (HTML <br>)


class _Builder:
    """Turns parser events into items; checks nesting and limits; folds opaque elements."""

    def __init__(self, text: str):
        self.text = text
        self.items: list[_Item] = []
        self.stack: list[_Element] = []
        self.opaque: _Element | None = None  # the untranslated element being skipped

    def data(self, start: int, end: int, plain: str) -> None:
        if self.opaque is None and start < end:
            self.items.append(_Item("text", start, end, plain))

    def point(self, start: int, end: int, block: bool = False) -> None:
        if self.opaque is None:
            self.items.append(_Item("point", start, end, block=block))
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
        element = _Element(name, start, block=block, open_end=end)
        if block:
            self._blocks_ancestors()
        self.stack.append(element)
        if self.opaque is None and opaque:
            self.opaque = element
        elif self.opaque is None:
            self.items.append(_Item("open", start, end, element=element))

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
            self.items.append(_Item("close", start, end, element=element))

    def finish(self) -> list[_Item]:
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


def _parse_html(text: str) -> list[_Item]:
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


def _parse_xml(text: str) -> list[_Item]:
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
        _xml_event(builder, text, kind, start, end, payload)
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


def _xml_event(builder: _Builder, text: str, kind: str, start: int, end: int, payload) -> None:
    if kind == "data":
        builder.data(start, end, payload)
    elif kind == "start":
        name, attrs = payload
        builder.start(name, start, end, _no_translate(attrs), False)
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


def _parse(text: str, format: str) -> list[_Item]:
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}. Received: format={format!r}")
    _check_length(text)
    return _parse_html(text) if format == "html" else _parse_xml(text)


# ---------------------------------------------------------------------------------------------
# Sentences: blocks, plain text, and the inline elements of each sentence.

Span = tuple[int, int]


@dataclasses.dataclass(eq=False)
class _Node:
    """An inline element, or a point, inside one sentence.

    `first`/`last`: an element's source words `[first, last)`; a point's
    source gap (before word `first`) with `last == first`.
    """

    open: str  # the start tag as written, or the point's whole text
    close: str | None  # the end tag as written; None for a point
    first: int
    last: int
    glued: bool  # no whitespace between it and the word before it in the source
    children: list[_Node]
    space_after: bool = False  # a point followed by whitespace in the source
    prefix: str = ""  # the characters of its first word before it, e.g. "«"
    suffix: str = ""  # an element: the characters of its last word after it, e.g. "."


@dataclasses.dataclass(frozen=True)
class _Unit:
    """One sentence of a marked-up document.

    Attributes:
        region: `(start, end)` in the document of the sentence with its inline
            tags: what its translation replaces.
        words: its plain words, as sent to the model (joined by spaces).
        word_spans: each word's `(start, end)` in the document as given.
        nodes: its inline elements and points, outermost first, in source order.
    """

    region: Span
    words: tuple[str, ...]
    word_spans: tuple[Span, ...]
    nodes: tuple[_Node, ...]


@dataclasses.dataclass
class _Block:
    """The plain text of a run of inline items, and where each character came from."""

    text: str  # the whole document
    items: list[_Item]
    plain: str
    raw_start: list[int]  # per plain character
    raw_end: list[int]
    positions: dict[int, int]  # id(item) -> plain offset where the item is
    item_starts: list[int]  # where each item starts in the document


def _blocks(items: list[_Item], split: bool) -> list[list[_Item]]:
    """Runs of inline items between block elements (one run when not splitting)."""
    if not split:
        return [items]
    runs, run = [], []
    for item in items:
        block = item.block if item.kind == "point" else (
            item.element is not None and item.element.block)
        if block:
            runs.append(run)
            run = []
        else:
            run.append(item)
    runs.append(run)
    return [run for run in runs if run]


def _fold_wordless(items: list[_Item]) -> list[_Item]:
    """Each element that encloses no word becomes one point (kept verbatim)."""
    letters, opened, wordless = 0, [], set()
    for item in items:
        if item.kind == "text":
            letters += sum(not char.isspace() for char in item.plain)
        elif item.kind == "open":
            opened.append(letters)
        elif item.kind == "close" and opened.pop() == letters:
            wordless.add(id(item.element))
    folded, skip_until = [], None
    for item in items:
        if skip_until is not None:
            if item.kind == "close" and item.element is skip_until:
                skip_until = None
            continue
        if item.kind == "open" and id(item.element) in wordless:
            folded.append(_Item("point", item.start, item.element.close_end))
            skip_until = item.element
        else:
            folded.append(item)
    return folded


def _block(text: str, items: list[_Item]) -> _Block:
    plain, raw_start, raw_end, positions = [], [], [], {}
    for item in items:
        positions[id(item)] = len(plain)
        if item.space:  # a line break is a space between words
            plain.append(" ")
            raw_start.append(item.start)
            raw_end.append(item.end)
        if item.kind != "text":
            continue
        exact = text[item.start:item.end] == item.plain
        for k, char in enumerate(item.plain):
            plain.append(char)
            raw_start.append(item.start + k if exact else item.start)
            raw_end.append(item.start + k + 1 if exact else item.end)
    return _Block(text, items, "".join(plain), raw_start, raw_end, positions,
                  [item.start for item in items])


def _element_ranges(block: _Block) -> dict[int, Span]:
    """id(element) -> its plain `(start, end)` without whitespace at either end."""
    ranges, opened = {}, {}
    for item in block.items:
        if item.kind == "open":
            opened[id(item.element)] = block.positions[id(item)]
        elif item.kind == "close":
            start, end = opened[id(item.element)], block.positions[id(item)]
            while block.plain[start].isspace():
                start += 1
            while block.plain[end - 1].isspace():
                end -= 1
            ranges[id(item.element)] = (start, end)
    return ranges


def _sentence_of(starts: list[int], position: int) -> int:
    return bisect.bisect_right(starts, position) - 1


def _merge_crossed(spans: list[Span], ranges: list[Span]) -> list[Span]:
    """Sentences joined until no element crosses a sentence boundary.

    An element may lie inside one sentence or enclose whole sentences.
    """
    while True:
        starts = [start for start, _ in spans]
        joined = set()
        for a, b in ranges:
            i, j = _sentence_of(starts, a), _sentence_of(starts, b - 1)
            if i != j and not (a == spans[i][0] and b == spans[j][1]):
                joined.update(range(i + 1, j + 1))  # sentence k joins sentence k - 1
        if not joined:
            return spans
        merged = []
        for k, span in enumerate(spans):
            merged.append((merged.pop()[0], span[1]) if k in joined else span)
        spans = merged


def _block_units(text: str, items: list[_Item], split: bool) -> list[_Unit]:
    block = _block(text, _fold_wordless(items))
    ranges = _element_ranges(block)
    if split:
        spans = sentence_spans(block.plain, split_lines=False)
    else:
        spans = [span] if (span := _trim(block.plain)) else []
    spans = _merge_crossed(spans, list(ranges.values()))
    starts = [start for start, _ in spans]
    inside: dict[int, list[_Element]] = {}
    for item in block.items:
        if item.kind == "open":
            a, b = ranges[id(item.element)]
            i = _sentence_of(starts, a)
            if b <= spans[i][1] and (a, b) != spans[i]:
                inside.setdefault(i, []).append(item.element)
    return [_unit(block, span, ranges, inside.get(i, [])) for i, span in enumerate(spans)]


def _trim(text: str) -> Span | None:
    start, end = 0, len(text)
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _unit(block: _Block, span: Span, ranges: dict[int, Span],
          elements: list[_Element]) -> _Unit:
    s0, s1 = span
    region = (min([block.raw_start[s0], *(e.start for e in elements)]),
              max([block.raw_end[s1 - 1], *(e.close_end for e in elements)]))
    local = word_spans(block.plain[s0:s1])
    words = tuple(block.plain[s0 + a:s0 + b] for a, b in local)
    raw_spans = tuple((block.raw_start[s0 + a], block.raw_end[s0 + b - 1]) for a, b in local)
    starts, ends = [s0 + a for a, _ in local], [s0 + b for _, b in local]
    root: list[_Node] = []
    stack = [root]
    first_item = bisect.bisect_left(block.item_starts, region[0])
    for item in block.items[first_item:bisect.bisect_left(block.item_starts, region[1])]:
        if item.kind == "text":
            continue
        position = block.positions[id(item)]
        glued = position > 0 and not block.plain[position - 1].isspace()
        raw = block.text[item.start:item.end]
        if item.kind == "point":
            gap, prefix = bisect.bisect_left(starts, position), ""
            if gap > 0 and position < ends[gap - 1]:  # inside a word: before it, after `prefix`
                gap, glued = gap - 1, False
                prefix = block.plain[starts[gap]:position]
            space_after = block.text[item.end:item.end + 1].isspace()
            stack[-1].append(_Node(raw, None, gap, gap, glued, [], space_after, prefix))
        elif item.kind == "open":
            a, b = ranges[id(item.element)]
            first, last = bisect.bisect_right(ends, a), bisect.bisect_left(starts, b)
            node = _Node(raw, "", first, last, glued, [],
                         prefix=block.plain[starts[first]:a], suffix=block.plain[b:ends[last - 1]])
            stack[-1].append(node)
            stack.append(node.children)
        else:
            stack.pop()
            stack[-1][-1].close = raw
    return _Unit(region, words, raw_spans, tuple(root))


# ---------------------------------------------------------------------------------------------
# Transfer: where each node goes among the target words, then the target markup.


@dataclasses.dataclass
class _Placed:
    """A node's target gaps `[lo, hi)` (a point: `lo == hi`) and its placed children."""

    node: _Node
    lo: int
    hi: int
    children: list[_Placed]


class _Alignment:
    """Target words linked to each source word, and the anchors derived from them.

    Projection only (the links given are kept as they are elsewhere): a source
    word with one cognate in the target links to it alone (`_cognates`), and
    `matrix`, the soft word matrix `(target words, source words)` where the
    result has one, stands in for the links of an element whose words link to
    nothing.
    """

    def __init__(self, links, source_words: Sequence[str], target_words: Sequence[str],
                 matrix=None):
        self.n, self.m = len(source_words), len(target_words)
        self.targets: list[list[int]] = [[] for _ in range(self.n)]
        for i, j in links:
            if 0 <= i < self.n and 0 <= j < self.m:  # other links are ignored
                self.targets[i].append(j)
        for i, j in _cognates(source_words, target_words).items():
            self.targets[i] = [j]
        self.linked = {j for targets in self.targets for j in targets}
        shaped = matrix is not None and len(matrix) == self.m and all(
            len(row) == self.n for row in matrix)
        self.matrix = matrix if shaped else None

    def hull(self, first: int, last: int) -> Span | None:
        """`[lo, hi)`: the longest run of target words linked to source words
        `[first, last)`, words linked to no source word between two of them
        included; of runs as long, the one nearest the proportional place.

        Words without a link take the target word that attends most to each
        of them in the soft matrix (the column's argmax), if there is one.
        (The run beats the hull of all linked words: on the glossary set of
        bench/markup_projection.py, 44.6% exact against 40.1%, version 4.)
        """
        linked = sorted({j for i in range(first, last) for j in self.targets[i]}
                        or self._strongest(first, last))
        if not linked:
            return None
        runs = [[linked[0], linked[0]]]
        for j in linked[1:]:
            if all(k not in self.linked for k in range(runs[-1][1] + 1, j)):
                runs[-1][1] = j  # adjacent, or only unaligned words between
            else:
                runs.append([j, j])
        centre = (first + last) / 2 * self.m / self.n
        lo, hi = max(runs, key=lambda run: (run[1] - run[0], -abs((run[0] + run[1] + 1) / 2
                                                                   - centre)))
        return (lo, hi + 1)

    def _strongest(self, first: int, last: int) -> set[int]:
        """The target word of most weight in each of source words `[first, last)`'s columns."""
        if self.matrix is None or not self.m:
            return set()
        found = set()
        for i in range(first, last):
            j = max(range(self.m), key=lambda k: self.matrix[k][i])
            if self.matrix[j][i] > 0:
                found.add(j)
        return found

    def anchor(self, first: int, last: int, glued: bool) -> int:
        """The target gap next to the neighbours of source words `[first, last)` (or gap)."""
        after = max(self.targets[first - 1]) + 1 if first > 0 and self.targets[first - 1] \
            else None
        before = min(self.targets[last]) if last < self.n and self.targets[last] else None
        for gap in ((after, before) if glued or first < last else (before, after)):
            if gap is not None:
                return gap
        return round(first * self.m / self.n) if self.n else 0


COGNATE_PREFIX = 4  # letters two cognates share (Simard, Foster and Isabelle 1992)
_ELISION = re.compile(r"^[^\W\d_]{1,2}['’](?=\w)")  # French l' d' qu' before a word
_EDGE_PUNCTUATION = re.compile(r"^\W+|\W+$")


def _cognate_key(word: str) -> str:
    """A word's first COGNATE_PREFIX letters, lower case, accents, elision and punctuation
    at either end taken off; '' for a word shorter than that."""
    word = unicodedata.normalize("NFKD", word.lower())
    word = "".join(char for char in word if not unicodedata.combining(char))
    word = _EDGE_PUNCTUATION.sub("", _ELISION.sub("", word))
    return word[:COGNATE_PREFIX] if len(word) >= COGNATE_PREFIX else ""


def _cognates(source_words: Sequence[str], target_words: Sequence[str]) -> dict[int, int]:
    """Source word -> target word, where each is the only word of its side to begin with
    the same COGNATE_PREFIX letters (`deficit` and `déficit`, `education` and `l'éducation,`):
    the orthographic cognates of Simard et al.'s alignment of English and French
    (numbers such as `2019` and `2019,` included)."""
    source = [_cognate_key(word) for word in source_words]
    target = [_cognate_key(word) for word in target_words]
    source_count, target_count = Counter(source), Counter(target)
    at = {key: j for j, key in enumerate(target)}
    return {i: at[key] for i, key in enumerate(source)
            if key and source_count[key] == 1 and target_count[key] == 1}


def _place(nodes: Sequence[_Node], lo: int, hi: int, alignment: _Alignment) -> list[_Placed]:
    """Places sibling nodes inside `[lo, hi)`: in order, never overlapping, nested inside.

    Each element goes to the longest run of its words' targets (clipped to its
    parent), or, if none, to an empty range next to its neighbours' targets;
    siblings are sorted by where they go, and one that would overlap the one
    before starts where that one ends.
    """
    wanted = []
    for order, node in enumerate(nodes):
        hull = alignment.hull(node.first, node.last) if node.close is not None else None
        if hull is None:
            gap = alignment.anchor(node.first, node.last, node.glued)
            hull = (gap, gap)
        start = min(max(hull[0], lo), hi)
        wanted.append((start, order, min(max(hull[1], start), hi), node))
    placed, cursor = [], lo
    for start, _, end, node in sorted(wanted, key=lambda w: w[:2]):
        start = max(start, cursor)
        end = max(end, start) if node.close is not None else start
        placed.append(_Placed(node, start, end, _place(node.children, start, end, alignment)))
        cursor = end
    return placed


def _tokens(placed: list[_Placed], lo: int, hi: int, out: list) -> None:
    """Flattens placed nodes and target words `[lo, hi)` into `("word", j)`, `("open", p)`,
    `("close", p)` and `("point", p)` tokens, in output order."""
    j = lo
    for child in placed:
        out.extend(("word", k) for k in range(j, child.lo))
        if child.node.close is None:
            out.append(("point", child))
        else:
            out.append(("open", child))
            _tokens(child.children, child.lo, child.hi, out)
            out.append(("close", child))
        j = child.hi
    out.extend(("word", k) for k in range(j, hi))


def _split_punctuation(tokens: list, words: list[str]) -> list:
    """Tags that left punctuation of a word outside in the source do so in the target.

    `<b>car</b>.` gives `<b>rouge</b>.` rather than `<b>rouge.</b>`, and
    `«<i>link</i>` gives `«<i>lien</i>` when the target word has the same
    punctuation. Words become `("text", s)` pieces; `("suffix"|"prefix", s)`
    hold what is split off.
    """
    out = []
    for index, (kind, value) in enumerate(tokens):
        if kind != "word":
            out.append((kind, value))
            continue
        word, opens = words[value], _run(tokens, index, -1, ("open", "point"))
        for at, (_, placed) in enumerate(opens):  # outermost first
            prefix = placed.node.prefix
            if prefix and len(word) > len(prefix) and word.startswith(prefix):
                out.insert(len(out) - len(opens) + at, ("prefix", prefix))
                word = word[len(prefix):]
                break
        closes, suffix = _run(tokens, index, 1, ("close",)), None
        for at in range(len(closes) - 1, -1, -1):  # outermost first
            suffix = closes[at][1].node.suffix
            if suffix and len(word) > len(suffix) and word.endswith(suffix):
                word = word[:-len(suffix)]
                break
            suffix = None
        out.append(("text", word))
        if suffix is not None:
            out.extend(closes[:at + 1])
            out.append(("suffix", suffix))
            out.extend(closes[at + 1:])
            del tokens[index + 1:index + 1 + len(closes)]
    return out


def _run(tokens: list, index: int, step: int, kinds: tuple[str, ...]) -> list:
    """The tokens of `kinds` next to `tokens[index]` on one side (in token order)."""
    run, k = [], index + step
    while 0 <= k < len(tokens) and tokens[k][0] in kinds:
        run.append(tokens[k])
        k += step
    return run[::-1] if step < 0 else run


def _space_index(between: list) -> int:
    """Where the target's whitespace goes among the tokens between two words.

    After end tags, split-off suffixes and glued points (they follow the word
    before), before start tags, prefixes and the rest; never inside an
    element left empty.
    """
    empty = 0
    for index, (kind, value) in enumerate(between):
        if kind in ("suffix", "close") and not _is_empty(kind, value):
            continue
        if kind == "open" and _is_empty(kind, value):
            if empty == 0 and not value.node.glued:
                return index
            empty += 1
        elif kind == "close":
            empty -= 1
        elif empty == 0 and (kind != "point" or not value.node.glued):
            return index
    return len(between)


def _is_empty(kind: str, value) -> bool:
    return kind in ("open", "close") and value.lo == value.hi


def _render(unit: _Unit, target: str, links, matrix=None) -> tuple[str, list[Span]]:
    """The target sentence with the unit's tags in place, and each target word's span in it."""
    spans = word_spans(target)
    words = [html.escape(target[a:b], quote=False) for a, b in spans]
    alignment = _Alignment(links, unit.words, [target[a:b] for a, b in spans], matrix)
    tokens: list = []
    _tokens(_place(unit.nodes, 0, len(words), alignment), 0, len(words), tokens)
    tokens = _split_punctuation(tokens, words)
    pieces, between, word_spans_out, length, k = [], [], [], 0, 0

    def emit(token, spaced: bool) -> None:
        nonlocal length
        kind, value = token
        text = value if kind in ("text", "suffix", "prefix", "space") else _tag_text(kind, value)
        if kind == "point" and spaced and value.node.space_after and not value.node.glued:
            text += " "  # an untranslated piece stays a word of its own
        pieces.append(text)
        length += len(text)

    for token in tokens:
        if token[0] != "text":
            between.append(token)
            continue
        cut = _space_index(between) if k > 0 else len(between)
        for index, piece in enumerate(between):
            if index == cut:
                emit(("space", target[spans[k - 1][1]:spans[k][0]]), False)
            emit(piece, k == 0 or index >= cut)
        if cut == len(between) and k > 0:
            emit(("space", target[spans[k - 1][1]:spans[k][0]]), False)
        word_spans_out.append((length, length + len(token[1])))
        emit(token, False)
        between, k = [], k + 1
    for piece in between:
        emit(piece, False)
    return "".join(pieces), word_spans_out


def _tag_text(kind: str, placed: _Placed) -> str:
    return placed.node.close if kind == "close" else placed.node.open


# ---------------------------------------------------------------------------------------------
# Plans: split, translate (elsewhere), join.


@dataclasses.dataclass(frozen=True)
class MarkupTranslation(DocumentTranslation):
    """A translated marked-up document (`text` is markup).

    Attributes:
        link_spans: every word link as `(source_span, target_span)`: the
            source word's characters in the markup as given (tags inside a
            word included), the target word's in `text` (see `nmt.documents.offsets`).
    """

    link_spans: tuple[SpanLink, ...] = ()


@dataclasses.dataclass(frozen=True)
class MarkupPlan:
    """A marked-up document and its sentences, ready for one translator call.

    Attributes:
        text: the document as given.
        format: `html` or `xml`.
        units: per sentence, where it is and which inline tags it holds.
    """

    text: str
    format: str
    units: tuple[_Unit, ...]

    @property
    def sentences(self) -> list[str]:
        """The plain sentences to translate (words joined by single spaces)."""
        return [" ".join(unit.words) for unit in self.units]

    def join(self, results: Sequence[SentenceResult]) -> MarkupTranslation:
        """The translated markup, from one result per sentence (`.text`, `.word_alignment`).

        Raises:
            ValueError: the number of results is not the number of sentences.
        """
        if len(results) != len(self.units):
            raise ValueError(f"Expected one result per sentence ({len(self.units)}). "
                             f"Received: {len(results)} results")
        pieces, sentences, links, cursor, length = [], [], [], 0, 0
        for unit, result in zip(self.units, results, strict=True):
            between = self.text[cursor:unit.region[0]]
            rendered, target_spans = _render(unit, result.text, result.word_alignment,
                                             getattr(result, "word_matrix", None))
            start = length + len(between)
            pieces += [between, rendered]
            length = start + len(rendered)
            sentences.append(TranslatedSentence(unit.region, (start, length), result))
            links += _link_spans(unit, target_spans, start, result.word_alignment)
            cursor = unit.region[1]
        pieces.append(self.text[cursor:])
        return MarkupTranslation(source=self.text, text="".join(pieces),
                                 sentences=tuple(sentences), link_spans=tuple(links))


def _link_spans(unit: _Unit, target_spans: list[Span], offset: int, links) -> list[SpanLink]:
    pairs = []
    for i, j in sorted(set(links)):
        if 0 <= i < len(unit.word_spans) and 0 <= j < len(target_spans):
            a, b = target_spans[j]
            pairs.append((unit.word_spans[i], (a + offset, b + offset)))
    return pairs


def plan_markup(text: str, format: str, split: bool = True) -> MarkupPlan:
    """Parses one marked-up document and finds its sentences.

    Args:
        text: the document (a fragment: no root element needed).
        format: `html` or `xml`.
        split: split into sentences at block elements and with sentencex;
            False keeps the whole document one sentence (a given translation
            to project the tags onto).

    Raises:
        MarkupError: the markup is malformed or over a limit.
        ValueError: `format` is not `html` or `xml`.
    """
    items = _parse(text, format)
    units = [unit for run in _blocks(items, split) for unit in _block_units(text, run, split)]
    return MarkupPlan(text=text, format=format, units=tuple(units))


def plan_document(text: str, format: str) -> DocumentPlan | MarkupPlan:
    """The plan of one document in `format` (`text`, `html` or `xml`), for `join_documents`.

    Raises:
        MarkupError: `html` or `xml` that is malformed or over a limit.
        ValueError: `format` is not one of `DOCUMENT_FORMATS`.
    """
    if format not in DOCUMENT_FORMATS:
        raise ValueError(f"format must be one of {DOCUMENT_FORMATS}. Received: {format!r}")
    return split_document(text) if format == "text" else plan_markup(text, format)


def split_markup(texts: Sequence[str], format: str) -> list[MarkupPlan]:
    """Plans for a batch of documents (see `sentences_of` and `join_documents` of
    `nmt.documents.sentences`).

    Raises:
        MarkupError: a document is malformed or over a limit.
        TypeError: `texts` is a single string.
    """
    if isinstance(texts, str | bytes):
        raise TypeError("texts must be a sequence of documents, not a single string. "
                        f"Received: texts={texts[:40]!r}; wrap it in a list.")
    return [plan_markup(text, format) for text in texts]


PROJECTION_FORMATS = DOCUMENT_FORMATS  # what `plan_projection` reads


@dataclasses.dataclass(frozen=True)
class ProjectionPlan:
    """A source and its given plain translation, ready for one aligner call.

    The source is not split: it is one sentence (or none, without a word), so
    the translation is aligned to it whole, as `nmt align` pairs are.
    `nmt.documents.sentences.join_documents` takes it like any plan.

    Attributes:
        source: the source as given (`text`, `html` or `xml`).
        target: its translation, plain text.
        plan: the source's plan: a `DocumentPlan` with one span (plain text)
            or a `MarkupPlan` of one unit; none without a word.
    """

    source: str
    target: str
    plan: DocumentPlan | MarkupPlan

    @property
    def sentences(self) -> list[str]:
        """The source as the aligner reads it (words joined by single spaces), or none."""
        return self.plan.sentences

    @property
    def targets(self) -> list[str]:
        """The target to align with each of `sentences` (stripped of outer whitespace)."""
        return [self.target.strip()] * len(self.sentences)

    def join(self, results: Sequence[SentenceResult]) -> DocumentTranslation:
        """The target with the source's tags, from the alignment of `sentences` and `targets`.

        Args:
            results: one result (`.text`: the target, `.word_alignment`) per
                sentence: one, or none for a source without a word.

        Returns:
            A `DocumentTranslation` whose `text` is the target with every tag of
            the source (plain text: the target within the source's outer
            whitespace); a source without a word gives its tags, then the target.

        Raises:
            ValueError: not one result per sentence.
        """
        if len(results) != len(self.sentences):
            raise ValueError(f"Expected one result per sentence ({len(self.sentences)}). "
                             f"Received: {len(results)} results")
        if not self.sentences:
            target = self.target.strip()
            escaped = target if isinstance(self.plan, DocumentPlan) else html.escape(
                target, quote=False)
            return DocumentTranslation(source=self.source, text=self.source + escaped,
                                       sentences=())
        if isinstance(self.plan, DocumentPlan):
            return join_plain(self.plan, results)
        return self.plan.join(results)


def plan_projection(source: str, target: str, format: str) -> ProjectionPlan:
    """The plan of a given translation that gets its source's tags (`ProjectionPlan`).

    Args:
        source: the source, whole (one segment, never split into sentences).
        target: its translation, plain text (`&` and `<` are text).
        format: `text`, `html` or `xml`.

    Raises:
        MarkupError: `html` or `xml` that is malformed or over a limit.
        ValueError: `format` is not one of `PROJECTION_FORMATS`.
    """
    if format not in PROJECTION_FORMATS:
        raise ValueError(f"format must be one of {PROJECTION_FORMATS}. Received: {format!r}")
    if format != "text":
        return ProjectionPlan(source, target, plan_markup(source, format, split=False))
    _check_length(source)
    whole = _trim(source)
    return ProjectionPlan(source, target, DocumentPlan(source, () if whole is None else (whole,)))


def project_markup(source: str, target: str, links, format: str, word_matrix=None) -> str:
    """A given plain translation with the source's tags put in place.

    Args:
        source: the source sentence with markup.
        target: its translation, plain text (`&` and `<` are text).
        links: `(source_word, target_word)` pairs over the whitespace words of
            the source's plain text and of `target`, e.g. from
            `Translator.align(plan.sentences, plan.targets)` of
            `plan = plan_projection(source, target, format)`.
        format: `html` or `xml`.
        word_matrix: optional soft word matrix `(target words, source words)`
            (`Translation.word_matrix`): where an element's words have no
            link, the target words that attend most to them.

    Returns:
        The target with every tag of the source, properly nested.
    """
    plan = plan_projection(source, target, format)
    results = [TextLinks(text, tuple(links), word_matrix) for text in plan.targets]
    return plan.join(results).text
