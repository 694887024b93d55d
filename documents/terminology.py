"""Glossary terms put into translations, through the word alignment.

The model translates as it always does; then, for each glossary term found in
the source (`documents.glossary.Glossary.find`), the target words aligned
to the term's words are replaced by the glossary's target (aligned
replacement):

    result = apply_terms(source, hypothesis.text, hypothesis.word_alignment, glossary)
    result.text        # the translation with the user's terms
    result.applied     # AppliedTerm(source_span, target_span, ...) per term, to highlight

    translation, applied = apply_glossary(translation, glossary)   # a whole `Translation`

Placing a term:
- `found`: the translation already has the term as written (any case, whole
  words), or for a verb a form of it among the aligned words: it is left as
  it is (the occurrence nearest the aligned words).
- `aligned`: the target words linked to any word of the term, from the first
  to the last (words between them included), are replaced; punctuation
  before the first and after the last stays, and so does an elided article
  stuck to the first (`l'`, `d'`, `qu'`); words that are only punctuation
  are never taken.
- `neighbour`: no target word is linked to the term (or they were taken by
  another term): the term is inserted after the target of the nearest
  source word on its left that has one (else before that of the nearest on
  its right; else before the final punctuation).
- `copied`: `protect_terms` only (below): the model copied the term's
  stand-in, which is replaced.

Written: the form of the entry's target the English form asks for
(`documents.agreement`: `essais cliniques` for `clinical trials`,
`hospitalisés` for `were hospitalized`), or the model's own form of the same
verb where its aligned words hold one (`found`); the source as written for an
entry not to translate (`GlossaryEntry.keep`). A verb's participle keeps the
French auxiliaries aligned to it (`ont été`), and a possessive the `de` before
it. A term that starts the sentence in place of a capitalised word is
capitalised. With `articles=True` (nouns only) the article or preposition
before the term is adjusted where
it is cheap to know: elision before a vowel or mute h (`la` -> `l'`, `de` ->
`d'`, `que` -> `qu'`) and back (`l'` -> `le`/`la`/`les`, `d'` -> `de`), and
number (`le`/`la`/`l'` -> `les`, `du` -> `des`, `au` -> `aux` before a plural
term). Gender is never guessed but for `l'` before a consonant (`la` when
the term's first word ends in `e`).

The result's word links count the whitespace words of the new text: the
term's words are linked to every word of the source term, the other words
keep their links.

Two alternatives are measured against it (bench/glossary.py):
`protect_terms`, where the model reads each term as a number (`7`, `8`... as
placeholders' stand-ins are, see bench/placeholders.py), replaced by the term
where the model copied it, else placed as above; and `annotate_terms`, for a
model trained with inline term annotations (`documents.term_annotation`):
it reads each term followed by the form to write, and a term it did not
write is placed as above.

Nothing here imports TensorFlow.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Callable, Sequence

import numpy as np

from documents import agreement
from documents.glossary import Glossary, TermMatch
from documents.offsets import word_spans, words_overlapping
from documents.term_annotation import MARK, annotate, remove_marks
from nmt.types import AppliedTerm, Link, Span, Translation  # AppliedTerm: for the clients too

PLACEMENTS = ("found", "aligned", "neighbour", "copied")
STAND_IN = 7  # the k-th protected term reads as the number STAND_IN + k

_LEAD = re.compile(r"[^\w]*(?:(?:jusqu|lorsqu|puisqu|qu|[cdjlmnst])['’])?", re.IGNORECASE)
_TRAIL = re.compile(r"[^\w]*$")
_ELIDED = re.compile(r"(?<!\w)(jusqu|lorsqu|puisqu|qu|[cdjlmnst])['’]$", re.IGNORECASE)
_WORD_BEFORE = re.compile(r"(?<!\S)(\w+)\s+$")
_WORD_ADJACENT = re.compile(r"(?<!\S)(\w+)$")
_VOWEL = "aeiouhâàäéèêëîïôöûùüœæ"
_FULL = {"qu": "que", "jusqu": "jusque", "lorsqu": "lorsque", "puisqu": "puisque", "c": "ce",
         "d": "de", "j": "je", "m": "me", "n": "ne", "s": "se", "t": "te"}
_ELIDES = {"le": "l'", "la": "l'", "de": "d'", "que": "qu'", "je": "j'", "me": "m'",
           "te": "t'", "se": "s'", "ne": "n'"}
_PLURAL = {"le": "les", "la": "les", "du": "des", "au": "aux"}
_CONTRACTED = {"à": "aux", "de": "des"}  # before `les`
# French auxiliaries (and the reflexive pronoun) that a participle's aligned words may start
# with, and stay: `ont été hôpitals` -> `ont été hospitalisés`, not `hospitalisés`.
_AUXILIARIES = frozenset("""a ai as avons avez ont avait avaient avais aura auront aurait
    auraient eu est sont suis es sommes êtes était étaient étais sera seront serait seraient
    été fut furent soit soient être avoir se s' s’""".split())
