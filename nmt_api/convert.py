"""Conversions between `nmt.types` values and `nmt.v1` protobuf messages.

Used by the servicer (types → proto) and by `nmt_api.client` (proto → types),
so both ends agree. Needs neither TensorFlow nor a model.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from nmt.types import (
    AppliedTerm,
    DecodeOptions,
    DocumentTranslation,
    Hypothesis,
    TranslatedSentence,
    Translation,
    format_char_links,
    parse_char_links,
    parse_pharaoh,
)
from nmt_api import protos

pb2, _ = protos.load()
_OPTION_NAMES = tuple(field.name for field in dataclasses.fields(DecodeOptions))
# `AppliedTerm.placement` <-> `TermPlacement`: "aligned" <-> TERM_PLACEMENT_ALIGNED, ...
_PLACEMENTS = {name.removeprefix("TERM_PLACEMENT_").lower(): value
               for name, value in pb2.TermPlacement.items() if value}
_PLACEMENT_NAMES = {value: name for name, value in _PLACEMENTS.items()}


# --- types -> proto (server side) ------------------------------------------------------------


def options_to_proto(options: DecodeOptions | None):
    """A `DecodeOptions` message with every field set (None leaves all to the server)."""
    if options is None:
        return pb2.DecodeOptions()
    return pb2.DecodeOptions(**dataclasses.asdict(options))


def _rows(matrix) -> list:
    return [pb2.AlignmentRow(weights=row.tolist()) for row in matrix]


def hypothesis_to_proto(hypothesis: Hypothesis, with_alignment: bool,
                        with_attention: bool = False):
    attention = hypothesis.attention if hypothesis.attention is not None else hypothesis.alignment
    return pb2.Hypothesis(
        text=hypothesis.text, target_tokens=hypothesis.target_tokens, score=hypothesis.score,
        alignment=_rows(hypothesis.alignment) if with_alignment else [],
        word_alignment=hypothesis.pharaoh(),
        attention=_rows(attention) if with_attention else [],
        confidence=hypothesis.confidence,
        word_scores=_values(hypothesis.word_scores), piece_scores=_values(hypothesis.piece_scores),
        applied_terms=_terms_to_proto(hypothesis.applied_terms))


def _terms_to_proto(terms: Sequence[AppliedTerm]) -> list:
    return [pb2.AppliedTerm(source=t.source, target=t.target, source_start=t.source_span[0],
                            source_end=t.source_span[1], target_start=t.target_span[0],
                            target_end=t.target_span[1], placement=_PLACEMENTS[t.placement],
                            matched=t.matched, form=t.form)
            for t in terms]


def _values(vector: np.ndarray | None) -> list[float]:
    return [] if vector is None else vector.tolist()


def translation_to_proto(translation: Translation, with_alignment: bool = True,
                         with_attention: bool = False):
    return pb2.Translation(
        source_tokens=translation.source_tokens,
        hypotheses=[hypothesis_to_proto(h, with_alignment, with_attention)
                    for h in translation.nbest])


def document_to_proto(document: DocumentTranslation, with_alignment: bool = True,
                      with_attention: bool = False):
    """A `DocumentTranslation` message; each sentence's `result` is a `Translation`."""
    return pb2.DocumentTranslation(
        text=document.text,
        sentences=[pb2.DocumentSentence(
            source_start=s.source_span[0], source_end=s.source_span[1],
            target_start=s.target_span[0], target_end=s.target_span[1],
            sentence=s.result.source,
            translation=translation_to_proto(s.result, with_alignment, with_attention))
            for s in document.sentences],
        char_alignment=format_char_links(document.link_spans),
        applied_terms=_terms_to_proto(document.applied_terms))


