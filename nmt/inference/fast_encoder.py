"""The bidirectional encoder for inference, its matrix products in a chosen dtype.

TensorFlow by nature (a `tf.while_loop` that runs the two directions side by
side, `tf.reverse_sequence` for the backward one): the export's graph uses it.
The per-step maths is `nmt.layers.step_kernels`, shared with the decoder step.
"""

from __future__ import annotations

import tensorflow as tf

from nmt.layers.step_kernels import cast_weight, input_projection, is_lstm, recurrent_step


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
        projected = (input_projection(cells[0], cast_weight(cells[0].kernel, dtype), x),
                     input_projection(cells[1], cast_weight(cells[1].kernel, dtype), reverse(x)))
        forward, backward = _run_directions(
            cells, [cast_weight(cell.recurrent_kernel, dtype) for cell in cells], projected)
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
    states = [[zeros] * (2 if is_lstm(cell) else 1) for cell in cells]
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