_VERB_PREPOSITIONS = frozenset("de à pour en sans par".split())
_OF = frozenset({"de", "du", "des"})  # a possessive's: `WHO's` -> `de l'OMS`


@dataclasses.dataclass(frozen=True)
class TermsApplied:
    """A translation with the glossary's terms written in.

    Attributes:
        text: the new translation.
        word_alignment: `(source word, target word)` links on the whitespace
            words of the source and of `text`.
        applied: the terms written, in source order.
        target_words: per whitespace word of `text`, the word of the given
            translation it is, or None for a word written (a term, an article).
    """

    text: str
    word_alignment: tuple[Link, ...]
    applied: tuple[AppliedTerm, ...]
    target_words: tuple[int | None, ...]


@dataclasses.dataclass(frozen=True)
class _Term:
    match: TermMatch  # in the source as given
    words: tuple[int, ...]  # the source words of the links that hold it
    written: str
    at: Span | None = None  # where the model copied it (`protect_terms`)
    form: str = ""  # the English form as read (`agreement.Written.form`)
    accepted: str | None = None  # a pattern for the model's own form of it, kept
    participle: bool = False  # a verb's participle: the auxiliaries before it stay


@dataclasses.dataclass(frozen=True)
class _Edit:
    start: int  # text[start:end] becomes `replacement`
    end: int
    replacement: str
    written: Span  # the term's characters inside `replacement`
    placement: str
    term: _Term


def apply_terms(source: str, text: str, word_alignment: Sequence[Link], glossary: Glossary,
                articles: bool = True, insert: bool = True, agree: bool = True
                ) -> TermsApplied:
    """The translation `text` of `source` with the glossary's terms written in.

    Args:
        source: the sentence as given to the model (links count its words).
        text: its translation.
        word_alignment: `(source word, target word)` links, 0-based, on the
            whitespace words of `source` and `text` (`Hypothesis.word_alignment`).
        glossary: the entries to apply.
        articles: adjust the article before a term (see the module docstring).
        insert: place a term no target word is aligned to next to its
            neighbour's (`neighbour`); False leaves it out (measured against).
        agree: write the French form the English form asks for
            (`documents.agreement`); False: the target, in the plural for an
            English plural (the earlier method, measured against).

    Returns:
        The new text, links and what was applied; `text` itself when no term
        of the glossary is in `source`.
    """
    matches = glossary.find(source)
    spans = word_spans(source)
    terms = [_term(m, words_overlapping(spans, m.start, m.end), source, agree) for m in matches]
    return _place(text, word_alignment, [t for t in terms if t is not None], articles, insert)


def apply_glossary(translation: Translation, glossary: Glossary, articles: bool = True
                   ) -> tuple[Translation, tuple[AppliedTerm, ...]]:
    """`translation` with the glossary applied to each hypothesis (see `apply_terms`).

    Word matrices and word scores keep the rows of the words kept; a word
    written for a term has a zero row and the score 0.0 (given, not predicted).
    Each hypothesis carries its terms (`Hypothesis.applied_terms`); one
    without any is the hypothesis given.

    Returns:
        The new translation, and the terms applied to its best hypothesis.
    """
    hypotheses, applied = [], ()
    for n, hypothesis in enumerate(translation.nbest):
        result = apply_terms(translation.source, hypothesis.text, hypothesis.word_alignment,
                             glossary, articles)
        if n == 0:
            applied = result.applied
        if not result.applied:
            hypotheses.append(hypothesis)
            continue
        hypotheses.append(dataclasses.replace(
            hypothesis, text=result.text, word_alignment=result.word_alignment,
            word_matrix=_rows(hypothesis.word_matrix, result.target_words),
            word_scores=_rows(hypothesis.word_scores, result.target_words),
            applied_terms=result.applied))
    return dataclasses.replace(translation, nbest=tuple(hypotheses)), applied


