"""Markdown files translated: the text of paragraphs, headings and table cells; the rest as written.

    document = read_markdown(Path("guide.md").read_bytes(), "guide.md")
    translated = translate_markdown(document, lambda s: translator.translate(s, options))
    Path("guide.fr.md").write_bytes(translated.data)       # nmt_cli/files.py writes atomically

Read as CommonMark with GitHub's tables and strikethrough, footnotes
(`[^1]`) and dollar math (`$x$`, `$$` blocks), by markdown-it-py.

What is translated:
- The inline content of every paragraph (in lists, block quotes and
  footnotes too), heading and table cell, and the titles and alt text of
  links and images written inline (`[text](url "title")`, `![alt](src)`).
- Inline Markdown goes the way of `nmt translate --format xml`
  (`documents.markdown_inline`): emphasis, strong emphasis,
  strikethrough, a link's text and raw HTML pairs (`<b>..</b>`) around the
  target words aligned to what they enclosed; code spans, autolinks, images,
  math, footnote references and other raw HTML verbatim, once each, at their
  aligned place. A link keeps its destination as written. Placeholders (`%s`,
  `{0}`) are carried across unless `placeholders=False`. The distinct
  sentences of the whole file are translated together, sorted by length,
  `batch_size` a call.
- Line wrapping: a paragraph wrapped over several lines is one text, and its
  translation is written on one line (up to its hard line breaks, which stay
  as written, each line's text translated on its own). Not re-wrapped at the
  source's width: a word wrapped to the start of a line can make block syntax
  (`-`, `1.`, `#`, `>`), the translation's lines would differ from the
  source's anyway, and Markdown renders both the same.
- The text written is escaped where Markdown would read it as syntax
  (`\\*`, `\\_`, `\\[`, `\\<`, `|` in tables; `-`, `#`, `1.` starting a line).
  Each text is read back: one whose Markdown would not give the same code,
  links, emphasis and HTML (a hard break the alignment put last, emphasis that
  no longer closes) stays English, counted in `MarkdownReport.left`.

Kept byte for byte: everything else. Fenced and indented code, HTML blocks,
math blocks, link reference definitions, front matter (YAML between `---`
lines, TOML between `+++` lines, at the top), thematic breaks, list markers
and block quote prefixes, a task's `[ ]`, line ends (CRLF too), a leading
byte-order mark, and the text of paragraphs without a word to translate.
The result is read back before it is given: the same blocks, each with the
same inline code, links, emphasis and HTML.

Refused (`MarkdownFileError`, a `ValueError`, naming the line): a file over
MAX_MARKDOWN_BYTES, not UTF-8, with a NUL, or nested deeper than MAX_NESTING
(where markdown-it would stop reading), and a text over a markup limit.

Not handled: reference definitions' titles and footnotes never referenced
stay English; `\\(..\\)` math is text; HTML blocks are not translated.

Nothing here imports TensorFlow: `translate` is any sentences -> results with
`.text` and `.word_alignment` (`Translator.translate`, a client's `translate`).
"""

from __future__ import annotations

import codecs
import dataclasses
import re
from collections.abc import Mapping
from xml.parsers import expat

from markdown_it import MarkdownIt
from markdown_it.common.utils import MD_TRIM_CHARS
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.footnote import footnote_plugin

from documents.file_batches import FileOptions, Progress, translate_plans
from documents.markdown_inline import (
    Break,
    InlineText,
    Piece,
    Source,
    Title,
    TrackedInline,
    math_context,
    pieces,
    render,
    signature,
    split_row,
    text_of,
    trimmed,
    unescaped_cell,
)
from documents.markup import MarkupError, plan_document, plan_markup
from documents.sentences import Translate

MAX_MARKDOWN_BYTES = 5_000_000  # bytes of one file
MAX_NESTING = 50  # block containers (or inline elements) inside each other
# Front matter: its first line -> the lines that may end it.
_FRONT_MATTER = {"---": ("---", "..."), "+++": ("+++",)}
_TASK = re.compile(r"\[[ xX]\](?=[ \t]|\Z)")
_LINE_END = re.compile(r"\r\n|\r|\n")
_BLANK = " \t\n"
# Block tokens whose content is kept (compared by the check).
_CONTENT_BLOCKS = frozenset({"fence", "code_block", "html_block", "math_block",
                             "math_block_label"})

