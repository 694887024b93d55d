"""A subtitle cue's text read as markup, sentences joined over cues, and a translation split
back over them and written: the middle step of `documents.subtitles`, which states the
rules.

    cues = [read_cue_text(cue.text, "srt", placeholders=True) for cue in document.cues]
    sentences = cue_sentences(cues, merge=True)              # [(cue, unit), ...] each
    parts = split_translation([cues[c].units[u] for c, u in sentence], result)
    text = render_cue_text(cue.text, cues[c].units, parts_of_that_cue, escape=False)

A cue's tags become `documents.markup` items (paired tags elements, the
rest standalone points), so its sentences are that module's `Unit`s and
are written with its projection (`documents.projection.render_unit`).
"""

from __future__ import annotations

import dataclasses
import html
import re
from collections.abc import Sequence

from documents.markup import block_runs, block_units, with_pieces
from documents.parsing import Element, Item
from documents.placeholders import KINDS, MARKUP_KINDS, Piece
from documents.projection import Unit, render_unit
from documents.sentences import SentenceResult, sentence_spans

CUE_FORMATS = ("srt", "vtt")
MAX_CUES_PER_SENTENCE = 4  # a sentence longer than this (song lyrics) is cut at a cue's end
# Characters of a line of a cue that a translation's line breaks keep to where they can (or
# to the source's longest line, if longer): the usual limit of subtitle guidelines.
MAX_LINE_CHARS = 42

_LINE_END = re.compile(r"\r\n|\r|\n")
# Tags of cue text. SRT: HTML-like tags and {\an8}-style overrides. WebVTT: tags with
# classes (<c.yellow>) and an annotation (<v Bob>), timestamps, character references. Both:
# a turn, the line end before a line that opens with a dialogue dash.
_TURN = r"|(?P<turn>(?:\r\n|\r|\n)(?=[ \t]*(?:<[^<>]*>[ \t]*)*[-–—]))"
_SRT_MARKUP = re.compile(r"(?P<tag></?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?>)"
                         r"|(?P<point>\{\\[^{}\r\n]*\})" + _TURN)
_VTT_MARKUP = re.compile(r"(?P<tag></?[A-Za-z][A-Za-z0-9]*(?:\.[^\s.<>]+)*(?:[ \t][^<>]*)?>)"
                         r"|(?P<timestamp><(?:\d{2,}:)?\d{2}:\d{2}\.\d{3}>)"
                         r"|(?P<entity>&(?:#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);)"
                         + _TURN)
_VOICE = "v"  # WebVTT's voice tag: a speaker's turn
_TAG_NAME = re.compile(r"</?([A-Za-z][A-Za-z0-9]*)")
_TAG = re.compile(r"<[^<>]*>")
_DASHES = ("-", "–", "—")
_OPENING_ELLIPSIS = re.compile(r"\s*(\.\.\.|…)")  # matched at the cue's first words
_CLOSING_ELLIPSIS = re.compile(r"(\.\.\.|…)\s*\Z")  # searched in its last ones


# ---------------------------------------------------------------------------------------------
# Cue text: tags found, then sentences (units) as markup.


@dataclasses.dataclass(frozen=True)
class CueText:
    """A cue's text as the model reads it.

    Attributes:
        units: its sentences (`Unit`s of `documents.markup`), in order.
        opens: it starts with an ellipsis (`...the market.`), kept verbatim.
        closes: it ends with one (`I was going to...`), kept verbatim.
    """

    units: list[Unit]
    opens: bool = False
    closes: bool = False


def _tokens(text: str, format: str) -> list[list]:
    """`[kind, start, end, name]` tiling the cue text; kind `text`, `open`, `close`,
    `point`, `timestamp`, `entity`, `turn` or `ellipsis` (one that opens or closes the
    text)."""
    pattern = _SRT_MARKUP if format == "srt" else _VTT_MARKUP
    tokens, cursor = [], 0
    for match in pattern.finditer(text):
        if cursor < match.start():
            tokens.append(["text", cursor, match.start(), None])
        kind, name = match.lastgroup, None
        if kind == "tag":
            name = _TAG_NAME.match(match.group()).group(1).lower()
            kind = "close" if match.group().startswith("</") else "open"
            if name == "br" or match.group().endswith("/>"):
                kind = "point"
        tokens.append([kind, match.start(), match.end(), name])
        cursor = match.end()
    if cursor < len(text):
        tokens.append(["text", cursor, len(text), None])
    return _with_ellipses(text, tokens)


