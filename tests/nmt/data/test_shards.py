"""`nmt.data.shards` and `nmt.data.shard_writer`: the ids, examples and batches of the
TensorFlow pipeline (`nmt.data.encoding`, `nmt.data.datasets`), read without TensorFlow."""

import json
import subprocess
import sys

import numpy as np
import pytest

from nmt.data import shards
from nmt.data.corpus import CleaningConfig, clean_pairs_with_indices, read_pairs
from nmt.data.shard_writer import write_shards
from nmt.data.subwords import BOS_ID, EOS_ID, PAD_ID, PlainTokenizer

MAX_TOKENS_PER_SENTENCE = 20  # drops some of the fixture's longer pairs
CLEANING = CleaningConfig(max_words=12, max_ratio=2.0, dedupe=False)
TOO_LONG = "Far  too   long, with  many   more words than the twelve words the limit allows."
JOINED, SEED = 40, 5


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory, tiny_pairs):
    """A corpus as `nmt corpus` writes it: pairs repeated by weight, the source in the third
    column; plus a blank line, runs of spaces and a pair the cleaning drops."""
    directory = tmp_path_factory.mktemp("corpus")
    lines = []
    for number, (english, french) in enumerate(tiny_pairs):
        lines += [f"{english}\t{french}\t{'abc'[number % 3]}"] * (1 + number % 3)
    lines[5:5] = ["", f"{TOO_LONG}\tNon.\ta"]
    (directory / "train.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    dev = [f"{e}\t{f}\t{'xy'[n % 2]}" for n, (e, f) in enumerate(tiny_pairs[:30])]
    dev.append(f"{TOO_LONG}\tNon.\tx")
    (directory / "dev.tsv").write_text("\n".join(dev) + "\n", encoding="utf-8")
    return directory


def _plain(tokenizers):
    proto = tokenizers.source.model_proto
    return PlainTokenizer(proto, "en"), PlainTokenizer(proto, "fr")


@pytest.fixture(scope="module")
def shards_dir(corpus_dir, tiny_tokenizers):
    out = corpus_dir / "shards"
    write_shards(corpus_dir, out, _plain(tiny_tokenizers), cleaning=CLEANING,
                 max_tokens_per_sentence=MAX_TOKENS_PER_SENTENCE)
    return out


@pytest.fixture(scope="module")
def tf_corpus(corpus_dir, tiny_tokenizers):
    """What `nmt train` (training/train.py `load_corpora`) makes of the same file."""
    from nmt.data.encoding import concatenate_examples, encode_pairs
    from nmt.data.tokenizer import SubwordTokenizer, TokenizerPair

    proto = tiny_tokenizers.source.model_proto
    tokenizers = TokenizerPair(SubwordTokenizer(proto, "en"), SubwordTokenizer(proto, "fr"), True)
    pairs, kept, _ = clean_pairs_with_indices(read_pairs(corpus_dir / "train.tsv"), CLEANING)
    corpus = encode_pairs(pairs, tokenizers, max_tokens_per_sentence=MAX_TOKENS_PER_SENTENCE)
    corpus = concatenate_examples(corpus, count=JOINED, max_pairs=3, seed=SEED,
                                  max_tokens_per_sentence=MAX_TOKENS_PER_SENTENCE)
    return corpus, kept


@pytest.fixture(scope="module")
def train(shards_dir):
    return shards.join_examples(shards.load_split(shards_dir), count=JOINED, max_pairs=3,
                                seed=SEED)


def test_examples_are_the_tf_pipelines(train, tf_corpus):
    corpus, kept = tf_corpus
    assert len(train) == len(corpus) and corpus.dropped > 0 and (corpus.indices == -1).any()
    for index in range(len(corpus)):
        source, target_in, target_out = train.example(index)
        assert source.tolist() == corpus.source[index].tolist()  # pieces + EOS
        assert target_in.tolist() == [BOS_ID, *corpus.target[index].tolist()]
        assert target_out.tolist() == [*corpus.target[index].tolist(), EOS_ID]
    raw_index = np.where(corpus.indices >= 0, kept[np.maximum(corpus.indices, 0)], -1)
    np.testing.assert_array_equal(train.pair_index, raw_index)


def test_plan_is_the_tf_pipelines(train, tf_corpus):
    from nmt.data.datasets import plan_epoch

    corpus, _ = tf_corpus
    for epoch in (0, 1):
        theirs = plan_epoch(corpus, max_tokens=64, seed=3, epoch=epoch, bucket_width=4,
                            max_length=16)
        ours = shards.plan_epoch(train, max_tokens=64, seed=3, epoch=epoch, bucket_width=4,
                                 max_length=16)
        assert [b.tolist() for b in ours] == [b.tolist() for b in theirs]


@pytest.mark.parametrize("pad_to", [1, 4])
def test_batches_are_the_tf_pipelines_padded_to_a_multiple(train, tf_corpus, pad_to):
    from nmt.data.datasets import make_train_dataset

    corpus, _ = tf_corpus
    options = {"max_tokens": 64, "seed": 3, "epoch": 1, "bucket_width": 4, "skip_batches": 2}
    theirs = list(make_train_dataset(corpus, **options))
    ours = list(shards.iter_batches(train, pad_to=pad_to, **options,
                                    max_length=MAX_TOKENS_PER_SENTENCE))
    assert len(ours) == len(theirs) > 10
    for ((source, target_in), target_out), batch in zip(theirs, ours, strict=True):
        for tf_array, array in zip((source, target_in, target_out), batch, strict=True):
            assert array.dtype == np.int32 and array.shape[1] % pad_to == 0
            width = tf_array.shape[1]
            np.testing.assert_array_equal(array[:, :width], tf_array.numpy())
            assert (array[:, width:] == PAD_ID).all()


def test_weighted_copies_are_stored_once(shards_dir, train):
    manifest = shards.read_manifest(shards_dir)
    facts = manifest["splits"]["train"]
    assert facts["rows"] < facts["examples"] == int((train.pair_index >= 0).sum())
    assert 0 < len(train) - facts["examples"] <= JOINED  # joined: those within the limit
    assert facts["cleaning"]["too_long"] == 1 and facts["dropped_over_max_tokens"] > 0
    assert facts["domains"] == ["a", "b", "c"]
    assert sum(facts["examples_per_domain"].values()) == facts["examples"]
    assert manifest["ids"] == {"pad": 0, "unk": 1, "bos": 2, "eos": 3, "dtype": "uint16"}
    assert manifest["tokenizers"]["joint"] and manifest["max_tokens_per_sentence"] == 20
    with np.load(shards_dir / "train.npz") as arrays:
        assert arrays["source_ids"].dtype == np.uint16
        assert int(arrays["repeats"].max()) == 3
    assert (shards_dir / "en.spm.model").read_bytes() == (shards_dir / "fr.spm.model").read_bytes()


def test_dev_keeps_every_pair_with_its_reference_and_domain(shards_dir, corpus_dir):
    dev = shards.load_split(shards_dir, "dev")
    pairs = read_pairs(corpus_dir / "dev.tsv")
    assert len(dev) == len(pairs) == 31  # no cleaning, no length limit
    assert dev.references == tuple(french for _, french in pairs)
    assert dev.domains == ("x", "y") and dev.domain[:3].tolist() == [0, 1, 0]
    source, _, target_out = dev.example(1)
    assert source[-1] == EOS_ID and target_out[-1] == EOS_ID


def test_a_plain_tsv_gives_a_train_split_without_domains(tiny_pairs, tiny_tokenizers, tmp_path):
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"{e}\t{f}\n" for e, f in tiny_pairs[:50]), encoding="utf-8")
    manifest = write_shards(tsv, tmp_path / "s", _plain(tiny_tokenizers),
                            max_tokens_per_sentence=64)
    assert list(manifest["splits"]) == ["train"]
    split = shards.load_split(tmp_path / "s")
    assert len(split) == 50 and split.domains == () and (split.domain == -1).all()
    assert split.pair_index.tolist() == list(range(50)) and split.references is None