def translating_with_glossary(translate: Callable[[Sequence[str]], Sequence[Translation]],
                              glossary: Glossary | None
                              ) -> Callable[[Sequence[str]], list[Translation]]:
    """`translate` with the glossary applied to each sentence's translation (as the
    whole-file formats and the batch jobs take it); `translate` itself without terms."""
    if glossary is None or not len(glossary):
        return translate

    def translate_with_terms(sentences: Sequence[str]) -> list[Translation]:
        return [apply_glossary(result, glossary)[0] for result in translate(sentences)]

    return translate_with_terms


def _rows(values, kept: Sequence[int | None]) -> np.ndarray | None:
    """Row `kept[w]` of `values` for each new word `w`, zeros for a written word."""
    if values is None:
        return None
    values = np.asarray(values)
    out = np.zeros((len(kept), *values.shape[1:]), values.dtype)
    for new, old in enumerate(kept):
        if old is not None and old < len(values):
            out[new] = values[old]
    return out


def _term(match: TermMatch, words: tuple[int, ...], source: str, agree: bool) -> _Term | None:
    choice = agreement.written(match, source, agree)
    if choice is None:  # no form fits: left out
        return None
    participle = match.verb and choice.form in ("past", "participle")
    return _Term(match, words, choice.text, form=choice.form, accepted=choice.accepted,
                 participle=participle)


# ---------------------------------------------------------------------------------------------
# Placing the terms.


def _place(text: str, links: Sequence[Link], terms: Sequence[_Term],
           articles: bool, insert: bool = True) -> TermsApplied:
    targets = word_spans(text)
    if not terms:
        return TermsApplied(text, tuple(links), (), tuple(range(len(targets))))
    linked: dict[int, list[int]] = {}
    for i, j in links:
        if 0 <= j < len(targets) and re.search(r"\w", text[slice(*targets[j])]):
            linked.setdefault(i, []).append(j)
    edits: list[_Edit] = []
    for term in terms:
        region, placement = _aligned_region(text, targets, linked, term)
        already = None if placement == "copied" else _written_already(text, term, region, edits)
        if already is not None:
            edits.append(_Edit(*already, text[slice(*already)], (0, already[1] - already[0]),
                               "found", term))
            continue
        if region is None or _taken(region, edits):
            if not insert:
                continue
            point = _neighbour_point(text, targets, linked, term.words, edits)
            region, placement = (point, point), "neighbour"
        edit = _edit(text, region, term, placement, articles)
        if _taken((edit.start, edit.end), edits):  # the article is another term's
            edit = _edit(text, region, term, placement, False)
        edits.append(edit)
    return _rebuilt(text, targets, links, sorted(edits, key=lambda e: (e.start, e.end)))


def _aligned_region(text: str, targets: list[Span], linked: dict[int, list[int]],
                    term: _Term) -> tuple[Span | None, str]:
    """The characters to replace: those of the copied stand-in, else those of the target
    words linked to the term (first to last) but for outer punctuation and elision."""
    if term.at is not None:
        return term.at, "copied"
    js = sorted(j for i in term.words for j in linked.get(i, ()))
    if not js:
        return None, "aligned"
    skipped = _kept_before(term)
    while len(js) > 1 and text[slice(*targets[js[0]])].casefold() in skipped:
        js = js[1:]
    first, last = targets[js[0]], targets[js[-1]]
    start = _LEAD.match(text, *first).end()
    end = last[0] + _TRAIL.search(text[last[0]:last[1]]).start()
    if start >= end:  # a word that is only an elided article (`l'`): take it whole
        start, end = first[0], last[1]
    return (start, end), "aligned"


def _kept_before(term: _Term) -> frozenset[str]:
    """The words the model wrote before a term's own that stay when aligned to it: a verb's
    auxiliaries (for the participle, which drops its `se` too) and prepositions (`de`
    before an infinitive), a possessive's `de`."""
    if term.participle:
        return _AUXILIARIES | _VERB_PREPOSITIONS
    if term.match.verb:
        return _VERB_PREPOSITIONS
    return _OF if term.form in ("possessive", "plural possessive") else frozenset()


