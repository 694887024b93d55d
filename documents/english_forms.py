"""The English forms a glossary term is matched in: `hospitalize` in `hospitalized`.

A glossary entry is a dictionary form; the text holds inflected ones. This
module lists, for an entry's words, the forms of its head word and what each
form is (`FORMS`):

    term_forms(("face", "mask"), verb=False)
    -> [TermForm(("face", "masks"), 1, 4, "plural"), TermForm(("face", "mask", "'", "s"), 1, 4,
        "possessive"), ...]
    term_forms(("hospitalize",), verb=True)
    -> [TermForm(("hospitalizes",), 0, 11, "third person"), ... "past" ... "ing"]

The forms of a word come from LemmInflect's lexicon (`lemminflect`, MIT, 1.2 MB,
18 µs a word, once per entry when a glossary is built: matching a text is
a lookup, as before), irregular ones included (`take` -> `took`, `taken`;
`child` -> `children`; `good` -> `better`), and only those of the word's parts
of speech (`test` has no comparative). A word it does not know (`lockdown`,
`ATM`) gets the regular English plurals (`-s`, `-es`, `-y` -> `-ies`), as
before inflected forms.

Which word inflects:
- a noun term: its last word (`face masks`), or the word before its first
  preposition (`cups of tea`); plurals and possessives (`WHO's`, `nurses'`);
- a verb term (the caller says: `verb=True`): its first word (`washed your
  hands`): `-s`, past, past participle, `-ing`; and the plural of its last
  (`wash your hand` matches `wash your hands`);
- an adjective (one word): comparative and superlative (`severer`).

Nothing here imports TensorFlow.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import NamedTuple

# What an inflected form is; "" is the entry as written.
FORMS = ("plural", "possessive", "plural possessive", "third person", "past", "participle",
         "ing", "comparative", "superlative")
NOUN_FORMS = frozenset({"plural", "possessive", "plural possessive"})
VERB_FORMS = frozenset({"third person", "past", "participle", "ing"})
ADJECTIVE_FORMS = frozenset({"comparative", "superlative"})
# Penn Treebank tags (LemmInflect's) -> form. VBN after VBD: a regular `-ed` is read as past.
_TAGS = {"NNS": "plural", "VBZ": "third person", "VBD": "past", "VBN": "participle",
         "VBG": "ing", "JJR": "comparative", "JJS": "superlative"}
_PREPOSITIONS = frozenset("of for in on at to with from by".split())
_PLURAL_NOUNS = frozenset("people children men women persons".split())  # no -s, or rare


class TermForm(NamedTuple):  # a tuple: a 10,000-entry glossary makes some 40,000
    """One way a term is written in a text.

    Attributes:
        tokens: its words and punctuation (a possessive adds `'`, `s`).
        head: the index of the token that is inflected.
        stem: how many characters of `tokens[head]` are the entry's own (the
            rest, and the possessive's tokens, are the inflection).
        form: what it is, one of `FORMS`.
    """

    tokens: tuple[str, ...]
    head: int
    stem: int
    form: str


def term_forms(tokens: Sequence[str], verb: bool, forms: frozenset[str] = frozenset(FORMS)
               ) -> list[TermForm]:
    """The inflected forms of a term written as `tokens` (the entry as written excluded).

    Args:
        tokens: the entry's source, as words and punctuation marks.
        verb: the entry is a verb (`hospitalize -> hospitaliser`): its first
            word takes the verb forms; else the term is a noun (or adjective).
        forms: the forms wanted (a subset of `FORMS`).
    """
    tokens = tuple(tokens)
    if verb:
        head = next((k for k, t in enumerate(tokens) if t.isalpha()), None)
        wanted = forms & VERB_FORMS
    else:
        head = noun_head(tokens)
        wanted = forms & (NOUN_FORMS | (ADJECTIVE_FORMS if len(tokens) == 1 else frozenset()))
    if head is None or not wanted:
        return []
    before, after = tokens[:head], tokens[head + 1:]
    out = [TermForm((*before, word, *after), head, stem, form)
           for word, form, stem in word_forms(tokens[head], verb) if form in wanted]
    if wanted & {"possessive", "plural possessive"}:
        out += _possessives(tokens, head, out, wanted)
    if verb and len(tokens) > 1 and "plural" in forms:  # its object too: `wash your hand(s)`
        out += term_forms(tokens, False, frozenset({"plural"}))
    return out


def noun_head(tokens: Sequence[str]) -> int | None:
    """The word of a noun term that takes the plural: the one before its first
    preposition (`cup of tea`), else its last; None when that is no word (`COVID-19`)."""
    for k in range(1, len(tokens) - 1):
        if tokens[k].casefold() in _PREPOSITIONS:
            return k - 1 if tokens[k - 1].isalpha() else None
    return len(tokens) - 1 if tokens and tokens[-1].isalpha() else None


def can_be_verb(word: str) -> bool:
    """The lexicon knows `word` as an English verb (`spread`, `hospitalize`)."""
    return any(tag.startswith("VB") for tag in _inflections(word.casefold()))


def only_verb(word: str) -> bool:
    """The lexicon knows `word` as an English verb only (`hospitalize`, not `spread`)."""
    tags = _inflections(word.casefold())
    return bool(tags) and all(tag.startswith("VB") for tag in tags)


def plural_noun(word: str) -> bool:
    """`word` reads as an English plural noun (`patients`, `people`; `spreads` too, a
    noun's plural as well as a verb's `-s`): a plural the lexicon gives to the word
    without its `-s`, `-es` or `-ies`."""
    word = word.casefold()
    if word in _PLURAL_NOUNS:
        return True
    if not word.endswith("s") or len(word) < 4:
        return False
    singulars = (word[:-1], word[:-2], word[:-3] + "y")
    return any(word in _inflections(singular).get("NNS", ()) for singular in singulars)


@functools.lru_cache(maxsize=65536)  # a large glossary's terms share words
def word_forms(word: str, verb: bool) -> tuple[tuple[str, str, int], ...]:
    """`(inflected word, form, stem)` of `word` (`word` itself left out), in its case:
    the lexicon's, else regular plurals; `stem`: the characters it shares with `word`. A
    noun's `-s` is `plural`; a verb's is `third person`."""
    if len(word) < 2 or not word.isalpha():
        return ()
    upper = word.isupper()
    found: dict[str, str] = {}
    tags = {} if upper else _inflections(word.casefold())
    for tag, form in _TAGS.items():
        if verb != tag.startswith("VB"):
            continue
        for inflected in tags.get(tag, ()):
            found.setdefault(inflected, form)
        if not verb:
            for inflected in tags.get(tag.replace("JJ", "RB"), ()):
                found.setdefault(inflected, form)
    if not verb and not any(f == "plural" for f in found.values()):
        for inflected in regular_plurals(word.casefold()):
            found.setdefault(inflected, "plural")
    capital, folded = word[:1].isupper(), word.casefold()
    return tuple((_cased(inflected, upper, capital), form, _common_prefix(inflected, word))
                 for inflected, form in found.items() if inflected.casefold() != folded)


def regular_plurals(word: str) -> list[str]:
    """`-s`, `-es`, and `-y` -> `-ies` after a consonant (what matched before inflected forms)."""
    forms = [word + "s", word + "es"]
    if word[-1:] == "y" and word[-2:-1] not in ("a", "e", "i", "o", "u", ""):
        forms.append(word[:-1] + "ies")
    return forms


def _possessives(tokens: tuple[str, ...], head: int, inflected: list[TermForm],
                 wanted: frozenset[str]) -> list[TermForm]:
    """`WHO's`; the plurals' `nurses'` (ending in s) or `children's` (else). Only for a
    term whose head is its last word: `cup of tea's` is the tea's."""
    if head != len(tokens) - 1:
        return []
    out = []
    if "possessive" in wanted:
        out.append(TermForm((*tokens, "'", "s"), head, len(tokens[head]), "possessive"))
    if "plural possessive" in wanted:
        for form in inflected:
            if form.form == "plural":
                ending = ("'",) if form.tokens[head][-1:] in "sS" else ("'", "s")
                out.append(TermForm((*form.tokens, *ending), head, form.stem,
                                    "plural possessive"))
    return out


def _cased(word: str, upper: bool, capital: bool) -> str:
    if upper:
        return word.upper()
    return word[:1].upper() + word[1:] if capital else word


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n].casefold() == b[n].casefold():
        n += 1
    return n


@functools.lru_cache(maxsize=65536)
def _inflections(word: str) -> dict[str, tuple[str, ...]]:
    """LemmInflect's forms of `word` by Penn tag ({} for a word it does not know)."""
    # Imported here: its tables load on first use (0.3 s), which only a glossary needs.
    import lemminflect

    return lemminflect.getAllInflections(word)
