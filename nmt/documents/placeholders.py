"""Placeholders in UI strings: what a translation must give back exactly, once each.

A localisation string such as `"Hello %s, you have {0} new messages."` is a
format string: the application fills `%s` and `{0}` in after translation, and
crashes (or shows the wrong value) if one is lost, repeated or mangled. This
module finds them; `nmt.documents.markup` takes them out of what the model
reads and puts them back through the word alignment, as it does standalone
tags (`<br>`, `<x/>`):

    find_placeholders("Hello %s, you have {0} new messages.")
    -> [Placeholder(6, 8, "%s", "printf"), Placeholder(19, 22, "{0}", "brace")]
    verbatim_pieces("Delete '%s'?")
    -> [Piece(7, 12, "'%s'?", ordered=True)]     # a word of placeholders and punctuation

Kinds (`KINDS`):
- `printf`: C/POSIX/Java/PHP/Objective-C conversions `%s %d %.2f %-5d %lld
  %@`, positional `%1$s`, Python's named `%(name)s`, and `%%` (a literal
  percent: it must come back as `%%` too, or the format string breaks).
- `brace`: Python/.NET/ICU arguments `{}`, `{0}`, `{name}`, `{0:N2}`,
  `{0,-10}`, `{name!r:>10}`, `{count, number}`, and double (or triple)
  braces `{{name}}` (Mustache, Handlebars, Jinja, Angular).
- `icu`: an ICU `{count, plural, one {# file} other {# files}}` (also
  `select`, `selectordinal`), kept whole: its inner messages stay English
  (translate each of them as a string of its own).
- `entity`: HTML character references `&amp;`, `&#39;`, `&#x27;`, `&nbsp;`
  (names of HTML5's list only). In HTML and XML documents they are the
  markup's own (decoded for the model, escaped again where needed), so
  `MARKUP_KINDS` leaves them out.

Deliberately not placeholders:
- `%` before a space or at the end (`50 % off`, `100%`): the space flag of
  printf (`% d`) is left out for this, so `20% off` is prose; `%` before a
  letter that is no conversion (`%w`), and strftime's `%Y %m %H`;
- a brace that opens no argument: `{` before a space or a quote (`{ and }`,
  `{"key": 1}`), a lone `{` or `}`, Python's escapes `{{` and `}}` alone;
- `&` that starts no reference (`Drag & drop`, `R&D`), a name HTML does not
  define (`&foo;`), and a reference without its `;` (`&amp`).
In prose, `%` right before a conversion letter (`20%off`) does read as a
placeholder: such requests can turn placeholders off.

Nothing here imports TensorFlow.
"""

from __future__ import annotations

import dataclasses
import html.entities
import re

KINDS = ("printf", "brace", "icu", "entity")
# In HTML and XML documents an entity is markup, decoded by the parser (nmt.documents.markup).
MARKUP_KINDS = ("printf", "brace", "icu")

_PRINTF = r"""
    (?P<percent>%%)                                     # a literal percent sign, written %%
  | %(?:(?P<position>[1-9][0-9]*)\$|\((?P<name>\w+)\))? # %1$s: argument 1; %(name)s: Python's
    [-+\#0']*                                           # flags; not the space flag: `50 % off`
    (?:[0-9]+|\*)?(?:\.(?:[0-9]+|\*))?                  # width, .precision: %5.2f, %.*s
    (?:hh|ll|[hlLqjzt])?                                # length: %ld, %lld, %zu
    [diouxXeEfFgGcsp@]                                  # conversion; %@ is Objective-C's object
"""
_ICU = r"""
    \{\s*\w+\s*,\s*(?:plural|selectordinal|select)\s*,  # {count, plural, ...
    (?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*                # sub-messages, braces nested 3 deep
    \}
"""
_BRACE = r"""
    \{\{\{[^{}]{1,100}\}\}\}                            # {{{raw}}} (Handlebars, unescaped)
  | \{\{\s*[^{}\s][^{}]{0,99}\}\}                        # {{name}}, {{ user.name }}; not {{ }}
  | \{(?P<field>[0-9]+|[^\W0-9]\w*(?:\.\w+|\[\w+\])*)?  # {}, {0}, {name}, {user.name}, {a[0]}
    (?:![rsa])?                                         # Python conversion: {name!r}
    (?:\s*,\s*[^{}]*|:[^{}]*)?                          # {0,-10} .NET; {count, number} ICU; {0:N2}
    \}
"""
_ENTITY = r"&(?:\#[0-9]{1,7}|\#[xX][0-9a-fA-F]{1,6}|(?P<entity>[A-Za-z][A-Za-z0-9]{1,31}));"
# One pattern, tried at each position in this order: a brace argument holding a `%`
# ({:%Y-%m-%d}) is one placeholder, and ICU's nested braces win over a plain argument.
_PATTERN = re.compile(
    rf"(?P<icu>{_ICU})|(?P<brace>{_BRACE})|(?P<printf>{_PRINTF})|(?P<entity_ref>{_ENTITY})",
    re.VERBOSE)