Span = tuple[int, int]


class MarkdownFileError(ValueError):
    """A file that cannot be read or translated as Markdown; the message names the file
    and line and what to change."""


@dataclasses.dataclass(frozen=True)
class MarkdownOptions(FileOptions):
    """How a Markdown file is translated: placeholders, batch_size (`FileOptions`)."""


@dataclasses.dataclass(frozen=True)
class MarkdownSegment:
    """A block's text up to a hard line break (or its end): written in place, on one line.

    Attributes:
        span: `(start, end)` in `MarkdownDocument.text`, first to last character.
        text: its inline content as markup (`documents.markdown_inline`).
        line_start: it starts a line (paragraphs; not headings or cells).
        table: it is a table cell's.
        heading: it is an ATX heading's (`# Title`).
        signature: what its Markdown must read back as (`markdown_inline.signature`).
    """

    span: Span
    text: InlineText
    line_start: bool
    table: bool
    heading: bool
    signature: tuple


@dataclasses.dataclass(frozen=True)
class MarkdownBlock:
    """A paragraph, heading or table cell with text.

    Attributes:
        kind: `paragraph`, `heading` or `cell`.
        line: its first line, 1-based.
        segments: its text, split at hard line breaks.
    """

    kind: str
    line: int
    segments: tuple[MarkdownSegment, ...]


