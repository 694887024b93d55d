"""`nmt corpus` end to end on small sources written here (training/corpus/build.py, spec.py,
cli.py)."""

import gzip
import json
from pathlib import Path

import pytest

from nmt.data.corpus import iter_pairs
from nmt_cli.main import main
from training.corpus.build import build_corpus
from training.corpus.spec import load_spec


def _write(path: Path, rows, compress=False):
    text = "".join("\t".join(row) + "\n" for row in rows)
    if compress:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _word(number: int) -> str:
    """A word per number ("ba", "bb", ...): pairs that differ only in digits are near
    duplicates, so the fixtures differ in words."""
    return "b" + "".join("abcdefghij"[int(digit)] for digit in str(number))


def _laws(documents=30, per_document=10):
    rows = []
    for d in range(documents):
        for i in range(per_document):
            rows.append((f"The Minister of {_word(d)} may act under {_word(i)} today.",
                         f"Le ministre du {_word(d)} peut agir selon {_word(i)} aujourd'hui.",
                         f"eng/acts/A-{d}.xml"))
    return rows


@pytest.fixture
def recipe(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    _write(data / "everyday.tsv", [
        ("Thank you.", "Merci."),
        ("Good morning.", "Bonjour."),
        ("Good  morning.", "Bonjour."),            # exact duplicate once spaces collapse
        ("I have 2 cats.", "J'ai 3 chats."),        # other numbers
        ("Economic Warfare", "Economic Warfare"),   # a copy
        ("This is a test sentence.", "Ceci est une phrase de test."),  # in the evaluation set
        ("Where is the station?", "Où est la gare ?"),
        ("See you tomorrow.", "À demain."),         # shares its French with a held-out pair
    ])
    _write(data / "everyday-dev.tsv", [("See you later.", "À demain.")])
    _write(data / "laws.tsv.gz", _laws(), compress=True)
    _write(data / "ui.tsv", [(f"Open file {i}", f"Ouvrir le fichier {i}", "editor.po")
                             for i in range(6)] + [
        ("Save", "Enregistrer", "editor.po"), ("Cancel", "Annuler", "editor.po"),
        ("Close", "Fermer", "editor.po"), ("Quit", "Quitter", "editor.po")])
    (data / "eval.en").write_text("this is a  TEST sentence.\n", encoding="utf-8")
    path = tmp_path / "recipe.yaml"
    path.write_text("""
name: tiny
seed: 3
dev_mix_pairs: 2
filters: {max_words: 20}
exclude: [data/eval.*]
sources:
  - {name: everyday, path: data/everyday.tsv, dev: data/everyday-dev.tsv, weight: 1,
     licence: CC-BY, attribution: Everyday pairs}
  - {name: laws, path: data/laws.tsv.gz, weight: 0.5, dev_pairs: 40, hold_out: document,
     document_pattern: '^eng/', licence: OGL, attribution: Contains information}
  - {name: ui, path: data/ui.tsv, weight: 2, dev_pairs: 1, hold_out: sentence}
""", encoding="utf-8")
    return path


def _rows(path):
    return [(en, fr, tag) for _, en, fr, tag in iter_pairs(path)]


def test_the_corpus_keeps_clean_pairs_and_says_why_it_dropped_the_others(recipe, tmp_path):
    out = tmp_path / "corpus"
    manifest = build_corpus(load_spec(recipe), out, recipe=recipe)
    everyday = manifest["sources"][0]
    assert everyday["read"] == 8
    assert {rule: n for rule, n in everyday["dropped"].items() if n} == {
        "numbers": 1, "copy": 1, "evaluation_overlap": 1, "duplicate": 1, "dev_overlap": 1}
    assert everyday["train"] == 3 and everyday["dev"] == 1
    train = _rows(out / "train.tsv")
    assert [r for r in train if r[2] == "everyday"] == [
        ("Thank you.", "Merci.", "everyday"), ("Good morning.", "Bonjour.", "everyday"),
        ("Where is the station?", "Où est la gare ?", "everyday")]
    assert (out / "recipe.yaml").read_text() == recipe.read_text()
    assert json.loads((out / "manifest.json").read_text()) == manifest
    assert everyday["licence"] == "CC-BY" and everyday["attribution"] == "Everyday pairs"


def test_whole_documents_are_held_out_and_never_trained_on(recipe, tmp_path):
    out = tmp_path / "corpus"
    manifest = build_corpus(load_spec(recipe), out)
    laws = manifest["sources"][1]
    dev = _rows(out / "dev-laws.tsv")
    assert laws["dev"] == len(dev) == 40 and laws["held_out"] == {
        "by": "document", "units": 4, "of": 30}
    held_documents = {en.split()[3] for en, _, _ in dev}
    assert len(held_documents) == 4
    train_documents = {en.split()[3] for en, _, tag in _rows(out / "train.tsv") if tag == "laws"}
    assert not held_documents & train_documents
    # A sentence held out is in no training pair (by either side).
    dev_sides = {side for en, fr, _ in dev for side in (en, fr)}
    assert not dev_sides & {side for en, fr, _ in _rows(out / "train.tsv") for side in (en, fr)}


def test_weights_sample_below_one_and_repeat_above(recipe, tmp_path):
    out = tmp_path / "corpus"
    manifest = build_corpus(load_spec(recipe), out)
    laws, ui = manifest["sources"][1], manifest["sources"][2]
    train = _rows(out / "train.tsv")
    assert laws["train"] == 260 and 100 <= laws["train_written"] <= 160
    assert sum(tag == "laws" for *_, tag in train) == laws["train_written"]
    assert ui["train_written"] == 2 * ui["train"]
    ui_rows = [r for r in train if r[2] == "ui"]
    assert len(set(ui_rows)) == ui["train"]
    # The same recipe builds the same corpus.
    again = build_corpus(load_spec(recipe), tmp_path / "again")
    assert again["sources"] == manifest["sources"]
    assert (tmp_path / "again" / "train.tsv").read_bytes() == (out / "train.tsv").read_bytes()


def test_near_duplicates_count_once(recipe, tmp_path):
    manifest = build_corpus(load_spec(recipe), tmp_path / "corpus")
    ui = manifest["sources"][2]
    # "Open file 0".."Open file 5" differ only in their digits: one stays.
    assert ui["dropped"]["near_duplicate"] == 5
    assert ui["read"] == 10 and ui["dev"] + ui["train"] + ui["dropped"]["dev_overlap"] == 5


def test_the_mixed_dev_set_names_each_pairs_source(recipe, tmp_path):
    out = tmp_path / "corpus"
    build_corpus(load_spec(recipe), out)
    mix = _rows(out / "dev.tsv")
    assert [tag for *_, tag in mix] == ["everyday", "laws", "laws", "ui"]
    assert mix[0][:2] == ("See you later.", "À demain.")


def test_an_existing_build_is_not_overwritten_unless_asked(recipe, tmp_path):
    build_corpus(load_spec(recipe), tmp_path / "corpus")
    with pytest.raises(ValueError, match="--overwrite"):
        build_corpus(load_spec(recipe), tmp_path / "corpus")
    build_corpus(load_spec(recipe), tmp_path / "corpus", overwrite=True)


def test_an_exclude_pattern_that_matches_nothing_is_an_error(recipe, tmp_path):
    recipe.write_text(recipe.read_text().replace("data/eval.*", "data/evaluation.*"))
    with pytest.raises(FileNotFoundError, match="evaluation"):
        build_corpus(load_spec(recipe), tmp_path / "corpus")


@pytest.mark.parametrize("change, message", [
    (("weight: 0.5", "weight: -1"), "weight"),
    (("hold_out: document", "hold_out: file"), "hold_out"),
    (("name: laws", "name: Laws!"), "name"),
    (("dev_pairs: 40", "dev_pairs: 400"), "every document"),
    (("filters: {max_words: 20}", "filters: {max_length: 20}"), "max_length"),
    (("document_pattern: '^eng/'", "document_pattern: '(eng'"), "regular expression"),
])
def test_a_bad_recipe_says_what_to_change(recipe, tmp_path, change, message):
    recipe.write_text(recipe.read_text().replace(*change))
    with pytest.raises(ValueError, match=message):
        build_corpus(load_spec(recipe), tmp_path / "corpus")


def test_the_command_builds_and_prints_a_table(recipe, tmp_path, capsys):
    assert main(["corpus", "--recipe", str(recipe), "--out", str(tmp_path / "c")]) == 0
    printed = capsys.readouterr().out
    assert "laws" in printed and "training pairs" in printed
    assert main(["corpus", "--recipe", str(recipe), "--out", str(tmp_path / "c")]) == 2
    assert "--overwrite" in capsys.readouterr().err


SHIPPED = Path(__file__).resolve().parents[3] / "training" / "corpora"


@pytest.mark.parametrize("path", sorted(SHIPPED.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_recipe_is_valid(path):
    spec = load_spec(path)
    assert spec.sources and all(s.licence and s.attribution for s in spec.sources)
