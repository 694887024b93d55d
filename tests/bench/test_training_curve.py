"""`bench/training_curve.py`: a run's dev scores per domain against its training hours."""

import json

import pytest

from bench import training_curve


def _history(run, records):
    run.mkdir()
    (run / "history.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_rows_follow_the_evaluations_with_the_baseline_first(tmp_path, capsys):
    _history(tmp_path / "run", [
        {"step": 250, "epoch": 0, "train_seconds": 1800.0, "bleu": 20.0, "chrf": 45.0,
         "domains": {"laws": {"bleu": 15.0, "chrf": 40.5}, "ui": {"bleu": 10.0, "chrf": 30.0}}},
        {"step": 500, "epoch": 0, "train_seconds": 3600.0, "bleu": 22.0, "chrf": 47.0,
         "domains": {"laws": {"bleu": 17.0, "chrf": 43.25}, "ui": {"bleu": 12.0, "chrf": 33.0}}},
    ])
    baseline = tmp_path / "v8.json"
    baseline.write_text(json.dumps({"translation": {
        "bleu": 18.0, "chrf": 40.0, "domains": {"laws": {"bleu": 3.0, "chrf": 25.0,
                                                         "sentences": 500}}}}))
    assert training_curve.main([str(tmp_path / "run"), "--baseline", str(baseline)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "| hours | step | epoch | all, chrF | laws | ui |"
    assert lines[2] == "| 0.00 | 0 | 0 | 40.00 | 25.00 |  |"
    assert lines[3] == "| 0.50 | 250 | 0 | 45.00 | 40.50 | 30.00 |"
    assert lines[4] == "| 1.00 | 500 | 0 | 47.00 | 43.25 | 33.00 |"


def test_bleu_goes_beside_chrf(tmp_path):
    records = [{"step": 1, "epoch": 0, "train_seconds": 36.0, "bleu": 1.5, "chrf": 2.5}]
    assert training_curve.table(records, bleu=True)[2] == "| 0.01 | 1 | 0 | 1.50 / 2.50 |"


def test_a_run_without_evaluations_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="no dev evaluation"):
        training_curve.read_history(tmp_path)
