"""Plain result types shared by the translator, the gRPC client and batch jobs.

They hold NumPy arrays and Python scalars only, so nothing that consumes them
needs TensorFlow or gRPC.
"""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass(frozen=True)
class Hypothesis:
    """One candidate translation of a sentence.

    Attributes:
        text: the detokenized translation.
        target_tokens: subword pieces of the translation, ending with "</s>"
            when the hypothesis ended (not when it was cut at the length limit).
        score: length-normalised log-probability (higher is better).
        alignment: attention weights, shape `(len(target_tokens), len(source_tokens))`
            (the "</s>" row and column included); each row sums to 1 over the
            source tokens.
        word_alignment: hard word links `(source_word, target_word)`, 0-based,
            words being the whitespace-separated words of the source as given
            and of `text`.
    """

    text: str
    target_tokens: tuple[str, ...]
    score: float
    alignment: np.ndarray
    word_alignment: tuple[tuple[int, int], ...]

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
