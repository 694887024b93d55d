"""A WordprocessingML paragraph (`<w:p>`) as inline markup, and back: `documents.docx`'s runs.

    paragraph = read_paragraph(p)       # p: an lxml <w:p>
    paragraph.markup                    # 'Click <r0>Save</r0><p0/> now.'
    plan = plan_markup(paragraph.markup, "xml", verbatim=paragraph_verbatim)
    write_paragraph(paragraph, plan.join(results).text)    # p rebuilt in place

The markup, planned as XML by `documents.markup`:
- Text: the `<w:t>` of the runs, escaped. The formatting (`<w:rPr>`) that holds
  most of the paragraph's text is its base and is written bare; each other one
  is a tag `<rK>...</rK>` around its text (neighbouring runs formatted alike are
  one), so that bold, italic, a style or a colour go to the aligned words. The
  text is written back as runs with a copy of the same `<w:rPr>`.
- Code, kept verbatim (`<kK>`, the `verbatim` hook of `plan_markup`): runs of a
  character style whose name has `Code` or `Verbatim` (pandoc's `VerbatimChar`,
  Word's `HTMLCode`), of a monospace font, or hidden (`<w:vanish/>`).
- `<cN>...</cN>`: an element holding runs (`hyperlink`, `sdt` content control,
  `ins` tracked insertion, `fldSimple`, `smartTag`, `customXml`, `moveTo`, `dir`,
  `bdo`), written again around what lands inside it, its attributes and
  properties (`sdtPr`, `r:id` of a link) copied.
- `<fN>...</fN>`: a complex field begun and ended at one level of the paragraph:
  its code (begin, `<w:instrText>`, separate) and its end around its result.
  A result with words (a TOC entry, a HYPERLINK or REF field's text) is
  translated; one without (`PAGE`'s number) is kept whole. A bookmark or a
  comment's range whose start and end are at one level is the same: its start
  and end around the words it marks.
- `<pN/>`: anything else, verbatim, once, at its aligned place: tabs and
  breaks (which stand for a space between words), drawings and text boxes (the
  paragraphs inside a text box are paragraphs of their own), symbols, note and
  comment references, the start or end of a bookmark or comment range met
  alone (a start never after its end), deleted text, equations, and the code
  of a field whose end is in another paragraph (a table of contents): what
  precedes the first word stays first.
- Left out of a paragraph rewritten: `<w:proofErr>`, `<w:lastRenderedPageBreak>`
  and `<w:softHyphen>`, proofing and layout hints that no longer hold for the
  French (Word computes them again).

Any element kept (a drawing, a field's code, a bookmark) is moved whole into the
new paragraph, so what it holds (a text box's paragraphs) stays its own.
"""

from __future__ import annotations

import copy
import dataclasses
import html
import re
from collections import Counter

from lxml import etree

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"


def _w(local: str) -> str:
    return f"{{{W}}}{local}"


_P, _R, _T, _RPR, _PPR = _w("p"), _w("r"), _w("t"), _w("rPr"), _w("pPr")
_FLDCHAR, _FLDCHAR_TYPE = _w("fldChar"), _w("fldCharType")
# Run content that stands for a space between words.
_SEPARATORS = frozenset(map(_w, ("tab", "br", "cr", "ptab")))
# Proofing and layout hints left out of a paragraph rewritten.
_DROPPED = frozenset(map(_w, ("proofErr", "lastRenderedPageBreak", "softHyphen")))
# Elements of a paragraph that hold runs; their property children are copied as they are.
_CONTAINERS = frozenset(map(_w, ("hyperlink", "sdt", "ins", "fldSimple", "smartTag",
                                 "customXml", "moveTo", "dir", "bdo")))
_SDT_CONTENT = _w("sdtContent")
# Start and end marks matched by `w:id`: an end never goes before its start.
_MARKS = {_w("bookmarkStart"): _w("bookmarkEnd"),
          _w("commentRangeStart"): _w("commentRangeEnd"), _w("permStart"): _w("permEnd")}
