"""The inline content of a Markdown block as markup for `documents.markup`, and back.

`documents.markdown` reads a file with markdown-it-py, whose tokens say
which lines each block came from but not where in its text each inline token
was. `TrackedInline` is markdown-it's inline parser with that written down: the
`(start, end)` of every token in the text it was parsed from.

With it, a block's inline tokens become an XML fragment for
`plan_markup(xml, "xml")`, its text decoded (escapes and entities) and each
piece of Markdown a tag that stands for the source as written:

    Press **Save** to keep [the file](a.md "Your file") and `git` it.
    ->  Press <e i="0">Save</e> to keep <e i="1">the file</e> and <x i="2"/> it.

- Paired `<e i>` (placed around the aligned target words): emphasis, strong
  emphasis, strikethrough, link text, raw HTML tags that open and close in the
  same text at the same level (`<b>..</b>`).
- Standalone `<x i/>` (kept verbatim, once, at their aligned place): code
  spans, autolinks, images, math, footnote references, other raw HTML, raw HTML
  elements holding code (`<code>`, `<kbd>`..., whole), and a hard line break
  inside an element (one outside any element splits the text in two).

`render` writes a translated fragment back as Markdown: each tag as its source
(a link's destination as written, its title translated), the text escaped
where Markdown would read it as syntax. `signature` is what must survive the
round trip: every token but text, compared as a multiset (a translation
reorders).
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from xml.parsers import expat

from markdown_it.common.utils import MD_TRIM_CHARS
from markdown_it.helpers import parseLinkDestination, parseLinkTitle
from markdown_it.parser_inline import ParserInline
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from documents.parsing import HTML_OPAQUE, HTML_VOID

Span = tuple[int, int]
# Raw HTML elements whose content is code, kept whole with their tags.
OPAQUE_HTML = HTML_OPAQUE | {"kbd", "samp", "var"}
# Tokens whose content is Markdown's to keep (compared by `signature`).
_KEPT_CONTENT = frozenset({"code_inline", "html_inline", "math_inline", "math_inline_double"})
_NOT_SIGNED = frozenset({"text", "text_special", "softbreak"})
_EMPHASIS_OPEN = frozenset({"em_open", "strong_open", "s_open"})
_EMPHASIS_CLOSE = frozenset({"em_close", "strong_close", "s_close"})
_OPEN_TAG = re.compile(r"<([A-Za-z][A-Za-z0-9-]*)(?:\s[^>]*)?>\Z", re.S)
_CLOSE_TAG = re.compile(r"</([A-Za-z][A-Za-z0-9-]*)\s*>\Z")
# Characters XML 1.0 cannot hold: kept as standalone tags.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]+")
_PUNCTUATION = re.compile(r"[^\w\s]+")
_LINE_START = re.compile(r"(?:([#>+=-]|\$(?=\$))|(\d{1,9})([.)]))")  # `$$`: a math block


# ---------------------------------------------------------------------------------------------
# Where each inline token came from.


class _TrackedState(StateInline):
    """markdown-it's inline state, telling its parser of every token it makes."""

    def __init__(self, src, md, env, tokens, tracker: TrackedInline):
        super().__init__(src, md, env, tokens)
        self.tracker = tracker

    def pushPending(self) -> Token:  # noqa: N802 (markdown-it's name)
        token = super().pushPending()
        self.tracker.flushed.add(id(token))
        self.tracker.made.append(token)
        return token

    def push(self, ttype, tag, nesting) -> Token:
        token = super().push(ttype, tag, nesting)
        self.tracker.at[id(token)] = self.pos
        self.tracker.made.append(token)
        return token


