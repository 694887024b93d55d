import subprocess
import sys
from pathlib import Path

import pytest

from nmt.evaluation import metrics
from nmt.evaluation.metrics import (
    AlignedPair,
    alignment_error_rate,
    alignment_scores,
    corpus_scores,
    group_references,
    parse_links,
    read_alibi,
    read_naacl,
    read_pharaoh,
    read_pharaoh_gold,
)
from nmt.paths import DATA_DIR_ENV, data_dir

REPO = Path(__file__).resolve().parents[3]
ALIBI = data_dir() / "alibi-enfr-alignments"

# The example of sacrebleu's README, whose BLEU is documented as 48.53.
SYS = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
REFS = [
    ["The dog bit the man.", "The dog had bit the man."],
    ["It was not unexpected.", "No one was surprised."],
    ["The man bit him first.", "The man had bitten the dog."],
]


# --------------------------------------------------------------------------- BLEU / chrF


def test_group_references_keeps_first_seen_order():
    pairs = [("b", "1"), ("a", "2"), ("b", "3"), ("c", "4"), ("a", "5")]
    sources, references = group_references(pairs)
    assert sources == ["b", "a", "c"]
    assert references == [["1", "3"], ["2", "5"], ["4"]]


def test_identical_hypotheses_score_100():
    text = ["Il fait beau aujourd'hui .", "Je ne sais pas ce que tu veux dire ."]
    scores = corpus_scores(text, [[t] for t in text])
    assert scores.bleu == pytest.approx(100.0)
    assert scores.chrf == pytest.approx(100.0)
    assert "nrefs:1" in scores.bleu_signature
    assert "nc:6|nw:0" in scores.chrf_signature  # chrF2, characters only


def test_matching_the_second_reference_scores_100():
    hypotheses = ["Je suis très fatigué ce soir .", "Il est parti hier matin ."]
    references = [
        ["Ce soir, je suis épuisé.", "Je suis très fatigué ce soir ."],
        ["Il est parti hier matin ."],
    ]
    scores = corpus_scores(hypotheses, references)
    assert scores.bleu == pytest.approx(100.0)
    assert scores.chrf == pytest.approx(100.0)
    assert "nrefs:var" in scores.bleu_signature


def test_known_sacrebleu_value():
    assert corpus_scores(SYS, REFS).bleu == pytest.approx(48.53, abs=0.005)


def test_missing_references_do_not_count_as_empty_ones():
    # A repeated reference changes nothing; a padded empty one would add a
    # zero-length reference to the sentence.
    variable = corpus_scores(SYS, [REFS[0], REFS[1][:1], REFS[2]])
    repeated = corpus_scores(SYS, [REFS[0], REFS[1][:1] * 2, REFS[2]])
    assert variable.bleu == pytest.approx(repeated.bleu)
    assert variable.chrf == pytest.approx(repeated.chrf)
    assert variable.chrf != pytest.approx(corpus_scores(SYS, REFS).chrf)


def test_wrong_hypothesis_scores_low():
    scores = corpus_scores(["Le chien dort"], [["Il pleut beaucoup ici ."]])
    assert scores.bleu < 1 and scores.chrf < 10


@pytest.mark.parametrize(
    "hypotheses, references, message",
    [
        (["a"], [["a"], ["b"]], "same length"),
        ([], [], "empty corpus"),
        (["a"], [[]], "non-empty list"),
        (["a"], ["a"], "non-empty list"),
    ],
)
def test_corpus_scores_rejects_bad_input(hypotheses, references, message):
    with pytest.raises(ValueError, match=message):
        corpus_scores(hypotheses, references)


# --------------------------------------------------------------------------- AER


def test_aer_matches_hand_computation():
    predicted = [{(0, 0), (1, 1), (2, 2)}, {(0, 0)}]
    sure = [{(0, 0), (1, 2)}, {(0, 0)}]
    possible = [{(1, 1)}, set()]  # sure links are added by the function
    # |A∩S| = 1 + 1, |A∩P| = 2 + 1, |A| = 3 + 1, |S| = 2 + 1.
    assert alignment_error_rate(predicted, sure, possible) == pytest.approx(1 - 5 / 7)
    scores = alignment_scores(predicted, sure, possible)
    assert scores.precision == pytest.approx(3 / 4)
    assert scores.recall == pytest.approx(2 / 3)


