"""Documents: texts of several sentences and paragraphs, split, translated and joined again.

The model translates one sentence at a time. A document is split into
sentences (sentencex, Wikimedia's rule-based splitter), every sentence of a
batch of documents goes to the translator in one list (so the server's
batching and the batch job's windows see ordinary sentences), and each
document's translation is its sentences' translations joined with the
document's own separators: paragraphs, line breaks and the whitespace between
sentences come back exactly as given.

    plans = split_documents(texts)
    results = translator.translate(sentences_of(plans))
    documents = join_documents(plans, results)

Rules:
- Every line break ends a sentence (as DeepL's `split_sentences=1`), so a
  sentence never holds a line break; inside a line, sentencex decides.
- A sentence is sent to the model with its whitespace runs as single spaces
  (`" ".join(words)`): its words, and so its word links, are those of the
  sentence as given.
- A whitespace-only or empty document has no sentence; its translation is
  the document itself.

Nothing here imports TensorFlow: the results are anything with `.text` and
`.word_alignment` (a `nmt.types.Translation`, or a `TextLinks` made by hand).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Protocol

import sentencex

from documents.offsets import link_spans
from nmt.types import DocumentTranslation, Span, TranslatedSentence  # (also for the clients)

# The language whose abbreviations and punctuation rules split the source.
SOURCE_LANGUAGE = "en"
# The language the model translates into (what whole files are marked as: documents.po, .xliff).
TARGET_LANGUAGE = "fr"
_LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


class SentenceResult(Protocol):
    """What `join` needs of one sentence's result (`nmt.types.Translation` has it)."""

    @property
    def text(self) -> str: ...

    @property
    def word_alignment(self) -> Sequence[tuple[int, int]]: ...


# What translates: sentences -> one result per sentence, in order (`Translator.translate`,
# a gRPC client's `translate`, a test's fake).
Translate = Callable[[list[str]], Sequence[SentenceResult]]


@dataclasses.dataclass(frozen=True)
class TextLinks:
    """A sentence's result given by hand: a target text and word links.

    Attributes:
        text: the target sentence.
        word_alignment: `(source_word, target_word)` links, 0-based, counting
            whitespace-separated words.
        word_matrix: optional soft word matrix `(target words, source words)`;
            markup projection reads it for elements whose words have no link.
    """

    text: str
    word_alignment: tuple[tuple[int, int], ...] = ()
    word_matrix: Sequence[Sequence[float]] | None = dataclasses.field(default=None, compare=False)


@dataclasses.dataclass(frozen=True)
class DocumentPlan:
    """A document and where its sentences are.

    Attributes:
        text: the document as given.
        spans: `(start, end)` of each sentence in `text` (no leading or trailing
            whitespace), in order; what lies between them is kept as given.
    """

    text: str
    spans: tuple[Span, ...]

    @property
    def sentences(self) -> list[str]:
        """The sentences to translate, whitespace runs as single spaces."""
        return [" ".join(self.text[start:end].split()) for start, end in self.spans]


def sentence_spans(text: str, split_lines: bool = True) -> list[Span]:
    """Where the sentences of `text` are.

    Args:
        text: any text.
        split_lines: every line break ends a sentence (plain text); False
            treats line breaks as spaces (markup, where a newline is layout).

    Returns:
        `(start, end)` per sentence, in order, without leading or trailing
        whitespace; none for whitespace.
    """
    if not split_lines:
        return _spans_in_line(_line_breaks_as_spaces(text), 0)
    spans, start = [], 0
    for line in text.splitlines(keepends=True):
        spans.extend(_spans_in_line(line, start))
        start += len(line)
    return spans


def _line_breaks_as_spaces(text: str) -> str:
    """`text` with each line-break character as a space (same length, same offsets)."""
    return text.translate({ord(char): " " for char in _LINE_BREAKS})


