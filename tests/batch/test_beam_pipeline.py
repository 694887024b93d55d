import gzip
import json

import pytest
from batch_fakes import FakeEngine

from batch.beam_pipeline import (
    LENGTH_BUCKETS,
    TranslationModelHandler,
    main,
    source_length,
    split_output,
)
from documents.glossary import Glossary


@pytest.mark.parametrize("output, expected", [
    ("out/fr.jsonl", ("out/fr", ".jsonl")),
    ("gs://b/fr.jsonl.gz", ("gs://b/fr", ".jsonl.gz")),
    ("out/fr", ("out/fr", ".jsonl")),
])
def test_split_output(output, expected):
    assert split_output(output) == expected


def test_handler_batches_by_length():
    handler = TranslationModelHandler("models/en-fr", batch_size=8, max_wait_secs=3)
    kwargs = handler.batch_elements_kwargs()
    assert (kwargs["min_batch_size"], kwargs["max_batch_size"]) == (8, 8)
    assert kwargs["max_batch_duration_secs"] == 3
    assert kwargs["bucket_boundaries"] == list(LENGTH_BUCKETS)
    assert kwargs["length_fn"]((4, "twelve chars")) == source_length((4, "twelve chars")) == 12
    with pytest.raises(ValueError, match="batch_size=0"):
        TranslationModelHandler("models/en-fr", batch_size=0)


def test_handler_run_inference_returns_records():
    handler = TranslationModelHandler("unused", with_alignment=True)
    batch = [(3, "a longer one"), (9, "BAD"), (1, "b")]
    records = list(handler.run_inference(batch, FakeEngine(reject="BAD")))
    assert [r["line"] for r in records] == [3, 9, 1]
    assert [r["translation"] for r in records] == ["A LONGER ONE", None, "B"]
    assert records[1]["error"] == "rejected by the model: contains BAD"
    assert records[0]["alignment"]


def test_direct_runner_output_equals_nmt_batch(tmp_path, tiny_model_dir, tiny_pairs):
    from nmt_cli.main import main as nmt_main

    lines = [f"{english} {i}" for i, (english, _) in enumerate(tiny_pairs[:20])]
    lines[3], lines[11] = "", "x" * 90
    source = tmp_path / "in.txt.gz"
    source.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode() + b"caf\xe9\n"))
    options = ["--model", str(tiny_model_dir), "--beam-size", "2", "--batch-size", "4",
               "--max-chars", "80", "--alignment"]
    assert main(["--input", str(source), "--output", str(tmp_path / "beam" / "fr.jsonl"),
                 "--num-shards", "2", "--runner", "DirectRunner", *options]) == 0
    assert nmt_main(["batch", str(source), str(tmp_path / "local.jsonl"), "--no-progress",
                     *options]) == 0

    shards = sorted((tmp_path / "beam").iterdir())
    assert [p.name for p in shards] == ["fr-00000-of-00002.jsonl", "fr-00001-of-00002.jsonl"]
    beam = sorted((json.loads(line) for p in shards for line in p.read_text().splitlines()),
                  key=lambda record: record["line"])
    local = [json.loads(line) for line in (tmp_path / "local.jsonl").read_text().splitlines()]
    assert len(local) == 21
    assert [r["error"] for r in local if r["error"]] == [
        "empty line", "too long: 90 characters, at most 80 are translated",
        "undecodable: not valid UTF-8 at byte 3"]
    assert beam == local


def test_handler_translates_documents_when_given_a_format():
    handler = TranslationModelHandler("unused", document_format="html")
    batch = [(2, "Hi <b>there</b>. Bye."), (5, "Broken <b>tag."), (7, "One BAD. Two.")]

    records = list(handler.run_inference(batch, FakeEngine(reject="BAD")))

    assert [r["line"] for r in records] == [2, 5, 7]
    assert records[0]["translation"] == "HI <b>THERE</b>. BYE."
    assert [s["source"] for s in records[0]["sentences"]] == ["Hi there.", "Bye."]
    assert records[1]["error"].startswith("malformed HTML: <b> is never closed at character 7")
    assert records[2]["error"] == "sentence 1: rejected by the model: contains BAD"
    with pytest.raises(ValueError, match="Received: document_format='pdf'"):
        TranslationModelHandler("unused", document_format="pdf")


def test_direct_runner_documents_equal_nmt_batch(tmp_path, tiny_model_dir):
    from nmt_cli.main import main as nmt_main

    lines = ["I love <b>you</b>. The cat is black.", "<p>Hello.</p><p>Thank <i>you</i>.</p>",
             "Unclosed <b>tag.", "", "Good night."]
    source = tmp_path / "in.html.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    options = ["--model", str(tiny_model_dir), "--beam-size", "2", "--batch-size", "2",
               "--document-format", "html"]
    assert main(["--input", str(source), "--output", str(tmp_path / "beam" / "fr.jsonl"),
                 "--num-shards", "1", "--runner", "DirectRunner", *options]) == 0
    assert nmt_main(["batch", str(source), str(tmp_path / "local.jsonl"), "--no-progress",
                     *options]) == 0

    [shard] = (tmp_path / "beam").iterdir()
    beam = sorted((json.loads(line) for line in shard.read_text().splitlines()),
                  key=lambda record: record["line"])
    local = [json.loads(line) for line in (tmp_path / "local.jsonl").read_text().splitlines()]
    assert [r["line"] for r in local] == [1, 2, 3, 4, 5]
    assert [len(r.get("sentences") or ()) for r in local] == [2, 2, 0, 0, 1]
    assert local[1]["translation"].startswith("<p>") and local[2]["error"].startswith(
        "malformed HTML")
    assert beam == local


def test_handler_writes_a_glossarys_terms():
    glossary = Glossary.from_entries([("longer", "plus long")])
    handler = TranslationModelHandler("unused", glossary=glossary)

    records = list(handler.run_inference([(3, "a longer one"), (4, "b")], FakeEngine()))

    assert [r["translation"] for r in records] == ["A plus long ONE", "B"]
    assert [[t["source"] for t in r["applied_terms"]] for r in records] == [["longer"], []]
    documents = TranslationModelHandler("unused", document_format="text", glossary=glossary)
    [record] = documents.run_inference([(1, "One longer. Two.")], FakeEngine())
    assert record["translation"] == "ONE plus long. TWO."
    assert record["applied_terms"][0]["source_span"] == [4, 10]
