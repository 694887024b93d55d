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
`reset_after`, `Dense`, `OutputProjection`); tests compare them with the layers
at float32. They are `keras.ops`, so a decoder step runs on any backend; the
encoder's inference loop, TensorFlow by nature, is `nmt.inference.fast_encoder`.
"""

from __future__ import annotations

from typing import NamedTuple

import keras
from keras import ops


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
    projection: object
    projection_bias: object

    def restrict(self, ids) -> StepKernels:
        """The same step with logits for target ids `ids` `(V',)` only, in that order."""
        return self._replace(projection=ops.take(self.projection, ids, axis=1),
                             projection_bias=ops.take(self.projection_bias, ids, axis=0))


def cast_weight(weight, dtype):
    return ops.cast(ops.convert_to_tensor(weight), dtype)


def cast_kernels(cells, dense_layers, projection, dtype) -> StepKernels:
    """Casts the step's matrices once.

    Args:
        cells: the RNN cells of the step, bottom first.
        dense_layers: the `Dense` layers the step applies.
        projection: an `nmt.layers.decoder.OutputProjection`.
        dtype: dtype of the products, e.g. `"bfloat16"`.
    """
    for cell in cells:
        is_lstm(cell)  # refuses cells these functions do not reproduce
    if projection.tied_embedding is not None:
        projection_kernel = ops.transpose(cast_weight(projection.tied_embedding.embeddings, dtype))
    else:
        projection_kernel = cast_weight(projection.kernel, dtype)
    return StepKernels(
        cells=tuple((cast_weight(cell.kernel, dtype), cast_weight(cell.recurrent_kernel, dtype))
                    for cell in cells),
        dense={layer.name: cast_weight(layer.kernel, dtype) for layer in dense_layers},
        projection=projection_kernel,
        projection_bias=ops.convert_to_tensor(projection.bias),
    )


def matmul(x, kernel):
    """`x @ kernel` in the kernel's dtype, returned as float32."""
    return ops.cast(ops.matmul(ops.cast(x, kernel.dtype), kernel), "float32")


def dense(layer: keras.layers.Dense, x, kernel):
    """`layer(x)` with `kernel` in place of the layer's own."""
    y = matmul(x, kernel)
    if layer.use_bias:
        y = y + ops.convert_to_tensor(layer.bias)
    return layer.activation(y)


def project(kernels: StepKernels, x):
    """The output projection of `x`: float32 logits `(..., V)`."""
    return matmul(x, kernels.projection) + kernels.projection_bias


def is_lstm(cell) -> bool:
    if isinstance(cell, keras.layers.LSTMCell):
        return True
    if isinstance(cell, keras.layers.GRUCell) and cell.reset_after:
        return False
    raise ValueError(
        f"Low-precision decoding supports LSTM cells and GRU cells with reset_after=True. "
        f"Received: {type(cell).__name__}"
    )


def input_projection(cell, kernel, x):
    """The input's part of every gate, `(..., G * d_h)` float32, input bias included.

    It does not depend on the state, so the encoder computes it for all
    positions in one product.
    """
    shape = ops.shape(x)
    y = matmul(ops.reshape(x, (-1, x.shape[-1])), kernel)
    y = ops.reshape(y, (*shape[:-1], kernel.shape[-1]))
    if cell.use_bias:
        bias = ops.convert_to_tensor(cell.bias)
        y = y + (bias if is_lstm(cell) else bias[0])  # a GRU's rows: input, recurrent bias
    return y


def recurrent_step(cell, recurrent_kernel, projected, states: list) -> tuple:
    """One step from the input's projection: `(output, new_states)` as the cell returns."""
    if is_lstm(cell):
        h, c = states
        z = projected + matmul(h, recurrent_kernel)
        z_i, z_f, z_c, z_o = ops.split(z, 4, axis=-1)
        c = cell.recurrent_activation(z_f) * c + (
            cell.recurrent_activation(z_i) * cell.activation(z_c))
        h = cell.recurrent_activation(z_o) * cell.activation(c)
        return h, [h, c]
    h = states[0] if isinstance(states, (list, tuple)) else states
    h_all = matmul(h, recurrent_kernel)
    if cell.use_bias:
        h_all = h_all + ops.convert_to_tensor(cell.bias)[1]
    x_z, x_r, x_h = ops.split(projected, 3, axis=-1)
    h_z, h_r, h_h = ops.split(h_all, 3, axis=-1)
    z = cell.recurrent_activation(x_z + h_z)
    r = cell.recurrent_activation(x_r + h_r)
    candidate = cell.activation(x_h + r * h_h)
    h = z * h + (1 - z) * candidate
    return h, [h]


def cell_step(cell, kernels: tuple, x, states: list) -> tuple:
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
                                        [ops.cast(state, "float32") for state in states])
    return ops.cast(output, dtype), [ops.cast(state, dtype) for state in new_states]
