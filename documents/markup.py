"""Inline markup (HTML or XML) carried across a translation through the word alignment.

A marked-up document is parsed (Python's `html.parser` for HTML, expat for
XML), its tags are taken out, the plain text is split into sentences and
translated like any other sentence, and the tags are put back around the
target words aligned to the words they enclosed (as Firefox's Bergamot
engine does):

    plans = split_markup(texts, "html")
    results = translator.translate(sentences_of(plans))    # documents.sentences
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
- Placeholders (`plan_markup(..., placeholders=True)`, `plan_document`;
  `documents.placeholders`: `%s`, `{0}`...) are standalone pieces of the
  text: the model does not read them and each comes back verbatim, once,
  where a standalone tag would; those taken in order (`%s`, `%d`, `{}`)
  keep the source's order. `plan_text` does the same for plain text (no
  escaping), where entities (`&amp;`) are placeholders too. Sentences are
  found with the pieces in place; a piece before a sentence's first word or
  after its last stays where it is.
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

Parsing is `documents.parsing`, placing and writing the tags
`documents.projection`; this module finds the sentences and plans.
"""

from __future__ import annotations

import bisect
import dataclasses
import html
from collections.abc import Sequence

from documents.offsets import SpanLink, word_spans
from documents.parsing import (  # noqa: F401  (the limits: part of this module's API)
    FORMATS,
    MAX_DEPTH,
    MAX_MARKUP_CHARS,
    MAX_TAG_CHARS,
    Element,
    Item,
    MarkupError,
    Verbatim,
    _check_length,
    _parse,
)
from documents.placeholders import (
    KINDS,
    MARKUP_KINDS,
    Piece,
    find_placeholders,
    verbatim_pieces,
)
from documents.projection import Unit, _Node, render_unit
from documents.sentences import (
    DocumentPlan,
    DocumentTranslation,
    SentenceResult,
    TextLinks,
    TranslatedSentence,
    sentence_spans,
    split_document,
)
from documents.sentences import join as join_plain

DOCUMENT_FORMATS = ("text", *FORMATS)  # what `plan_document` reads: plain text or markup


# ---------------------------------------------------------------------------------------------
# Sentences: blocks, plain text, and the inline elements of each sentence.

Span = tuple[int, int]


@dataclasses.dataclass
class _Block:
    """The plain text of a run of inline items, and where each character came from."""

    text: str  # the whole document
    items: list[Item]
    plain: str
    raw_start: list[int]  # per plain character
    raw_end: list[int]
    positions: dict[int, int]  # id(item) -> plain offset where the item is
    item_starts: list[int]  # where each item starts in the document


def block_runs(items: list[Item], split: bool) -> list[list[Item]]:
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


def _fold_wordless(text: str, items: list[Item]) -> list[Item]:
    """Each element that encloses no word becomes one point (kept verbatim); one that
    holds placeholders (`<b>%d</b>`) is a piece like them."""
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
            if item.piece is not None:
                point = folded[-1]
                ordered = item.piece.ordered or (point.piece is not None and point.piece.ordered)
                point.piece = Piece(point.start, point.end, text[point.start:point.end], ordered)
            continue
        if item.kind == "open" and id(item.element) in wordless:
            folded.append(Item("point", item.start, item.element.close_end))
            skip_until = item.element
        else:
            folded.append(item)
    return folded


def _block(text: str, items: list[Item]) -> _Block:
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


def _sentence_spans(block: _Block) -> list[Span]:
    """The sentences of the block's plain text, found with its pieces (placeholders) in
    place, so that a piece ending a sentence (`Delete '%s'? Thanks.`) still ends it.

    Without pieces these are `sentence_spans(block.plain)`; a sentence made only of
    pieces has no span (its pieces stay where they are).
    """
    if not any(item.piece is not None for item in block.items):
        return sentence_spans(block.plain, split_lines=False)
    chars, before, after = [], [], []  # the text read; per character, its plain span
    for item in block.items:
        at = block.positions[id(item)]
        if item.piece is not None:
            chars.append(item.piece.text)
            before += [at] * len(item.piece.text)
            after += [at] * len(item.piece.text)
        elif item.space or item.kind == "text":
            length = len(item.plain) if item.kind == "text" else 1
            chars.append(block.plain[at:at + length])
            before += range(at, at + length)
            after += range(at + 1, at + length + 1)
    spans = []
    for start, end in sentence_spans("".join(chars), split_lines=False):
        start, end = before[start], after[end - 1]
        while start < end and block.plain[start].isspace():
            start += 1
        while end > start and block.plain[end - 1].isspace():
            end -= 1
        if start < end:
            spans.append((start, end))
    return spans


