"""The encoder and decoder step for translation, matrix products in a chosen dtype.

With AMX or AVX512-BF16, bfloat16 matrix products run 2-3 times faster than
float32 on CPU (`bench/decode_speed.py`). Keras' mixed_bfloat16 policy gets
none of that in beam search: it casts every weight again at every step, and
computes gates, softmaxes and masks in bfloat16, which has no fast
element-wise kernels on CPU (measured slower than float32). Here the weights
are cast once per call, before the loops; the products run in their dtype
and everything else stays float32. With float32 the results equal the Keras
layers' (the export uses these functions in both precisions).

The functions reproduce the Keras layers' own maths (LSTM and GRU cells with
`reset_after`, `Dense`, `OutputProjection`, the bidirectional `Encoder`);
tests compare them with the layers at float32.
"""

from __future__ import annotations

from typing import NamedTuple

import keras
import tensorflow as tf


class StepKernels(NamedTuple):
    """The matrices of one decoder step, cast to the dtype of the products.

    Attributes:
        cells: per RNN layer, `(kernel, recurrent_kernel)`.
        dense: kernel of each `Dense` layer of the step, by layer name.
        projection: `(d, V)`, the output projection (the embedding
            transposed when tied).
        projection_bias: float32 `(V,)`, its bias.
    """

    cells: tuple
    dense: dict
    projection: tf.Tensor
    projection_bias: tf.Tensor

    def restrict(self, ids: tf.Tensor) -> StepKernels:
        """The same step with logits for target ids `ids` `(V',)` only, in that order."""
        return self._replace(projection=tf.gather(self.projection, ids, axis=1),
                             projection_bias=tf.gather(self.projection_bias, ids))


def _cast(weight, dtype: tf.DType) -> tf.Tensor:
    return tf.cast(tf.convert_to_tensor(weight), dtype)


def cast_kernels(cells, dense_layers, projection, dtype: tf.DType) -> StepKernels:
    """Casts the step's matrices once.

    Args:
        cells: the RNN cells of the step, bottom first.
        dense_layers: the `Dense` layers the step applies.
        projection: an `nmt.layers.decoder.OutputProjection`.
        dtype: dtype of the products, e.g. `tf.bfloat16`.
    """
    for cell in cells:
        _is_lstm(cell)  # refuses cells these functions do not reproduce
    if projection.tied_embedding is not None:
        projection_kernel = tf.transpose(_cast(projection.tied_embedding.embeddings, dtype))
    else:
        projection_kernel = _cast(projection.kernel, dtype)
    return StepKernels(
        cells=tuple((_cast(cell.kernel, dtype), _cast(cell.recurrent_kernel, dtype))
                    for cell in cells),
        dense={layer.name: _cast(layer.kernel, dtype) for layer in dense_layers},
        projection=projection_kernel,
        projection_bias=tf.convert_to_tensor(projection.bias),
    )


def matmul(x: tf.Tensor, kernel: tf.Tensor) -> tf.Tensor:
    """`x @ kernel` in the kernel's dtype, returned as float32."""
    return tf.cast(tf.matmul(tf.cast(x, kernel.dtype), kernel), tf.float32)


def dense(layer: keras.layers.Dense, x: tf.Tensor, kernel: tf.Tensor) -> tf.Tensor:
    """`layer(x)` with `kernel` in place of the layer's own."""
    y = matmul(x, kernel)
    if layer.use_bias:
        y = y + tf.convert_to_tensor(layer.bias)
    return layer.activation(y)


def project(kernels: StepKernels, x: tf.Tensor) -> tf.Tensor:
    """The output projection of `x`: float32 logits `(..., V)`."""
    return matmul(x, kernels.projection) + kernels.projection_bias


def _is_lstm(cell) -> bool:
    if isinstance(cell, keras.layers.LSTMCell):
        return True
    if isinstance(cell, keras.layers.GRUCell) and cell.reset_after:
        return False
    raise ValueError(
        f"Low-precision decoding supports LSTM cells and GRU cells with reset_after=True. "
        f"Received: {type(cell).__name__}"
    )


def input_projection(cell, kernel: tf.Tensor, x: tf.Tensor) -> tf.Tensor:
    """The input's part of every gate, `(..., G * d_h)` float32, input bias included.

    It does not depend on the state, so the encoder computes it for all
    positions in one product.
    """
    shape = tf.shape(x)
    y = matmul(tf.reshape(x, [-1, x.shape[-1]]), kernel)
    y = tf.reshape(y, tf.concat([shape[:-1], [kernel.shape[-1]]], axis=0))
    if cell.use_bias:
        bias = tf.convert_to_tensor(cell.bias)
        y = y + (bias if _is_lstm(cell) else bias[0])  # a GRU's rows: input, recurrent bias
    return y