_GROUPS = {"icu": "icu", "brace": "brace", "printf": "printf", "entity_ref": "entity"}


@dataclasses.dataclass(frozen=True)
class Placeholder:
    """One placeholder of a text.

    Attributes:
        start, end: its characters, `text[start:end]`.
        text: as written.
        kind: one of `KINDS`.
        ordered: it takes the next argument in order (`%s`, `%d`, `{}`), so
            placeholders like it must keep their order in the translation;
            positional and named ones (`%1$s`, `{0}`, `%(name)s`) may move,
            and `%%` takes no argument.
    """

    start: int
    end: int
    text: str
    kind: str
    ordered: bool = False


@dataclasses.dataclass(frozen=True)
class Piece:
    """A span carried verbatim across a translation: a placeholder, or a whole
    whitespace-separated word made of placeholders and punctuation (`'%s'`,
    `(%d)`, `{n}/{n}`, `%d%%`).

    Attributes:
        start, end: its characters in the text.
        text: as written.
        ordered: it holds an `ordered` placeholder (see `Placeholder`).
    """

    start: int
    end: int
    text: str
    ordered: bool = False


def _check_kinds(kinds) -> tuple[str, ...]:
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown or isinstance(kinds, str):
        raise ValueError(f"kinds must be a collection of {KINDS}. Received: kinds={kinds!r}")
    return tuple(kinds)


def find_placeholders(text: str, kinds=KINDS) -> list[Placeholder]:
    """The placeholders of `text`, in order, never overlapping.

    Args:
        text: a UI string, sentence or document.
        kinds: the kinds to find (default: all of `KINDS`).

    Raises:
        ValueError: `kinds` names an unknown kind.
    """
    kinds = _check_kinds(kinds)
    found = []
    for match in _PATTERN.finditer(text):
        kind = _GROUPS[match.lastgroup]
        if kind not in kinds:
            continue
        if kind == "entity" and match["entity"] and f"{match['entity']};" not in _ENTITY_NAMES:
            continue
        ordered = (not (match["percent"] or match["position"] or match["name"])
                   if kind == "printf" else kind == "brace" and _auto_numbered(match))
        found.append(Placeholder(match.start(), match.end(), match[0], kind, ordered))
    return found


def _auto_numbered(match: re.Match) -> bool:
    """`{}`, `{:>10}`, `{!r}`: Python's next argument in order (no field name)."""
    return match[0][1] != "{" and match["field"] is None


_ENTITY_NAMES = frozenset(name for name in html.entities.html5 if name.endswith(";"))
_WORD = re.compile(r"\S+")


def verbatim_pieces(text: str, kinds=KINDS, words: bool = True) -> list[Piece]:
    """What of `text` comes back verbatim: its placeholders, each widened to its whole
    word when that word has no letter or digit besides them.

    `Delete '%s'?` gives the piece `'%s'?`, so the model reads `Delete` rather
    than `Delete ''?` and the piece stays a word of its own; in `%ss` or
    `Shortcut=%s` the placeholder alone is the piece. On the Godot UI strings
    whole words read better (bench/placeholders.py).

    Args:
        text: as for `find_placeholders`.
        kinds: as for `find_placeholders`.
        words: widen to whole words; False: the placeholders alone (measured
            against in bench/placeholders.py).

    Returns:
        The pieces in order, never overlapping; none for a text without placeholders.
    """
    placeholders = find_placeholders(text, kinds)
    if not words:
        return [Piece(p.start, p.end, p.text, p.ordered) for p in placeholders]
    pieces, k = [], 0
    for word in _WORD.finditer(text):
        inside = []
        while k < len(placeholders) and placeholders[k].start < word.end():
            inside.append(placeholders[k])
            k += 1
        if not inside:
            continue
        rest = "".join(text[a:b] for a, b in _gaps(word.start(), word.end(), inside))
        if any(char.isalnum() for char in rest) or inside[-1].end > word.end():
            pieces += [Piece(p.start, p.end, p.text, p.ordered) for p in inside]
        else:
            pieces.append(Piece(word.start(), word.end(), word[0],
                                any(p.ordered for p in inside)))
    return pieces


def _gaps(start: int, end: int, placeholders: list[Placeholder]) -> list[tuple[int, int]]:
    """The spans of `[start, end)` outside `placeholders`."""
    gaps, cursor = [], start
    for placeholder in placeholders:
        gaps.append((cursor, max(cursor, placeholder.start)))
        cursor = max(cursor, placeholder.end)
    gaps.append((min(cursor, end), end))
    return gaps
