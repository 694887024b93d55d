import dataclasses
import functools

import keras
import numpy as np
import pytest
import tensorflow as tf

from nmt.layers.decoder import BahdanauDecoder, LuongDecoder, Memory
from nmt.model import ModelConfig, Seq2Seq, sequence_loss

VOCAB, EMB, HIDDEN = 30, 8, 12
# Right-padded ids (0 = padding); sentence lengths 6, 4, 1 and 5, 3, 1.
SOURCE = np.array([[5, 9, 4, 7, 3, 2], [8, 6, 11, 2, 0, 0], [2, 0, 0, 0, 0, 0]], np.int32)
TARGET_IN = np.array([[1, 7, 12, 9, 4], [1, 13, 6, 0, 0], [1, 0, 0, 0, 0]], np.int32)
TARGET_OUT = np.array([[7, 12, 9, 4, 2], [13, 6, 2, 0, 0], [2, 0, 0, 0, 0]], np.int32)

# Every decoder configuration (decoder, score, option, global or local-p, input feeding).
DECODERS = {
    "luong-dot": {"attention": "dot", "input_feeding": False},
    "luong-dot+feed": {"attention": "dot", "input_feeding": True},
    "luong-general": {"attention": "general", "input_feeding": False},
    "luong-general+feed": {"attention": "general", "input_feeding": True},
    "luong-concat": {"attention": "concat", "input_feeding": False, "scale": True},
    "luong-concat+feed": {"attention": "concat", "input_feeding": True},
    "luong-general-local": {"attention": "general", "local_window": 2, "input_feeding": False},
    "luong-dot-local+feed": {"attention": "dot", "local_window": 1, "input_feeding": True},
    "luong-additive": {"attention": "bahdanau", "input_feeding": False},
    "bahdanau": {"decoder": "bahdanau", "attention": "bahdanau"},
    "bahdanau-normalized": {"decoder": "bahdanau", "attention": "bahdanau", "normalize": True},
    "bahdanau-general-local": {"decoder": "bahdanau", "attention": "general", "local_window": 2},
}


def tiny_config(**overrides) -> ModelConfig:
    return ModelConfig(**{
        "source_vocab_size": VOCAB, "target_vocab_size": VOCAB, "embedding_dim": EMB,
        "hidden_dim": HIDDEN, "encoder_layers": 2, "attention_units": 8, "dropout": 0.0,
        "label_smoothing": 0.1, **overrides,
    })


def tiny_model(seed: int = 0, **overrides) -> Seq2Seq:
    keras.utils.set_random_seed(seed)
    model = Seq2Seq(tiny_config(**overrides))
    model.build_for()
    return model


@functools.cache
def _cached_model(config: ModelConfig) -> Seq2Seq:
    keras.utils.set_random_seed(0)
    model = Seq2Seq(config)
    model.build_for()
    return model


def shared_model(**overrides) -> Seq2Seq:
    """A model shared by the tests that only read it (building one takes a second or two)."""
    return _cached_model(tiny_config(**overrides))


SHIPPED = {"attention": "general", "input_feeding": False, "share_embeddings": True,
           "tie_embeddings": True}


def decode_gold_prefix(model: Seq2Seq, source, target_in):
    """Feeds the gold previous token at every step -> logits `(B, T, V)`, attention `(B, T, S)`."""
    memory = model.encode(tf.constant(source))
    state = model.initial_state(memory)
    logits, attention = [], []
    for t in range(target_in.shape[1]):
        step_logits, state, weights = model.decode_step(tf.constant(target_in[:, t]), state, memory)
        logits.append(step_logits)
        attention.append(weights)
    return np.stack(logits, axis=1), np.stack(attention, axis=1)


# --------------------------------------------------------------------------- teacher forcing


# Every decoder configuration, each with one RNN stack; the stacks are spread
# so that each of the three recurrences (Luong over the whole sequence, Luong
# with input feeding, Bahdanau) runs with LSTM and GRU, 1 and 2 layers.
STACKS = [
    ("luong-dot", "lstm", 2),
    ("luong-general", "lstm", 1),
    ("luong-concat", "gru", 1),
    ("luong-general-local", "gru", 2),
    ("luong-additive", "lstm", 1),
    ("luong-dot+feed", "gru", 2),
    ("luong-general+feed", "lstm", 1),
    ("luong-concat+feed", "lstm", 2),
    ("luong-dot-local+feed", "gru", 1),
    ("bahdanau", "lstm", 1),
    ("bahdanau", "gru", 1),
    ("bahdanau-normalized", "gru", 2),
    ("bahdanau-general-local", "lstm", 2),
]


