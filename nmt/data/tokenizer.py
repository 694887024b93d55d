"""Subword tokenizer that runs inside the TensorFlow graph.

Each `SubwordTokenizer` wraps one SentencePiece model with tensorflow-text ops,
so an exported SavedModel takes raw text in and gives text out with no Python
around it. Text is normalised in the graph too, with the same rules that were
applied to the training text, so training and serving see identical input.

The SentencePiece op keeps the serialized model as an attribute of the op that
creates its resource, so a saved graph carries the model inside saved_model.pb.
A copy of the model file also travels as a SavedModel asset
(`assets/<language>.spm.model`), for tools that want the file itself; neither
copy refers to a path outside the saved artifact.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator, Sequence

import sentencepiece as spm
import tensorflow as tf
import tensorflow_text as tf_text

# Defined without TensorFlow (the training shards and a JAX trainer use them too).
from nmt.data.subwords import BOS_ID, EOS_ID, LANGUAGES, PAD_ID, UNK_ID

WORD_START = "\u2581"  # SentencePiece's marker for "this piece follows a space".

_CONTROL_CHARS = r"[\p{Cc}\p{Cf}]"
_APOSTROPHES = "[\u2019\u2018\u02bc]"
_WHITESPACE_RUN = r"[\s\p{Z}]+"  # RE2's \s is ASCII-only; \p{Z} adds U+2028 and friends.
_EDGE_SPACES = "^ +| +$"
# French typography: one space before a run of ! ? : ; (so "?!" stays together) that ends
# a word, after « and before ». A run inside a token stays glued: "https://", "std::map",
# ":ref:`x`". RE2 has no lookahead, so the character after the run is captured and kept.
_FR_BEFORE_HIGH_PUNCT = r' ?([!?:;]+)( |$|[»")\],])'
_FR_AFTER_OPEN_QUOTE = "« ?"
_FR_BEFORE_CLOSE_QUOTE = " ?»"
_FR_CLOCK_TIME = "([0-9]) :([0-9])"  # "8:30" is a time, not a colon in a sentence.

_TRAINING_BATCH = 4096


def _check_language(language: str) -> None:
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}. Received: language={language!r}")


def normalize_tensor(texts: tf.Tensor | str | Sequence[str], language: str) -> tf.Tensor:
    """Normalises a string tensor with TF ops: in the exported graph, and eagerly.

    The same rules serve training (through `normalize_strings`) and run time.

    NFKC, control and format characters to spaces, typographic apostrophes to
    `'`, whitespace collapsed to single spaces and trimmed. French also gets its
    spacing rules (`"Va!"` -> `"Va !"`, `"«Oui»"` -> `"« Oui »"`); English gets
    no inserted spaces, so its whitespace-separated words stay the caller's.

    Args:
        texts: string tensor of any shape, e.g. `()` or `(batch,)`.
        language: `"en"` or `"fr"`.

    Returns:
        A string tensor of the same shape as `texts`.
    """
    _check_language(language)
    texts = tf.convert_to_tensor(texts, dtype=tf.string)
    texts = tf_text.normalize_utf8(texts, "NFKC")
    texts = tf.strings.regex_replace(texts, _CONTROL_CHARS, " ")
    texts = tf.strings.regex_replace(texts, _APOSTROPHES, "'")
    texts = tf.strings.regex_replace(texts, _WHITESPACE_RUN, " ")
    if language == "fr":
        texts = _french_spacing(texts)
    return tf.strings.regex_replace(texts, _EDGE_SPACES, "")


def _french_spacing(texts: tf.Tensor) -> tf.Tensor:
    # Whitespace is already collapsed, so each rule sees at most one space to replace.
    texts = tf.strings.regex_replace(texts, _FR_BEFORE_HIGH_PUNCT, r" \1\2")
    texts = tf.strings.regex_replace(texts, _FR_CLOCK_TIME, r"\1:\2")
    texts = tf.strings.regex_replace(texts, _FR_AFTER_OPEN_QUOTE, "« ")
    return tf.strings.regex_replace(texts, _FR_BEFORE_CLOSE_QUOTE, " »")


def normalize_strings(texts: Iterable[str], language: str) -> list[str]:
    """Normalises Python strings: `normalize_tensor` run eagerly, in batches.

    Args:
        texts: sentences as Python strings.
        language: `"en"` or `"fr"`.

    Returns:
        The normalised sentences, in order.
    """
    _check_language(language)
    texts = list(texts)
    normalised: list[str] = []
    for start in range(0, len(texts), _TRAINING_BATCH):
        batch = normalize_tensor(texts[start : start + _TRAINING_BATCH], language)
        normalised.extend(t.decode("utf-8") for t in batch.numpy())
    return normalised


def train_sentencepiece(
    texts: Iterable[str],
    vocab_size: int = 8000,
    model_type: str = "unigram",
    character_coverage: float = 1.0,
    seed: int = 0,
    num_threads: int | None = None,
) -> bytes:
    """Trains a SentencePiece model in memory.

    Pass text normalised with `normalize_strings`: the model applies no
    normalisation of its own (`identity` rule), so the in-graph rules stay the
    only ones. Ids 0-3 are PAD, UNK, BOS and EOS.

    Args:
        texts: normalised training sentences; empty ones are skipped.
        vocab_size: wanted vocabulary size, including the 4 special pieces.
            Small corpora may yield fewer pieces (the limit is soft).
        model_type: `"unigram"` or `"bpe"`.
        character_coverage: share of characters covered by the vocabulary.
        seed: seed of SentencePiece's random generator.
        num_threads: trainer threads; defaults to the number of CPUs.

    Returns:
        The serialized model proto.
    """
    if model_type not in ("unigram", "bpe"):
        raise ValueError(
            f"model_type must be 'unigram' or 'bpe'. Received: model_type={model_type!r}"
        )
    if vocab_size < 8:
        raise ValueError(f"vocab_size must be at least 8. Received: vocab_size={vocab_size!r}")
    spm.set_random_generator_seed(seed)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=_non_empty(texts),
        model_writer=model,
        vocab_size=vocab_size,
        model_type=model_type,
        character_coverage=character_coverage,
        hard_vocab_limit=False,
        normalization_rule_name="identity",
        pad_id=PAD_ID,
        unk_id=UNK_ID,
        bos_id=BOS_ID,
        eos_id=EOS_ID,
        num_threads=num_threads or os.cpu_count() or 1,
        minloglevel=2,
    )
    return model.getvalue()


def _non_empty(texts: Iterable[str]) -> Iterator[str]:
    return (text for text in texts if text.strip())


def _map_values(fn, values: tf.Tensor | tf.RaggedTensor) -> tf.Tensor | tf.RaggedTensor:
    if isinstance(values, tf.RaggedTensor):
        return tf.ragged.map_flat_values(fn, values)
    return fn(values)


def _is_text_id(ids: tf.Tensor) -> tf.Tensor:
    return (ids != PAD_ID) & (ids != BOS_ID) & (ids != EOS_ID)


class SubwordTokenizer(tf.Module):
    """A SentencePiece model applied with TensorFlow ops.

    All methods are graph ops: they work eagerly and inside `tf.function`, on a
    scalar string (1-D result) or a batch `(batch,)` (ragged `(batch, None)`
    result). Construct it eagerly (outside `tf.function`).

    Args:
        model_proto: serialized SentencePiece model (see `train_sentencepiece`).
        language: `"en"` or `"fr"`; selects the normalisation rules.
    """

    def __init__(self, model_proto: bytes, language: str, name: str | None = None) -> None:
        _check_language(language)
        if not isinstance(model_proto, bytes) or not model_proto:
            raise ValueError(
                "model_proto must be a non-empty serialized SentencePiece model. "
                f"Received: model_proto of type {type(model_proto).__name__}"
            )
        super().__init__(name=name or f"{language}_tokenizer")
        self._model_proto = model_proto
        self._language = language
        self._sp = tf_text.SentencepieceTokenizer(model=model_proto, out_type=tf.int32)
        self._vocab_size = int(self._sp.vocab_size())
        self.model_asset = tf.saved_model.Asset(self._private_model_file())

    def _private_model_file(self) -> str:
        # A private copy, so the asset saved later is exactly the model in the graph
        # even if the caller's file changes or is deleted in between.
        directory = tempfile.mkdtemp(prefix="nmt-spm-")
        weakref.finalize(self, shutil.rmtree, directory, ignore_errors=True)
        path = os.path.join(directory, f"{self._language}.spm.model")
        with open(path, "wb") as f:
            f.write(self._model_proto)
        return path

    @classmethod
    def from_file(cls, path: str | os.PathLike, language: str) -> SubwordTokenizer:
        """Loads a `.model` file written by `write` (or by SentencePiece)."""
        with tf.io.gfile.GFile(os.fspath(path), "rb") as f:
            return cls(f.read(), language)

    def write(self, path: str | os.PathLike) -> None:
        """Writes the SentencePiece `.model` file to `path`."""
        path = os.fspath(path)
        parent = os.path.dirname(path)
        if parent:
            tf.io.gfile.makedirs(parent)
        with tf.io.gfile.GFile(path, "wb") as f:
            f.write(self._model_proto)

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    @property
    def model_proto(self) -> bytes:
        return self._model_proto

    @property
    def language(self) -> str:
        return self._language

    def normalize(self, texts: tf.Tensor) -> tf.Tensor:
        """`normalize_tensor` with this tokenizer's language; same shape as `texts`."""
        return normalize_tensor(texts, self._language)

    def tokenize(self, texts: tf.Tensor) -> tf.Tensor | tf.RaggedTensor:
        """Normalises and splits text into subword ids (no BOS/EOS added).

        Args:
            texts: string tensor, shape `()` or `(batch,)`.

        Returns:
            int32 ids, shape `(tokens,)` for a scalar, ragged `(batch, None)`
            for a batch.
        """
        return self._sp.tokenize(self.normalize(texts))

    def tokenize_with_offsets(self, texts: tf.Tensor) -> tuple:
        """Like `tokenize`, plus each piece's byte span in the normalised text.

        Returns:
            `(ids, start_offsets, end_offsets)`, all of the shape `tokenize`
            returns; offsets are int64 byte positions into `normalize(texts)`,
            end exclusive.
        """
        return self._sp.tokenize_with_offsets(self.normalize(texts))

    def detokenize(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor:
        """Turns ids back into text, dropping PAD, BOS and EOS.

        Args:
            ids: int ids, ragged `(batch, None)`, or dense `(T,)` or
                `(batch, T)`. In dense input everything from the first EOS on
                is dropped, so padded search output can be passed as is.

        Returns:
            Strings: shape `()` for `(T,)` input, otherwise `(batch,)`.
        """
        if isinstance(ids, tf.RaggedTensor):
            ids = tf.cast(ids, tf.int32)
            keep = ids.with_flat_values(_is_text_id(ids.flat_values))
            return self._sp.detokenize(tf.ragged.boolean_mask(ids, keep))
        ids = tf.cast(tf.convert_to_tensor(ids), tf.int32)
        if ids.shape.rank == 1:
            return self.detokenize(ids[tf.newaxis])[0]
        if ids.shape.rank != 2:
            raise ValueError(f"Dense ids must have rank 1 or 2. Received: ids.shape={ids.shape}")
        before_eos = tf.cumsum(tf.cast(ids == EOS_ID, tf.int32), axis=-1) == 0  # (batch, T)
        keep = before_eos & _is_text_id(ids)  # (batch, T)
        return self._sp.detokenize(tf.ragged.boolean_mask(ids, keep))

    def id_to_piece(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor | tf.RaggedTensor:
        """SentencePiece pieces (e.g. `"▁bon"`) for ids of any shape; same shape."""
        return self._sp.id_to_string(tf.cast(ids, tf.int32))

    def word_starts(self, ids: tf.Tensor | tf.RaggedTensor) -> tf.Tensor | tf.RaggedTensor:
        """True where a piece begins a new whitespace-separated word.

        `tf.cumsum(word_starts) - 1` is then each piece's word index, which is
        how subword alignments are merged into word alignments. Special ids
        (PAD, UNK, BOS, EOS) are never word starts.

        Returns:
            bool tensor of the shape of `ids`.
        """
        marker = WORD_START.encode("utf-8")
        pieces = self.id_to_piece(ids)
        return _map_values(lambda p: tf.strings.substr(p, 0, len(marker)) == marker, pieces)


@dataclasses.dataclass(frozen=True)
class TokenizerPair:
    """Source and target tokenizers of one translation direction.

    Attributes:
        source: tokenizer of the source language.
        target: tokenizer of the target language.
        joint: whether both use one model trained on both languages.
    """

    source: SubwordTokenizer
    target: SubwordTokenizer
    joint: bool

    def save(self, directory: str | os.PathLike) -> None:
        """Writes `source.model`, `target.model` and `tokenizer.json`."""
        directory = os.fspath(directory)
        tf.io.gfile.makedirs(directory)
        self.source.write(os.path.join(directory, "source.model"))
        self.target.write(os.path.join(directory, "target.model"))
        meta = {
            "source_language": self.source.language,
            "target_language": self.target.language,
            "joint": self.joint,
        }
        with tf.io.gfile.GFile(os.path.join(directory, "tokenizer.json"), "w") as f:
            f.write(json.dumps(meta, indent=2) + "\n")

    @classmethod
    def load(cls, directory: str | os.PathLike) -> TokenizerPair:
        """Reads a directory written by `save`."""
        directory = os.fspath(directory)
        with tf.io.gfile.GFile(os.path.join(directory, "tokenizer.json")) as f:
            meta = json.load(f)
        return cls(
            source=SubwordTokenizer.from_file(
                os.path.join(directory, "source.model"), meta["source_language"]
            ),
            target=SubwordTokenizer.from_file(
                os.path.join(directory, "target.model"), meta["target_language"]
            ),
            joint=bool(meta["joint"]),
        )


def train_tokenizers(
    pairs: Sequence[tuple[str, str]],
    vocab_size: int = 8000,
    joint: bool = True,
    source_language: str = "en",
    target_language: str = "fr",
    **train_kwargs,
) -> TokenizerPair:
    """Trains the tokenizers of a corpus of sentence pairs.

    Each side is normalised with its own language's rules first. With `joint`,
    one model is trained on both sides and shared; otherwise one per side.

    Args:
        pairs: `(source, target)` sentence pairs.
        vocab_size: vocabulary size of each model.
        joint: one shared model instead of two.
        source_language: language of the first element of each pair.
        target_language: language of the second element of each pair.
        **train_kwargs: passed on to `train_sentencepiece`.

    Returns:
        The trained `TokenizerPair`.
    """
    if not pairs:
        raise ValueError(f"pairs must not be empty. Received: pairs={pairs!r}")
    sources = normalize_strings((source for source, _ in pairs), source_language)
    targets = normalize_strings((target for _, target in pairs), target_language)
    if joint:
        proto = train_sentencepiece(sources + targets, vocab_size, **train_kwargs)
        source_proto = target_proto = proto
    else:
        source_proto = train_sentencepiece(sources, vocab_size, **train_kwargs)
        target_proto = train_sentencepiece(targets, vocab_size, **train_kwargs)
    return TokenizerPair(
        source=SubwordTokenizer(source_proto, source_language),
        target=SubwordTokenizer(target_proto, target_language),
        joint=joint,
    )
