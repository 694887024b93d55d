"""Inline term annotations: a source sentence that carries the translation of its terms.

Dinu et al. 2019 ("Training Neural Machine Translation To Apply Terminology
Constraints") append to each source term the target it must become, and train
on a share of the corpus annotated so; the model learns to copy the target
there, and to fit its neighbours to it. They mark the three kinds of word with
source factors; our models read text, so the target is marked in the text, by
a character the vocabulary holds as one piece and the corpora never use:

    annotate("Three patients were hospitalized yesterday.", [(21, 33, "hospitalisés")])
    -> "Three patients were hospitalized ‽ hospitalisés ‽ yesterday."

The same function writes the training pairs (`training.term_annotation`, the
targets taken from the reference through its word alignment) and what a model
so trained reads at translation time (`documents.terminology.annotate_terms`),
so the two cannot drift apart.

Nothing here imports TensorFlow.
"""

from __future__ import annotations

from collections.abc import Sequence

from documents.offsets import word_spans, words_overlapping
from nmt.types import Span

MARK = "‽"  # one piece of the version-10 vocabulary, in none of its training corpora


def annotate(source: str, terms: Sequence[tuple[int, int, str]]
             ) -> tuple[str, tuple[tuple[int, ...], ...]]:
    """`source` with ` ‽ target ‽` after each term.

    Args:
        source: the sentence.
        terms: `(start, end, target)` per term: `source[start:end]` is the
            term, `target` what it must become; in any order, not overlapping.

    Returns:
        `(text, source_words)`: the annotated text and, for each whitespace
        word of it, the whitespace words of `source` it stands for (a marker
        or a target word: every word of its term), so that links read on the
        text map back onto the sentence given.

    Raises:
        ValueError: terms that overlap, fall outside the sentence, or a
            target or source holding the marker itself.
    """
    if MARK in source:
        raise ValueError(f"the sentence holds the annotation mark {MARK!r}; "
                         f"remove it before annotating. Received: {source!r}")
    ordered = sorted(terms)
    parts, cursor, added = [], 0, []  # added: (start, end) in the text, the term's span
    for start, end, target in ordered:
        if not 0 <= cursor <= start < end <= len(source):
            raise ValueError(f"terms must lie in the sentence without overlapping. "
                             f"Received: {(start, end)} after {cursor} in {len(source)} characters")
        if MARK in target or not target.strip():
            raise ValueError(f"a term's target must be words without {MARK!r}. "
                             f"Received: {target!r}")
        parts.append(source[cursor:end])
        at = sum(len(p) for p in parts)
        inserted = f" {MARK} {' '.join(target.split())} {MARK}"
        parts.append(inserted)
        added.append(((at, at + len(inserted)), (start, end)))
        cursor = end
    parts.append(source[cursor:])
    text = "".join(parts)
    given = word_spans(source)
    source_words = []
    for a, b in word_spans(text):
        source_words.append(_given_words(a, b, added, given))
    return text, tuple(source_words)


def _given_words(a: int, b: int, added: Sequence[tuple[Span, Span]],
                 given: Sequence[Span]) -> tuple[int, ...]:
    """The words of the sentence given that the text's word `[a, b)` stands for."""
    shift = 0
    for (start, end), term in added:
        if b <= start:
            break
        if a < end:  # inside an annotation: its term's words
            return words_overlapping(given, *term)
        shift += end - start
    return words_overlapping(given, a - shift, b - shift)


def remove_marks(text: str) -> tuple[str, tuple[int | None, ...]]:
    """A translation without any mark the model wrote.

    Returns:
        `(text, kept)`: the text without the marks and the spaces they leave
        (punctuation glued to a mark goes back onto the word before it: "deux
        ‽ flambées ‽," -> "deux flambées,"), and per whitespace word of the
        text given, its index in the new text, or None for a word that was
        only marks.
    """
    if MARK not in text:
        return text, tuple(range(len(text.split())))
    kept: list[int | None] = []
    words: list[str] = []
    for word in text.split():
        bare = word.replace(MARK, "")
        if not bare:
            kept.append(None)
        elif word.startswith(MARK) and words and not any(c.isalnum() for c in bare):
            words[-1] += bare
            kept.append(len(words) - 1)
        else:
            words.append(bare)
            kept.append(len(words) - 1)
    return " ".join(words), tuple(kept)
