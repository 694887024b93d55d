import keras
import numpy as np
import pytest
import tensorflow as tf

from nmt.layers.attention import make_attention
from nmt.layers.decoder import BahdanauDecoder, LuongDecoder, Memory, OutputProjection
from tests.layer_test_case import check_config_round_trip

VOCAB, EMB, HIDDEN, MEMORY_DIM = 30, 8, 12, 10
LENGTHS = np.array([5, 3])
MASK = np.arange(5)[None, :] < LENGTHS[:, None]  # (batch, S)
PREVIOUS = np.array([4, 9], np.int32)


def make_decoder(kind: str = "luong", cell: str = "lstm", layers: int = 1, seed: int = 0,
                 tied: bool = True, dropout: float = 0.0, **kwargs):
    keras.utils.set_random_seed(seed)
    embedding = keras.layers.Embedding(VOCAB, EMB, name="target_embedding")
    projection = OutputProjection(VOCAB, embedding if tied else None)
    attention = make_attention("bahdanau" if kind == "bahdanau" else "general", 8)
    decoder_cls = BahdanauDecoder if kind == "bahdanau" else LuongDecoder
    decoder = decoder_cls(embedding, attention, HIDDEN, layers, cell, EMB, projection,
                          dropout, **kwargs)
    decoder.embedding(PREVIOUS)  # builds the (possibly tied) embedding
    return decoder


def make_memory(decoder, seed: int = 0) -> Memory:
    values = np.random.default_rng(seed).normal(size=(2, 5, MEMORY_DIM)).astype(np.float32)
    values[~MASK] = 0.0
    return decoder.prepare_memory(tf.constant(values), tf.constant(MASK))


def attend(decoder, query, memory: Memory):
    return decoder.attention(
        query, memory.values, mask=memory.mask, projected_keys=memory.projected_keys
    )


# --------------------------------------------------------------------------- projection


@pytest.mark.parametrize("tied", [True, False])
def test_output_projection(tied):
    embedding = keras.layers.Embedding(VOCAB, EMB)
    embedding.build()
    projection = OutputProjection(VOCAB, embedding if tied else None)
    outputs = np.random.default_rng(0).normal(size=(2, 3, EMB)).astype(np.float32)
    projection.build((None, None, EMB))
    projection.bias.assign(np.linspace(-1, 1, VOCAB))  # a non-zero bias
    logits = projection(outputs)
    kernel = embedding.embeddings.numpy().T if tied else projection.kernel.numpy()
    np.testing.assert_allclose(logits, outputs @ kernel + np.linspace(-1, 1, VOCAB), atol=1e-5)
    assert logits.shape == (2, 3, VOCAB)


def test_output_projection_returns_float32_logits_under_bfloat16():
    embedding = keras.layers.Embedding(VOCAB, EMB, dtype="mixed_bfloat16")
    embedding.build()
    projection = OutputProjection(VOCAB, embedding, dtype="mixed_bfloat16")
    logits = projection(tf.ones([2, EMB], tf.bfloat16))
    assert logits.dtype == tf.float32 and projection.bias.dtype == "float32"


@pytest.mark.parametrize("tied", [True, False])
def test_output_projection_config_round_trip(tied):
    embedding = keras.layers.Embedding(VOCAB, EMB, name="target_embedding")
    kwargs = {"vocab_size": VOCAB, "tied_embedding": embedding if tied else None,
              "name": "output_projection"}
    revived = check_config_round_trip(OutputProjection, kwargs)
    if tied:
        assert isinstance(revived.tied_embedding, keras.layers.Embedding)
        assert revived.tied_embedding.name == "target_embedding"
    else:
        assert revived.tied_embedding is None


# --------------------------------------------------------------------------- config


def decoder_kwargs(kind: str, tied: bool = True, **overrides) -> dict:
    """Constructor arguments of a decoder, its sublayers included."""
    embedding = keras.layers.Embedding(VOCAB, EMB, name="target_embedding")
    return {
        "embedding": embedding,
        "attention": make_attention("bahdanau" if kind == "bahdanau" else "concat", 8),
        "hidden_dim": HIDDEN, "num_layers": 2, "cell": "gru", "output_dim": EMB,
        "projection": OutputProjection(VOCAB, embedding if tied else None),
        "dropout": 0.25, "name": "decoder", **overrides,
    }


@pytest.mark.parametrize("decoder_cls, kind, overrides", [
    (LuongDecoder, "luong", {"input_feeding": False}),
    (LuongDecoder, "luong", {"input_feeding": True}),
    (BahdanauDecoder, "bahdanau", {}),
])
def test_decoder_config_round_trip(decoder_cls, kind, overrides):
    revived = check_config_round_trip(decoder_cls, decoder_kwargs(kind, **overrides))
    assert revived.projection.tied_embedding is revived.embedding  # one matrix, as saved
    assert (revived.cell_type, revived.dropout.rate) == ("gru", 0.25)
    memory = make_memory(revived)
    logits, attention = revived(np.array([[1, 5, 6], [1, 7, 0]], np.int32), memory)
    assert logits.shape == (2, 3, VOCAB) and attention.shape == (2, 3, 5)


def test_a_used_decoder_revives_with_its_sublayers_built_and_tied():
    decoder = make_decoder("luong")
    decoder(np.array([[1, 5, 6], [1, 7, 0]], np.int32), make_memory(decoder))
    revived = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(decoder))
    assert revived.get_config() == decoder.get_config()
    assert revived.embedding.built and revived.projection.built
    assert revived.projection.tied_embedding is revived.embedding


def test_untied_decoder_config_round_trip():
    revived = check_config_round_trip(LuongDecoder, decoder_kwargs("luong", tied=False))
    assert revived.projection.tied_embedding is None


