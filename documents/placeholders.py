"""Placeholders in UI strings: what a translation must give back exactly, once each.

A localisation string such as `"Hello %s, you have {0} new messages."` is a
format string: the application fills `%s` and `{0}` in after translation, and
crashes (or shows the wrong value) if one is lost, repeated or mangled. This
module finds them; `documents.markup` takes them out of what the model
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
- `url`: web addresses, `https://example.com/a_b?x=1`, `ftp://...`,
  `file://...`, `www.example.org`, up to a space, a quote or a square
  bracket, and without the punctuation that ends a sentence or clause
  (`.,;:!?)`), which stays text (the piece of a word of nothing else takes
  it along, below).
- `email`: addresses, `bob@example.com`, `first.last+tag@mail.example.co.uk`.
  The model's vocabulary has no `@`, `_`, `#`, `=`, `[`, `|`... (they read as
  an unknown piece), and read as text a URL or an address comes back in
  pieces or twice; nobody wants either translated.

Deliberately not placeholders:
- `%` before a space or at the end (`50 % off`, `100%`): the space flag of
  printf (`% d`) is left out for this, so `20% off` is prose; `%` before a
  letter that is no conversion (`%w`), and strftime's `%Y %m %H`;
- a brace that opens no argument: `{` before a space or a quote (`{ and }`,
  `{"key": 1}`), a lone `{` or `}`, Python's escapes `{{` and `}}` alone;
- `&` that starts no reference (`Drag & drop`, `R&D`), a name HTML does not
  define (`&foo;`), and a reference without its `;` (`&amp`).
In prose, `%` right before a conversion letter (`20%off`) does read as a
placeholder: such requests can turn placeholders off. A URL holds what is
inside it, `%20` or a template's `{id}` (`https://example.com/{id}/edit`).

One more kind, `rest`, is only found when asked for (`REST_KINDS`, not
`KINDS`): the inline markup of reStructuredText (Sphinx documentation, e.g. the
PO files of the Python documentation), each kept whole:
- roles, with or without a domain: `` :func:`len` ``, `` :py:meth:`str.split` ``,
  `` :class:`~os.PathLike` ``, `` :keyword:`!if` ``, `` :pep:`8` ``,
  `` :ref:`text <label>` ``, a role after its text, `` `len`:func: ``, and
  interpreted text of the default role, `` `x` ``;
- inline literals ``` ``x = 1`` ``` (single backticks inside included);
- hyperlink references `` `text <https://...>`_ ``, `` `label`_ ``,
  `` `anonymous`__ ``; footnote and citation references `[1]_`, `[#]_`,
  `[#note]_`, `[*]_`, `[CIT2002]_`;
- substitution references `|version|` (and `|name|_`);
- the `::` that ends a line (`For example::`, `concatenated. ::`): it makes the
  next paragraph a literal block.
The text of a `:ref:` role or of a hyperlink reference stays English, as an
ICU message's does. As reST's own inline markup, each starts and ends at a
word's edge and has no space just inside its delimiters, so these are not
matched: a lone backtick or bar (`` it's `quoted' ``, `a | b`), a space inside
the delimiters (`` ` x` ``, ``` `` x`` ```, `| x |`), markup after a letter,
digit or backslash (``` a``b`` ```, `x|y|z`, `` \\`x` ``) or before one
(`` `x`s ``), a `_` reference without backticks (`word_`: it reads like an
identifier), `::` but at a line's end (`std::vector`, `a[::2]`), `[1]` without
its `_`, markup over a line break, and `*emphasis*` and `**strong**`, whose
words are translated.

Nothing here imports TensorFlow.
"""

from __future__ import annotations

import dataclasses
import html.entities
import re

KINDS = ("printf", "brace", "icu", "entity", "url", "email")
# The kinds of reStructuredText documentation: `rest` is only found when asked for.
REST_KINDS = (*KINDS, "rest")
# In HTML and XML documents an entity is markup, decoded by the parser (documents.markup).
MARKUP_KINDS = ("printf", "brace", "icu", "url", "email")

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
_URL = r"""
    (?<![\w@/.-])(?:(?:https?|ftp|file)://|www\.)       # a scheme, or www. at a word's start
    [^\s<>"'`|\\^\[\]]*                                  # up to a space, quote or bracket
    [^\s<>"'`|\\^\[\].,;:!?)»”’]                         # not ending in a sentence's punctuation
"""
_EMAIL = r"""
    (?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._+-]*@            # the local part (no % : printf's %s@)
    (?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z]{2,}(?![\w-])   # domain, top level
"""
# One pattern, tried at each position in this order: a URL or address holding a `%` or
# `&` is one placeholder, a brace argument holding a `%` ({:%Y-%m-%d}) is one, and ICU's
# nested braces win over a plain argument.
_PATTERN = re.compile(
    rf"(?P<url>{_URL})|(?P<email>{_EMAIL})|(?P<icu>{_ICU})|(?P<brace>{_BRACE})"
    rf"|(?P<printf>{_PRINTF})|(?P<entity_ref>{_ENTITY})",
    re.VERBOSE)
