"""Glossary terms by constrained beam search: method (b) of the glossary issue, measured.

A measurement harness, not a served feature: nothing here is exported, served or
imported by the package. It decodes the shipped model's own weights (the Keras
model `module_from_export` rebuilds from the export) with a search written in
plain Python and NumPy around the model's encoder and decoder step (each called
as a `tf.function`, one step per call, batch = the beam of one sentence), and
compares it on the WMT 2021 terminology dev set with method (a), which ships
(`nmt.documents.terminology.apply_terms`: the aligned target words replaced by
the glossary term), with `bench/glossary.py`'s data, glossaries and scorers.

The search is Dynamic Beam Allocation (Post & Vilar 2018, "Fast Lexically
Constrained Decoding with Dynamic Beam Allocation for Neural Machine
Translation"; Hu et al. 2019, "Improved Lexically Constrained Decoding for
Translation and Monolingual Rewriting", vectorise it) over the project's beam
search (`nmt.inference.search`: K alive and K finished hypotheses, the top 2K
expansions a step, the GNMT length penalty without the coverage penalty, as
the defaults decode, no EOS at the first step), so that
without constraints it finds exactly what that search finds:

- a constraint is one glossary term occurring in the source; it is met when
  the hypothesis writes one of its forms as SentencePiece pieces, followed by
  the end of the word (a piece starting a new word, punctuation, or EOS: the
  glossary matches whole words, and so does the scorer). A form is the term as
  the glossary writes it (`french_plural` for a plural source, as (a) writes
  it), and (but in the `--single-form-beam` row) every French form the dev
  set allows for it;
  each written as is, after an elided article (`l'infection` is
  `▁l ' in f e c tion`, so `infection` has a variant `in f e c tion` that may
  only follow a piece ending in an apostrophe), and capitalised where the term
  starts the source sentence (as (a) capitalises it);
- each hypothesis tracks which constraints it met and the one it is writing;
  when the next piece differs from every form it was writing, that partial
  match is abandoned (the piece may start another);
- candidates are the top 2K expansions, plus, for every alive hypothesis, the
  pieces that start or continue an unmet constraint and its single best piece;
- the K alive beams are allocated into banks by the number of constraint
  pieces written (a met constraint counts its longest form's pieces), as Sockeye's
  `get_bank_sizes` does, the best candidates of each bank filling its slots;
- EOS is allowed only to a hypothesis that has met every constraint; one cut
  at the length limit (the model's default, 2 x source pieces + 10) finishes
  anyway, and ranks after every hypothesis that met them.

Printed: term exact match, window overlap, BLEU and chrF (`bench/glossary.py`'s
definitions), the sentences whose best hypothesis missed a constraint, and
sentences per second, for: no glossary (the exported graph, beam 5), (a), the
same Python search without constraints (what the harness itself costs, and
whether it finds the exported translations), (b) at each beam size, (b) with
the glossary's form only (the information (a) has), and each (b) followed by
(a) for the terms it missed (its word links from the model's forced alignment
of the constrained output). A sentence without a term is decoded as without a
glossary: every (b) row has the unconstrained Python search's output (beam 5)
and time for it.

    python bench/constrained_decoding.py [--model models/en-fr] [--data ../shared/data]
        [--set dev] [--limit N] [--beams 5 10 20] [--single-form-beam 5]
        [--cache FILE] [--json FILE]

`--cache` keeps the exported graph's translations as `bench/glossary.py --cache`
does (the same file format); the searches here are always run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.glossary import (  # noqa: E402
    TERMINOLOGY,
    Translations,
    glossary_of,
    positions,
    read_set,
    score,
    tokens,
)
from bench.inputs import add_model_and_data_arguments, machine  # noqa: E402
from nmt.documents.glossary import Glossary  # noqa: E402
from nmt.documents.terminology import (  # noqa: E402  (_written: (a)'s own rule)
    _written,
    apply_terms,
    french_plural,
)
from nmt.types import DecodeOptions  # noqa: E402

_NEG_INF = float("-inf")
WORD_START = "\u2581"
# First letters before which French elides `le`, `la`, `de`... (`l'infection`).
_ELIDED_BEFORE = "aàâäeéèêëiîïoôöuùûüyhAÀÂÄEÉÈÊËIÎÏOÔÖUÙÛÜYH"
_ELISION = "l'"  # tokenized before a form, then cut off, for its after-apostrophe pieces


# ---------------------------------------------------------------------------------------------
# Constraints and a hypothesis' progress through them.


class Form(NamedTuple):
    """One way of writing a constraint: its pieces, and whether it may only start after a
    piece that ends in an apostrophe (its pieces as tokenized after `l'`)."""

    pieces: tuple[int, ...]
    after_apostrophe: bool = False


class Constraint(NamedTuple):
    """A term the translation must contain: met by any one of its forms."""

    forms: tuple[Form, ...]

    @property
    def credit(self) -> int:
        """Pieces a met constraint counts for in the banks: its longest form's."""
        return max(len(form.pieces) for form in self.forms)