def model_info_to_proto(info, limits):
    """A `GetModelInfoResponse` from an `nmt.inference.translator.ModelInfo` and the server's limits
    (`default_options`: the model's decoding for requests that set no options).

    `limits` is any dataclass with the fields of `ServerLimits` (the server's
    `serving.validation.Limits`).
    """
    metadata = info.metadata
    attribution = metadata.get("attribution", "")
    return pb2.GetModelInfoResponse(
        name=info.name, version=info.version, attention=info.attention,
        source_vocab_size=info.source_vocab_size, target_vocab_size=info.target_vocab_size,
        attribution=attribution if isinstance(attribution, str) else json.dumps(attribution),
        scores=flatten_scores(metadata.get("scores", {})),
        metadata_json=json.dumps(metadata, default=str),
        limits=pb2.ServerLimits(**dataclasses.asdict(limits)),
        default_options=options_to_proto(getattr(info, "default_options", DecodeOptions())),
        alignment=info.alignment, word_links=info.word_links,
        precision=info.precision, precisions=info.precisions)


def flatten_scores(scores, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of a nested score dict, keyed by dotted path: `{"test.bleu": 31.2}`."""
    if isinstance(scores, bool):
        return {}
    if isinstance(scores, int | float):
        return {prefix: float(scores)} if prefix else {}
    if not isinstance(scores, dict):
        return {}
    flat = {}
    for key, value in scores.items():
        flat.update(flatten_scores(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat


# --- proto -> types (client side) ------------------------------------------------------------


def _matrix(rows, source_length: int) -> np.ndarray:
    """`(T, S)` from alignment rows, or `(0, 0)` if none were sent."""
    if not rows:
        return np.zeros((0, 0), np.float32)
    matrix = np.array([row.weights for row in rows], np.float32)
    return matrix.reshape(len(rows), source_length)  # (T, S)


def hypothesis_from_proto(message, source_length: int) -> Hypothesis:
    """A `Hypothesis`; its alignment has shape `(T, S)`, or `(0, 0)` if none was sent;
    its attention is None unless the request asked for it; its word and piece scores
    None if none were sent."""
    return Hypothesis(
        text=message.text, target_tokens=tuple(message.target_tokens), score=message.score,
        alignment=_matrix(message.alignment, source_length),
        word_alignment=parse_pharaoh(message.word_alignment),
        attention=_matrix(message.attention, source_length) if message.attention else None,
        confidence=message.confidence if message.HasField("confidence") else None,
        word_scores=_vector(message.word_scores), piece_scores=_vector(message.piece_scores),
        applied_terms=_terms_from_proto(message.applied_terms))


def _terms_from_proto(messages) -> tuple[AppliedTerm, ...]:
    """`AppliedTerm`s; a placement this client does not know reads as `""`."""
    return tuple(AppliedTerm(m.source, m.target, (m.source_start, m.source_end),
                             (m.target_start, m.target_end),
                             _PLACEMENT_NAMES.get(m.placement, ""), m.matched, m.form)
                 for m in messages)


def _vector(values) -> np.ndarray | None:
    """The values as float32, or None if none were sent."""
    return np.array(values, np.float32) if values else None


def translation_from_proto(message, source: str) -> Translation:
    source_tokens = tuple(message.source_tokens)
    nbest = tuple(hypothesis_from_proto(h, len(source_tokens)) for h in message.hypotheses)
    return Translation(source=source, source_tokens=source_tokens, nbest=nbest)


def translations_from_response(response, sources: Sequence[str]) -> list[Translation]:
    """The `Translation`s of a `TranslateResponse`, one per sentence sent."""
    return _translations(response.translations, sources, "translations", "sentences")


def alignments_from_response(response, sources: Sequence[str]) -> list[Translation]:
    """The `Translation`s of an `AlignResponse`, one per pair sent (`sources` of the pairs)."""
    return _translations(response.alignments, sources, "alignments", "pairs")


def _translations(messages, sources: Sequence[str], what: str, sent: str) -> list[Translation]:
    if len(messages) != len(sources):
        raise RuntimeError(
            f"the server answered {len(messages)} {what} for {len(sources)} {sent}")
    return [translation_from_proto(t, s) for t, s in zip(messages, sources, strict=True)]


def documents_from_response(response, documents: Sequence[str]) -> list[DocumentTranslation]:
    """The `DocumentTranslation`s of a `TranslateResponse` or `AlignResponse` to a request
    with `format` set.

    Each sentence's `result` is a `Translation` whose `source` is the
    sentence as the model read it.
    """
    if len(response.documents) != len(documents):
        raise RuntimeError(f"the server answered {len(response.documents)} documents for "
                           f"{len(documents)} documents")
    return [document_from_proto(message, source)
            for message, source in zip(response.documents, documents, strict=True)]


def document_from_proto(message, source: str) -> DocumentTranslation:
    sentences = tuple(
        TranslatedSentence((s.source_start, s.source_end), (s.target_start, s.target_end),
                           translation_from_proto(s.translation, s.sentence))
        for s in message.sentences)
    return DocumentTranslation(source=source, text=message.text, sentences=sentences,
                               link_spans=parse_char_links(message.char_alignment),
                               applied_terms=_terms_from_proto(message.applied_terms))


def model_info_from_proto(message) -> dict:
    """`GetModelInfoResponse` as a plain dict (`metadata` parsed from JSON;
    `default_options` the `DecodeOptions` fields the server set, `{}` from a server
    older than the field: `DecodeOptions(**info["default_options"])` either way)."""
    return {
        "name": message.name,
        "version": message.version,
        "attention": message.attention,
        "alignment": message.alignment,
        "word_links": message.word_links,
        "precision": message.precision,
        "precisions": list(message.precisions),
        "source_vocab_size": message.source_vocab_size,
        "target_vocab_size": message.target_vocab_size,
        "attribution": message.attribution,
        "scores": dict(message.scores),
        "metadata": json.loads(message.metadata_json) if message.metadata_json else {},
        "default_options": {name: getattr(message.default_options, name)
                            for name in _OPTION_NAMES
                            if message.default_options.HasField(name)},
        "limits": {
            "max_sentences": message.limits.max_sentences,
            "max_chars": message.limits.max_chars,
            "max_message_bytes": message.limits.max_message_bytes,
            "max_beam_size": message.limits.max_beam_size,
            "max_glossary_entries": message.limits.max_glossary_entries,
            "max_file_bytes": message.limits.max_file_bytes,
            "max_file_sentences": message.limits.max_file_sentences,
        },
    }


def glossaries_from_proto(message) -> list[dict]:
    """`ListGlossariesResponse` as plain dicts: `name`, `entries`, `loaded_at` (RFC 3339),
    `file`."""
    return [{"name": g.name, "entries": g.entries, "loaded_at": g.loaded_at, "file": g.file}
            for g in message.glossaries]


def glossary_to_proto(glossary, exact_case: bool | None = None) -> object:
    """A `Glossary` message from what a client is given (see `nmt_api.client`):

    - a name (`str`): a server glossary, `glossary_id`;
    - entries: `(source, target)` pairs, `{"source": ..., "target": ...}` mappings,
      or anything with `entries` (and `exact_case`), e.g. an
      `documents.glossary.Glossary`;
    - a `Glossary` message (inline entries and a name together), as it is.

    Args:
        glossary: one of the above.
        exact_case: match terms only as written; None: the glossary's own
            `exact_case` if it has one, else False.

    Raises:
        TypeError: `glossary` or one of its entries is none of these.
    """
    if isinstance(glossary, pb2.Glossary):
        return glossary
    if exact_case is None:
        exact_case = bool(getattr(glossary, "exact_case", False))
    if isinstance(glossary, str):
        return pb2.Glossary(glossary_id=glossary, exact_case=exact_case)
    entries = getattr(glossary, "entries", glossary)
    if isinstance(entries, Mapping | bytes) or not isinstance(entries, Iterable):
        raise TypeError("glossary must be a server glossary's name, (source, target) pairs, "
                        f"or a Glossary. Received: {type(glossary).__name__}")
    messages = []
    for number, entry in enumerate(entries, start=1):
        if isinstance(entry, Mapping):
            pair = (entry.get("source"), entry.get("target"))
        elif hasattr(entry, "source") and hasattr(entry, "target"):
            pair = (entry.source, entry.target)
        elif isinstance(entry, Sequence) and not isinstance(entry, str):
            pair = tuple(entry)
        else:
            pair = ()
        if len(pair) != 2 or not all(isinstance(term, str) for term in pair):
            raise TypeError(f"glossary entry {number} must be a (source, target) pair of "
                            f"strings. Received: {entry!r}")
        messages.append(pb2.GlossaryEntry(source=pair[0], target=pair[1]))
    return pb2.Glossary(entries=messages, exact_case=exact_case)
