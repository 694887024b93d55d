"""`nmt.data.shard_links` and the shards' gold alignments: the links and gold matrices of
`nmt train`'s pipeline (`training.corpus_alignment.corpus_links`, `nmt.data.datasets`)."""

import numpy as np
import pytest

from nmt.data import shards
from nmt.data.corpus import clean_pairs_with_indices, read_pairs
from nmt.data.shard_links import attach_links, read_links
from nmt.data.subwords import PlainTokenizer
from tests.nmt.data.test_shards import (  # noqa: F401 (fixtures)
    CLEANING,
    JOINED,
    MAX_TOKENS_PER_SENTENCE,
    SEED,
    corpus_dir,
    shards_dir,
)


def _pieces(tiny_tokenizers, texts, language):
    tokenizer = PlainTokenizer(tiny_tokenizers.source.model_proto, language)
    return [len(ids) for ids in tokenizer.tokenize(texts)]


@pytest.fixture(scope="module")
def links_file(corpus_dir, tiny_tokenizers):  # noqa: F811
    """A Pharaoh line per pair of the corpus: a link (i, j) wherever (i + 2j) % 3 == 0
    inside the pair, so every pair gets its own pattern; an empty line for one pair."""
    pairs = read_pairs(corpus_dir / "train.tsv")
    sources = _pieces(tiny_tokenizers, [e for e, _ in pairs], "en")
    targets = _pieces(tiny_tokenizers, [f for _, f in pairs], "fr")
    lines = [" ".join(f"{i}-{j}" for j in range(t) for i in range(s) if (i + 2 * j) % 3 == 0)
             for s, t in zip(sources, targets, strict=True)]
    lines[7] = ""
    path = corpus_dir / "links.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, len(pairs)


@pytest.fixture(scope="module")
def linked(shards_dir, links_file):  # noqa: F811
    path, pair_count = links_file
    split = attach_links(shards.load_split(shards_dir), path, pair_count)
    return shards.join_examples(split, count=JOINED, max_pairs=3, seed=SEED)


@pytest.fixture(scope="module")
def tf_corpus_with_links(corpus_dir, tiny_tokenizers, links_file):  # noqa: F811
    """What `nmt train` (`training.train.load_corpora`) makes of the same files."""
    from nmt.data.encoding import concatenate_examples, encode_pairs
    from nmt.data.tokenizer import SubwordTokenizer, TokenizerPair
    from training import corpus_alignment

    path, pair_count = links_file
    proto = tiny_tokenizers.source.model_proto
    tokenizers = TokenizerPair(SubwordTokenizer(proto, "en"), SubwordTokenizer(proto, "fr"), True)
    raw = read_pairs(corpus_dir / "train.tsv")
    pairs, kept, _ = clean_pairs_with_indices(raw, CLEANING)
    corpus = encode_pairs(pairs, tokenizers, max_tokens_per_sentence=MAX_TOKENS_PER_SENTENCE)
    alignments = corpus_alignment.read_training_alignments(path, pair_count)
    corpus = corpus.with_alignments(corpus_alignment.corpus_links(
        alignments, kept[corpus.indices], corpus.source.lengths - 1, corpus.target.lengths, path))
    return concatenate_examples(corpus, count=JOINED, max_pairs=3, seed=SEED,
                                max_tokens_per_sentence=MAX_TOKENS_PER_SENTENCE)


def test_every_example_has_the_links_of_the_tf_pipeline(linked, tf_corpus_with_links):
    corpus = tf_corpus_with_links
    assert len(linked) == len(corpus) and (corpus.indices == -1).any()
    for index in range(len(corpus)):
        row = linked.example_rows[index]
        ours = linked.link_values[linked.link_splits[row]:linked.link_splits[row + 1]]
        theirs = corpus.alignments[index].reshape(-1, 2)
        assert sorted(map(tuple, ours.tolist())) == sorted(map(tuple, theirs.tolist()))


def test_gold_batches_are_the_tf_pipelines(linked, tf_corpus_with_links):
    from nmt.data.datasets import make_train_dataset

    options = {"max_tokens": 64, "seed": 3, "epoch": 1, "bucket_width": 4}
    theirs = list(make_train_dataset(tf_corpus_with_links, **options))
    ours = list(shards.iter_batches(linked, pad_to=4, gold=True, **options,
                                    max_length=MAX_TOKENS_PER_SENTENCE))
    assert len(ours) == len(theirs) > 10
    linked_rows = 0
    for (_, _, tf_gold), (source, target_in, _, gold) in zip(theirs, ours, strict=True):
        assert gold.dtype == np.float32
        assert gold.shape == (*target_in.shape, source.shape[1])
        t, s = tf_gold.shape[1:]
        np.testing.assert_array_equal(gold[:, :t, :s], tf_gold.numpy())
        assert not gold[:, t:].any() and not gold[:, :, s:].any()
        linked_rows += int(gold.any(axis=-1).sum())
    assert linked_rows > 100


def test_joined_links_move_with_their_pieces(linked):
    joined = np.flatnonzero(linked.pair_index < 0)
    row = linked.example_rows[joined[0]]
    links = linked.link_values[linked.link_splits[row]:linked.link_splits[row + 1]]
    assert (links[:, 0] < np.diff(linked.source_splits)[row]).all()
    assert (links[:, 1] < np.diff(linked.target_splits)[row]).all()
    assert links[:, 0].max() > 2 and links[:, 1].max() > 2


def test_read_links_parses_pharaoh_with_empty_lines(tmp_path):
    path = tmp_path / "links.txt"
    path.write_text("0-0 1-2\n\n3-1\n", encoding="utf-8")
    values, splits = read_links(path)
    assert values.tolist() == [[0, 0], [1, 2], [3, 1]] and splits.tolist() == [0, 2, 2, 3]
    path.write_text("\n\n", encoding="utf-8")  # two pairs, no links
    values, splits = read_links(path)
    assert values.shape == (0, 2) and splits.tolist() == [0, 0, 0]


def test_bad_links_say_what_to_change(shards_dir, links_file, tmp_path):  # noqa: F811
    path, pair_count = links_file
    split = shards.load_split(shards_dir)
    with pytest.raises(ValueError, match=r"has \d+ lines but the shards were written from"):
        attach_links(split, path, pair_count + 1)
    lines = path.read_text(encoding="utf-8").splitlines()
    outside = tmp_path / "outside.txt"
    outside.write_text("\n".join(["0-99", *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"outside.txt:1: link 0-99 is outside the pair"):
        attach_links(split, outside, pair_count)
    possible = tmp_path / "possible.txt"
    possible.write_text("\n".join(["0p1", *lines[1:]]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"possible.txt:1: '0p1' is not an i-j link"):
        attach_links(split, possible, pair_count)
    joined = shards.join_examples(split, count=5, max_pairs=2, seed=1)
    with pytest.raises(ValueError, match="before join_examples"):
        attach_links(joined, path, pair_count)
    with pytest.raises(ValueError, match="no word links"):
        shards.gold_alignment(split, np.array([0]), 4, 4)
