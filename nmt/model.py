"""The attentional sequence-to-sequence model and its configuration."""

from __future__ import annotations

import dataclasses
from typing import Any

import keras
from keras import ops

from nmt.layers.attention import make_attention
from nmt.layers.bidirectional import bidirectional
from nmt.layers.decoder import (
    HEAD_AGREEMENTS,
    HEAD_KEYS,
    BahdanauDecoder,
    LuongDecoder,
    Memory,
    OutputProjection,
    ProjectedReader,
    TargetConvolution,
)
from nmt.layers.encoder import Encoder
from nmt.types import dataclass_from_dict

DECODERS = ("luong", "bahdanau")
ATTENTIONS = ("bahdanau", "dot", "general", "concat")
CELLS = ("lstm", "gru")
# Scores an alignment head can use: its query ([h_j; embedding(y_j)]) is wider
# than the keys, so Luong's "dot" is not one of them.
HEAD_SCORES = ("general", "bahdanau", "concat")
HEAD_READERS = ("lstm", "conv")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Architecture of a `Seq2Seq` model, validated on construction.

    Attributes:
        source_vocab_size / target_vocab_size: subword vocabulary sizes.
        embedding_dim: size of token embeddings (and of decoder output vectors).
        hidden_dim: encoder output size (both directions) and decoder RNN units.
        encoder_layers / decoder_layers: stacked RNN layers.
        cell: `"lstm"` or `"gru"`.
        residual: residual connections between upper encoder layers.
        dropout: dropout rate.
        decoder: `"luong"` (query h_t) or `"bahdanau"` (query s_{t-1}).
        attention: `"bahdanau"` (additive) or a Luong score `"dot"`, `"general"`,
            `"concat"`.
        attention_units: hidden size of additive scores.
        normalize: weight-normalised Bahdanau attention.
        scale: learned scale on Luong scores.
        local_window: D of Luong local-p attention; None for global attention.
        input_feeding: Luong input feeding (ignored by the Bahdanau decoder).
        tie_embeddings: output projection shares the target embedding matrix.
        share_embeddings: source and target share one embedding (joint vocabulary).
        label_smoothing: epsilon of label-smoothed cross-entropy.
        alignment_head: score of an alignment head (`"general"`, `"bahdanau"`
            or `"concat"`), an attention that reads each target piece before
            aligning it and does not feed the prediction
            (`nmt.layers.decoder.AttentionDecoder`); None for no head.
        alignment_head_keys: the head's keys: `"encoder"` states,
            `"embedding"` (source piece embeddings) or `"both"`.
        alignment_head_context: units per direction of a bidirectional LSTM
            that reads the head's queries along the whole target before the
            head scores them, so a piece's row also sees the pieces after it
            (0: none; the head then reads piece j and what came before).
        alignment_head_reader: how the target context is read: `"lstm"` (a
            bidirectional LSTM, the whole target, one step per piece) or
            `"conv"` (two convolutions of width 5 with `2 * context` filters:
            four pieces either side, in two parallel products).
        alignment_head_context_input: width the head's queries are projected
            to before the target reader reads them (`ProjectedReader`; 0: the
            reader reads them whole, `hidden_dim + embedding_dim` wide).
        alignment_head_agreement: `"none"`, or the head also scores each
            source piece's distribution over the target and its rows become
            the two directions' product (`"shared"`: its own scores
            normalised over the target; `"separate"`: a second attention of
            the same kind); `nmt.layers.decoder.AttentionDecoder`.
    """

    source_vocab_size: int
    target_vocab_size: int
    embedding_dim: int = 256
    hidden_dim: int = 512
    encoder_layers: int = 2
    decoder_layers: int = 1
    cell: str = "lstm"
    residual: bool = True
    dropout: float = 0.2
    decoder: str = "luong"
    attention: str = "general"
    attention_units: int = 256
    normalize: bool = False
    scale: bool = False
    local_window: int | None = None
    input_feeding: bool = True
    tie_embeddings: bool = True
    share_embeddings: bool = False
    label_smoothing: float = 0.1
    alignment_head: str | None = None
    alignment_head_keys: str = "encoder"
    alignment_head_context: int = 0
    alignment_head_reader: str = "lstm"
    alignment_head_context_input: int = 0
    alignment_head_agreement: str = "none"

    def __post_init__(self) -> None:
        _check_choice("decoder", self.decoder, DECODERS)
        _check_choice("attention", self.attention, ATTENTIONS)
        _check_choice("cell", self.cell, CELLS)
        if self.alignment_head is not None:
            _check_choice("alignment_head", self.alignment_head, HEAD_SCORES)
        _check_choice("alignment_head_keys", self.alignment_head_keys, HEAD_KEYS)
        _check_choice("alignment_head_reader", self.alignment_head_reader, HEAD_READERS)
        _check_choice("alignment_head_agreement", self.alignment_head_agreement,
                      HEAD_AGREEMENTS)
        self._require("alignment_head_agreement",
                      self.alignment_head_agreement == "none" or self.alignment_head is not None,
                      '"none" without an alignment head (set model.alignment_head)')
        self._require("alignment_head_context",
                      _is_count(self.alignment_head_context), "an integer >= 0")
        self._require("alignment_head_context_input",
                      _is_count(self.alignment_head_context_input), "an integer >= 0")
        self._require("alignment_head_context_input",
                      not self.alignment_head_context_input or self.alignment_head_context,
                      "0 without a target context (set model.alignment_head_context)")
        self._require("alignment_head_context",
                      not self.alignment_head_context or self.alignment_head is not None,
                      "0 without an alignment head (set model.alignment_head)")
        for name in _POSITIVE_INTS:
            self._require(name, _is_positive_int(getattr(self, name)), "a positive integer")
        # A quoted YAML "false" is a non-empty string, i.e. truthy: reject it.
        for name in _FLAGS:
            self._require(name, isinstance(getattr(self, name), bool), "True or False")
        for name in ("dropout", "label_smoothing"):
            self._require(name, _is_fraction(getattr(self, name)), "a number in [0, 1)")
        self._require(
            "local_window", self.local_window is None or _is_positive_int(self.local_window),
            "None (global attention) or a positive integer D",
        )
        self._require("hidden_dim", self.hidden_dim % 2 == 0, "even (split over two directions)")
        if self.share_embeddings and self.source_vocab_size != self.target_vocab_size:
            raise ValueError(
                "share_embeddings needs one joint vocabulary (equal vocabulary sizes). Received: "
                f"source_vocab_size={self.source_vocab_size}, "
                f"target_vocab_size={self.target_vocab_size}"
            )

    def _require(self, name: str, ok: bool, what: str) -> None:
        if not ok:
            value = getattr(self, name)
            raise ValueError(f"{name} must be {what}. Received: {name}={value!r}")

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> ModelConfig:
        """Builds a config from a mapping, naming any unknown keys."""
        return dataclass_from_dict(cls, values, "the model config")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def architecture_name(self) -> str:
        """Short name of the architecture, e.g. `luong-general+feed` or `bahdanau`.

        Exports record it as their `attention` (`ModelInfo.attention`, `GetModelInfo`).
        """
        same = self.decoder == self.attention  # Bahdanau's decoder with its own score
        name = self.decoder if same else f"{self.decoder}-{self.attention}"
        if self.normalize:
            name += "-normalized"
        if self.local_window is not None:
            name += f"-local{self.local_window}"
        if self.decoder == "luong" and self.input_feeding:
            name += "+feed"
        if self.alignment_head is not None:
            name += f"+head-{self.alignment_head}"
            if self.alignment_head_keys != "encoder":
                name += f"-{self.alignment_head_keys}"
            if self.alignment_head_context:
                name += f"-context{self.alignment_head_context}"
                if self.alignment_head_reader != "lstm":
                    name += f"-{self.alignment_head_reader}"
                if self.alignment_head_context_input:
                    name += f"-in{self.alignment_head_context_input}"
            if self.alignment_head_agreement != "none":
                name += f"-agree-{self.alignment_head_agreement}"
        return name


_POSITIVE_INTS = ("source_vocab_size", "target_vocab_size", "embedding_dim", "hidden_dim",
                  "encoder_layers", "decoder_layers", "attention_units")
_FLAGS = ("residual", "normalize", "scale", "input_feeding", "tie_embeddings",
          "share_embeddings")


def _is_fraction(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1


def _is_positive_int(value: Any) -> bool:
    # bool is an int subclass, but `encoder_layers: true` in a YAML file is a mistake.
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}. Received: {name}={value!r}")


@keras.saving.register_keras_serializable(package="nmt")
class Seq2Seq(keras.Model):
    """Encoder, attentional decoder and (optionally tied) output projection.

    Call arguments:
        inputs: `(source, target_in)`, int `(batch, S)` and `(batch, T)`, 0 = padding.

    Returns:
        `(logits, attention)`: float32 `(batch, T, V)` and `(batch, T, S)`.
    """

    def __init__(self, config: ModelConfig | dict, **kwargs):
        super().__init__(**kwargs)
        if isinstance(config, dict):
            config = ModelConfig.from_dict(config)
        self.config = config
        policy = self.dtype_policy
        self.target_embedding = keras.layers.Embedding(
            config.target_vocab_size, config.embedding_dim, name="target_embedding", dtype=policy
        )
        self.source_embedding = (
            self.target_embedding if config.share_embeddings else keras.layers.Embedding(
                config.source_vocab_size, config.embedding_dim, name="source_embedding",
                dtype=policy,
            )
        )
        self.encoder = Encoder(
            self.source_embedding, config.hidden_dim, config.encoder_layers, config.cell,
            config.dropout, config.residual, name="encoder", dtype=policy,
        )
        attention = make_attention(
            config.attention, config.attention_units, normalize=config.normalize,
            scale=config.scale, local_window=config.local_window, dtype=policy,
        )
        projection = OutputProjection(
            config.target_vocab_size,
            self.target_embedding if config.tie_embeddings else None,
            name="output_projection", dtype=policy,
        )
        head = head_context = reverse_head = None
        if config.alignment_head is not None:
            head = make_attention(config.alignment_head, config.attention_units,
                                  name="alignment_head", dtype=policy)
        if config.alignment_head_agreement == "separate":
            reverse_head = make_attention(config.alignment_head, config.attention_units,
                                          name="alignment_head_reverse", dtype=policy)
        if config.alignment_head_context and config.alignment_head_reader == "lstm":
            head_context = bidirectional(
                keras.layers.LSTM(config.alignment_head_context, return_sequences=True,
                                  dtype=policy),
                name="alignment_head_context", dtype=policy)
        elif config.alignment_head_context:
            head_context = TargetConvolution(2 * config.alignment_head_context,
                                             name="alignment_head_context", dtype=policy)
        if head_context is not None and config.alignment_head_context_input:
            head_context = ProjectedReader(config.alignment_head_context_input, head_context,
                                           name="alignment_head_reader", dtype=policy)
        decoder_args = (
            self.target_embedding, attention, config.hidden_dim, config.decoder_layers,
            config.cell, config.embedding_dim, projection, config.dropout,
        )
        common = {"alignment_head": head, "head_keys": config.alignment_head_keys,
                  "head_context": head_context,
                  "head_agreement": config.alignment_head_agreement,
                  "reverse_head": reverse_head,
                  "name": "decoder", "dtype": policy}
        if config.decoder == "luong":
            self.decoder = LuongDecoder(*decoder_args, input_feeding=config.input_feeding,
                                        **common)
        else:
            self.decoder = BahdanauDecoder(*decoder_args, **common)

    def call(self, inputs, training=False):
        source, target_in = inputs
        memory = self.encode(source, training=training)
        return self.decoder(target_in, memory, training=training)

    def teacher_forced(self, source, target_in, target_out, training=False,
                       project=True) -> dict:
        """Teacher forcing with everything a loss may need. (Not `forward`: under the
        PyTorch backend that name is `torch.nn.Module`'s, which Keras layers are.)

        Args:
            source / target_in: as for `call`.
            target_out: int `(batch, T)`, the pieces the rows predict (the
                alignment head reads them).
            project: compute the logits; the frozen-head trainer skips them.

        Returns:
            dict with `attention (batch, T, S)`, `logits (batch, T, V)` when
            `project`, and `head (batch, T, S)` with an alignment head; with
            agreement also its two directions, `head_rows` (p(s|t)) and
            `head_columns` (p(t|s), columns summing to 1 over T).
        """
        memory = self.encode(source, training=training)
        outputs, attention, queries = self.decoder.teacher_forced(target_in, memory, training)
        out = {"attention": attention}
        if project:
            out["logits"] = self.decoder.projection(outputs)
        if self.decoder.alignment_head is not None:
            head = self.decoder.head_distributions(queries, target_out, memory)
            out["head"] = head["alignment"]
            if "target_given_source" in head:
                out["head_rows"] = head["source_given_target"]
                out["head_columns"] = head["target_given_source"]
        return out

    def encode(self, source, training=False) -> Memory:
        """Encodes source ids and projects the keys once -> `Memory`."""
        values, mask = self.encoder(source, training=training)
        return self.prepare_memory(source, values, mask)

    def prepare_memory(self, source, values, mask) -> Memory:
        """`Memory` of encoder outputs `values` of source ids `source` (the alignment
        head may read the source embeddings too)."""
        embedded = None
        if self.decoder.alignment_head is not None and self.config.alignment_head_keys != "encoder":
            embedded = self.source_embedding(source)  # (batch, S, emb)
        return self.decoder.prepare_memory(values, mask, embedded)

    def initial_state(self, memory: Memory) -> dict:
        return self.decoder.initial_state(memory)

    def decode_step(self, previous_tokens, state, memory: Memory, kernels=None,
                    return_query: bool = False):
        """One search step: `(previous token (rows,), state)` ->
        `(logits (rows, V), state, attention (rows, S))`; `rows` is a multiple of
        the memory's batch (K beams per sentence). `kernels` and `return_query`:
        see `AttentionDecoder.step`."""
        return self.decoder.step(previous_tokens, state, memory, training=False, kernels=kernels,
                                 return_query=return_query)

    def build_from_config(self, config):
        # On loading a .keras file: `call` alone would leave the alignment head (used
        # only by `teacher_forced`) without weights, and its saved weights unloaded.
        self.build_for()

    def build_for(self, batch: int = 2, source_length: int = 3, target_length: int = 3) -> None:
        """Creates every weight by running the model once on dummy ids."""
        source = ops.ones((batch, source_length), "int32")
        target = ops.ones((batch, target_length), "int32")
        self((source, target))
        memory = self.encode(source)
        self.decode_step(target[:, 0], self.initial_state(memory), memory)
        if self.decoder.alignment_head is not None:
            self.teacher_forced(source, target, target)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        logits, _ = y_pred
        return sequence_loss(y, logits, self.config.label_smoothing)

    def get_config(self):
        # The dtype policy travels with the model, as for Keras' own layers; without
        # it a mixed_bfloat16 model would come back from a .keras file in float32.
        return {
            "config": self.config.to_dict(),
            "name": self.name,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def sequence_loss(labels, logits, label_smoothing: float = 0.0):
    """Label-smoothed cross-entropy averaged over non-padding target tokens.

    Args:
        labels: int `(batch, T)`, 0 = padding.
        logits: float `(batch, T, V)`.
        label_smoothing: epsilon; the target distribution is
            (1 - eps) * one_hot + eps / V.

    Returns:
        Scalar float32 loss.
    """
    logits = ops.cast(logits, "float32")
    log_probs = ops.log_softmax(logits, axis=-1)  # (batch, T, V)
    labels = ops.cast(labels, "int32")
    nll = -ops.take_along_axis(log_probs, labels[..., None], axis=-1)[..., 0]  # (batch, T)
    if label_smoothing:
        uniform = -ops.mean(log_probs, axis=-1)  # (batch, T)
        nll = (1.0 - label_smoothing) * nll + label_smoothing * uniform
    mask = ops.cast(ops.not_equal(labels, 0), "float32")
    return ops.sum(nll * mask) / ops.maximum(ops.sum(mask), 1.0)
