"""`bench/unknown_characters.py`: words with characters the vocabulary lacks, counted."""

import pytest

from bench.unknown_characters import main, score, select, unknown_characters, words_to_copy
from nmt.data.subwords import PlainTokenizer

ROWS = [
    ("Use the [Save] button.", "Utilisez le bouton [Save]."),
    ("Tag it #urgent, please.", "Étiquetez-le #urgent, s'il vous plaît."),
    ("Set %s on user_name.", "Régler %s sur user_name."),
    ("Save your work.", "Enregistrez votre travail."),
    ("Press {key} now.", "Appuyez sur {key} maintenant."),
]


@pytest.fixture(scope="module")
def tokenizer(tiny_tokenizers) -> PlainTokenizer:
    return PlainTokenizer(tiny_tokenizers.source.model_proto, "en")


def test_unknown_characters_are_those_read_as_unknown_pieces(tokenizer):
    assert unknown_characters(tokenizer, "the [Save] #1 x_y") == {"[", "]", "#", "_"}
    assert unknown_characters(tokenizer, "I love you.") == set()


def test_words_to_copy_are_taken_as_the_reference_writes_them():
    unknown = {"[", "]", "#", "_"}
    assert words_to_copy("Use the [Save] button.", "le bouton [Save].", unknown) == ["[Save]"]
    assert words_to_copy("Click [Save].", "Cliquez sur [Save].", unknown) == ["[Save]."]
    assert words_to_copy("Set (user_name).", "Régler user_name.", unknown) == ["user_name"]
    assert words_to_copy("Click [Save].", "Cliquez sur Enregistrer.", unknown) == []


def test_strings_are_chosen_as_the_model_reads_them(tokenizer):
    chosen = select(ROWS, tokenizer)
    # "{key}" is a placeholder: the model never reads its braces.
    assert [en for en, _, _ in chosen] == [en for en, _ in ROWS[:3]]
    assert [words for _, _, words in chosen] == [["[Save]"], ["#urgent,"], ["user_name."]]
    assert select(ROWS, tokenizer, limit=1) == chosen[:1]


def test_copied_repeated_and_exact_are_counted_per_word(tokenizer):
    chosen = select(ROWS, tokenizer)
    outputs = ["Utilisez le bouton [Save]Save [Save].", "Étiquetez-le #urgent, svp.",
               "Régler %s sur l'utilisateur."]
    found = score(chosen, outputs)
    assert (found["words"], found["copied"], found["repeated"], found["exact"]) == (3, 2, 1, 1)
    perfect = score(chosen, [fr for _, fr, _ in chosen])
    assert perfect["exact"] == 3 and perfect["chrf"] == pytest.approx(100.0)


def test_main_compares_exports(tmp_path, tiny_model_dir, capsys):
    pairs = tmp_path / "dev-ui.tsv"
    pairs.write_text("".join(f"{en}\t{fr}\tui\n" for en, fr in ROWS), encoding="utf-8")
    version = str(tiny_model_dir / "1")
    assert main([version, version, "--tsv", str(pairs), "--label", "a", "--label", "b",
                 "--batch-size", "2"]) == 0
    out = capsys.readouterr().out
    assert "5 strings, 3 with an unknown character as the model reads them; 3 of their " in out
    assert "\n  a " in out and "\n  b " in out
    with pytest.raises(SystemExit):
        main([version, "--tsv", str(pairs), "--label", "a", "--label", "b"])
    assert "give --label once per export" in capsys.readouterr().err