def _with_ellipses(text: str, tokens: list[list]) -> list[list]:
    """`tokens` with an ellipsis that opens or closes the cue's words as a token of its own."""
    for pattern, at in ((_OPENING_ELLIPSIS, 0), (_CLOSING_ELLIPSIS, -1)):
        worded = [i for i, (kind, a, b, _) in enumerate(tokens)
                  if kind in ("text", "entity") and text[a:b].strip()]
        if not worded or tokens[worded[at]][0] != "text":
            continue
        index = worded[at]
        _, a, b, _ = tokens[index]
        found = (pattern.match if at == 0 else pattern.search)(text, a, b)
        if found is not None:
            parts = [["text", a, found.start(1), None], ["ellipsis", *found.span(1), None],
                     ["text", found.end(1), b, None]]
            tokens[index:index + 1] = [part for part in parts if part[1] < part[2]]
    return tokens


def _pairs(tokens: list[list]) -> dict[int, int]:
    """Start tag index -> its end tag's index; a start tag an end tag skips stays unpaired."""
    pairs, stack = {}, []
    for index, (kind, _, _, name) in enumerate(tokens):
        if kind == "open":
            stack.append(index)
        elif kind == "close":
            at = next((k for k in range(len(stack) - 1, -1, -1)
                       if tokens[stack[k]][3] == name), None)
            if at is not None:
                pairs[stack[at]] = index
                del stack[at:]
    return pairs


def _items(text: str, tokens: list[list], format: str, placeholders: bool) -> list[Item]:
    """The cue text as markup items: elements for paired tags, points for the rest. A
    speaker's turn (a voice tag, a line opening with a dash) is a block, as are the
    elements around it: it ends sentences and stays where it is."""
    pairs = _pairs(tokens)
    turns = [start for kind, start, _, name in tokens if kind == "turn" or name == _VOICE]
    elements: dict[int, Element] = {}
    items = []
    for index, (kind, start, end, name) in enumerate(tokens):
        if kind == "open" and index in pairs:
            close = tokens[pairs[index]]
            block = name == _VOICE or any(end <= at < close[1] for at in turns)
            element = Element(name, start, block=block, open_end=end, close_start=close[1],
                              close_end=close[2])
            elements[pairs[index]] = element
            items.append(Item("open", start, end, element=element))
        elif kind == "close" and index in elements:
            items.append(Item("close", start, end, element=elements[index]))
        elif kind in ("text", "entity"):
            raw = text[start:end]
            items.append(Item("text", start, end, html.unescape(raw) if kind == "entity"
                              else raw))
        else:
            piece = Piece(start, end, text[start:end], True) if kind == "timestamp" else None
            items.append(Item("point", start, end, block=kind == "turn" or name == _VOICE,
                              space=name == "br", piece=piece))
    if placeholders:
        items = with_pieces(text, items, KINDS if format == "srt" else MARKUP_KINDS)
    return items


def read_cue_text(text: str, format: str, placeholders: bool = True) -> CueText:
    """The sentences of a cue's text, and whether ellipses open or close it.

    Args:
        text: the cue's text as written (its lines joined with their line ends).
        format: `srt` or `vtt` (which tags it has, whether it has entities).
        placeholders: carry `%s`, `{0}`... across as standalone pieces.
    """
    tokens = _tokens(text, format)
    if not tokens:
        return CueText([])
    items = _items(text, tokens, format, placeholders)
    units = [unit for run in block_runs(items, True) for unit in block_units(text, run, True)]
    kinds = [kind for kind, start, end, _ in tokens
             if kind == "ellipsis" or (kind in ("text", "entity") and text[start:end].strip())]
    return CueText(units, kinds[:1] == ["ellipsis"], kinds[-1:] == ["ellipsis"])