class TrackedInline(ParserInline):
    """markdown-it's inline parser (its rules, `rulers_of`'s), noting each token's span.

    Attributes:
        spans: `id(token) -> (start, end)` in the text the token was parsed from,
            for every token a rule made (not for plain text).
    """

    def __init__(self, rulers_of: ParserInline):
        super().__init__()
        self.ruler, self.ruler2 = rulers_of.ruler, rulers_of.ruler2
        self.spans: dict[int, Span] = {}
        self.at: dict[int, int] = {}  # id(token) -> the position when it was pushed
        self.flushed: set[int] = set()  # ids of plain text tokens
        self.made: list[Token] = []  # every token, so that no id is reused while parsing

    def parse(self, src, md, env, tokens) -> list[Token]:
        state = _TrackedState(src, md, env, tokens, self)
        self.tokenize(state)
        for rule in self.ruler2.getRules(""):
            rule(state)
        return state.tokens

    def tokenize(self, state) -> None:
        """markdown-it's loop, with each rule's span noted."""
        rules = self.ruler.getRules("")
        end = state.posMax
        max_nesting = state.md.options["maxNesting"]
        while state.pos < end:
            start, count = state.pos, len(state.tokens)
            if state.level < max_nesting and any(rule(state, False) for rule in rules):
                if state.pos <= start:
                    raise RuntimeError("inline rule didn't increment state.pos")
                self._note(state, start, count)
                if state.pos >= end:
                    break
                continue
            state.append_pending(state.src[state.pos])
            state.pos += 1
        if state.pending:
            state.pushPending()

    def _note(self, state, start: int, count: int) -> None:
        new = [t for t in state.tokens[count:]
               if id(t) not in self.spans and id(t) not in self.flushed]
        if not new:
            return
        first = new[0]
        if first.type == "link_open" and first.markup != "autolink":
            # `[` up to the label; `](destination "title")` (or `][label]`) after it.
            self.spans[id(first)] = (start, self.at[id(first)])
            self.spans[id(new[-1])] = (self.at[id(new[-1])], state.pos)
        elif first.type == "text":  # delimiters of emphasis or strikethrough, in order
            for token in new:
                self.spans[id(token)] = (start, start + len(token.content))
                start += len(token.content)
        else:
            for token in new:
                self.spans[id(token)] = (start, state.pos)


# ---------------------------------------------------------------------------------------------
# Tokens -> markup with tags standing for the Markdown.


@dataclasses.dataclass(frozen=True)
class Title:
    """A link's or image's title: translated as plain text.

    Attributes:
        text: the title, decoded.
        opener: `"`, `'` or `(`; closer: `"`, `'` or `)`.
        raw: as written, delimiters included.
    """

    text: str
    opener: str
    closer: str
    raw: str


@dataclasses.dataclass(frozen=True)
class Break:
    """A hard line break inside an element, as written (the next line's indent included)."""

    raw: str


@dataclasses.dataclass(frozen=True)
class Element:
    """What an `<e i>` stands for: its opening source and its closing template."""

    open: str
    close: tuple


@dataclasses.dataclass(frozen=True)
class InlineText:
    """Markdown inline content as markup for `plan_markup(xml, "xml")`.

    Attributes:
        xml: the text (decoded, XML-escaped) with `<e i="N">` and `<x i="N"/>` tags.
        parts: per `N`: an `Element` for `<e>`, a template for `<x/>`. A template
            is a tuple of source strings, `InlineText` (an image's alt text),
            `Title` and `Break`.
    """

    xml: str
    parts: tuple

    def nested(self):
        """Every `InlineText` and `Title` inside its parts, depth first."""
        for part in self.parts:
            for item in (*part.close, part.open) if isinstance(part, Element) else part:
                if isinstance(item, Title):
                    yield item
                elif isinstance(item, InlineText):
                    yield item
                    yield from item.nested()


@dataclasses.dataclass(frozen=True)
class Piece:
    """One piece of inline content: kind `text`, `open`, `close`, `point` or `break`.

    `value`: the text, the opening source, or a template; a break's `span` is
    from its marker (`\\` or the spaces) to the next line's first character.
    """

    kind: str
    value: object
    span: Span
    tokens: tuple[Token, ...] = ()