def test_aer_is_corpus_level_not_a_mean_of_sentences():
    predicted = [{(0, 0)}, {(0, 0), (1, 1), (2, 2), (3, 3)}]
    sure = [{(0, 0)}, {(5, 5)}]
    # Sentence AERs are 0 and 1 (mean 0.5); corpus AER weighs by link counts.
    assert alignment_error_rate(predicted, sure, sure) == pytest.approx(1 - 2 / 7)


def test_aer_extremes():
    gold = [{(0, 1), (1, 0)}]
    assert alignment_error_rate(gold, gold, gold) == 0.0
    assert alignment_error_rate([{(0, 0)}], gold, gold) == 1.0
    # Predicting only possible links is not penalised by precision.
    assert alignment_scores([{(2, 2)}], [set()], [{(2, 2)}]).aer == 0.0


def test_aer_rejects_bad_input():
    with pytest.raises(ValueError, match="one entry per sentence"):
        alignment_error_rate([set()], [], [])
    with pytest.raises(ValueError, match="undefined"):
        alignment_error_rate([set()], [set()], [{(0, 0)}])


# --------------------------------------------------------------------------- readers


def test_parse_links():
    sure, possible = parse_links(" 0-1 2p3 4?5  0-1 ")
    assert sure == {(0, 1)}
    assert possible == {(0, 1), (2, 3), (4, 5)}
    with pytest.raises(ValueError, match="'1:2'"):
        parse_links("0-0 1:2")


