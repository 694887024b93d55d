"""Glossaries: the user's own translations of terms, and where they occur in an English text.

A glossary is a list of `source -> target` entries (`product key -> clé de
produit`). It is read whole or refused: a bad row raises a `GlossaryError`
naming the file, the line and what to change, never a half-loaded glossary.

    glossary = Glossary.from_entries([("wash your hands", "se laver les mains"),
                                      ("face mask", "masque")])   # or Glossary.read(path)
    [(m.text, m.start, m.form) for m in glossary.find("Wash your hands, wear face masks.")]
    -> [("Wash your hands", 0, ""), ("face masks", 22, "plural")]

Files: UTF-8 (a byte-order mark is fine), one entry a line, `source<TAB>target`
(`.csv` files: two comma-separated columns, quoted as spreadsheets write
them). Blank lines and lines starting with `#` are skipped; a first row
`source, target` (or `en, fr`, `english, french`) is a header and skipped
too. Spaces around a term are dropped.

A target may list the entry's French forms, the dictionary form first:
`eye<TAB>œil|yeux`, `hospitalize<TAB>hospitaliser|hospitalisées` (how one is
chosen: `documents.french_forms.target_form`).

Matching (`Glossary.find`):
- on words: a term matches whole words of the text (`flu` not in `fluid`),
  its words and punctuation in order, whatever the spacing (`COVID-19`
  matches `COVID - 19` too); never inside a placeholder (`{name}`);
- case-insensitive by default (`Glossary(exact_case=True)`: as written), but
  for a word the entry writes in capitals (`WHO`, `GPU`, the `HIV` of `HIV
  test`; two letters or more): it matches in capitals only, so `WHO` is not
  `who` (`acronym_case=False`: any case, the earlier rule);
- the English forms of its head word (`documents.english_forms`): plurals and
  possessives of a noun term (`face masks`, `WHO's`), comparatives of an
  adjective, and for a verb term, one whose target reads as a French verb
  (`hospitalize -> hospitaliser`) or whose English is only a verb, its
  `-s`, past, participle and `-ing` forms, irregular ones included
  (`inflect=False`: as written only; `forms`: which of
  `english_forms.FORMS`); an entry written in an inflected form beats that
  form of another (`glasses` over the plural of `glass`);
- longest match first (in characters; equal lengths: the leftmost), never
  overlapping: with `clinical trial` and `trial`, `clinical trial design`
  gives one match.

An entry whose target is its source (`Firefox -> Firefox`) says: do not
translate (`GlossaryEntry.keep`).

How the targets are put into a translation is `documents.terminology`.
Nothing here imports TensorFlow.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from documents import english_forms, french_forms
from documents.english_forms import FORMS, TermForm
from documents.placeholders import find_placeholders

MAX_ENTRIES = 10_000  # entries per glossary
MAX_TERM_CHARS = 200  # characters per source or target term
HEADERS = frozenset({("source", "target"), ("en", "fr"), ("english", "french")})
FILE_FORMATS = ("tsv", "csv")
ENTRIES = "entries"  # what a `GlossaryError` names for a list of entries (not a file)
FORM_SEPARATOR = "|"  # between a target's forms: `œil|yeux`

_TOKEN = re.compile(r"\w+|[^\w\s]")  # a word, or one punctuation character
_TAG = re.compile(r"</?[A-Za-z][^<>]*>|<!--")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class GlossaryError(ValueError):
    """A glossary that cannot be used; the message names where and what to change.

    Attributes:
        where: the file (or `entries` for a list given in a request).
        line: the line of the file (or the entry's number, from 1), None for
            the glossary as a whole.
    """

    def __init__(self, message: str, where: str = "glossary", line: int | None = None):
        if line is None:
            at = where
        elif where == ENTRIES:
            at = f"entry {line}"
        else:
            at = f"{where}, line {line}"
        super().__init__(f"{at}: {message}")
        self.where = where
        self.line = line


@dataclasses.dataclass(frozen=True)
class GlossaryEntry:
    """One term and its translation.

    Attributes:
        source: the English term as written in the glossary.
        target: its French translation; the source itself: do not translate.
            Several forms separated by `|`: the dictionary form first, then
            forms the rules cannot make (`œil|yeux`).
    """

    source: str
    target: str

    @property
    def keep(self) -> bool:
        """The term stays as written in the text (a brand, a product name)."""
        return self.target == self.source

    @property
    def forms(self) -> tuple[str, ...]:
        """The target's forms, the dictionary form first."""
        return tuple(self.target.split(FORM_SEPARATOR))


@dataclasses.dataclass(frozen=True)
class TermMatch:
    """Where an entry occurs in a text.

    Attributes:
        entry: the glossary entry.
        start, end: its characters, `text[start:end]`.
        text: the text matched, as written there.
        form: what English form of the entry it is, one of
            `english_forms.FORMS`; "" for the entry as written.
        verb: the entry is read as a verb (its head word is its first).
    """

    entry: GlossaryEntry
    start: int
    end: int
    text: str
    form: str = ""
    verb: bool = False

    @property
    def plural(self) -> bool:
        """Matched as an English plural (`face masks`, `nurses'`)."""
        return self.form in ("plural", "plural possessive")


class _Form(NamedTuple):  # a tuple: quick to make by the 40,000 for a large glossary
    """A way an entry is written (`english_forms.TermForm`), and which of its tokens
    must be in the case written (all with `exact_case`, else those in capitals)."""

    entry: GlossaryEntry
    written: TermForm
    own: tuple[str, ...]  # the entry's tokens, as written in the glossary
    capitals: tuple[int, ...]  # the entry's tokens written in capitals (`WHO`)
    verb: bool


@dataclasses.dataclass(frozen=True)
class Glossary:
    """Entries, checked, and an index to find them in a text.

    Build with `from_entries`, `read` or `parse`; they check every entry.

    Attributes:
        entries: the entries, in the order given (duplicates removed).
        exact_case: match only as written (default: whatever the case).
        inflect: match the English forms of a term too (see the module docstring).
        forms: which forms (`english_forms.FORMS`); `{"plural"}`: the plurals
            of every term's last word, the earlier method (measured against).
        acronym_case: a word written in capitals matches in capitals only.
    """

    entries: tuple[GlossaryEntry, ...] = ()
    exact_case: bool = False
    inflect: bool = True
    forms: frozenset[str] = frozenset(FORMS)
    acronym_case: bool = True
    _index: dict = dataclasses.field(init=False, repr=False, compare=False)
    _longest: int = dataclasses.field(init=False, repr=False, compare=False)
    # `merged`'s: a glossary with the same options whose entries' forms are taken as they are.
    _reuse: dataclasses.InitVar[Glossary | None] = None

    def __post_init__(self, _reuse: Glossary | None = None) -> None:
        object.__setattr__(self, "entries", tuple(self.entries))
        unknown = sorted(set(self.forms) - set(FORMS))
        if unknown:
            raise ValueError(f"forms must be among {FORMS}. Received: {unknown}")
        index: dict[tuple[str, ...], list[_Form]] = {}
        reused: set[int] = set()
        if _reuse is not None and _reuse._options() == self._options():
            reused = {id(entry) for entry in _reuse.entries} & {id(e) for e in self.entries}
            for key, forms in _reuse._index.items():
                kept = [form for form in forms if id(form.entry) in reused]
                if kept:
                    index[key] = kept
        for entry in self.entries:
            if not isinstance(entry, GlossaryEntry):
                raise TypeError(f"entries must be GlossaryEntry. Received: {entry!r}; "
                                "use Glossary.from_entries for mappings or pairs")
            if id(entry) not in reused:
                self._add(index, entry)
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_longest", max((len(k) for k in index), default=0))

    def _options(self) -> tuple:
        """What the forms of an entry depend on (not `exact_case`: checked in `find`)."""
        return self.inflect, frozenset(self.forms), self.acronym_case

    def _add(self, index: dict[tuple[str, ...], list[_Form]], entry: GlossaryEntry) -> None:
        """Indexes the entry's forms: as written first (it beats another's inflected form),
        its inflected forms last."""
        tokens = tuple(_TOKEN.findall(entry.source))
        capitals = tuple(k for k, token in enumerate(tokens)
                         if self.acronym_case and _in_capitals(token))
        verb = self.inflect and _is_verb(entry, tokens, self.forms)
        as_written = TermForm(tokens, len(tokens) - 1, len(tokens[-1]), "")
        index.setdefault(_key(tokens), []).insert(0, _Form(entry, as_written, tokens, capitals,
                                                           verb))
        for form in (english_forms.term_forms(tokens, verb, frozenset(self.forms))
                     if self.inflect else ()):
            index.setdefault(_key(form.tokens), []).append(
                _Form(entry, form, tokens, capitals, verb))

    def __len__(self) -> int:
        return len(self.entries)

    @classmethod
    def from_entries(cls, entries: Iterable[Mapping[str, Any] | Sequence[str] | GlossaryEntry],
                     exact_case: bool = False, inflect: bool = True) -> Glossary:
        """A glossary from `{"source": ..., "target": ...}` mappings or `(source, target)` pairs.

        Raises:
            GlossaryError: an entry is not a source and a target, or is bad
                (see `read`); the message numbers entries from 1.
        """
        rows = []
        for number, item in enumerate(entries, start=1):
            if isinstance(item, GlossaryEntry):
                item = (item.source, item.target)
            if isinstance(item, Mapping):
                extra = sorted(set(item) - {"source", "target"})
                if extra or "source" not in item or "target" not in item:
                    raise GlossaryError(f"an entry is {{\"source\": ..., \"target\": ...}}. "
                                        f"Received keys: {sorted(item)}", ENTRIES, number)
                item = (item["source"], item["target"])
            if not isinstance(item, Sequence) or isinstance(item, str | bytes) or len(item) != 2:
                raise GlossaryError(f"an entry is a source and a target. Received: {item!r}",
                                    ENTRIES, number)
            rows.append((number, item[0], item[1]))
        return cls(_checked(rows, ENTRIES, allow_empty=True), exact_case, inflect)

    @classmethod
    def read(cls, path: str | os.PathLike, format: str | None = None,
             exact_case: bool = False, inflect: bool = True) -> Glossary:
        """Reads a glossary file (see the module docstring).

        Args:
            path: the file.
            format: `tsv` or `csv`; None: `csv` for a `.csv` file, else `tsv`.

        Raises:
            FileNotFoundError: no file at `path`.
            GlossaryError: a row is bad, or the file holds no entry or more
                than `MAX_ENTRIES`.
        """
        path = Path(path)
        if format is None:
            format = "csv" if path.suffix.lower() == ".csv" else "tsv"
        return cls.parse(path.read_bytes(), format, str(path), exact_case, inflect)

    @classmethod
    def parse(cls, data: bytes | str, format: str = "tsv", name: str = "glossary",
              exact_case: bool = False, inflect: bool = True) -> Glossary:
        """Parses the contents of a glossary file; `name` is the file's, for the messages.

        Raises:
            GlossaryError: as `read`.
            ValueError: `format` is not one of `FILE_FORMATS`.
        """
        if format not in FILE_FORMATS:
            raise ValueError(f"format must be one of {FILE_FORMATS}. Received: {format!r}")
        lines = _lines(data, name)
        rows = _csv_rows(lines, name) if format == "csv" else _tsv_rows(lines, name)
        if rows and tuple(cell.strip().casefold() for cell in rows[0][1:]) in HEADERS:
            rows = rows[1:]
        return cls(_checked(rows, name), exact_case, inflect)

    def merged(self, other: Glossary, exact_case: bool | None = None) -> Glossary:
        """This glossary's entries and `other`'s, an entry of `other` replacing the one
        here for the same term (case aside); `inflect` as here, `exact_case` as given
        (None: as here). Entries are not checked again: both are checked already."""
        replaced = {_entry_key(entry) for entry in other.entries}
        entries = tuple(e for e in self.entries if _entry_key(e) not in replaced)
        # This glossary's forms are reused, not made again: a request that adds a few entries
        # to a 10,000-entry server glossary indexes the few.
        return Glossary(entries + other.entries,
                        self.exact_case if exact_case is None else exact_case, self.inflect,
                        self.forms, self.acronym_case, self)

    def find(self, text: str) -> list[TermMatch]:
        """The entries occurring in `text`, in order (see the module docstring).

        Returns:
            Non-overlapping matches sorted by `start`; none outside words or
            inside a placeholder.
        """
        if not self._index or not text:
            return []
        tokens = [(m.start(), m.end()) for m in _TOKEN.finditer(text)]
        keys = [_fold(text[a:b]) for a, b in tokens]
        found = []
        for i in range(len(tokens)):
            for length in range(min(self._longest, len(tokens) - i), 0, -1):
                form = self._form(text, tokens[i:i + length], tuple(keys[i:i + length]))
                if form is not None:
                    found.append((tokens[i][0], tokens[i + length - 1][1], form))
        return _longest_first(text, found)

    def _form(self, text: str, tokens: list[tuple[int, int]], key: tuple[str, ...]
              ) -> _Form | None:
        """The first form of the index written as `tokens` in a case it allows."""
        for form in self._index.get(key, ()):
            if _case_fits(text, tokens, form, self.exact_case):
                return form
        return None


def _fold(token: str) -> str:
    return token.casefold().replace("\u2019", "'")


def _key(tokens: Sequence[str]) -> tuple[str, ...]:
    return tuple(_fold(token) for token in tokens)


def _entry_key(entry: GlossaryEntry) -> str:
    """What makes two entries the same term: their source's words, case aside."""
    return " ".join(_key(_TOKEN.findall(entry.source)))


def _in_capitals(token: str) -> bool:
    """An acronym's way of writing: two letters or more, all capitals (`WHO`, `H1N1`)."""
    return token.isupper() and sum(c.isalpha() for c in token) >= 2


def _is_verb(entry: GlossaryEntry, tokens: tuple[str, ...], forms: frozenset[str]) -> bool:
    """Whether the entry is a verb: its first word is only an English verb
    (`hospitalize`), or can be one and its target reads as a French infinitive
    (`spread -> se propager`, `wash your hands -> se laver les mains`). A target in
    -é(e) is no evidence: `outbreak -> flambée` is a noun."""
    if not forms & english_forms.VERB_FORMS or not tokens[0].isalpha() or entry.keep:
        return False
    if english_forms.only_verb(tokens[0]):
        return True
    return (english_forms.can_be_verb(tokens[0])
            and french_forms.kind_of(entry.forms[0]).kind == "infinitive")


def _case_fits(text: str, tokens: list[tuple[int, int]], form: _Form, exact: bool) -> bool:
    """Whether the text's tokens are in the case the form asks: with `exact`, each of the
    entry's tokens as written (an inflection's ending in any case); else its tokens in
    capitals in capitals."""
    checked = range(len(form.own)) if exact else form.capitals
    head, stem = form.written.head, form.written.stem
    for k in checked:
        token = text[slice(*tokens[k])].replace("\u2019", "'")
        own = form.own[k][:stem] if k == head else form.own[k]
        if token[:len(own)] != own:
            return False
    return True


def _longest_first(text: str, found: list[tuple[int, int, _Form]]) -> list[TermMatch]:
    """The longest matches (in characters; then the leftmost) that overlap none longer."""
    taken: list[tuple[int, int]] = [(p.start, p.end) for p in find_placeholders(text)]
    matches = []
    for start, end, form in sorted(found, key=lambda m: (m[0] - m[1], m[0])):
        if all(end <= a or b <= start for a, b in taken):
            taken.append((start, end))
            matches.append(TermMatch(form.entry, start, end, text[start:end],
                                     form.written.form, form.verb))
    return sorted(matches, key=lambda m: m.start)


# ---------------------------------------------------------------------------------------------
# Reading and checking.


def _lines(data: bytes | str, name: str) -> list[str]:
    """The file's lines (BOM and line ends taken off); a line not UTF-8 is named."""
    if isinstance(data, str):
        return data.removeprefix("\ufeff").splitlines()
    lines = []
    for number, raw in enumerate(data.removeprefix(b"\xef\xbb\xbf").splitlines(), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise GlossaryError(f"not UTF-8 (byte {error.start + 1} of the line): save the "
                                "file as UTF-8", name, number) from None
    return lines


def _skipped(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def _tsv_rows(lines: list[str], name: str) -> list[tuple[int, str, str]]:
    rows = []
    for number, line in enumerate(lines, start=1):
        if _skipped(line):
            continue
        cells = line.split("\t")
        if len(cells) != 2:
            hint = ("no tab: separate the source and the target with one tab"
                    if len(cells) == 1 else "one tab only, between the source and the target")
            raise GlossaryError(f"expected 2 columns, source<TAB>target; found {len(cells)} "
                                f"({hint})", name, number)
        rows.append((number, cells[0], cells[1]))
    return rows


def _csv_rows(lines: list[str], name: str) -> list[tuple[int, str, str]]:
    rows = []
    reader = csv.reader(lines, strict=True)
    try:
        for cells in reader:
            number = reader.line_num
            if not cells or _skipped(",".join(cells)):
                continue
            if len(cells) != 2:
                raise GlossaryError(f"expected 2 columns, source,target; found {len(cells)} "
                                    "(quote a term that holds a comma: \"a, b\")", name, number)
            rows.append((number, cells[0], cells[1]))
    except csv.Error as error:
        raise GlossaryError(f"not valid CSV ({error}): check its quotes", name,
                            reader.line_num) from None
    return rows


def _checked(rows: list[tuple[int, Any, Any]], name: str,
             allow_empty: bool = False) -> tuple[GlossaryEntry, ...]:
    """The entries of `rows` (`(line, source, target)`), each checked, duplicates removed."""
    if not rows and not allow_empty:
        raise GlossaryError("no entries: write one source<TAB>target a line", name)
    seen: dict[str, tuple[int, GlossaryEntry]] = {}
    for line, source, target in rows:
        entry = GlossaryEntry(_term(source, "source", name, line),
                              _target(target, name, line))
        key = _entry_key(entry)
        if key in seen and seen[key][1].target != entry.target:
            first, other = seen[key]
            raise GlossaryError(
                f"{entry.source!r} is already translated {other.target!r} "
                f"({'entry' if name == ENTRIES else 'line'} {first}), here {entry.target!r}: "
                "keep one target per term (case aside)", name, line)
        seen.setdefault(key, (line, entry))
        if len(seen) > MAX_ENTRIES:
            raise GlossaryError(f"more than MAX_ENTRIES ({MAX_ENTRIES}) entries: split the "
                                "glossary", name, line)
    return tuple(entry for _, entry in seen.values())


def _target(value: Any, name: str, line: int) -> str:
    """The target checked, each of its forms (`œil|yeux`) stripped and checked."""
    if not isinstance(value, str) or FORM_SEPARATOR not in value:
        return _term(value, "target", name, line)
    forms = [form.strip() for form in value.split(FORM_SEPARATOR)]
    if not all(forms):
        raise GlossaryError(f"the target {value.strip()!r} has an empty form: write its forms "
                            f"separated by {FORM_SEPARATOR!r}, the dictionary form first "
                            "(`œil|yeux`)", name, line)
    return FORM_SEPARATOR.join(_term(form, "target", name, line) for form in forms)


def _term(value: Any, side: str, name: str, line: int) -> str:
    """`value` stripped, if it is a usable term; else the error to raise."""
    if not isinstance(value, str):
        raise GlossaryError(f"the {side} must be text. Received: {type(value).__name__}",
                            name, line)
    term = value.strip()
    problem = None
    if not term:
        problem = f"the {side} is empty: give both the source and the target"
    elif len(term) > MAX_TERM_CHARS:
        problem = (f"the {side} has {len(term)} characters, over MAX_TERM_CHARS "
                   f"({MAX_TERM_CHARS}): a glossary holds terms, not sentences")
    elif _CONTROL.search(term):
        problem = f"the {side} holds a tab, line break or control character: take it out"
    elif side == "source" and not re.search(r"\w", term):
        problem = "the source has no letter or digit: a term is matched on words"
    elif found := find_placeholders(term):
        problem = (f"the {side} holds the placeholder {found[0].text!r}: placeholders are "
                   "kept as they are, write the term without it")
    elif _TAG.search(term):
        problem = f"the {side} holds markup ({_TAG.search(term)[0]!r}): write plain text"
    if problem:
        raise GlossaryError(problem, name, line)
    return term