@dataclasses.dataclass(frozen=True)
class MarkdownDocument:
    """A Markdown file as read.

    Attributes:
        name: for messages (the path).
        bom: the UTF-8 byte-order mark the file starts with (b"" if none), written back.
        text: the file, decoded (the mark aside).
        blocks: in file order (a table's cells row by row).
        structure: what the translated file must read back as (`_structure`).
        env: markdown-it's environment: the link reference definitions and footnotes.
        token_lines: per block token of `structure`, its line (or the last one before).
    """

    name: str
    bom: bytes
    text: str
    blocks: tuple[MarkdownBlock, ...]
    structure: tuple
    env: Mapping = dataclasses.field(compare=False, repr=False)
    token_lines: tuple[int, ...] = dataclasses.field(default=(), compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class MarkdownReport:
    """What a translation did.

    Attributes:
        blocks: paragraphs, headings and table cells with text.
        written: blocks given a translation (all or some of their text).
        left: texts left English: their translation would not read back as the same
            Markdown (see the module docstring).
        texts: distinct texts translated (block texts, titles and alt texts).
        sentences: distinct sentences the model read.
    """

    blocks: int
    written: int
    left: int
    texts: int
    sentences: int


@dataclasses.dataclass(frozen=True)
class MarkdownTranslation:
    """The translated file (`data`, UTF-8) and what was done."""

    data: bytes
    report: MarkdownReport


# ---------------------------------------------------------------------------------------------
# Reading.


def read_markdown(data: bytes, name: str = "<Markdown file>") -> MarkdownDocument:
    """Reads a Markdown file.

    Args:
        data: the file's bytes (UTF-8, with or without a byte-order mark).
        name: the file's name, for error messages.

    Raises:
        MarkdownFileError: over MAX_MARKDOWN_BYTES, not UTF-8 text, a NUL character, or
            nested deeper than MAX_NESTING (each names the line).
    """
    if len(data) > MAX_MARKDOWN_BYTES:
        line = data.count(b"\n", 0, MAX_MARKDOWN_BYTES) + 1
        raise MarkdownFileError(f"{name}:{line}: the file has {len(data):,} bytes, more than "
                                f"MAX_MARKDOWN_BYTES={MAX_MARKDOWN_BYTES:,} (reached at this "
                                "line): split it into smaller files")
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    try:
        text = data[len(bom):].decode("utf-8")
    except UnicodeDecodeError as error:
        at = error.start + len(bom)
        line = data.count(b"\n", 0, at) + 1
        raise MarkdownFileError(f"{name}:{line}: not UTF-8 text (byte {at}): is it a Markdown "
                                "file? Convert it to UTF-8 (iconv -t UTF-8)") from None
    if "\0" in text:
        raise MarkdownFileError(f"{name}:{_line_of(text, text.index(chr(0)))}: a NUL character: "
                                "is it a Markdown file (text)?")
    lines = _line_spans(text)
    bodies = [text[start:end] for start, end in lines]
    front = _front_matter(bodies)
    read = ["" if k < front else body for k, body in enumerate(bodies)]  # front matter blank
    source = "\n".join(read)
    rows: dict[int, int] = {}
    md = _parser(rows)
    env: dict = {}
    tokens = md.parse(source, env)
    _check_nesting(tokens, name)
    reader = _Reader(name, text, lines, read, rows, md.inline.spans)
    blocks = tuple(block for block in reader.blocks(tokens) if block.segments)
    structure = _structure(tokens, env, "".join(bodies[:front]))
    token_lines, line = [], 1
    for token in tokens:
        line = token.map[0] + 1 if token.map else line
        token_lines.append(line)
    return MarkdownDocument(name, bom, text, blocks, structure, env, tuple(token_lines))


def _line_of(text: str, at: int) -> int:
    return len(_LINE_END.findall(text, 0, at)) + 1


def _line_spans(text: str) -> list[Span]:
    """`(start, end)` of each line's text (its line end aside), as markdown-it counts lines."""
    spans, start = [], 0
    for found in _LINE_END.finditer(text):
        spans.append((start, found.start()))
        start = found.end()
    spans.append((start, len(text)))
    return spans


def _front_matter(bodies: list[str]) -> int:
    """The number of lines of front matter at the top (0 if none)."""
    if not bodies or bodies[0].rstrip() not in _FRONT_MATTER:
        return 0
    ends = _FRONT_MATTER[bodies[0].rstrip()]
    return next((k + 1 for k in range(1, len(bodies)) if bodies[k].rstrip() in ends), 0)


def _parser(rows: dict[int, int] | None = None) -> MarkdownIt:
    """markdown-it as this module reads Markdown, its inline parser a `TrackedInline`;
    `rows` gets the start in the source of each table row's text (after its indent)."""
    md = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING})
    md.inline = TrackedInline(md.inline)
    md.enable(["table", "strikethrough"]).disable("text_join")  # text_join: escapes as tokens
    md.use(footnote_plugin, inline=False)
    md.use(dollarmath_plugin, allow_space=False, allow_digits=False, double_inline=True)
    if rows is not None:
        rule = md.block.ruler.__rules__[md.block.ruler.__find__("table")]
        table = rule.fn

        def noted(state, start: int, end: int, silent: bool) -> bool:
            found = table(state, start, end, silent)
            if found and not silent:
                for line in range(start, state.line):
                    rows[line] = state.bMarks[line] + state.tShift[line]
            return found

        md.block.ruler.at("table", noted, {"alt": list(rule.alt)})
    return md


def _check_nesting(tokens: list[Token], name: str) -> None:
    """Raises MarkdownFileError where markdown-it stopped reading: MAX_NESTING reached."""
    for token in tokens:
        deepest = [token] if token.nesting == 1 else []
        deepest += [child for child in token.children or [] if child.nesting == 1]
        if any(t.level >= MAX_NESTING - 1 for t in deepest):
            line = token.map[0] + 1 if token.map else "?"
            raise MarkdownFileError(f"{name}:{line}: more than {MAX_NESTING - 1} block quotes, "
                                    "lists or inline elements nested inside each other (the "
                                    f"limit is MAX_NESTING={MAX_NESTING}): flatten them")


