"""The `nmt` command: translate and evaluate on the tiny exported model."""

import io
import json

import pytest

from nmt_cli import main as cli


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


def test_translate_gives_placeholders_back_exactly_unless_told_not_to(tiny_model_dir, capsys):
    from documents.placeholders import find_placeholders

    sentence = "Hello %s, you have {0} new messages."
    model = ["translate", "--model", str(tiny_model_dir), "--beam-size", "1"]
    code, out, _ = run_cli([*model, "--alignment", sentence, "I love you."], capsys)
    assert code == 0
    lines = out.splitlines()
    assert sorted(p.text for p in find_placeholders(lines[0])) == ["%s", "{0}"]
    assert "pharaoh:" in out  # the table counts the words with the placeholders
    _, plain, _ = run_cli([*model, "--no-placeholders", "I love you."], capsys)
    assert plain.splitlines()[0] in lines, "a sentence without placeholders reads the same"
    code, raw, _ = run_cli([*model, "--no-placeholders", "%s"], capsys)
    assert code == 0 and raw != "%s\n"  # the model read it as text
    _, kept, _ = run_cli([*model, "%s"], capsys)
    assert kept == "%s\n"


def test_translate_with_a_glossary_writes_its_terms(tiny_model_dir, capsys, tmp_path):
    terms = tmp_path / "terms.tsv"
    terms.write_text("black cat\tchat noir\nFirefox\tFirefox\n", encoding="utf-8")
    model = ["translate", "--model", str(tiny_model_dir), "--beam-size", "1"]
    code, out, _ = run_cli([*model, "--glossary", str(terms), "--alignment",
                            "The black cat is here."], capsys)
    assert code == 0
    assert "chat noir" in out.splitlines()[0]
    assert "glossary: 'black cat' 4:13 -> 'chat noir'" in out
    _, plain, _ = run_cli([*model, "I love you."], capsys)
    _, unmatched, _ = run_cli([*model, "--glossary", str(terms), "I love you."], capsys)
    assert unmatched == plain, "a sentence without a term reads exactly as without a glossary"
    terms.write_text("cat\tchat\ncat\tmatou\n", encoding="utf-8")
    code, _, err = run_cli([*model, "--glossary", str(terms), "The cat."], capsys)
    assert code == 2 and f"{terms}, line 2: 'cat' is already translated 'chat'" in err
    code, _, err = run_cli([*model, "--glossary-exact-case", "The cat."], capsys)
    assert code == 2 and "--glossary FILE" in err


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


def test_evaluate_scores_each_domain_of_a_mixed_test_set(tiny_model_dir, tiny_pairs_path,
                                                        capsys, tmp_path):
    lines = tiny_pairs_path.read_text(encoding="utf-8").splitlines()[:8]
    mixed = tmp_path / "dev.tsv"
    mixed.write_text("".join(f"{line}\t{'laws' if i < 3 else 'ui'}\n"
                             for i, line in enumerate(lines)), encoding="utf-8")
    results = tmp_path / "results.json"
    code, out, _ = run_cli(["evaluate", "--model", str(tiny_model_dir), "--test", str(mixed),
                            "--beam-size", "1", "--json", str(results)], capsys)
    assert code == 0
    domains = json.loads(results.read_text())["translation"]["domains"]
    assert {name: d["sentences"] for name, d in domains.items()} == {"laws": 3, "ui": 5}
    assert "  laws: BLEU" in out and "  ui: BLEU" in out


def test_evaluate_needs_something_to_score(tiny_model_dir, capsys):
    code, _, err = run_cli(["evaluate", "--model", str(tiny_model_dir)], capsys)
    assert code == 2
    assert "--test" in err


@pytest.mark.parametrize("item", ["optim.max_steps", "max_steps=3"])
def test_train_rejects_malformed_overrides(item, capsys):
    code, _, err = run_cli(["train", "--config", "x.yaml", "--run", "r", "--set", item], capsys)
    assert code == 2
    assert "SECTION.KEY=VALUE" in err