def _spans_in_line(line: str, offset: int) -> list[Span]:
    """sentencex's sentences of `line`, trimmed of whitespace, shifted by `offset`."""
    spans = []
    for boundary in sentencex.get_sentence_boundaries(SOURCE_LANGUAGE, line):
        span = _trimmed(line, boundary["start_index"], boundary["end_index"])
        if span is not None:
            spans.append((span[0] + offset, span[1] + offset))
    return spans


def _trimmed(text: str, start: int, end: int) -> Span | None:
    """`(start, end)` without the whitespace at either end; None if only whitespace."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def split_document(text: str) -> DocumentPlan:
    """The plan of one document: its sentences' spans.

    Raises:
        TypeError: `text` is not a str.
    """
    if not isinstance(text, str):
        raise TypeError(f"A document must be a str. Received: {type(text).__name__}")
    return DocumentPlan(text=text, spans=tuple(sentence_spans(text)))


def split_documents(texts: Sequence[str]) -> list[DocumentPlan]:
    """Plans for a batch of documents (see `sentences_of` and `join_documents`).

    Raises:
        TypeError: `texts` is a single string, or holds a non-string.
    """
    if isinstance(texts, str | bytes):
        raise TypeError("texts must be a sequence of documents, not a single string. "
                        f"Received: texts={texts[:40]!r}; wrap it in a list.")
    return [split_document(text) for text in texts]


def sentences_of(plans: Sequence) -> list[str]:
    """All sentences of a batch of plans, in order: one list for one translator call."""
    return [sentence for plan in plans for sentence in plan.sentences]


def join(plan: DocumentPlan, results: Sequence[SentenceResult]) -> DocumentTranslation:
    """One document's translation from its sentences' results.

    Args:
        plan: from `split_document`.
        results: one result per sentence of the plan, in order.

    Returns:
        The translation, with each sentence's source and target span and the word links
        as character spans (`link_spans`).

    Raises:
        ValueError: the number of results is not the plan's number of sentences, or a
            word link names a word its sentence or translation does not have.
    """
    _check_count(len(plan.spans), len(results))
    pieces, sentences, links, source_end, target_length = [], [], [], 0, 0
    for (start, end), result in zip(plan.spans, results, strict=True):
        separator = plan.text[source_end:start]
        target_start = target_length + len(separator)
        target_length = target_start + len(result.text)
        pieces += [separator, result.text]
        sentences.append(TranslatedSentence((start, end), (target_start, target_length), result))
        links += link_spans(plan.text[start:end], result.text, result.word_alignment,
                            source_offset=start, target_offset=target_start)
        source_end = end
    pieces.append(plan.text[source_end:])
    return DocumentTranslation(source=plan.text, text="".join(pieces), sentences=tuple(sentences),
                               link_spans=tuple(links))


def _check_count(expected: int, received: int) -> None:
    if expected != received:
        raise ValueError(f"Expected one result per sentence ({expected}). "
                         f"Received: {received} results")


def join_documents(plans: Sequence, results: Sequence[SentenceResult]) -> list:
    """Each plan's translation from the results of `sentences_of(plans)`, in order.

    Works for `DocumentPlan`s and for `documents.markup` plans (anything with
    `sentences` and `join(results)`, or a `DocumentPlan`).

    Raises:
        ValueError: the number of results is not the plans' number of sentences.
    """
    _check_count(sum(len(plan.sentences) for plan in plans), len(results))
    joined, start = [], 0
    for plan in plans:
        count = len(plan.sentences)
        part = results[start:start + count]
        joined.append(join(plan, part) if isinstance(plan, DocumentPlan) else plan.join(part))
        start += count
    return joined


def translate_documents(texts: Sequence[str], translate: Translate) -> list[DocumentTranslation]:
    """Splits, translates all sentences in one call, and joins.

    Args:
        texts: the documents.
        translate: sentences -> one result per sentence, e.g. `Translator.translate`
            or a gRPC client's `translate`.

    Returns:
        One `DocumentTranslation` per document.
    """
    plans = split_documents(texts)
    sentences = sentences_of(plans)
    return join_documents(plans, list(translate(sentences)) if sentences else [])