def test_read_pharaoh_keeps_empty_sentences(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("0-0 1-2\n\n3-1\n", encoding="utf-8")
    assert read_pharaoh(path) == [{(0, 0), (1, 2)}, frozenset(), {(3, 1)}]


def test_read_pharaoh_rejects_possible_links(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("0-0\n1p2\n", encoding="utf-8")
    with pytest.raises(ValueError, match="a.txt:2"):
        read_pharaoh(path)


def test_read_pharaoh_gold(tmp_path):
    path = tmp_path / "gold.txt"
    path.write_text("0-0 1p1\r\n2?0\n", encoding="utf-8")
    assert read_pharaoh_gold(path) == [({(0, 0)}, {(0, 0), (1, 1)}), (set(), {(2, 0)})]


def test_read_naacl(tmp_path):
    path = tmp_path / "test.wa"
    path.write_text(
        "0001 1 1 S\n0001 2 3 P\n0001 3 2\n0001 0 4 S\n\n0002 1 2 p 0.5\n0003 0 1\n",
        encoding="utf-8",
    )
    gold = read_naacl(path)
    assert set(gold) == {1, 2}  # sentence 3 links only to NULL
    assert gold[1] == ({(0, 0), (2, 1)}, {(0, 0), (1, 2), (2, 1)})
    assert gold[2] == (frozenset(), {(0, 1)})


@pytest.mark.parametrize("line", ["0001 1 X S", "0001 1 1 Q", "0001 1", "1 1 1 S 0.5 extra"])
def test_read_naacl_rejects_bad_lines(tmp_path, line):
    path = tmp_path / "bad.wa"
    path.write_text(f"0001 1 1 S\n{line}\n", encoding="utf-8")
    with pytest.raises(ValueError, match="bad.wa:2"):
        read_naacl(path)


def _write_story(root, french, english, fr_lines, en_lines, ali_lines):
    story = root / "ali" / f"{french}_{english}"
    story.mkdir(parents=True)
    (story / f"{french}_sents.txt").write_text("\n".join(fr_lines) + "\n", encoding="utf-8")
    (story / f"{english}_sents.txt").write_text("\n".join(en_lines) + "\n", encoding="utf-8")
    (story / f"ali_w2w_{french}_{english}.txt").write_text(
        "\n".join(ali_lines) + "\n", encoding="utf-8"
    )


def test_read_alibi_swaps_links_to_english_first(tmp_path):
    # Names sort so that the English file comes first, and contain "_".
    _write_story(
        tmp_path,
        "Le_Chat",
        "A_Cat",
        ["0\tLe chat dort .", "1\tIl pleut"],
        ["0\tThe cat sleeps .", "1\tIt is raining"],
        ["0\t0-0 1-1 2p2 3-3 ", "1\t0-0 1p1 1p2"],
    )
    pairs = read_alibi(tmp_path)
    assert pairs[0] == AlignedPair(
        source_words=("The", "cat", "sleeps", "."),
        target_words=("Le", "chat", "dort", "."),
        sure=frozenset({(0, 0), (1, 1), (3, 3)}),
        possible=frozenset({(0, 0), (1, 1), (2, 2), (3, 3)}),
    )
    # French word 1 ("pleut") is possibly aligned to English words 1 and 2.
    assert pairs[1].possible == {(0, 0), (1, 1), (2, 1)}
    assert pairs[1].sure == {(0, 0)}


def test_read_alibi_checks_links_and_files(tmp_path):
    _write_story(tmp_path / "a", "Fr", "En", ["0\tun deux"], ["0\tone"], ["0\t1-1"])
    with pytest.raises(ValueError, match="outside the sentence pair"):
        read_alibi(tmp_path / "a")
    _write_story(tmp_path / "b", "Fr", "En", ["0\tun"], ["1\tone"], ["0\t0-0"])
    with pytest.raises(ValueError, match="index different sentences"):
        read_alibi(tmp_path / "b")
    _write_story(tmp_path / "c", "Fr", "En", ["0\tun"], ["0\tone"], ["0\t0-0"])
    (tmp_path / "c" / "ali" / "Fr_En" / "ali_w2w_Fr_En.txt").rename(
        tmp_path / "c" / "ali" / "Fr_En" / "ali_w2w_Fr_Other.txt"
    )
    with pytest.raises(ValueError, match="ali_w2w_<French>_<English>"):
        read_alibi(tmp_path / "c")


@pytest.mark.skipif(not ALIBI.is_dir(), reason=f"Alibi gold alignments not found at {ALIBI} "
                    f"(set {DATA_DIR_ENV} to the data directory)")
def test_read_alibi_real_data():
    pairs = read_alibi(ALIBI)
    assert len(pairs) == 522
    for pair in pairs:
        assert pair.sure <= pair.possible
        for en, fr in pair.possible:
            assert en < len(pair.source_words) and fr < len(pair.target_words)
    # First sentence of L'Auberge / The Inn (stories are read in name order).
    inn = next(p for p in pairs if p.source_words == ("The", "Inn"))
    assert inn.target_words[-2:] == ("L'", "Auberge")
    assert inn.sure == {(0, 6), (1, 7)}


def test_metrics_do_not_import_tensorflow():
    code = "import sys, nmt.evaluation.metrics; print('tensorflow' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False", metrics.__file__


def test_scores_by_domain_score_each_domain_alone():
    from nmt.evaluation.metrics import domains_of, scores_by_domain

    pairs = [("a b c d", "w x y z", "laws"), ("e f g h", "p q r s", "ui"),
             ("a b c d", "w x y t", "laws")]
    sources, references = group_references((s, r) for s, r, _ in pairs)
    domains = domains_of(pairs, sources)
    assert domains == ["laws", "ui"]
    hypotheses = ["w x y z", "nothing alike here"]
    by_domain = scores_by_domain(hypotheses, references, domains)
    assert list(by_domain) == ["laws", "ui"]
    assert by_domain["laws"].bleu == corpus_scores(hypotheses[:1], references[:1]).bleu
    assert by_domain["laws"].bleu == pytest.approx(100)
    assert by_domain["ui"].bleu == corpus_scores(hypotheses[1:], references[1:]).bleu < 10


def test_a_third_column_of_many_values_is_no_domain():
    from nmt.evaluation.metrics import MAX_DOMAINS, domains_of

    pairs = [(f"s{i}", "r", f"CC-BY 2.0 (France) Attribution: tatoeba.org #{i}")
             for i in range(MAX_DOMAINS + 1)]
    assert set(domains_of(pairs, [p[0] for p in pairs])) == {""}
    assert domains_of([("s", "r")], ["s"]) == [""]
