import gzip
import json

import numpy as np
import pytest
from batch_fakes import FakeEngine

from batch.checkpoint import PartialOutput
from batch.job import JobConfig, run_job
from batch.readers import InputFormat
from documents.glossary import Glossary

LINES = [
    "a rather long sentence of seven words", "short", "", "medium size line", "\udcff",
    "x" * 40, "two words", "  ", "one more sentence here", "z",
]


def write_input(path, lines=LINES):
    # "\udcff" stands for a byte that is not UTF-8.
    data = "\n".join(lines).encode("utf-8", errors="surrogateescape") + b"\n"
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def read_records(path):
    data = path.read_bytes()
    if path.name.endswith(".gz"):
        data = gzip.decompress(data)
    return [json.loads(line) for line in data.decode().splitlines()]


def config(tmp_path, **overrides):
    values = {"input": tmp_path / "in.txt", "output": tmp_path / "out.jsonl",
              "input_format": InputFormat(max_chars=38), "window": 4}
    return JobConfig(**{**values, **overrides})


def test_records_come_back_in_input_order_with_errors(tmp_path):
    job = config(tmp_path)
    write_input(job.input)
    result = run_job(job, FakeEngine())
    records = read_records(job.output)
    assert [r["line"] for r in records] == list(range(1, 11))
    assert [r["translation"] for r in records] == [
        "A RATHER LONG SENTENCE OF SEVEN WORDS", "SHORT", None, "MEDIUM SIZE LINE", None, None,
        "TWO WORDS", None, "ONE MORE SENTENCE HERE", "Z"]
    assert [r["error"] for r in records if r["error"]] == [
        "empty line", "undecodable: not valid UTF-8 at byte 0",
        "too long: 40 characters, at most 38 are translated", "empty line"]
    assert (result.lines, result.errors, result.resumed_from) == (10, 4, 0)
    assert not PartialOutput(job.output).part.exists()
    assert not PartialOutput(job.output).checkpoint.exists()


def test_each_window_is_translated_sorted_by_length(tmp_path):
    job = config(tmp_path)
    write_input(job.input)
    engine = FakeEngine()
    run_job(job, engine)
    assert engine.calls == [
        ["short", "medium size line", "a rather long sentence of seven words"],  # lines 1-4
        ["two words"],                                                          # lines 5-8
        ["z", "one more sentence here"],                                        # lines 9-10
    ]


def test_rejected_sentence_is_recorded_and_the_job_goes_on(tmp_path):
    job = config(tmp_path)
    write_input(job.input)
    records = (run_job(job, FakeEngine(reject="medium")), read_records(job.output))[1]
    assert records[3]["error"] == "rejected by the model: contains medium"
    assert records[0]["translation"] == "A RATHER LONG SENTENCE OF SEVEN WORDS"
    assert records[9]["translation"] == "Z"


def test_gzip_input_and_output(tmp_path):
    job = config(tmp_path, input=tmp_path / "in.txt.gz", output=tmp_path / "out.jsonl.gz")
    write_input(job.input)
    run_job(job, FakeEngine())
    assert [r["translation"] for r in read_records(job.output)][:2] == [
        "A RATHER LONG SENTENCE OF SEVEN WORDS", "SHORT"]


def test_text_output_has_one_line_per_input_line(tmp_path):
    job = config(tmp_path, output=tmp_path / "out.txt", output_format="text")
    write_input(job.input)
    run_job(job, FakeEngine())
    lines = job.output.read_text().split("\n")
    assert lines[:4] == ["A RATHER LONG SENTENCE OF SEVEN WORDS", "SHORT", "", "MEDIUM SIZE LINE"]
    assert len(lines) == len(LINES) + 1 and lines[-1] == ""


def test_resume_after_a_crash_gives_identical_bytes(tmp_path):
    reference = config(tmp_path, output=tmp_path / "ref.jsonl.gz")
    write_input(reference.input)
    run_job(reference, FakeEngine())

    job = config(tmp_path, output=tmp_path / "out.jsonl.gz", resume=True)
    with pytest.raises(RuntimeError, match="engine crashed"):
        run_job(job, FakeEngine(fail_on_call=2))
    partial = PartialOutput(job.output)
    assert not job.output.exists() and partial.part.exists()
    with open(partial.part, "ab") as f:
        f.write(b"bytes of a window whose checkpoint was never written")

    result = run_job(job, FakeEngine())
    assert job.output.read_bytes() == reference.output.read_bytes()
    assert (result.resumed_from, result.lines) == (4, 6)


def test_resume_refuses_a_changed_job(tmp_path):
    job = config(tmp_path, resume=True)
    write_input(job.input)
    with pytest.raises(RuntimeError):
        run_job(job, FakeEngine(fail_on_call=2))
    changed = config(tmp_path, resume=True, window=5)
    with pytest.raises(ValueError, match="cannot resume: window changed"):
        run_job(changed, FakeEngine())
    # Without --resume the partial output is discarded and the job starts over.
    result = run_job(config(tmp_path, window=5), FakeEngine())
    assert result.lines == 10 and len(read_records(job.output)) == 10