class Source:
    """The text tokens were parsed from, and how a span of it is written back on one line.

    Args:
        content: the inline content (a block's, or an image's alt text).
        table: it is a table cell's, whose `|` were written `\\|`.
    """

    def __init__(self, content: str, table: bool):
        self.content, self.table = content, table

    def raw(self, start: int, end: int) -> str:
        # A line end is a space to Markdown inline (markdown-it's code spans read it so).
        text = self.content[start:end].replace("\n", " ")
        return text.replace("|", "\\|") if self.table else text


def pieces(tokens: Sequence[Token], source: Source, spans: Mapping[int, Span],
           alt: bool = False) -> list[Piece]:
    """The inline tokens of `source` as pieces in text order (text between tokens included).

    Args:
        tokens: markdown-it's children of one inline token (or an image's).
        source: their text.
        spans: from `TrackedInline.spans`.
        alt: an image's alt text: hard breaks are spaces.
    """
    content, out, cursor, opened = source.content, [], 0, []
    pairs = _html_pairs(tokens)
    closes = set(pairs.values())
    i = 0
    while i < len(tokens):
        token = tokens[i]
        span = spans.get(id(token))
        if span is None or token.type == "text":
            i += 1
            continue
        start, end = _markup_span(token, span)
        gap = content[cursor:start]
        if token.type in ("softbreak", "hardbreak"):
            gap = gap.rstrip(" \t")
        if gap:
            out.append(Piece("text", gap, (cursor, cursor + len(gap))))
        used = (token,)
        if token.type == "text_special":
            piece = Piece("text", token.content, (start, end))
        elif token.type == "softbreak" or (token.type == "hardbreak" and alt):
            piece = Piece("text", " ", (start, end))
        elif token.type == "hardbreak":
            piece = Piece("break", None, (cursor + len(gap), end))
        elif token.type in _EMPHASIS_OPEN or (token.type == "link_open"
                                              and token.markup != "autolink"):
            opened.append(token)
            piece = Piece("open", source.raw(start, end), (start, end))
        elif token.type in _EMPHASIS_CLOSE:
            opened.pop()
            piece = Piece("close", (source.raw(start, end),), (start, end))
        elif token.type == "link_close":
            title = opened.pop().attrGet("title")
            piece = Piece("close", _tail(source.raw(start, end), title), (start, end))
        elif token.type == "image":
            label_end = start + 2 + len(token.content)
            alt_text = text_of(pieces(token.children or [], Source(token.content, source.table),
                                      spans, alt=True))
            tail = _tail(source.raw(label_end, end), token.attrGet("title"))
            piece = Piece("point", ("![", alt_text, *tail), (start, end))
        elif i in pairs and _tag_name(token) in OPAQUE_HTML:
            close = pairs[i]
            end = spans[id(tokens[close])][1]
            used = tuple(tokens[i:close + 1])
            piece = Piece("point", (source.raw(start, end),), (start, end))
            i = close
        elif i in pairs or i in closes:
            kind = "open" if i in pairs else "close"
            raw = source.raw(start, end)
            piece = Piece(kind, raw if kind == "open" else (raw,), (start, end))
        else:  # code, autolink, math, footnote reference, other raw HTML
            if token.type == "link_open":  # an autolink: its text and link_close are in it
                used = tuple(tokens[i:i + 3])
                i += 2
            piece = Piece("point", (source.raw(start, end),), (start, end))
        out.append(dataclasses.replace(piece, tokens=used))
        cursor = end
        i += 1
    if cursor < len(content):
        out.append(Piece("text", content[cursor:], (cursor, len(content))))
    return _glued(out, source)


def _glued(found: list[Piece], source: Source) -> list[Piece]:
    """Standalone pieces joined by punctuation alone (`` `a`/`b` ``, `` `f`(`x`) ``) as one:
    the model reads no word there, and the alignment would scatter them."""
    out = []
    for piece in found:
        if (piece.kind == "point" and len(out) >= 2 and out[-1].kind == "text"
                and _PUNCTUATION.fullmatch(out[-1].value) and out[-2].kind == "point"):
            between, first = out.pop(), out.pop()
            piece = Piece("point", (*first.value, source.raw(*between.span), *piece.value),
                          (first.span[0], piece.span[1]),
                          first.tokens + between.tokens + piece.tokens)
        out.append(piece)
    return out