def _written_already(text: str, term: _Term, region: Span | None,
                     edits: Sequence[_Edit]) -> Span | None:
    """Where the translation already has the term as written (any case, whole words) and no
    other term is: the occurrence nearest the aligned region; None if it has none."""
    found = []
    if term.written.lower() in text.lower():  # most often not: no pattern to compile
        pattern = rf"(?<!\w){re.escape(term.written)}(?!\w)"
        found = [m.span() for m in re.finditer(pattern, text, re.IGNORECASE)
                 if not _taken(m.span(), edits)]
    if not found and term.accepted and region is not None:  # the model's form, where aligned
        found = [m.span() for m in re.finditer(rf"(?<!\w){term.accepted}(?!\w)",
                                               text[:region[1]], re.IGNORECASE)
                 if m.start() >= region[0] and not _taken(m.span(), edits)]
    if not found:
        return None
    near = region[0] if region is not None else 0
    return min(found, key=lambda span: abs(span[0] - near))


def _taken(region: Span, edits: Sequence[_Edit]) -> bool:
    return any(region[0] < e.end and e.start < region[1] for e in edits)


def _neighbour_point(text: str, targets: list[Span], linked: dict[int, list[int]],
                     words: Sequence[int], edits: Sequence[_Edit]) -> int:
    """Where to insert a term nothing is linked to: after the target of the nearest
    source word on its left with one, else before that of the nearest on its right."""
    first, last = min(words, default=0), max(words, default=0)
    left = [i for i in linked if i < first]
    right = [i for i in linked if i > last]
    if left and (not right or first - max(left) <= min(right) - last):
        a, b = targets[max(linked[max(left)])]
        point = a + re.search(r"[^\w'’]*$", text[a:b]).start()
    elif right:
        a, b = targets[min(linked[min(right)])]
        point = a + len(re.match(r"[^\w]*", text[a:b])[0])
    else:
        point = _TRAIL.search(text.rstrip()).start()
    for edit in edits:  # never inside another term's words
        if edit.start < point < edit.end:
            point = edit.end
    return point


def _edit(text: str, region: Span, term: _Term, placement: str, articles: bool) -> _Edit:
    """The edit writing `term` over `region` (an insertion when empty), with its article
    adjusted and a capital where it starts the sentence in place of one."""
    start, end = region
    before = after = ""
    if start == end:  # inserted: spaces where it touches a word
        before = " " if start > 0 and not (text[start - 1].isspace()
                                           or text[start - 1] in "'’") else ""
        after = " " if end < len(text) and (text[end].isalnum() or text[end] in "«(\"'") else ""
    cut, article = (_article(text, start, term.written, _is_plural(term), bool(before))
                    if articles and not term.match.verb else (start, ""))
    head, written = article or before, term.written
    if not re.search(r"\w", text[:cut]):  # the sentence starts here
        replaced = text[cut:end]
        if (replaced[:1].isupper() if placement == "aligned" and replaced else True):
            if head.strip():
                head = _capitalised(head)
            elif not term.match.entry.keep:
                written = _capitalised(written)
    return _Edit(cut, end, head + written + after, (len(head), len(head) + len(written)),
                 placement, term)


def _capitalised(text: str) -> str:
    k = len(text) - len(text.lstrip())
    return text[:k] + text[k:k + 1].upper() + text[k + 1:]


def _is_plural(term: _Term) -> bool:
    """The term reads as a plural: matched as an English plural, or written in the plural
    on both sides (`masks` -> `masques`)."""
    if term.match.plural:
        return True
    first = term.written.split(" ")[0]
    return first[-1:] in ("s", "x") and term.match.text[-1:] in ("s", "S") and not (
        term.match.text.endswith(("ss", "us", "is")))


def _article(text: str, start: int, term: str, plural: bool,
             adjacent: bool = False) -> tuple[int, str]:
    """`(cut, article)`: `text[cut:start]` is to become `article` (with its space or
    apostrophe); `(start, "")` when nothing changes. `adjacent`: the term is inserted
    right after the word before it (no space between). `à les` and `de les` contract."""
    cut, article = _article_before(text, start, term, plural, adjacent)
    if article.casefold() == "les ":
        previous = _WORD_BEFORE.search(text, 0, cut)
        if previous and previous.end() == cut and previous[1].casefold() in _CONTRACTED:
            return previous.start(), _same_case(previous[1],
                                                _CONTRACTED[previous[1].casefold()]) + " "
    return cut, article