def test_stacks_cover_every_decoder_and_rnn():
    assert {decoder for decoder, _, _ in STACKS} == set(DECODERS)
    for recurrence in ("luong", "+feed", "bahdanau"):
        stacks = {
            (cell, layers) for decoder, cell, layers in STACKS
            if recurrence in decoder and (recurrence != "luong" or "+feed" not in decoder)
        }
        assert stacks == {("lstm", 1), ("lstm", 2), ("gru", 1), ("gru", 2)}, recurrence


@pytest.mark.parametrize("decoder, cell, layers", STACKS)
def test_step_by_step_decoding_reproduces_teacher_forcing(decoder, cell, layers):
    model = shared_model(cell=cell, decoder_layers=layers, **DECODERS[decoder])
    logits, attention = model((SOURCE, TARGET_IN))
    assert logits.shape == (3, 5, VOCAB) and attention.shape == (3, 5, 6)
    assert logits.dtype == tf.float32 and attention.dtype == tf.float32
    step_logits, step_attention = decode_gold_prefix(model, SOURCE, TARGET_IN)
    real = TARGET_IN != 0  # (B, T)
    np.testing.assert_allclose(step_logits[real], logits.numpy()[real], atol=1e-5)
    np.testing.assert_allclose(step_attention[real], attention.numpy()[real], atol=1e-5)
    # Padding source positions get exactly zero attention; real ones share all of it.
    padding = np.broadcast_to((SOURCE == 0)[:, None, :], attention.shape)
    assert np.all(attention.numpy()[padding] == 0.0)
    assert np.all(step_attention[padding] == 0.0)
    np.testing.assert_allclose(attention.numpy()[real].sum(-1), 1.0, atol=1e-6)


@pytest.mark.parametrize("decoder", ["luong-general", "luong-general+feed", "bahdanau"])
def test_extra_padding_changes_nothing(decoder):
    model = shared_model(**DECODERS[decoder])
    logits, attention = model((SOURCE, TARGET_IN))
    padded = model((np.pad(SOURCE, [[0, 0], [0, 3]]), np.pad(TARGET_IN, [[0, 0], [0, 2]])))
    real = TARGET_IN != 0
    np.testing.assert_allclose(padded[0].numpy()[:, :5][real], logits.numpy()[real], atol=1e-5)
    np.testing.assert_allclose(padded[1].numpy()[:, :5, :6], attention, atol=1e-6)
    assert np.all(padded[1].numpy()[:, :, 6:] == 0.0)


def test_sentences_do_not_see_each_other():
    model = shared_model(**DECODERS["luong-general+feed"])
    logits, attention = model((SOURCE, TARGET_IN))
    alone_logits, alone_attention = model((SOURCE[1:2, :4], TARGET_IN[1:2, :3]))
    np.testing.assert_allclose(alone_logits[0], logits[1, :3], atol=1e-5)
    np.testing.assert_allclose(alone_attention[0], attention[1, :3, :4], atol=1e-6)


def test_encode_returns_memory_with_projected_keys():
    model = shared_model(**DECODERS["luong-general"])
    memory = model.encode(SOURCE)
    assert isinstance(memory, Memory)
    assert memory.values.shape == (3, 6, HIDDEN) and memory.projected_keys.shape == (3, 6, HIDDEN)
    np.testing.assert_array_equal(memory.mask, SOURCE != 0)
    np.testing.assert_allclose(
        memory.projected_keys, model.decoder.attention.project_keys(memory.values), atol=1e-6
    )


