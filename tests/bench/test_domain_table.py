"""`bench/domain_table.py`: sets read from the data directory (EUR-Lex without its tags),
missing sets left out with a note, and one JSON row per export, on the tiny model; the rows
of earlier runs' JSON files merged into one table (`--from-json`)."""

import json

import pytest

from bench.domain_table import main, mean_out_of_domain_chrf, merge_rows, read_set, table

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


# The scores of one model measured one day, the speed of both (and a set again) later.
SCORES_RUN = {"machine": "box A", "tensorflow": "2.21.0", "sets": {"anki": 100, "newstest2013": 50},
              "limit": 0, "results": [
                  {"label": "en-fr/8", "model": "/m/en-fr/8", "precision": "float32",
                   "beam_size": 5, "scores": {"anki": {"bleu": 40.0, "chrf": 60.0},
                                              "newstest2013": {"bleu": 20.5, "chrf": 48.25}},
                   "alibi": {"aer": 0.3123}, "mean_out_of_domain_chrf": 48.25}]}
SPEED_RUN = {"machine": "box B", "tensorflow": "2.21.0",
             "sets": {"newstest2013": 50, "speed": 2000}, "limit": 0, "results": [
                 {"label": "en-fr-broad/9", "model": "/r/en-fr-broad/9", "precision": "float32",
                  "beam_size": 5, "scores": {}, "speed": {"sentences_per_s": 1234.56},
                  "mean_out_of_domain_chrf": None},
                 {"label": "en-fr/8", "model": "/m/en-fr/8", "precision": "float32",
                  "beam_size": 5, "scores": {"newstest2013": {"bleu": 21.0, "chrf": 49.0}},
                  "speed": {"sentences_per_s": 900.0}, "mean_out_of_domain_chrf": 49.0}]}


def _runs(tmp_path, *runs):
    paths = []
    for i, run in enumerate(runs):
        paths.append(tmp_path / f"run{i}.json")
        paths[-1].write_text(json.dumps(run))
    return [str(path) for path in paths]


def test_rows_of_separate_runs_are_merged_into_one_table(tmp_path, capsys):
    scores, speed = _runs(tmp_path, SCORES_RUN, SPEED_RUN)

    assert main(["--from-json", scores, speed, "--json", str(tmp_path / "both.json")]) == 0

    out = capsys.readouterr().out
    assert out.startswith(f"{scores}: machine: box A, TensorFlow 2.21.0; items per set: "
                          f"anki 100, newstest2013 50\n{speed}: machine: box B")
    assert (f"note: en-fr/8: anki, alibi from {scores} (float32, beam 5); newstest2013, speed "
            f"from {speed} (float32, beam 5)\n") in out
    assert f"note: en-fr/8: newstest2013 is in {scores} and in {speed}; {speed}'s is kept" in out
    assert f"note: en-fr-broad/9: speed from {speed} (float32, beam 5)" in out
    assert [line for line in out.splitlines() if line.startswith("|")] == [
        "| model | precision | beam | Anki test BLEU / chrF | newstest2013 BLEU / chrF | "
        "Alibi AER | sentences/s, traffic mix | mean out-of-domain chrF |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
        "| en-fr/8 | float32 | 5 | 40.00 / 60.00 | 21.00 / 49.00 | 0.312 | 900.0 | 49.00 |",
        "| en-fr-broad/9 | float32 | 5 |  |  |  | 1,234.6 |  |",
    ]
    merged = json.loads((tmp_path / "both.json").read_text())
    assert merged["from_json"] == [scores, speed]
    assert merged["results"][0]["sources"] == {"anki": scores, "newstest2013": speed,
                                               "alibi": scores, "speed": speed}


def test_the_later_file_wins_and_sets_picks_the_columns(tmp_path, capsys):
    scores, speed = _runs(tmp_path, SCORES_RUN, SPEED_RUN)

    assert main(["--from-json", speed, scores, "--sets", "newstest2013", "speed"]) == 0

    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("|")]
    assert rows[0].split(" | ")[3:5] == ["newstest2013 BLEU / chrF", "sentences/s, traffic mix"]
    assert rows[2:] == ["| en-fr-broad/9 | float32 | 5 |  | 1,234.6 |  |",
                        "| en-fr/8 | float32 | 5 | 20.50 / 48.25 | 900.0 | 48.25 |"]


def test_a_merged_row_shows_every_precision_and_beam_its_sets_were_measured_at():
    greedy = {"results": [{"label": "en-fr/8", "precision": "bfloat16", "beam_size": 1,
                           "scores": {"multi30k": {"bleu": 30.0, "chrf": 55.0}}}]}

    [row], notes = merge_rows([("a.json", SCORES_RUN), ("b.json", greedy)])

    assert row["precision"] == "float32 / bfloat16" and row["beam_size"] == "5 / 1"
    assert row["mean_out_of_domain_chrf"] == 51.62  # newstest2013 and multi30k
    assert notes == ["note: en-fr/8: anki, newstest2013, alibi from a.json (float32, beam 5); "
                     "multi30k from b.json (bfloat16, beam 1)"]


def test_the_table_leaves_cells_of_missing_measurements_empty():
    rows = [{"label": "x", "scores": {"anki": {"bleu": 1.0}}},
            {"label": "y", "precision": "float32", "beam_size": 5, "alibi": {},
             "speed": None, "mean_out_of_domain_chrf": None}]

    assert table(rows, ["anki", "newstest2013", "alibi", "speed"]).splitlines()[2:] == [
        "| x |  |  | 1.00 /  |  |  |  |  |",
        "| y | float32 | 5 |  |  |  |  |  |",
    ]


def test_from_json_replaces_the_models_and_reads_only_run_files(tmp_path, capsys):
    for argv in ([], [str(tmp_path), "--from-json", str(tmp_path / "run.json")]):
        with pytest.raises(SystemExit):
            main(argv)
        assert "or --from-json FILE ... to show earlier runs" in capsys.readouterr().err
    [not_a_run] = _runs(tmp_path, {"rows": []})
    with pytest.raises(SystemExit, match="is not the --json file of a domain_table run"):
        main(["--from-json", not_a_run])
    with pytest.raises(SystemExit, match="no file at"):
        main(["--from-json", str(tmp_path / "missing.json")])
