"""The `nmt` command: translate and evaluate on the tiny exported model."""

import io
import json

import pytest

from nmt import cli


def run_cli(argv, capsys, stdin: str | None = None, monkeypatch=None) -> tuple[int, str, str]:
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = cli.main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_translate_prints_one_line_per_sentence(tiny_model_dir, capsys):
    code, out, _ = run_cli(
        ["translate", "--model", str(tiny_model_dir), "--beam-size", "2", "I love you.", "Hi."],
        capsys,
    )
    assert code == 0
    assert len(out.splitlines()) == 2


def test_translate_reads_stdin(tiny_model_dir, capsys, monkeypatch):
    code, out, _ = run_cli(["translate", "--model", str(tiny_model_dir), "--beam-size", "1"],
                           capsys, stdin="I love you.\n\nThe cat.\n", monkeypatch=monkeypatch)
    assert code == 0
    assert len(out.splitlines()) == 2, "blank stdin lines are skipped"


def test_translate_alignment_table_and_plot(tiny_model_dir, capsys, tmp_path):
    plot = tmp_path / "attention.png"
    code, out, _ = run_cli(["translate", "--model", str(tiny_model_dir), "--alignment",
                            "--plot", str(plot), "The cat is black."], capsys)
    assert code == 0
    assert "pharaoh:" in out
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_translate_n_best_lists_ranked_hypotheses(tiny_model_dir, capsys):
    code, out, _ = run_cli(["translate", "--model", str(tiny_model_dir), "--beam-size", "3",
                            "--n-best", "3", "I love you."], capsys)
    assert code == 0
    ranks = [line.split("\t")[0] for line in out.splitlines()]
    assert ranks == ["1", "2", "3"]


def test_bad_options_give_a_clear_error(tiny_model_dir, capsys):
    code, _, err = run_cli(["translate", "--model", str(tiny_model_dir), "--beam-size", "0",
                            "Hi."], capsys)
    assert code == 2
    assert "beam_size" in err


def test_missing_model_says_where_it_looked(tmp_path, capsys):
    code, _, err = run_cli(["translate", "--model", str(tmp_path), "Hi."], capsys)
    assert code == 2
    assert str(tmp_path) in err


def test_evaluate_bleu_and_aer(tiny_model_dir, tiny_pairs_path, capsys, tmp_path):
    source, target, gold = tmp_path / "src.txt", tmp_path / "tgt.txt", tmp_path / "gold.txt"
    source.write_text("I love you .\nthe cat\n")
    target.write_text("je t' aime .\nle chat\n")
    gold.write_text("0-0 1-2 2-1 3-3\n0-0 1p1\n")
    results = tmp_path / "results.json"
    code, out, _ = run_cli(["evaluate", "--model", str(tiny_model_dir), "--test",
                            str(tiny_pairs_path), "--limit", "8", "--beam-size", "1",
                            "--pharaoh", str(source), str(target), str(gold),
                            "--json", str(results)], capsys)
    assert code == 0
    assert "BLEU" in out and "nrefs" in out, "prints the sacrebleu signature"
    saved = json.loads(results.read_text())
    assert 0.0 <= saved["translation"]["bleu"] <= 100.0
    assert 0.0 <= saved["alignment"]["aer"] <= 1.0
    assert saved["alignment"]["pairs"] == 2


def test_evaluate_needs_something_to_score(tiny_model_dir, capsys):
    code, _, err = run_cli(["evaluate", "--model", str(tiny_model_dir)], capsys)
    assert code == 2
    assert "--test" in err


@pytest.mark.parametrize("item", ["optim.max_steps", "max_steps=3"])
def test_train_rejects_malformed_overrides(item, capsys):
    code, _, err = run_cli(["train", "--config", "x.yaml", "--run", "r", "--set", item], capsys)
    assert code == 2
    assert "SECTION.KEY=VALUE" in err