class _Reader:
    """Block tokens -> `MarkdownBlock`s, each character of their text placed in the file."""

    def __init__(self, name: str, text: str, lines: list[Span], read: list[str],
                 rows: dict[int, int], spans: Mapping[int, Span]):
        self.name, self.text, self.lines, self.rows, self.spans = name, text, lines, rows, spans
        self.source_starts = []  # where each line starts in markdown-it's source
        at = 0
        for body in read:
            self.source_starts.append(at)
            at += len(body) + 1

    def blocks(self, tokens: list[Token]):
        cell = 0
        for i, token in enumerate(tokens):
            if token.type == "tr_open":
                cell = 0
            elif token.type in ("th_open", "td_open"):
                cell += 1
            if token.type != "inline" or not token.content.strip(_BLANK) or not token.map:
                continue
            parent = tokens[i - 1]
            if parent.type in ("th_open", "td_open"):
                kind, positions = "cell", self._cell_positions(token, cell - 1)
            else:
                kind = "heading" if parent.type == "heading_open" else "paragraph"
                atx = kind == "heading" and parent.markup.startswith("#")
                positions = self._line_positions(token, atx)
            task = kind == "paragraph" and i >= 2 and tokens[i - 2].type == "list_item_open" \
                and bool(_TASK.match(token.content))
            segments = self._segments(token, kind, parent, positions, task)
            yield MarkdownBlock(kind, token.map[0] + 1, tuple(segments))

    def _error(self, line: int) -> MarkdownFileError:
        return MarkdownFileError(f"{self.name}:{line + 1}: could not find where markdown-it's "
                                 "text of this line is in it: please report this with the file")

    def _line_positions(self, token: Token, atx: bool) -> list[int]:
        """Per character of the token's content (and its end), its offset in the file."""
        positions = []
        parts = token.content.split("\n")
        for k, part in enumerate(parts):
            start, end = self.lines[token.map[0] + k]
            body = self.text[start:end]
            stripped = part.lstrip(" \t")  # markdown-it may have expanded tabs in an indent
            last = k == len(parts) - 1
            at = _ending(body, stripped, (" \t#" if atx else " \t") if last else "")
            if at is None:
                raise self._error(token.map[0] + k)
            base = start + at
            positions += [base] * (len(part) - len(stripped))
            positions += range(base, base + len(stripped) + 1)  # and the line's end
        return positions

    def _cell_positions(self, token: Token, index: int) -> list[int]:
        line = token.map[0]
        row_start = self.rows.get(line)
        if row_start is None:
            raise self._error(line)
        file_start = self.lines[line][0] + row_start - self.source_starts[line]
        row = self.text[file_start:self.lines[line][1]]
        cells = split_row(row.strip(MD_TRIM_CHARS))
        lead = len(row) - len(row.lstrip(MD_TRIM_CHARS))
        if cells and not cells[0]:
            cells = cells[1:]
        if cells and not cells[-1]:
            cells = cells[:-1]
        cell = trimmed(cells[index]) if index < len(cells) else []
        if "".join(char for char, _ in cell) != token.content:
            raise self._error(line)
        offsets = [file_start + lead + at for _, at in cell]
        return offsets + [offsets[-1] + 1]

    def _segments(self, token: Token, kind: str, parent: Token, positions: list[int],
                  task: bool) -> list[MarkdownSegment]:
        """The token's text split at hard line breaks outside any element (a task's `[ ]`
        aside)."""
        table = kind == "cell"
        found = pieces(token.children or [], Source(token.content, table), self.spans)
        skip = 3 if task and found and found[0].kind == "text" and found[0].span[1] >= 3 else 0
        segments, run, depth = [], [], 0
        for piece in found:
            if piece.kind == "break" and depth == 0:
                segments.append(run)
                run = []
                continue
            if piece.kind == "break":  # inside an element: kept as written, where it goes
                start, end = piece.span  # (a space after it: it ends a word)
                run += [Piece("point", (Break(self.text[positions[start]:positions[end]]),),
                              piece.span, piece.tokens), Piece("text", " ", (end, end))]
                continue
            depth += {"open": 1, "close": -1}.get(piece.kind, 0)
            run.append(piece)
        segments.append(run)
        out = []
        for run in segments:
            span = _trimmed_span(token.content, run, skip)
            if span is None:
                continue
            start, end = span
            out.append(MarkdownSegment(
                span=(positions[start], positions[end - 1] + 1), text=text_of(run),
                line_start=kind == "paragraph" or (kind == "heading" and
                                                   not parent.markup.startswith("#")),
                table=table, heading=kind == "heading" and parent.markup.startswith("#"),
                signature=signature([t for piece in run for t in piece.tokens])))
        return out