def _markup_span(token: Token, span: Span) -> Span:
    """The span of an emphasis delimiter: markdown-it keeps a strong one on the token of
    its inner character (`**`: an opener's second, a closer's first)."""
    start, end = span
    if token.type in _EMPHASIS_OPEN:
        return end - len(token.markup), end
    if token.type in _EMPHASIS_CLOSE:
        return start, start + len(token.markup)
    return span


def _tag_name(token: Token) -> str:
    found = _OPEN_TAG.match(token.content) or _CLOSE_TAG.match(token.content)
    return found.group(1).lower() if found else ""


def _html_pairs(tokens: Sequence[Token]) -> dict[int, int]:
    """`{start tag's index: end tag's index}` of raw HTML elements opened and closed at the
    same level (so that they nest with the Markdown around them)."""
    pairs, opened = {}, []
    for i, token in enumerate(tokens):
        if token.type != "html_inline":
            continue
        if _CLOSE_TAG.match(token.content):
            name = _tag_name(token)
            for k in range(len(opened) - 1, -1, -1):
                j, other = opened[k]
                if other == name and tokens[j].level == token.level:
                    pairs[j] = i
                    del opened[k:]
                    break
        elif (_OPEN_TAG.match(token.content) and not token.content.endswith("/>")
              and _tag_name(token) not in HTML_VOID):
            opened.append((i, _tag_name(token)))
    return pairs


def _tail(raw: str, title: str | None) -> tuple:
    """A link's or image's `](destination "title")` as a template with its title a `Title`;
    as written where it has no title of its own (a reference's is in its definition)."""
    if not title or not raw.startswith("]("):
        return (raw,)
    pos = _skip_space(raw, 2)
    destination = parseLinkDestination(raw, pos, len(raw))
    if not destination.ok:
        return (raw,)
    pos = _skip_space(raw, destination.pos)
    found = parseLinkTitle(raw, pos, len(raw))
    if not found.ok or found.str != title:
        return (raw,)
    return (raw[:pos], Title(found.str, raw[pos], raw[found.pos - 1], raw[pos:found.pos]),
            raw[found.pos:])


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\n":
        pos += 1
    return pos


def text_of(found: Sequence[Piece]) -> InlineText:
    """The markup of `found` (pieces without a top-level break) and what its tags stand for."""
    xml, parts, stack = [], [], []
    for piece in found:
        if piece.kind == "text":
            at = 0
            for bad in _NOT_XML.finditer(piece.value):
                xml.append(_xml_escaped(piece.value[at:bad.start()]))
                xml.append(f'<x i="{len(parts)}"/>')
                parts.append((bad.group(),))
                at = bad.end()
            xml.append(_xml_escaped(piece.value[at:]))
        elif piece.kind == "open":
            stack.append(len(parts))
            xml.append(f'<e i="{len(parts)}">')
            parts.append([piece.value, ()])
        elif piece.kind == "close":
            parts[stack.pop()][1] = piece.value
            xml.append("</e>")
        else:
            xml.append(f'<x i="{len(parts)}"/>')
            parts.append(piece.value)
    parts = [Element(p[0], p[1]) if isinstance(p, list) else p for p in parts]
    return InlineText("".join(xml), tuple(parts))


def _xml_escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# ---------------------------------------------------------------------------------------------
# Markup -> Markdown.