def recurrent_step(cell, recurrent_kernel: tf.Tensor, projected: tf.Tensor,
                   states: list) -> tuple[tf.Tensor, list]:
    """One step from the input's projection: `(output, new_states)` as the cell returns."""
    if _is_lstm(cell):
        h, c = states
        z = projected + matmul(h, recurrent_kernel)
        z_i, z_f, z_c, z_o = tf.split(z, 4, axis=-1)
        c = cell.recurrent_activation(z_f) * c + (
            cell.recurrent_activation(z_i) * cell.activation(z_c))
        h = cell.recurrent_activation(z_o) * cell.activation(c)
        return h, [h, c]
    h = states[0] if isinstance(states, (list, tuple)) else states
    h_all = matmul(h, recurrent_kernel)
    if cell.use_bias:
        h_all = h_all + tf.convert_to_tensor(cell.bias)[1]
    x_z, x_r, x_h = tf.split(projected, 3, axis=-1)
    h_z, h_r, h_h = tf.split(h_all, 3, axis=-1)
    z = cell.recurrent_activation(x_z + h_z)
    r = cell.recurrent_activation(x_r + h_r)
    candidate = cell.activation(x_h + r * h_h)
    h = z * h + (1 - z) * candidate
    return h, [h]


def cell_step(cell, kernels: tuple, x: tf.Tensor, states: list) -> tuple[tf.Tensor, list]:
    """One step of a Keras `LSTMCell` or `GRUCell` (inference, no dropout).

    Args:
        kernels: `(kernel, recurrent_kernel)`, cast.

    Returns:
        `(output, new_states)` as the cell's own `call` returns them.
    """
    kernel, recurrent_kernel = kernels
    # The step computes in float32; a model under a mixed policy (a training run's dev
    # evaluation) holds its states in bfloat16, and the search's loop needs them back in
    # the dtype they came in. Under float32 the casts are no-ops (exports are unchanged).
    states = list(states) if isinstance(states, (list, tuple)) else [states]
    dtype = states[0].dtype
    output, new_states = recurrent_step(cell, recurrent_kernel, input_projection(cell, kernel, x),
                                        [tf.cast(state, tf.float32) for state in states])
    return tf.cast(output, dtype), [tf.cast(state, dtype) for state in new_states]


def encode(encoder, source: tf.Tensor, dtype: tf.DType) -> tuple[tf.Tensor, tf.Tensor]:
    """`encoder(source)` for inference, with its matrix products in `dtype`.

    Each layer projects the inputs of all positions in one product and runs
    its two directions in the same loop (two independent products per
    position, which the executor runs side by side). The backward direction
    reads each sentence reversed up to its own length
    (`tf.reverse_sequence`), so padding needs no masking inside the loop; as
    in Keras, outputs at padding positions are zero.

    Returns:
        `(memory (batch, S, hidden_dim) float32, mask (batch, S) bool)`.
    """
    mask = tf.not_equal(source, 0)  # (batch, S)
    lengths = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
    keep = tf.cast(mask, tf.float32)[:, :, None]

    def reverse(t):
        return tf.reverse_sequence(t, lengths, seq_axis=1, batch_axis=0)

    x = tf.cast(encoder.embedding(source), tf.float32)  # (batch, S, emb)
    for i, layer in enumerate(encoder.rnn_layers):
        cells = (layer.forward_layer.cell, layer.backward_layer.cell)
        projected = (input_projection(cells[0], _cast(cells[0].kernel, dtype), x),
                     input_projection(cells[1], _cast(cells[1].kernel, dtype), reverse(x)))
        forward, backward = _run_directions(
            cells, [_cast(cell.recurrent_kernel, dtype) for cell in cells], projected)
        y = tf.concat([forward, reverse(backward)], axis=-1) * keep  # (batch, S, hidden)
        x = y + x if encoder.residual and i >= 1 else y
    return x * keep, mask


def _run_directions(cells, recurrent_kernels, projected):
    """Runs each cell over its `(batch, S, G d_h)` projections -> `(batch, S, d_h)` each."""
    shape = tf.shape(projected[0])
    steps = shape[1]
    inputs = [tf.TensorArray(tf.float32, size=steps).unstack(tf.transpose(p, [1, 0, 2]))
              for p in projected]
    zeros = tf.zeros([shape[0], recurrent_kernels[0].shape[0]])
    states = [[zeros] * (2 if _is_lstm(cell) else 1) for cell in cells]
    outputs = [tf.TensorArray(tf.float32, size=steps) for _ in cells]

    def body(t, states, outputs):
        new_states, new_outputs = [], []
        for cell, kernel, ta, state, out in zip(cells, recurrent_kernels, inputs, states,
                                                outputs, strict=True):
            h, state = recurrent_step(cell, kernel, ta.read(t), state)
            new_states.append(state)
            new_outputs.append(out.write(t, h))
        return t + 1, new_states, new_outputs

    _, _, outputs = tf.while_loop(lambda t, *_: t < steps, body, (0, states, outputs))
    return [tf.transpose(out.stack(), [1, 0, 2]) for out in outputs]