def test_train_stopped_on_several_workers_exits_1_with_one_line(capsys, monkeypatch):
    from training import train

    def stopped(*args, **kwargs):
        raise train.TrainingInterrupted("training stopped by a SIGTERM at step 20 on all 2 "
                                        "workers, checkpoint saved")

    monkeypatch.setattr(train, "run", stopped)
    code, _, err = run_cli(["train", "--config", "x.yaml", "--run", "r"], capsys)
    assert code == 1  # a job controller must start the workers again
    assert err.strip() == ("nmt train: training stopped by a SIGTERM at step 20 on all 2 "
                           "workers, checkpoint saved")


def test_align_writes_one_pharaoh_line_per_pair(tiny_model_dir, capsys, tmp_path):
    source, target = tmp_path / "en.txt", tmp_path / "fr.txt"
    source.write_text("I love you .\nthe cat\n\n")
    target.write_text("je t' aime .\nle chat\n\n")
    code, out, _ = run_cli(["align", "--model", str(tiny_model_dir), "--source", str(source),
                            "--target", str(target)], capsys)
    assert code == 0
    lines = out.split("\n")[:-1]
    assert len(lines) == 3 and lines[2] == "", "a blank pair keeps its (empty) line"
    words = [len("je t' aime .".split()), len("le chat".split())]
    for line, target_words in zip(lines[:2], words, strict=True):
        links = [tuple(int(x) for x in link.split("-")) for link in line.split()]
        assert links and all(j < target_words for _, j in links)


def test_align_json_lines_from_a_tsv(tiny_model_dir, capsys, tmp_path):
    pairs, output = tmp_path / "pairs.tsv", tmp_path / "out.jsonl"
    pairs.write_text("I love you.\tJe t'aime.\nThe cat.\tLe chat.\n")
    code, _, _ = run_cli(["align", "--model", str(tiny_model_dir), "--tsv", str(pairs),
                          "--alignment", "--output", str(output)], capsys)
    assert code == 0
    records = [json.loads(line) for line in output.read_text().splitlines()]
    assert [r["target"] for r in records] == ["Je t'aime.", "Le chat."]
    for record in records:
        matrix = record["alignment"]
        assert len(matrix) == len(record["target_tokens"])
        assert all(len(row) == len(record["source_tokens"]) for row in matrix)
        pieces = record["piece_scores"]
        assert len(pieces) == len(record["target_tokens"]) and all(p <= 0 for p in pieces)
        assert record["score"] == pytest.approx(sum(pieces), abs=1e-3)
        assert record["confidence"] == pytest.approx(sum(pieces) / len(pieces), abs=1e-3)
        assert len(record["word_scores"]) == len(record["target"].split())


def test_align_refuses_a_missing_target(tiny_model_dir, capsys, tmp_path):
    source, target = tmp_path / "en.txt", tmp_path / "fr.txt"
    source.write_text("I love you .\nthe cat\n")
    target.write_text("je t' aime .\n\n")
    code, _, err = run_cli(["align", "--model", str(tiny_model_dir), "--source", str(source),
                            "--target", str(target)], capsys)
    assert code == 2
    assert "pair 2 has a source but an empty target" in err


def test_align_corpus_writes_links_for_every_pair(capsys, tmp_path, tiny_pairs_path):
    pytest.importorskip("eflomal", reason="needs the [align] extra (installed by [dev])")
    config = tmp_path / "c.yaml"
    config.write_text(f"data: {{train: {tiny_pairs_path}, dev: {tiny_pairs_path}}}\n"
                      "tokenizer: {vocab_size: 150}\n")
    code, out, _ = run_cli(["align-corpus", "--config", str(config), "--run",
                            str(tmp_path / "run"), "--symmetrization", "grow-diag-final-and"],
                           capsys)
    assert code == 0
    lines = (tmp_path / "run" / "alignments.txt").read_text().splitlines()
    assert f"{len(lines)} pairs aligned" in out
    assert (tmp_path / "run" / "tokenizer" / "tokenizer.json").exists()


