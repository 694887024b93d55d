"""Scoring a model: runs a `Translator` over a test set and measures it.

`score_translations` translates the sources (beam search) and computes
multi-reference BLEU/chrF; `score_alignments` force-decodes gold pairs and
computes the AER of the model's word links. The metrics and the gold readers
themselves are in `nmt.evaluation.metrics`; this module adds the model runs (and
with them TensorFlow).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from nmt.constants import DEFAULT_BATCH_SIZE
from nmt.evaluation.metrics import (
    AlignedPair,
    AlignmentScores,
    Scores,
    alignment_scores,
    corpus_scores,
    group_references,
)
from nmt.inference.translator import Translator
from nmt.types import DecodeOptions, Translation


@dataclasses.dataclass(frozen=True)
class TranslationReport:
    """BLEU/chrF of a test set translated with given options."""

    scores: Scores
    sentences: int
    references_per_sentence: float
    seconds: float
    hypotheses: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class AlignmentReport:
    """AER of forced-decoding alignments against gold links."""

    scores: AlignmentScores
    sentences: int
    word_count_mismatches: int
    # Scores of the pairs whose source has a number of words in each range of
    # `LENGTH_BUCKETS` (attention drifts on long sentences); empty ranges left out.
    by_length: dict[str, AlignmentScores] = dataclasses.field(default_factory=dict)


# Source length ranges, in words, for `AlignmentReport.by_length`: (label, lowest, highest).
LENGTH_BUCKETS = (("1-9", 1, 9), ("10-19", 10, 19), ("20-39", 20, 39), ("40+", 40, None))


def translate_all(translator: Translator, sentences: Sequence[str], options: DecodeOptions,
                  batch_size: int = DEFAULT_BATCH_SIZE) -> list[str]:
    """Translations of `sentences`, batched by length to keep padding small."""
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i]))
    hypotheses: list[str] = [""] * len(sentences)
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        results = translator.translate([sentences[i] for i in chunk], options)
        for i, result in zip(chunk, results, strict=True):
            hypotheses[i] = result.text
    return hypotheses


def score_translations(translator: Translator, pairs: Sequence[tuple[str, str]],
                       options: DecodeOptions,
                       batch_size: int = DEFAULT_BATCH_SIZE) -> TranslationReport:
    """Multi-reference BLEU/chrF: identical sources are grouped with all their references
    (items of `pairs` after the reference, such as a domain, are ignored)."""
    sources, references = group_references((pair[0], pair[1]) for pair in pairs)
    started = time.time()
    hypotheses = translate_all(translator, sources, options, batch_size)
    seconds = time.time() - started
    return TranslationReport(
        scores=corpus_scores(hypotheses, references),
        sentences=len(sources),
        references_per_sentence=sum(map(len, references)) / max(len(references), 1),
        seconds=seconds,
        hypotheses=tuple(hypotheses),
    )


def force_align(translator: Translator, gold: Sequence[AlignedPair],
                batch_size: int = 16, **link_options) -> list[Translation]:
    """The model's forced alignment of every gold pair (`Translator.align`)."""
    results: list[Translation] = []
    for start in range(0, len(gold), batch_size):
        chunk = gold[start:start + batch_size]
        results.extend(translator.align(
            [" ".join(p.source_words) for p in chunk], [" ".join(p.target_words) for p in chunk],
            **link_options,
        ))
    return results


def score_alignments(translator: Translator, gold: Sequence[AlignedPair],
                     batch_size: int = 16, **link_options) -> AlignmentReport:
    """AER of the model's word links, by forced decoding of the gold target.

    Word indices of the model refer to the whitespace words of the source
    and of the (normalised) target; sentences where normalisation changed
    the number of target words are counted in `word_count_mismatches` and
    scored as they are.

    Args:
        link_options: `links` and `link_threshold` of `Translator.align`.
    """
    results = force_align(translator, gold, batch_size, **link_options)
    return alignment_report([set(r.word_alignment) for r in results], gold, results)


def alignment_report(predicted: Sequence[set], gold: Sequence[AlignedPair],
                     results: Sequence[Translation]) -> AlignmentReport:
    """Scores predicted links of forced alignments `results` against `gold`."""
    mismatches = sum(len(result.text.split()) != len(pair.target_words)
                     for pair, result in zip(gold, results, strict=True))
    scores = alignment_scores(predicted, [p.sure for p in gold], [p.possible for p in gold])
    by_length = {}
    for label, lowest, highest in LENGTH_BUCKETS:
        members = [k for k, pair in enumerate(gold)
                   if lowest <= len(pair.source_words) <= (highest or len(pair.source_words))]
        if members:
            by_length[label] = alignment_scores(
                [predicted[k] for k in members], [gold[k].sure for k in members],
                [gold[k].possible for k in members],
            )
    return AlignmentReport(scores=scores, sentences=len(gold), word_count_mismatches=mismatches,
                           by_length=by_length)