_GROUPS = {"icu": "icu", "brace": "brace", "printf": "printf", "entity_ref": "entity",
           "rest": "rest", "url": "url", "email": "email"}
# reStructuredText's inline markup: it starts after a space, punctuation or the start and
# ends before one (not inside a word), and has no space just inside its edges.
_REST = r"""
    (?<![\w`\\|])                                       # not after a letter, ` \ or |
    (?:``[^\s`](?:(?:[^`\n]|`(?!`))*[^\s`])?``          # ``inline literal``
      | (?:(?::[^\W\d_][\w+.-]*)+:)?                    # a role, :func: or :py:meth:, or none
        `[^\s`](?:[^`\n]*[^\s`])?`                      # `text`, and `text <url>`_,
        (?:__?|(?::[^\W\d_][\w+.-]*)+:)?                # `anonymous`__, `len`:func:
      | \|[^\s|](?:[^|\n]*[^\s|])?\|(?:__?)?            # |substitution|
      | \[(?:[0-9]+|\#(?:[^\W\d_][\w.-]*)?|\*|[^\W\d_][\w.-]*)\]_  # [1]_ [#]_ [#a]_ [C]_
    )(?![\w`|])                                          # not before a letter, ` or |
  | (?<!:)::(?=[ \t]*(?:\r?\n|\Z))                       # `::` ending a line: a literal block
"""
# With `rest` asked for, its markup is tried first, so that a `%s` or `{0}` inside a
# literal stays in it; without, `_PATTERN` alone (reST markup is then text).
_REST_PATTERN = re.compile(rf"(?P<rest>{_REST})|{_PATTERN.pattern}", re.VERBOSE)


@dataclasses.dataclass(frozen=True)
class Placeholder:
    """One placeholder of a text.

    Attributes:
        start, end: its characters, `text[start:end]`.
        text: as written.
        kind: one of `REST_KINDS` (`KINDS` and `rest`).
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
    unknown = sorted(set(kinds) - set(REST_KINDS))
    if unknown or isinstance(kinds, str):
        raise ValueError(f"kinds must be a collection of {REST_KINDS}. Received: "
                         f"kinds={kinds!r}")
    return tuple(kinds)


def find_placeholders(text: str, kinds=KINDS) -> list[Placeholder]:
    """The placeholders of `text`, in order, never overlapping.

    Args:
        text: a UI string, sentence or document.
        kinds: the kinds to find (default: all of `KINDS`; `REST_KINDS` adds `rest`).

    Raises:
        ValueError: `kinds` names an unknown kind.
    """
    kinds = _check_kinds(kinds)
    found = []
    for match in (_REST_PATTERN if "rest" in kinds else _PATTERN).finditer(text):
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
_NON_SPACE = re.compile(r"\S*")


def verbatim_pieces(text: str, kinds=KINDS, words: bool = True) -> list[Piece]:
    """What of `text` comes back verbatim: its placeholders, each widened to its whole
    word when that word has no letter or digit besides them.

    `Delete '%s'?` gives the piece `'%s'?`, so the model reads `Delete` rather
    than `Delete ''?` and the piece stays a word of its own; in `%ss` or
    `Shortcut=%s` the placeholder alone is the piece. On the Godot UI strings
    whole words read better (bench/placeholders.py). A placeholder over several
    words is a piece alone, but for reStructuredText's, which take the
    punctuation around them along (`` (``a < 10``). ``, `` `link <url>`_. ``):
    alone, the translation would glue them to the next word (`` ``a``l'eau ``),
    which breaks the markup.

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
        inside, end = [], word.end()
        while k < len(placeholders) and placeholders[k].start < end:
            inside.append(placeholders[k])
            k += 1
            if inside[-1].kind == "rest" and inside[-1].end > end:
                end = _NON_SPACE.match(text, inside[-1].end).end()  # the word it ends in
        if not inside:
            continue
        outside = "".join(text[a:b] for a, b in _gaps(word.start(), end, inside))
        if any(char.isalnum() for char in outside) or inside[-1].end > end:
            pieces += [Piece(p.start, p.end, p.text, p.ordered) for p in inside]
        else:
            pieces.append(Piece(word.start(), end, text[word.start():end],
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