def test_resume_of_a_finished_job_does_nothing(tmp_path):
    job = config(tmp_path, resume=True)
    write_input(job.input)
    run_job(job, FakeEngine())
    before = job.output.read_bytes()
    engine = FakeEngine()
    assert run_job(job, engine).lines == 0
    assert engine.calls == [] and job.output.read_bytes() == before


def test_progress_reports_windows(tmp_path):
    job = config(tmp_path)
    write_input(job.input)
    seen = []
    run_job(job, FakeEngine(), on_progress=lambda lines, done: seen.append((lines, done)))
    assert seen == [(4, 4), (4, 8), (2, 10)]


@pytest.mark.parametrize("overrides, message", [
    ({"window": 0}, "window=0"),
    ({"output_format": "csv"}, "Received: 'csv'"),
])
def test_config_validation(tmp_path, overrides, message):
    with pytest.raises(ValueError, match=message):
        config(tmp_path, **overrides)
    with pytest.raises(ValueError, match="input and output must differ"):
        config(tmp_path, output=tmp_path / "in.txt")


def test_job_with_the_tiny_model(tmp_path, tiny_model_dir, tiny_pairs):
    from batch.engines import LocalEngine
    from nmt.types import DecodeOptions

    lines = [english for english, _ in tiny_pairs[:9]] + ["", "\x00", "   "]
    job = config(tmp_path, with_alignment=True, input_format=InputFormat(max_chars=200))
    write_input(job.input, lines)
    engine = LocalEngine.load(tiny_model_dir, DecodeOptions(beam_size=2), batch_size=2)
    run_job(job, engine)
    records = read_records(job.output)
    assert [r["error"] for r in records] == [None] * 9 + ["empty line"] * 3
    for record in records[:9]:
        matrix = np.array(record["alignment"])
        assert matrix.shape == (len(record["target_tokens"]), len(record["source_tokens"]))
        np.testing.assert_allclose(matrix.sum(axis=1), 1.0, atol=1e-3)
        # An untrained model may legitimately translate to "" (EOS first).
        assert isinstance(record["score"], float) and isinstance(record["translation"], str)
        # Each word's mean piece log-probability, from the search, as Align records have.
        assert len(record["word_scores"]) == len(record["translation"].split())
        assert all(score <= 0 for score in record["word_scores"])


DOCUMENTS = [
    "Hello there. How are you?", "", "Click <b>Save</b> now. Then quit.", "Hi <b>there.",
    "Hello there. See <i>you</i>.",
]


def test_documents_are_split_translated_together_and_joined(tmp_path):
    job = config(tmp_path, document_format="html", input_format=InputFormat(), window=10)
    write_input(job.input, DOCUMENTS)
    engine = FakeEngine()

    result = run_job(job, engine)

    records = read_records(job.output)
    assert engine.calls == [sorted({"Hello there.", "How are you?", "Click Save now.",
                                    "Then quit.", "See you."}, key=lambda s: (len(s), s))]
    first, blank, page, broken, last = records
    assert first["translation"] == "HELLO THERE. HOW ARE YOU?"
    assert [(s["source_span"], s["target_span"], s["source"]) for s in first["sentences"]] == [
        ([0, 12], [0, 12], "Hello there."), ([13, 25], [13, 25], "How are you?")]
    assert first["sentences"][0]["word_alignment"] == "0-0 1-1"
    assert first["char_alignment"].startswith("0:4-0:4 6:11-6:11")
    assert page["translation"] == "CLICK <b>SAVE</b> NOW. THEN QUIT."
    assert last["translation"].count("<i>") == 1 and last["sentences"][1]["source"] == "See you."
    assert blank["error"] == "empty line"
    assert broken["translation"] is None and broken["error"].startswith(
        "malformed HTML: <b> is never closed at character 3")
    assert (result.lines, result.errors) == (5, 2)


def test_a_rejected_sentence_makes_its_document_an_error(tmp_path):
    job = config(tmp_path, document_format="text", input_format=InputFormat())
    write_input(job.input, ["Fine here. Bad one.", "All good."])

    run_job(job, FakeEngine(reject="Bad"))

    records = read_records(job.output)
    assert records[0]["error"] == "sentence 2: rejected by the model: contains Bad"
    assert records[1]["translation"] == "ALL GOOD." and records[1]["error"] is None


def test_documents_resume_to_identical_bytes_and_the_format_is_part_of_the_job(tmp_path):
    lines = DOCUMENTS * 3
    reference = config(tmp_path, output=tmp_path / "ref.jsonl", document_format="html",
                       input_format=InputFormat())
    write_input(reference.input, lines)
    run_job(reference, FakeEngine())

    job = config(tmp_path, resume=True, document_format="html", input_format=InputFormat())
    with pytest.raises(RuntimeError, match="engine crashed"):
        run_job(job, FakeEngine(fail_on_call=2))
    with pytest.raises(ValueError, match="cannot resume: document_format changed"):
        run_job(config(tmp_path, resume=True, document_format="xml",
                       input_format=InputFormat()), FakeEngine())
    result = run_job(job, FakeEngine())

    assert job.output.read_bytes() == reference.output.read_bytes()
    assert result.resumed_from == 4