_ID = _w("id")
_MONOSPACE = frozenset({"courier", "courier new", "consolas", "menlo", "monaco",
                        "lucida console", "source code pro", "dejavu sans mono",
                        "liberation mono", "cascadia code", "cascadia mono", "fira code"})
_CODE_STYLE = re.compile(r"code|verbatim|preformatted", re.I)
_TOKEN = re.compile(r"<(/?)([rkpcf])(\d+)(/?)>|[^<]+")


class ParagraphError(ValueError):
    """A translated markup that does not give the paragraph back (a bug, never the file's)."""


@dataclasses.dataclass(frozen=True, eq=False)
class _Piece:
    """Something kept verbatim: a child of a run (`run` is the run), or an element of the
    paragraph or a container (`run` is None), moved whole."""

    run: etree._Element | None
    element: etree._Element


@dataclasses.dataclass(eq=False)
class _Box:
    """A container (`_CONTAINERS`) and what it holds."""

    element: etree._Element
    content: list


@dataclasses.dataclass(eq=False)
class _Pair:
    """Kept pieces around content: a complex field (its code, begin ... separate; its
    result; its end), or a bookmark or comment range (its start; what it marks; its end)."""

    start: list[_Piece]
    content: list
    end: list[_Piece]


@dataclasses.dataclass(eq=False)
class ParagraphMarkup:
    """A paragraph read as markup (see the module docstring).

    Attributes:
        element: the `<w:p>`.
        markup: the paragraph as XML markup, for `plan_markup`.
        base: the `<w:rPr>` of text outside a format tag (None: no properties).
        formats: per `K` of `<rK>`/`<kK>`, its `<w:rPr>` (None: none).
        points: per `N` of `<pN/>`, the pieces it stands for.
        boxes: per `N` of `<cN>`, the container.
        pairs: per `N` of `<fN>`, the field, bookmark or comment range.
    """

    element: etree._Element
    markup: str = ""
    base: etree._Element | None = None
    formats: list = dataclasses.field(default_factory=list)
    points: list[list[_Piece]] = dataclasses.field(default_factory=list)
    boxes: list[_Box] = dataclasses.field(default_factory=list)
    pairs: list[_Pair] = dataclasses.field(default_factory=list)


def paragraph_verbatim(name: str, attrs) -> bool:
    """`plan_markup`'s `verbatim` hook: code runs (`<kK>`) are kept as they are."""
    return name.startswith("k")


# ---------------------------------------------------------------------------------------------
# Reading: a paragraph's children as atoms (pieces, boxes, fields), then as markup.


def read_paragraph(p: etree._Element) -> ParagraphMarkup:
    """The paragraph `p` as markup; `p` is not changed. A paragraph of a code style
    (`SourceCode`, `HTMLPreformatted`) is read as markup without words."""
    paragraph = ParagraphMarkup(p)
    style = p.find(f"{_PPR}/{_w('pStyle')}")
    if style is not None and _CODE_STYLE.search(style.get(_w("val"), "")):
        return paragraph
    atoms = _grouped(_atoms(p))
    lengths, properties = Counter(), {}
    _count_text(atoms, lengths, properties)
    prose = [(n, key) for key, n in lengths.items() if not _is_code(properties[key])]
    base_key = max(prose)[1] if prose else None
    paragraph.base = properties.get(base_key)
    out: list[str] = []
    _write_atoms(atoms, paragraph, base_key, {}, out)
    paragraph.markup = "".join(out)
    return paragraph


def _atoms(parent: etree._Element) -> list:
    out = []
    for child in parent:
        if child.tag == _PPR or child.tag in _DROPPED:
            continue
        if child.tag == _R:
            out += [_Piece(child, sub) for sub in child
                    if sub.tag != _RPR and sub.tag not in _DROPPED
                    and not (sub.tag == _T and not sub.text)]
        elif child.tag in _CONTAINERS:
            holder = child.find(_SDT_CONTENT) if child.tag == _w("sdt") else child
            out.append(_Box(child, [] if holder is None else _atoms(holder)))
        else:
            out.append(_Piece(None, child))
    return out