@pytest.mark.parametrize(
    "decoder, cell, decoder_cls, state_keys",
    [("luong-concat+feed", "lstm", LuongDecoder, {"rnn", "feed"}),
     ("luong-dot", "lstm", LuongDecoder, {"rnn"}),
     ("bahdanau-normalized", "gru", BahdanauDecoder, {"rnn"})],
)
def test_decoder_choice_and_state(decoder, cell, decoder_cls, state_keys):
    model = shared_model(cell=cell, decoder_layers=2, **DECODERS[decoder])
    assert type(model.decoder) is decoder_cls
    state = model.initial_state(model.encode(SOURCE))
    assert set(state) == state_keys
    per_layer = 2 if model.config.cell == "lstm" else 1
    assert len(state["rnn"]) == per_layer * model.config.decoder_layers
    assert all(s.shape == (3, HIDDEN) for s in state["rnn"])


@pytest.mark.parametrize("overrides", [SHIPPED, {**DECODERS["bahdanau"], "local_window": 2}],
                         ids=["shipped", "bahdanau-local"])
def test_mixed_bfloat16_model(overrides, tmp_path):
    keras.utils.set_random_seed(0)
    model = Seq2Seq(tiny_config(**overrides), dtype="mixed_bfloat16")
    model.build_for()
    assert all(w.dtype == "float32" for w in model.weights)
    logits, attention = model((SOURCE, TARGET_IN))
    assert logits.dtype == tf.float32 and attention.dtype == tf.float32
    assert np.isfinite(logits.numpy()).all()
    np.testing.assert_allclose(attention.numpy().sum(-1), 1.0, atol=1e-5)
    assert np.all(attention.numpy()[np.broadcast_to((SOURCE == 0)[:, None], attention.shape)] == 0)
    # Search decodes step by step in the same precision; it must agree with training.
    step_logits, step_attention = decode_gold_prefix(model, SOURCE, TARGET_IN)
    real = TARGET_IN != 0
    np.testing.assert_allclose(step_logits[real], logits.numpy()[real], atol=1e-3)
    np.testing.assert_allclose(step_attention[real], attention.numpy()[real], atol=1e-2)
    model.save(tmp_path / "mixed.keras")
    reloaded = keras.saving.load_model(tmp_path / "mixed.keras")
    assert reloaded.dtype_policy.name == "mixed_bfloat16"
    np.testing.assert_allclose(reloaded((SOURCE, TARGET_IN))[0], logits, atol=1e-6)


# --------------------------------------------------------------------------- loss


def np_sequence_loss(labels, logits, epsilon):
    """Mean over non-padding tokens of -sum_v q(v) log p(v), q = (1 - eps) one_hot + eps / V."""
    logits = logits.astype(np.float64)
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    vocab = logits.shape[-1]
    target = (1 - epsilon) * np.eye(vocab)[labels] + epsilon / vocab  # (B, T, V)
    token_loss = -(target * log_probs).sum(-1)  # (B, T)
    mask = labels != 0
    return token_loss[mask].sum() / max(mask.sum(), 1)


@pytest.mark.parametrize("epsilon", [0.0, 0.1, 0.5])
def test_sequence_loss_matches_numpy(epsilon):
    logits = np.random.default_rng(3).normal(scale=3.0, size=(3, 5, 7)).astype(np.float32)
    labels = np.array([[3, 1, 6, 2, 0], [4, 2, 0, 0, 0], [5, 5, 5, 5, 2]])
    loss = sequence_loss(tf.constant(labels), tf.constant(logits), epsilon)
    assert loss.dtype == tf.float32 and loss.shape == ()
    np.testing.assert_allclose(loss, np_sequence_loss(labels, logits, epsilon), rtol=1e-5)


def test_sequence_loss_ignores_padding_logits():
    logits = np.random.default_rng(4).normal(size=(2, 4, 7)).astype(np.float32)
    labels = np.array([[3, 2, 0, 0], [4, 5, 6, 2]])
    changed = logits.copy()
    changed[0, 2:] = 100.0 * np.random.default_rng(5).normal(size=(2, 7))
    np.testing.assert_allclose(
        sequence_loss(labels, logits, 0.1), sequence_loss(labels, changed, 0.1), rtol=1e-6
    )


def test_sequence_loss_of_all_padding_is_zero():
    loss = sequence_loss(tf.zeros([2, 3], tf.int32), tf.ones([2, 3, 7]), 0.1)
    assert float(loss) == 0.0


