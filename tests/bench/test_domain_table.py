"""`bench/domain_table.py`: sets read from the data directory (EUR-Lex without its tags),
missing sets left out with a note, and one JSON row per export, on the tiny model."""

import json

import pytest

from bench.domain_table import main, mean_out_of_domain_chrf, read_set

EURLEX = [
    ('(11)<x id="1"/>The European <g id="2">Pillar</g> of  Social Rights.',
     '(11)<x id="1"/>Le <g id="2">socle</g> européen des droits sociaux.'),
    ('Research <bx id="3"/>&amp; innovation<ex id="4"/>.',
     'Recherche <bx id="3"/>&amp; innovation<ex id="4"/>.'),
    ("I like coffee.", "J'aime le café."),
    ("We eat bread.", "Nous mangeons du pain."),
    ("Where is the station?", "Où est la gare ?"),
    ("Thank you.", "Merci."),
    ("Good night.", "Bonne nuit."),
]


def _eurlex(data, pairs=EURLEX):
    folder = data / "markup-enfr"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "dev-eurlex.en").write_text("".join(f"{en}\n" for en, _ in pairs))
    (folder / "dev-eurlex.fr").write_text("".join(f"{fr}\n" for _, fr in pairs))
    return data


def test_eurlex_lines_lose_their_tags_on_both_sides(tmp_path):
    pairs = read_set("eurlex", _eurlex(tmp_path))

    assert pairs[:2] == [
        ("(11)The European Pillar of Social Rights.",
         "(11)Le socle européen des droits sociaux."),
        ("Research & innovation.", "Recherche & innovation."),
    ]
    assert len(pairs) == len(EURLEX)


def test_sets_that_cannot_be_read_say_why(tmp_path):
    with pytest.raises(FileNotFoundError, match="no --corpus DIR"):
        read_set("laws", tmp_path, corpus=None)
    with pytest.raises(FileNotFoundError, match="newstest2013.en"):
        read_set("newstest2013", tmp_path)
    _eurlex(tmp_path)
    (tmp_path / "markup-enfr" / "dev-eurlex.fr").write_text("Merci.\n")
    with pytest.raises(ValueError, match="must be line-aligned"):
        read_set("eurlex", tmp_path)


def test_the_mean_chrf_leaves_the_in_domain_test_set_out():
    scores = {"anki": {"chrf": 90.0}, "laws": {"chrf": 20.0}, "ui": {"chrf": 31.0}}

    assert mean_out_of_domain_chrf(scores) == 25.5
    assert mean_out_of_domain_chrf({"anki": {"chrf": 90.0}}) is None


def test_one_row_per_export_with_missing_sets_left_out(tmp_path, tiny_model_dir, capsys):
    data = _eurlex(tmp_path / "data")
    table = tmp_path / "table.json"

    assert main([str(tiny_model_dir), "--data", str(data), "--sets", "eurlex", "laws",
                 "--limit", "5", "--precision", "float32", "--json", str(table)]) == 0

    out = capsys.readouterr().out
    assert "note: laws left out: no --corpus DIR given" in out
    assert out.startswith("note: ") and "\nmachine: " in out
    header, _, row = [line for line in out.splitlines() if line.startswith("|")]
    assert row.startswith("| tiny/1 | float32 | 5 | ")
    assert header.count("|") == row.count("|") and "EUR-Lex" in header and "laws" not in header
    found = json.loads(table.read_text())
    assert found["sets"] == {"eurlex": 5} and found["skipped"] == {
        "laws": "no --corpus DIR given"}
    [result] = found["results"]
    assert result["label"] == "tiny/1" and result["precision"] == "float32"
    assert set(result["scores"]) == {"eurlex"} and "alibi" not in result
    eurlex = result["scores"]["eurlex"]
    assert eurlex["sentences"] == 5 and 0 <= eurlex["bleu"] <= 100
    assert result["mean_out_of_domain_chrf"] == eurlex["chrf"]
