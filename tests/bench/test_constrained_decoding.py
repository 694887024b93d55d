"""`bench/constrained_decoding.py`: Dynamic Beam Allocation on a fake model whose pieces
read as French words, so that a failure shows the sentence it wrote."""

import numpy as np
import pytest
import tensorflow as tf

from bench.constrained_decoding import (
    Constraint,
    Form,
    Progress,
    _Candidate,
    _select_alive,
    advance,
    bank,
    bank_sizes,
    constrained_beam_search,
    forms_of,
    main,
    missed_terms,
    piece_kinds,
    sentence_constraints,
)
from bench.glossary import glossary_of
from nmt.inference.search import beam_search, tile_beams

PIECES = ["<pad>", "<unk>", "<s>", "</s>", "▁le", "▁chat", "▁noir", "▁dort", "▁ma", "s",
          "que", "▁l", "'", "in", "fection", "▁in", ".", "▁Le", "▁Ma"]
PAD, UNK, BOS, EOS = 0, 1, 2, 3
ID = {piece: i for i, piece in enumerate(PIECES)}
KINDS = piece_kinds(PIECES, EOS)


def ids(text: str) -> tuple[int, ...]:
    """`"▁ma s que"` -> the ids of those pieces."""
    return tuple(ID[piece] for piece in text.split())


def spell(tokens) -> str:
    """Pieces as text: `▁le ▁chat .` -> `le chat.`."""
    return "".join(PIECES[t] for t in tokens).replace("▁", " ").strip()


def term(*forms: str) -> Constraint:
    return Constraint(tuple(Form(ids(form)) for form in forms))


def bigram(rules: dict[str, dict[str, float]]) -> np.ndarray:
    """`(V, V)` log-probabilities by previous piece; unlisted pieces share a tiny mass,
    PAD and BOS never (as the export bans them)."""
    table = np.full((len(PIECES), len(PIECES)), 1e-4)
    for previous, nexts in rules.items():
        for piece, p in nexts.items():
            table[ID[previous], ID[piece]] = p
    table[:, [PAD, BOS]] = 0.0
    with np.errstate(divide="ignore"):
        return np.log(table / table.sum(axis=1, keepdims=True)).astype(np.float32)


def search(table: np.ndarray, beam_size: int, constraints=(), max_length: int = 10,
           n_best: int = 1, seen: list | None = None):
    """The DBA search over `table`; `seen` collects the pieces fed at every step."""

    def step_fn(tokens, state):
        if seen is not None:
            seen.append([PIECES[t] for t in tokens])
        return table[tokens], state

    return constrained_beam_search(
        step_fn, None, beam_size=beam_size, max_length=max_length, bos_id=BOS, eos_id=EOS,
        constraints=constraints, kinds=KINDS, n_best=n_best, reorder=lambda state, _: state)


# The model's own sentence: "le chat dort."
CAT_SLEEPS = {"<s>": {"▁le": 0.9}, "▁le": {"▁chat": 0.9}, "▁chat": {"▁dort": 0.8, "▁noir": 0.01},
              "▁dort": {".": 0.9}, ".": {"</s>": 0.95}, "▁noir": {"▁dort": 0.9},
              "▁ma": {"s": 0.9}, "s": {"que": 0.9}, "que": {"▁dort": 0.5, ".": 0.4}}


# ----------------------------------------------------------------------------- the search


def project_search(table: np.ndarray, beam_size: int, max_length: int):
    """`nmt.inference.search.beam_search` over the same table: every hypothesis."""
    log_probs = tf.constant(table)

    def step_fn(tokens, state, context):
        return tf.gather(log_probs, tokens), state, tf.fill([tf.shape(tokens)[0], 2], 0.5)

    return beam_search(step_fn, tile_beams(tf.zeros([1], tf.int32), beam_size), batch_size=1,
                       beam_size=beam_size, max_lengths=tf.constant([max_length]),
                       source_lengths=tf.constant([2]), bos_id=BOS, eos_id=EOS,
                       n_best=beam_size)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("beam_size", [1, 2, 4])
def test_without_constraints_it_finds_what_the_project_search_finds(seed, beam_size):
    rng = np.random.default_rng(seed)
    table = rng.normal(scale=2.0, size=(len(PIECES), len(PIECES)))
    table[:, [PAD, BOS]] = -np.inf
    table = (table - np.log(np.exp(table).sum(axis=1, keepdims=True))).astype(np.float32)
    expected = project_search(table, beam_size, max_length=6)
    found = search(table, beam_size, max_length=6, n_best=beam_size)
    for n, hypothesis in enumerate(found):
        length = int(expected.lengths[0, n])
        pieces = [t for t in expected.tokens[0, n, :length].numpy() if t != EOS]
        assert spell(hypothesis.tokens) == spell(pieces), f"hypothesis {n}"
        np.testing.assert_allclose(hypothesis.score, expected.scores[0, n], rtol=1e-6)
        assert hypothesis.met
    assert len(found) == int(np.sum(expected.scores[0].numpy() > -np.inf))