def test_translate_prints_only_its_own_output(tiny_model_dir):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("TF_CPP_MIN_LOG_LEVEL", "NMT_VERBOSE")}
    done = subprocess.run(
        [sys.executable, "-m", "nmt_cli", "translate", "--model", str(tiny_model_dir),
         "--beam-size", "1", "Good morning."],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", "no TensorFlow, absl or SentencePiece logs"
    assert len(done.stdout.splitlines()) == 1
    failed = subprocess.run(
        [sys.executable, "-m", "nmt_cli", "translate", "--model", str(tiny_model_dir),
         "--beam-size", "0", "Hi."],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )
    assert failed.returncode == 2
    assert failed.stderr.startswith("nmt translate: error: beam_size"), "errors still show"


def test_export_records_a_recommended_beam_that_becomes_the_default(tiny_model_dir, tmp_path,
                                                                    capsys):
    import numpy as np
    import tensorflow as tf

    from nmt.constants import METADATA_PATH
    from nmt.inference.export import DEFAULT_OPTIONS
    from nmt.inference.translator import Translator
    from nmt.types import DecodeOptions

    assert cli.main(["export", "--from-export", str(tiny_model_dir), "--out", str(tmp_path),
                     "--version", "2", "--recommended-beam-size", "1",
                     "--precision", "float32"]) == 0
    metadata = json.loads((tmp_path / "2" / METADATA_PATH).read_text())
    assert metadata["recommended_decoding"] == {"beam_size": 1}
    assert Translator.load(tmp_path / "2").info.default_options == DecodeOptions(beam_size=1)
    # TensorFlow Serving users get it too: serving_default decodes greedily.
    loaded = tf.saved_model.load(str(tmp_path / "2"))
    sentences = tf.constant(["I like coffee.", "We eat bread.", "Where is the station?",
                             "She reads a book.", "It is cold today.", "Thank you."])

    def scores(beam_size):
        out = loaded.signatures["translate_with_options"](
            sentences=sentences, **{**DEFAULT_OPTIONS, "beam_size": beam_size})
        return out["scores"].numpy()[:, 0]

    assert not np.allclose(scores(5), scores(1))  # the two decodings differ on this model
    np.testing.assert_array_equal(
        loaded.signatures["serving_default"](sentences=sentences)["scores"].numpy(), scores(1))
    assert cli.main(["export", "--from-export", str(tmp_path / "2"), "--out", str(tmp_path),
                     "--version", "3", "--recommended-beam-size", "0"]) == 2
    assert "beam_size must be between 1 and 64" in capsys.readouterr().err


def test_translate_through_a_server_has_the_server_apply_the_glossary(tiny_server, capsys,
                                                                      tmp_path):
    terms = tmp_path / "terms.tsv"
    terms.write_text("black cat\tchat noir\n", encoding="utf-8")
    server = ["translate", "--server", tiny_server.target, "--beam-size", "1"]

    code, out, _ = run_cli([*server, "--glossary", str(terms), "--alignment",
                            "The black cat is here."], capsys)
    assert code == 0 and "chat noir" in out.splitlines()[0].casefold()
    assert "glossary: 'black cat' 4:13 -> " in out, "the terms the server applied"
    code, _, err = run_cli([*server, "--glossary-id", "pets", "The cat."], capsys)
    assert code == 1 and "the server answered NOT_FOUND: glossary_id 'pets'" in err
    code, _, err = run_cli(["translate", "--glossary-id", "pets", "The cat."], capsys)
    assert code == 2 and "--glossary-id names a glossary of a server: add --server" in err


def test_translate_documents_with_a_glossary_in_process_and_through_a_server(
        tiny_model_dir, tiny_server, capsys, tmp_path):
    terms = tmp_path / "terms.tsv"
    terms.write_text("black cat\tchat noir\n", encoding="utf-8")
    line = "<p>The <b>black cat</b> is here.</p>"
    outputs = []
    for where in (["--model", str(tiny_model_dir)], ["--server", tiny_server.target]):
        code, out, _ = run_cli(["translate", *where, "--beam-size", "1", "--format", "html",
                                "--glossary", str(terms), line], capsys)
        assert code == 0
        outputs.append(out)

    assert "<b>chat noir</b>" in outputs[0].casefold()
    assert outputs[0] == outputs[1], "the server applies it as the command would"
