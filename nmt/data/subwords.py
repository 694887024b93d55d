"""SentencePiece without TensorFlow: the special ids and the tokenizer's text rules.

The exported model tokenizes inside its graph (`nmt.data.tokenizer.SubwordTokenizer`,
tensorflow-text). A trainer on JAX or PyTorch, and the training shards that feed it
(`nmt.data.shards`), tokenize with `PlainTokenizer`: the `sentencepiece` package and
`normalize_text`, which is `nmt.data.tokenizer.normalize_tensor` written with
`unicodedata` and `re`. For the same model file and text both normalise alike and
give the same ids (tests/nmt/data/test_subwords.py compares them), but where two
segmentations tie within float rounding: the same pieces in another order (`00`+`0`
or `0`+`00` for `000`), which the `sentencepiece` release of tensorflow-text breaks
the other way (37 of the 390,988 distinct training pairs of en-fr-v10).

Standard library only; `sentencepiece` is imported when a `PlainTokenizer` is made.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys
import unicodedata
from collections.abc import Iterable, Sequence

PAD_ID = 0
UNK_ID = 1
BOS_ID = 2
EOS_ID = 3

LANGUAGES = ("en", "fr")

# The rules of `nmt.data.tokenizer.normalize_tensor`, in the same order. RE2's `\p{..}`
# classes are built from `unicodedata` (`_category_pattern`); RE2's `\s` is
# `[\t\n\f\r ]`, and every one of those but the space is a control character, which the
# second rule has already turned into a space.
_CONTROL_CATEGORIES = ("Cc", "Cf")
_SPACE_CATEGORIES = ("Zs", "Zl", "Zp")
_APOSTROPHES = re.compile("[\u2019\u2018\u02bc]")
_FR_BEFORE_HIGH_PUNCT = re.compile(r' ?([!?:;]+)( |$|[»")\],])')
_FR_AFTER_OPEN_QUOTE = re.compile("« ?")
_FR_BEFORE_CLOSE_QUOTE = re.compile(" ?»")
_FR_CLOCK_TIME = re.compile("([0-9]) :([0-9])")


def check_language(language: str) -> None:
    """Raises `ValueError` unless `language` is one of `LANGUAGES`."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}. Received: language={language!r}")


@functools.cache
def _category_pattern(categories: tuple[str, ...], plus: str = "") -> re.Pattern:
    """A character class of every code point in `categories` (and `plus`), one or more."""
    ranges, start = [], None
    for code in range(sys.maxunicode + 2):
        inside = code <= sys.maxunicode and unicodedata.category(chr(code)) in categories
        if inside and start is None:
            start = code
        elif not inside and start is not None:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(code - 1))}")
            start = None
    return re.compile(f"[{re.escape(plus)}{''.join(ranges)}]+")


def normalize_text(text: str, language: str) -> str:
    """`nmt.data.tokenizer.normalize_tensor` of one string, in plain Python.

    NFKC, control and format characters to spaces, typographic apostrophes to
    `'`, whitespace collapsed to single spaces and trimmed; French also gets its
    spacing rules (`"Va!"` -> `"Va !"`, `"«Oui»"` -> `"« Oui »"`).

    Args:
        text: one sentence.
        language: `"en"` or `"fr"`.

    Returns:
        The normalised sentence.
    """
    check_language(language)
    text = unicodedata.normalize("NFKC", text)
    text = _category_pattern(_CONTROL_CATEGORIES).sub(" ", text)  # runs: collapsed below
    text = _APOSTROPHES.sub("'", text)
    text = _category_pattern(_SPACE_CATEGORIES, " ").sub(" ", text)
    if language == "fr":
        # Whitespace is already collapsed, so each rule sees at most one space to replace.
        text = _FR_BEFORE_HIGH_PUNCT.sub(r" \1\2", text)
        text = _FR_CLOCK_TIME.sub(r"\1:\2", text)
        text = _FR_AFTER_OPEN_QUOTE.sub("« ", text)
        text = _FR_BEFORE_CLOSE_QUOTE.sub(" »", text)
    return text.strip(" ")


class PlainTokenizer:
    """One SentencePiece model applied with the `sentencepiece` package.

    The ids of `nmt.data.tokenizer.SubwordTokenizer` for the same model (but
    for ties, see the module's docstring), without TensorFlow: texts are
    normalised with `normalize_text`, then encoded with no sampling and no
    BOS/EOS.

    Args:
        model_proto: a serialized SentencePiece model (the `.spm.model` file of
            an export's `assets/`, or a run's `tokenizer/source.model`).
        language: `"en"` or `"fr"`; selects the normalisation rules.
    """

    def __init__(self, model_proto: bytes, language: str) -> None:
        import sentencepiece

        check_language(language)
        if not isinstance(model_proto, bytes) or not model_proto:
            raise ValueError(
                "model_proto must be a non-empty serialized SentencePiece model. "
                f"Received: model_proto of type {type(model_proto).__name__}"
            )
        self._model_proto = model_proto
        self._language = language
        self._sp = sentencepiece.SentencePieceProcessor(model_proto=model_proto)

    @classmethod
    def from_file(cls, path: str | os.PathLike, language: str) -> PlainTokenizer:
        """Loads a SentencePiece `.model` file."""
        with open(path, "rb") as f:
            return cls(f.read(), language)

    @property
    def vocab_size(self) -> int:
        return int(self._sp.get_piece_size())

    @property
    def language(self) -> str:
        return self._language

    @property
    def model_proto(self) -> bytes:
        return self._model_proto

    @property
    def sha256(self) -> str:
        """The SHA-256 of the model file, to tell which model made a set of ids."""
        return hashlib.sha256(self._model_proto).hexdigest()

    def normalize(self, texts: Iterable[str]) -> list[str]:
        """`normalize_text` of each text, with this tokenizer's language."""
        return [normalize_text(text, self._language) for text in texts]

    def tokenize(self, texts: Iterable[str]) -> list[list[int]]:
        """Normalises and splits texts into subword ids (no BOS/EOS added).

        Args:
            texts: sentences.

        Returns:
            One list of ids a sentence, `SubwordTokenizer.tokenize`'s rows.
        """
        return self._sp.encode(self.normalize(texts), out_type=int)

    def detokenize(self, ids: Iterable[Sequence[int]]) -> list[str]:
        """Texts of id sequences, each cut at its first EOS, PAD and BOS dropped.

        What `SubwordTokenizer.detokenize` gives for dense, padded search output.

        Args:
            ids: one sequence of ints a sentence (lists or 1-D arrays).

        Returns:
            One string a sequence.
        """
        texts = []
        for row in ids:
            kept = []
            for token in (int(t) for t in row):
                if token == EOS_ID:
                    break
                if token not in (PAD_ID, BOS_ID):
                    kept.append(token)
            texts.append(self._sp.decode(kept))
        return texts