@pytest.mark.parametrize("beam_size", [1, 2, 5, 10])
def test_a_term_the_model_would_not_write_is_written(beam_size):
    table = bigram(CAT_SLEEPS)
    assert spell(search(table, beam_size)[0].tokens) == "le chat dort."
    [best] = search(table, beam_size, [term("▁noir")])
    assert "noir" in spell(best.tokens).split(), spell(best.tokens)
    assert best.met


@pytest.mark.parametrize("beam_size", [2, 5])
def test_every_constraint_is_written_and_a_plural_does_not_count(beam_size):
    # After "masque" the model wants "s" ("masques"): the term is a whole word, so the
    # search must end the word after "que".
    table = bigram({**CAT_SLEEPS, "que": {"s": 0.95, ".": 0.05}, "s": {"que": 0.5, ".": 0.4}})
    [best] = search(table, beam_size, [term("▁ma s que"), term("▁noir")])
    words = spell(best.tokens).replace(".", " .").split()
    assert "masque" in words and "noir" in words, spell(best.tokens)
    assert best.met


def test_eos_is_blocked_until_every_constraint_is_met():
    table = bigram({"<s>": {"▁le": 0.9}, "▁le": {"</s>": 0.99}, "▁chat": {"</s>": 0.99}})
    assert spell(search(table, 3)[0].tokens) == "le"
    found = search(table, 3, [term("▁chat")], n_best=3)
    assert all("chat" in spell(f.tokens).split() and f.met for f in found), \
        [spell(f.tokens) for f in found]
    # Too short a limit to write the term: the cut hypothesis comes back, marked unmet.
    [cut] = search(table, 3, [term("▁ma s que")], max_length=2)
    assert not cut.met and len(cut.tokens) == 2


def test_a_hypothesis_that_met_the_constraints_ranks_before_one_that_did_not():
    # The limit cuts every hypothesis; only some have written "chat".
    table = bigram({"<s>": {"▁le": 0.6, "▁chat": 0.01}, "▁le": {"▁dort": 0.9},
                    "▁chat": {"▁dort": 0.9}})
    found = search(table, 4, [term("▁chat")], max_length=2, n_best=4)
    met = [f.met for f in found]
    assert met[0] and met == sorted(met, reverse=True), [spell(f.tokens) for f in found]


def test_the_banks_keep_a_hypothesis_that_began_the_term():
    # "ma" is far down the first step's list; a plain beam of 2 drops it, the banks
    # (2 slots, 4 banks) keep it, and it is fed to the second step.
    table = bigram(CAT_SLEEPS)
    plain, constrained = [], []
    search(table, 2, seen=plain)
    search(table, 2, [term("▁ma s que")], seen=constrained)
    assert "▁ma" not in plain[1]
    assert "▁ma" in constrained[1], constrained[1]


def test_bank_sizes_as_sockeye_allocates_them():
    assert bank_sizes(3, 5, [5, 5, 5]) == [1, 1, 3]
    assert bank_sizes(3, 5, [5, 5, 0]) == [1, 4, 0]  # the empty top bank's slots go down
    assert bank_sizes(9, 5, [9] * 9) == [0] * 8 + [5]  # more banks than beams: the top
    assert bank_sizes(9, 5, [9] + [0] * 8) == [5] + [0] * 8
    assert bank_sizes(1, 5, [7]) == [5]  # no constraint: the plain beam


def test_alive_beams_are_picked_per_bank():
    constraints = [term("▁chat")]
    start, met = Progress((False,)), Progress((True,))
    cands = [_Candidate(np.float32(-1.0 - k), k, ID["▁le"], start, False, False)
             for k in range(4)] + [_Candidate(np.float32(-9.0), 0, ID["▁chat"], met, False, True)]
    picked = _select_alive(cands, constraints, 2)
    assert [(c.parent, PIECES[c.token]) for c in picked] == [(0, "▁le"), (0, "▁chat")]
    assert [c.parent for c in _select_alive(cands, (), 2)] == [0, 1]  # plain: the two best


# ----------------------------------------------------------------------------- progress


def walk(constraints, pieces: str) -> list[Progress]:
    """The progress after each piece of `pieces`, from the start."""
    progress, previous, out = Progress((False,) * len(constraints)), BOS, []
    for token in ids(pieces):
        progress = advance(constraints, KINDS, progress, previous, token)
        previous = token
        out.append(progress)
    return out