def test_model_loss_uses_config_label_smoothing():
    model = shared_model(**DECODERS["luong-general"])
    y_pred = model((SOURCE, TARGET_IN))
    assert model.config.label_smoothing == 0.1
    np.testing.assert_allclose(
        model.compute_loss(y=TARGET_OUT, y_pred=y_pred),
        np_sequence_loss(TARGET_OUT, y_pred[0].numpy(), 0.1),
        rtol=1e-5,
    )


# --------------------------------------------------------------------------- embeddings


def test_tied_embeddings_save_vocab_times_embedding_parameters():
    tied = shared_model(**DECODERS["luong-general"])
    untied = tiny_model(**DECODERS["luong-general"], tie_embeddings=False)
    assert untied.count_params() - tied.count_params() == VOCAB * EMB
    projection = tied.decoder.projection
    # The tied projection owns only its bias; its matrix is the embedding's variable.
    assert {id(w) for w in projection.weights} == {
        id(projection.bias), id(tied.target_embedding.embeddings)
    }
    assert untied.decoder.projection.kernel.shape == (EMB, VOCAB)
    # logits = o E^T + b, with E the target embedding matrix.
    outputs = np.random.default_rng(0).normal(size=(3, EMB)).astype(np.float32)
    embedding = tied.target_embedding.embeddings.numpy()
    want = outputs @ embedding.T + projection.bias.numpy()
    np.testing.assert_allclose(projection(outputs), want, atol=1e-5)


def test_shared_embeddings_are_one_matrix():
    shared = shared_model(**SHIPPED)
    separate = shared_model(**DECODERS["luong-general"])
    assert shared.source_embedding is shared.target_embedding
    assert shared.encoder.embedding is shared.decoder.embedding
    assert separate.source_embedding is not separate.target_embedding
    assert separate.count_params() - shared.count_params() == VOCAB * EMB


def assert_weight_order(model: Seq2Seq, names: list) -> None:
    """`model.weights` in this order of (variable name, shape or None for any shape)."""
    got = [(w.path.split("/")[-1], tuple(w.shape)) for w in model.weights]
    assert [n for n, _ in got] == [n for n, _ in names]
    assert all(shape is None or got[i][1] == shape for i, (_, shape) in enumerate(names))


def test_shipped_architecture_weight_order_is_stable():
    # Training checkpoints store `list(model.weights)` by position, so a change
    # here breaks restoring runs of the shipped (Luong general, no input
    # feeding, tied and shared embeddings) architecture.
    model = shared_model(**SHIPPED)
    lstm = [("kernel", None), ("recurrent_kernel", None), ("bias", None)]
    names = [("embeddings", (VOCAB, EMB))]
    names += lstm * 4  # two bidirectional encoder layers
    names += [("kernel", (HIDDEN, HIDDEN)), ("bias", (VOCAB,))]  # attention W_a, projection
    names += lstm + [("kernel", (HIDDEN, 2 * HIDDEN)), ("bias", (2 * HIDDEN,))]  # LSTM, bridge
    names += [("kernel", (2 * HIDDEN, EMB))]  # W_c
    assert_weight_order(model, names)


def test_shipped_bahdanau_weight_order_is_stable():
    # The same guard for the shipped model since version 2 (Bahdanau decoder and score).
    model = shared_model(decoder="bahdanau", attention="bahdanau", share_embeddings=True,
                         tie_embeddings=True)
    lstm = [("kernel", None), ("recurrent_kernel", None), ("bias", None)]
    names = [("embeddings", (VOCAB, EMB))]
    names += lstm * 4  # two bidirectional encoder layers
    names += [("v", (8,)), ("kernel", (HIDDEN, 8)), ("kernel", (HIDDEN, 8))]  # v, W_1, W_2
    names += [("bias", (VOCAB,))]  # output projection (its kernel is the tied embedding)
    names += lstm + [("kernel", (HIDDEN, 2 * HIDDEN)), ("bias", (2 * HIDDEN,))]  # LSTM, bridge
    names += [("kernel", (HIDDEN + HIDDEN + EMB, EMB)), ("bias", (EMB,))]  # deep output
    assert_weight_order(model, names)


