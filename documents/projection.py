"""Inline nodes put onto a translation through its word links: the last step of
`documents.markup`.

A sentence's elements and points (`_Node`s of a `Unit`) are placed among the
target words (`_place`, reading the links with the rules of `_Alignment`), and
the target sentence is written with every tag in place (`render_unit`). See
`documents.markup` for the rules; these are the package's internals.
"""

from __future__ import annotations

import dataclasses
import html
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from documents.offsets import word_spans
from documents.placeholders import Piece

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
    piece: Piece | None = None  # a point that is a verbatim piece of the text (a placeholder)
    stands_for_space: bool = False  # such a piece is the space between two words (`&nbsp;`)


@dataclasses.dataclass(frozen=True)
class Unit:
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
            if (suffix and len(word) > len(suffix) and word.endswith(suffix)
                    and not _OPEN_ENTITY.search(word, 0, len(word) - len(suffix))):
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


# The start of a character reference cut before its ";": `&gt` of an escaped `>`.
_OPEN_ENTITY = re.compile(r"&#?\w*$")


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


def render_unit(unit: Unit, target: str, links, matrix=None,
                escape: bool = True) -> tuple[str, list[Span]]:
    """The target sentence with the unit's tags in place, and each target word's span in it.

    Args:
        unit: the source sentence and its nodes.
        target: its translation, plain text.
        links: `(source_word, target_word)` pairs.
        matrix: the soft word matrix `(target words, source words)`, or None.
        escape: escape the target's `& < >` (markup); False for plain text.
    """
    spans = word_spans(target)
    words = [html.escape(target[a:b], quote=False) if escape else target[a:b] for a, b in spans]
    alignment = _Alignment(links, unit.words, [target[a:b] for a, b in spans], matrix)
    tokens: list = []
    _tokens(_place(unit.nodes, 0, len(words), alignment), 0, len(words), tokens)
    tokens = _split_punctuation(tokens, words)
    texts = _ordered_texts(unit.nodes, tokens)
    pieces, between, word_spans_out, length, k = [], [], [], 0, 0

    def emit(token, spaced: bool) -> None:
        nonlocal length
        kind, value = token
        text = value if kind in ("text", "suffix", "prefix", "space") else _tag_text(kind, value)
        if kind == "point":
            text = texts.get(id(value), text)
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
        if cut == len(between) and k > 0 and not _ends_with_space_piece(between):
            emit(("space", target[spans[k - 1][1]:spans[k][0]]), False)
        word_spans_out.append((length, length + len(token[1])))
        emit(token, False)
        between, k = [], k + 1
    for piece in between:
        if k > 0 and _is_piece(piece) and not piece[1].node.glued and not pieces[-1][-1:].isspace():
            emit(("space", " "), False)  # a placeholder after the last word stays a word
        emit(piece, False)
    return "".join(pieces), word_spans_out


def _is_piece(token) -> bool:
    return token[0] == "point" and token[1].node.piece is not None


def _ends_with_space_piece(between: list) -> bool:
    """Whether the tokens before a word end with a piece that is the space before it."""
    return bool(between) and _is_piece(between[-1]) and between[-1][1].node.stands_for_space


def _ordered_texts(nodes: Sequence[_Node], tokens: list) -> dict[int, str]:
    """Pieces that take their arguments in order (`%s`, `{}`: `Piece.ordered`) keep the
    source's order: the k-th such point of the output gets the k-th one's text.

    Returns:
        `id(placed point) -> text` for those points.
    """
    slots = [value for kind, value in tokens
             if kind == "point" and value.node.piece is not None and value.node.piece.ordered]
    ordered = [node.open for node in _preorder(nodes)
               if node.piece is not None and node.piece.ordered]
    return {id(placed): text for placed, text in zip(slots, ordered, strict=True)}


def _preorder(nodes: Sequence[_Node]):
    """The nodes and their descendants in source order."""
    for node in nodes:
        yield node
        yield from _preorder(node.children)


def _tag_text(kind: str, placed: _Placed) -> str:
    return placed.node.close if kind == "close" else placed.node.open