def block_units(text: str, items: list[Item], split: bool) -> list[Unit]:
    """The sentences (`split`) or the one unit of a run of inline items (`block_runs`)."""
    block = _block(text, _fold_wordless(text, items))
    ranges = _element_ranges(block)
    if split:
        spans = _sentence_spans(block)
    else:
        spans = [span] if (span := _trim(block.plain)) else []
    spans = _merge_crossed(spans, list(ranges.values()))
    starts = [start for start, _ in spans]
    inside: dict[int, list[Element]] = {}
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
          elements: list[Element]) -> Unit:
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
            stack[-1].append(_Node(raw, None, gap, gap, glued, [], space_after, prefix,
                                   piece=item.piece,
                                   stands_for_space=item.piece is not None and item.space))
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
    return Unit(region, words, raw_spans, tuple(root))


# ---------------------------------------------------------------------------------------------
# Plans: split, translate (elsewhere), join.


@dataclasses.dataclass(frozen=True)
class MarkupTranslation(DocumentTranslation):
    """A translated marked-up document (`text` is markup).

    Attributes:
        link_spans: every word link as `(source_span, target_span)`: the
            source word's characters in the markup as given (tags inside a
            word included), the target word's in `text` (see `documents.offsets`).
    """

    link_spans: tuple[SpanLink, ...] = ()
    target_word_spans: tuple[tuple[Span, ...], ...] = ()


@dataclasses.dataclass(frozen=True)
class MarkupPlan:
    """A marked-up document (or a plain text with placeholders) and its sentences,
    ready for one translator call.

    Attributes:
        text: the document as given.
        format: `html` or `xml`; `text` for plain text whose placeholders are
            carried across as standalone pieces (`plan_text`).
        units: per sentence, where it is and which inline tags it holds.
    """

    text: str
    format: str
    units: tuple[Unit, ...]

    @property
    def sentences(self) -> list[str]:
        """The plain sentences to translate (words joined by single spaces)."""
        return [" ".join(unit.words) for unit in self.units]

    @property
    def word_spans(self) -> list[tuple[Span, ...]]:
        """Per sentence, each word the model reads as its `(start, end)` in `text`."""
        return [unit.word_spans for unit in self.units]

    def join(self, results: Sequence[SentenceResult]) -> MarkupTranslation:
        """The translated markup, from one result per sentence (`.text`, `.word_alignment`).

        Raises:
            ValueError: the number of results is not the number of sentences.
        """
        if len(results) != len(self.units):
            raise ValueError(f"Expected one result per sentence ({len(self.units)}). "
                             f"Received: {len(results)} results")
        pieces, sentences, links, cursor, length = [], [], [], 0, 0
        words = []
        for unit, result in zip(self.units, results, strict=True):
            between = self.text[cursor:unit.region[0]]
            rendered, target_spans = render_unit(unit, result.text, result.word_alignment,
                                                  getattr(result, "word_matrix", None),
                                                  escape=self.format != "text")
            start = length + len(between)
            words.append(tuple((a + start, b + start) for a, b in target_spans))
            pieces += [between, rendered]
            length = start + len(rendered)
            sentences.append(TranslatedSentence(unit.region, (start, length), result))
            links += _link_spans(unit, target_spans, start, result.word_alignment)
            cursor = unit.region[1]
        pieces.append(self.text[cursor:])
        return MarkupTranslation(source=self.text, text="".join(pieces),
                                 sentences=tuple(sentences), link_spans=tuple(links),
                                 target_word_spans=tuple(words))


def _link_spans(unit: Unit, target_spans: list[Span], offset: int, links) -> list[SpanLink]:
    pairs = []
    for i, j in sorted(set(links)):
        if 0 <= i < len(unit.word_spans) and 0 <= j < len(target_spans):
            a, b = target_spans[j]
            pairs.append((unit.word_spans[i], (a + offset, b + offset)))
    return pairs


def plan_markup(text: str, format: str, split: bool = True, placeholders: bool = False,
                verbatim: Verbatim | None = None) -> MarkupPlan:
    """Parses one marked-up document and finds its sentences.

    Args:
        text: the document (a fragment: no root element needed).
        format: `html` or `xml`.
        split: split into sentences at block elements and with sentencex;
            False keeps the whole document one sentence (a given translation
            to project the tags onto).
        placeholders: carry the placeholders of its text across as standalone
            pieces (`documents.placeholders.MARKUP_KINDS`: entities are
            the markup's own).
        verbatim: XML only: `(name, attributes) -> bool`, elements kept verbatim
            besides those not to translate, as one standalone piece
            (`documents.xliff`: XLIFF 1.2 `<ph>`, whose content is native code).

    Raises:
        MarkupError: the markup is malformed or over a limit.
        ValueError: `format` is not `html` or `xml`.
    """
    items = _parse(text, format, verbatim)
    if placeholders:
        items = with_pieces(text, items, MARKUP_KINDS)
    units = [unit for run in block_runs(items, split) for unit in block_units(text, run, split)]
    return MarkupPlan(text=text, format=format, units=tuple(units))