def test_batches_keep_to_the_budget_and_pad_on_the_right(train):
    seen = []
    for source, target_in, target_out in shards.iter_batches(
            train, max_tokens=96, seed=1, epoch=0, bucket_width=8, pad_to=8):
        assert source.shape[1] % 8 == 0 and target_in.shape == target_out.shape
        assert len(source) * max(source.shape[1], target_in.shape[1]) <= 96
        assert (target_in[:, 0] == BOS_ID).all()
        lengths = (target_out != PAD_ID).sum(axis=1)
        assert (target_out[np.arange(len(lengths)), lengths - 1] == EOS_ID).all()
        pieces = (target_out[:, :-1] != PAD_ID) & (target_out[:, :-1] != EOS_ID)
        np.testing.assert_array_equal(target_in[:, 1:][pieces], target_out[:, :-1][pieces])
        seen.append(len(source))
    assert sum(seen) == len(train)


def test_fixed_rows_make_one_shape_per_bucket(train):
    batches = list(shards.iter_batches(train, max_tokens=96, seed=1, epoch=0, bucket_width=8,
                                       pad_to=8, fixed_rows=True))
    shapes = {(s.shape, ti.shape) for s, ti, _ in batches}
    lengths = {s.shape[1] for s, _, _ in batches}
    assert len(shapes) == len(lengths) >= 2
    for (rows, width), target in shapes:
        assert target == (rows, width) and rows == 96 // width
    planned = shards.plan_epoch(train, max_tokens=96, seed=1, epoch=0, fixed_rows=True)
    assert set(np.concatenate(planned).tolist()) == set(range(len(train)))