def _field_char(atom) -> str | None:
    if isinstance(atom, _Piece) and atom.element.tag == _FLDCHAR:
        return atom.element.get(_FLDCHAR_TYPE)
    return None


def _field_end(atoms: list, start: int) -> tuple[int | None, int | None]:
    """`(separate, end)` of the field whose begin (or separate) is `atoms[start]`, at this
    level; None where absent."""
    separate = start if _field_char(atoms[start]) == "separate" else None
    depth = 0
    for j in range(start + 1, len(atoms)):
        kind = _field_char(atoms[j])
        if kind == "begin":
            depth += 1
        elif kind == "end" and depth:
            depth -= 1
        elif kind == "end":
            return separate, j
        elif kind == "separate" and not depth and separate is None:
            separate = j
    return separate, None


def _as_pieces(atoms: list) -> list[_Piece]:
    return [atom if isinstance(atom, _Piece) else _Piece(None, atom.element) for atom in atoms]


def _grouped(atoms: list) -> list:
    """Atoms with fields, bookmarks and comment ranges made pairs, at every level."""
    return _marks(_fields(atoms))


def _fields(atoms: list) -> list:
    """Atoms with each complex field made a `_Pair` (or its code one group of pieces)."""
    out, i = [], 0
    while i < len(atoms):
        atom = atoms[i]
        if _field_char(atom) in ("begin", "separate"):
            separate, end = _field_end(atoms, i)
            if separate is not None and end is not None:
                out.append(_Pair(_as_pieces(atoms[i:separate + 1]),
                                 _grouped(atoms[separate + 1:end]), [atoms[end]]))
                i = end + 1
                continue
            stop = next((k for k in (separate, end) if k is not None), len(atoms) - 1)
            out.append(_as_pieces(atoms[i:stop + 1]))  # a field's code, kept in one piece
            i = stop + 1
            continue
        if isinstance(atom, _Box):
            atom.content = _grouped(atom.content)
        out.append(atom)
        i += 1
    return out


def _marks(atoms: list) -> list:
    """Atoms with each bookmark or comment range whose start and end are both at this level
    made a `_Pair` around what it marks."""
    out, i = [], 0
    while i < len(atoms):
        atom = atoms[i]
        end_tag = _MARKS.get(atom.element.tag) if _is_bare(atom) else None
        mark = atom.element.get(_ID) if end_tag else None
        end = next((j for j in range(i + 1, len(atoms)) if _is_bare(atoms[j])
                    and atoms[j].element.tag == end_tag and atoms[j].element.get(_ID) == mark),
                   None) if end_tag else None
        if end is None:
            out.append(atom)
            i += 1
            continue
        out.append(_Pair([atom], _marks(atoms[i + 1:end]), [atoms[end]]))
        i = end + 1
    return out


def _is_bare(atom) -> bool:
    return isinstance(atom, _Piece) and atom.run is None


def _key(run: etree._Element | None) -> bytes:
    properties = None if run is None else run.find(_RPR)
    return b"" if properties is None else etree.tostring(properties)


def _is_text(atom) -> bool:
    return isinstance(atom, _Piece) and atom.run is not None and atom.element.tag == _T


def _count_text(atoms: list, lengths: Counter, properties: dict) -> None:
    """Characters of text per formatting key, and each key's `<w:rPr>`."""
    for atom in atoms:
        if _is_text(atom):
            key = _key(atom.run)
            lengths[key] += len(atom.element.text)
            properties.setdefault(key, atom.run.find(_RPR))
        elif isinstance(atom, _Box | _Pair):
            _count_text(atom.content, lengths, properties)


def _is_code(properties: etree._Element | None) -> bool:
    if properties is None:
        return False
    vanish = properties.find(_w("vanish"))
    if vanish is not None and vanish.get(_w("val"), "true") not in ("0", "false", "off"):
        return True
    style = properties.find(_w("rStyle"))
    if style is not None and _CODE_STYLE.search(style.get(_w("val"), "")):
        return True
    fonts = properties.find(_w("rFonts"))
    return fonts is not None and any(
        (fonts.get(_w(a)) or "").lower() in _MONOSPACE for a in ("ascii", "hAnsi"))