class PieceKinds(NamedTuple):
    """What the search needs to know of each target piece, `(V,)` bools."""

    boundary: np.ndarray  # ends the word before it: starts a word, is punctuation, or EOS
    apostrophe: np.ndarray  # ends with an apostrophe (an elided article may precede a form)


class Progress(NamedTuple):
    """A hypothesis' constraints: which it met, and the forms it is writing.

    `active` holds the `(constraint, form)` pairs whose first `depth` pieces are the
    hypothesis' last ones; `pending` the constraints a form of which it has just
    completed, met once the word ends.
    """

    met: tuple[bool, ...]
    active: frozenset = frozenset()
    pending: frozenset = frozenset()
    depth: int = 0


def piece_kinds(pieces: Sequence[str], eos_id: int) -> PieceKinds:
    """`PieceKinds` of a vocabulary given as its pieces' strings (index = id)."""
    boundary = np.array([p.startswith(WORD_START) or not p[:1].isalnum() for p in pieces])
    boundary[eos_id] = True
    apostrophe = np.array([p.endswith("'") for p in pieces])
    return PieceKinds(boundary, apostrophe)


def advance(constraints: Sequence[Constraint], kinds: PieceKinds, progress: Progress,
            previous: int, token: int) -> Progress:
    """`progress` after the hypothesis (whose last piece is `previous`) writes `token`."""
    met, active, pending, depth = progress
    if pending and kinds.boundary[token]:
        i = min(pending)
        return _start(constraints, kinds, met[:i] + (True,) + met[i + 1:], previous, token)
    going = {(i, f) for i, f in active if constraints[i].forms[f].pieces[depth] == token}
    if going:
        return _matched(constraints, met, going, depth + 1)
    return _start(constraints, kinds, met, previous, token)  # abandoned, or nothing begun


def _start(constraints: Sequence[Constraint], kinds: PieceKinds, met: tuple[bool, ...],
           previous: int, token: int) -> Progress:
    """The forms of unmet constraints that `token` begins (none: only `met`)."""
    begun = {(i, f) for i, constraint in enumerate(constraints) if not met[i]
             for f, form in enumerate(constraint.forms)
             if form.pieces[0] == token and (not form.after_apostrophe
                                             or kinds.apostrophe[previous])}
    return _matched(constraints, met, begun, 1) if begun else Progress(met)


def _matched(constraints: Sequence[Constraint], met: tuple[bool, ...], pairs: set,
             depth: int) -> Progress:
    """`depth` pieces of the forms `pairs` written: complete ones pending, the rest active."""
    length = {(i, f): len(constraints[i].forms[f].pieces) for i, f in pairs}
    return Progress(met, frozenset(p for p in pairs if length[p] > depth),
                    frozenset(i for i, f in pairs if length[i, f] == depth), depth)


def wanted(constraints: Sequence[Constraint], kinds: PieceKinds, progress: Progress,
           previous: int) -> set[int]:
    """The pieces that continue the forms being written or begin an unmet constraint."""
    out = {constraints[i].forms[f].pieces[progress.depth] for i, f in progress.active}
    for i, constraint in enumerate(constraints):
        if not progress.met[i]:
            out.update(form.pieces[0] for form in constraint.forms
                       if not form.after_apostrophe or kinds.apostrophe[previous])
    return out