def _continues(before: CueText, after: CueText) -> bool:
    """Whether the next cue's first sentence goes on with the last sentence of the cue
    before it (see `documents.subtitles`)."""
    head, tail = before.units[-1].words, after.units[0].words
    if tail[0].startswith(_DASHES):
        return False
    if before.closes or after.opens:  # `I was going to...` `...the market.`
        return after.opens or tail[0][:1].islower()
    joined = " ".join(head)
    spans = sentence_spans(f"{joined} {' '.join(tail)}", split_lines=False)
    return all(start != len(joined) + 1 for start, _ in spans)


def cue_sentences(cues: Sequence[CueText], merge: bool = True) -> list[list[tuple[int, int]]]:
    """Each sentence for the model as its `(cue, unit)` parts, in file order.

    Args:
        cues: every cue of a file, in order.
        merge: join a sentence that does not end at its cue's end with the next cue's
            first (up to MAX_CUES_PER_SENTENCE cues); False: one unit, one sentence.
    """
    sentences: list[list[tuple[int, int]]] = []
    going_on = None  # the sentence of the cue before's last unit
    for cue, found in enumerate(cues):
        for index in range(len(found.units)):
            if (merge and index == 0 and going_on is not None
                    and len(going_on) < MAX_CUES_PER_SENTENCE
                    and _continues(cues[cue - 1], found)):
                going_on.append((cue, index))
            else:
                sentences.append([(cue, index)])
        going_on = sentences[-1] if found.units else None
    return sentences


# ---------------------------------------------------------------------------------------------
# A sentence's translation split over its cues.


def cue_boundaries(sizes: Sequence[int], words: Sequence[str], links,
                   max_chars: int | None = None) -> list[int]:
    """Where a sentence's translation is cut between its cues (or a cue's lines).

    Args:
        sizes: source words in each cue's part of the sentence, in order.
        words: the translation's words.
        links: `(source_word, target_word)` pairs over the whole sentence.
        max_chars: characters a part should not pass (lines of a cue); None: no limit.

    Returns:
        `len(sizes) + 1` target word offsets, 0 first and `len(words)` last, never
        decreasing: cue k gets words `[cuts[k], cuts[k + 1])`. Chosen by dynamic
        programming for, in this order: the fewest characters past `max_chars`; the
        most links inside their cue; the fewest cues that start with a word of bare
        punctuation; the least distance of each cut from the source's proportion; the
        later cuts (the earlier cues fuller). Every cue gets a word if there are enough.
    """
    parts, count, total = len(sizes), len(words), sum(sizes)
    starts = [sum(sizes[:k]) for k in range(parts)]
    owner = [k for k, size in enumerate(sizes) for _ in range(size)]
    inside = [[0] * (count + 1) for _ in range(parts)]  # links of cue k to target words < j
    for i, j in set(links):
        if 0 <= i < total and 0 <= j < count:
            inside[owner[i]][j + 1] += 1
    for row in inside:
        for j in range(count):
            row[j + 1] += row[j]
    chars = [0]  # characters of words < j, a space after each
    for word in words:
        chars.append(chars[-1] + len(word) + 1)
    bare = [not any(char.isalnum() for char in word) for word in words]
    least = 1 if count >= parts else 0
    best = [{0: ((0, 0, 0, 0.0), 0)}]  # per cue: cut after it -> (score, cut before it)
    for k in range(parts):
        reachable = {}
        last = count - least * (parts - 1 - k)
        for a, (score, _) in best[k].items():
            for b in range(a + least, last + 1) if k < parts - 1 else (count,):
                if b < a + least:
                    continue
                over = max(0, chars[b] - chars[a] - 1 - max_chars) if max_chars else 0
                opens_bare = k > 0 and a < count and bare[a]
                distance = abs(a - count * starts[k] / total) if k > 0 else 0.0
                value = (score[0] - over, score[1] + inside[k][b] - inside[k][a],
                         score[2] - opens_bare, score[3] - distance)
                if b not in reachable or value >= reachable[b][0]:  # ties: the later cut
                    reachable[b] = (value, a)
        best.append(reachable)
    cuts = [count]
    for k in range(parts, 0, -1):
        cuts.append(best[k][cuts[-1]][1])
    return cuts[::-1]


