"""Attentional recurrent decoders: Bahdanau-style and Luong-style.

Both decoders expose the same two entry points:
- `call(target_in, memory, training=False)`: teacher forcing over a whole
  target sequence (`memory` from `prepare_memory`, which carries the source
  mask), returning logits `(batch, T, V)` and attention `(batch, T, S)`.
- `step(previous_tokens, state, memory, training=False)`: one decoding step
  for search, returning logits `(batch, V)`, the new state and attention
  `(batch, S)`.

The per-step recurrence produces an output vector; the projection to the
vocabulary (the largest matrix multiply) is done once for all target
positions, outside the recurrent loop.
"""

from __future__ import annotations

from typing import NamedTuple

import keras
from keras import ops

from nmt.layers import step_kernels
from nmt.layers.attention import Attention

_CELLS = {"lstm": keras.layers.LSTM, "gru": keras.layers.GRU}
HEAD_KEYS = ("encoder", "embedding", "both")
# How an alignment head's rows p(s|t) meet a distribution in the other direction:
# "shared" normalises the head's own scores over the target too, "separate"
# scores the reverse direction with a second attention of the same kind.
HEAD_AGREEMENTS = ("none", "shared", "separate")


def _masked_log_softmax(logits, valid, axis: int):
    """log-softmax of `logits` along `axis` over the `valid` cells alone (the
    others' values are meaningless: callers mask them)."""
    return ops.log_softmax(ops.where(valid, logits, -1e9), axis=axis)


class Memory(NamedTuple):
    """Encoder outputs prepared once per sentence for every decoder step."""

    values: object  # (batch, S, d_enc)
    projected_keys: object  # (batch, S, d_att)
    mask: object  # (batch, S) bool
    # Keys of the alignment head, projected once too; zero-width without a head.
    head_keys: object  # (batch, S, d_head) or (batch, S, 0)


@keras.saving.register_keras_serializable(package="nmt")
class TargetConvolution(keras.layers.Layer):
    """Stacked 1-D convolutions along the target: each position reads its
    `layers * (kernel_size - 1) / 2` neighbours on either side, in one
    parallel product per layer (a recurrent reader runs one step per piece).

    Args:
        filters: output channels of every layer.
        kernel_size: odd window of each layer.
        layers: number of stacked convolutions (ReLU between them).

    Call arguments:
        inputs: `(batch, T, d)`.
        mask: bool `(batch, T)`; masked positions are zeroed before each
            layer, so padding never reaches a real position.

    Returns:
        `(batch, T, filters)`.
    """

    def __init__(self, filters: int, kernel_size: int = 5, layers: int = 2, **kwargs):
        super().__init__(**kwargs)
        if kernel_size < 1 or kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd. Received: kernel_size={kernel_size!r}")
        self.filters, self.kernel_size, self.layers = filters, kernel_size, layers
        self.convolutions = [
            keras.layers.Conv1D(filters, kernel_size, padding="same", activation="relu",
                                name=f"conv_{i}", dtype=self.dtype_policy)
            for i in range(layers)
        ]
        self.supports_masking = True

    def get_config(self):
        return {**super().get_config(), "filters": self.filters,
                "kernel_size": self.kernel_size, "layers": self.layers}

    def build(self, input_shape):
        width = input_shape[-1]
        for conv in self.convolutions:
            conv.build((None, None, width))
            width = self.filters
        self.built = True

    def compute_output_shape(self, input_shape):
        return (*input_shape[:-1], self.filters)

    def call(self, inputs, mask=None):
        x = inputs
        keep = None if mask is None else ops.cast(mask, x.dtype)[..., None]  # (batch, T, 1)
        for conv in self.convolutions:
            if keep is not None:
                x = x * ops.cast(keep, x.dtype)
            x = conv(x)
        return x

    def compute_mask(self, inputs, mask=None):
        return mask