def _article_before(text: str, start: int, term: str, plural: bool,
                    adjacent: bool) -> tuple[int, str]:
    vowel = term[:1].casefold() in _VOWEL
    elided = _ELIDED.search(text, 0, start)
    if elided and elided.end() == start:
        word = elided[1]
        if word.casefold() == "l" and (plural or not vowel):
            full = "les" if plural else ("la" if term.split(" ")[0].endswith("e") else "le")
        elif not vowel:
            full = _FULL[word.casefold()]
        else:
            return start, ""
        return elided.start(), _same_case(word, full) + " "
    previous = (_WORD_ADJACENT if adjacent else _WORD_BEFORE).search(text, 0, start)
    if previous is None or previous.end() != start:
        return start, ""
    word = previous[1]
    key = word.casefold()
    if plural and key in _PLURAL:
        return previous.start(), _same_case(word, _PLURAL[key]) + " "
    if vowel and key in _ELIDES and not plural:
        return previous.start(), _same_case(word, _ELIDES[key])
    return start, ""


def _same_case(like: str, word: str) -> str:
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


def _rebuilt(text: str, targets: list[Span], links: Sequence[Link],
             edits: Sequence[_Edit]) -> TermsApplied:
    """The text with `edits` made, its links and the terms' spans."""
    pieces, cursor, shift, shifts, applied, spans = [], 0, 0, [], [], []
    for edit in edits:
        pieces += [text[cursor:edit.start], edit.replacement]
        new_start = edit.start + shift
        span = (new_start + edit.written[0], new_start + edit.written[1])
        spans.append(span)
        match = edit.term.match
        applied.append(AppliedTerm(match.entry.source, edit.replacement[slice(*edit.written)],
                                   (match.start, match.end), span, edit.placement,
                                   match.text, edit.term.form))
        shift += len(edit.replacement) - (edit.end - edit.start)
        shifts.append((edit.start, edit.end, shift))
        cursor = edit.end
    pieces.append(text[cursor:])
    new_text = "".join(pieces)
    new_words = word_spans(new_text)
    starts = [a for a, _ in new_words]
    written = [{k for k, (a, b) in enumerate(new_words) if a < s1 and s0 < b}
               for s0, s1 in spans]
    all_written = set().union(*written)
    kept: list[int | None] = []
    for a, b in targets:
        if any(a < end and start < b for start, end, _ in shifts if start < end):
            kept.append(None)
            continue
        moved = a + next((s for start, end, s in reversed(shifts) if end <= a), 0)
        k = bisect.bisect_right(starts, moved) - 1
        kept.append(None if k in all_written else k)
    new_links = {(i, kept[j]) for i, j in links if 0 <= j < len(kept) and kept[j] is not None}
    for edit, words in zip(edits, written, strict=True):
        new_links |= {(i, k) for i in edit.term.words for k in words}
    origin: list[int | None] = [None] * len(new_words)
    for old, new in enumerate(kept):
        if new is not None:
            origin[new] = old
    order = sorted(range(len(applied)), key=lambda k: applied[k].source_span)
    return TermsApplied(new_text, tuple(sorted(new_links)), tuple(applied[k] for k in order),
                        tuple(origin))


# ---------------------------------------------------------------------------------------------
# The alternative: terms read as numbers the model copies.


@dataclasses.dataclass(frozen=True)
class ProtectedTerms:
    """A sentence whose glossary terms the model reads as numbers.

    Attributes:
        given: the sentence as given.
        text: what the model reads: each term replaced by its stand-in.
        terms: the terms (with their source words in `text`'s words) and,
            in order, their stand-ins.
        stand_ins: the stand-in of each term.
        given_words: per whitespace word of `text`, the words of `given` it
            stands for (a stand-in: its term's).
    """

    given: str
    text: str
    terms: tuple[_Term, ...]
    stand_ins: tuple[str, ...]
    given_words: tuple[tuple[int, ...], ...]  # per word of `text`, the words given

    def restore(self, translation: str, word_alignment: Sequence[Link],
                articles: bool = True) -> TermsApplied:
        """The translation of `text` with each stand-in replaced by its term where the model
        copied it, else placed as `apply_terms` does; links on the words given."""
        used: set[int] = set()
        terms = []
        for term, stand_in in zip(self.terms, self.stand_ins, strict=True):
            found = next((m for m in re.finditer(rf"(?<![\w.,]){stand_in}(?!\w)", translation)
                          if m.start() not in used), None)
            if found is not None:
                used.add(found.start())
                term = dataclasses.replace(term, at=found.span())
            terms.append(term)
        result = _place(translation, word_alignment, terms, articles)
        links = {(g, j) for i, j in result.word_alignment
                 if 0 <= i < len(self.given_words) for g in self.given_words[i]}
        return dataclasses.replace(result, word_alignment=tuple(sorted(links)))