def test_an_unknown_document_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="document format must be one of text, html, xml. "
                                         "Received: 'pdf'"):
        config(tmp_path, document_format="pdf")


def test_placeholders_come_back_and_the_engine_reads_sentences_without_them(tmp_path):
    lines = ["Saved %d files.", "Delete '%s'?", "No placeholder here."]
    job = config(tmp_path, input_format=InputFormat())
    write_input(job.input, lines)
    engine = FakeEngine()

    run_job(job, engine)

    assert engine.calls == [["Delete", "Saved files.", "No placeholder here."]]
    records = read_records(job.output)
    assert [r["translation"] for r in records] == [
        "SAVED %d FILES.", "DELETE '%s'?", "NO PLACEHOLDER HERE."]
    assert [r["source"] for r in records] == lines
    assert records[0]["word_alignment"] == "0-0 2-2"  # words of the line as given


def test_placeholders_off_the_engine_reads_them_and_a_resume_must_agree(tmp_path):
    job = config(tmp_path, input_format=InputFormat(), placeholders=False)
    write_input(job.input, ["Saved %d files."])
    engine = FakeEngine()

    run_job(job, engine)

    assert engine.calls == [["Saved %d files."]]
    assert read_records(job.output)[0]["translation"] == "SAVED %D FILES."
    job.output.unlink()
    with pytest.raises(RuntimeError, match="engine crashed"):
        run_job(config(tmp_path, input_format=InputFormat(), window=1), FakeEngine(fail_on_call=1))
    with pytest.raises(ValueError, match="cannot resume: placeholders changed"):
        run_job(config(tmp_path, input_format=InputFormat(), window=1, resume=True,
                       placeholders=False), FakeEngine())


def test_documents_keep_their_placeholders(tmp_path):
    job = config(tmp_path, document_format="html", input_format=InputFormat())
    write_input(job.input, ["<p>Saved %d files. Delete <b>node</b> '%s'?</p>"])
    engine = FakeEngine()

    run_job(job, engine)

    assert engine.calls == [["Delete node", "Saved files."]]
    [record] = read_records(job.output)
    assert record["translation"] == "<p>SAVED %d FILES. DELETE <b>NODE</b> '%s'?</p>"


GLOSSARY = Glossary.from_entries([("two words", "deux mots"), ("save", "enregistrer")])


def test_a_glossary_is_written_into_each_record_and_the_engine_reads_as_without(tmp_path):
    plain = config(tmp_path, output=tmp_path / "plain.jsonl")
    write_input(plain.input)
    without, with_glossary = FakeEngine(), FakeEngine()
    run_job(plain, without)

    run_job(config(tmp_path, glossary=GLOSSARY), with_glossary)

    records = read_records(tmp_path / "out.jsonl")
    assert with_glossary.calls == without.calls
    two = records[6]
    assert two["translation"] == "Deux mots"
    assert two["applied_terms"] == [{"source": "two words", "target": "Deux mots",
                                     "source_span": [0, 9], "target_span": [0, 9],
                                     "placement": "aligned", "matched": "two words",
                                     "form": ""}]
    assert records[0]["applied_terms"] == [] and records[2]["error"] == "empty line"
    assert "applied_terms" not in read_records(plain.output)[0], "as before without a glossary"


def test_documents_get_their_terms_before_they_are_joined(tmp_path):
    job = config(tmp_path, document_format="html", input_format=InputFormat(),
                 glossary=GLOSSARY)
    write_input(job.input, ["Click <b>Save</b> now. Then quit."])

    run_job(job, FakeEngine())

    [record] = read_records(job.output)
    assert record["translation"] == "CLICK <b>enregistrer</b> NOW. THEN QUIT."
    [term] = record["applied_terms"]
    assert record["source"][slice(*term["source_span"])] == "Save"
    assert record["translation"][slice(*term["target_span"])] == "enregistrer"
    assert record["sentences"][0]["applied_terms"][0]["source_span"] == [6, 10]
    assert record["sentences"][1]["applied_terms"] == []


def test_the_glossary_is_part_of_the_job(tmp_path):
    job = config(tmp_path, resume=True, glossary=GLOSSARY)
    write_input(job.input)
    with pytest.raises(RuntimeError, match="engine crashed"):
        run_job(job, FakeEngine(fail_on_call=2))

    changed = Glossary.from_entries([("two words", "deux paroles")])
    with pytest.raises(ValueError, match="cannot resume: glossary changed"):
        run_job(config(tmp_path, resume=True, glossary=changed), FakeEngine())
    with pytest.raises(ValueError, match="cannot resume: glossary changed"):
        run_job(config(tmp_path, resume=True), FakeEngine())
    assert run_job(job, FakeEngine()).resumed_from == 4