# --------------------------------------------------------------------------- state


@pytest.mark.parametrize("kind, cell, layers", [("luong", "lstm", 2), ("bahdanau", "gru", 2)])
def test_initial_state_bridges_the_mean_of_real_positions(kind, cell, layers):
    decoder = make_decoder(kind, cell, layers)
    memory = make_memory(decoder)
    state = decoder.initial_state(memory)
    values = memory.values.numpy()
    mean = values.sum(1) / LENGTHS[:, None]  # padding rows are zero
    bridged = np.tanh(mean @ decoder.bridge.kernel.numpy() + decoder.bridge.bias.numpy())
    per_layer = 2 if cell == "lstm" else 1
    assert len(state["rnn"]) == per_layer * layers
    np.testing.assert_allclose(np.concatenate(state["rnn"], -1), bridged, atol=1e-5)


# --------------------------------------------------------------------------- one step


@pytest.mark.parametrize("input_feeding", [False, True])
def test_luong_step_follows_equations_5_and_6(input_feeding):
    decoder = make_decoder("luong", input_feeding=input_feeding)
    memory = make_memory(decoder)
    state = decoder.initial_state(memory)
    if input_feeding:  # a non-zero h~_{t-1}, as after a first step
        state["feed"] = tf.constant(np.full((2, EMB), 0.3, np.float32))
    logits, new_state, weights = decoder.step(tf.constant(PREVIOUS), state, memory)

    x = decoder.embedding(PREVIOUS)
    if input_feeding:
        x = tf.concat([x, state["feed"]], -1)  # Sec. 3.3: [y_{t-1}; h~_{t-1}]
    hidden, rnn_states = decoder.rnn_layers[0].cell(x, list(state["rnn"]))  # h_t
    context, want_weights = attend(decoder, hidden, memory)  # a_t, c_t from h_t
    combined = np.tanh(np.concatenate([context, hidden], -1) @ decoder.combine.kernel.numpy())
    want_logits = combined @ decoder.embedding.embeddings.numpy().T + decoder.projection.bias
    np.testing.assert_allclose(weights, want_weights, atol=1e-6)
    np.testing.assert_allclose(logits, want_logits, atol=1e-5)
    np.testing.assert_allclose(np.concatenate(new_state["rnn"], -1),
                               np.concatenate(rnn_states, -1), atol=1e-6)
    if input_feeding:
        np.testing.assert_allclose(new_state["feed"], combined, atol=1e-5)
    else:
        assert set(new_state) == {"rnn"}


def test_input_feeding_carries_the_attentional_state():
    decoder = make_decoder("luong", input_feeding=True)
    memory = make_memory(decoder)
    state = decoder.initial_state(memory)
    np.testing.assert_array_equal(state["feed"], np.zeros((2, EMB)))
    logits, _, _ = decoder.step(tf.constant(PREVIOUS), state, memory)
    fed = {**state, "feed": tf.ones([2, EMB])}
    other, _, _ = decoder.step(tf.constant(PREVIOUS), fed, memory)
    assert not np.allclose(other, logits)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_bahdanau_step_attends_with_the_previous_state(cell):
    decoder = make_decoder("bahdanau", cell, layers=2, tied=False)
    memory = make_memory(decoder)
    state = decoder.initial_state(memory)
    logits, new_state, weights = decoder.step(tf.constant(PREVIOUS), state, memory)

    per_layer = 2 if cell == "lstm" else 1
    previous_top = state["rnn"][per_layer]  # s_{i-1}: h of the top layer
    context, want_weights = attend(decoder, previous_top, memory)
    np.testing.assert_allclose(weights, want_weights, atol=1e-6)
    embedded = decoder.embedding(PREVIOUS)
    x = tf.concat([embedded, context], -1)  # [y_{i-1}; c_i]
    lower, lower_states = decoder.rnn_layers[0].cell(x, list(state["rnn"][:per_layer]))
    top, top_states = decoder.rnn_layers[1].cell(lower, list(state["rnn"][per_layer:]))
    deep = np.concatenate([top, context, embedded], -1)  # [s_i; c_i; y_{i-1}]
    kernel, bias = decoder.deep_output.kernel.numpy(), decoder.deep_output.bias.numpy()
    want_logits = np.tanh(deep @ kernel + bias) @ decoder.projection.kernel.numpy()
    np.testing.assert_allclose(logits, want_logits + decoder.projection.bias, atol=1e-5)
    np.testing.assert_allclose(np.concatenate(new_state["rnn"], -1),
                               np.concatenate([*lower_states, *top_states], -1), atol=1e-6)


# --------------------------------------------------------------------------- teacher forcing


@pytest.mark.parametrize("kind, feed", [("luong", False), ("luong", True), ("bahdanau", False)])
def test_dropout_only_while_training(kind, feed):
    kwargs = {"input_feeding": feed} if kind == "luong" else {}
    decoder = make_decoder(kind, dropout=0.5, **kwargs)
    memory = make_memory(decoder)
    target_in = np.array([[1, 5, 6], [1, 7, 0]], np.int32)
    logits, attention = decoder(target_in, memory)
    again, _ = decoder(target_in, memory, training=False)
    np.testing.assert_array_equal(logits, again)
    trained, trained_attention = decoder(target_in, memory, training=True)
    assert not np.allclose(trained, logits)
    assert np.all(trained_attention.numpy()[1, :, 3:] == 0.0), "padding of sentence 1"
    assert attention.shape == (2, 3, 5) and logits.shape == (2, 3, VOCAB)


def test_bad_cell_names_the_value():
    with pytest.raises(ValueError, match="cell='rnn'"):
        make_decoder(cell="rnn")
