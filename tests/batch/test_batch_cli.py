"""`nmt batch` end to end: formats, kill -9 and --resume, the server path."""

import gzip
import json
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
from batch_fakes import fake_translation

from batch.job import COMMIT_DELAY_ENV
from nmt.types import DecodeOptions
from nmt_cli.main import main

REPO = Path(__file__).resolve().parents[2]


def records(path):
    data = path.read_bytes()
    text = gzip.decompress(data).decode() if path.name.endswith(".gz") else data.decode()
    return [json.loads(line) for line in text.splitlines()]


def english(tiny_pairs, n):
    """`n` distinct short lines made from the fixture's English side."""
    return [f"{tiny_pairs[i % len(tiny_pairs)][0]} {i}" for i in range(n)]


def test_batch_writes_jsonl_and_text(tmp_path, tiny_model_dir, tiny_pairs):
    source = tmp_path / "in.txt"
    source.write_text("\n".join(english(tiny_pairs, 5) + ["", "still going"]) + "\n")
    common = ["--model", str(tiny_model_dir), "--beam-size", "2", "--no-progress"]
    assert main(["batch", str(source), str(tmp_path / "out.jsonl"), "--alignment", *common]) == 0
    assert main(["batch", str(source), str(tmp_path / "out.txt"), *common]) == 0
    jsonl = records(tmp_path / "out.jsonl")
    assert [r["line"] for r in jsonl] == list(range(1, 8))
    assert jsonl[5]["error"] == "empty line" and jsonl[6]["error"] is None
    assert {"source_tokens", "target_tokens", "alignment"} <= set(jsonl[0])
    text = (tmp_path / "out.txt").read_text().split("\n")
    assert text == [r["translation"] or "" for r in jsonl] + [""]


def test_batch_translates_documents_with_their_markup(tmp_path, tiny_model_dir):
    from documents.markup import plan_document
    from documents.sentences import join_documents, sentences_of
    from nmt.inference.translator import Translator
    from nmt.types import DecodeOptions

    lines = ["<p>Good morning. <b>How</b> are you?</p>", "Hi <b>there."]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n")
    common = ["--model", str(tiny_model_dir), "--beam-size", "1", "--no-progress"]
    assert main(["batch", str(source), str(tmp_path / "out.jsonl"), "--document-format", "html",
                 *common]) == 0

    page, broken = records(tmp_path / "out.jsonl")
    plan = plan_document(lines[0], "html")
    translator = Translator.load(tiny_model_dir)
    [want] = join_documents([plan], translator.translate(sentences_of([plan]),
                                                         DecodeOptions(beam_size=1)))
    assert page["translation"] == want.text and page["translation"].count("<b>") == 1
    assert [s["source"] for s in page["sentences"]] == ["Good morning.", "How are you?"]
    assert broken["error"].startswith("malformed HTML: <b> is never closed at character 3")


def test_batch_reads_tsv_columns_and_jsonl_fields(tmp_path, tiny_model_dir):
    (tmp_path / "in.tsv").write_text("1\tGood morning.\n2\n")
    (tmp_path / "in.jsonl").write_text('{"en": "Good morning."}\n{"fr": "x"}\n')
    common = ["--model", str(tiny_model_dir), "--beam-size", "1", "--no-progress"]
    main(["batch", str(tmp_path / "in.tsv"), str(tmp_path / "a.jsonl"), "--column", "1", *common])
    main(["batch", str(tmp_path / "in.jsonl"), str(tmp_path / "b.jsonl"), "--field", "en",
          *common])
    tsv, jsonl = records(tmp_path / "a.jsonl"), records(tmp_path / "b.jsonl")
    assert tsv[0]["source"] == jsonl[0]["source"] == "Good morning."
    assert tsv[0]["translation"] == jsonl[0]["translation"]
    assert tsv[1]["error"] == "no column 1: the line has 1 column(s)"
    assert jsonl[1]["error"] == "no field 'en' in the JSON object"


def test_batch_reports_a_missing_input(tmp_path, capsys):
    assert main(["batch", str(tmp_path / "nope.txt"), str(tmp_path / "out.jsonl")]) == 2
    assert "no input file" in capsys.readouterr().err


def test_batch_precision_picks_a_path_of_a_local_model_only(tmp_path, tiny_model_dir, capsys):
    source = tmp_path / "in.txt"
    source.write_text("I love you.\n")
    out = str(tmp_path / "out.jsonl")
    assert main(["batch", str(source), out, "--server", "host:1", "--precision", "float32"]) == 2
    assert "applies to a local --model" in capsys.readouterr().err
    assert main(["batch", str(source), out, "--model", str(tiny_model_dir),
                 "--precision", "bfloat16"]) == 2
    assert "carries no bfloat16 path" in capsys.readouterr().err


def _wait_for_progress(checkpoint: Path, lines: int, process, timeout: float = 120) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end and process.poll() is None:
        if checkpoint.exists():
            done = json.loads(checkpoint.read_text())["lines"]
            if done >= lines:
                return done
        time.sleep(0.05)
    pytest.fail(f"the job did not reach line {lines} (exit code {process.poll()})")