@keras.saving.register_keras_serializable(package="nmt")
class ProjectedReader(keras.layers.Layer):
    """A target reader that reads the head's queries projected down to `units`
    (a linear map, no bias): a reader of the same cost can then be wider, since
    most of its products are over its input's width.

    Args:
        units: width of the projection.
        reader: the target reader (a bidirectional RNN or `TargetConvolution`).

    Call arguments:
        inputs: `(batch, T, d)`.
        mask: bool `(batch, T)`, passed to the reader.
    """

    def __init__(self, units: int, reader: keras.layers.Layer, **kwargs):
        super().__init__(**kwargs)
        self.units, self.reader = units, reader
        self.projection = keras.layers.Dense(units, use_bias=False, name="projection",
                                             dtype=self.dtype_policy)
        self.supports_masking = True

    def get_config(self):
        return {**super().get_config(), "units": self.units,
                "reader": keras.saving.serialize_keras_object(self.reader)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["reader"] = keras.saving.deserialize_keras_object(config["reader"])
        return cls(**config)

    def build(self, input_shape):
        self.projection.build(input_shape)
        self.reader.build((*input_shape[:-1], self.units))
        self.built = True

    def compute_output_shape(self, input_shape):
        return self.reader.compute_output_shape((*input_shape[:-1], self.units))

    def call(self, inputs, mask=None):
        return self.reader(self.projection(inputs), mask=mask)

    def compute_mask(self, inputs, mask=None):
        return mask


@keras.saving.register_keras_serializable(package="nmt")
class OutputProjection(keras.layers.Layer):
    """Projects output vectors to vocabulary logits, optionally tied to an embedding.

    With `tied_embedding`, logits = o E^T + b (Press & Wolf 2017), which
    saves V x d parameters.

    Args:
        vocab_size: V, the number of logits.
        tied_embedding: an `Embedding` of V rows whose matrix is the kernel,
            or None for a kernel of its own. In a config it is serialized;
            revived on its own, the projection gets a copy of the embedding
            (an `AttentionDecoder` ties it to its own embedding again).

    Call arguments:
        outputs: `(..., d)` output vectors.

    Returns:
        float32 logits `(..., V)`.
    """

    def __init__(self, vocab_size: int, tied_embedding=None, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.tied_embedding = tied_embedding

    def build(self, input_shape):
        if self.tied_embedding is None:
            self.kernel = self.add_weight(
                name="kernel", shape=(input_shape[-1], self.vocab_size),
                initializer="glorot_uniform",
            )
        self.bias = self.add_weight(name="bias", shape=(self.vocab_size,), initializer="zeros")

    def get_config(self):
        tied = self.tied_embedding
        return {
            **super().get_config(),
            "vocab_size": self.vocab_size,
            "tied_embedding": None if tied is None else keras.saving.serialize_keras_object(tied),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("tied_embedding"), dict):
            config["tied_embedding"] = keras.saving.deserialize_keras_object(
                config["tied_embedding"])
        return cls(**config)

    def call(self, outputs):
        if self.tied_embedding is not None:
            kernel = ops.cast(self.tied_embedding.embeddings, self.compute_dtype)
            logits = ops.matmul(outputs, ops.transpose(kernel))  # (..., V)
        else:
            logits = ops.matmul(outputs, ops.cast(self.kernel, self.compute_dtype))
        return ops.cast(logits + ops.cast(self.bias, logits.dtype), "float32")


class AttentionDecoder(keras.layers.Layer):
    """Shared machinery: embeddings, RNN stack, initial-state bridge, projection.

    Args:
        embedding: target embedding layer.
        attention: an `nmt.layers.attention.Attention` layer.
        hidden_dim: units of every decoder RNN layer.
        num_layers: number of stacked RNN layers.
        cell: `"lstm"` or `"gru"`.
        output_dim: size of the output vector fed to the projection (equals
            the embedding size when the projection is tied).
        projection: an `OutputProjection`.
        dropout: dropout on embeddings, between layers and on output vectors.
        alignment_head: an `Attention` layer that aligns each target piece
            after reading it, or None. Its query for piece j is
            `[h_j; embedding(y_j)]`, where h_j is the top RNN state that
            predicts piece j (Luong h_t, Bahdanau s_i): an attention that has
            seen the word it aligns (Peter et al. 2017, "Generating
            Alignments Using Target Foresight in Attention-Based Neural
            Machine Translation"). It does not feed the prediction.
        head_keys: what the head's keys are: `"encoder"` (the encoder
            states, as the decoder's attention), `"embedding"` (the source
            piece embeddings, which name their own position only: Zenkel et
            al. 2019, "Adding Interpretable Attention to Neural Translation
            Models Improves Word Alignment") or `"both"` (concatenated).
        head_context: a layer that reads the head's queries along the target
            (`(batch, T, d)` with a mask -> `(batch, T, d')`, e.g. a
            bidirectional LSTM), whose output is appended to each query, so a
            row sees the pieces after its own too; None for none.
        head_agreement: `"none"`, or the head also gives each source piece a
            distribution over the target pieces, p(t|s) (the target's end of
            sentence as its "unaligned"), and its rows become the two
            directions' product, renormalised over the source: alignment by
            agreement (Liang et al. 2006; Cheng et al. 2016), within one
            model. `"shared"`: p(t|s) normalises the head's own scores over
            the target; `"separate"`: scored by `reverse_head`.
        reverse_head: the `Attention` of `"separate"` agreement (same kind
            as `alignment_head`, its own weights), else None.
    """

    def __init__(self, embedding, attention: Attention, hidden_dim: int, num_layers: int,
                 cell: str, output_dim: int, projection: OutputProjection,
                 dropout: float = 0.0, alignment_head: Attention | None = None,
                 head_keys: str = "encoder", head_context=None, head_agreement: str = "none",
                 reverse_head: Attention | None = None, **kwargs):
        super().__init__(**kwargs)
        if head_agreement not in HEAD_AGREEMENTS:
            raise ValueError(f"head_agreement must be one of {HEAD_AGREEMENTS}. "
                             f"Received: head_agreement={head_agreement!r}")
        if head_agreement != "none" and alignment_head is None:
            raise ValueError("head_agreement needs an alignment_head. Received: "
                             "alignment_head=None")
        if (head_agreement == "separate") != (reverse_head is not None):
            raise ValueError("reverse_head is the attention of head_agreement='separate', "
                             "and only of it. Received: "
                             f"head_agreement={head_agreement!r}, reverse_head={reverse_head!r}")
        if head_keys not in HEAD_KEYS:
            raise ValueError(f"head_keys must be one of {HEAD_KEYS}. "
                             f"Received: head_keys={head_keys!r}")
        if head_context is not None and alignment_head is None:
            raise ValueError("head_context needs an alignment_head. Received: "
                             "alignment_head=None")
        self.alignment_head = alignment_head
        self.head_keys = head_keys
        self.head_context = head_context
        self.head_agreement = head_agreement
        self.reverse_head = reverse_head
        if cell not in _CELLS:
            raise ValueError(f"cell must be one of {sorted(_CELLS)}. Received: cell={cell!r}")
        self.embedding = embedding
        self.attention = attention
        self.hidden_dim = hidden_dim
        self.num_layers = num_layers
        self.cell_type = cell
        self.output_dim = output_dim
        self.projection = projection
        self.dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)
        self.rnn_layers = [
            _CELLS[cell](hidden_dim, return_sequences=True, return_state=True,
                         name=f"{cell}_{i}", dtype=self.dtype_policy)
            for i in range(num_layers)
        ]
        self.states_per_layer = 2 if cell == "lstm" else 1
        self.bridge = keras.layers.Dense(
            hidden_dim * num_layers * self.states_per_layer, activation="tanh",
            name="bridge", dtype=self.dtype_policy,
        )

    def get_config(self):
        serialize = keras.saving.serialize_keras_object
        return {
            **super().get_config(),
            "embedding": serialize(self.embedding),
            "attention": serialize(self.attention),
            "hidden_dim": self.hidden_dim,
            "num_layers": self.num_layers,
            "cell": self.cell_type,
            "output_dim": self.output_dim,
            "projection": serialize(self.projection),
            "dropout": self.dropout.rate,
            "alignment_head": (None if self.alignment_head is None
                               else serialize(self.alignment_head)),
            "head_keys": self.head_keys,
            "head_context": (None if self.head_context is None
                             else serialize(self.head_context)),
            "head_agreement": self.head_agreement,
            "reverse_head": (None if self.reverse_head is None
                             else serialize(self.reverse_head)),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        deserialize = keras.saving.deserialize_keras_object
        serialized_embedding = config["embedding"]
        config["embedding"] = deserialize(serialized_embedding)
        config["attention"] = deserialize(config["attention"])
        for name in ("alignment_head", "head_context", "reverse_head"):
            if config.get(name) is not None:
                config[name] = deserialize(config[name])
        projection = config["projection"]
        if projection["config"].get("tied_embedding") == serialized_embedding:
            # Tied to this decoder's embedding when saved: tie it to the revived one, so
            # there is again one matrix, not two copies.
            tied = {**projection["config"], "tied_embedding": config["embedding"]}
            projection = {**projection, "config": tied}
        config["projection"] = deserialize(projection)
        return cls(**config)

    def build(self, *args, **kwargs):
        # Sublayers build on first use: each RNN cell at its first step (its input
        # size depends on the decoder kind), the others at their first call.
        self.built = True

    # --- memory and state --------------------------------------------------------

    def prepare_memory(self, memory, mask, source_embedded=None) -> Memory:
        """Projects the encoder outputs once for all decoding steps.

        Args:
            memory: encoder outputs `(batch, S, d_enc)`.
            mask: bool `(batch, S)`.
            source_embedded: the source piece embeddings `(batch, S, emb)`,
                needed by a head whose keys include them.
        """
        if not self.attention.built:
            # Keys are projected before the first query exists, so build explicitly.
            self.attention.build((None, None, self.hidden_dim), memory.shape)
        head = self.alignment_head
        if head is None:
            head_keys = memory[:, :, :0]
        else:
            keys = self._head_key_input(memory, source_embedded)
            if not head.built:
                head.build((None, None, self.head_query_dim), keys.shape)
            head_keys = head.project_keys(keys)
            if self.reverse_head is not None:
                if not self.reverse_head.built:
                    self.reverse_head.build((None, None, self.head_query_dim), keys.shape)
                # Both directions' keys travel as one tensor (search gathers it as
                # sentences finish); `head_distributions` splits it.
                head_keys = ops.concatenate([head_keys, self.reverse_head.project_keys(keys)], -1)
        return Memory(memory, self.attention.project_keys(memory), mask, head_keys)

    def initial_state(self, memory: Memory) -> dict:
        """RNN states from the mean encoder state: `{"rnn": ((batch, d), ...)}`."""
        weights = ops.cast(memory.mask, memory.values.dtype)[:, :, None]  # (batch, S, 1)
        mean = ops.sum(memory.values * weights, axis=1) / ops.maximum(
            ops.sum(weights, axis=1), 1.0
        )  # (batch, d_enc)
        states = ops.split(self.bridge(mean), self.num_layers * self.states_per_layer, axis=-1)
        return {"rnn": tuple(states)}

    def _layer_states(self, flat_states, i):
        n = self.states_per_layer
        return list(flat_states[i * n:(i + 1) * n])

    def _run_cells(self, x, flat_states, training, kernels=None):
        """One step through the RNN stack -> (top output `(batch, d)`, new flat states)."""
        new_states = []
        for i, layer in enumerate(self.rnn_layers):
            if i > 0:
                x = self.dropout(x, training=training)
            states = self._layer_states(flat_states, i)
            if kernels is None:
                x, states = layer.cell(x, states, training=training)
            else:
                x, states = step_kernels.cell_step(layer.cell, kernels.cells[i], x, states)
            new_states.extend(states if isinstance(states, (list, tuple)) else [states])
        return x, tuple(new_states)

    def _dense(self, layer, x, kernels):
        """`layer(x)`, or its product in the kernels' dtype."""
        if kernels is None:
            return layer(x)
        return step_kernels.dense(layer, x, kernels.dense[layer.name])

    def _step_dense_layers(self) -> list:
        """The `Dense` layers a step applies (their kernels go into `cast_kernels`)."""
        return []

    def cast_kernels(self, dtype) -> step_kernels.StepKernels:
        """The step's matrices cast to `dtype` once, for `step(..., kernels=...)`."""
        return step_kernels.cast_kernels(
            [layer.cell for layer in self.rnn_layers], self._step_dense_layers(),
            self.projection, dtype)

    def _attend(self, query, memory: Memory):
        """Attention of step queries `(rows, d)` over `memory` of `batch` sentences.

        `rows` may be a multiple of `batch`: beam search passes K queries per
        sentence (rows b*K .. b*K+K-1 belong to sentence b) and one memory per
        sentence, so the keys are read once per sentence instead of K copies.
        """
        rows = ops.shape(query)[0]
        per_sentence = ops.reshape(query, (ops.shape(memory.mask)[0], -1, query.shape[-1]))
        context, weights = self.attention(
            per_sentence, memory.values, mask=memory.mask, projected_keys=memory.projected_keys
        )  # (batch, K, dv), (batch, K, S)
        return (ops.reshape(context, (rows, context.shape[-1])),
                ops.reshape(weights, (rows, ops.shape(weights)[-1])))

    def _top_hidden(self, flat_states):
        return flat_states[(self.num_layers - 1) * self.states_per_layer]

    # --- decoding ----------------------------------------------------------------

    def step(self, previous_tokens, state: dict, memory: Memory, training=False,
             kernels: step_kernels.StepKernels | None = None, return_query: bool = False):
        """One decoding step.

        Args:
            previous_tokens: int `(rows,)`, the previous target token.
            state: decoder state from `initial_state` or the previous step.
            memory: from `prepare_memory`, for `batch` sentences; `rows` is
                `batch` or, in beam search, `batch * K` (K rows per sentence).
            kernels: from `cast_kernels(dtype)`, to run the matrix products in
                that dtype (inference only); None uses the layers as they are.
            return_query: also return h_t `(rows, hidden)`, the state that
                predicts this step's piece (what the alignment head reads).

        Returns:
            `(logits (rows, V) float32, new_state, attention (rows, S) float32)`,
            and h_t with `return_query`.
        """
        embedded = self.embedding(previous_tokens)  # (rows, emb)
        output, state, weights, hidden = self._step_core(
            embedded, state, memory, training, kernels)
        if kernels is None:
            logits = self.projection(output)
        else:
            logits = step_kernels.project(kernels, output)
        return (logits, state, weights, hidden) if return_query else (logits, state, weights)

    def _head_key_input(self, memory, source_embedded):
        if self.head_keys == "encoder":
            return memory
        if source_embedded is None:
            raise ValueError(f"an alignment head with head_keys={self.head_keys!r} needs the "
                             "source embeddings: pass source_embedded to prepare_memory")
        source_embedded = ops.cast(source_embedded, memory.dtype)
        if self.head_keys == "embedding":
            return source_embedded
        return ops.concatenate([memory, source_embedded], axis=-1)

    @property
    def head_layers(self) -> list:
        """The layers only the alignment head uses (what frozen-head training trains)."""
        return [layer for layer in (self.alignment_head, self.head_context, self.reverse_head)
                if layer is not None]

    @property
    def head_query_dim(self) -> int:
        """Width of the head's query: `[h_j; embedding(y_j)]`, plus the target context."""
        width = self.hidden_dim + self.embedding.output_dim
        if self.head_context is not None:
            width += self.head_context.compute_output_shape((None, None, width))[-1]
        return width

    def head_weights(self, queries, target_out, memory: Memory):
        """Alignment-head rows, float32, each summing to 1 over the source
        (with agreement: the two directions' product, renormalised).

        Args:
            queries: `(batch, T, hidden)`, h_j for every target position (from
                teacher forcing), or `(batch, N, T, hidden)`: the states search
                kept for the pieces of N hypotheses per sentence.
            target_out: int `(batch, T)` or `(batch, N, T)`, piece j of each row
                (EOS, padding 0).
            memory: for the `batch` sentences.

        Returns:
            `(batch, T, S)` or `(batch, N, T, S)`.
        """
        return self.head_distributions(queries, target_out, memory)["alignment"]

    def head_distributions(self, queries, target_out, memory: Memory) -> dict:
        """What the head computes, float32, shaped as `head_weights`' result:
        `alignment` (its rows, as `head_weights`), and with agreement also
        `source_given_target` (p(s|t), each row summing to 1 over the source)
        and `target_given_source` (p(t|s) at [t, s], each column summing to 1
        over the target pieces, end of sentence included), which training
        supervises one each."""
        # Search keeps its states in float32; under a mixed policy the layers compute in
        # bfloat16 (a training run's dev evaluation). No-op under float32.
        queries = ops.cast(queries, self.compute_dtype)
        embedded = ops.cast(self.embedding(target_out), queries.dtype)  # (..., T, emb)
        query = ops.concatenate([queries, embedded], -1)  # (..., T, hidden + emb)
        # Search's stored states come back without a static width; the layers need it.
        query = ops.reshape(query, (*ops.shape(query)[:-1],
                                    self.hidden_dim + self.embedding.output_dim))
        if self.head_context is not None:
            query = self._with_target_context(query, target_out)
        batch = ops.shape(target_out)[0]
        flat = ops.reshape(query, (batch, -1, query.shape[-1]))  # (batch, N*T, d)
        shape = (*ops.shape(target_out), ops.shape(memory.mask)[1])
        head_keys = memory.head_keys
        if self.reverse_head is not None:
            head_keys, reverse_keys = ops.split(head_keys, 2, axis=-1)
        logits, valid = self.alignment_head.attention_logits(
            flat, memory.values, mask=memory.mask, projected_keys=head_keys,
        )  # (batch, N*T, S)
        rows = ops.reshape(Attention._masked_softmax(logits, valid), shape)  # p(s|t)
        if self.head_agreement == "none":
            return {"alignment": rows}
        if self.reverse_head is not None:
            logits, valid = self.reverse_head.attention_logits(
                flat, memory.values, mask=memory.mask, projected_keys=reverse_keys)
        # Each hypothesis' own target pieces (end of sentence in, padding out).
        logits, valid = ops.reshape(logits, shape), ops.reshape(valid, shape)
        valid = ops.logical_and(valid, ops.greater(target_out, 0)[..., None])
        columns = _masked_log_softmax(logits, valid, axis=-2)  # log p(t|s)
        log_rows = ops.log(ops.maximum(rows, 1e-30))
        return {
            "alignment": Attention._masked_softmax(log_rows + columns, valid),
            "source_given_target": rows,
            "target_given_source": ops.exp(columns) * ops.cast(valid, "float32"),
        }

    def _with_target_context(self, query, target_out):
        """Appends the head context's reading of each hypothesis' queries, one
        sequence per hypothesis (padding masked)."""
        length, width = ops.shape(target_out)[-1], query.shape[-1]
        rows = ops.reshape(query, (-1, length, width))  # (rows, T, d)
        mask = ops.reshape(ops.greater(target_out, 0), (-1, length))  # (rows, T)
        context = self.head_context(rows, mask=mask)  # (rows, T, d')
        context = ops.reshape(context, (*ops.shape(query)[:-1], context.shape[-1]))
        return ops.concatenate([query, ops.cast(context, query.dtype)], -1)

    def call(self, target_in, memory: Memory, training=False):
        outputs, weights, _ = self.teacher_forced(target_in, memory, training)
        return self.projection(outputs), weights  # (batch, T, V), (batch, T, S)

    def teacher_forced(self, target_in, memory: Memory, training=False):
        """Teacher forcing -> `(output vectors (batch, T, out), attention (batch, T, S),
        queries h_j (batch, T, hidden))`, before the projection to the vocabulary."""
        embedded = self.embedding(target_in)  # (batch, T, emb)
        return self._teacher_forced_scan(embedded, memory, training)

    def _teacher_forced_scan(self, embedded, memory: Memory, training):
        """Runs `_step_core` over time with `ops.scan` -> outputs, attention, states."""

        def scan_step(carry, embedded_t):
            output, state, weights, hidden = self._step_core(embedded_t, carry[0], memory,
                                                             training)
            carry = (state, output, weights, hidden)
            # Keras' TensorFlow scan stacks outputs shaped as the carry: emit all of it.
            return carry, carry

        batch = ops.shape(embedded)[0]
        seed = (
            self.initial_state(memory),
            ops.zeros((batch, self.output_dim), self.compute_dtype),
            ops.zeros(ops.shape(memory.mask), "float32"),
            ops.zeros((batch, self.hidden_dim), self.compute_dtype),
        )
        time_major = ops.transpose(embedded, (1, 0, 2))  # (T, batch, emb)
        _, (_, outputs, weights, hidden) = ops.scan(scan_step, seed, time_major)
        return tuple(ops.transpose(t, (1, 0, 2)) for t in (outputs, weights, hidden))


@keras.saving.register_keras_serializable(package="nmt")
class LuongDecoder(AttentionDecoder):
    """Luong et al. 2015 decoder: attend with the current state h_t.

    h_t = RNN(y_{t-1} [; h~_{t-1}], h_{t-1}); c_t = attend(h_t, memory);
    h~_t = tanh(W_c [c_t; h_t]) (Eq. 5); p(y_t) = softmax(W_s h~_t) (Eq. 6).
    With `input_feeding`, h~_{t-1} is concatenated to the next input (Sec. 3.3).
    Without it, the whole target sequence runs through the RNN in one call
    and attention is a single batched matrix product, which trains fastest.
    """

    def __init__(self, *args, input_feeding: bool = True, **kwargs):
        super().__init__(*args, **kwargs)
        self.input_feeding = input_feeding
        self.combine = keras.layers.Dense(
            self.output_dim, activation="tanh", use_bias=False, name="combine",
            dtype=self.dtype_policy,
        )

    def initial_state(self, memory):
        state = super().initial_state(memory)
        if self.input_feeding:
            batch = ops.shape(memory.values)[0]
            state["feed"] = ops.zeros((batch, self.output_dim), self.compute_dtype)
        return state

    def _attentional_output(self, hidden, memory, training, kernels=None):
        if len(hidden.shape) == 2:  # one step
            context, weights = self._attend(hidden, memory)
        else:
            context, weights = self.attention(
                hidden, memory.values, mask=memory.mask, projected_keys=memory.projected_keys
            )
        combined = ops.concatenate([context, hidden], axis=-1)
        output = self._dense(self.combine, combined, kernels)  # h~_t
        return self.dropout(output, training=training), output, weights

    def _step_dense_layers(self):
        return [self.combine]

    def _step_core(self, embedded, state, memory, training, kernels=None):
        x = self.dropout(embedded, training=training)
        if self.input_feeding:
            x = ops.concatenate([x, state["feed"]], axis=-1)  # (batch, emb + out)
        hidden, rnn_states = self._run_cells(x, state["rnn"], training, kernels)
        output, feed, weights = self._attentional_output(hidden, memory, training, kernels)
        new_state = {"rnn": rnn_states}
        if self.input_feeding:
            new_state["feed"] = feed
        return output, new_state, weights, hidden

    def teacher_forced(self, target_in, memory: Memory, training=False):
        embedded = self.embedding(target_in)  # (batch, T, emb)
        if self.input_feeding:
            return self._teacher_forced_scan(embedded, memory, training)
        return self._whole_sequence(embedded, target_in, memory, training)

    def _whole_sequence(self, embedded, target_in, memory, training):
        states = self.initial_state(memory)["rnn"]
        target_mask = ops.not_equal(target_in, 0)  # (batch, T)
        x = self.dropout(embedded, training=training)
        for i, layer in enumerate(self.rnn_layers):
            if i > 0:
                x = self.dropout(x, training=training)
            result = layer(x, initial_state=self._layer_states(states, i), mask=target_mask,
                           training=training)
            x = result[0]  # (batch, T, hidden)
        outputs, _, weights = self._attentional_output(x, memory, training)
        return outputs, weights, x

    def get_config(self):
        return {**super().get_config(), "input_feeding": self.input_feeding}


@keras.saving.register_keras_serializable(package="nmt")
class BahdanauDecoder(AttentionDecoder):
    """Bahdanau et al. 2015 decoder: attend with the previous state s_{i-1}.

    c_i = attend(s_{i-1}, memory); s_i = RNN([y_{i-1}; c_i], s_{i-1});
    deep output t_i = tanh(W_o [s_i; c_i; y_{i-1}]) (Appendix A.2.2, with tanh
    in place of maxout); p(y_i) = softmax(W_s t_i).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.deep_output = keras.layers.Dense(
            self.output_dim, activation="tanh", name="deep_output", dtype=self.dtype_policy
        )

    def _step_dense_layers(self):
        return [self.deep_output]

    def _step_core(self, embedded, state, memory, training, kernels=None):
        x = self.dropout(embedded, training=training)
        query = self._top_hidden(state["rnn"])  # s_{i-1}, (batch, hidden)
        context, weights = self._attend(query, memory)
        hidden, rnn_states = self._run_cells(
            ops.concatenate([x, context], -1), state["rnn"], training, kernels)
        deep = ops.concatenate([hidden, context, x], axis=-1)
        output = self._dense(self.deep_output, deep, kernels)  # (batch, out)
        return self.dropout(output, training=training), {"rnn": rnn_states}, weights, hidden