def split_translation(units: Sequence[Unit], result: SentenceResult) -> list[tuple]:
    """Each unit's part of a sentence's translation, the units being the sentence's parts
    in consecutive cues.

    Returns:
        Per unit `(text, links, matrix)`: its target words (`cue_boundaries`), the links
        between its words and them, and the soft word matrix's block (None without one).
    """
    words = result.text.split()
    links = tuple(result.word_alignment)
    matrix = getattr(result, "word_matrix", None)
    if len(units) == 1:
        return [(" ".join(words), links, matrix)]
    sizes = [len(unit.words) for unit in units]
    total = sum(sizes)
    shaped = matrix is not None and len(matrix) == len(words) and all(
        len(row) == total for row in matrix)
    cuts = cue_boundaries(sizes, words, links)
    parts, first = [], 0
    for k, size in enumerate(sizes):
        a, b = cuts[k], cuts[k + 1]
        local = tuple((i - first, j - a) for i, j in links
                      if first <= i < first + size and a <= j < b)
        part = [row[first:first + size] for row in matrix[a:b]] if shaped else None
        parts.append((" ".join(words[a:b]), local, part))
        first += size
    return parts


# ---------------------------------------------------------------------------------------------
# A cue's text written with its parts of the translations.


def _rewrapped(unit: Unit, text: str, rendered: str, spans: Sequence[tuple[int, int]],
               links) -> str:
    """`rendered` with the unit's line breaks: its words split over its lines as a sentence
    is over cues (`cue_boundaries`, lines of at most MAX_LINE_CHARS or the source's longest
    where they can), each break at the first space outside a tag there."""
    lo, hi = unit.word_spans[0][0], unit.word_spans[-1][1]
    breaks = list(_LINE_END.finditer(text, lo, hi))
    if not breaks or len(spans) < 2:
        return rendered
    line_of = [sum(found.start() < start for found in breaks) for start, _ in unit.word_spans]
    sizes = [line_of.count(line) for line in range(len(breaks) + 1)]
    longest = max(len(line) for line in _LINE_END.split(text[lo:hi]))
    cuts = cue_boundaries(sizes, [rendered[a:b] for a, b in spans], links,
                          max(MAX_LINE_CHARS, longest))
    chosen = {}  # target gap -> the line end put there
    for cut, found in zip(cuts[1:-1], breaks, strict=True):
        if 0 < cut < len(spans):
            chosen.setdefault(cut, found.group())
    for cut, newline in sorted(chosen.items(), reverse=True):
        at = _space_in(rendered, spans, cut)
        if at is not None:
            rendered = rendered[:at] + newline + rendered[at + 1:]
    return rendered


def _space_in(rendered: str, spans: Sequence[tuple[int, int]], gap: int) -> int | None:
    """The offset of the first space outside a tag between target words gap-1 and gap."""
    start, end = spans[gap - 1][1], spans[gap][0]
    masked = _TAG.sub(lambda m: "<" * len(m.group()), rendered[start:end])
    return next((start + k for k, char in enumerate(masked) if char.isspace()), None)


def render_cue_text(text: str, units: Sequence[Unit], parts: Sequence[tuple],
                    escape: bool) -> str:
    """A cue's text with each of its units replaced by its part of a translation.

    Args:
        text: the cue's text as written.
        units: `read_cue_text(text, ...).units`.
        parts: per unit, `(text, links, matrix)` (`split_translation`).
        escape: escape `& < >` in the translation (WebVTT); False for SRT.
    """
    pieces, cursor = [], 0
    for unit, (target, links, matrix) in zip(units, parts, strict=True):
        rendered, spans = render_unit(unit, target, links, matrix, escape=escape)
        pieces += [text[cursor:unit.region[0]], _rewrapped(unit, text, rendered, spans, links)]
        cursor = unit.region[1]
    pieces.append(text[cursor:])
    return "".join(pieces)
