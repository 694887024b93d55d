"""Bahdanau (additive) and Luong (multiplicative) attention layers.

All mechanisms share one base class, `Attention`: it masks, applies the
optional local-p window, normalises in float32 and builds the context vector.
Each mechanism only overrides how keys are projected (once per sentence) and
how a query is scored against the projected keys.

Contract, relied on by both decoders: `layer(query, keys, mask=...)` returns
`(context, weights)`; weights have shape `(batch, Tq, Tk)` (or `(batch, Tk)`
for a single decoder step), sum to 1 over `Tk` and are exactly 0 at masked
positions.
"""

from __future__ import annotations

import keras
from keras import ops

_MASKED_LOGIT = -1e9

_LUONG_SCORES = ("dot", "general", "concat")


def _is_positive_int(value) -> bool:
    # bool is an int subclass, but `local_window=True` is a mistake, not D = 1.
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


class Attention(keras.layers.Layer):
    """Base class: masked softmax attention with an optional local-p window.

    Args:
        local_window: `None` for global attention; an integer D for Luong
            local-p attention (Luong et al. 2015, Sec. 3.2): the layer predicts
            an aligned position p_t = (S - 1) * sigmoid(v_p^T tanh(W_p q_t))
            for each query, keeps source positions within [p_t - D, p_t + D]
            and favours those near p_t with a Gaussian of sigma = D / 2. The
            paper multiplies softmax weights by the Gaussian; here the
            Gaussian enters the logits, so the weights are the paper's
            renormalised to sum to 1 over the window.
        local_units: hidden size of the position predictor W_p.

    Call arguments:
        query: `(batch, Tq, dq)`, or `(batch, dq)` for one decoder step.
        keys: `(batch, Tk, dk)` encoder states.
        values: `(batch, Tk, dv)`; defaults to `keys`.
        mask: boolean `(batch, Tk)`, True at real (non-padding) positions.
        projected_keys: the result of `project_keys(keys)`, to reuse it at
            every decoder step instead of projecting the keys again.

    Returns:
        `(context, weights)`: context `(batch, Tq, dv)` in the layer's compute
        dtype and weights `(batch, Tq, Tk)` in float32; without the `Tq` axis
        when the query had none.
    """

    def __init__(self, local_window: int | None = None, local_units: int = 128, **kwargs):
        super().__init__(**kwargs)
        if local_window is not None and not _is_positive_int(local_window):
            raise ValueError(
                f"local_window must be None or a positive integer. Received: "
                f"local_window={local_window!r}"
            )
        if not _is_positive_int(local_units):
            raise ValueError(
                f"local_units must be a positive integer. Received: local_units={local_units!r}"
            )
        self.local_window = local_window
        self.local_units = local_units
        # Queries may carry a Keras mask (e.g. from a masked LSTM); the output
        # is not a sequence over the keys, so no mask is propagated.
        self.supports_masking = True

    # --- hooks for subclasses -------------------------------------------------

    def build_score(self, query_dim: int, key_dim: int) -> None:
        """Creates the weights of the score function."""

    def project_keys(self, keys):
        """Projects keys once per sentence; identity unless overridden."""
        return keys

    def _score(self, query, projected_keys):
        """Returns unnormalised scores `(batch, Tq, Tk)`."""
        raise NotImplementedError

    # --- shared machinery -------------------------------------------------------

    def build(self, query_shape, keys_shape, values_shape=None, mask_shape=None,
              projected_keys_shape=None):
        query_dim, key_dim = int(query_shape[-1]), int(keys_shape[-1])
        self.build_score(query_dim, key_dim)
        if self.local_window is not None:
            self.position_hidden = keras.layers.Dense(
                self.local_units, activation="tanh", use_bias=False,
                name="position_hidden", dtype=self.dtype_policy,
            )
            self.position_hidden.build((None, None, query_dim))
            self.position_output = keras.layers.Dense(
                1, use_bias=False, name="position_output", dtype=self.dtype_policy
            )
            self.position_output.build((None, None, self.local_units))
        self.built = True

    def call(self, query, keys, values=None, mask=None, projected_keys=None):
        single_step = len(query.shape) == 2
        if single_step:
            query = query[:, None, :]  # (batch, 1, dq)
        values = keys if values is None else values
        weights = self.attention_weights(query, keys, mask, projected_keys)  # (batch, Tq, Tk)
        context = ops.matmul(ops.cast(weights, values.dtype), values)  # (batch, Tq, dv)
        if single_step:
            return context[:, 0], weights[:, 0]
        return context, weights

    def attention_weights(self, query, keys, mask=None, projected_keys=None):
        """The weights alone, float32 `(batch, Tq, Tk)`, for a query `(batch, Tq, dq)`:
        what an aligner needs, without the context vector's product."""
        return self._masked_softmax(*self.attention_logits(query, keys, mask, projected_keys))

    def attention_logits(self, query, keys, mask=None, projected_keys=None):
        """The scores before the softmax: `(logits, valid)`, float32 and bool
        `(batch, Tq, Tk)`, `valid` False at masked keys (and outside a local
        window). An aligner that normalises them another way starts here."""
        if projected_keys is None:
            projected_keys = self.project_keys(keys)  # (batch, Tk, d)
        logits = ops.cast(self._score(query, projected_keys), "float32")  # (batch, Tq, Tk)
        if mask is None:
            mask = ops.ones(ops.shape(keys)[:2], dtype="bool")  # (batch, Tk)
        mask = ops.cast(mask, "bool")  # a 0/1 mask works too; where() needs bool
        valid = ops.broadcast_to(mask[:, None, :], ops.shape(logits))  # (batch, Tq, Tk)
        if self.local_window is not None:
            logits, valid = self._apply_local_window(query, logits, valid, mask)
        return logits, valid

    def compute_mask(self, *args, **kwargs):
        return None

    @staticmethod
    def _masked_softmax(logits, valid):
        logits = ops.where(valid, logits, _MASKED_LOGIT)
        weights = ops.softmax(logits, axis=-1)
        # exp(-1e9) underflows to 0 already; the multiply also covers rows
        # with no valid position at all (they come out all zero, not uniform).
        return weights * ops.cast(valid, weights.dtype)

    def predicted_positions(self, query, mask):
        """p_t = (S - 1) * sigmoid(v_p^T tanh(W_p q_t)), shape `(batch, Tq)`."""
        source_length = ops.sum(ops.cast(mask, "float32"), axis=-1)  # (batch,)
        gate = ops.cast(self.position_output(self.position_hidden(query)), "float32")
        gate = ops.sigmoid(gate[..., 0])  # (batch, Tq)
        return (source_length[:, None] - 1.0) * gate  # (batch, Tq)

    def _apply_local_window(self, query, logits, valid, mask):
        positions = self.predicted_positions(query, mask)[..., None]  # (batch, Tq, 1)
        # Positions 0..Tk-1 from a cumulative sum: Tk may be a symbolic size under TensorFlow.
        source_index = ops.cumsum(ops.ones_like(logits[:1, :1, :]), axis=-1) - 1.0  # (1, 1, Tk)
        distance = source_index - positions  # (batch, Tq, Tk)
        sigma = self.local_window / 2.0
        logits = logits - ops.square(distance) / (2.0 * sigma * sigma)
        valid = ops.logical_and(valid, ops.abs(distance) <= float(self.local_window))
        return logits, valid

    def compute_output_spec(self, query, keys, values=None, mask=None, projected_keys=None):
        values = keys if values is None else values
        context_shape = tuple(query.shape[:-1]) + (values.shape[-1],)
        weights_shape = tuple(query.shape[:-1]) + (keys.shape[1],)
        return (
            keras.KerasTensor(context_shape, dtype=self.compute_dtype),
            keras.KerasTensor(weights_shape, dtype="float32"),
        )

    def get_config(self):
        return {
            **super().get_config(),
            "local_window": self.local_window,
            "local_units": self.local_units,
        }


