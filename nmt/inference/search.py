"""Batched beam search over a one-step decoder, carrying attention alignments.

The search is generic over the model: it only needs a step function

    step_fn(tokens, state, context) -> (log_probs, new_state, attention)

with `tokens` of shape `(rows,)`, every tensor of `state` with leading
dimension `rows`, `log_probs` of shape `(rows, vocab)` (already
log-softmaxed) and `attention` of shape `(rows, S)`. `rows` is `beam` times
the sentences still being searched, the `beam` rows of a sentence
contiguous: a sentence whose search has ended leaves the batch, so the steps
after it cost nothing for it. `state` is reordered along the beams every
step; `context` (encoder memory, masks) holds per-sentence constants, one
row per searched sentence (not per beam: the step reads them once for its
`beam` rows), and only loses the rows of sentences that left. The step
function must not capture per-sentence tensors in a closure: they would keep
the rows of sentences that left.

Hypotheses are scored as in Wu et al. 2016 ("Google's Neural Machine
Translation System", Sec. 7):

    s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y)
    lp(Y) = ((5 + |Y|) / 6) ** alpha
    cp(X; Y) = beta * sum_i log(min(sum_j p_ij, 1.0))

The loop keeps, per sentence, K alive beams (no EOS yet) and K finished
hypotheses (tensor2tensor's layout). Each step takes the top 2K expansions by
log-probability; an expansion that ends (emits EOS, or reaches the sentence's
length limit) is finished only if it ranks among the top K, as in fairseq.
That makes beam_size=1 exactly greedy search. A sentence stops once it holds
K finished hypotheses (or reaches its length limit) and then leaves the
batch; the loop stops when no sentence is left.

Two expansions are never taken: EOS at the first step (a translation is
never empty) and a piece that would start a unit of 2 to 16 pieces a third
time in a row (a loop; `_no_third_repeat`).

Alignments are recovered without a second loop: each step's attention rows
are written to a TensorArray, and every hypothesis carries, for each of its
steps, the index of the beam whose row it produced. Only these small int
histories are reordered per step; the attention itself is gathered once.

Each piece's log-probability (`SearchResult.piece_log_probs`) is recovered the
same way: every step writes the log-probability of each alive beam so far
(the prefix its expansions extend), and after the loop a hypothesis' prefixes
are read through its beam history and differenced, the last against its
total. A float history per beam, reordered like the tokens, would add a
`(rows, T)` gather and write to every step (and to every merge of finished
hypotheses); the prefixes cost one `(rows,)` write a step. The values are the
step function's log-probabilities, to float32 rounding of the running sums
(a forbidden piece, EOS at the first step or a loop's, is never a chosen one,
so those masks change none of them).

With `step_queries=True` the step function returns a fourth value, a vector
per row `(rows, D)` (the decoder state that predicted the row's next piece,
which an alignment head reads), carried exactly like the attention rows:
`SearchResult.queries` holds, for every piece of every hypothesis, the
vector of the step that chose it, the last piece of a hypothesis cut at its
length limit included. The head's rows are then computed once, after the
loop, for the hypotheses returned.

Everything is stock TensorFlow inside one `tf.while_loop`, so the search
traces into a SavedModel with dynamic batch size, beam size and lengths.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

from nmt.types import DecodeOptions

Nested = Any
StepFn = Callable[[tf.Tensor, Nested, Nested], tuple[tf.Tensor, Nested, tf.Tensor]]
IntLike = int | tf.Tensor
FloatLike = float | tf.Tensor

_NEG_INF = float("-inf")
# Defaults of the penalties and n-best: the service's decoding defaults.
_DEFAULTS = DecodeOptions()
# Floor for the summed attention inside log(): a source position that was never
# attended to gets a large finite penalty instead of -inf (and no NaN at beta=0).
_COVERAGE_FLOOR = 1e-10
# Vocabulary block size of top_k_expansions; 64 measured fastest for 1k-16k
# vocabularies and beams of 1-5. A vocabulary of a multiple of it needs no padding.
VOCAB_BLOCK = 64


class SearchResult(NamedTuple):
    """Output of `beam_search`, best hypothesis first for every sentence.

    Attributes:
        tokens: int32 `(batch, n_best, T)`, without BOS, including the EOS
            token when the hypothesis ended, then padded with 0.
        lengths: int32 `(batch, n_best)`, tokens including EOS; a hypothesis
            cut at its sentence's `max_lengths` has that length.
        scores: float32 `(batch, n_best)`, the normalised score s(Y, X).
        log_probs: float32 `(batch, n_best)`, the raw sum of log-probabilities.
        piece_log_probs: float32 `(batch, n_best, T)`, the log-probability of
            every piece (EOS included) given the source and the pieces before
            it, as the step function gave it; they sum to `log_probs`; 0
            beyond the hypothesis' length.
        attention: float32 `(batch, n_best, T, S)`, the attention row of every
            step of the hypothesis; 0 beyond its length and at padding
            source positions.
        queries: `(batch, n_best, T, D)`, the step vector of every piece
            (0 beyond the hypothesis' length); None without `step_queries`.
    """

    tokens: tf.Tensor
    lengths: tf.Tensor
    scores: tf.Tensor
    log_probs: tf.Tensor
    piece_log_probs: tf.Tensor
    attention: tf.Tensor
    queries: tf.Tensor | None = None


class _Config(NamedTuple):
    """Search constants, all tensors."""

    beam_size: tf.Tensor  # ()
    batch_size: tf.Tensor  # () sentences given
    eos_id: tf.Tensor  # ()
    alpha: tf.Tensor  # ()
    beta: tf.Tensor  # ()


class _Beams(NamedTuple):
    """While-loop state. L is the largest length limit of the batch.

    A is the number of sentences still searched (B at the start): the fields
    marked (A...) hold only them, in the order of `sentences`. When sentences
    leave, their finished hypotheses move to `results`; attention rows are
    written for all B sentences.
    """

    step: tf.Tensor  # ()
    sentences: tf.Tensor  # (A,) index of each searched sentence in the batch
    max_lengths: tf.Tensor  # (A,)
    source_lengths: tf.Tensor  # (A,)
    last_tokens: tf.Tensor  # (A*K,)
    alive_log_probs: tf.Tensor  # (A, K), -inf for dead beams
    alive_tokens: tf.Tensor  # (A, K, L)
    alive_rows: tf.Tensor  # (A, K, L) beam whose attention row each step used
    coverage: tf.Tensor  # (A*K, S) attention summed over past steps
    finished_tokens: tf.Tensor  # (A, K, L)
    finished_rows: tf.Tensor  # (A, K, L)
    finished_scores: tf.Tensor  # (A, K), sorted, -inf for empty slots
    finished_log_probs: tf.Tensor  # (A, K)
    finished_lengths: tf.Tensor  # (A, K)
    results: dict  # the finished_* fields of all B sentences, filled as sentences leave
    attention: tf.TensorArray  # T x (B*K, S), zero rows for sentences that left
    # Each alive beam's log-probability before the step, T x (B*K, 1), laid out as attention.
    prefix_log_probs: tf.TensorArray
    # Step vectors of the searched rows only, T x (A*K, D), and where each sentence's
    # rows were, T x (B,) (-1 once it left); () without step queries.
    queries: tuple
    model_state: Nested  # leaves (A*K, ...), reordered along the beams every step
    context: Nested  # leaves (A, ...), per-sentence constants


class _Candidates(NamedTuple):
    """The top C = 2K expansions of one step, sorted by log-probability."""

    log_probs: tf.Tensor  # (B, C)
    parents: tf.Tensor  # (B, C) alive beam each expansion extends
    tokens: tf.Tensor  # (B, C)
    history: tf.Tensor  # (B, C, L)
    rows: tf.Tensor  # (B, C, L)
    coverage_penalty: tf.Tensor  # (B, C)


def tile_beams(x: Nested, beam_size: IntLike) -> Nested:
    """Repeats every sentence `beam_size` times along the first axis.

    Args:
        x: a tensor or nested structure of tensors, each `(batch, ...)`.
        beam_size: Python int or scalar int32 tensor.

    Returns:
        The same structure with tensors `(batch * beam_size, ...)`, the rows
        of one sentence contiguous: b0k0, b0k1, ..., b1k0, ...
    """
    return tf.nest.map_structure(lambda t: tf.repeat(t, beam_size, axis=0), x)


def flatten_beams(x: tf.Tensor) -> tf.Tensor:
    """`(batch, beam, ...)` -> `(batch * beam, ...)`."""
    shape = tf.shape(x)
    return tf.reshape(x, tf.concat([[shape[0] * shape[1]], shape[2:]], axis=0))


def unflatten_beams(x: tf.Tensor, beam_size: IntLike) -> tf.Tensor:
    """`(batch * beam, ...)` -> `(batch, beam, ...)`."""
    shape = tf.shape(x)
    return tf.reshape(x, tf.concat([[shape[0] // beam_size, beam_size], shape[1:]], axis=0))


def gather_beams(x: tf.Tensor, indices: tf.Tensor) -> tf.Tensor:
    """Picks beams per sentence: `(batch, K, ...)`, `(batch, M)` -> `(batch, M, ...)`."""
    return tf.gather(x, indices, batch_dims=1)


def flat_beam_indices(indices: tf.Tensor, beam_size: IntLike) -> tf.Tensor:
    """Beam indices `(batch, M)` into rows of a `(batch * beam_size, ...)` tensor."""
    offsets = tf.range(tf.shape(indices)[0])[:, None] * beam_size  # (B, 1)
    return tf.reshape(indices + offsets, [-1])  # (B*M,)


def gnmt_length_penalty(lengths: tf.Tensor, alpha: FloatLike) -> tf.Tensor:
    """lp(Y) = ((5 + |Y|) / 6) ** alpha (Wu et al. 2016, Eq. 14)."""
    return ((5.0 + tf.cast(lengths, tf.float32)) / 6.0) ** alpha


def gnmt_coverage_penalty(
    coverage: tf.Tensor, source_mask: tf.Tensor, beta: FloatLike
) -> tf.Tensor:
    """cp(X; Y) = beta * sum_i log(min(sum_j p_ij, 1)) (Wu et al. 2016, Eq. 14).

    Args:
        coverage: `(..., S)`, attention summed over target steps.
        source_mask: bool, broadcastable to `coverage`; False at padding.
        beta: the penalty weight; 0 disables it.

    Returns:
        `(...)`, non-positive.
    """
    logs = tf.math.log(tf.clip_by_value(coverage, _COVERAGE_FLOOR, 1.0))
    return beta * tf.reduce_sum(tf.where(source_mask, logs, 0.0), axis=-1)


def top_k_expansions(
    log_probs: tf.Tensor, beam_log_probs: tf.Tensor, k: IntLike
) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """The k best one-token expansions of each sentence's beams, best first.

    Equal to `top_k` over `beam_log_probs[b, i] + log_probs[b * K + i, v]` for
    all `(i, v)`, but faster: `top_k` on CPU costs far more per value than
    `reduce_max`, so it first picks the k best blocks of `VOCAB_BLOCK` vocabulary
    entries by their maximum (the k best values lie in at most k blocks) and
    only sorts those. Blocks are taken in index order so ties break like
    `top_k`, towards the lower index.

    Args:
        log_probs: `(batch * K, V)`.
        beam_log_probs: `(batch, K)`, the log-probability of each beam so far.
        k: at most `K * V`.

    Returns:
        `(values, beams, tokens)`, each `(batch, k)`.
    """
    batch, beam_size = tf.shape(beam_log_probs)[0], tf.shape(beam_log_probs)[1]
    vocab = tf.shape(log_probs)[1]
    n_blocks = (vocab + VOCAB_BLOCK - 1) // VOCAB_BLOCK
    padded = tf.pad(log_probs, [[0, 0], [0, n_blocks * VOCAB_BLOCK - vocab]],
                    constant_values=_NEG_INF)
    blocks = tf.reshape(padded, [batch, beam_size * n_blocks, VOCAB_BLOCK])  # (B, K*nb, m)
    offsets = tf.repeat(beam_log_probs, n_blocks, axis=1)  # (B, K*nb)
    n_top = tf.minimum(k, beam_size * n_blocks)
    _, top = tf.math.top_k(tf.reduce_max(blocks, axis=-1) + offsets, k=n_top)  # (B, k)
    top = tf.sort(top, axis=1)
    values = gather_beams(blocks, top) + gather_beams(offsets, top)[:, :, None]  # (B, k, m)
    values, positions = tf.math.top_k(tf.reshape(values, [batch, n_top * VOCAB_BLOCK]), k=k)
    block = gather_beams(top, positions // VOCAB_BLOCK)  # (B, k)
    tokens = (block % n_blocks) * VOCAB_BLOCK + positions % VOCAB_BLOCK
    # Padding is only picked when fewer than k expansions are finite; any real
    # token id will do for those dead beams.
    return values, block // n_blocks, tf.minimum(tokens, vocab - 1)


def _write_column(history: tf.Tensor, values: tf.Tensor, step: tf.Tensor) -> tf.Tensor:
    """Sets `history[:, :, step] = values` for `(B, M, L)` and `(B, M)`."""
    at_step = tf.equal(tf.range(tf.shape(history)[-1]), step)  # (L,)
    return tf.where(at_step, values[:, :, None], history)


def _check_sizes(beam_size: IntLike, n_best: IntLike) -> list[tf.Operation]:
    """Raises ValueError for bad static sizes; returns run-time checks otherwise."""
    k, n = tf.get_static_value(beam_size), tf.get_static_value(n_best)
    if k is not None and k < 1:
        raise ValueError(f"beam_size must be at least 1. Received: beam_size={k!r}")
    if n is not None and (n < 1 or (k is not None and n > k)):
        raise ValueError(
            f"n_best must be between 1 and beam_size. Received: n_best={n!r}, beam_size={k!r}"
        )
    if k is not None and n is not None:
        return []
    return [
        tf.debugging.assert_greater_equal(beam_size, 1, message="beam_size must be >= 1"),
        tf.debugging.assert_greater_equal(n_best, 1, message="n_best must be >= 1"),
        tf.debugging.assert_less_equal(n_best, beam_size, message="n_best must be <= beam_size"),
    ]


def _initial_beams(
    cfg: _Config, bos_id: IntLike, limit: tf.Tensor, max_lengths: tf.Tensor,
    source_lengths: tf.Tensor, model_state: Nested, context: Nested, step_queries: bool,
) -> _Beams:
    """Sentence starts: only beam 0 is alive, so the first step has no duplicates."""
    k, batch_size = cfg.beam_size, cfg.batch_size
    first = tf.where(tf.range(k) == 0, 0.0, _NEG_INF)  # (K,)
    history = tf.zeros([batch_size, k, limit], tf.int32)  # (B, K, L)
    empty = tf.fill([batch_size, k], _NEG_INF)  # (B, K)
    return _Beams(
        step=tf.constant(0),
        sentences=tf.range(batch_size),
        max_lengths=max_lengths,
        source_lengths=source_lengths,
        last_tokens=tf.fill([batch_size * k], tf.cast(bos_id, tf.int32)),
        alive_log_probs=tf.tile(first[None, :], [batch_size, 1]),
        alive_tokens=history,
        alive_rows=history,
        # Zero-width until the first step reveals S (see _accumulate_coverage).
        coverage=tf.zeros([batch_size * k, 0]),
        finished_tokens=history,
        finished_rows=history,
        finished_scores=empty,
        finished_log_probs=empty,
        finished_lengths=tf.zeros([batch_size, k], tf.int32),
        results={"finished_tokens": history, "finished_rows": history,
                 "finished_scores": empty, "finished_log_probs": empty,
                 "finished_lengths": tf.zeros([batch_size, k], tf.int32)},
        attention=tf.TensorArray(tf.float32, size=0, dynamic_size=True),
        prefix_log_probs=tf.TensorArray(tf.float32, size=0, dynamic_size=True),
        queries=(tf.TensorArray(tf.float32, size=0, dynamic_size=True, infer_shape=False,
                                element_shape=tf.TensorShape([None, None])),
                 tf.TensorArray(tf.int32, size=0, dynamic_size=True)) if step_queries else (),
        model_state=model_state,
        context=context,
    )


def _accumulate_coverage(coverage: tf.Tensor, attention: tf.Tensor) -> tf.Tensor:
    """Adds this step's attention `(B*K, S)`; pads the zero-width initial coverage."""
    width = tf.shape(attention)[1] - tf.shape(coverage)[1]
    return tf.pad(coverage, [[0, 0], [0, width]]) + attention  # (B*K, S)


def _expand(cfg: _Config, beams: _Beams, log_probs: tf.Tensor, coverage: tf.Tensor) -> _Candidates:
    """Scores every one-token extension of the alive beams and keeps the top 2K."""
    k = cfg.beam_size
    n_candidates = tf.minimum(2 * k, k * tf.shape(log_probs)[1])
    values, parents, tokens = top_k_expansions(log_probs, beams.alive_log_probs, n_candidates)
    source_mask = tf.sequence_mask(beams.source_lengths, tf.shape(coverage)[1])  # (A, S)
    penalty = gnmt_coverage_penalty(unflatten_beams(coverage, k), source_mask[:, None], cfg.beta)
    return _Candidates(
        log_probs=values,
        parents=parents,
        tokens=tokens,
        history=_write_column(gather_beams(beams.alive_tokens, parents), tokens, beams.step),
        rows=_write_column(gather_beams(beams.alive_rows, parents), parents, beams.step),
        coverage_penalty=gather_beams(penalty, parents),  # (B, C)
    )


def _ending(cfg: _Config, beams: _Beams, cands: _Candidates) -> tf.Tensor:
    """Expansions that end a hypothesis: EOS, or the sentence's last allowed token."""
    at_limit = (beams.step + 1 >= beams.max_lengths)[:, None]  # (A, 1)
    return tf.equal(cands.tokens, cfg.eos_id) | at_limit  # (A, C)


_FINISHED = ("finished_scores", "finished_log_probs", "finished_lengths", "finished_tokens",
             "finished_rows")


def _merge_finished(
    cfg: _Config, beams: _Beams, cands: _Candidates, ends: tf.Tensor
) -> dict[str, tf.Tensor]:
    """Adds the ending expansions ranked in the top K to the K finished hypotheses."""
    old = {name: getattr(beams, name) for name in _FINISHED}
    rank = tf.range(tf.shape(cands.tokens)[1])[None, :]  # (1, C)
    admitted = ends & (rank < cfg.beam_size) & (cands.log_probs > _NEG_INF)  # (A, C)
    lp = gnmt_length_penalty(beams.step + 1, cfg.alpha)
    scores = tf.where(admitted, cands.log_probs / lp + cands.coverage_penalty, _NEG_INF)
    all_scores = tf.concat([old["finished_scores"], scores], axis=1)  # (A, K+C)
    top_scores, top = tf.math.top_k(all_scores, k=cfg.beam_size)  # (A, K)

    def pick(name: str, new: tf.Tensor) -> tf.Tensor:
        return gather_beams(tf.concat([old[name], new], axis=1), top)

    lengths = tf.fill(tf.shape(cands.tokens), beams.step + 1)  # (A, C)
    return {
        "finished_scores": top_scores,
        "finished_log_probs": pick("finished_log_probs", cands.log_probs),
        "finished_lengths": pick("finished_lengths", lengths),
        "finished_tokens": pick("finished_tokens", cands.history),
        "finished_rows": pick("finished_rows", cands.rows),
    }


def _select_alive(
    cfg: _Config, beams: _Beams, cands: _Candidates, ends: tf.Tensor, finished_scores: tf.Tensor
) -> tuple[tf.Tensor, tf.Tensor]:
    """Picks the K best non-ending expansions; sentences that are done die.

    Returns:
        `(log_probs, indices)`, both `(A, K)`; indices point into the candidates.
    """
    log_probs, indices = tf.math.top_k(tf.where(ends, _NEG_INF, cands.log_probs), k=cfg.beam_size)
    n_finished = tf.reduce_sum(tf.cast(finished_scores > _NEG_INF, tf.int32), axis=1)  # (A,)
    done = (n_finished >= cfg.beam_size) | (beams.step + 1 >= beams.max_lengths)  # (A,)
    return tf.where(done[:, None], _NEG_INF, log_probs), indices


def _sentence_rows(sentences: tf.Tensor, beam_size: tf.Tensor) -> tf.Tensor:
    """Rows `(A*K,)` of the sentences' beams in a `(sentences * K, ...)` tensor."""
    return tf.reshape(sentences[:, None] * beam_size + tf.range(beam_size)[None, :], [-1])


_BY_SENTENCE = ("sentences", "max_lengths", "source_lengths", "alive_log_probs", "alive_tokens",
                "alive_rows", *_FINISHED)
_BY_ROW = ("last_tokens", "coverage", "model_state")


def _store_results(beams: _Beams, leaving: tf.Tensor) -> dict:
    """`results` with the finished hypotheses of the sentences marked in `leaving` (A,)."""
    at = tf.boolean_mask(beams.sentences, leaving)[:, None]  # (leaving, 1)
    return {name: tf.tensor_scatter_nd_update(
                beams.results[name], at, tf.boolean_mask(getattr(beams, name), leaving))
            for name in _FINISHED}


def _drop_ended(cfg: _Config, beams: _Beams) -> _Beams:
    """Removes the sentences without a live beam from the searched ones."""
    searched = tf.reduce_any(beams.alive_log_probs > _NEG_INF, axis=1)  # (A,)

    def unchanged() -> dict:
        return {name: getattr(beams, name)
                for name in (*_BY_SENTENCE, *_BY_ROW, "context", "results")}

    def drop() -> dict:
        keep = tf.cast(tf.reshape(tf.where(searched), [-1]), tf.int32)  # (A',)
        rows = _sentence_rows(keep, cfg.beam_size)  # (A'*K,)
        return {
            **{name: tf.gather(getattr(beams, name), keep) for name in _BY_SENTENCE},
            **{name: tf.nest.map_structure(lambda t: tf.gather(t, rows), getattr(beams, name))
               for name in _BY_ROW},
            "context": tf.nest.map_structure(lambda t: tf.gather(t, keep), beams.context),
            "results": _store_results(beams, tf.logical_not(searched)),
        }

    # Most steps end no sentence: the gathers (the context holds the encoder
    # memory) only run when one does.
    return beams._replace(**tf.cond(tf.reduce_all(searched), unchanged, drop))


def _no_empty_hypothesis(cfg: _Config, step: tf.Tensor, log_probs: tf.Tensor) -> tf.Tensor:
    """Forbids EOS at the first step, as fairseq's default `min_len=1`.

    With a length penalty an empty hypothesis is not penalised for its length,
    so for some inputs it outscores every translation ("I know Tom is chubby."
    came back empty at beam 5); a translation of a sentence is never empty.
    """

    def without_eos() -> tf.Tensor:
        vocab = tf.shape(log_probs)[1]
        return tf.where(tf.range(vocab)[None, :] == cfg.eos_id, _NEG_INF, log_probs)

    return tf.cond(tf.equal(step, 0), without_eos, lambda: log_probs)


# Units of 2 to 16 pieces (a word or a short phrase: the pieces are short) may not start
# a third time in a row.
LOOP_UNITS = range(2, 17)


def _no_third_repeat(beams: _Beams, log_probs: tf.Tensor) -> tf.Tensor:
    """Forbids the piece that would start a unit of `LOOP_UNITS` pieces a third time in a row.

    Far from its data the search can loop ("de l'exécution de l'exécution de
    l'exécution..."), and every beam shares the loop. A beam whose last 2m
    pieces are a unit of m pieces twice may not take the unit's first piece:
    a unit may come twice ("les éléments, les éléments"), not three times,
    and the beam leaves the loop where a copy would begin rather than inside
    one (forbidding only a copy's last piece gave "les éléns"). Units of one
    piece ("!!!", "000") and of one piece repeated ("0 0") are left alone:
    numbers and punctuation repeat by right.
    """
    history = flatten_beams(beams.alive_tokens)  # (rows, L)
    width = 2 * LOOP_UNITS[-1]
    # The last `width` pieces (clipped at the start: `_LOOP_STEPS` says which units fit).
    last = tf.gather(history, tf.maximum(beams.step - width + tf.range(width), 0), axis=1)
    same = tf.reshape(tf.equal(last[:, :, None], last[:, None, :]), [-1, width * width])
    periodic = _all_per_unit(tf.gather(same, _LOOP_PAIRS[0], axis=1), _LOOP_PAIRS[1])
    one_piece = _all_per_unit(tf.gather(same, _LOOP_SAME[0], axis=1), _LOOP_SAME[1])
    found = periodic & ~one_piece & (beams.step >= _LOOP_STEPS)[None, :]  # (rows, units)
    pieces = tf.gather(last, width - _LOOP_STEPS, axis=1)  # each unit's first piece
    where = tf.where(found)  # (bans, 2) as (row, unit)
    at = tf.stack([tf.cast(where[:, 0], tf.int32), tf.gather_nd(pieces, where)], axis=1)
    return tf.tensor_scatter_nd_update(log_probs, at, tf.fill([tf.shape(at)[0]], _NEG_INF))


def _unit_pairs(pairs_of) -> tuple[np.ndarray, np.ndarray]:
    """Flat `(j, k)` cells of the last pieces' equality matrix for every unit, and the unit
    each cell belongs to: `pairs_of(m)` lists unit m's cells."""
    width = 2 * LOOP_UNITS[-1]
    cells, units = [], []
    for u, m in enumerate(LOOP_UNITS):
        for j, k in pairs_of(m):
            cells.append((width - 2 * m + j) * width + (width - 2 * m + k))
            units.append(u)
    return np.array(cells, np.int32), np.array(units, np.int32)


# For unit m, over the last 2m pieces x: x[j] == x[j + m] (the unit twice), and
# x[j] == x[0] for j < m (the unit one piece repeated).
_LOOP_PAIRS = _unit_pairs(lambda m: [(j, j + m) for j in range(m)])
_LOOP_SAME = _unit_pairs(lambda m: [(j, 0) for j in range(1, m)])
# NumPy, not tensors: a tensor made at import would start TensorFlow's runtime before a server
# sets its thread counts.
_LOOP_STEPS = np.array([2 * m for m in LOOP_UNITS], np.int32)  # pieces a unit twice needs


def _all_per_unit(cells: tf.Tensor, units: tf.Tensor) -> tf.Tensor:
    """`(rows, cells)` bools -> `(rows, units)`: every cell of the unit is True."""
    per_unit = tf.math.unsorted_segment_min(tf.transpose(tf.cast(cells, tf.int32)), units,
                                            len(LOOP_UNITS))
    return tf.transpose(per_unit) > 0


def _search_step(step_fn: StepFn, cfg: _Config, beams: _Beams) -> _Beams:
    """One decoder step for every searched beam, then re-selection of alive and finished."""
    log_probs, model_state, attention, *query = step_fn(beams.last_tokens, beams.model_state,
                                                       beams.context)
    log_probs = _no_empty_hypothesis(cfg, beams.step, tf.cast(log_probs, tf.float32))  # (A*K, V)
    log_probs = _no_third_repeat(beams, log_probs)
    attention = tf.cast(attention, tf.float32)  # (A*K, S)
    coverage = _accumulate_coverage(beams.coverage, attention)  # (A*K, S)
    cands = _expand(cfg, beams, log_probs, coverage)
    ends = _ending(cfg, beams, cands)
    finished = _merge_finished(cfg, beams, cands, ends)
    alive_log_probs, keep = _select_alive(cfg, beams, cands, ends, finished["finished_scores"])
    parents = flat_beam_indices(gather_beams(cands.parents, keep), cfg.beam_size)  # (A*K,)
    alive_tokens = gather_beams(cands.tokens, keep)  # (A, K)
    rows = _sentence_rows(beams.sentences, cfg.beam_size)[:, None]  # (A*K, 1) in the batch
    all_rows = tf.stack([cfg.batch_size * cfg.beam_size, tf.shape(attention)[1]])
    if query:  # (A*K, D): only the searched rows, with each sentence's place among them
        vectors, places = beams.queries
        place = tf.tensor_scatter_nd_update(tf.fill([cfg.batch_size], -1),
                                            beams.sentences[:, None],
                                            tf.range(tf.shape(beams.sentences)[0]))  # (B,)
        beams = beams._replace(queries=(vectors.write(beams.step, tf.cast(query[0], tf.float32)),
                                        places.write(beams.step, place)))
    beams = beams._replace(
        step=beams.step + 1,
        last_tokens=tf.reshape(alive_tokens, [-1]),
        alive_log_probs=alive_log_probs,
        alive_tokens=gather_beams(cands.history, keep),
        alive_rows=gather_beams(cands.rows, keep),
        coverage=tf.gather(coverage, parents),
        attention=beams.attention.write(beams.step, tf.scatter_nd(rows, attention, all_rows)),
        prefix_log_probs=beams.prefix_log_probs.write(beams.step, tf.scatter_nd(
            rows, tf.reshape(beams.alive_log_probs, [-1, 1]), [all_rows[0], 1])),
        model_state=tf.nest.map_structure(lambda s: tf.gather(s, parents), model_state),
        **finished,
    )
    return _drop_ended(cfg, beams)


def _shape_invariants(beams: _Beams) -> _Beams:
    """Lets every search tensor change shape; model state keeps its trailing dims."""

    def relaxed(t: tf.Tensor) -> tf.TensorShape:
        return tf.TensorShape([None] * t.shape.rank)

    def batch_relaxed(t: tf.Tensor) -> tf.TensorShape:
        if t.shape.rank is None:
            return tf.TensorShape(None)
        return tf.TensorShape([None, *t.shape.as_list()[1:]])

    fields = {
        name: relaxed(value)
        for name, value in beams._asdict().items()
        if name not in ("step", "attention", "prefix_log_probs", "queries", "model_state",
                        "context", "results")
    }
    return _Beams(
        step=tf.TensorShape([]), attention=None, prefix_log_probs=None,
        queries=(None, None) if beams.queries else (),
        results={name: relaxed(value) for name, value in beams.results.items()},
        model_state=tf.nest.map_structure(batch_relaxed, beams.model_state),
        context=tf.nest.map_structure(batch_relaxed, beams.context),
        **fields,
    )


def _finalize(beams: _Beams, n_best: tf.Tensor, source_lengths: tf.Tensor) -> SearchResult:
    """Cuts the n-best lists to the steps run and gathers their attention rows."""
    # Sentences still searched when the loop stopped (it ran to the length limit).
    beams = beams._replace(**_store_results(beams, tf.ones_like(beams.sentences, tf.bool)))
    steps = beams.step
    batch, beam_size = tf.shape(beams.finished_scores)[0], tf.shape(beams.finished_scores)[1]
    rows = tf.transpose(beams.finished_rows[:, :n_best, :steps], [0, 2, 1])  # (B, T, N)

    def per_hypothesis(array: tf.TensorArray) -> tf.Tensor:
        """`T x (B*K, W)` step rows -> `(B, N, T, W)`, each hypothesis' own."""
        stacked = array.stack()  # (T, B*K, W)
        stacked = tf.reshape(stacked, [steps, batch, beam_size, tf.shape(stacked)[2]])
        stacked = tf.transpose(stacked, [1, 0, 2, 3])  # (B, T, K, W)
        picked = tf.gather(stacked, rows, axis=2, batch_dims=2)  # (B, T, N, W)
        return tf.transpose(picked, [0, 2, 1, 3])  # (B, N, T, W)

    attention = per_hypothesis(beams.attention)
    width = tf.shape(attention)[3]

    scores = beams.finished_scores[:, :n_best]  # (B, N)
    valid = scores > _NEG_INF  # empty slots when fewer than n_best hypotheses exist
    lengths = tf.where(valid, beams.finished_lengths[:, :n_best], 0)  # (B, N)
    in_target = tf.sequence_mask(lengths, steps)  # (B, N, T)
    in_source = tf.sequence_mask(source_lengths, width)[:, None, None, :]  # (B, 1, 1, S)
    log_probs = tf.where(valid, beams.finished_log_probs[:, :n_best], _NEG_INF)  # (B, N)
    prefixes = per_hypothesis(beams.prefix_log_probs)[..., 0]  # (B, N, T)
    return SearchResult(
        tokens=tf.where(in_target, beams.finished_tokens[:, :n_best, :steps], 0),
        lengths=lengths,
        scores=scores,
        log_probs=log_probs,
        piece_log_probs=_piece_log_probs(prefixes, log_probs, lengths, in_target),
        attention=tf.where(in_target[..., None] & in_source, attention, 0.0),
        queries=(tf.where(in_target[..., None], _hypothesis_queries(beams, n_best), 0.0)
                 if beams.queries else None),
    )


def _piece_log_probs(prefixes: tf.Tensor, totals: tf.Tensor, lengths: tf.Tensor,
                     in_target: tf.Tensor) -> tf.Tensor:
    """Each piece's log-probability `(B, N, T)` from the log-probability of the
    prefix before it `(B, N, T)` and the hypothesis' total `(B, N)`."""
    # Beyond its length a hypothesis' prefixes are other beams' (or -inf): not differenced.
    prefixes = tf.where(in_target, prefixes, 0.0)
    after = tf.concat([prefixes[:, :, 1:], tf.zeros_like(prefixes[:, :, :1])], axis=2)
    is_last = tf.equal(tf.range(tf.shape(prefixes)[2]), lengths[:, :, None] - 1)  # (B, N, T)
    after = tf.where(is_last, totals[:, :, None], after)  # the prefix that each piece ends
    return tf.where(in_target, after - prefixes, 0.0)


def _hypothesis_queries(beams: _Beams, n_best: tf.Tensor) -> tf.Tensor:
    """The step vector of every piece of every kept hypothesis, `(B, N, T, D)`."""
    vectors, places = beams.queries
    flat = vectors.concat()  # (sum over steps of A*K, D)
    places = places.stack()  # (T, B)
    beam_size = tf.shape(beams.finished_scores)[1]
    offsets = tf.cumsum(tf.reduce_sum(tf.cast(places >= 0, tf.int32), axis=1) * beam_size,
                        exclusive=True)  # (T,) first row of each step
    place = tf.transpose(places)[:, None, :]  # (B, 1, T)
    steps = tf.shape(places)[0]
    beam = beams.finished_rows[:, :n_best, :steps]  # (B, N, T) the beam of each piece's step
    index = offsets[None, None, :] + place * beam_size + beam
    searched = place >= 0  # (B, 1, T)
    picked = tf.gather(flat, tf.where(searched, index, 0))  # (B, N, T, D)
    return tf.where(searched[..., None], picked, 0.0)


def beam_search(
    step_fn: StepFn,
    initial_state: Nested,
    *,
    batch_size: IntLike,
    beam_size: IntLike,
    max_lengths: tf.Tensor,
    source_lengths: tf.Tensor,
    bos_id: IntLike,
    eos_id: IntLike,
    length_penalty: FloatLike = _DEFAULTS.length_penalty,
    coverage_penalty: FloatLike = _DEFAULTS.coverage_penalty,
    n_best: int | tf.Tensor = _DEFAULTS.n_best,
    context: Nested = (),
    step_queries: bool = False,
) -> SearchResult:
    """Finds the `n_best` highest-scoring translations of every sentence.

    Args:
        step_fn: `(tokens, state, context) -> (log_probs, new_state,
            attention)`, see the module docstring.
        initial_state: nested tensors, each `(batch * beam_size, ...)`
            (already tiled with `tile_beams`), reordered along the beams.
        batch_size: Python int or scalar int32 tensor.
        beam_size: Python int or scalar int32 tensor; 1 is greedy search.
        max_lengths: int32 `(batch,)`, the most target tokens (EOS included)
            per sentence; values below 1 count as 1.
        source_lengths: int32 `(batch,)`; source positions at or beyond the
            length are padding (ignored by the coverage penalty, zeroed in
            the returned attention).
        bos_id: token fed at the first step.
        eos_id: token that ends a hypothesis.
        length_penalty: alpha of lp(Y); 0 ranks by raw log-probability.
        coverage_penalty: beta of cp(X; Y); 0 disables it.
        n_best: hypotheses returned per sentence, between 1 and `beam_size`.
        context: nested tensors, each `(batch, ...)`, one row per sentence,
            that the step function reads but does not change (encoder
            memory); the step gets the rows of the sentences still searched.
        step_queries: the step function returns a fourth value, `(rows, D)`,
            kept for every piece (`SearchResult.queries`).

    Returns:
        A `SearchResult`; T is the number of steps run, at most
        `max(max_lengths)`. If a sentence has fewer than `n_best` possible
        hypotheses, the missing ones have score -inf and length 0.
    """
    checks = _check_sizes(beam_size, n_best)
    with tf.control_dependencies(checks):
        cfg = _Config(
            beam_size=tf.convert_to_tensor(beam_size, tf.int32),
            batch_size=tf.convert_to_tensor(batch_size, tf.int32),
            eos_id=tf.convert_to_tensor(eos_id, tf.int32),
            alpha=tf.convert_to_tensor(length_penalty, tf.float32),
            beta=tf.convert_to_tensor(coverage_penalty, tf.float32),
        )
        max_lengths = tf.maximum(tf.cast(max_lengths, tf.int32), 1)
        source_lengths = tf.cast(source_lengths, tf.int32)
    # max(..., 1) keeps an empty batch to a single (empty) step.
    limit = tf.maximum(tf.reduce_max(max_lengths), 1)
    beams = _initial_beams(
        cfg, bos_id, limit, max_lengths, source_lengths, initial_state, context, step_queries
    )

    def keep_going(beams: _Beams) -> tf.Tensor:
        # A sentence without a live beam has left `sentences` (see _drop_ended).
        searched = tf.size(beams.sentences) > 0
        return tf.equal(beams.step, 0) | ((beams.step < limit) & searched)

    (beams,) = tf.while_loop(
        keep_going,
        lambda beams: (_search_step(step_fn, cfg, beams),),
        (beams,),
        shape_invariants=(_shape_invariants(beams),),
        maximum_iterations=limit,
    )
    return _finalize(beams, tf.convert_to_tensor(n_best, tf.int32), source_lengths)