def render(text: InlineText, done: Mapping[str, str], titles: Mapping[str, str], *,
           line_start: bool, table: bool, in_link: bool = False, after: str = "") -> str:
    """The Markdown of `text` on one line (but for its `Break`s), translated where `done`
    has its markup and `titles` its titles.

    Args:
        text: from `text_of`.
        done: translated markup by source markup (`InlineText.xml`).
        titles: translated titles by title.
        line_start: it starts a line (a paragraph): block syntax there is escaped.
        table: it is a table cell's: `|` is escaped.
        in_link: it is inside a link's brackets (an image's alt text): `]` is escaped.
        after: the Markdown that follows it in its block (inline math may close there).
    """
    out, stack = [], []  # out: (kind, Markdown, inside a link's brackets)

    def start(name, attrs):
        if name == "w":
            return
        part = text.parts[int(attrs["i"])]
        inside = in_link or any(p.open.startswith("[") for p in stack)
        if name == "e":
            stack.append(part)
            out.append(("open", part.open, inside))
        else:
            out.extend(_template(part, "point", done, titles, table, inside))

    def end(name):
        if name == "e":
            close = stack.pop().close
            inside = in_link or any(p.open.startswith("[") for p in stack)
            out.extend(_template(close, "close", done, titles, table, inside))

    def data(value):
        inside = in_link or any(p.open.startswith("[") for p in stack)
        out.append(("text", value, inside))

    parser = expat.ParserCreate()
    parser.StartElementHandler, parser.EndElementHandler = start, end
    parser.CharacterDataHandler = data
    parser.Parse(f"<w>{done.get(text.xml, text.xml)}</w>", True)
    return _written(out, line_start, table, after)


def _template(template: tuple, kind: str, done, titles, table: bool, in_link: bool
              ) -> list[tuple]:
    """A template's pieces `(kind, Markdown, in a link)`: `kind` (`point`, `close`) for
    each but a `Break`."""
    out = []
    for item in template:
        if isinstance(item, str):
            out.append((kind, item, in_link))
        elif isinstance(item, InlineText):  # an image's alt text
            out.append((kind, render(item, done, titles, line_start=False, table=table,
                                     in_link=True), in_link))
        elif isinstance(item, Title):
            out.append((kind, _title(item, titles.get(item.text), table), in_link))
        else:
            out.append(("break", item.raw, in_link))
    return out


def _written(out: list[tuple[str, str, bool]], line_start: bool, table: bool,
             after: str = "") -> str:
    """Pieces `(kind, Markdown, in a link)` joined: text escaped, a break with nothing
    around it dropped, a space between two pieces that the alignment put side by side and
    that would read as one (`` `a``b` ``, `**a****b**`)."""
    merged = []
    for kind, value, inside in out:
        if kind == "text" and merged and merged[-1][0] == "text" and merged[-1][2] == inside:
            merged[-1] = ("text", merged[-1][1] + value, inside)
        else:
            merged.append((kind, value, inside))
    filled = [k for k, (kind, value, _) in enumerate(merged) if kind != "break" and value.strip()]
    merged = [piece for k, piece in enumerate(merged)
              if piece[0] != "break" or (filled and filled[0] < k < filled[-1])]
    values = [value for _, value, _ in merged]
    written, at_start = [], line_start
    for k, (kind, value, inside) in enumerate(merged):
        if kind == "break":
            if written:
                written[-1] = written[-1].rstrip(" \t")
            written.append(value)
            at_start = True
            continue
        if at_start:
            value = value.lstrip(" \t")
        if kind == "text":
            following = "".join(values[k + 1:]) + after if "$" in value else ""
            value = escaped(value, at_start, table, following, inside)
        elif (written and value and k > 0 and merged[k - 1][0] in ("point", "close")
              and kind in ("point", "open") and written[-1][-1:] == value[0] in "`$*_~"):
            written.append(" ")
        if value:
            written.append(value)
            at_start = False
    return "".join(written).strip(" \t")


