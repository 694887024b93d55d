import keras
import numpy as np
import pytest
import tensorflow as tf

from nmt.inference import fast_encoder
from nmt.inference.search import tile_beams
from nmt.layers import step_kernels
from tests.nmt.layers.test_decoder import MASK, PREVIOUS, make_decoder, make_memory

BATCH, D_IN, UNITS = 3, 6, 5


def built_cell(kind: str, seed: int = 0, **kwargs):
    keras.utils.set_random_seed(seed)
    cell = {"lstm": keras.layers.LSTMCell, "gru": keras.layers.GRUCell}[kind](UNITS, **kwargs)
    cell.build((BATCH, D_IN))
    # Non-zero biases, so a bias added in the wrong place shows.
    cell.bias.assign(np.random.default_rng(seed).normal(size=cell.bias.shape))
    return cell


def cell_inputs(kind: str, seed: int = 1):
    rng = np.random.default_rng(seed)
    x = tf.constant(rng.normal(size=(BATCH, D_IN)), tf.float32)
    n_states = 2 if kind == "lstm" else 1
    states = [tf.constant(rng.normal(size=(BATCH, UNITS)), tf.float32) for _ in range(n_states)]
    return x, states


def kernels_of(cell, dtype=tf.float32):
    return (tf.cast(tf.convert_to_tensor(cell.kernel), dtype),
            tf.cast(tf.convert_to_tensor(cell.recurrent_kernel), dtype))


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_cell_step_equals_the_keras_cell(kind):
    cell = built_cell(kind)
    x, states = cell_inputs(kind)
    want_output, want_states = cell(x, states)
    got_output, got_states = step_kernels.cell_step(cell, kernels_of(cell), x, states)
    np.testing.assert_allclose(got_output, want_output, rtol=1e-5, atol=1e-6)
    for got, want in zip(got_states, want_states, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_lstm_cell_step_follows_the_lstm_equations():
    """An independent NumPy LSTM: i, f, c~, o gates in Keras' column order."""
    cell = built_cell("lstm", seed=4)
    x, (h, c) = cell_inputs("lstm", seed=5)
    z = (x.numpy() @ cell.kernel.numpy() + h.numpy() @ cell.recurrent_kernel.numpy()
         + cell.bias.numpy())
    sigmoid = lambda v: 1 / (1 + np.exp(-v))  # noqa: E731
    i, f, g, o = np.split(z, 4, axis=-1)
    want_c = sigmoid(f) * c.numpy() + sigmoid(i) * np.tanh(g)
    want_h = sigmoid(o) * np.tanh(want_c)
    got_h, (_, got_c) = step_kernels.cell_step(cell, kernels_of(cell), x, [h, c])
    np.testing.assert_allclose(got_c, want_c, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_h, want_h, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_bfloat16_products_stay_close_and_return_float32(kind):
    cell = built_cell(kind, seed=2)
    x, states = cell_inputs(kind, seed=3)
    want, _ = cell(x, states)
    got, got_states = step_kernels.cell_step(cell, kernels_of(cell, tf.bfloat16), x, states)
    assert got.dtype == tf.float32 and all(s.dtype == tf.float32 for s in got_states)
    np.testing.assert_allclose(got, want, atol=3e-2)


def test_cells_the_functions_do_not_reproduce_are_refused():
    cell = built_cell("gru", reset_after=False)
    decoder = make_decoder()
    with pytest.raises(ValueError, match="reset_after=True"):
        step_kernels.cast_kernels([cell], [], decoder.projection, tf.bfloat16)


@pytest.mark.parametrize("tied", [True, False])
def test_dense_and_projection_equal_the_layers(tied):
    decoder = make_decoder("bahdanau", tied=tied)
    memory = make_memory(decoder)
    decoder.step(tf.constant(PREVIOUS), decoder.initial_state(memory), memory)  # builds all
    kernels = decoder.cast_kernels(tf.float32)
    x = tf.constant(np.random.default_rng(0).normal(size=(2, 12 + 10 + 8)), tf.float32)
    np.testing.assert_allclose(
        step_kernels.dense(decoder.deep_output, x, kernels.dense["deep_output"]),
        decoder.deep_output(x), rtol=1e-5, atol=1e-6)
    out = x[:, :8]
    np.testing.assert_allclose(step_kernels.project(kernels, out),
                               decoder.projection(out), rtol=1e-5, atol=1e-5)
    assert kernels.projection.shape == (8, 30)  # (d, V), the embedding transposed when tied
    ids = tf.constant([3, 0, 29, 7])
    np.testing.assert_allclose(step_kernels.project(kernels.restrict(ids), out),
                               tf.gather(decoder.projection(out), ids, axis=1),
                               rtol=1e-5, atol=1e-5)


STEP_CASES = [("luong", "lstm", 1, {"input_feeding": False}),
              ("luong", "gru", 2, {"input_feeding": True}),
              ("bahdanau", "lstm", 2, {}),
              ("bahdanau", "gru", 1, {})]


@pytest.mark.parametrize("kind, cell, layers, extra", STEP_CASES)
def test_decoder_step_with_kernels_equals_the_keras_step(kind, cell, layers, extra):
    decoder = make_decoder(kind, cell=cell, layers=layers, tied=kind == "luong", **extra)
    memory = make_memory(decoder)
    state = decoder.initial_state(memory)
    want = decoder.step(tf.constant(PREVIOUS), state, memory)
    got = decoder.step(tf.constant(PREVIOUS), state, memory,
                       kernels=decoder.cast_kernels(tf.float32))
    for g, w in zip(tf.nest.flatten(got), tf.nest.flatten(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    low = decoder.step(tf.constant(PREVIOUS), state, memory,
                       kernels=decoder.cast_kernels(tf.bfloat16))
    assert low[0].dtype == tf.float32
    np.testing.assert_allclose(low[2], want[2], atol=3e-2)  # attention rows
    np.testing.assert_allclose(low[2].numpy().sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("kind", ["luong", "bahdanau"])
def test_beams_read_one_memory_per_sentence(kind):
    """K queries per sentence against one memory row equal K tiled memory rows."""
    beam = 3
    decoder = make_decoder(kind)
    memory = make_memory(decoder)
    state = tile_beams(decoder.initial_state(memory), beam)
    # Different previous tokens per beam, so the beams' queries differ.
    tokens = tf.constant(np.arange(2 * beam) % 30, tf.int32)
    per_sentence = decoder.step(tokens, state, memory)
    tiled = decoder.step(tokens, state, tile_beams(memory, beam))
    for got, want in zip(tf.nest.flatten(per_sentence), tf.nest.flatten(tiled), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    weights = per_sentence[2].numpy()  # (2 * beam, S)
    np.testing.assert_array_equal(weights[beam:, ~MASK[1]], 0.0)  # sentence 1's padding


def make_encoder(cell: str, layers: int = 2, residual: bool = True, seed: int = 0):
    from nmt.layers.encoder import Encoder

    keras.utils.set_random_seed(seed)
    encoder = Encoder(keras.layers.Embedding(30, 6), hidden_dim=8, num_layers=layers,
                      cell=cell, residual=residual)
    encoder(tf.ones([1, 2], tf.int32))  # builds
    for layer in encoder.rnn_layers:  # non-zero biases, so misplaced ones show
        for direction in (layer.forward_layer, layer.backward_layer):
            bias = direction.cell.bias
            bias.assign(np.random.default_rng(seed).normal(size=bias.shape))
    return encoder


# Right-padded sentences of lengths 5, 2 and 1 (0 = padding).
SOURCE = tf.constant([[5, 6, 7, 8, 2], [9, 2, 0, 0, 0], [2, 0, 0, 0, 0]], tf.int32)


@pytest.mark.parametrize("cell, layers, residual", [("lstm", 2, True), ("gru", 2, True),
                                                    ("lstm", 1, False), ("gru", 3, False)])
def test_inference_encoder_equals_the_keras_encoder(cell, layers, residual):
    encoder = make_encoder(cell, layers, residual)
    want_memory, want_mask = encoder(SOURCE)
    got_memory, got_mask = fast_encoder.encode(encoder, SOURCE, tf.float32)
    np.testing.assert_array_equal(got_mask, want_mask)
    np.testing.assert_allclose(got_memory, want_memory, rtol=1e-5, atol=1e-6)
    assert not np.any(got_memory.numpy()[~want_mask.numpy()])  # padding positions are zero


def test_inference_encoder_backward_direction_starts_at_each_sentence_end():
    """Padding after a sentence must not reach its backward states: the same
    sentence encodes the same alone and padded in a longer batch."""
    encoder = make_encoder("lstm")
    alone, _ = fast_encoder.encode(encoder, SOURCE[1:2, :2], tf.float32)
    padded, _ = fast_encoder.encode(encoder, SOURCE, tf.float32)
    np.testing.assert_allclose(padded[1, :2], alone[0], rtol=1e-5, atol=1e-6)


def test_inference_encoder_in_bfloat16_stays_close():
    encoder = make_encoder("lstm")
    want, _ = encoder(SOURCE)
    got, _ = fast_encoder.encode(encoder, SOURCE, tf.bfloat16)
    assert got.dtype == tf.float32
    np.testing.assert_allclose(got, want, atol=3e-2)