def test_rows_split_evenly_over_devices(train):
    for devices in (2, 3):
        planned = shards.plan_epoch(train, max_tokens=96, seed=1, epoch=0, fixed_rows=True,
                                    rows_multiple=devices)
        sizes = {len(batch) for batch in planned}
        assert all(size % devices == 0 for size in sizes)
        assert set(np.concatenate(planned).tolist()) == set(range(len(train)))


def test_bucket_bounds_make_fewer_buckets(train):
    lengths = np.array([1, 8, 9, 16, 17, 24, 25, 40])
    assert shards.bucket_lengths(lengths, 8).tolist() == [8, 8, 16, 16, 24, 24, 32, 40]
    assert shards.bucket_lengths(lengths, 8, (16, 24)).tolist() == [16, 16, 16, 16, 24, 24,
                                                                     32, 40]
    batches = list(shards.iter_batches(train, max_tokens=96, seed=1, epoch=0, fixed_rows=True,
                                       bucket_bounds=(8, 16, 24)))
    assert {s.shape for s, _, _ in batches} == {(12, 8), (6, 16), (4, 24)}
    assert sum(len(s) for s, _, _ in batches) >= len(train)


def test_an_epoch_is_fixed_by_seed_and_epoch_and_resumes_at_any_batch(train):
    def epoch(number, skip=0, seed=1):
        return [b[0].tolist() for b in shards.iter_batches(
            train, max_tokens=96, seed=seed, epoch=number, skip_batches=skip)]

    first = epoch(0)
    assert epoch(0) == first and epoch(1) != first and epoch(0, seed=2) != first
    assert epoch(0, skip=7) == first[7:]
    with pytest.raises(ValueError, match=r"skip_batches must be between 0 and the epoch's"):
        epoch(0, skip=len(first) + 1)


def test_eval_batches_take_every_example_in_order(train):
    batches = shards.plan_eval(train, max_tokens=64)
    assert np.concatenate(batches).tolist() == list(range(len(train)))