def escaped(text: str, line_start: bool = False, table: bool = False, after: str = "",
            in_link: bool = False) -> str:
    """Plain text as Markdown that reads as that text: `\\` before each character that
    could start syntax (emphasis, code, links, HTML, entities; `]` in a link's text, `|` in
    a table; a `$` that would open math closed by one after it, in `text` or in the Markdown
    `after` it), and before block syntax at the start of a line."""
    specials = r"[\\`*_\[~$]|<(?=[A-Za-z/!?])|&(?=#?[0-9A-Za-z]+;)" + (
        r"|\]" if in_link else "") + (r"|\|" if table else "")

    def one(found: re.Match) -> str:
        at, char = found.start(), found.group()
        if char == "_" and 0 < at < len(text) - 1 and (
                text[at - 1].isalnum() and text[at + 1].isalnum()):
            return "_"  # inside a word: never emphasis
        if char == "$" and not _opens_math(text + after, at):
            return "$"
        return "\\" + char

    text = re.sub(specials, one, text)
    if line_start and (found := _LINE_START.match(text)):
        if found.group(1):
            return "\\" + text
        return f"{found.group(2)}\\{text[found.end(2):]}"
    return text


def math_context(markdown: str) -> str:
    """`markdown` up to just after its first `$`: what `escaped` reads of the Markdown after
    a text (where math it opens would close)."""
    at = markdown.find("$")
    return "" if at < 0 else markdown[:at + 2]


def _opens_math(text: str, at: int) -> bool:
    """Whether the `$` at `text[at]` would open math, by the dollarmath plugin's rule as
    `documents.markdown` sets it: no space after it nor digit before it, and the first
    `$` after it (not escaped) with no space before it nor digit after it (`$$`: any)."""
    after = text[at + 1:at + 2]
    if not after or after.isspace() or (at > 0 and text[at - 1].isdigit()):
        return False
    if after == "$":
        return "$$" in text[at + 2:]
    end = at
    while (end := text.find("$", end + 1)) > 0:
        backslashes = len(text[:end]) - len(text[:end].rstrip("\\"))
        if backslashes % 2 == 0:
            return not text[end - 1].isspace() and not text[end + 1:end + 2].isdigit()
    return False


def _title(title: Title, done: str | None, table: bool) -> str:
    if done is None:
        return title.raw
    specials = {"\\", title.opener, title.closer} | ({"|"} if table else set())
    body = "".join("\\" + c if c in specials else c for c in " ".join(done.splitlines()))
    body = re.sub(r"&(?=#?[0-9A-Za-z]+;)", r"\\&", body)
    return f"{title.opener}{body}{title.closer}"


# ---------------------------------------------------------------------------------------------
# What a round trip keeps.


def signature(tokens: Sequence[Token]) -> tuple:
    """Every inline token but text, as a sorted multiset: code, HTML and math with their
    content, links with their destination, images with their source."""
    found = Counter()
    for token in tokens:
        if token.type in _NOT_SIGNED:
            continue
        content = token.content if token.type in _KEPT_CONTENT else ""
        target = token.attrGet("href") or token.attrGet("src") or ""
        label = (token.meta or {}).get("label") or ""
        found[(token.type, token.markup, content, str(target), str(label))] += 1
    return tuple(sorted(found.items()))


def unescaped_cell(text: str) -> str | None:
    """A table cell as written -> as markdown-it reads it (`\\|` -> `|`); None if it
    holds a `|` that would split it."""
    cells = split_row(text)
    return None if len(cells) != 1 else "".join(char for char, _ in cells[0])


def split_row(row: str) -> list[list[tuple[str, int]]]:
    """A table row's cells as markdown-it's `escapedSplit` reads them, each character with
    its offset in `row` (`\\|` is `|`, at the bar's offset)."""
    cells, current, escaped_bar = [], [], False
    for k, char in enumerate(row):
        if char == "|" and not escaped_bar:
            cells.append(current)
            current = []
            continue
        if char == "|":
            current.pop()  # the backslash
        current.append((char, k))
        escaped_bar = char == "\\"
    cells.append(current)
    return cells


def trimmed(cell: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """A cell without the whitespace markdown-it trims (`mdTrim`) at either end."""
    start, end = 0, len(cell)
    while start < end and cell[start][0] in MD_TRIM_CHARS:
        start += 1
    while end > start and cell[end - 1][0] in MD_TRIM_CHARS:
        end -= 1
    return cell[start:end]
