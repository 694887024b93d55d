"""`bench/markup_bleu.py`: tagged lines against their stripped text, with a fake translator."""

import pytest

from bench.markup_bleu import compare, main, read_set, strip_tags
from documents.sentences import TextLinks

PAIRS = [
    ('Press <g id="1">OK</g> to <x id="2"/>continue.', 'Appuyez sur <g id="1">OK</g> pour '
     '<x id="2"/>continuer.'),
    ('The <g id="1">red &amp; blue</g> flag. It <bx id="3"/>flies.<ex id="4"/>',
     'Le drapeau <g id="1">rouge &amp; bleu</g>. Il <bx id="3"/>vole.<ex id="4"/>'),
]


def shouting(sentences):
    """A translator whose output reads as its input: every word upper-cased."""
    return [TextLinks(s.upper(), tuple((i, i) for i in range(len(s.split()))))
            for s in sentences]


def test_strip_tags_keeps_the_text_with_entities_decoded():
    assert strip_tags(PAIRS[1][0]) == "The red & blue flag. It flies."
    assert strip_tags('(11)<x id="1"/>The  pillar.\n') == "(11)The pillar."


def test_markup_costs_nothing_when_the_model_reads_the_same_sentences():
    calls = []

    def translate(sentences):
        calls.append(list(sentences))
        return shouting(sentences)

    found = compare(PAIRS, translate, batch_size=1)

    assert found["lines"] == 2 and found["malformed"] == 0
    assert found["inputs_differ"] == found["outputs_differ"] == 0
    assert found["tagged"].bleu == found["plain"].bleu
    assert ["PRESS OK TO CONTINUE."] in [[t.text for t in shouting(c)] for c in calls]
    assert ["The red & blue flag.", "It flies."] in calls  # one document, split in two


def test_tags_that_change_what_the_model_reads_are_counted():
    crossing = ("<g>One. Two</g> three.", "<g>Un. Deux</g> trois.")  # one sentence with the tag

    found = compare([crossing, PAIRS[0]], shouting)

    assert found["inputs_differ"] == 1 and found["outputs_differ"] == 0  # shouting: same words


def test_main_runs_on_a_small_set(tmp_path, tiny_model_dir, capsys):
    folder = tmp_path / "markup-enfr"
    folder.mkdir()
    for name in ("glossary", "eurlex"):
        (folder / f"dev-{name}.en").write_text("\n".join(en for en, _ in PAIRS) + "\n")
        (folder / f"dev-{name}.fr").write_text("\n".join(fr for _, fr in PAIRS) + "\n")
    assert read_set(tmp_path, "glossary", limit=1) == PAIRS[:1]

    assert main(["--model", str(tiny_model_dir), "--data", str(tmp_path),
                 "--sets", "glossary"]) == 0

    out = capsys.readouterr().out
    assert "glossary: 2 lines" in out and "malformed outputs 0" in out
    assert "difference +0.00" in out
    with pytest.raises(SystemExit, match="No markup-enfr data"):
        read_set(tmp_path / "nowhere", "glossary")