@pytest.mark.parametrize(
    "overrides, name",
    [
        ({"attention": "general", "input_feeding": False}, "luong-general"),
        ({"attention": "dot", "input_feeding": True}, "luong-dot+feed"),
        ({"attention": "general", "local_window": 4, "input_feeding": False},
         "luong-general-local4"),
        ({"decoder": "bahdanau", "attention": "bahdanau"}, "bahdanau"),
        ({"decoder": "bahdanau", "attention": "bahdanau", "normalize": True},
         "bahdanau-normalized"),
        ({"decoder": "bahdanau", "attention": "general"}, "bahdanau-general"),
    ],
)
def test_architecture_name_names_the_configuration(overrides, name):
    assert tiny_config(**overrides).architecture_name() == name


# --------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"decoder": "transformer"}, "decoder='transformer'"),
        ({"attention": "cosine"}, "attention='cosine'"),
        ({"cell": "rnn"}, "cell='rnn'"),
        ({"hidden_dim": 13}, "hidden_dim=13"),
        ({"embedding_dim": 0}, "embedding_dim=0"),
        ({"decoder_layers": 1.5}, "decoder_layers=1.5"),
        ({"encoder_layers": True}, "encoder_layers=True"),
        ({"attention_units": -4}, "attention_units=-4"),
        ({"dropout": 1.0}, "dropout=1.0"),
        ({"dropout": "0.1"}, "dropout='0.1'"),
        ({"input_feeding": "false"}, "input_feeding='false'"),
        ({"label_smoothing": -0.1}, "label_smoothing=-0.1"),
        ({"local_window": 0}, "local_window=0"),
        ({"local_window": 2.5}, "local_window=2.5"),
        ({"share_embeddings": True, "target_vocab_size": 31}, "target_vocab_size=31"),
    ],
)
def test_config_errors_name_the_value(overrides, message):
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        tiny_config(**overrides)