def _write_atoms(atoms: list, paragraph: ParagraphMarkup, base_key: bytes | None,
                 keys: dict[bytes, int], out: list[str]) -> None:
    i = 0
    while i < len(atoms):
        atom = atoms[i]
        if _is_text(atom):
            key, text = _key(atom.run), []
            while i < len(atoms) and _is_text(atoms[i]) and _key(atoms[i].run) == key:
                text.append(atoms[i].element.text)
                i += 1
            escaped = html.escape("".join(text), quote=False)
            if key == base_key:
                out.append(escaped)
                continue
            if key not in keys:
                keys[key] = len(paragraph.formats)
                paragraph.formats.append(atom.run.find(_RPR))
            k = keys[key]
            letter = "k" if _is_code(paragraph.formats[k]) else "r"
            out.append(f"<{letter}{k}>{escaped}</{letter}{k}>")
            continue
        if isinstance(atom, _Box):
            n = len(paragraph.boxes)
            paragraph.boxes.append(atom)
            out.append(f"<c{n}>")
            _write_atoms(atom.content, paragraph, base_key, keys, out)
            out.append(f"</c{n}>")
        elif isinstance(atom, _Pair):
            n = len(paragraph.pairs)
            paragraph.pairs.append(atom)
            out.append(f"<f{n}>")
            _write_atoms(atom.content, paragraph, base_key, keys, out)
            out.append(f"</f{n}>")
        else:
            pieces = atom if isinstance(atom, list) else [atom]
            out.append(f"<p{len(paragraph.points)}/>")
            paragraph.points.append(pieces)
            if _is_separator(pieces):
                out.append(" ")  # a tab or break parts words
        i += 1


def _is_separator(pieces: list[_Piece]) -> bool:
    return len(pieces) == 1 and pieces[0].run is not None and pieces[0].element.tag in _SEPARATORS


# ---------------------------------------------------------------------------------------------
# Writing: the translated markup as the paragraph's new children.


def write_paragraph(paragraph: ParagraphMarkup, markup: str) -> None:
    """Rebuilds the paragraph from its translated markup (from `paragraph.markup`'s plan).

    Raises:
        ParagraphError: `markup` does not hold each point, container and field of the
            paragraph once, properly nested (a bug: the projection keeps them).
    """
    tokens = _tokens(markup)
    _check(paragraph, tokens)
    tokens = _marks_in_order(paragraph, _without_space_at_separators(paragraph, tokens))
    p = paragraph.element
    for child in list(p):
        if child.tag != _PPR:
            p.remove(child)
    writer = _Writer(paragraph, p)
    for token in tokens:
        writer.feed(token)


def _tokens(markup: str) -> list:
    """`(closing, letter, number, empty)` per tag, the unescaped text (a str) between."""
    tokens = []
    for found in _TOKEN.finditer(markup):
        if found.group(2) is None:
            tokens.append(html.unescape(found.group(0)))
        else:
            tokens.append((found.group(1) == "/", found.group(2), int(found.group(3)),
                           found.group(4) == "/"))
    return tokens


def _check(paragraph: ParagraphMarkup, tokens: list) -> None:
    seen = Counter((t[0], t[1], t[2]) for t in tokens if isinstance(t, tuple) and t[1] in "pcf")
    wanted = Counter({(False, "p", n): 1 for n in range(len(paragraph.points))})
    for letter, count in (("c", len(paragraph.boxes)), ("f", len(paragraph.pairs))):
        for n in range(count):
            wanted[(False, letter, n)] = wanted[(True, letter, n)] = 1
    stack = []
    for token in tokens:
        if isinstance(token, tuple) and not token[3]:
            if not token[0]:
                stack.append(token[1:3])
            elif not stack or stack.pop() != token[1:3]:
                raise ParagraphError(f"Crossed tags in the translated markup: {tokens!r}")
    if seen != wanted or stack:
        raise ParagraphError(f"The translated markup does not hold each piece of the paragraph "
                             f"once. Received: {tokens!r}")


