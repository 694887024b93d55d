import keras
import numpy as np
import pytest
import tensorflow as tf

from nmt.layers.encoder import Encoder
from tests.layer_test_case import check_config_round_trip

VOCAB, EMB, HIDDEN = 30, 8, 10
SOURCE = np.array([[5, 9, 4, 7, 3, 2], [8, 6, 11, 2, 0, 0]], np.int32)  # 0 = padding
MASK = SOURCE != 0


def make_encoder(seed: int = 0, **kwargs) -> Encoder:
    keras.utils.set_random_seed(seed)
    options = {"hidden_dim": HIDDEN, "num_layers": 2, "cell": "lstm", "residual": True, **kwargs}
    return Encoder(keras.layers.Embedding(VOCAB, EMB), **options)


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_shapes_mask_and_zero_padding(cell):
    encoder = make_encoder(cell=cell)
    memory, mask = encoder(SOURCE)
    assert memory.shape == (2, 6, HIDDEN) and memory.dtype == tf.float32
    np.testing.assert_array_equal(mask, MASK)
    assert np.all(memory.numpy()[~MASK] == 0.0)
    assert np.all(np.abs(memory.numpy()[MASK]).sum(-1) > 0)
    inner = encoder.rnn_layers[0].forward_layer
    assert isinstance(inner, keras.layers.GRU if cell == "gru" else keras.layers.LSTM)
    assert inner.units == HIDDEN // 2


def test_extra_padding_changes_nothing():
    encoder = make_encoder()
    memory, _ = encoder(SOURCE)
    padded, _ = encoder(np.pad(SOURCE, [[0, 0], [0, 4]]))
    np.testing.assert_allclose(padded[:, :6], memory, atol=1e-6)
    assert np.all(padded.numpy()[:, 6:] == 0.0)


def test_both_directions():
    # Forward features at position t read tokens <= t; backward ones read tokens >= t.
    encoder = make_encoder(num_layers=1)
    memory, _ = encoder(SOURCE[:1])
    changed = SOURCE[:1].copy()
    changed[0, 3] = 20
    other, _ = encoder(changed)
    forward, backward = slice(0, HIDDEN // 2), slice(HIDDEN // 2, HIDDEN)
    np.testing.assert_allclose(other[0, :3, forward], memory[0, :3, forward], atol=1e-7)
    np.testing.assert_allclose(other[0, 4:, backward], memory[0, 4:, backward], atol=1e-7)
    assert not np.allclose(other[0, 3:, forward], memory[0, 3:, forward])
    assert not np.allclose(other[0, :4, backward], memory[0, :4, backward])


@pytest.mark.parametrize("residual", [True, False])
def test_residual_connections_between_upper_layers(residual):
    encoder = make_encoder(num_layers=3, residual=residual)
    memory, _ = encoder(SOURCE)
    # Recompose with the encoder's own layers: y_i = BiRNN_i(x_i) (+ x_i for i >= 1).
    x = encoder.embedding(SOURCE)
    for i, layer in enumerate(encoder.rnn_layers):
        y = layer(x, mask=tf.constant(MASK))
        x = y + x if residual and i >= 1 else y
    np.testing.assert_allclose(memory, x.numpy() * MASK[:, :, None], atol=1e-6)


def test_dropout_only_while_training():
    encoder = make_encoder(dropout=0.5)
    first, _ = encoder(SOURCE)
    again, _ = encoder(SOURCE, training=False)
    np.testing.assert_array_equal(first, again)
    trained, _ = encoder(SOURCE, training=True)
    assert not np.allclose(trained, first)
    assert np.all(trained.numpy()[~MASK] == 0.0)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"hidden_dim": 7}, "hidden_dim=7"), ({"cell": "rnn"}, "cell='rnn'")],
)
def test_bad_arguments_name_the_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_encoder(**kwargs)


def test_config_round_trip():
    embedding = keras.layers.Embedding(VOCAB, EMB, name="source_embedding")
    kwargs = {"embedding": embedding, "hidden_dim": HIDDEN, "num_layers": 3, "cell": "gru",
              "dropout": 0.25, "residual": False, "name": "encoder"}
    revived = check_config_round_trip(Encoder, kwargs)
    assert revived.embedding.name == "source_embedding"
    assert [layer.name for layer in revived.rnn_layers] == ["bi_gru_0", "bi_gru_1", "bi_gru_2"]
    memory, mask = revived(SOURCE)
    assert memory.shape == (2, 6, HIDDEN)
    np.testing.assert_array_equal(mask, MASK)