def test_config_dict_round_trip_and_unknown_keys():
    config = tiny_config(decoder="bahdanau", local_window=3)
    assert ModelConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="'atention'"):
        ModelConfig.from_dict({**config.to_dict(), "atention": "dot"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.cell = "gru"  # type: ignore[misc]


def test_model_accepts_a_config_dict():
    model = Seq2Seq(tiny_config(cell="gru").to_dict())
    assert model.config == tiny_config(cell="gru")


# --------------------------------------------------------------------------- saving


@pytest.mark.parametrize(
    "overrides",
    [SHIPPED,
     {"decoder": "bahdanau", "attention": "bahdanau", "normalize": True, "tie_embeddings": False,
      "cell": "gru", "local_window": 2},
     {**SHIPPED, "alignment_head": "general", "alignment_head_keys": "both",
      "alignment_head_context": 4},
     {**SHIPPED, "alignment_head": "general", "alignment_head_context": 4,
      "alignment_head_reader": "conv"},
     {**SHIPPED, "alignment_head": "general", "alignment_head_context": 4,
      "alignment_head_context_input": 6},
     {**SHIPPED, "alignment_head": "general", "alignment_head_context": 4,
      "alignment_head_agreement": "separate"}],
    ids=["shipped", "bahdanau-gru", "head-lstm-context", "head-conv-context",
         "head-projected-context", "head-agreement"],
)
def test_keras_file_round_trip(overrides, tmp_path):
    model = shared_model(**overrides)
    logits, attention = model((SOURCE, TARGET_IN))
    model.save(tmp_path / "model.keras")
    reloaded = keras.saving.load_model(tmp_path / "model.keras")
    assert isinstance(reloaded, Seq2Seq) and reloaded.config == model.config
    assert reloaded.count_params() == model.count_params()
    again_logits, again_attention = reloaded((SOURCE, TARGET_IN))
    np.testing.assert_allclose(again_logits, logits, atol=1e-6)
    np.testing.assert_allclose(again_attention, attention, atol=1e-6)
    step_logits, _ = decode_gold_prefix(reloaded, SOURCE, TARGET_IN)
    real = TARGET_IN != 0
    np.testing.assert_allclose(step_logits[real], logits.numpy()[real], atol=1e-5)
    if model.config.share_embeddings:
        assert reloaded.source_embedding is reloaded.target_embedding
    if model.config.alignment_head:
        args = tf.constant(SOURCE), tf.constant(TARGET_IN), tf.constant(TARGET_OUT)
        np.testing.assert_allclose(reloaded.teacher_forced(*args)["head"],
                                   model.teacher_forced(*args)["head"], atol=1e-6)


def test_weights_file_round_trip(tmp_path):
    model = shared_model(**DECODERS["luong-general+feed"])
    logits, _ = model((SOURCE, TARGET_IN))
    model.save_weights(tmp_path / "model.weights.h5")
    other = tiny_model(seed=2, **DECODERS["luong-general+feed"])
    assert not np.allclose(other((SOURCE, TARGET_IN))[0], logits)
    other.load_weights(tmp_path / "model.weights.h5")
    np.testing.assert_allclose(other((SOURCE, TARGET_IN))[0], logits, atol=1e-6)


# --------------------------------------------------------------------------- training


def test_fit_reduces_the_loss():
    # Bahdanau: gradients flow through the tf.scan recurrence (in a traced train step).
    model = tiny_model(**DECODERS["bahdanau"])
    model.compile(optimizer=keras.optimizers.Adam(0.02))
    history = model.fit((SOURCE, TARGET_IN), TARGET_OUT, epochs=6, batch_size=3, verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all()
    assert losses[-1] < losses[0] - 0.1, losses


# --------------------------------------------------------------------------- alignment head

HEADS = [("luong-general", "general", "lstm"), ("luong-general+feed", "bahdanau", "gru"),
         ("bahdanau", "concat", "lstm"), ("luong-dot", "general", "gru")]


@pytest.mark.parametrize("decoder, head, cell", HEADS)
def test_head_rows_of_search_steps_equal_teacher_forcing(decoder, head, cell):
    model = shared_model(**DECODERS[decoder], cell=cell, alignment_head=head)
    forced = model.teacher_forced(tf.constant(SOURCE), tf.constant(TARGET_IN),
                                  tf.constant(TARGET_OUT))
    memory = model.encode(tf.constant(SOURCE))
    state = model.initial_state(memory)
    rows = []
    for t in range(TARGET_IN.shape[1]):
        *_, query = model.decode_step(tf.constant(TARGET_IN[:, t]), state, memory,
                                      return_query=True)
        _, state, _ = model.decode_step(tf.constant(TARGET_IN[:, t]), state, memory)
        rows.append(query)
    # The piece each step predicts is read with the state that predicted it, as search
    # keeps it: the rows equal teacher forcing's.
    stepped = model.decoder.head_weights(tf.stack(rows, axis=1), tf.constant(TARGET_OUT),
                                         memory).numpy()  # (B, T, S)
    real = TARGET_OUT != 0
    np.testing.assert_allclose(stepped[real], forced["head"].numpy()[real], atol=1e-5)
    head = forced["head"].numpy()
    np.testing.assert_allclose(head.sum(-1), 1.0, atol=1e-5)
    assert np.all(head[np.broadcast_to((SOURCE == 0)[:, None], head.shape)] == 0)


def test_head_reads_the_piece_it_aligns():
    model = shared_model(**SHIPPED, alignment_head="general")
    other = np.where(TARGET_OUT > 2, TARGET_OUT + 1, TARGET_OUT)  # other pieces, same states
    rows = [model.teacher_forced(tf.constant(SOURCE), tf.constant(TARGET_IN),
                                 tf.constant(t))["head"] for t in (TARGET_OUT, other)]
    changed = TARGET_OUT > 2
    assert np.abs(rows[0].numpy() - rows[1].numpy()).sum(-1)[changed].min() > 1e-4


def test_head_leaves_translation_and_attention_unchanged():
    plain = shared_model(**SHIPPED)
    headed = shared_model(**SHIPPED, alignment_head="general")
    head_ids = {id(w) for w in headed.decoder.alignment_head.weights}
    for weight, value in zip([w for w in headed.weights if id(w) not in head_ids],
                             plain.weights, strict=True):
        weight.assign(value)
    logits, attention = plain((SOURCE, TARGET_IN))
    out = headed.teacher_forced(tf.constant(SOURCE), tf.constant(TARGET_IN),
                                tf.constant(TARGET_OUT))
    np.testing.assert_array_equal(out["logits"].numpy(), logits.numpy())
    np.testing.assert_array_equal(out["attention"].numpy(), attention.numpy())
    assert "head" not in plain.teacher_forced(tf.constant(SOURCE), tf.constant(TARGET_IN),
                                       tf.constant(TARGET_OUT))


def test_head_weights_come_after_the_shipped_architecture():
    # A model with a head restores the weights of one without by position (the
    # head's weights left out), so the rest of the order must stay the shipped one.
    plain = shared_model(**SHIPPED)
    headed = shared_model(**SHIPPED, alignment_head="general")
    head_ids = {id(w) for w in headed.decoder.alignment_head.weights}
    rest = [(w.path.split("/")[-1], tuple(w.shape)) for w in headed.weights
            if id(w) not in head_ids]
    assert rest == [(w.path.split("/")[-1], tuple(w.shape)) for w in plain.weights]
    assert [tuple(w.shape) for w in headed.decoder.alignment_head.weights] == [
        (HIDDEN, HIDDEN + EMB)]  # general: W over [h; e(y)] for keys of the encoder's size


# Target readers: a bidirectional LSTM, convolutions, and the LSTM reading the queries
# projected down.
READERS = {"lstm": {"alignment_head_reader": "lstm"},
           "conv": {"alignment_head_reader": "conv"},
           "lstm-projected": {"alignment_head_reader": "lstm", "alignment_head_context_input": 6},
           "lstm-agreement": {"alignment_head_reader": "lstm",
                              "alignment_head_agreement": "shared"}}


@pytest.mark.parametrize("reader", READERS)
def test_head_context_reads_the_pieces_after_a_row_and_ignores_padding(reader):
    plain = shared_model(**SHIPPED, alignment_head="general")
    context = shared_model(**SHIPPED, alignment_head="general", alignment_head_context=4,
                           **READERS[reader])
    later = TARGET_OUT.copy()
    later[0, 3], later[1, 1] = 5, 5  # a later piece changes: the first row sees it only
    # with context (the third sentence has only EOS)
    source = tf.constant(SOURCE)
    for model, reads_ahead in ((plain, False), (context, True)):
        rows = [model.teacher_forced(source, tf.constant(TARGET_IN), tf.constant(t))["head"].numpy()
                for t in (TARGET_OUT, later)]
        change = np.abs(rows[0][:2, 0] - rows[1][:2, 0]).sum(-1)  # the first piece's row
        assert (change.min() > 1e-6) == reads_ahead, change
    # Padding after the target changes nothing, and rows stay distributions.
    padded = [np.pad(t, ((0, 0), (0, 3))) for t in (TARGET_IN, TARGET_OUT)]
    short = context.teacher_forced(source, tf.constant(TARGET_IN), tf.constant(TARGET_OUT))["head"]
    long = context.teacher_forced(source, *map(tf.constant, padded))["head"].numpy()
    np.testing.assert_allclose(long[:, :TARGET_OUT.shape[1]], short.numpy(), atol=1e-5)
    np.testing.assert_allclose(short.numpy().sum(-1)[TARGET_OUT != 0], 1.0, atol=1e-5)


@pytest.mark.parametrize("reader", READERS)
def test_head_rows_of_several_hypotheses_equal_each_alone(reader):
    # Search passes (batch, N, T) hypotheses; each is read as its own sequence.
    model = shared_model(**SHIPPED, alignment_head="general", alignment_head_context=4,
                         **READERS[reader])
    memory = model.encode(tf.constant(SOURCE))
    _, _, queries = model.decoder.teacher_forced(tf.constant(TARGET_IN), memory)
    other = np.where(TARGET_OUT > 2, TARGET_OUT + 1, TARGET_OUT)
    stacked = model.decoder.head_weights(
        tf.stack([queries, queries[:, ::-1]], 1),
        tf.constant(np.stack([TARGET_OUT, other], 1)), memory).numpy()  # (B, 2, T, S)
    alone = [model.decoder.head_weights(q, tf.constant(t), memory).numpy()
             for q, t in ((queries, TARGET_OUT), (queries[:, ::-1], other))]
    np.testing.assert_allclose(stacked[:, 0], alone[0], atol=1e-5)
    np.testing.assert_allclose(stacked[:, 1], alone[1], atol=1e-5)


def test_head_config_checks_and_names():
    assert tiny_config(**SHIPPED, alignment_head="general",
                       alignment_head_context=8).architecture_name() == (
        "luong-general+head-general-context8")
    with pytest.raises(ValueError, match="alignment_head_context=4"):
        tiny_config(alignment_head_context=4)  # no head
    assert tiny_config(**SHIPPED, alignment_head="general", alignment_head_context=8,
                       alignment_head_reader="conv").architecture_name() == (
        "luong-general+head-general-context8-conv")
    with pytest.raises(ValueError, match="alignment_head_reader='gru'"):
        tiny_config(alignment_head="general", alignment_head_reader="gru")
    with pytest.raises(ValueError, match="alignment_head_context=-1"):
        tiny_config(alignment_head="general", alignment_head_context=-1)
    assert tiny_config(**SHIPPED, alignment_head="general", alignment_head_context=8,
                       alignment_head_context_input=32).architecture_name() == (
        "luong-general+head-general-context8-in32")
    with pytest.raises(ValueError, match="alignment_head_context_input=32"):
        tiny_config(**SHIPPED, alignment_head="general", alignment_head_context_input=32)
    assert tiny_config(**SHIPPED, alignment_head="bahdanau").architecture_name() == (
        "luong-general+head-bahdanau")
    with pytest.raises(ValueError, match="alignment_head='dot'"):
        tiny_config(alignment_head="dot")


# --------------------------------------------------------------------------- agreement


def agreement_model(agreement: str) -> Seq2Seq:
    return shared_model(**SHIPPED, alignment_head="general", alignment_head_keys="both",
                        alignment_head_context=4, alignment_head_agreement=agreement)


@pytest.mark.parametrize("agreement", ["shared", "separate"])
def test_agreement_rows_are_the_two_directions_product(agreement):
    model = agreement_model(agreement)
    out = model.teacher_forced(tf.constant(SOURCE), tf.constant(TARGET_IN), tf.constant(TARGET_OUT))
    rows, columns, head = (out[k].numpy() for k in ("head_rows", "head_columns", "head"))
    valid = (TARGET_OUT != 0)[:, :, None] & (SOURCE != 0)[:, None, :]  # (B, T, S)
    real_rows, real_columns = valid.any(-1), valid.any(-2)
    np.testing.assert_allclose(rows.sum(-1)[real_rows], 1.0, atol=1e-5)
    np.testing.assert_allclose(columns.sum(-2)[real_columns], 1.0, atol=1e-5)
    assert np.all(columns[~valid] == 0) and np.all(head[~valid] == 0)
    product = np.where(valid, rows * columns, 0.0)
    expected = product / np.maximum(product.sum(-1, keepdims=True), 1e-30)
    np.testing.assert_allclose(head, expected, atol=1e-5)
    # "shared" normalises one score matrix both ways: log rows - log columns is then
    # a_s - b_t (each axis' normaliser), so its double differences vanish.
    first = 0  # the sentence with 5 target and 6 source pieces, all real
    gap = np.log(rows[first]) - np.log(columns[first])
    double = gap - gap[:1] - gap[:, :1] + gap[:1, :1]
    assert (np.abs(double).max() < 1e-3) == (agreement == "shared"), np.abs(double).max()


def test_agreement_is_a_config_choice():
    config = tiny_config(**SHIPPED, alignment_head="general",
                         alignment_head_agreement="separate")
    assert config.architecture_name() == "luong-general+head-general-agree-separate"
    with pytest.raises(ValueError, match="alignment_head_agreement='both'"):
        tiny_config(alignment_head="general", alignment_head_agreement="both")
    with pytest.raises(ValueError, match="alignment_head_agreement='shared'"):
        tiny_config(alignment_head_agreement="shared")  # no head
    separate = agreement_model("separate").decoder
    assert separate.reverse_head in separate.head_layers
    assert agreement_model("shared").decoder.reverse_head is None
