import keras
import numpy as np
import pytest
import tensorflow as tf

from nmt.layers.attention import Attention, BahdanauAttention, LuongAttention, make_attention
from tests.layer_test_case import run_layer_test

BATCH, TQ, S, DQ, DK = 3, 4, 6, 5, 7
LENGTHS = np.array([6, 4, 1])  # sentence lengths; the last one keeps a single token
MASK = np.arange(S)[None, :] < LENGTHS[:, None]  # (batch, S)

# (class, constructor arguments, query size): every score, with and without its option.
MECHANISMS = {
    "bahdanau": (BahdanauAttention, {"units": 8}, DQ),
    "bahdanau-normalized": (BahdanauAttention, {"units": 8, "normalize": True}, DQ),
    "dot": (LuongAttention, {"score_mode": "dot"}, DK),
    "dot-scaled": (LuongAttention, {"score_mode": "dot", "scale": True}, DK),
    "general": (LuongAttention, {"score_mode": "general"}, DQ),
    "general-scaled": (LuongAttention, {"score_mode": "general", "scale": True}, DQ),
    "concat": (LuongAttention, {"score_mode": "concat", "units": 8}, DQ),
    "concat-scaled": (LuongAttention, {"score_mode": "concat", "units": 8, "scale": True}, DQ),
}
WINDOWS = {"global": {}, "local-p": {"local_window": 2, "local_units": 6}}