def test_bad_arguments_say_what_to_change(shards_dir, corpus_dir, train, tiny_tokenizers):
    with pytest.raises(ValueError, match="--overwrite"):
        write_shards(corpus_dir, shards_dir, _plain(tiny_tokenizers), max_tokens_per_sentence=20)
    with pytest.raises(ValueError, match="Received: max_tokens_per_sentence=1"):
        write_shards(corpus_dir, shards_dir, _plain(tiny_tokenizers), max_tokens_per_sentence=1)
    with pytest.raises(FileNotFoundError, match="train.tsv"):
        write_shards(shards_dir, corpus_dir / "x", _plain(tiny_tokenizers),
                     max_tokens_per_sentence=20)
    with pytest.raises(ValueError, match=r"split must be one of \['dev', 'train'\]"):
        shards.load_split(shards_dir, "test")
    with pytest.raises(ValueError, match="Received: bucket_width=4, bucket_bounds=None, pad_to=8"):
        next(shards.iter_batches(train, max_tokens=64, seed=1, epoch=0, bucket_width=4))
    with pytest.raises(ValueError, match=r"bucket_bounds=\(16, 20\), pad_to=8"):
        next(shards.iter_batches(train, max_tokens=64, seed=1, epoch=0, bucket_bounds=(16, 20)))
    with pytest.raises(ValueError, match="bucket_bounds must be increasing"):
        shards.plan_epoch(train, max_tokens=64, seed=1, epoch=0, bucket_bounds=(16, 8))
    with pytest.raises(ValueError, match="Received: max_tokens=0"):
        shards.plan_epoch(train, max_tokens=0, seed=1, epoch=0)


def test_a_newer_format_is_refused(shards_dir, tmp_path):
    manifest = shards.read_manifest(shards_dir)
    (tmp_path / shards.MANIFEST_FILE).write_text(json.dumps({**manifest, "format": 99}))
    with pytest.raises(ValueError, match="Rebuild them with `nmt shards`"):
        shards.load_split(tmp_path)


def test_reading_imports_numpy_only_and_writing_no_tensorflow():
    code = (
        "import sys, nmt.data.shards; "
        "assert 'sentencepiece' not in sys.modules; "
        "import nmt.data.shard_writer, nmt.data.subwords; "
        "print(sorted({m.split('.')[0] for m in sys.modules} "
        "& {'tensorflow', 'tensorflow_text', 'keras', 'jax', 'torch'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"


def test_the_command_writes_shards_and_prints_a_table(corpus_dir, tiny_tokenizers, tmp_path,
                                                      capsys):
    from nmt_cli.main import main

    model = tmp_path / "joint.spm.model"
    model.write_bytes(tiny_tokenizers.source.model_proto)
    argv = ["shards", "--corpus", str(corpus_dir), "--spm", str(model), "--out",
            str(tmp_path / "s"), "--max-words", "12", "--max-ratio", "2", "--no-dedupe",
            "--max-tokens-per-sentence", "20", "--tokenizer", "sentencepiece"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "train" in printed and "dev" in printed and "a " in printed
    manifest = shards.read_manifest(tmp_path / "s")
    assert manifest["cleaning"] == {"max_words": 12, "max_ratio": 2.0, "min_words": 1,
                                    "dedupe": False}
    assert manifest["tokenizers"]["tokenized_with"].startswith("sentencepiece")
    assert main(argv) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main([*argv[:3], "--spm", str(tmp_path / "missing.model"), *argv[5:],
                 "--overwrite"]) == 2
    assert "missing.model does not exist" in capsys.readouterr().err


def test_reweighting_domains_takes_each_example_its_weight_in_copies(shards_dir):
    split = shards.load_split(shards_dir)
    counts = {name: int((split.domain == i).sum()) for i, name in enumerate(split.domains)}
    heavier = shards.reweight_domains(split, {"a": 2.5, "c": 0.5}, seed=4)
    again = shards.reweight_domains(split, {"a": 2.5, "c": 0.5}, seed=4)
    np.testing.assert_array_equal(heavier.example_rows, again.example_rows)
    after = {name: int((heavier.domain == i).sum()) for i, name in enumerate(split.domains)}
    assert after == {"a": round(2.5 * counts["a"]), "b": counts["b"],
                     "c": round(0.5 * counts["c"])}
    # Every example of `a` at least twice; the rows keep their pairs and domains.
    a_rows = split.example_rows[split.domain == 0]
    assert np.isin(a_rows, heavier.example_rows).all()
    for index in range(len(heavier)):
        assert heavier.domain[index] == split.domain[
            np.flatnonzero(split.example_rows == heavier.example_rows[index])[0]]
    with pytest.raises(ValueError, match=r"names \['news'\], not domains of these shards"):
        shards.reweight_domains(split, {"news": 2}, seed=4)
