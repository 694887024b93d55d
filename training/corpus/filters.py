"""Which raw pairs a training corpus keeps: one rule a function, each counted in the manifest.

Every rule looks at one `(english, french)` pair and returns whether to drop it;
`drop_reason` applies them in a fixed order and names the first one a pair
breaks, so a dropped pair is counted once. Duplicates (exact and near) and
overlaps with evaluation or held-out text need the whole corpus and are
applied by `training.corpus.build` with the keys made here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import unicodedata

# The order in which rules are tried (and reported in the manifest).
PAIR_RULES = ("empty", "too_long", "word_ratio", "char_ratio", "copy", "numbers")

# Digits written with thousands or decimal separators: "1,000.5", "1 000,5" (a
# non-breaking or narrow space in French typography) are one number each.
_NUMBER = re.compile(r"\d+(?:[.,\u00a0\u202f ]\d+)*")
_NUMBER_SEPARATOR = re.compile(r"[.,\u00a0\u202f ]")
_NOT_WORD = re.compile(r"[\W_]+")
_DIGITS = re.compile(r"\d+")


@dataclasses.dataclass(frozen=True)
class FilterConfig:
    """The thresholds of the pair rules. Words are whitespace-separated.

    Attributes:
        max_words: longest side allowed, in words (`too_long`).
        max_word_ratio: largest ratio of the longer side to the shorter in
            words, judged when both sides have more than 3 words (`word_ratio`).
        char_ratio: `[low, high]` bounds of French characters / English
            characters, judged when both sides have at least `min_chars_for_ratio`
            characters (`char_ratio`: a French provision cut at another place
            than its English one).
        min_chars_for_ratio: see `char_ratio`.
        copies: drop a pair whose French is its English (case-insensitive),
            an untranslated entry (`copy`).
        numbers: drop a pair whose sides both cite numbers and share none
            (`numbers`: misaligned sections of a law cite other numbers; a side
            without digits may spell its numbers out, "forty" for "40").
        near_duplicates: drop a pair equal to a kept one once case, digits
            and punctuation are ignored (the 4,000 amendment notes
            "— SOR/2016-250, s. 2" teach one thing).
    """

    max_words: int = 80
    max_word_ratio: float = 3.0
    char_ratio: tuple[float, float] = (0.5, 2.5)
    min_chars_for_ratio: int = 20
    copies: bool = True
    numbers: bool = True
    near_duplicates: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.max_words, bool) or not isinstance(self.max_words, int) or (
                self.max_words < 1):
            raise ValueError(f"filters.max_words must be an integer >= 1. "
                             f"Received: max_words={self.max_words!r}")
        if not isinstance(self.max_word_ratio, (int, float)) or self.max_word_ratio < 1:
            raise ValueError(f"filters.max_word_ratio must be a number >= 1. "
                             f"Received: max_word_ratio={self.max_word_ratio!r}")
        bounds = tuple(self.char_ratio)
        if len(bounds) != 2 or not all(isinstance(b, (int, float)) for b in bounds) or not (
                0 < bounds[0] <= 1 <= bounds[1]):
            raise ValueError("filters.char_ratio must be [low, high] with 0 < low <= 1 <= high. "
                             f"Received: char_ratio={self.char_ratio!r}")
        object.__setattr__(self, "char_ratio", (float(bounds[0]), float(bounds[1])))


def drop_reason(english: str, french: str, config: FilterConfig) -> str | None:
    """The first of `PAIR_RULES` the pair breaks, or None to keep it.

    Args:
        english, french: the pair, whitespace already collapsed.
        config: the thresholds.
    """
    source_words, target_words = len(english.split()), len(french.split())
    shorter, longer = sorted((source_words, target_words))
    if shorter == 0:
        return "empty"
    if longer > config.max_words:
        return "too_long"
    if shorter > 3 and longer / shorter > config.max_word_ratio:
        return "word_ratio"
    if min(len(english), len(french)) >= config.min_chars_for_ratio:
        low, high = config.char_ratio
        if not low <= len(french) / len(english) <= high:
            return "char_ratio"
    if config.copies and english.casefold() == french.casefold():
        return "copy"
    if config.numbers and _cite_other_numbers(english, french):
        return "numbers"
    return None


def _cite_other_numbers(english: str, french: str) -> bool:
    source, target = set(numbers_of(english)), set(numbers_of(french))
    return bool(source and target and not source & target)


def numbers_of(text: str) -> list[str]:
    """The numbers a sentence holds, separators removed, sorted ("1,000.5" -> "10005").

    English "1,000.5" and French "1 000,5" give the same digits; the order is
    ignored because French may cite them in another order.
    """
    return sorted(_NUMBER_SEPARATOR.sub("", number) for number in _NUMBER.findall(text))


def collapse_whitespace(text: str) -> str:
    """Runs of whitespace (non-breaking spaces too) as one space, ends stripped."""
    return " ".join(text.split())


def side_key(text: str) -> int:
    """A 64-bit key of one side as evaluation sets are matched: case-folded, NFKC,
    whitespace collapsed (so "Thank you." matches "thank  you.")."""
    return _hash(collapse_whitespace(unicodedata.normalize("NFKC", text).casefold()))


def pair_key(english: str, french: str) -> int:
    """A 64-bit key of an exact pair (whitespace already collapsed)."""
    return _hash(english + "\t" + french)


def near_key(english: str, french: str) -> int:
    """A 64-bit key equal for pairs that differ only in case, digits and punctuation."""

    def loose(text: str) -> str:
        text = _DIGITS.sub("0", unicodedata.normalize("NFKC", text).casefold())
        return " ".join(_NOT_WORD.sub(" ", text).split())

    return _hash(loose(english) + "\t" + loose(french))


def fraction_of(seed: int, *parts: str) -> float:
    """A number in [0, 1) fixed by `seed` and `parts`: the same on every machine and
    Python (unlike `hash`), for sampling and for choosing held-out documents."""
    return _hash(f"{seed}\x00" + "\x00".join(parts)) / 2.0**64


def _hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
