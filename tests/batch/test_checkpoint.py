import gzip
import json

import pytest

from batch.checkpoint import Checkpoint, PartialOutput, load_checkpoint, save_checkpoint


def test_checkpoint_round_trip_leaves_no_temporary(tmp_path):
    path = tmp_path / "out.jsonl.part.json"
    assert load_checkpoint(path) is None
    checkpoint = Checkpoint({"input": "in.txt", "window": [1, 2]}, lines=40, output_bytes=999,
                            errors=3)
    save_checkpoint(path, checkpoint)
    assert load_checkpoint(path) == checkpoint
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_checkpoint_of_another_version_is_refused(tmp_path):
    path = tmp_path / "ck.json"
    path.write_text(json.dumps({"version": 99, "fingerprint": {}}))
    with pytest.raises(ValueError, match="another version"):
        load_checkpoint(path)


def test_partial_output_commits_and_renames(tmp_path):
    out = PartialOutput(tmp_path / "out.jsonl")
    out.checkpoint.write_text("{}")
    out.start()
    assert out.commit("a\n") == 2
    assert out.commit("bc\n") == 5
    assert not out.output.exists()
    out.finish()
    assert out.output.read_text() == "a\nbc\n"
    assert not out.part.exists() and not out.checkpoint.exists()


def test_restart_cuts_what_was_written_after_the_checkpoint(tmp_path):
    out = PartialOutput(tmp_path / "out.jsonl")
    out.start()
    committed = out.commit("one\n")
    out.commit("torn wri")  # written, but the crash came before its checkpoint
    out.close()
    out.start(committed)
    out.commit("two\n")
    out.finish()
    assert out.output.read_text() == "one\ntwo\n"


def test_restart_refuses_a_part_shorter_than_its_checkpoint(tmp_path):
    out = PartialOutput(tmp_path / "out.jsonl")
    out.start()
    out.commit("one\n")
    out.close()
    with pytest.raises(ValueError, match="has 4 bytes but its checkpoint says 10"):
        out.start(10)


def test_gzip_output_is_one_member_per_chunk_and_can_be_cut(tmp_path):
    out = PartialOutput(tmp_path / "out.jsonl.gz")
    out.start()
    committed = out.commit("é1\n")
    out.commit("2\n")
    out.close()
    out.start(committed)
    out.commit("3\n")
    out.finish()
    assert gzip.decompress(out.output.read_bytes()).decode() == "é1\n3\n"
    # The same text gives the same bytes (no timestamp in the gzip header).
    assert out.output.read_bytes() == gzip.compress("é1\n".encode(), 6, mtime=0) + gzip.compress(
        b"3\n", 6, mtime=0)


def test_empty_gzip_output_is_a_valid_gzip_file(tmp_path):
    out = PartialOutput(tmp_path / "out.txt.gz")
    out.start()
    out.finish()
    assert gzip.decompress(out.output.read_bytes()) == b""
