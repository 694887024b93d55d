"""Word links as character spans, so a client can highlight without re-tokenizing.

Word links (`nmt.types.Hypothesis.word_alignment`) count the
whitespace-separated words of the source and of the translation. Here each
link becomes the character spans of its two words, Python style
(`(start, end)`, end excluded), and `format_char_links` writes them as Azure
Translator does (`srcStart:srcEnd-tgtStart:tgtEnd`, both ends included):

    link_spans("The cat", "Le chat", [(0, 0), (1, 1)])
    -> [((0, 3), (0, 2)), ((4, 7), (3, 7))]
    format_char_links(...) -> "0:2-0:1 4:6-3:6"

For documents the spans are on the document as given and on its
translation (`document_link_spans`); for markup, `documents.markup` gives them on
the markup as given and on the translated markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# format_char_links is defined in nmt.types (the clients parse what it writes).
from nmt.types import Span, SpanLink, format_char_links  # noqa: F401


def word_spans(text: str) -> list[Span]:
    """`(start, end)` of each whitespace-separated word of `text`, in order.

    The words are `text.split()`'s, so word i of the links is span i here.
    """
    spans, start = [], None
    for i, char in enumerate(text):
        if char.isspace():
            if start is not None:
                spans.append((start, i))
                start = None
        elif start is None:
            start = i
    if start is not None:
        spans.append((start, len(text)))
    return spans


def words_overlapping(spans: Sequence[Span], start: int, end: int) -> tuple[int, ...]:
    """The indices of the words of `spans` (`word_spans`) overlapping `[start, end)`."""
    return tuple(k for k, (a, b) in enumerate(spans) if a < end and start < b)


def link_spans(source: str, target: str, links: Iterable[tuple[int, int]],
               source_offset: int = 0, target_offset: int = 0) -> list[SpanLink]:
    """Each word link as `(source_span, target_span)`, sorted by source then target.

    Args:
        source, target: the two texts whose whitespace words the links count.
        links: `(source_word, target_word)` pairs, 0-based.
        source_offset, target_offset: added to every span (where the texts
            start inside a larger text).

    Returns:
        The links as character spans.

    Raises:
        ValueError: a link names a word the text does not have.
    """
    sources, targets = word_spans(source), word_spans(target)
    pairs = []
    for i, j in sorted(set(links)):
        if not (0 <= i < len(sources) and 0 <= j < len(targets)):
            raise ValueError(f"Link {i}-{j} names a word beyond the {len(sources)} source and "
                             f"{len(targets)} target words; give links of these texts")
        pairs.append((_shift(sources[i], source_offset), _shift(targets[j], target_offset)))
    return pairs


def _shift(span: Span, offset: int) -> Span:
    return (span[0] + offset, span[1] + offset)


def document_link_spans(document) -> list[SpanLink]:
    """The links of every sentence of a `documents.sentences.DocumentTranslation`, as spans.

    Source spans are on the document as given; target spans on its translation.
    """
    pairs = []
    for sentence in document.sentences:
        start, end = sentence.source_span
        pairs += link_spans(document.source[start:end], sentence.result.text,
                            sentence.result.word_alignment,
                            source_offset=start, target_offset=sentence.target_span[0])
    return pairs
