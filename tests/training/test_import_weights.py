"""`training.accelerator.import_weights`: the run directory as `nmt train` writes one, so
that a model card follows the chain of runs through it."""

import json

import pytest

from training.accelerator.import_weights import run_config, run_summary


def _out(directory, **summary):
    directory.mkdir(parents=True)
    (directory / "summary.json").write_text(json.dumps(summary))
    return directory


def test_hours_of_earlier_parts_add_up_and_the_start_is_recorded(tmp_path):
    first = _out(tmp_path / "part1", steps=600, hours=1.25, device="cpu: cpu")
    before = _out(tmp_path / "previous-run", name="en-fr-v10", steps=8144, train_seconds=612.3)
    summary = run_summary({"steps": 1400, "epochs": 0, "hours": 0.75, "device": "cpu: cpu"},
                          {"name": "en-fr-v10-anneal"}, parts=(first,), after=before)
    assert summary["train_seconds"] == 7200.0 and summary["hours"] == 2.0
    assert [part["hours"] for part in summary["parts"]] == [1.25, 0.75]
    assert [part["steps"] for part in summary["parts"]] == [600, 1400]
    assert (summary["name"], summary["epochs_completed"]) == ("en-fr-v10-anneal", 0)
    assert summary["starting_model"] == {
        "name": "en-fr-v10", "training": {"name": "en-fr-v10", "steps": 8144,
                                          "train_seconds": 612.3}}


def test_a_summary_that_counts_every_part_refuses_parts(tmp_path):
    part = _out(tmp_path / "part1", steps=600, hours=1.0)
    whole = {"name": "x", "steps": 1400, "hours": 2.0, "train_seconds": 7200.0}
    assert run_summary(whole, {})["train_seconds"] == 7200.0
    with pytest.raises(ValueError, match="counts every part already"):
        run_summary(whole, {}, parts=(part,))


def test_the_config_points_at_the_corpus_and_the_run_it_started_from(tmp_path):
    corpus = tmp_path / "corpus-x"
    corpus.mkdir()
    for name in ("train.tsv", "dev.tsv"):
        (corpus / name).write_text("a\tb\n")
    run, before = tmp_path / "runs" / "x", tmp_path / "runs" / "previous"
    config = {"name": "x", "data": {"train": "/gpu/host/train.tsv", "dev": "/gpu/host/dev.tsv",
                                    "join_fraction": 0.05}}
    written = run_config(config, run, corpus, before)
    assert written["data"] == {"train": "../../corpus-x/train.tsv",
                               "dev": "../../corpus-x/dev.tsv", "join_fraction": 0.05}
    assert written["init_from"] == "../previous"
    assert run_config(config, run, None, None)["data"]["train"] == "/gpu/host/train.tsv"
    with pytest.raises(FileNotFoundError, match="--corpus is the directory"):
        run_config(config, run, tmp_path / "nowhere", None)