def _without_space_at_separators(paragraph: ParagraphMarkup, tokens: list) -> list:
    """Spaces next to a tab or break dropped: it parts the words itself."""
    tokens = list(tokens)
    for i, token in enumerate(tokens):
        if not (isinstance(token, tuple) and token[1] == "p"
                and _is_separator(paragraph.points[token[2]])):
            continue
        for step, strip in ((-1, str.rstrip), (1, str.lstrip)):
            j = i + step
            while 0 <= j < len(tokens) and isinstance(tokens[j], tuple) and tokens[j][1] in "rkc":
                j += step
            if 0 <= j < len(tokens) and isinstance(tokens[j], str):
                tokens[j] = strip(tokens[j], " ")
    return tokens


def _marks_in_order(paragraph: ParagraphMarkup, tokens: list) -> list:
    """A bookmark's (comment range's) end put back after its start where the alignment
    reversed them."""
    where = {}
    for i, token in enumerate(tokens):
        if isinstance(token, tuple) and token[1] == "p":
            pieces = paragraph.points[token[2]]
            if len(pieces) == 1 and pieces[0].run is None:
                element = pieces[0].element
                where[(element.tag, element.get(_ID))] = i
    tokens = list(tokens)
    for (tag, mark), start in where.items():
        end = where.get((_MARKS.get(tag), mark))
        if tag in _MARKS and end is not None and end < start:
            tokens[start], tokens[end] = tokens[end], tokens[start]
    return tokens


class _Writer:
    """Appends runs, containers and kept pieces to the paragraph as the tokens come."""

    def __init__(self, paragraph: ParagraphMarkup, p: etree._Element):
        self.paragraph = paragraph
        self.holders = [p]
        self.formats = [paragraph.base]
        self.text_run = None  # (holder, properties, <w:t>) text may be added to

    def feed(self, token) -> None:
        if isinstance(token, str):
            self._text(token)
            return
        closing, letter, n, _ = token
        if letter in "rk":
            if closing:
                self.formats.pop()
            else:
                self.formats.append(self.paragraph.formats[n])
        elif letter == "p":
            self._pieces(self.paragraph.points[n])
        elif letter == "f":
            pair = self.paragraph.pairs[n]
            self._pieces(pair.end if closing else pair.start)
        elif closing:
            self.holders.pop()
            self.text_run = None
        else:
            self._open(self.paragraph.boxes[n].element)

    def _open(self, element: etree._Element) -> None:
        """A copy of the container, its properties included, as the new holder."""
        new = etree.SubElement(self.holders[-1], element.tag, attrib=dict(element.attrib))
        holder = new
        for child in element:
            if child.tag == _SDT_CONTENT:
                holder = etree.SubElement(new, child.tag, attrib=dict(child.attrib))
            elif isinstance(child.tag, str) and child.tag.endswith(("Pr", "fldData")):
                new.append(copy.deepcopy(child))
        self.holders.append(holder)
        self.text_run = None

    def _text(self, text: str) -> None:
        if not text:
            return
        properties, holder = self.formats[-1], self.holders[-1]
        if self.text_run is not None and self.text_run[:2] == (holder, properties):
            t = self.text_run[2]
            t.text += text
        else:
            run = etree.SubElement(holder, _R)
            if properties is not None:
                run.append(copy.deepcopy(properties))
            t = etree.SubElement(run, _T)
            t.text = text
            self.text_run = (holder, properties, t)
        if t.text != t.text.strip():
            t.set(_XML_SPACE, "preserve")

    def _pieces(self, pieces: list[_Piece]) -> None:
        self.text_run = None
        holder = self.holders[-1]
        for piece in pieces:
            if piece.run is None:
                holder.append(piece.element)
                continue
            content = [c for c in piece.run if c.tag != _RPR and c.tag not in _DROPPED]
            if content == [piece.element]:
                holder.append(piece.run)  # the run as it was
                continue
            run = etree.SubElement(holder, _R, attrib=dict(piece.run.attrib))
            properties = piece.run.find(_RPR)
            if properties is not None:
                run.append(copy.deepcopy(properties))
            run.append(piece.element)