def test_kill_9_then_resume_gives_identical_output(tmp_path, tiny_model_dir, tiny_pairs,
                                                   monkeypatch):
    lines = english(tiny_pairs, 400)
    lines[7] = ""
    source = tmp_path / "in.txt.gz"
    source.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    output = tmp_path / "out.jsonl.gz"
    args = ["batch", str(source), str(output), "--model", str(tiny_model_dir), "--window", "25",
            "--batch-size", "25", "--beam-size", "1", "--no-progress", "--resume"]
    env = {**os.environ, COMMIT_DELAY_ENV: "0.25", "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, "-m", "nmt_cli", *args], cwd=REPO, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        done = _wait_for_progress(tmp_path / "out.jsonl.gz.part.json", 50, process)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert done < 400 and not output.exists()
    assert (tmp_path / "out.jsonl.gz.part").exists()

    monkeypatch.delenv(COMMIT_DELAY_ENV, raising=False)
    assert main(args) == 0
    reference = tmp_path / "reference.jsonl.gz"
    assert main([*args[:2], str(reference), *args[3:-1]]) == 0
    assert output.read_bytes() == reference.read_bytes()
    assert [r["line"] for r in records(output)] == list(range(1, 401))
    assert not (tmp_path / "out.jsonl.gz.part").exists()


def _fake_client_module(created):
    class TranslationClient:
        def __init__(self, target, *, timeout=None, root_certificates=None, token=None):
            created.append({"target": target, "timeout": timeout, "token": token})

        def translate_stream(self, batches, options=None, keep_placeholders=True):
            created.append(options)
            for batch in batches:
                yield [fake_translation(s) for s in batch]

        def default_options(self):  # the served model's: a greedy student's
            return DecodeOptions(beam_size=1)

        def close(self):
            created.append("closed")

    return types.SimpleNamespace(TranslationClient=TranslationClient)


def test_batch_through_a_server_client(tmp_path, monkeypatch):
    created = []
    monkeypatch.setitem(sys.modules, "nmt_api.client", _fake_client_module(created))
    source = tmp_path / "in.txt"
    source.write_text("one two\n\nthree\n")
    assert main(["batch", str(source), str(tmp_path / "out.jsonl"), "--server", "host:123",
                 "--token", "secret", "--timeout", "5", "--no-progress"]) == 0
    assert created == [{"target": "host:123", "timeout": 5.0, "token": "secret"},
                       DecodeOptions(beam_size=1), "closed"]  # the server's default decoding
    assert [r["translation"] for r in records(tmp_path / "out.jsonl")] == ["ONE TWO", None, "THREE"]


def test_batch_through_a_real_server(tmp_path, tiny_model_dir, tiny_pairs):
    pytest.importorskip("nmt_api.client")
    from serving.server import ServerConfig
    from serving.testing import ServerThread

    source = tmp_path / "in.txt"
    source.write_text("\n".join(english(tiny_pairs, 30) + ["", "x " * 400]) + "\n")
    common = ["--beam-size", "2", "--batch-size", "8", "--window", "16", "--no-progress"]
    config = ServerConfig(model_dir=Path(tiny_model_dir), host="127.0.0.1", port=0,
                          metrics_port=0)
    with ServerThread(config) as server:
        server.wait_until_serving()
        assert main(["batch", str(source), str(tmp_path / "server.jsonl"), "--server",
                     server.target, *common]) == 0
    assert main(["batch", str(source), str(tmp_path / "local.jsonl"), "--model",
                 str(tiny_model_dir), *common]) == 0
    remote, local = records(tmp_path / "server.jsonl"), records(tmp_path / "local.jsonl")
    assert [r["line"] for r in remote] == list(range(1, 33))
    assert remote[-1]["error"].startswith("too long: reaches the model's limit")
    for a, b in zip(remote, local, strict=True):
        assert (a["translation"], a["word_alignment"], a["error"]) == (
            b["translation"], b["word_alignment"], b["error"])
        if b["score"] is not None:
            assert a["score"] == pytest.approx(b["score"], abs=1e-3)


def test_batch_with_a_glossary_through_a_server_client(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "nmt_api.client", _fake_client_module([]))
    source, terms = tmp_path / "in.txt", tmp_path / "terms.tsv"
    source.write_text("one two\n\nthree\n")
    terms.write_text("three\ttrois\n", encoding="utf-8")

    assert main(["batch", str(source), str(tmp_path / "out.jsonl"), "--server", "host:123",
                 "--glossary", str(terms), "--no-progress"]) == 0

    written = records(tmp_path / "out.jsonl")
    assert [r["translation"] for r in written] == ["ONE TWO", None, "Trois"]
    assert [t["source"] for t in written[2]["applied_terms"]] == ["three"]


def test_batch_refuses_a_bad_glossary_naming_its_line(tmp_path, capsys):
    source, terms = tmp_path / "in.txt", tmp_path / "terms.tsv"
    source.write_text("one\n")
    terms.write_text("one\tun\ntwo\n", encoding="utf-8")

    assert main(["batch", str(source), str(tmp_path / "out.jsonl"), "--glossary", str(terms),
                 "--no-progress"]) == 2

    assert f"{terms}, line 2: expected 2 columns" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()


def test_batch_translates_a_directory_of_files_with_the_model(tmp_path, tiny_model_dir, capsys):
    source = tmp_path / "in"
    (source / "docs").mkdir(parents=True)
    (source / "docs" / "guide.md").write_text("# Saving\n\nGood morning.\n\n    code stays\n")
    (source / "talk.srt").write_text("1\n00:00:01,000 --> 00:00:02,000\nHow are you?\n")
    out = tmp_path / "out"
    common = ["--model", str(tiny_model_dir), "--beam-size", "1", "--no-progress"]
    assert main(["batch", str(source), str(out), *common]) == 0
    assert "2 files translated, 0 with errors" in capsys.readouterr().err
    markdown = (out / "docs" / "guide.md").read_text()
    assert markdown.startswith("# ") and "Good morning." not in markdown
    assert markdown.endswith("\n\n    code stays\n")
    assert "00:00:01,000 --> 00:00:02,000\n" in (out / "talk.srt").read_text()
    assert main(["batch", str(source), str(out), "--resume", *common]) == 0
    assert "0 files translated, 2 already there" in capsys.readouterr().err