def bank(constraints: Sequence[Constraint], progress: Progress) -> int:
    """Constraint pieces written: the credit of each met constraint, plus that of one
    written in full whose word has not ended yet, else the pieces of the one being
    written (at most its credit - 1)."""
    done = sum(c.credit for c, met in zip(constraints, progress.met, strict=True) if met)
    if progress.pending:
        return done + min(constraints[i].credit for i in progress.pending)
    if progress.active:
        least = min(constraints[i].credit for i, _ in progress.active)
        done += min(progress.depth, least - 1)
    return done


def bank_sizes(n_banks: int, beam_size: int, counts: Sequence[int]) -> list[int]:
    """The beam split evenly over the banks, the remainder to the last (most constraint
    pieces met); then, from the last bank down, slots a bank has no candidate for go to
    the bank below (from the first: to the last). Sockeye's `get_bank_sizes`."""
    size = beam_size // n_banks
    sizes = [size] * n_banks
    sizes[-1] += beam_size - size * n_banks
    for i in reversed(range(n_banks)):
        over = sizes[i] - counts[i]
        if over > 0:
            sizes[i] -= over
            sizes[(i - 1) % n_banks] += over
    return sizes


# ---------------------------------------------------------------------------------------------
# The search.

StepFn = Callable[[np.ndarray, Any], tuple[np.ndarray, Any]]  # (tokens, state) -> (lp, state)


class Found(NamedTuple):
    """A finished hypothesis: pieces without EOS, total log-probability, the score
    `log_prob / lp(length)` (length with EOS), and whether it met every constraint."""

    tokens: tuple[int, ...]
    log_prob: float
    score: float
    met: bool


class _Beam(NamedTuple):
    tokens: tuple[int, ...]
    log_prob: np.float32  # -inf: a dead beam
    progress: Progress
    last: int  # the last piece (BOS at the start)


class _Candidate(NamedTuple):
    log_prob: np.float32
    parent: int
    token: int
    progress: Progress
    ends: bool
    met: bool  # every constraint met, if it ends here


def length_penalty(length: int, alpha: float) -> np.float32:
    """lp(Y) = ((5 + |Y|) / 6) ** alpha in float32, as `gnmt_length_penalty`."""
    return ((np.float32(5) + np.float32(length)) / np.float32(6)) ** np.float32(alpha)