def plan_text(text: str, split: bool = True, kinds=KINDS) -> MarkupPlan:
    """The plan of a plain text whose placeholders (every kind of
    `documents.placeholders.KINDS`, or of `kinds`) are carried across as
    standalone pieces.

    The model reads the text without them; each comes back verbatim, once,
    at the place the word links give it (`plan.join`), with no escaping.

    Args:
        text: plain text.
        split: split into sentences as `documents.sentences.split_document`
            does (every line break ends one); False keeps it one sentence (a
            line break is then a space).
        kinds: the placeholder kinds to carry across (`REST_KINDS` for
            reStructuredText).

    Raises:
        TypeError: `text` is not a str.
        ValueError: `kinds` names an unknown kind.
    """
    if not isinstance(text, str):
        raise TypeError(f"A document must be a str. Received: {type(text).__name__}")
    items = with_pieces(text, _text_items(text, split), kinds)
    units = [unit for run in block_runs(items, split) for unit in block_units(text, run, split)]
    return MarkupPlan(text=text, format="text", units=tuple(units))


def _text_items(text: str, split: bool) -> list[Item]:
    """Plain text as items: its lines, each line break a block point when splitting."""
    if not split:
        return [Item("text", 0, len(text), text)] if text else []
    items, start = [], 0
    for line in text.splitlines(keepends=True):
        body = len(line.splitlines()[0])
        if body:
            items.append(Item("text", start, start + body, line[:body]))
        if body < len(line):
            items.append(Item("point", start + body, start + len(line), block=True))
        start += len(line)
    return items


def with_pieces(text: str, items: list[Item], kinds) -> list[Item]:
    """`items` with each verbatim piece (`verbatim_pieces`) of their text as a point;
    `items` themselves where there is none.

    Runs of adjacent text items that are the document's own characters are read
    as one text (a parser may cut text anywhere); decoded text (entities) is left
    as it is.
    """
    out, run = [], []

    def flush() -> None:
        if run:
            out.extend(_pieces_of(text, run[0].start, run[-1].end, kinds) or run)
            run.clear()

    for item in items:
        own = item.kind == "text" and text[item.start:item.end] == item.plain
        if not own or (run and run[-1].end != item.start):
            flush()
        if own:
            run.append(item)
        else:
            out.append(item)
    flush()
    return out


def _pieces_of(text: str, start: int, end: int, kinds) -> list[Item]:
    """`text[start:end]` as text items and one point per verbatim piece; [] without one."""
    found = verbatim_pieces(text[start:end], kinds)
    items, cursor = [], start
    for piece in found:
        a, b = start + piece.start, start + piece.end
        if cursor < a:
            items.append(Item("text", cursor, a, text[cursor:a]))
        items.append(Item("point", a, b, space=html.unescape(piece.text).isspace(),
                           piece=dataclasses.replace(piece, start=a, end=b)))
        cursor = b
    if found and cursor < end:
        items.append(Item("text", cursor, end, text[cursor:end]))
    return items


def plan_document(text: str, format: str, placeholders: bool = False,
                  kinds=KINDS) -> DocumentPlan | MarkupPlan:
    """The plan of one document in `format` (`text`, `html` or `xml`), for `join_documents`.

    Args:
        text: the document.
        format: one of `DOCUMENT_FORMATS`.
        placeholders: carry its placeholders (`documents.placeholders`)
            across as standalone pieces; a document without one is planned
            exactly as without this.
        kinds: the placeholder kinds of a `text` document (`plan_text`);
            markup carries `MARKUP_KINDS`.

    Raises:
        MarkupError: `html` or `xml` that is malformed or over a limit.
        ValueError: `format` is not one of `DOCUMENT_FORMATS`, or `kinds` names
            an unknown kind.
    """
    if format not in DOCUMENT_FORMATS:
        raise ValueError(f"format must be one of {DOCUMENT_FORMATS}. Received: {format!r}")
    if format != "text":
        return plan_markup(text, format, placeholders=placeholders)
    if placeholders and isinstance(text, str) and find_placeholders(text, kinds):
        return plan_text(text, kinds=kinds)
    return split_document(text)


def split_markup(texts: Sequence[str], format: str) -> list[MarkupPlan]:
    """Plans for a batch of documents (see `sentences_of` and `join_documents` of
    `documents.sentences`).

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
    `documents.sentences.join_documents` takes it like any plan.

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