def _additive_score(query_proj, key_proj, v, bias=None):
    """v^T tanh(q + k [+ b]) for every query/key pair -> `(batch, Tq, Tk)`."""
    hidden = query_proj[:, :, None, :] + key_proj[:, None, :, :]  # (batch, Tq, Tk, units)
    if bias is not None:
        hidden = hidden + bias
    return ops.tensordot(ops.tanh(hidden), v, axes=[[3], [0]])  # (batch, Tq, Tk)


def _build_additive_weights(layer, query_dim: int, key_dim: int) -> None:
    """W_q, W_k (`units` wide, no bias) and v of an additive score, v^T tanh(W_q q + W_k k):
    Bahdanau's score and Luong's "concat"."""
    layer.query_dense = keras.layers.Dense(
        layer.units, use_bias=False, name="query_dense", dtype=layer.dtype_policy
    )
    layer.query_dense.build((None, None, query_dim))
    layer.key_dense = keras.layers.Dense(
        layer.units, use_bias=False, name="key_dense", dtype=layer.dtype_policy
    )
    layer.key_dense.build((None, None, key_dim))
    layer.v = layer.add_weight(name="v", shape=(layer.units,), initializer="glorot_uniform")


@keras.saving.register_keras_serializable(package="nmt")
class BahdanauAttention(Attention):
    """Additive attention, score(s, h) = v^T tanh(W1 s + W2 h).

    Bahdanau et al. 2015, "Neural Machine Translation by Jointly Learning to
    Align and Translate", Appendix A.1.2. With `normalize=True` the vector v
    is weight-normalised, v = g * v / ||v||, and a bias b is added inside the
    tanh (Salimans & Kingma 2016, as in TensorFlow's seq2seq
    `BahdanauAttention(normalize=True)`).

    Args:
        units: size of the hidden layer W1 s + W2 h.
        normalize: use the weight-normalised variant.
        **kwargs: see `Attention` (e.g. `local_window`).
    """

    def __init__(self, units: int, normalize: bool = False, **kwargs):
        super().__init__(**kwargs)
        if not _is_positive_int(units):
            raise ValueError(f"units must be a positive integer. Received: units={units!r}")
        self.units = units
        self.normalize = normalize

    def build_score(self, query_dim, key_dim):
        _build_additive_weights(self, query_dim, key_dim)
        if self.normalize:
            self.g = self.add_weight(
                name="g", shape=(), initializer=keras.initializers.Constant(
                    (1.0 / self.units) ** 0.5
                ),
            )
            self.b = self.add_weight(name="b", shape=(self.units,), initializer="zeros")

    def project_keys(self, keys):
        return self.key_dense(keys)  # (batch, Tk, units)

    def _score(self, query, projected_keys):
        v = ops.cast(self.v, self.compute_dtype)
        bias = None
        if self.normalize:
            v = ops.cast(self.g, self.compute_dtype) * v / ops.sqrt(ops.sum(ops.square(v)))
            bias = ops.cast(self.b, self.compute_dtype)
        return _additive_score(self.query_dense(query), projected_keys, v, bias)

    def get_config(self):
        return {**super().get_config(), "units": self.units, "normalize": self.normalize}