def _ending(body: str, part: str, trailing: str) -> int | None:
    """Where `part` ends `body` once characters of `trailing` are taken off its end."""
    end = len(body)
    while True:
        if body.endswith(part, 0, end) and end >= len(part):
            return end - len(part)
        if end == 0 or body[end - 1] not in trailing:
            return None
        end -= 1


def _trimmed_span(content: str, run: list[Piece], skip: int) -> Span | None:
    """The run's `(start, end)` in the content, blanks at either end aside; None if blank.

    The text before `skip` (a task's `[ ]`) is left out of the first run."""
    if not run:
        return None
    start, end = max(run[0].span[0], skip), run[-1].span[1]
    while start < end and content[start] in _BLANK:
        start += 1
    while end > start and content[end - 1] in _BLANK:
        end -= 1
    if start < end and run[0].kind == "text" and run[0].span[0] < skip:
        run[0] = dataclasses.replace(run[0], value=content[skip:run[0].span[1]],
                                     span=(skip, run[0].span[1]))
    return (start, end) if start < end else None


def _structure(tokens: list[Token], env: Mapping, front_matter: str) -> tuple:
    """What must read back the same: the front matter, the reference definitions, and each
    block token (its kind, markup, the content of code and HTML blocks, the signature of
    its inline content); not line numbers, nor text."""
    references = tuple(sorted((label, ref.get("href"), ref.get("title"))
                              for label, ref in env.get("references", {}).items()))
    blocks = []
    for token in tokens:
        content = token.content if token.type in _CONTENT_BLOCKS else ""
        inline = signature(token.children) if token.type == "inline" else ()
        label = (token.meta or {}).get("label") or ""
        blocks.append((token.type, token.tag, token.nesting, token.markup, token.info,
                       token.hidden, content, str(label), inline))
    return (front_matter, references, tuple(blocks))


# ---------------------------------------------------------------------------------------------
# Translating.


def translate_markdown(document: MarkdownDocument, translate: Translate,
                       options: MarkdownOptions = MarkdownOptions(), *,
                       progress: Progress | None = None) -> MarkdownTranslation:
    """Translates the file's text (see the module docstring).

    Args:
        document: from `read_markdown`.
        translate: sentences -> one result per sentence (`.text`, `.word_alignment`).
        options: placeholders, batch size.
        progress: called with `(sentences done, sentences)` after each call of `translate`.

    Returns:
        The file's new bytes and a `MarkdownReport`.

    Raises:
        MarkdownFileError: a text over a markup limit (`documents.markup`), or the
            result would not read back as meant (a bug: nothing is given).
    """
    plans = _plans(document, options)
    done, titles, sentences = _translated(plans, translate, options, progress)
    checker = _Checker(document.env)
    edits, written, left = [], 0, 0
    for block in document.blocks:
        changed, after = False, ""
        for segment in reversed(block.segments):  # each written knowing what follows it
            start, end = segment.span
            markdown = document.text[start:end]
            if _has_sentence(segment.text, plans):
                try:
                    translation = _rendered(segment, done, titles, after)
                except expat.ExpatError:  # markup the projection broke (a tag in `&gt;`)
                    translation = None
                if translation is not None and checker.same(translation, segment):
                    markdown = translation
                else:
                    left += 1
            if markdown != document.text[start:end]:
                edits.append((start, end, markdown))
                changed = True
            after = math_context(f"{markdown}\n{after}")
        written += changed
    data = document.bom + _spliced(document.text, edits).encode("utf-8")
    _check(document, data)
    texts = sum(bool(plan.sentences) for plan in plans.values())
    report = MarkdownReport(blocks=len(document.blocks), written=written, left=left,
                            texts=texts, sentences=sentences)
    return MarkdownTranslation(data, report)


