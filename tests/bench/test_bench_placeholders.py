"""`bench/placeholders.py`: UI strings with placeholders, with a fake translator that loses them."""

import gzip

import numpy as np
import pytest

from bench.placeholders import (
    compare,
    copied,
    in_order,
    kept,
    main,
    read_as_given,
    read_strings,
    stand_ins,
    with_placeholders,
)
from nmt.types import Hypothesis, Translation

ROWS = [
    ("Add %s", "Ajouter %s"),
    ("Delete node '%s'?", "Supprimer le nœud « %s » ?"),
    ("Set %s on %d objects", "Définir %s sur %d objets"),
    ("Importing items {n}/{n}", "Importation des éléments {n}/{n}"),
    ("Save & Quit", "Sauvegarder & quitter"),
]


def mangling(sentences):
    """A model that upper-cases each word and turns `%`, `{` and `}` into words, as the
    shipped model garbles placeholders (`%s` -> `pour cent`)."""
    out = []
    for sentence in sentences:
        words = sentence.replace("%", " PERCENT ").replace("{", " ").replace("}", " ").split()
        target = " ".join(w.upper() for w in words)
        links = tuple((i, i) for i in range(min(len(sentence.split()), len(words))))
        out.append(Translation(sentence, tuple(words), (Hypothesis(
            text=target, target_tokens=tuple(words), score=-1.0,
            alignment=np.zeros((len(words), len(words))), word_alignment=links),)))
    return out


def test_kept_and_in_order():
    assert kept("Set %s on %d", "Définir %s sur %d") and not kept("Set %s", "Définir %s %s")
    assert not kept("Set %s", "Définir") and not kept("Set %s", "Définir %s {0}")
    assert in_order("Set %s on %d", "%s sur %d") and not in_order("Set %s on %d", "%d sur %s")
    assert in_order("Set {0} on {1}", "{1} sur {0}"), "positional ones may move"


def test_stand_ins_are_numbers_counted_when_copied_once():
    text, numbers = stand_ins("Set %s on %d objects")
    assert (text, numbers) == ("Set 7 on 8 objects", ["7", "8"])
    assert copied("Définir 7 sur 8 objets", numbers)
    assert not copied("Définir 7 sur 78 objets", numbers) and not copied("7 7 8", numbers)


def test_placeholders_come_back_only_when_kept():
    pairs = with_placeholders(ROWS)
    assert len(pairs) == 4 and with_placeholders(ROWS, limit=1) == ROWS[:1]

    found = compare(pairs, mangling, batch_size=2, designs=True)

    assert found["strings"] == 4 and found["placeholders"] == {"printf": 4, "brace": 2}
    assert found["before"]["kept"] == 0
    assert found["after"]["kept"] == found["after"]["in_order"] == 4
    assert found["alone"]["kept"] == 4
    assert found["after"]["chrf"] > found["before"]["chrf"]
    assert found["stand_ins_copied"] == 4  # the fake copies numbers
    assert read_as_given(["Save & Quit", "50 % off"]) == 2


def test_main_runs_on_a_small_set(tmp_path, tiny_model_dir, capsys):
    folder = tmp_path / "more-enfr"
    folder.mkdir()
    with gzip.open(folder / "godot-editor.tsv.gz", "wt", encoding="utf-8") as out:
        out.writelines(f"{en}\t{fr}\teditor.po\n" for en, fr in ROWS)
    assert read_strings(tmp_path) == ROWS

    assert main(["--model", str(tiny_model_dir), "--data", str(tmp_path), "--limit", "3",
                 "--batch-size", "2"]) == 0

    out = capsys.readouterr().out
    assert "of the 1 without placeholders, 1 read exactly as given" in out
    assert "3 strings with 4 placeholders (printf 4)" in out
    assert "after (placeholders kept)     100.0%   100.0%" in out
    with pytest.raises(SystemExit, match="No pairs at .*; pass --data DIR or --tsv FILE"):
        read_strings(tmp_path / "nowhere")


def test_other_pairs_and_the_kinds_that_select_them(tmp_path):
    plain, zipped = tmp_path / "dev-docs.tsv", tmp_path / "ui.tsv.gz"
    plain.write_text("See https://x.org/a_b now.\tVoir https://x.org/a_b maintenant.\tdocs\n"
                     "Set %s.\tRégler %s.\tdocs\n", encoding="utf-8")
    with gzip.open(zipped, "wt", encoding="utf-8") as out:
        out.write("Mail bob@example.com\tÉcrire à bob@example.com\n\nno French side\n")
    pairs = read_strings(tmp_path / "unused", [plain, zipped])
    assert [en for en, _ in pairs] == ["See https://x.org/a_b now.", "Set %s.",
                                       "Mail bob@example.com"]
    assert with_placeholders(pairs, kinds=("url", "email")) == [pairs[0], pairs[2]]
    assert with_placeholders(pairs, kinds=("printf",)) == [pairs[1]]
