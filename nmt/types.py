"""Plain result types shared by the translator, the gRPC client and batch jobs.

They hold NumPy arrays and Python scalars only, so nothing that consumes them
needs TensorFlow or gRPC. Beside them: the Pharaoh link format they print and
parse, the check every entry point applies to a list of sentences, and the
strict mapping-to-dataclass conversion every config and option reader uses.
Translated documents (`DocumentTranslation`) are here too, so the clients can
return them.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

Link = tuple[int, int]
Span = tuple[int, int]  # (start, end) character offsets, end excluded
SpanLink = tuple[Span, Span]  # a word link as (source span, target span)
_Dataclass = TypeVar("_Dataclass")
# One (extended) Pharaoh link: `i-j` sure, `ipj` or `i?j` possible; 0-based, source first.
_PHARAOH_LINK = re.compile(r"(\d+)([-p?])(\d+)")


def parse_pharaoh_links(text: str) -> tuple[tuple[int, int, bool], ...]:
    """Parses one line of extended Pharaoh links, in the order written.

    Args:
        text: whitespace-separated links: `i-j` (sure), `ipj` or `i?j` (possible).

    Returns:
        `(i, j, sure)` per link, e.g. `"0-0 1p2"` -> `((0, 0, True), (1, 2, False))`.

    Raises:
        ValueError: a token is not a link (the message quotes it).
    """
    links = []
    for token in text.split():
        match = _PHARAOH_LINK.fullmatch(token)
        if match is None:
            raise ValueError(f"Expected a link like 3-4, 3p4 or 3?4. Received: {token!r}")
        links.append((int(match.group(1)), int(match.group(3)), match.group(2) == "-"))
    return tuple(links)


def format_char_links(pairs: Sequence[SpanLink]) -> str:
    """Azure Translator's alignment string: `srcStart:srcEnd-tgtStart:tgtEnd`, ends included.

    `(((0, 3), (0, 2)), ((4, 7), (3, 7)))` -> `"0:2-0:1 4:6-3:6"`.
    """
    return " ".join(f"{s0}:{s1 - 1}-{t0}:{t1 - 1}" for (s0, s1), (t0, t1) in pairs)


_CHAR_LINK = re.compile(r"(\d+):(\d+)-(\d+):(\d+)")


def parse_char_links(text: str) -> tuple[SpanLink, ...]:
    """Parses `format_char_links`'s string back into `(source_span, target_span)` pairs.

    Raises:
        ValueError: a token is not a link like `0:2-0:1` (the message quotes it).
    """
    pairs = []
    for token in text.split():
        match = _CHAR_LINK.fullmatch(token)
        if match is None:
            raise ValueError(f"Expected a link like 0:2-0:1. Received: {token!r}")
        s0, s1, t0, t1 = map(int, match.groups())
        pairs.append(((s0, s1 + 1), (t0, t1 + 1)))
    return tuple(pairs)


def parse_pharaoh(text: str) -> tuple[Link, ...]:
    """Parses plain Pharaoh links (as `Hypothesis.pharaoh` writes them), in order.

    `"0-0 1-2"` -> `((0, 0), (1, 2))`; `""` -> `()`.

    Raises:
        ValueError: a token is not an `i-j` link (the message quotes it).
    """
    links = parse_pharaoh_links(text)
    if not all(sure for _, _, sure in links):
        token = next(token for token in text.split() if "-" not in token)
        raise ValueError(f"Expected plain links like 3-4 (sure links only). Received: {token!r}")
    return tuple((i, j) for i, j, _ in links)


def sentence_list(sentences: Sequence[str], name: str = "sentences") -> list[str]:
    """`sentences` as a list, checked the same way by `Translator` and the gRPC clients.

    Args:
        sentences: a sequence of `str` (not a single string).
        name: the argument's name, for the error message (e.g. `sources`).

    Raises:
        TypeError: `sentences` is a single string or bytes, or holds a non-string.
    """
    if isinstance(sentences, str | bytes):
        raise TypeError(
            f"{name} must be a sequence of strings, not a single string. "
            f"Received: {name}={sentences[:40]!r}; wrap it in a list.")
    sentences = list(sentences)
    for i, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise TypeError(
                f"{name.removesuffix('s')} {i} must be a str. "
                f"Received: {type(sentence).__name__}")
    return sentences


def dataclass_from_dict(cls: type[_Dataclass], values: Mapping[str, Any] | None,
                        where: str) -> _Dataclass:
    """Builds the dataclass `cls` from a mapping, rejecting keys it has no field for.

    Args:
        cls: a dataclass type; its own `__post_init__` checks the values.
        values: field name -> value; None is an empty mapping (all defaults).
        where: what the mapping is, for the error message, e.g. `"model config"`
            or `"config section 'optim'"`.

    Returns:
        `cls(**values)`.

    Raises:
        ValueError: a key is not a field of `cls` (the message lists the
            unknown keys and the known ones).
    """
    values = dict(values or {})
    known = sorted(field.name for field in dataclasses.fields(cls))
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f"Unknown keys {unknown} in {where}; known keys: {known}")
    return cls(**values)


@dataclasses.dataclass(frozen=True)
class AppliedTerm:
    """A glossary entry written into a translation (`documents.terminology`).

    Attributes:
        source: the entry's source term, as written in the glossary.
        target: the text written for it: the form of the entry's target the
            source asks for (`hospitalisés` for `were hospitalized`), or the
            model's own form of it where kept (placement `found`);
            `translation[target_span[0]:target_span[1]]`.
        source_span: `(start, end)` of the term in the source.
        target_span: `(start, end)` of what was written in the translation.
        placement: how its place was found: `found`, `aligned`, `neighbour`
            or `copied` (`documents.terminology.PLACEMENTS`).
        matched: the source's words the entry matched, as written there
            (`hospitalized`); "" from a server that does not say.
        form: the English form they were read as, one of
            `documents.english_forms.FORMS` (`plural`, `participle`...);
            "" for the entry as written.
    """

    source: str
    target: str
    source_span: Span
    target_span: Span
    placement: str
    matched: str = ""
    form: str = ""


@dataclasses.dataclass(frozen=True)
class Hypothesis:
    """One candidate translation of a sentence.

    Attributes:
        text: the detokenized translation.
        target_tokens: subword pieces of the translation, ending with "</s>"
            when the hypothesis ended (not when it was cut at the length limit).
        score: length-normalised log-probability (higher is better).
        alignment: alignment weights, shape `(len(target_tokens), len(source_tokens))`
            (the "</s>" row and column included); each row sums to 1 over the
            source tokens. From the model's alignment head when it has one
            (each piece aligned after it was read), else its attention.
        word_alignment: hard word links `(source_word, target_word)`, 0-based,
            words being the whitespace-separated words of the source as given
            and of `text`.
        attention: the decoder's own attention (what it read to predict each
            piece), same shape as `alignment`; the same matrix as `alignment`
            for a model without an alignment head; None from older exports.
        word_matrix: `alignment` merged into words, shape `(target words,
            source words)`, which `word_alignment` is read from (see
            `nmt.alignment.word_links`); None from older exports.
        confidence: the mean log-probability per target piece, "</s>"
            included: log P(text | source) / T (natural log, at most 0;
            `nmt.inference.confidence`); None without pieces.
        word_scores: per whitespace word of `text`, the mean log-probability
            of its pieces, shape `(words,)`; None when the export returns no
            piece log-probabilities (translations from exports made before
            the search kept them, see `nmt.inference.confidence`).
        piece_scores: per target piece, its log-probability given the source
            and the pieces before it, shape `(T,)`; None as `word_scores`.
        applied_terms: the glossary terms written into `text`, in source
            order (`documents.terminology.apply_glossary`); () without a
            glossary.
    """

    text: str
    target_tokens: tuple[str, ...]
    score: float
    alignment: np.ndarray
    word_alignment: tuple[tuple[int, int], ...]
    attention: np.ndarray | None = None
    word_matrix: np.ndarray | None = None
    confidence: float | None = None
    word_scores: np.ndarray | None = None
    piece_scores: np.ndarray | None = None
    applied_terms: tuple[AppliedTerm, ...] = ()

    def pharaoh(self) -> str:
        """Word links in Pharaoh format, e.g. `"0-0 1-2"`."""
        return " ".join(f"{i}-{j}" for i, j in self.word_alignment)


@dataclasses.dataclass(frozen=True)
class Translation:
    """The best hypothesis for one source sentence, plus the n-best list.

    Attributes:
        source: the source sentence as given.
        source_tokens: subword pieces of the normalised source, ending with "</s>".
        best: the highest-scoring hypothesis (`nbest[0]`).
        nbest: all returned hypotheses, best first (length = requested n-best).
    """

    source: str
    source_tokens: tuple[str, ...]
    nbest: tuple[Hypothesis, ...]

    @property
    def best(self) -> Hypothesis:
        return self.nbest[0]

    @property
    def text(self) -> str:
        return self.best.text

    @property
    def score(self) -> float:
        return self.best.score

    @property
    def target_tokens(self) -> tuple[str, ...]:
        return self.best.target_tokens

    @property
    def alignment(self) -> np.ndarray:
        return self.best.alignment

    @property
    def word_alignment(self) -> tuple[tuple[int, int], ...]:
        return self.best.word_alignment

    @property
    def word_matrix(self) -> np.ndarray | None:
        return self.best.word_matrix

    @property
    def confidence(self) -> float | None:
        return self.best.confidence


@dataclasses.dataclass(frozen=True)
class TranslatedSentence:
    """One sentence of a translated document (`documents`, the clients).

    Attributes:
        source_span: `(start, end)` of the sentence in the document as given.
        target_span: `(start, end)` of its translation in the document's translation.
        result: the sentence's result (a `Translation`: tokens, score,
            alignment; its `source` is the sentence as sent to the model, its
            words joined by single spaces, tags taken out).
    """

    source_span: Span
    target_span: Span
    result: Any


@dataclasses.dataclass(frozen=True)
class DocumentTranslation:
    """A translated document.

    Attributes:
        source: the document as given.
        text: its translation: the sentences' translations joined with the
            document's own separators (for markup: with every tag of the source).
        sentences: per sentence, its spans and result, in order.
        link_spans: every word link as `(source_span, target_span)`: the
            source word's characters in `source`, the target word's in `text`
            (see `documents.offsets`).
        applied_terms: the glossary terms written into the best translation
            of every sentence, source spans on `source`, target spans on `text`
            (`documents.terminology.apply_glossary_to_documents`); () without
            a glossary.
    """

    source: str
    text: str
    sentences: tuple[TranslatedSentence, ...]
    link_spans: tuple[SpanLink, ...] = ()
    applied_terms: tuple[AppliedTerm, ...] = ()


@dataclasses.dataclass(frozen=True)
class DecodeOptions:
    """Decoding options accepted by `Translator.translate` and the server.

    Attributes:
        beam_size: number of beams; 1 is greedy search.
        max_length_ratio: maximum target tokens per source token.
        max_length_offset: added to the ratio-based limit (tokens).
        length_penalty: alpha of Wu et al. 2016, ((5 + |Y|) / 6) ** alpha.
        coverage_penalty: beta of Wu et al. 2016; 0 disables it.
        n_best: hypotheses returned per sentence, at most `beam_size`.
        replace_unknown: replace unknown output pieces by the source word
            they attend to most (Luong et al. 2015, rare-word problem).
    """

    beam_size: int = 5
    max_length_ratio: float = 2.0
    max_length_offset: int = 10
    length_penalty: float = 0.6
    coverage_penalty: float = 0.0
    n_best: int = 1
    replace_unknown: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.beam_size <= 64:
            raise ValueError(
                f"beam_size must be between 1 and 64. Received: beam_size={self.beam_size!r}"
            )
        if not 1 <= self.n_best <= self.beam_size:
            raise ValueError(
                "n_best must be between 1 and beam_size. "
                f"Received: n_best={self.n_best!r}, beam_size={self.beam_size!r}"
            )
        if not 0 < self.max_length_ratio <= 10:
            raise ValueError(
                "max_length_ratio must be in (0, 10]. "
                f"Received: max_length_ratio={self.max_length_ratio!r}"
            )
        if not 0 <= self.max_length_offset <= 512:
            raise ValueError(
                "max_length_offset must be in [0, 512]. "
                f"Received: max_length_offset={self.max_length_offset!r}"
            )
        if not 0 <= self.length_penalty <= 5:
            raise ValueError(
                "length_penalty must be in [0, 5]. "
                f"Received: length_penalty={self.length_penalty!r}"
            )
        if not 0 <= self.coverage_penalty <= 5:
            raise ValueError(
                "coverage_penalty must be in [0, 5]. "
                f"Received: coverage_penalty={self.coverage_penalty!r}"
            )


# The export metadata key of a model's recommended decoding: `DecodeOptions` fields, e.g.
# `{"beam_size": 1}` for a distilled student that needs no beam; unset fields keep the
# `DecodeOptions` defaults. It is the model's default wherever a caller sets no options.
RECOMMENDED_DECODING = "recommended_decoding"


def options_over(defaults: DecodeOptions, given: Mapping[str, Any],
                 where: str = "decoding options") -> DecodeOptions:
    """`defaults` with the fields of `given` set.

    A caller that asks for more hypotheses (`n_best`) than the default beam
    and sets no `beam_size` gets a beam of `n_best`, the least that returns
    them (3 hypotheses of a greedy model: beam 3); one that sets a beam
    narrower than the default `n_best` and no `n_best` gets `n_best` =
    `beam_size`.

    Args:
        defaults: the options of a caller that sets none.
        given: field name -> value.
        where: what `given` is, for the error message.

    Returns:
        The options to decode with.

    Raises:
        ValueError: a key is not a `DecodeOptions` field, or a value is out of
            range (the message names it).
    """
    values = dict(given)
    n_best, beam = values.get("n_best"), values.get("beam_size")
    if beam is None and isinstance(n_best, int) and n_best > defaults.beam_size:
        values["beam_size"] = n_best
    if n_best is None and isinstance(beam, int) and 1 <= beam < defaults.n_best:
        values["n_best"] = beam
    return dataclass_from_dict(DecodeOptions, {**dataclasses.asdict(defaults), **values}, where)


def recommended_options(metadata: Mapping[str, Any]) -> DecodeOptions:
    """The decoding an export recommends: `DecodeOptions()` with the fields of its
    metadata's `recommended_decoding` (none: `DecodeOptions()` itself).

    Raises:
        ValueError: `recommended_decoding` is not a mapping of valid `DecodeOptions`
            fields (the message quotes it).
    """
    given = metadata.get(RECOMMENDED_DECODING) or {}
    if not isinstance(given, Mapping):
        raise ValueError(f"{RECOMMENDED_DECODING} in the export's metadata must map "
                         f"DecodeOptions fields to values, e.g. {{\"beam_size\": 1}}. "
                         f"Received: {given!r}")
    try:
        return options_over(DecodeOptions(), given, f"the export's {RECOMMENDED_DECODING}")
    except ValueError as error:
        raise ValueError(f"the export's {RECOMMENDED_DECODING} {dict(given)!r} is not valid: "
                         f"{error}; re-export with another recommended decoding") from error
