import itertools

import numpy as np
import pytest
import tensorflow as tf

from nmt.inference import search
from nmt.inference.search import beam_search, tile_beams

# --------------------------------------------------------------------------- letter models
# Token ids read as letters, so a failing assertion shows words: "^" is BOS,
# "$" is EOS, "_" is PAD.

LETTERS = ["_", "^", "$"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
PAD, BOS, EOS = 0, 1, 2
ID = {letter: i for i, letter in enumerate(LETTERS)}


def spell(result: search.SearchResult, sentence: int = 0, rank: int = 0) -> str:
    """The hypothesis as letters, EOS included ("cat$")."""
    length = int(result.lengths[sentence, rank])
    return "".join(LETTERS[i] for i in result.tokens[sentence, rank, :length].numpy())


def bigram_log_probs(rules: dict[str, dict[str, float]]) -> np.ndarray:
    """`(V, V)` log-prob table, row = previous letter; unlisted letters share a tiny mass."""
    table = np.full((len(LETTERS), len(LETTERS)), 1e-4)
    for prev, nexts in rules.items():
        for letter, p in nexts.items():
            table[ID[prev], ID[letter]] = p
    return np.log(table / table.sum(axis=1, keepdims=True)).astype(np.float32)


def bigram_step(log_probs: np.ndarray, attention: np.ndarray | None = None):
    """A step function reading `(V, V)` log-probs (and `(V, S)` attention) by previous token."""
    if attention is None:
        attention = np.full((len(LETTERS), 2), 0.5, np.float32)
    log_probs, attention = tf.constant(log_probs), tf.constant(attention, tf.float32)

    def step_fn(tokens, state, context):
        return tf.gather(log_probs, tokens), state + 1, tf.gather(attention, tokens)

    return step_fn


def run_letters(step_fn, beam_size, max_length=8, source_length=2, **kwargs):
    return beam_search(
        step_fn,
        tile_beams(tf.zeros([1], tf.int32), beam_size),
        batch_size=1,
        beam_size=beam_size,
        max_lengths=tf.constant([max_length]),
        source_lengths=tf.constant([source_length]),
        bos_id=BOS,
        eos_id=EOS,
        **kwargs,
    )


CAT = {"^": {"c": 0.8}, "c": {"a": 0.8}, "a": {"t": 0.8}, "t": {"$": 0.8}}


@pytest.mark.parametrize("beam_size", [1, 4])
def test_most_likely_word_is_found(beam_size):
    result = run_letters(bigram_step(bigram_log_probs(CAT)), beam_size)
    assert spell(result) == "cat$", f"beam {beam_size} spelled {spell(result)!r}"
    assert result.tokens.dtype == tf.int32


def test_greedy_stops_right_after_eos():
    result = run_letters(bigram_step(bigram_log_probs(CAT)), 1, max_length=20)
    assert result.tokens.shape == (1, 1, 4), "the loop must stop once every sentence ended"
    assert int(result.lengths[0, 0]) == 4


def test_greedy_ignores_an_eos_that_is_not_the_argmax():
    # "$" is second best after "c": greedy must not end there, while a beam of 2
    # keeps "c$", which scores better than "cat$".
    rules = {**CAT, "c": {"a": 0.5, "$": 0.45}, "a": {"t": 0.5, "o": 0.45}}
    step_fn = bigram_step(bigram_log_probs(rules))
    greedy, beam = run_letters(step_fn, 1), run_letters(step_fn, 2)
    assert spell(greedy) == "cat$", f"greedy spelled {spell(greedy)!r}"
    assert spell(beam) == "c$", f"beam spelled {spell(beam)!r}"


@pytest.mark.parametrize("beam_size", [1, 2, 5])
def test_a_hypothesis_is_never_empty(beam_size):
    # EOS is by far the likeliest first token, and with the length penalty the
    # empty hypothesis would outscore every word: it must not be returned.
    rules = {**CAT, "^": {"$": 0.9, "c": 0.05}}
    result = run_letters(bigram_step(bigram_log_probs(rules)), beam_size, n_best=beam_size)
    assert spell(result) == "cat$", f"beam {beam_size} spelled {spell(result)!r}"
    spelled = [spell(result, 0, n) for n in range(beam_size)]
    assert "$" not in spelled, f"beam {beam_size} returned an empty hypothesis: {spelled}"


def loop_bans(prefix) -> set:
    """The tokens the search may not take after `prefix`: the NumPy reference of its loop
    rule (the last 2m tokens are a unit of m in `search.LOOP_UNITS` twice, the unit not one
    token repeated: its first token may not start it a third time)."""
    bans = set()
    for m in search.LOOP_UNITS:
        tail = list(prefix[len(prefix) - 2 * m:]) if len(prefix) >= 2 * m else []
        if tail and tail[:m] == tail[m:] and len(set(tail[:m])) > 1:
            bans.add(tail[0])
    return bans


def starts_a_third_copy(seq) -> bool:
    """Whether some token of `seq` is one `loop_bans` forbids after the tokens before it."""
    return any(seq[i] in loop_bans(seq[:i]) for i in range(len(seq)))


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_unit_never_comes_a_third_time_in_a_row(beam_size):
    # The model loops on "ab" (and "ba"): the search writes "abab" and then takes
    # the next best letter rather than start a third "ab" (greedy: "$", not "a").
    rules = {"^": {"a": 0.9}, "a": {"b": 0.9, "c": 0.05}, "b": {"a": 0.9, "$": 0.02},
             "c": {"$": 0.9}}
    result = run_letters(bigram_step(bigram_log_probs(rules)), beam_size, max_length=12,
                         n_best=beam_size)
    if beam_size == 1:
        assert spell(result) == "abab$"
    for rank in range(beam_size):
        assert not starts_a_third_copy(spell(result, rank=rank)), spell(result, rank=rank)
    # A letter may repeat, and a unit may come twice.
    assert not starts_a_third_copy("aaaa") and not starts_a_third_copy("abab")
    assert starts_a_third_copy("xababa") and starts_a_third_copy("abcabca")


def test_beam_beats_greedy_when_the_first_step_misleads():
    # "h" is the likelier first letter, but every word after it is unlikely.
    rules = {
        "^": {"h": 0.55, "o": 0.45},
        "h": {"a": 0.34, "e": 0.33, "i": 0.33},
        "a": {"t": 0.98},
        "t": {"$": 0.98},
        "o": {"x": 0.98},
        "x": {"$": 0.98},
    }
    step_fn = bigram_step(bigram_log_probs(rules))
    greedy, beam = run_letters(step_fn, 1), run_letters(step_fn, 2)
    assert spell(greedy) == "hat$", f"greedy spelled {spell(greedy)!r}"
    assert spell(beam) == "ox$", f"beam spelled {spell(beam)!r}"
    assert float(beam.scores[0, 0]) > float(greedy.scores[0, 0])


def test_coverage_penalty_prefers_the_hypothesis_covering_the_source():
    rules = {"^": {"a": 0.5, "c": 0.45}, "a": {"b": 0.9}, "b": {"$": 0.9}}
    rules |= {"c": {"d": 0.9}, "d": {"$": 0.9}}
    log_probs = bigram_log_probs(rules)
    attention = np.full((len(LETTERS), 3), 0.0, np.float32)
    attention[:, 0] = 1.0
    attention[[ID["a"], ID["b"]]] = [0.9, 0.1, 0.0]  # "ab" keeps looking at word 0
    attention[[ID["c"], ID["d"]]] = [0.1, 0.9, 0.0]  # "cd" moves on to word 1
    step_fn = bigram_step(log_probs, attention)
    plain = run_letters(step_fn, 3, coverage_penalty=0.0)
    covered = run_letters(step_fn, 3, coverage_penalty=0.2)
    assert spell(plain) == "ab$", f"without coverage penalty got {spell(plain)!r}"
    assert spell(covered) == "cd$", f"with coverage penalty got {spell(covered)!r}"
    # "cd$" covers words 0 and 1 fully (1.2, 1.8), so its penalty is 0; position 2
    # is padding and must not count as uncovered.
    lp_cd = log_probs[BOS, ID["c"]] + log_probs[ID["c"], ID["d"]] + log_probs[ID["d"], EOS]
    expected = lp_cd / (8 / 6) ** 0.6
    np.testing.assert_allclose(covered.scores[0, 0], expected, rtol=1e-5)


def test_hypotheses_cut_at_the_length_limit_keep_their_tokens():
    result = run_letters(bigram_step(bigram_log_probs(CAT)), 2, max_length=2, n_best=2)
    assert spell(result) == "ca", f"got {spell(result)!r}"
    assert int(result.lengths[0, 0]) == 2


def test_missing_hypotheses_are_reported_empty():
    # Only "$" and "c" have non-zero probability, and the length limit is 1:
    # two hypotheses exist, fewer than n_best.
    log_probs = np.full((len(LETTERS), len(LETTERS)), -np.inf, np.float32)
    log_probs[:, EOS], log_probs[:, ID["c"]] = np.log(0.3), np.log(0.7)
    result = run_letters(bigram_step(log_probs), 3, max_length=1, n_best=3)
    # "$" alone would be empty: only "c" is a hypothesis.
    assert [spell(result, 0, n) for n in range(3)] == ["c", "", ""]
    assert list(result.lengths[0].numpy()) == [1, 0, 0]
    assert np.isneginf(result.scores[0, 2]) and int(result.lengths[0, 2]) == 0


# --------------------------------------------------------------------------- prefix-hash model
# Log-probs and attention depend on the whole prefix through a hash carried in
# the state, so a beam whose state or history is mixed up with another's gives
# a different answer from the NumPy reference.

BUCKETS = 101


class HashModel:
    def __init__(self, vocab: int, width: int, seed: int):
        rng = np.random.default_rng(seed)
        self.vocab = vocab
        self.log_probs = np.log(rng.dirichlet(np.full(vocab, 0.7), BUCKETS)).astype(np.float32)
        self.attention = rng.dirichlet(np.ones(width), BUCKETS).astype(np.float32)

    @staticmethod
    def next_hash(h, token):
        return (h * 31 + token + 1) % BUCKETS

    def step_fn(self, tokens, state, context=()):
        h = self.next_hash(state, tokens)
        return tf.gather(self.log_probs, h), h, tf.gather(self.attention, h)

    def rows(self, start: int, prefix: tuple[int, ...], bos: int):
        """NumPy: `(log_probs, attention)` rows of every step of `prefix`."""
        h, lps, atts = start, [], []
        for token in (bos, *prefix[:-1]):
            h = self.next_hash(h, token)
            lps.append(self.log_probs[h])
            atts.append(self.attention[h])
        return np.array(lps), np.array(atts)


def reference_score(model, start, seq, bos, source_length, alpha, beta):
    """NumPy GNMT score of one complete hypothesis, in float64."""
    lps, atts = model.rows(start, seq, bos)
    log_prob = float(sum(lps[t, token] for t, token in enumerate(seq)))
    coverage = np.minimum(atts.astype(np.float64).sum(axis=0)[:source_length], 1.0)
    penalty = beta * np.log(np.maximum(coverage, 1e-10)).sum()
    return log_prob / ((5 + len(seq)) / 6) ** alpha + penalty, log_prob


def exhaustive(model, start, max_length, eos, bos, source_length, alpha, beta):
    """Every hypothesis (ended by EOS, or cut at max_length), best first."""
    others = [t for t in range(model.vocab) if t != eos]
    hyps = []
    for length in range(1, max_length + 1):
        lasts = range(model.vocab) if length == max_length else [eos]
        for body in itertools.product(others, repeat=length - 1):
            for last in lasts:
                seq = (*body, last)
                if seq == (eos,) or starts_a_third_copy(seq):  # never searched
                    continue
                score, lp = reference_score(model, start, seq, bos, source_length, alpha, beta)
                hyps.append((score, lp, seq))
    return sorted(hyps, key=lambda h: -h[0])


def assert_piece_log_probs_follow_the_paths(result, model, starts, bos):
    """Every hypothesis' piece log-probs are the model's along its own path (NumPy),
    sum to its log-prob and are 0 beyond its length."""
    pieces = result.piece_log_probs.numpy()
    assert pieces.dtype == np.float32 and pieces.shape == result.tokens.shape
    for b, n in np.ndindex(*result.lengths.shape):
        length = int(result.lengths[b, n])
        seq = tuple(result.tokens[b, n, :length].numpy())
        where = f"sentence {b} rank {n}, tokens {seq}"
        if length:
            lps, _ = model.rows(starts[b], seq, bos)
            expected = lps[np.arange(length), list(seq)]
            np.testing.assert_allclose(pieces[b, n, :length], expected, rtol=1e-5, atol=1e-5,
                                       err_msg=where)
            np.testing.assert_allclose(pieces[b, n].sum(), result.log_probs[b, n], rtol=1e-5,
                                       atol=1e-5, err_msg=where)
        assert not pieces[b, n, length:].any(), f"{where}: pieces after the end must be 0"


def run_hash(model, starts, beam_size, max_lengths, source_lengths, bos, eos, **kwargs):
    return beam_search(
        model.step_fn,
        tile_beams(tf.constant(starts, tf.int32), beam_size),
        batch_size=len(starts),
        beam_size=beam_size,
        max_lengths=tf.constant(max_lengths),
        source_lengths=tf.constant(source_lengths),
        bos_id=bos,
        eos_id=eos,
        **kwargs,
    )


@pytest.mark.parametrize("alpha,beta", [(0.0, 0.0), (0.6, 0.0), (1.0, 0.5)])
def test_wide_beam_agrees_with_exhaustive_search(alpha, beta):
    model = HashModel(vocab=4, width=3, seed=7)
    starts, max_lengths, source_lengths = [0, 5], [4, 3], [2, 3]
    bos, eos, n_best = 4, 3, 5
    result = run_hash(
        model,
        starts,
        4**4,
        max_lengths,
        source_lengths,
        bos,
        eos,
        length_penalty=alpha,
        coverage_penalty=beta,
        n_best=n_best,
    )
    for b, start in enumerate(starts):
        best = exhaustive(model, start, max_lengths[b], eos, bos, source_lengths[b], alpha, beta)
        for n, (score, log_prob, seq) in enumerate(best[:n_best]):
            got = tuple(result.tokens[b, n, : result.lengths[b, n]].numpy())
            assert got == seq, f"sentence {b} rank {n}: got {got}, exhaustive search {seq}"
            np.testing.assert_allclose(result.scores[b, n], score, rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(result.log_probs[b, n], log_prob, rtol=1e-5, atol=1e-5)
    assert np.all(np.diff(result.scores.numpy(), axis=1) <= 0), "n-best must be sorted"
    assert not np.any(result.attention[0, :, :, 2:]), "padding source positions must be 0"
    assert_piece_log_probs_follow_the_paths(result, model, starts, bos)


def numpy_greedy(model, start, max_length, bos, eos):
    prefix = []
    while len(prefix) < max_length and (not prefix or prefix[-1] != eos):
        lps, _ = model.rows(start, (*prefix, 0), bos)
        choices = np.array(lps[-1], copy=True)
        if not prefix:  # no empty hypothesis
            choices[eos] = -np.inf
        choices[list(loop_bans(prefix))] = -np.inf
        prefix.append(int(np.argmax(choices)))
    return tuple(prefix)


def test_beam_size_one_is_the_argmax_path():
    model = HashModel(vocab=6, width=3, seed=3)
    starts, max_lengths = [0, 11, 23, 42], [2, 5, 8, 8]
    result = run_hash(model, starts, 1, max_lengths, [3, 3, 3, 3], bos=6, eos=0, length_penalty=1)
    for b, start in enumerate(starts):
        expected = numpy_greedy(model, start, max_lengths[b], bos=6, eos=0)
        got = tuple(result.tokens[b, 0, : result.lengths[b, 0]].numpy())
        assert got == expected, f"sentence {b}: got {got}, argmax path {expected}"
        assert not np.any(result.tokens[b, 0, len(expected) :]), "padding must be 0"
    assert_piece_log_probs_follow_the_paths(result, model, starts, bos=6)


@pytest.mark.parametrize("beam_size,n_best", [(3, 1), (3, 3), (5, 4)])
def test_piece_log_probs_follow_each_hypothesis_as_sentences_leave(beam_size, n_best):
    # EOS (id 0) is likely enough that hypotheses end at many different steps, and the
    # length limits make sentences leave the batch at steps 1, 2, 6 and 9; beams get
    # reordered, so a piece log-prob kept for the wrong beam differs from the path's.
    model = HashModel(vocab=6, width=3, seed=5)
    starts, max_lengths = [0, 11, 23, 42], [2, 9, 1, 6]
    result = run_hash(model, starts, beam_size, max_lengths, [3, 3, 3, 3], bos=6, eos=0,
                      n_best=n_best, length_penalty=0.6)
    assert set(result.lengths.numpy().ravel()) >= {1, 2}, "hypotheses of several lengths"
    assert_piece_log_probs_follow_the_paths(result, model, starts, bos=6)


def test_attention_follows_the_back_pointers():
    # The attention row of a step is one-hot at (step, previous token), so each
    # hypothesis's rows can be predicted from its own tokens alone. EOS is made
    # unlikely so that hypotheses are long and beams get reordered often.
    model, inputs, max_length = HashModel(vocab=5, width=1, seed=11), 6, 6

    def step_fn(tokens, state, context):
        h, step = state
        log_probs, h, _ = model.step_fn(tokens, h)
        log_probs -= 5.0 * tf.one_hot(0, 5)  # (B*K, V)
        return log_probs, (h, step + 1), tf.one_hot(step * inputs + tokens, max_length * inputs)

    beam_size, n_best, width = 4, 4, max_length * inputs
    starts = tf.constant([0, 9])
    result = beam_search(
        step_fn,
        tile_beams((starts, tf.zeros([2], tf.int32)), beam_size),
        batch_size=2,
        beam_size=beam_size,
        max_lengths=tf.constant([max_length, 4]),
        source_lengths=tf.constant([width, width]),
        bos_id=5,
        eos_id=0,
        n_best=n_best,
    )
    for b, n in itertools.product(range(2), range(n_best)):
        length = int(result.lengths[b, n])
        previous = [5, *result.tokens[b, n, : length - 1].numpy()]
        expected = np.zeros((result.tokens.shape[2], width), np.float32)
        expected[np.arange(length), np.arange(length) * inputs + np.array(previous)] = 1.0
        np.testing.assert_array_equal(
            result.attention[b, n], expected, err_msg=f"sentence {b} rank {n}, tokens {previous}"
        )


def test_sentences_searched_together_equal_sentences_searched_alone():
    """Sentences leave the batch as their search ends (here at very different
    steps); the others' beams, states, per-sentence context and attention rows
    must stay theirs. The context shifts each sentence's log-probabilities."""
    model = HashModel(vocab=6, width=5, seed=3)
    shifts = np.random.default_rng(1).normal(size=(4, 6)).astype(np.float32)

    def step_fn(tokens, h, shift):  # shift: one row per searched sentence
        log_probs, h, attention = model.step_fn(tokens, h)
        shift = tf.repeat(shift, tf.shape(tokens)[0] // tf.shape(shift)[0], axis=0)
        return tf.nn.log_softmax(log_probs + shift), h, attention

    def search(sentences, beam_size):
        return beam_search(
            step_fn,
            tile_beams(tf.constant([7 * b for b in sentences], tf.int32), beam_size),
            batch_size=len(sentences), beam_size=beam_size,
            max_lengths=tf.constant([[2, 9, 1, 6][b] for b in sentences]),
            source_lengths=tf.constant([[5, 3, 4, 5][b] for b in sentences]),
            bos_id=5, eos_id=0, n_best=beam_size, coverage_penalty=0.2,
            context=tf.constant(shifts[sentences]),
        )

    for beam_size in (1, 3):
        together = search([0, 1, 2, 3], beam_size)
        for b in range(4):
            alone = search([b], beam_size)
            steps = int(tf.reduce_max(alone.lengths))
            for name in ("lengths", "scores", "log_probs"):
                np.testing.assert_allclose(getattr(together, name)[b], getattr(alone, name)[0],
                                           rtol=1e-6, err_msg=f"{name} of sentence {b}")
            np.testing.assert_allclose(together.piece_log_probs[b, :, :steps],
                                       alone.piece_log_probs[0], rtol=1e-6)
            assert not np.any(together.piece_log_probs[b, :, steps:])
            np.testing.assert_array_equal(together.tokens[b, :, :steps], alone.tokens[0])
            np.testing.assert_allclose(together.attention[b, :, :steps], alone.attention[0],
                                       rtol=1e-6)
            assert not np.any(together.tokens[b, :, steps:])


def test_dynamic_shapes_and_sizes_inside_tf_function():
    model = HashModel(vocab=7, width=1, seed=5)

    @tf.function(
        input_signature=[
            tf.TensorSpec([None], tf.int32),  # starts
            tf.TensorSpec([None, None], tf.float32),  # memory (B, S)
            tf.TensorSpec([None], tf.int32),  # max_lengths
            tf.TensorSpec([None], tf.int32),  # source_lengths
            tf.TensorSpec([], tf.int32),  # beam_size
            tf.TensorSpec([], tf.int32),  # n_best
            tf.TensorSpec([], tf.float32),  # coverage penalty
        ]
    )
    def translate(starts, memory, max_lengths, source_lengths, beam_size, n_best, beta):
        def step_fn(tokens, h, memory):  # memory: (A, S)
            log_probs, h, _ = model.step_fn(tokens, h)
            tiled_memory = tf.repeat(memory, beam_size, axis=0)  # (A*K, S)
            weights = tf.nn.softmax(tiled_memory * tf.cast(h[:, None] % 5, tf.float32), axis=-1)
            query = tf.one_hot(h % 4, 4) * tf.cast(tokens[:, None] + 1, tf.float32)
            return log_probs, h, weights, query

        return beam_search(
            step_fn,
            tile_beams(starts, beam_size),
            batch_size=tf.shape(starts)[0],
            beam_size=beam_size,
            max_lengths=max_lengths,
            source_lengths=source_lengths,
            bos_id=7,
            eos_id=1,
            coverage_penalty=beta,
            n_best=n_best,
            context=memory,
            step_queries=True,
        )

    rng = np.random.default_rng(0)
    for batch, width, beam_size, n_best in [(2, 4, 3, 2), (3, 6, 5, 5)]:
        args = (
            tf.constant(rng.integers(0, 50, batch), tf.int32),
            tf.constant(rng.normal(size=(batch, width)), tf.float32),
            tf.constant(rng.integers(2, 9, batch), tf.int32),
            tf.constant(rng.integers(1, width + 1, batch), tf.int32),
        )
        sizes = (tf.constant(beam_size), tf.constant(n_best), tf.constant(0.3))
        graph = translate(*args, *sizes)
        eager = translate.python_function(*args, *sizes)
        for name, got, want in zip(graph._fields, graph, eager, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, err_msg=name)
        assert graph.tokens.shape[:2] == (batch, n_best)
        assert graph.attention.shape[-1] == width and graph.queries.shape[-1] == 4
        assert np.all(np.diff(graph.scores.numpy(), axis=1) <= 0), "n-best must be sorted"
    assert translate.experimental_get_tracing_count() == 1


# --------------------------------------------------------------------------- helpers


@pytest.mark.parametrize("beam_size", [3, tf.constant(3)])
def test_tile_beams_keeps_each_sentence_contiguous(beam_size):
    tiled = tile_beams({"x": tf.constant([[1, 2], [3, 4]]), "y": tf.constant([7, 8])}, beam_size)
    np.testing.assert_array_equal(tiled["x"], [[1, 2]] * 3 + [[3, 4]] * 3)
    np.testing.assert_array_equal(tiled["y"], [7, 7, 7, 8, 8, 8])


def test_flatten_and_gather_beams():
    x = tf.reshape(tf.range(12), [2, 3, 2])  # (B, K, 2)
    flat = search.flatten_beams(x)
    assert flat.shape == (6, 2)
    np.testing.assert_array_equal(search.unflatten_beams(flat, 3), x)
    picked = search.gather_beams(x, tf.constant([[2, 0], [1, 1]]))
    np.testing.assert_array_equal(picked, [[[4, 5], [0, 1]], [[8, 9], [8, 9]]])
    rows = search.flat_beam_indices(tf.constant([[2, 0], [1, 1]]), 3)
    np.testing.assert_array_equal(tf.gather(flat, rows), tf.reshape(picked, [4, 2]))


@pytest.mark.parametrize("vocab,beam_size", [(7, 3), (64, 2), (200, 5), (1000, 1)])
def test_top_k_expansions_matches_a_full_sort(vocab, beam_size):
    rng = np.random.default_rng(vocab)
    batch, k = 3, 2 * beam_size
    log_probs = rng.normal(size=(batch * beam_size, vocab)).astype(np.float32)
    log_probs[0, : vocab // 2] = -np.inf  # masked tokens must not disturb the order
    beam_log_probs = rng.normal(size=(batch, beam_size)).astype(np.float32)
    beam_log_probs[1, 1:] = -np.inf  # dead beams
    values, beams, tokens = search.top_k_expansions(
        tf.constant(log_probs), tf.constant(beam_log_probs), k
    )
    totals = (log_probs.reshape(batch, beam_size, vocab) + beam_log_probs[:, :, None]).reshape(
        batch, -1
    )
    order = np.argsort(-totals, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(values, np.take_along_axis(totals, order, axis=1))
    np.testing.assert_array_equal(beams, order // vocab)
    np.testing.assert_array_equal(tokens, order % vocab)


def test_penalties_match_the_gnmt_formulas():
    lengths = tf.constant([1, 4, 10])
    np.testing.assert_allclose(
        search.gnmt_length_penalty(lengths, 0.6), ((5 + np.array([1, 4, 10])) / 6) ** 0.6
    )
    coverage = tf.constant([[0.5, 2.0, 0.0], [1.0, 0.25, 0.3]])
    mask = tf.constant([[True, True, False], [True, True, True]])
    expected = 0.4 * np.array([np.log(0.5), np.log(0.25) + np.log(0.3)])
    np.testing.assert_allclose(search.gnmt_coverage_penalty(coverage, mask, 0.4), expected)
    assert np.all(search.gnmt_coverage_penalty(coverage, mask, 0.0).numpy() == 0.0)


@pytest.mark.parametrize("beam_size,n_best", [(0, 1), (2, 3), (2, 0)])
def test_bad_sizes_raise(beam_size, n_best):
    with pytest.raises(ValueError, match="Received"):
        run_letters(bigram_step(bigram_log_probs(CAT)), beam_size, n_best=n_best)


# --------------------------------------------------------------------------- step queries

WIDTH = len(LETTERS)  # size of the test's step vectors: one-hot letters


def querying_step(log_probs: np.ndarray):
    """Like `bigram_step`, also returning a one-hot of the step's input letter."""
    table = tf.constant(log_probs)

    def step_fn(tokens, state, context):
        attention = tf.fill([tf.shape(tokens)[0], 2], 0.5)
        return tf.gather(table, tokens), state + 1, attention, tf.one_hot(tokens, WIDTH)

    return step_fn


def expected_queries(word: str) -> np.ndarray:
    """Piece t was chosen by the step that read piece t - 1 (BOS first)."""
    rows = np.zeros((len(word), WIDTH), np.float32)
    for t in range(len(word)):
        rows[t, ID[word[t - 1]] if t else BOS] = 1.0
    return rows


def run_with_queries(rules, beam_size, max_length=8, **kwargs):
    return run_letters(querying_step(bigram_log_probs(rules)), beam_size, max_length=max_length,
                       step_queries=True, **kwargs)


@pytest.mark.parametrize("beam_size", [1, 4])
def test_each_piece_keeps_the_vector_of_the_step_that_chose_it(beam_size):
    rules = {**CAT, "^": {"c": 0.5, "d": 0.4}, "d": {"o": 0.8}, "o": {"g": 0.8},
             "g": {"$": 0.8}}
    n_best = min(2, beam_size)
    result = run_with_queries(rules, beam_size, n_best=n_best)
    for rank in range(n_best):
        word = spell(result, rank=rank)
        queries = result.queries[0, rank].numpy()
        np.testing.assert_allclose(queries[:len(word)], expected_queries(word), err_msg=word)
        assert not queries[len(word):].any(), "rows after the end are 0"


def test_the_last_piece_of_a_hypothesis_cut_at_the_limit_keeps_its_vector():
    result = run_with_queries(CAT, 2, max_length=3)
    assert spell(result) == "cat"
    np.testing.assert_allclose(result.queries[0, 0].numpy(), expected_queries("cat"))


def test_without_step_queries_the_result_has_none():
    assert run_letters(bigram_step(bigram_log_probs(CAT)), 2).queries is None


def test_step_vectors_stay_with_their_sentence_when_another_leaves():
    # Sentence 0 spells "cat$" and leaves the search; sentence 1 goes on to "dragon$", so
    # later steps hold its rows only: every piece must still get its own step's vector.
    tables = tf.constant(np.stack([
        bigram_log_probs(CAT),
        bigram_log_probs({"^": {"d": 0.8}, "d": {"r": 0.8}, "r": {"a": 0.8}, "a": {"g": 0.8},
                          "g": {"o": 0.8}, "o": {"n": 0.8}, "n": {"$": 0.8}}),
    ]))

    def step_fn(tokens, sentence, context):
        log_probs = tf.gather_nd(tables, tf.stack([sentence, tokens], axis=1))
        return (log_probs, sentence, tf.fill([tf.shape(tokens)[0], 2], 0.5),
                tf.one_hot(tokens, WIDTH))

    for beam_size in (1, 3):
        result = beam_search(
            step_fn, tile_beams(tf.constant([0, 1]), beam_size), batch_size=2,
            beam_size=beam_size, max_lengths=tf.constant([8, 8]),
            source_lengths=tf.constant([2, 2]), bos_id=BOS, eos_id=EOS, step_queries=True)
        words = [spell(result, sentence=s) for s in (0, 1)]
        assert words == ["cat$", "dragon$"], words
        for s, word in enumerate(words):
            np.testing.assert_allclose(result.queries[s, 0, :len(word)].numpy(),
                                       expected_queries(word), err_msg=f"{beam_size} {word}")
