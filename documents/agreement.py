"""What the English around a matched term asks of its French form.

`Glossary.find` says which English form a term was matched in
(`TermMatch.form`: `plural`, `past`...); this module reads the words around
it to tell the French form to write (`documents.french_forms.Wanted`):

- a noun: plural when matched in the plural (`face masks` -> `masques`);
- a verb (the entry's target is a French verb): an `-ed` or participle
  form is a past participle (`hospitalisé`), in the plural after a plural
  form of `be` (`were hospitalized` -> `hospitalisés`, `have been`), in the
  singular after a singular one (`was`, `has been`), invariable after a form
  of `have` alone (`have hospitalized three patients` -> `ont hospitalisé`),
  and without an auxiliary as the plural noun beside it asks (`hospitalized
  patients`, `persons hospitalized`); `-s` is the third person (`spreads` ->
  `se propage`); the dictionary form and `-ing` keep the infinitive, unless
  the model wrote a form of the same verb, which is kept (`accepted`); after
  a determiner or a number (`the spread`, `two coughs`) it is a noun: the
  entry's first noun form, or no term if it has none;
- an adjective's comparative and superlative: `plus ...`.

    choice = written(match, source)
    choice.text, choice.form, choice.accepted   # "hospitalisés", "participle", None

Nothing here imports TensorFlow.
"""

from __future__ import annotations

import dataclasses
import re

from documents import english_forms
from documents.french_forms import Wanted, kind_of, target_form, verb_stem
from documents.glossary import TermMatch

_WORD = re.compile(r"[\w']+")
_PLURAL_BE = frozenset("are were 're aren weren aren't weren't".split())
_SINGULAR_BE = frozenset("is was am isn wasn isn't wasn't".split())
_HAVE = frozenset("has have had 've 'd having hasn haven hadn hasn't haven't hadn't".split())
_PLURAL_HAVE = frozenset("have 've haven haven't".split())
_BE_UNKNOWN = frozenset("be being get gets got getting gotten become becomes became".split())
_SKIPPED = frozenset("not 't n't also already just still never ever all both often".split())
_PLURAL_SUBJECTS = frozenset("they we you these those".split())
_SINGULAR_SUBJECTS = frozenset("he she it i this that".split())
_LOOK_BACK = 6  # words read before a term for its subject
_DETERMINERS = frozenset("""the a an this that these those its their his her our your my
    every each no some any two three four five several many few""".split())


@dataclasses.dataclass(frozen=True)
class Written:
    """The French form chosen for a match.

    Attributes:
        text: what to write.
        form: the English form as read in its sentence (`TermMatch.form`, a
            `past` after an auxiliary read as `participle`).
        accepted: a pattern for a form of the same word the model may have
            written, kept where it did (None: only `text` is kept).
    """

    text: str
    form: str
    accepted: str | None = None


def written(match: TermMatch, source: str, agree: bool = True) -> Written | None:
    """The French form `match` asks for in `source` (see the module docstring); None for
    a verb entry used as a noun (`the spread`) without a noun among its forms: a wrong
    term is worse than none. `agree=False`: the entry's target, in the plural for a
    plural (the earlier method)."""
    entry = match.entry
    if entry.keep:
        return Written(match.text, match.form)
    if not agree:
        return Written(target_form(entry.forms[:1], Wanted("noun", match.plural)), match.form)
    wanted, form = _wanted(match, source)
    if wanted.kind == "noun" and match.verb:
        nouns = [f for f in entry.forms if kind_of(f).kind == "noun"]
        return Written(target_form(nouns, wanted), form) if nouns else None
    text = target_form(entry.forms, wanted)
    return Written(text, form, _accepted(entry.forms[0], wanted) if match.verb else None)


def _wanted(match: TermMatch, source: str) -> tuple[Wanted, str]:
    form = match.form
    if form in ("comparative", "superlative"):
        return Wanted("comparative"), form
    if not match.verb:
        return Wanted("noun", match.plural), form
    if form in ("", "third person", "plural") and _after_determiner(source, match.start):
        return Wanted("noun", form != ""), "plural" if form else form  # `the spread(s)`
    if form == "third person":
        return Wanted("third person"), form
    if form in ("past", "participle"):
        head = match.text.split(" ")[0].casefold()
        if head in _PLURAL_BE or head in _SINGULAR_BE:  # a `be X` entry: `were infected`
            return Wanted("participle", head in _PLURAL_BE), "participle"
        plural, auxiliary = participle_number(source, match.start, match.end)
        return Wanted("participle", plural), "participle" if auxiliary else form
    return Wanted("infinitive"), form


def _after_determiner(source: str, start: int) -> bool:
    """The word before is a determiner or a number: what follows is a noun (`the spread`,
    `two coughs`), whatever the entry is."""
    before = _WORD.findall(source[:start])
    return bool(before) and (before[-1].casefold() in _DETERMINERS or before[-1].isdigit())


def participle_number(source: str, start: int, end: int) -> tuple[bool, bool]:
    """`(plural, after an auxiliary)` for a participle at `source[start:end]` (see the
    module docstring)."""
    before = [w.casefold() for w in _WORD.findall(source[:start])]
    words = [w for w in before[-_LOOK_BACK:] if w not in _SKIPPED and not w.endswith("ly")]
    last = words[-1] if words else ""
    if last in _PLURAL_BE:
        return True, True
    if last in _SINGULAR_BE:
        return False, True
    if last == "been" and len(words) > 1 and words[-2] in _HAVE:
        return words[-2] in _PLURAL_HAVE, True
    if last in _HAVE:
        return False, True  # `ont hospitalisé trois patients`: no agreement
    if last in _BE_UNKNOWN or last == "been":
        return _subject_plural(words[:-1]), True
    after = _WORD.findall(source[end:])[:1]
    neighbours = [*before[-1:], *after]
    return any(english_forms.plural_noun(w) for w in neighbours), False


def _subject_plural(words: list[str]) -> bool:
    """The nearest pronoun or noun before `be` is plural (`patients will be`)."""
    for word in reversed(words):
        if word in _PLURAL_SUBJECTS or english_forms.plural_noun(word):
            return True
        if word in _SINGULAR_SUBJECTS:
            return False
    return False


def _accepted(target: str, wanted: Wanted) -> str | None:
    """A pattern for the forms of the target's verb that fit `wanted`: any (the model's
    tense beats our infinitive) but for a participle: its -é participles of that number."""
    stem = verb_stem(target)
    if stem is None:
        return None
    if wanted.kind == "participle":
        if not target.endswith("er"):
            return None
        return rf"{re.escape(stem)}ée?{'s' if wanted.plural else ''}"
    return rf"{re.escape(stem)}\w*"
