"""Glossaries in documents: each sentence's terms written in, then placed on the document.

A document (plain text, HTML or XML: `documents.markup.plan_document`) is
translated sentence by sentence; the glossary is applied to each sentence's
translation (`documents.terminology.apply_glossary`) *before* the document is
joined, so that inline tags and placeholders are put back through the word
links that hold the terms:

    plans = [plan_document(text, "html") for text in texts]
    results = translator.translate(sentences_of(plans))
    documents = apply_glossary_to_documents(plans, results, glossary)
    documents[0].applied_terms    # spans on the document as given and on its translation

Spans on the document: a term's characters are found word by word, each
word's characters in the document read with its tags skipped and an entity
(`&amp;`) as the character it stands for, so a span is exact to the
character (`<b>face mask</b>.` gives `face mask`); a word the document
writes otherwise (never expected) widens the span to the whole word. Spans
run from the first to the last character of the term, tags between its
words included.

Nothing here imports TensorFlow.
"""

from __future__ import annotations

import bisect
import dataclasses
import html
import re
from collections.abc import Sequence

from documents.glossary import Glossary
from documents.offsets import word_spans
from documents.sentences import DocumentPlan, join_documents
from documents.terminology import apply_glossary
from nmt.types import DocumentTranslation, Span, Translation

_RAW_PIECE = re.compile(r"<[^<>]*>|&(?:#\d+|#[xX][0-9a-fA-F]+|\w+);|.", re.DOTALL)


def apply_glossary_to_documents(plans: Sequence, results: Sequence[Translation],
                                glossary: Glossary | None) -> list[DocumentTranslation]:
    """`join_documents(plans, results)` with the glossary applied to every sentence first.

    Args:
        plans: document plans (`DocumentPlan`, `MarkupPlan`).
        results: one `Translation` per sentence of `sentences_of(plans)`.
        glossary: the terms; None (or no entry): the documents as `join_documents`
            makes them.

    Returns:
        One translated document per plan, each with its `applied_terms`.
    """
    if glossary is None or not len(glossary):
        return join_documents(plans, results)
    results = [apply_glossary(result, glossary)[0] for result in results]
    return [with_document_terms(plan, document)
            for plan, document in zip(plans, join_documents(plans, results), strict=True)]


def with_document_terms(plan, document: DocumentTranslation) -> DocumentTranslation:
    """`document` with `applied_terms`: the terms of each sentence's best hypothesis
    (`Hypothesis.applied_terms`) placed on the document as given and on its translation.

    Args:
        plan: the document's plan (`DocumentPlan`, or a `MarkupPlan` with `word_spans`).
        document: `plan.join(...)`'s (or `join_documents`') result for it.
    """
    sources = _source_words(plan)
    targets = getattr(document, "target_word_spans", None)
    terms = []
    for k, sentence in enumerate(document.sentences):
        best = sentence.result.nbest[0] if sentence.result.nbest else None
        if best is None or not best.applied_terms:
            continue
        if targets is None:  # plain text: the sentence's translation as it is
            start = sentence.target_span[0]
            target_words = [(a + start, b + start) for a, b in word_spans(best.text)]
        else:
            target_words = list(targets[k])
        read = _Words(sentence.result.source, sources[k], document.source)
        written = _Words(best.text, target_words, document.text)
        terms += [dataclasses.replace(term, source_span=read.on_document(term.source_span),
                                      target_span=written.on_document(term.target_span))
                  for term in best.applied_terms]
    return dataclasses.replace(document, applied_terms=tuple(terms))


def _source_words(plan) -> list[list[Span]]:
    """Per sentence of the plan, each word the model read as its span in the document."""
    if isinstance(plan, DocumentPlan):
        return [[(start + a, start + b) for a, b in word_spans(plan.text[start:end])]
                for start, end in plan.spans]
    return [list(spans) for spans in plan.word_spans]


@dataclasses.dataclass(frozen=True)
class _Words:
    """A sentence as read (or written), where each of its words is in the document, and
    the document."""

    text: str
    spans: list[Span]  # per whitespace word of `text`
    document: str

    def on_document(self, span: Span) -> Span:
        """`span` on `text` as characters of the document (see the module docstring)."""
        words = word_spans(self.text)
        if len(words) != len(self.spans) or not words:
            return span  # not the document's words: left on the sentence (never expected)
        return self._at(span[0], words, start=True), self._at(span[1], words, start=False)

    def _at(self, position: int, words: list[Span], start: bool) -> int:
        ends = [b for _, b in words]
        k = min(bisect.bisect_left(ends, position + (1 if start else 0)), len(words) - 1)
        (a, b), (da, db) = words[k], self.spans[k]
        chars = _char_spans(self.document[da:db], self.text[a:b])
        if chars is None:
            return da if start else db
        offset = min(max(position - a, 0), b - a)
        if start:
            return da + (chars[offset][0] if offset < len(chars) else db - da)
        return da + (chars[offset - 1][1] if offset > 0 else 0)


def _char_spans(raw: str, word: str) -> list[Span] | None:
    """Per character of `word`, its characters in `raw` (the word as the document writes
    it: tags skipped, an entity the character it stands for); a character `raw` lacks (a
    punctuation mark a tag split off) gets an empty span at the nearest end. None if `raw`
    does not read as part of `word`."""
    read, spans = [], []
    for piece in _RAW_PIECE.finditer(raw):
        text = piece.group()
        if text.startswith("<") and len(text) > 1:
            continue
        char = html.unescape(text) if text.startswith("&") else text
        read.append(char)
        spans += [piece.span()] * len(char)
    at = word.find("".join(read))
    if at < 0 or not read:
        return None
    before, after = [(0, 0)] * at, [(len(raw), len(raw))] * (len(word) - at - len(spans))
    return before + spans + after