def top_expansions(log_probs: np.ndarray, beam_log_probs: np.ndarray, n: int
                   ) -> list[tuple[np.float32, int, int]]:
    """The n best `(log_prob, beam, token)`, best first, ties towards the lower
    `beam * V + token` (as `top_k_expansions`)."""
    totals = (beam_log_probs[:, None] + log_probs).ravel()  # (K*V,) float32
    n = min(n, totals.size)
    threshold = totals[np.argpartition(-totals, n - 1)[:n]].min()
    at_least = np.flatnonzero(totals >= threshold)  # ascending: a stable sort keeps ties so
    best = at_least[np.argsort(-totals[at_least], kind="stable")[:n]]
    vocab = log_probs.shape[1]
    return [(totals[i], int(i // vocab), int(i % vocab)) for i in best]


def _candidates(beams: list[_Beam], log_probs: np.ndarray, constraints: Sequence[Constraint],
                kinds: PieceKinds | None, step: int, max_length: int, eos_id: int
                ) -> list[_Candidate]:
    """The top 2K expansions, and with constraints each alive beam's constraint pieces and
    best piece; sorted by log-probability (ties: lower beam, then token)."""
    k = len(beams)
    alive = np.array([b.log_prob for b in beams], np.float32)  # (K,)
    found = {(parent, token): value
             for value, parent, token in top_expansions(log_probs, alive, 2 * k)}
    if constraints:
        for parent, beam in enumerate(beams):
            if beam.log_prob == _NEG_INF:
                continue
            extra = wanted(constraints, kinds, beam.progress, beam.last)
            extra.add(int(np.argmax(log_probs[parent])))
            for token in extra:
                found.setdefault((parent, token), alive[parent] + log_probs[parent, token])
    order = sorted(found.items(), key=lambda item: (-item[1], item[0]))
    out = []
    for (parent, token), value in order:
        beam = beams[parent]
        ends = token == eos_id or step + 1 >= max_length
        progress, met = beam.progress, True
        if constraints:
            progress = advance(constraints, kinds, progress, beam.last, token)
            if ends:  # a hypothesis cut at the limit ends as if with EOS
                met = all(progress.met if token == eos_id else
                          advance(constraints, kinds, progress, token, eos_id).met)
        out.append(_Candidate(value, parent, token, progress, ends, met))
    return out


def _merge_finished(finished: list[tuple], cands: list[_Candidate], beams: list[_Beam],
                    constraints: Sequence[Constraint], step: int, alpha: float, k: int,
                    eos_id: int) -> list[tuple]:
    """The K best finished `(met, score, Found)`: the old ones and the ending candidates
    ranked in the top K of their bank (without constraints: of all candidates)."""
    seen: dict[int, int] = {}
    penalty = length_penalty(step + 1, alpha)
    new = []
    for cand in cands:
        group = bank(constraints, cand.progress) if constraints else 0
        rank = seen[group] = seen.get(group, -1) + 1
        if cand.ends and rank < k and cand.log_prob > _NEG_INF:
            body = beams[cand.parent].tokens + (() if cand.token == eos_id else (cand.token,))
            found = Found(body, float(cand.log_prob), float(cand.log_prob / penalty), cand.met)
            new.append((cand.met, found.score, found))
    merged = finished + new  # old first: a tie keeps the old hypothesis, as `top_k` does
    return sorted(merged, key=lambda item: (not item[0], -item[1]))[:k]


def _select_alive(cands: list[_Candidate], constraints: Sequence[Constraint], k: int
                  ) -> list[_Candidate]:
    """The K alive beams among the non-ending candidates, allocated into banks; fewer
    when there are fewer candidates."""
    going = [c for c in cands if not c.ends and c.log_prob > _NEG_INF]
    if not constraints:
        return going[:k]
    n_banks = sum(c.credit for c in constraints) + 1
    banks = [bank(constraints, c.progress) for c in going]
    sizes = bank_sizes(n_banks, k, np.bincount(banks, minlength=n_banks).tolist())
    chosen = []
    for cand, group in zip(going, banks, strict=True):
        if sizes[group] > 0:
            chosen.append(cand)
            sizes[group] -= 1
    return chosen


def _reorder(state: Any, parents: np.ndarray) -> Any:
    import tensorflow as tf

    return tf.nest.map_structure(lambda t: tf.gather(t, parents), state)


def constrained_beam_search(
    step_fn: StepFn, state: Any, *, beam_size: int, max_length: int, bos_id: int,
    eos_id: int, constraints: Sequence[Constraint] = (), kinds: PieceKinds | None = None,
    alpha: float = DecodeOptions().length_penalty, n_best: int = 1,
    reorder: Callable[[Any, np.ndarray], Any] = _reorder,
) -> list[Found]:
    """Dynamic Beam Allocation over a one-sentence step function (module docstring).

    Args:
        step_fn: `(tokens (K,), state) -> (log_probs (K, V), state)`, log-probabilities
            already normalised (and -inf where a piece is banned).
        state: the model state of K rows (already tiled), reordered with `reorder`.
        beam_size: K.
        max_length: most pieces, EOS included (at least 1).
        constraints: the terms to write; none is the plain beam search.
        kinds: the vocabulary's `PieceKinds` (needed with constraints).
        alpha: the length penalty's exponent.

    Returns:
        Up to `n_best` hypotheses, those that met every constraint first, then by score.
    """
    if constraints and kinds is None:
        raise ValueError("constraints need the vocabulary's PieceKinds. Received: kinds=None")
    if not 1 <= n_best <= beam_size:
        raise ValueError(f"n_best must be between 1 and beam_size. Received: n_best={n_best!r}")
    start = Progress((False,) * len(constraints))
    beams = [_Beam((), np.float32(0 if k == 0 else _NEG_INF), start, bos_id)
             for k in range(beam_size)]
    last, finished = np.full(beam_size, bos_id, np.int32), []
    max_length = max(max_length, 1)
    for step in range(max_length):
        log_probs, state = step_fn(last, state)
        log_probs = np.array(log_probs, np.float32)  # (K, V), a copy: masked below
        log_probs[[b.log_prob == _NEG_INF for b in beams]] = _NEG_INF
        if step == 0:
            log_probs[:, eos_id] = _NEG_INF  # never an empty translation (search.py)
        if constraints:
            _block_eos(log_probs, beams, constraints, kinds, eos_id)
        cands = _candidates(beams, log_probs, constraints, kinds, step, max_length, eos_id)
        finished = _merge_finished(finished, cands, beams, constraints, step, alpha,
                                   beam_size, eos_id)
        chosen = _select_alive(cands, constraints, beam_size)
        if len(finished) >= beam_size or step + 1 >= max_length or not chosen:
            break
        parents = np.array([c.parent for c in chosen]
                           + [chosen[0].parent] * (beam_size - len(chosen)), np.int32)
        beams = [_Beam(beams[c.parent].tokens + (c.token,), c.log_prob, c.progress, c.token)
                 for c in chosen]
        beams += [beams[0]._replace(log_prob=np.float32(_NEG_INF))] * (beam_size - len(chosen))
        last = np.array([c.token for c in chosen] + [eos_id] * (beam_size - len(chosen)),
                        np.int32)
        state = reorder(state, parents)
    return [found for _, _, found in finished[:n_best]]


def _block_eos(log_probs: np.ndarray, beams: list[_Beam], constraints: Sequence[Constraint],
               kinds: PieceKinds, eos_id: int) -> None:
    """EOS to -inf for every beam that would end with a constraint unmet."""
    for k, beam in enumerate(beams):
        if not all(advance(constraints, kinds, beam.progress, beam.last, eos_id).met):
            log_probs[k, eos_id] = _NEG_INF


# ---------------------------------------------------------------------------------------------
# The shipped model, and a sentence's constraints.


class ShippedModel:
    """The export's Keras model, its encoder and decoder step as `tf.function`s (each
    call: one sentence, or one step of its K beams), and its target tokenizer."""

    def __init__(self, version_dir, precision: str = "float32"):
        import tensorflow as tf

        from nmt.data.tokenizer import BOS_ID, EOS_ID
        from nmt.inference import fast_encoder
        from nmt.inference.export import module_from_export
        from nmt.inference.search import tile_beams
        from nmt.types import recommended_options

        module = module_from_export(version_dir, precision)
        if module.shortlist is not None:
            raise SystemExit(f"{version_dir} searches a shortlist; this harness searches the "
                             "whole vocabulary: use an export without one")
        self.module, self.bos_id, self.eos_id = module, BOS_ID, EOS_ID
        self.options = recommended_options(module.metadata)
        model, dtype = module.model, module.matmul_dtype
        kernels = model.decoder.cast_kernels(dtype)  # once, as `_search` does
        banned = module._banned_specials()  # PAD and BOS: -inf, as in the export
        vocab = module.target_tokenizer.vocab_size
        pieces = module.target_tokenizer.id_to_piece(tf.range(vocab)).numpy()
        self.kinds = piece_kinds([p.decode("utf-8") for p in pieces], EOS_ID)

        @tf.function(reduce_retracing=True)
        def encode(sentence, beam_size):
            source = module._encode_sources(sentence[None])  # (1, S), as the export reads it
            values, mask = fast_encoder.encode(model.encoder, source, dtype)
            memory = model.prepare_memory(source, values, mask)
            return memory, tile_beams(model.initial_state(memory), beam_size), tf.shape(source)[1]

        @tf.function(reduce_retracing=True)
        def step(tokens, parents, state, memory):
            # The search's reordering of the beams, in the same call (saves one per step).
            state = tf.nest.map_structure(lambda t: tf.gather(t, parents), state)
            logits, state, _ = model.decode_step(tokens, state, memory, kernels)
            return tf.nn.log_softmax(logits + banned), state  # (K, V)

        self._encode, self._step, self._tf = encode, step, tf
        self._pieces: dict[str, tuple[int, ...]] = {}

    def search(self, sentence: str, beam_size: int, constraints: Sequence[Constraint] = ()
               ) -> tuple[str, Found]:
        """The best translation of `sentence` and its hypothesis."""
        tf = self._tf
        memory, state, length = self._encode(tf.constant(sentence), tf.constant(beam_size))
        # As the export: ceil(source pieces, EOS included, x ratio) + offset.
        max_length = math.ceil(int(length) * self.options.max_length_ratio) + \
            self.options.max_length_offset

        def step_fn(tokens, state_and_parents):
            state, parents = state_and_parents
            log_probs, state = self._step(tf.constant(tokens), tf.constant(parents), state,
                                          memory)
            return log_probs.numpy(), state

        [best] = constrained_beam_search(
            step_fn, (state, np.arange(beam_size, dtype=np.int32)), beam_size=beam_size,
            max_length=max_length, bos_id=self.bos_id, eos_id=self.eos_id,
            constraints=constraints, kinds=self.kinds, alpha=self.options.length_penalty,
            reorder=lambda state, parents: (state, parents))  # gathered in `step`
        text = self.module.target_tokenizer.detokenize(tf.constant(best.tokens or (0,), tf.int32))
        return text.numpy().decode("utf-8"), best

    def pieces(self, text: str) -> tuple[int, ...]:
        """The target pieces of `text` (normalised as the tokenizer does)."""
        if text not in self._pieces:
            ids = self.module.target_tokenizer.tokenize(self._tf.constant(text)).numpy()
            self._pieces[text] = tuple(int(i) for i in ids)
        return self._pieces[text]


def forms_of(text: str, pieces: Callable[[str], tuple[int, ...]], first: bool = False,
             unknown: int = 1) -> list[Form]:
    """The forms of a French term: as written, after an elided article, and capitalised
    when it is the `first` words of the source (as (a) capitalises it); none holding an
    unknown piece. Spaces around apostrophes are dropped (the dev set is tokenized:
    `s ' est`; the scorer reads `s'est` alike)."""
    text = re.sub(r"\s*'\s*", "'", text.strip())
    forms = [Form(pieces(text))]
    if first:
        forms.append(Form(pieces(text[:1].upper() + text[1:])))
    if text[:1] in _ELIDED_BEFORE:
        article, whole = pieces(_ELISION), pieces(_ELISION + text)
        if whole[:len(article)] == article:
            forms.append(Form(whole[len(article):], after_apostrophe=True))
    return [f for f in dict.fromkeys(forms) if f.pieces and unknown not in f.pieces]


def sentence_constraints(row: dict, glossary: Glossary, pieces: Callable[[str], tuple[int, ...]],
                         any_form: bool) -> list[Constraint]:
    """One constraint per glossary term found in the source (as (a) finds them): the term
    as (a) writes it, and with `any_form` every French form the dev set gives it."""
    out = []
    for match in glossary.find(row["source"]):
        texts = [_written(match)] + (dev_forms(row, match.entry.source) if any_form else [])
        first = not row["source"][:match.start].strip()
        forms = [f for text in dict.fromkeys(texts) for f in forms_of(text, pieces, first)]
        if forms:
            out.append(Constraint(tuple(dict.fromkeys(forms))))
    return out


def dev_forms(row: dict, source: str) -> list[str]:
    """The French forms the dev set allows for the term `source` of `row`."""
    key = source.casefold()
    return [form for term in row["terms"] if term["source"].casefold() == key
            for form in term["targets"]]


def missed_terms(row: dict, glossary: Glossary, text: str, any_form: bool) -> Glossary:
    """The entries of `glossary` of which `text` holds no form (the glossary's, in the
    singular or the plural, and with `any_form` the dev set's), for (a) to place."""
    words = tokens(text)
    missed = []
    for entry in glossary.entries:
        forms = [entry.target, french_plural(entry.target)]
        forms += dev_forms(row, entry.source) if any_form else []
        if not any(positions(form, words) for form in forms):
            missed.append(entry)
    return Glossary.from_entries(missed, inflect=glossary.inflect)


# ---------------------------------------------------------------------------------------------
# The comparison.


class Decoded(NamedTuple):
    """A Python search over the set: texts, seconds per sentence, constraints missed."""

    texts: list[str]
    seconds: list[float]
    unmet: int


def decode_all(model: ShippedModel, rows: Sequence[dict], beam_size: int,
               constraints: Sequence[Sequence[Constraint]] | None,
               fallback: Decoded | None = None) -> Decoded:
    """Every sentence searched (with its constraints); a sentence without any takes
    `fallback`'s text and time when given (the search would be the same)."""
    texts, seconds, unmet = [], [], 0
    for n, row in enumerate(rows):
        wanted_here = constraints[n] if constraints else ()
        if not wanted_here and fallback is not None:
            texts.append(fallback.texts[n])
            seconds.append(fallback.seconds[n])
            continue
        started = time.perf_counter()
        text, best = model.search(row["source"], beam_size, wanted_here)
        seconds.append(time.perf_counter() - started)
        texts.append(text)
        unmet += not best.met
    return Decoded(texts, seconds, unmet)


def with_aligned_terms(rows: Sequence[dict], texts: Sequence[str], glossaries: Sequence[Glossary],
                       align: Callable, any_form: bool) -> tuple[list, float]:
    """(a) applied to `texts` for the terms they miss (`missed_terms`; word links by forced
    alignment): results, seconds taken."""
    started = time.perf_counter()
    glossaries = [missed_terms(row, glossary, text, any_form)
                  for row, glossary, text in zip(rows, glossaries, texts, strict=True)]
    needed = [n for n, g in enumerate(glossaries) if g.find(rows[n]["source"])]
    links = {}
    for at in range(0, len(needed), 32):
        chunk = needed[at:at + 32]
        aligned = align([rows[n]["source"] for n in chunk], [texts[n] for n in chunk])
        links.update({n: t.best.word_alignment for n, t in zip(chunk, aligned, strict=True)})
    applied = [apply_terms(row["source"], text, links.get(n, ()), glossaries[n])
               for n, (row, text) in enumerate(zip(rows, texts, strict=True))]
    return applied, time.perf_counter() - started


def run(rows: Sequence[dict], translator, model: ShippedModel, beams: Sequence[int],
        single_form_beam: int, cache=None, log: Callable[[str], None] = print) -> dict:
    """Every method on `rows`; per method its scores (`bench.glossary.score`), `unmet`
    and `outputs`."""
    sources = [row["source"] for row in rows]
    glossaries = [glossary_of(row) for row in rows]
    translations = Translations(translator.translate, cache)
    exported = translations(sources)
    graph_seconds = translations.seconds(sources)
    found: dict[str, dict] = {}

    def record(name: str, outputs: list[str], seconds: float, applied=(), unmet=None):
        found[name] = {**score(rows, outputs, seconds, applied), "unmet": unmet,
                       "outputs": list(outputs)}
        log(_line(name, found[name]))

    log(_header())
    record("no glossary (exported graph, beam 5)", [t for t, _ in exported], graph_seconds)
    started = time.perf_counter()
    applied = [apply_terms(s, t, links, g)
               for s, (t, links), g in zip(sources, exported, glossaries, strict=True)]
    record("(a) aligned words replaced", [a.text for a in applied],
           graph_seconds + time.perf_counter() - started, applied)
    plain = decode_all(model, rows, 5, None)
    record("Python search, no constraints, beam 5", plain.texts, sum(plain.seconds), unmet=0)
    pairs = list(zip(plain.texts, [text for text, _ in exported], strict=True))
    found["same as exported"] = sum(a == b for a, b in pairs)
    # The graph's text and the tokenizer's `detokenize` may space a sentence differently.
    found["same, spaces aside"] = sum(a.split() == b.split() for a, b in pairs)
    variants = [(f"beam {k}", k, True) for k in beams]
    if single_form_beam:
        variants.append((f"beam {single_form_beam}, glossary form only", single_form_beam,
                         False))
    for label, k, any_form in variants:
        constraints = [sentence_constraints(row, glossary, model.pieces, any_form)
                       for row, glossary in zip(rows, glossaries, strict=True)]
        # A sentence without a term is decoded as without a glossary: beam 5.
        decoded = decode_all(model, rows, k, constraints, plain)
        record(f"(b) DBA, {label}", decoded.texts, sum(decoded.seconds), unmet=decoded.unmet)
        both, extra = with_aligned_terms(rows, decoded.texts, glossaries, translator.align,
                                         any_form)
        record(f"(b)+(a), {label}", [a.text for a in both], sum(decoded.seconds) + extra,
               both, unmet=decoded.unmet)
    found["constrained sentences"] = sum(bool(g.find(s)) for g, s in zip(glossaries, sources,
                                                                          strict=True))
    return found


def _header() -> str:
    return (f"  {'method':<44} {'terms':>7}  {'window':>6}  {'BLEU':>6}  {'chrF':>6}  "
            f"{'unmet':>5}  {'sent/s':>7}")


def _line(name: str, s: dict) -> str:
    unmet = "" if s["unmet"] is None else str(s["unmet"])
    return (f"  {name:<44} {100 * s['matched'] / max(s['terms'], 1):6.1f}%  "
            f"{s['window']:6.3f}  {s['bleu']:6.2f}  {s['chrf']:6.2f}  {unmet:>5}  "
            f"{s['per_second']:7.2f}")


def _warm_up(model: ShippedModel, beams: Iterable[int]) -> None:
    """Traces the step and the encoder for two lengths at each beam size (not timed)."""
    for k in sorted({5, *beams} - {0}):
        for sentence in ("Warm up.", "The first call traces the graph, the second relaxes it."):
            model.search(sentence, k)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_and_data_arguments(parser)
    parser.add_argument("--set", default="dev", choices=("dev", "test"),
                        help="dev (default; tune on it) or test (a final figure only)")
    parser.add_argument("--limit", type=int, default=0, help="the first N sentences (0: all)")
    parser.add_argument("--beams", type=int, nargs="+", default=[5, 10, 20],
                        help="beam sizes of (b), any dev-set form allowed (default: 5 10 20)")
    parser.add_argument("--single-form-beam", type=int, default=5,
                        help="beam of (b) with the glossary's form only (0: not run)")
    parser.add_argument("--cache", type=Path,
                        help="JSON file keeping the exported graph's translations")
    parser.add_argument("--json", type=Path,
                        help="write the scores and every output here")
    args = parser.parse_args(argv)

    rows = read_set(args.data, args.set, args.limit)
    from nmt.inference.translator import Translator

    translator = Translator.load(args.model, precision="float32")
    translator.translate(["Warm up."])  # the first calls trace the graphs: not timed
    translator.align(["Warm up."], ["Échauffement."])
    model = ShippedModel(translator.info.path, "float32")
    _warm_up(model, [*args.beams, args.single_form_beam])
    print(f"model {translator.info.path}, float32; {machine()}")
    terms = sum(len(row["terms"]) for row in rows)
    print(f"{TERMINOLOGY}/{args.set}.jsonl: {len(rows)} sentences, {terms} term occurrences")
    started = time.perf_counter()
    found = run(rows, translator, model, args.beams, args.single_form_beam, args.cache)
    print(f"  {found['constrained sentences']} sentences with a glossary term; the Python search "
          f"without constraints wrote the exported translation for {found['same as exported']} "
          f"of {len(rows)} ({found['same, spaces aside']} spaces aside); unmet: sentences "
          f"whose best hypothesis missed a constraint (cut at the length limit); "
          f"{time.perf_counter() - started:.0f} s")
    if args.json:
        out = {"model": translator.info.path, "machine": machine(), "set": args.set,
               "sentences": len(rows), "terms": terms, **found}
        args.json.write_text(json.dumps(out, ensure_ascii=False, indent=1, default=dict),
                             encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