def make_inputs(query_dim: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    query = rng.normal(size=(BATCH, TQ, query_dim)).astype(np.float32)  # (batch, Tq, dq)
    keys = rng.normal(size=(BATCH, S, DK)).astype(np.float32)  # (batch, S, dk)
    return query, keys


def built_layer(name: str, window: str, seed: int = 0) -> tuple[Attention, np.ndarray, np.ndarray]:
    """The layer with random (not initial) weights, so biases and gains matter too."""
    layer_cls, kwargs, query_dim = MECHANISMS[name]
    layer = layer_cls(**kwargs, **WINDOWS[window])
    query, keys = make_inputs(query_dim, seed)
    layer(query, keys, mask=MASK)
    rng = np.random.default_rng(seed + 1)
    layer.set_weights([rng.normal(scale=0.7, size=w.shape) for w in layer.get_weights()])
    return layer, query, keys


# --------------------------------------------------------------------------- NumPy reference


def np_scores(layer: Attention, query: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Unnormalised scores `(batch, Tq, S)` written from the papers' equations."""
    q, h = query.astype(np.float64), keys.astype(np.float64)
    if isinstance(layer, BahdanauAttention):
        # Bahdanau et al. 2015, A.1.2: e_ij = v^T tanh(W s_{i-1} + U h_j).
        w, u = layer.query_dense.kernel.numpy(), layer.key_dense.kernel.numpy()
        v, bias = layer.v.numpy().astype(np.float64), 0.0
        if layer.normalize:  # Salimans & Kingma 2016: v = g v / ||v||, plus a bias.
            v = float(layer.g.numpy()) * v / np.linalg.norm(v)
            bias = layer.b.numpy()
        hidden = (q @ w)[:, :, None, :] + (h @ u)[:, None, :, :] + bias
        scores = np.tanh(hidden) @ v
    elif layer.score_mode == "dot":  # Luong et al. 2015, Eq. 8: h_t^T h_s
        scores = np.einsum("btd,bsd->bts", q, h)
    elif layer.score_mode == "general":  # h_t^T W_a h_s, W_a of shape (dq, dk)
        w_a = layer.key_dense.kernel.numpy().T
        scores = np.einsum("btd,de,bse->bts", q, w_a, h)
    else:  # concat: v_a^T tanh(W_a [h_t; h_s]), W_a of shape (dq + dk, units)
        w_a = np.concatenate([layer.query_dense.kernel.numpy(), layer.key_dense.kernel.numpy()])
        pairs = np.concatenate(
            [np.broadcast_to(q[:, :, None, :], (*q.shape[:2], h.shape[1], q.shape[2])),
             np.broadcast_to(h[:, None, :, :], (h.shape[0], q.shape[1], *h.shape[1:]))],
            axis=-1,
        )  # (batch, Tq, S, dq + dk)
        scores = np.tanh(pairs @ w_a) @ layer.v.numpy()
    if getattr(layer, "scale", False):
        scores = scores * float(layer.g.numpy())
    return scores


def np_positions(layer: Attention, query: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Luong et al. 2015, Eq. 9, 0-based: p_t = (S - 1) sigmoid(v_p^T tanh(W_p h_t))."""
    w_p = layer.position_hidden.kernel.numpy()
    v_p = layer.position_output.kernel.numpy()[:, 0]
    gate = 1.0 / (1.0 + np.exp(-(np.tanh(query.astype(np.float64) @ w_p) @ v_p)))
    return (mask.sum(-1)[:, None] - 1.0) * gate  # (batch, Tq)


def np_attention(layer: Attention, query, keys, mask, values=None):
    """Masked softmax attention, with Luong's Gaussian-weighted window when local."""
    scores = np_scores(layer, query, keys)  # (batch, Tq, S)
    valid = np.broadcast_to(mask[:, None, :], scores.shape)
    gaussian = np.ones_like(scores)
    if layer.local_window is not None:
        distance = np.arange(keys.shape[1])[None, None, :] - np_positions(layer, query, mask)[
            ..., None]  # (batch, Tq, S)
        valid = valid & (np.abs(distance) <= layer.local_window)
        sigma = layer.local_window / 2
        gaussian = np.exp(-(distance**2) / (2 * sigma**2))  # Eq. 10
    exp = np.where(valid, np.exp(scores - scores.max(-1, keepdims=True)), 0.0)
    align = exp / exp.sum(-1, keepdims=True)  # softmax over the (windowed) source
    weights = align * gaussian
    # The layer renormalises the windowed weights to sum to 1 (see its docstring).
    weights = weights / weights.sum(-1, keepdims=True)
    values = keys if values is None else values
    return weights @ values, weights  # (batch, Tq, dv), (batch, Tq, S)


# --------------------------------------------------------------------------- numerics


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("name", MECHANISMS)
def test_matches_numpy_reference(name, window):
    layer, query, keys = built_layer(name, window)
    context, weights = layer(query, keys, mask=MASK)
    want_context, want_weights = np_attention(layer, query, keys, MASK)
    assert context.shape == (BATCH, TQ, DK) and weights.shape == (BATCH, TQ, S)
    np.testing.assert_allclose(weights, want_weights, atol=1e-5)
    np.testing.assert_allclose(context, want_context, atol=1e-5)


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("name", MECHANISMS)
def test_single_step_query_matches_sequence_query(name, window):
    layer, query, keys = built_layer(name, window)
    context, weights = layer(query, keys, mask=MASK)
    for t in range(TQ):
        step_context, step_weights = layer(query[:, t], keys, mask=MASK)
        assert step_context.shape == (BATCH, DK) and step_weights.shape == (BATCH, S)
        np.testing.assert_allclose(step_weights, weights[:, t], atol=1e-6)
        np.testing.assert_allclose(step_context, context[:, t], atol=1e-6)


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("name", MECHANISMS)
def test_projected_keys_are_reused(name, window):
    layer, query, keys = built_layer(name, window)
    projected = layer.project_keys(tf.constant(keys))
    fresh = layer(query[:, 0], keys, mask=MASK)
    reused = layer(query[:, 0], keys, mask=MASK, projected_keys=projected)
    np.testing.assert_allclose(reused[0], fresh[0], atol=1e-6)
    np.testing.assert_allclose(reused[1], fresh[1], atol=1e-6)
    # The scores really come from `projected_keys`, not from projecting `keys` again.
    other = layer(query[:, 0], keys, mask=MASK, projected_keys=projected * 0.0)
    assert not np.allclose(other[1], fresh[1])


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("name", MECHANISMS)
def test_masked_positions_are_exactly_zero_and_weights_sum_to_one(name, window):
    layer, query, keys = built_layer(name, window)
    _, weights = layer(query, keys, mask=MASK)
    weights = weights.numpy()
    assert weights.dtype == np.float32
    assert np.all(weights[np.broadcast_to(~MASK[:, None, :], weights.shape)] == 0.0)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-6)
    assert np.all(weights[2, :, 0] == 1.0), "a one-token sentence attends only to it"


def test_values_differ_from_keys():
    layer, query, keys = built_layer("general", "global")
    values = np.random.default_rng(5).normal(size=(BATCH, S, 3)).astype(np.float32)
    context, weights = layer(query, keys, values=values, mask=MASK)
    assert context.shape == (BATCH, TQ, 3)
    want_context, _ = np_attention(layer, query, keys, MASK, values=values)
    np.testing.assert_allclose(context, want_context, atol=1e-5)


def test_zero_one_mask_works_like_a_boolean_mask():
    layer, query, keys = built_layer("general", "local-p")
    want = layer(query, keys, mask=MASK)
    got = layer(query, keys, mask=MASK.astype(np.int32))
    np.testing.assert_array_equal(got[1], want[1])


def test_no_mask_attends_everywhere():
    layer, query, keys = built_layer("bahdanau", "global")
    _, weights = layer(query, keys)
    _, want = np_attention(layer, query, keys, np.ones((BATCH, S), bool))
    np.testing.assert_allclose(weights, want, atol=1e-5)
    assert np.all(weights.numpy() > 0)


def test_fully_masked_sentence_gets_zero_weights_not_nan():
    layer, query, keys = built_layer("dot", "global")
    mask = MASK.copy()
    mask[1] = False
    context, weights = layer(query, keys, mask=mask)
    assert np.all(weights[1] == 0.0) and np.all(context[1] == 0.0)
    np.testing.assert_allclose(weights.numpy()[[0, 2]].sum(-1), 1.0, atol=1e-6)


# --------------------------------------------------------------------------- expected numbers


def test_dot_attention_by_hand():
    # Scores (1, 0, 2); the third key is padding, so weights are softmax(1, 0) and 0.
    query = np.array([[1.0, 0.0]], np.float32)  # (1, 2)
    keys = np.array([[[1.0, 0.0], [0.0, 1.0], [2.0, 0.0]]], np.float32)  # (1, 3, 2)
    context, weights = LuongAttention("dot")(query, keys, mask=np.array([[True, True, False]]))
    e = np.e
    np.testing.assert_allclose(weights, [[e / (e + 1), 1 / (e + 1), 0.0]], atol=1e-7)
    np.testing.assert_allclose(context, [[e / (e + 1), 1 / (e + 1)]], atol=1e-7)


@pytest.mark.parametrize(
    "name, window, row, expected",
    [
        # Sentence 1 (4 tokens) at step 1: the two padding positions are exactly 0.
        ("bahdanau", "global", (1, 1), [0.0424568, 0.255294, 0.1240186, 0.5782306, 0.0, 0.0]),
        ("general", "global", (1, 1), [0.4009718, 0.2646159, 0.2474595, 0.0869528, 0.0, 0.0]),
        # Sentence 0 (6 tokens) at step 0: positions outside the window are exactly 0.
        ("concat", "local-p", (0, 0), [0.0, 0.0, 0.1602851, 0.7838906, 0.0296758, 0.0261484]),
    ],
)
def test_seeded_weights_give_expected_numbers(name, window, row, expected):
    layer, query, keys = built_layer(name, window)
    _, weights = layer(query, keys, mask=MASK)
    np.testing.assert_allclose(weights[row], expected, atol=1e-6)


# --------------------------------------------------------------------------- local-p


@pytest.mark.parametrize("name", MECHANISMS)
def test_local_positions_stay_inside_each_sentence(name):
    layer, query, keys = built_layer(name, "local-p")
    # A large v_p saturates the sigmoid, pushing predictions to both ends.
    layer.position_output.kernel.assign(layer.position_output.kernel * 50.0)
    positions = layer.predicted_positions(tf.constant(query), tf.constant(MASK)).numpy()
    assert positions.shape == (BATCH, TQ)
    np.testing.assert_allclose(positions, np_positions(layer, query, MASK), atol=1e-4)
    assert np.all(positions >= 0.0)
    assert np.all(positions <= (LENGTHS - 1)[:, None] + 1e-6)
    assert positions.min() < 0.5 and positions.max() > 4.5, "expected saturated positions"


@pytest.mark.parametrize("name", MECHANISMS)
def test_local_weights_are_zero_outside_the_window(name):
    layer, query, keys = built_layer(name, "local-p")
    _, weights = layer(query, keys, mask=MASK)
    positions = layer.predicted_positions(tf.constant(query), tf.constant(MASK)).numpy()
    distance = np.abs(np.arange(S)[None, None, :] - positions[..., None])  # (batch, Tq, S)
    outside = distance > layer.local_window
    assert outside.any(), "the test needs positions outside the window"
    assert np.all(weights.numpy()[outside] == 0.0)
    np.testing.assert_allclose(weights.numpy().sum(-1), 1.0, atol=1e-6)


def test_local_window_favours_the_predicted_position():
    # With equal scores, only the Gaussian shapes the weights: they peak at round(p_t).
    layer = LuongAttention("dot", local_window=3, local_units=4)
    keys = np.zeros((1, S, 2), np.float32)
    query = np.array([[0.3, -0.2]], np.float32)
    _, weights = layer(query, keys)
    position = layer.predicted_positions(tf.constant(query[:, None]), tf.ones((1, S), bool))
    assert int(np.argmax(weights[0])) == int(np.round(position.numpy()[0, 0]))


# --------------------------------------------------------------------------- arguments


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: LuongAttention("cosine"), "score_mode='cosine'"),
        (lambda: LuongAttention("general", units=0), "units=0"),
        (lambda: BahdanauAttention(0), "units=0"),
        (lambda: BahdanauAttention(8.0), "units=8.0"),
        (lambda: BahdanauAttention(8, local_window=0), "local_window=0"),
        (lambda: LuongAttention("dot", local_window=-2), "local_window=-2"),
        (lambda: LuongAttention("dot", local_window=2.5), "local_window=2.5"),
        (lambda: LuongAttention("dot", local_window="3"), "local_window='3'"),
        (lambda: LuongAttention("dot", local_window=True), "local_window=True"),
        (lambda: LuongAttention("dot", local_window=2, local_units=0), "local_units=0"),
        (lambda: make_attention("luong", 8), "attention='luong'"),
    ],
)
def test_bad_arguments_name_the_value(build, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        build()


def test_configs_with_the_old_score_key_still_load():
    new = LuongAttention(score_mode="concat", units=8, scale=True, name="attention")
    old = {key: value for key, value in new.get_config().items() if key != "score_mode"}
    old["score"] = "concat"  # as written before the argument was renamed score_mode
    assert LuongAttention.from_config(old).get_config() == new.get_config()
    serialized = {**keras.saving.serialize_keras_object(new), "config": old}
    assert keras.saving.deserialize_keras_object(serialized).score_mode == "concat"


def test_dot_score_needs_equal_query_and_key_sizes():
    query, keys = make_inputs(DQ)  # DQ != DK
    with pytest.raises(ValueError, match=f"query_dim={DQ}, key_dim={DK}"):
        LuongAttention("dot")(query, keys)


@pytest.mark.parametrize(
    "kind, options, want",
    [
        ("bahdanau", {"normalize": True}, (BahdanauAttention, {"units": 8, "normalize": True})),
        ("concat", {"scale": True}, (LuongAttention, {"score_mode": "concat", "scale": True})),
        ("dot", {"local_window": 4}, (LuongAttention, {"score_mode": "dot", "local_window": 4})),
    ],
)
def test_make_attention(kind, options, want):
    layer = make_attention(kind, 8, name="attn", **options)
    layer_cls, attributes = want
    assert type(layer) is layer_cls and layer.name == "attn"
    for key, value in attributes.items():
        assert getattr(layer, key) == value


# --------------------------------------------------------------------------- shared layer test


def check_attention_outputs(layer, outputs, call_kwargs):
    context, weights = outputs
    assert weights.dtype == np.float32
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    assert np.all(weights[np.broadcast_to(~call_kwargs["mask"][:, None, :], weights.shape)] == 0)
    if layer.compute_dtype == "float32":
        _, want = np_attention(layer, call_kwargs["query"], call_kwargs["keys"],
                               call_kwargs["mask"])
        np.testing.assert_allclose(weights, want, atol=1e-5)


@pytest.mark.parametrize(
    "name, window",
    [("bahdanau", "global"), ("bahdanau-normalized", "local-p"), ("dot-scaled", "global"),
     ("general", "local-p"), ("concat-scaled", "global")],
)
def test_run_layer_test(name, window, tmp_path):
    layer_cls, kwargs, query_dim = MECHANISMS[name]
    query, keys = make_inputs(query_dim)
    run_layer_test(
        layer_cls,
        {**kwargs, **WINDOWS[window]},
        {"query": query, "keys": keys, "mask": MASK},
        expected_output_shapes=[(BATCH, TQ, DK), (BATCH, TQ, S)],
        tmp_path=tmp_path,
        check_outputs=check_attention_outputs,
        expected_output_dtypes=["float32", "float32"],
        # The softmax runs in float32 even when everything else is bfloat16.
        mixed_precision_dtypes=["bfloat16", "float32"],
    )


def test_run_layer_test_single_step_query(tmp_path):
    query, keys = make_inputs(DQ)
    run_layer_test(
        LuongAttention,
        {"score_mode": "general", "scale": True},
        {"query": query[:, 0], "keys": keys, "mask": MASK},
        expected_output_shapes=[(BATCH, DK), (BATCH, S)],
        tmp_path=tmp_path,
        mixed_precision_dtypes=["bfloat16", "float32"],
    )


def test_mixed_precision_weights_match_float32():
    layer, query, keys = built_layer("general", "local-p")
    mixed = LuongAttention("general", local_window=2, local_units=6, dtype="mixed_bfloat16")
    mixed(query, keys, mask=MASK)
    mixed.set_weights(layer.get_weights())
    _, weights = layer(query, keys, mask=MASK)
    _, mixed_weights = mixed(query, keys, mask=MASK)
    assert mixed_weights.dtype == tf.float32
    # bfloat16 keeps ~3 significant digits of the scores; float32 softmax keeps them in place.
    np.testing.assert_allclose(mixed_weights, weights, atol=0.1)
    np.testing.assert_allclose(mixed_weights.numpy().sum(-1), 1.0, atol=1e-6)


def test_keras_mask_on_the_query_is_ignored():
    # A query from a masked RNN carries a (batch, Tq) Keras mask; the key mask
    # must come from the `mask` argument only.
    layer, query, keys = built_layer("general", "global")
    masked_query = keras.layers.Masking(mask_value=0.0)(tf.constant(query))
    _, weights = layer(masked_query, keys, mask=MASK)
    _, want = layer(query, keys, mask=MASK)
    np.testing.assert_allclose(weights, want, atol=1e-7)