@keras.saving.register_keras_serializable(package="nmt")
class LuongAttention(Attention):
    """Multiplicative attention of Luong et al. 2015, Eq. 8.

    "Effective Approaches to Attention-based Neural Machine Translation":
    - `"dot"`:     score(h_t, h_s) = h_t^T h_s (query and key sizes must match)
    - `"general"`: score(h_t, h_s) = h_t^T W_a h_s
    - `"concat"`:  score(h_t, h_s) = v_a^T tanh(W_a [h_t; h_s]), computed as
      v_a^T tanh(W_q h_t + W_k h_s), which is the same product split in two.

    Args:
        score_mode: one of `"dot"`, `"general"`, `"concat"` (the name Keras'
            attention layers use; configs written with the older `score` key
            still load).
        scale: multiply scores by a learned scalar g (initialised to 1).
        units: hidden size of `"concat"`; ignored by the other scores.
        **kwargs: see `Attention` (e.g. `local_window` for local-p).
    """

    def __init__(self, score_mode: str = "general", scale: bool = False, units: int = 256,
                 **kwargs):
        super().__init__(**kwargs)
        if score_mode not in _LUONG_SCORES:
            raise ValueError(f"score_mode must be one of {_LUONG_SCORES}. "
                             f"Received: score_mode={score_mode!r}")
        if not _is_positive_int(units):
            raise ValueError(f"units must be a positive integer. Received: units={units!r}")
        self.score_mode = score_mode
        self.scale = scale
        self.units = units

    def build_score(self, query_dim, key_dim):
        if self.score_mode == "dot" and query_dim != key_dim:
            raise ValueError(
                "The 'dot' score needs queries and keys of the same size; use 'general' or "
                f"'concat' otherwise. Received: query_dim={query_dim}, key_dim={key_dim}"
            )
        if self.score_mode == "general":
            self.key_dense = keras.layers.Dense(
                query_dim, use_bias=False, name="key_dense", dtype=self.dtype_policy
            )
            self.key_dense.build((None, None, key_dim))
        elif self.score_mode == "concat":
            _build_additive_weights(self, query_dim, key_dim)
        if self.scale:
            self.g = self.add_weight(name="g", shape=(), initializer="ones")

    def project_keys(self, keys):
        if self.score_mode == "dot":
            return keys
        return self.key_dense(keys)  # general: W_a h_s; concat: W_k h_s

    def _score(self, query, projected_keys):
        if self.score_mode == "concat":
            v = ops.cast(self.v, self.compute_dtype)
            scores = _additive_score(self.query_dense(query), projected_keys, v)
        else:
            scores = ops.matmul(query, ops.swapaxes(projected_keys, -1, -2))  # (batch, Tq, Tk)
        if self.scale:
            scores = scores * ops.cast(self.g, scores.dtype)
        return scores

    def get_config(self):
        return {
            **super().get_config(),
            "score_mode": self.score_mode,
            "scale": self.scale,
            "units": self.units,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if "score" in config:  # written before the argument was renamed score_mode
            config["score_mode"] = config.pop("score")
        return cls(**config)


def make_attention(kind: str, units: int, *, normalize: bool = False, scale: bool = False,
                   local_window: int | None = None, name: str = "attention",
                   dtype=None) -> Attention:
    """Builds an attention layer from its short name.

    Args:
        kind: `"bahdanau"` or a Luong score (`"dot"`, `"general"`, `"concat"`).
        units: hidden size of the additive scores.
        normalize: Bahdanau weight normalisation.
        scale: Luong learned scale.
        local_window: D of local-p attention, or None for global attention.
    """
    common = {"local_window": local_window, "name": name, "dtype": dtype}
    if kind == "bahdanau":
        return BahdanauAttention(units, normalize=normalize, **common)
    if kind in _LUONG_SCORES:
        return LuongAttention(score_mode=kind, scale=scale, units=units, **common)
    raise ValueError(
        f"attention must be 'bahdanau' or one of {_LUONG_SCORES}. Received: attention={kind!r}"
    )
