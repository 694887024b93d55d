"""Sentences whose placeholders come back exactly: what the model reads, and the
translation given back.

A sentence with placeholders (`documents.placeholders`) is read by the
model without them; each comes back verbatim, once, where the word links put
it (`documents.markup.plan_text`, the same projection as standalone tags).
A sentence without one goes to the model as it is and its result is given
back untouched:

    protected = protect(sentences)
    results = translator.translate(protected.sentences)      # what the model reads
    translations = protected.restore(results)                 # one per sentence given

A restored `Translation` has `source` as given, and each hypothesis' `text`
with its placeholders; `word_alignment`, `word_matrix` and `word_scores`
count the whitespace words of those two texts (a word that is only
placeholders has no link, a zero matrix row or column and the score 0.0: it
was given, not predicted). Tokens, piece scores and the attention matrices stay
those of the sentence the model read. A sentence that is only placeholders
and punctuation (`%s:`) is not sent to the model: its translation is itself.

Nothing here imports TensorFlow.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from documents.markup import MarkupPlan, plan_text
from documents.offsets import word_spans
from documents.placeholders import find_placeholders
from nmt.types import Hypothesis, Span, Translation, sentence_list


@dataclasses.dataclass(frozen=True)
class ProtectedSentences:
    """A batch of sentences, their placeholders taken out.

    Attributes:
        given: the sentences as given.
        plans: per sentence, the plan of its placeholders (one unit, or none
            for a sentence of placeholders only), or None for a sentence
            without placeholders, which the model reads as it is.
    """

    given: tuple[str, ...]
    plans: tuple[MarkupPlan | None, ...]

    @property
    def sentences(self) -> list[str]:
        """What the model reads: one entry per sentence given, but for those made only
        of placeholders; a sentence without placeholders exactly as given."""
        out = []
        for sentence, plan in zip(self.given, self.plans, strict=True):
            out += [sentence] if plan is None else plan.sentences
        return out

    def restore(self, results: Sequence[Translation | str]) -> list[Translation | str]:
        """One translation per sentence given, from the results of `sentences`.

        A result that is an error message (a str, as the batch job's
        `translate_or_explain` gives for a sentence the engine rejected) is
        given back as it is.

        Raises:
            ValueError: not one result per entry of `sentences`.
        """
        expected = len(self.sentences)
        if len(results) != expected:
            raise ValueError(f"Expected one result per sentence read ({expected}). "
                             f"Received: {len(results)} results")
        restored, k = [], 0
        for sentence, plan in zip(self.given, self.plans, strict=True):
            if plan is None or (plan.units and isinstance(results[k], str)):
                restored.append(results[k])
                k += 1
            elif not plan.units:
                restored.append(_given_as_is(sentence))
            else:
                restored.append(_restored(sentence, plan, results[k]))
                k += 1
        return restored


def protect(sentences: Sequence[str], enabled: bool = True) -> ProtectedSentences:
    """The sentences' placeholders taken out (see the module docstring).

    Args:
        sentences: the source sentences (a list, not a single string).
        enabled: False reads every sentence as it is (placeholders off).

    Raises:
        TypeError: `sentences` is a single string, or holds a non-string.
    """
    sentences = sentence_list(sentences)
    plans = tuple(plan_text(s, split=False) if enabled and find_placeholders(s) else None
                  for s in sentences)
    return ProtectedSentences(tuple(sentences), plans)


def translate_protected(sentences: Sequence[str],
                        translate: Callable[[list[str]], Sequence[Translation]],
                        enabled: bool = True) -> list[Translation]:
    """`translate(sentences)` with the sentences' placeholders carried across.

    Args:
        sentences: the source sentences.
        translate: sentences -> one `Translation` each, e.g. `Translator.translate`.
        enabled: False calls `translate(sentences)` as it is.
    """
    protected = protect(sentences, enabled)
    read = protected.sentences
    return protected.restore(list(translate(read)) if read else [])


def _given_as_is(sentence: str) -> Translation:
    """The translation of a sentence of placeholders and punctuation only: itself."""
    empty = np.zeros((0, 0), np.float32)
    words = len(sentence.split())
    return Translation(source=sentence, source_tokens=(), nbest=(Hypothesis(
        text=sentence, target_tokens=(), score=0.0, alignment=empty, word_alignment=(),
        word_matrix=np.zeros((words, words), np.float32),
        word_scores=np.zeros(words, np.float32)),))


def _restored(sentence: str, plan: MarkupPlan, result: Translation) -> Translation:
    """`result` (of `plan.sentences[0]`) with each hypothesis' placeholders put back."""
    source_words = _word_indices(word_spans(sentence), plan.word_spans[0])
    return Translation(source=sentence, source_tokens=result.source_tokens,
                       nbest=tuple(_hypothesis(plan, h, source_words) for h in result.nbest))


def _hypothesis(plan: MarkupPlan, hypothesis: Hypothesis, source_words: list[int]) -> Hypothesis:
    joined = plan.join([hypothesis])
    target = word_spans(joined.text)
    target_words = _word_indices(target, joined.target_word_spans[0])
    links = tuple(sorted({(source_words[i], target_words[j])
                          for i, j in hypothesis.word_alignment
                          if 0 <= i < len(source_words) and 0 <= j < len(target_words)}))
    shape = (len(target), len(word_spans(plan.text)))
    return dataclasses.replace(
        hypothesis, text=joined.text, word_alignment=links,
        word_matrix=_scatter(hypothesis.word_matrix, shape, target_words, source_words),
        word_scores=_scatter(hypothesis.word_scores, shape[:1], target_words))


def _word_indices(words: Sequence[Span], read: Sequence[Span]) -> list[int]:
    """For each word read by the model (`read`, spans in a text), the index of the
    whitespace word of that text holding it (`words`, that text's word spans)."""
    starts = [start for start, _ in words]
    return [bisect.bisect_right(starts, start) - 1 for start, _ in read]


def _scatter(values, shape: tuple[int, ...], rows: list[int],
             columns: list[int] | None = None) -> np.ndarray | None:
    """`values` (per word read) at the words given, zeros elsewhere; None stays None."""
    if values is None:
        return None
    values = np.asarray(values)
    out = np.zeros(shape, values.dtype if values.size else np.float32)
    rows = rows[:values.shape[0]]
    if columns is None:
        out[rows] = values[:len(rows)]
    else:
        columns = columns[:values.shape[1]]
        out[np.ix_(rows, columns)] = values[:len(rows), :len(columns)]
    return out