def _plans(document: MarkdownDocument, options: MarkdownOptions) -> dict[tuple[str, str], object]:
    """Each distinct text's plan: `("xml", markup)` or `("title", title)` -> plan."""
    plans = {}
    for block in document.blocks:
        for segment in block.segments:
            for item in (segment.text, *segment.text.nested()):
                key = ("title", item.text) if isinstance(item, Title) else ("xml", item.xml)
                if key in plans:
                    continue
                if isinstance(item, Title):
                    plans[key] = plan_document(item.text, "text", options.placeholders)
                    continue
                try:
                    plans[key] = plan_markup(item.xml, "xml", placeholders=options.placeholders)
                except MarkupError as error:
                    raise MarkdownFileError(f"{document.name}:{block.line}: this {block.kind} "
                                            f"cannot be translated: {error}") from None
    return plans


def _translated(plans: dict, translate: Translate, options: MarkdownOptions,
                progress: Progress | None) -> tuple[dict[str, str], dict[str, str], int]:
    """`(markup by markup, titles by title, distinct sentences)` of the texts with a
    sentence."""
    joined, sentences = translate_plans({k: p for k, p in plans.items() if p.sentences},
                                        translate, options.batch_size, progress)
    done, titles = {}, {}
    for (kind, key), translation in joined.items():
        (titles if kind == "title" else done)[key] = translation.text
    return done, titles, sentences


def _has_sentence(text: InlineText, plans: Mapping) -> bool:
    return bool(plans[("xml", text.xml)].sentences) or any(
        plans[("title", item.text) if isinstance(item, Title) else ("xml", item.xml)].sentences
        for item in text.nested())


def _rendered(segment: MarkdownSegment, done: Mapping[str, str], titles: Mapping[str, str],
              after: str) -> str:
    markdown = render(segment.text, done, titles, line_start=segment.line_start,
                      table=segment.table, after=after)
    if segment.heading and (closing := re.search(r"(?:^|[ \t])(#+)$", markdown)):
        # `# Titre #` would close the heading: the last `#`s are text.
        markdown = f"{markdown[:closing.start(1)]}\\{markdown[closing.start(1):]}"
    return markdown


class _Checker:
    """Reads a segment's Markdown back as markdown-it reads inline content."""

    def __init__(self, env: Mapping):
        self.md = _parser()
        self.references = env.get("references", {})
        self.footnotes = tuple(env.get("footnotes", {}).get("refs", {}))

    def same(self, markdown: str, segment: MarkdownSegment) -> bool:
        """Whether `markdown` holds the same code, links, emphasis and HTML as the source."""
        if segment.table:
            markdown = unescaped_cell(markdown)
            if markdown is None:
                return False
        env = {"references": self.references,
               "footnotes": {"refs": dict.fromkeys(self.footnotes, -1), "list": {}}}
        inline = self.md.parseInline(markdown, env)[0]
        return signature(inline.children or []) == segment.signature


def _spliced(text: str, edits: list[tuple[int, int, str]]) -> str:
    """`text` with each `(start, end, new)` edit made (they do not overlap)."""
    pieces_, cursor = [], 0
    for start, end, new in sorted(edits, key=lambda edit: edit[:2]):
        pieces_ += [text[cursor:start], new]
        cursor = end
    pieces_.append(text[cursor:])
    return "".join(pieces_)


def _check(document: MarkdownDocument, data: bytes) -> None:
    """Raises MarkdownFileError where `data` does not read back with the blocks of the file
    (`_structure`)."""
    again = read_markdown(data, document.name)
    if again.structure == document.structure:
        return
    old, new = document.structure, again.structure
    if old[:2] != new[:2]:
        where = "the front matter or the link reference definitions"
    else:
        index = next((k for k, (a, b) in enumerate(zip(old[2], new[2], strict=False))
                      if a != b), min(len(old[2]), len(new[2])))
        line = document.token_lines[min(index, len(document.token_lines) - 1)]
        where = f"the Markdown from line {line} on"
    raise MarkdownFileError(f"{document.name}: {where} would not read back as it was, so "
                            "nothing was written; please report this with the file")