def test_a_partial_match_is_abandoned_when_the_next_piece_differs():
    constraints = [term("▁ma s que")]
    steps = walk(constraints, "▁ma s ▁le ▁ma s que .")
    assert [bank(constraints, p) for p in steps] == [1, 2, 0, 1, 2, 3, 3]
    assert steps[2] == Progress((False,)), "'▁le' after '▁ma s' abandons the term"
    assert steps[-1].met == (True,)
    assert steps[-2].met == (False,) and steps[-2].pending, "complete, the word not ended yet"


def test_the_piece_that_abandons_a_term_may_begin_another():
    constraints = [term("▁ma s que"), term("▁le")]
    progress = walk(constraints, "▁ma ▁le")[-1]
    assert progress.pending == {1} and progress.met == (False, False)
    assert walk(constraints, "▁ma ▁le ▁chat")[-1].met == (False, True)


def test_a_longer_word_does_not_meet_the_term():
    constraints = [term("▁ma s")]
    assert walk(constraints, "▁ma s que")[-1].met == (False,), "'masque' is not 'mas'"
    assert walk(constraints, "▁ma s .")[-1].met == (True,)
    assert walk(constraints, "▁ma s </s>")[-1].met == (True,), "EOS ends the word"


def test_a_form_after_an_apostrophe_starts_only_after_one():
    infection = Constraint((Form(ids("▁in fection")), Form(ids("in fection"), True)))
    assert walk([infection], "▁l ' in fection .")[-1].met == (True,)
    assert walk([infection], "▁le in fection .")[-1].met == (False,)
    assert walk([infection], "▁in fection .")[-1].met == (True,)


def test_either_form_meets_the_term_and_a_repeated_term_needs_two():
    constraints = [term("▁chat", "▁ma s que")] * 2
    assert walk(constraints, "▁chat .")[-1].met == (True, False)
    assert walk(constraints, "▁chat ▁ma s que .")[-1].met == (True, True)
    assert bank(constraints, walk(constraints, "▁chat .")[-1]) == 3  # the longest form's


def test_piece_kinds():
    boundary = {p for p, b in zip(PIECES, KINDS.boundary, strict=True) if b}
    assert {"▁le", ".", "'", "</s>"} <= boundary and not {"s", "que", "in"} & boundary
    assert [p for p, a in zip(PIECES, KINDS.apostrophe, strict=True) if a] == ["'"]


# ----------------------------------------------------------------------------- the terms


def fake_pieces(text: str) -> tuple[int, ...]:
    """Greedy longest-match segmentation over PIECES, as SentencePiece would write it."""
    text, out = "▁" + text.replace(" ", "▁"), []
    while text:
        piece = max((p for p in PIECES[4:] if text.startswith(p)), key=len, default=None)
        out.append(ID[piece] if piece else UNK)
        text = text[len(piece):] if piece else text[1:]
    return tuple(out)


def test_forms_of_a_term():
    assert forms_of("infection", fake_pieces) == [Form(ids("▁in fection")),
                                                  Form(ids("in fection"), True)]
    assert Form(ids("▁Ma s que")) in forms_of("masque", fake_pieces, first=True)
    assert Form(ids("▁Ma s que")) not in forms_of("masque", fake_pieces)
    assert forms_of("l ' infection", fake_pieces)[0] == Form(ids("▁l ' in fection"))
    assert forms_of("zèbre", fake_pieces) == [], "a form with an unknown piece is left out"


ROW = {"source": "the cat and the mask", "reference": "le chat et le masque",
       "terms": [{"id": "1", "source": "mask", "targets": ["masque", "chat"]}]}


def test_sentence_constraints_take_the_glossary_form_or_any_dev_form():
    glossary = glossary_of(ROW)  # mask -> masque (the reference's form)
    [single] = sentence_constraints(ROW, glossary, fake_pieces, any_form=False)
    assert [spell(f.pieces) for f in single.forms] == ["masque"]
    [either] = sentence_constraints(ROW, glossary, fake_pieces, any_form=True)
    assert [spell(f.pieces) for f in either.forms] == ["masque", "chat"]


def test_missed_terms_are_those_without_a_form_in_the_text():
    glossary = glossary_of(ROW)
    assert len(missed_terms(ROW, glossary, "le chat et le masque", False)) == 0
    assert len(missed_terms(ROW, glossary, "le chat et le masques", False)) == 0, "plural"
    assert len(missed_terms(ROW, glossary, "le chat et le chien", False)) == 1
    assert len(missed_terms(ROW, glossary, "le chat et le chien", True)) == 0, "a dev form"


def test_main_says_where_it_looked_when_the_set_is_absent(tmp_path):
    with pytest.raises(SystemExit, match="No terminology set at .*terminology-enfr"):
        main(["--data", str(tmp_path)])