def protect_terms(source: str, glossary: Glossary) -> ProtectedTerms:
    """`source` with each glossary term replaced by a number, `STAND_IN` + k (numbers the
    source holds skipped); see `ProtectedTerms.restore`."""
    matches = [m for m in glossary.find(source) if agreement.written(m, source) is not None]
    taken = set(re.findall(r"\d+", source))
    numbers = (str(n) for n in range(STAND_IN, STAND_IN + len(taken) + len(matches) + 1)
               if str(n) not in taken)
    stand_ins = [next(numbers) for _ in matches]
    pieces, cursor, read_spans = [], 0, []
    for match, stand_in in zip(matches, stand_ins, strict=True):
        pieces.append(source[cursor:match.start])
        start = sum(len(p) for p in pieces)
        read_spans.append((start, start + len(stand_in)))
        pieces.append(stand_in)
        cursor = match.end
    pieces.append(source[cursor:])
    text = "".join(pieces)
    read_words, given = word_spans(text), word_spans(source)
    given_words = []
    for a, b in read_words:  # the characters of the source this word of `text` stands for
        start, end = _given_offset(a, matches, read_spans), _given_offset(b, matches, read_spans)
        given_words.append(words_overlapping(given, start, max(end, start + 1)))
    terms = tuple(_term(m, words_overlapping(read_words, *span), source, True)
                  for m, span in zip(matches, read_spans, strict=True))
    return ProtectedTerms(source, text, terms, tuple(stand_ins), tuple(given_words))


def _given_offset(position: int, matches: Sequence[TermMatch],
                  read_spans: Sequence[Span]) -> int:
    """The offset in the source of `position` in the text read (a stand-in: its term)."""
    shift = 0
    for match, (a, b) in zip(matches, read_spans, strict=True):
        if position < a:
            break
        if position <= b:
            return match.start if position == a else match.end
        shift = match.end - b
    return position + shift


# The other alternative: a model trained with inline annotations writes the terms itself.


@dataclasses.dataclass(frozen=True)
class AnnotatedTerms:
    """A sentence whose glossary terms carry, inline, the French form to write.

    Attributes:
        given: the sentence as given.
        text: what the model reads (`documents.term_annotation.annotate`).
        terms: the terms, with their source words in `text`'s words (the
            term's and its annotation's).
        given_words: per whitespace word of `text`, the words of `given` it
            stands for.
    """

    given: str
    text: str
    terms: tuple[_Term, ...]
    given_words: tuple[tuple[int, ...], ...]

    def restore(self, translation: str, word_alignment: Sequence[Link],
                articles: bool = True) -> TermsApplied:
        """The model's translation of `text` without any mark it wrote, each term it did not
        write placed as `apply_terms` does; links on the words given."""
        translation, kept = remove_marks(translation)
        links = [(i, kept[j]) for i, j in word_alignment
                 if 0 <= j < len(kept) and kept[j] is not None]
        result = _place(translation, links, self.terms, articles)
        given = {(g, j) for i, j in result.word_alignment
                 if 0 <= i < len(self.given_words) for g in self.given_words[i]}
        return dataclasses.replace(result, word_alignment=tuple(sorted(given)))


def annotate_terms(source: str, glossary: Glossary) -> AnnotatedTerms:
    """`source` with the French form of each glossary term (`documents.agreement`) after it,
    for a model trained so; a source that holds the mark itself is left as given (its
    terms are then placed after translation, as `apply_terms` does)."""
    matches = glossary.find(source)
    spans = word_spans(source)
    terms = [(m, _term(m, words_overlapping(spans, m.start, m.end), source, True)) for m in matches]
    terms = [(m, t) for m, t in terms if t is not None]
    if MARK in source:
        return AnnotatedTerms(source, source, tuple(t for _, t in terms),
                              tuple((k,) for k in range(len(spans))))
    text, given_words = annotate(source, [(m.start, m.end, t.written) for m, t in terms])
    read = tuple(dataclasses.replace(t, words=tuple(
        k for k, words in enumerate(given_words) if set(words) & set(t.words)))
        for _, t in terms)
    return AnnotatedTerms(source, text, read, given_words)
