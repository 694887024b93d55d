"""Output records of a batch job and how they are written (JSON Lines or text).

One record per input line, shared by `nmt batch` and the Beam pipeline:

    {"line": 3, "source": "...", "translation": "...", "score": -0.4213,
     "confidence": -0.3125, "word_alignment": "0-0 1-1", "error": null}

with `source_tokens`, `target_tokens` and `alignment` (a `(T, S)` list of
lists) added when alignments are asked for, `word_scores` when the model
returns them, and `nbest` when more than one hypothesis is. `confidence` is
the mean log-probability per target piece and `word_scores` each target
word's mean piece log-probability (`nmt.inference.confidence`). A line that is not
translated has `translation`, `score`, `confidence` and `word_alignment` null
and says why in `error`.

A job of documents (`--document-format text|html|xml`: each line one
document) writes the translated document and, per sentence, its spans and
the record of its translation (`source` being the sentence as the model
read it); `char_alignment` holds the word links as character spans on the
line and on `translation` (`srcStart:srcEnd-tgtStart:tgtEnd`, ends
included):

    {"line": 3, "source": "Click <b>Save</b>. Then quit.", "translation": "...",
     "char_alignment": "0:4-0:6 ...", "sentences": [{"source_span": [0, 18],
     "target_span": [0, 25], "source": "Click Save.", "translation": "...",
     "score": -0.31, "word_alignment": "0-0 1-1", "error": null}, ...], "error": null}

With a glossary (`--glossary`) every translated record has `applied_terms`:
the terms written into the best translation, each with the entry's source,
the text written, its character spans (`[start, end)`, end excluded) on
`source` and on `translation`, how it was placed, the source's words it
matched and the English form they were read as (`documents.english_forms`):

    "applied_terms": [{"source": "face mask", "target": "masques",
                       "source_span": [9, 20], "target_span": [12, 19],
                       "placement": "aligned", "matched": "face masks", "form": "plural"}]

(a document's spans are on the document's line and translation; its
sentences' on theirs). Records without a glossary are as before.

A document none of whose sentences could be translated whole is an error
record (its `error` names the sentence). Floats are rounded to
`DECIMALS` places: the last bits of float32 results can depend on how
sentences were batched, and rounding keeps outputs comparable across runs.
"""

from __future__ import annotations

import json
import math

import numpy as np

from batch.readers import SourceLine
from nmt.types import AppliedTerm, DocumentTranslation, Translation, format_char_links

DECIMALS = 4
OUTPUT_FORMATS = ("jsonl", "text")
EOS_PIECE = "</s>"


def detect_output_format(path: str) -> str:
    """`text` for `.txt` (optionally `.gz`), else `jsonl`."""
    return "text" if str(path).lower().removesuffix(".gz").endswith(".txt") else "jsonl"


def _round(value: float | None) -> float | None:
    return round(float(value), DECIMALS) if value is not None and math.isfinite(value) else None


def error_record(source: SourceLine, error: str | None = None) -> dict:
    """The record of a line that was not translated."""
    return {
        "line": source.line, "source": source.text, "translation": None, "score": None,
        "confidence": None, "word_alignment": None, "error": error or source.error,
    }


def truncation_error(translation: Translation, max_source_tokens: int | None) -> str | None:
    """Why a translation must not be trusted: its source was cut at the model's limit."""
    if max_source_tokens is None:
        return None
    tokens = translation.source_tokens
    pieces = len(tokens) - (1 if tokens[-1:] == (EOS_PIECE,) else 0)
    if pieces < max_source_tokens - 1:
        return None
    return (f"too long: reaches the model's limit of {max_source_tokens - 1} subword tokens, "
            "so only its beginning would be translated")


def translation_record(source: SourceLine, translation: Translation, *,
                       with_alignment: bool = False, max_source_tokens: int | None = None,
                       glossary: bool = False) -> dict:
    """The record of a translated line (an error record if its source was truncated).

    Args:
        source: the input line.
        translation: its translation.
        with_alignment: add subword tokens and the `(T, S)` attention matrix.
        max_source_tokens: the model's source limit (with EOS), if known.
        glossary: the job has a glossary: add `applied_terms` (the best
            hypothesis's, maybe none).
    """
    error = truncation_error(translation, max_source_tokens)
    if error is not None:
        return error_record(source, error)
    best = translation.best
    record = {
        "line": source.line, "source": source.text, "translation": best.text,
        "score": _round(best.score), "confidence": _round(best.confidence),
        "word_alignment": best.pharaoh(),
    }
    if best.word_scores is not None:
        record["word_scores"] = [_round(value) for value in best.word_scores]
    if with_alignment:
        record["source_tokens"] = list(translation.source_tokens)
        record["target_tokens"] = list(best.target_tokens)
        weights = np.round(np.asarray(best.alignment, np.float64), DECIMALS)  # (T, S)
        record["alignment"] = weights.tolist()
    if len(translation.nbest) > 1:
        record["nbest"] = [{"translation": h.text, "score": _round(h.score),
                            "confidence": _round(h.confidence)} for h in translation.nbest]
    if glossary:
        record["applied_terms"] = terms_record(best.applied_terms)
    record["error"] = None
    return record


def terms_record(terms: tuple[AppliedTerm, ...]) -> list[dict]:
    """Applied glossary terms as JSON-ready dicts (spans as `[start, end]` lists)."""
    return [{"source": t.source, "target": t.target, "source_span": list(t.source_span),
             "target_span": list(t.target_span), "placement": t.placement,
             "matched": t.matched, "form": t.form} for t in terms]


def document_record(source: SourceLine, document: DocumentTranslation, *,
                    with_alignment: bool = False, max_source_tokens: int | None = None,
                    glossary: bool = False) -> dict:
    """The record of a translated document (an error record if a sentence was truncated).

    Args:
        source: the input line (one document).
        document: its translation; each sentence's `result` a `Translation`.
        with_alignment / max_source_tokens / glossary: as for `translation_record`,
            per sentence; `glossary` adds the document's `applied_terms` too.
    """
    sentences = []
    for i, sentence in enumerate(document.sentences):
        error = truncation_error(sentence.result, max_source_tokens)
        if error is not None:
            return error_record(source, f"sentence {i + 1}: {error}")
        record = translation_record(SourceLine(source.line, sentence.result.source),
                                    sentence.result, with_alignment=with_alignment,
                                    glossary=glossary)
        del record["line"]
        sentences.append({"source_span": list(sentence.source_span),
                          "target_span": list(sentence.target_span), **record})
    record = {"line": source.line, "source": source.text, "translation": document.text,
              "char_alignment": format_char_links(document.link_spans), "sentences": sentences}
    if glossary:
        record["applied_terms"] = terms_record(document.applied_terms)
    return {**record, "error": None}


def format_record(record: dict, output_format: str) -> str:
    """One output line, with its newline: compact JSON, or the translation alone.

    In text format an untranslated line is an empty line, so line `i` of the
    output still belongs to line `i` of the input.
    """
    if output_format == "jsonl":
        return json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
    if output_format == "text":
        return (record["translation"] or "").replace("\n", " ") + "\n"
    raise ValueError(
        f"output format must be one of {', '.join(OUTPUT_FORMATS)}. Received: {output_format!r}"
    )
