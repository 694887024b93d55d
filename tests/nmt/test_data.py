import gzip
import io
import zipfile
from pathlib import Path

import numpy as np
import pytest

from nmt import data
from nmt.data import (
    CleaningConfig,
    CleaningStats,
    EncodedCorpus,
    RaggedIds,
    clean_pairs,
    encode_pairs,
    extract_anki,
    make_eval_batches,
    make_train_dataset,
    plan_epoch,
    read_lines,
    read_pairs,
)
from nmt.tokenizer import BOS_ID, EOS_ID, PAD_ID

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_pairs.tsv"


# --------------------------------------------------------------------------- reading


def test_read_pairs_plain_and_gzip(tmp_path):
    text = "Go.\tVa !\tCC-BY 2.0 (France) Attribution\r\n\n  \nI see.  \t  Je vois.\n"
    plain = tmp_path / "pairs.tsv"
    plain.write_text(text, encoding="utf-8")
    packed = tmp_path / "pairs.tsv.gz"
    packed.write_bytes(gzip.compress(text.encode("utf-8")))
    expected = [("Go.", "Va !"), ("I see.", "Je vois.")]
    assert read_pairs(plain) == expected
    assert read_pairs(packed) == expected


def test_read_pairs_keeps_unicode(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("\ufeffHe's here.\t« Il est là\u2028! »\n", encoding="utf-8")
    assert read_pairs(path) == [("He's here.", "« Il est là\u2028! »")]


def test_read_pairs_names_file_and_line(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("Go.\tVa !\n\nno tab here\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.tsv:3: .*'no tab here'"):
        read_pairs(path)


def test_read_lines_keeps_blank_lines(tmp_path):
    path = tmp_path / "in.txt.gz"
    path.write_bytes(gzip.compress("Hello.\r\n\nÇa va ?\n".encode()))
    assert read_lines(path) == ["Hello.", "", "Ça va ?"]


# --------------------------------------------------------------------------- cleaning


def test_clean_pairs_counts_each_reason_and_keeps_order():
    pairs = [
        ("Go.", "Va !"),
        ("", "Rien"),
        ("one two three four", " ".join(["mot"] * 13)),  # ratio 13/4 > 3
        ("one two three four", " ".join(["mot"] * 12)),  # ratio 3 is allowed
        ("Hi.", " ".join(["mot"] * 7)),  # short side: ratio not applied
        (" ".join(["w"] * 51), "court"),
        ("Go.\u00a0 ", "Va  !"),  # a duplicate once whitespace is collapsed
        ("Run!", "Cours !"),
    ]
    kept, stats = clean_pairs(pairs, CleaningConfig())
    assert kept == [pairs[0], pairs[3], pairs[4], pairs[7]]
    assert stats == CleaningStats(kept=4, too_long=1, ratio=1, empty=1, duplicates=1)
    assert stats.total == len(pairs)


def test_clean_pairs_options():
    pairs = [("a b", "c d"), ("a b", "c d"), ("a", "b")]
    kept, stats = clean_pairs(pairs, CleaningConfig(min_words=2, dedupe=False))
    assert kept == pairs[:2]
    assert (stats.empty, stats.duplicates) == (1, 0)


@pytest.mark.parametrize(
    "kwargs", [{"min_words": 0}, {"max_words": 2, "min_words": 3}, {"max_ratio": 0.5}]
)
def test_cleaning_config_validation(kwargs):
    with pytest.raises(ValueError, match="Received"):
        CleaningConfig(**kwargs)


# --------------------------------------------------------------------------- ragged ids


def test_ragged_ids_take_and_append_match_python():
    rows = [[5, 6, 7], [], [8], [9, 10]]
    ragged = RaggedIds.from_lists(rows)
    assert ragged.lengths.tolist() == [3, 0, 1, 2]
    taken = ragged.take(np.array([3, 0, 1, 3]))
    assert [taken[i].tolist() for i in range(len(taken))] == [[9, 10], [5, 6, 7], [], [9, 10]]
    appended = ragged.append(EOS_ID)
    assert [appended[i].tolist() for i in range(4)] == [r + [EOS_ID] for r in rows]
    assert appended.values.dtype == np.int32
    with pytest.raises(ValueError, match="row_splits"):
        RaggedIds(np.zeros(3, np.int32), np.array([0, 2]))


# --------------------------------------------------------------------------- encoding


def _generated_pairs(count=300, seed=0):
    """Pairs of word-for-word "translations" with 1 to 20 words."""
    english = ["the", "a", "cat", "dog", "house", "green", "big", "small", "eats", "sees"]
    french = ["le", "la", "chat", "chien", "maison", "vert", "grand", "petit", "mange", "voit"]
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(count):
        words = rng.integers(0, len(english), size=rng.integers(1, 21))
        pairs.append((" ".join(english[w] for w in words), " ".join(french[w] for w in words)))
    return pairs


@pytest.fixture(scope="module")
def pairs():
    return read_pairs(FIXTURE) if FIXTURE.exists() else _generated_pairs()


@pytest.fixture(scope="module")
def tokenizers(pairs):
    from nmt.tokenizer import train_tokenizers

    return train_tokenizers(pairs[:400], vocab_size=120)


def test_encode_pairs_matches_tokenizer(tokenizers, pairs):
    import tensorflow as tf

    pairs = pairs[:50]
    corpus = encode_pairs(pairs, tokenizers, batch=7)
    assert len(corpus) == 50 and corpus.dropped == 0
    expected_src = tokenizers.source.tokenize(tf.constant([s for s, _ in pairs])).to_list()
    expected_tgt = tokenizers.target.tokenize(tf.constant([t for _, t in pairs])).to_list()
    for i in range(50):
        assert corpus.source[i].tolist() == expected_src[i] + [EOS_ID]
        assert corpus.target[i].tolist() == expected_tgt[i]
    assert corpus.source.values.dtype == np.int32


def test_encode_pairs_drops_long_pairs(tokenizers, pairs):
    pairs = pairs[:60]
    full = encode_pairs(pairs, tokenizers, max_tokens_per_sentence=10_000)
    limit = int(np.median(full.source.lengths))
    corpus = encode_pairs(pairs, tokenizers, max_tokens_per_sentence=limit)
    keep = (full.source.lengths <= limit) & (full.target.lengths + 1 <= limit)
    assert 0 < corpus.dropped < len(pairs)
    assert corpus.dropped == int((~keep).sum())
    assert corpus.indices.tolist() == np.flatnonzero(keep).tolist()
    for row, index in enumerate(corpus.indices):
        assert corpus.source[row].tolist() == full.source[index].tolist()


# --------------------------------------------------------------------------- batching


def _random_corpus(count=500, seed=0, long_example=False):
    """A corpus of random ids; lengths 1-40, each source ending with EOS."""
    rng = np.random.default_rng(seed)
    sources = [list(rng.integers(4, 50, size=rng.integers(0, 40))) + [EOS_ID] for _ in range(count)]
    targets = [list(rng.integers(4, 50, size=rng.integers(1, 40))) for _ in range(count)]
    if long_example:
        sources[3] = [7] * 299 + [EOS_ID]
    return EncodedCorpus(
        RaggedIds.from_lists(sources), RaggedIds.from_lists(targets), np.arange(count)
    )


def _batches(dataset):
    return [
        (source.numpy(), target_in.numpy(), target_out.numpy())
        for (source, target_in), target_out in dataset
    ]


def _same(batches, others):
    if len(batches) != len(others):
        return False
    pairs = zip(batches, others, strict=True)
    return all(np.array_equal(a, b) for x, y in pairs for a, b in zip(x, y, strict=True))


def test_train_batches_match_the_plan_and_the_token_budget():
    corpus = _random_corpus(long_example=True)
    kwargs = {"max_tokens": 256, "seed": 3, "epoch": 0, "max_length": 400}
    plan = plan_epoch(corpus, **kwargs)
    dataset = make_train_dataset(corpus, **kwargs)
    assert int(dataset.cardinality()) == len(plan)
    assert sorted(np.concatenate(plan).tolist()) == list(range(len(corpus)))
    for indices, (source, target_in, target_out) in zip(plan, _batches(dataset), strict=True):
        assert source.dtype == target_in.dtype == target_out.dtype == np.int32
        assert source.shape[0] == target_in.shape[0] == len(indices)
        assert target_in.shape == target_out.shape
        if len(indices) > 1:
            assert len(indices) * max(source.shape[1], target_in.shape[1]) <= 256
        _check_rows(corpus, indices, source, target_in, target_out)
    assert [3] in [p.tolist() for p in plan]  # the 300-token example is alone


def _check_rows(corpus, indices, source, target_in, target_out):
    """Compares each padded row with the corpus sequence it came from."""
    assert source.shape[1] == corpus.source.lengths[indices].max()
    assert target_in.shape[1] == corpus.target.lengths[indices].max() + 1
    for row, index in enumerate(indices):
        src, tgt = corpus.source[index].tolist(), corpus.target[index].tolist()
        pad_s, pad_t = source.shape[1] - len(src), target_in.shape[1] - len(tgt) - 1
        assert source[row].tolist() == src + [PAD_ID] * pad_s
        assert target_in[row].tolist() == [BOS_ID] + tgt + [PAD_ID] * pad_t
        assert target_out[row].tolist() == tgt + [EOS_ID] + [PAD_ID] * pad_t


def test_train_order_is_deterministic_per_seed_and_epoch():
    corpus = _random_corpus()

    def plan(seed, epoch):
        return [b.tolist() for b in plan_epoch(corpus, max_tokens=200, seed=seed, epoch=epoch)]

    assert plan(1, 0) == plan(1, 0)
    assert plan(1, 1) != plan(1, 0)
    assert plan(2, 0) != plan(1, 0)
    assert plan(1, 2) != plan(2, 1)  # not merely seed + epoch
    first = _batches(make_train_dataset(corpus, max_tokens=200, seed=1, epoch=0))
    again = _batches(make_train_dataset(corpus, max_tokens=200, seed=1, epoch=0))
    assert _same(first, again)


def test_skip_batches_resumes_exactly():
    corpus = _random_corpus()
    kwargs = {"max_tokens": 300, "seed": 5, "epoch": 2}
    full = _batches(make_train_dataset(corpus, **kwargs))
    resumed = _batches(make_train_dataset(corpus, skip_batches=7, **kwargs))
    assert len(resumed) == len(full) - 7
    assert _same(full[7:], resumed)
    assert _batches(make_train_dataset(corpus, skip_batches=len(full), **kwargs)) == []
    with pytest.raises(ValueError, match="skip_batches"):
        make_train_dataset(corpus, skip_batches=len(full) + 1, **kwargs)


def test_max_length_skips_long_examples():
    corpus = _random_corpus()
    plan = plan_epoch(corpus, max_tokens=500, seed=0, epoch=0, max_length=20)
    kept = np.concatenate(plan)
    longest = np.maximum(corpus.source.lengths, corpus.target.lengths + 1)
    assert sorted(kept.tolist()) == np.flatnonzero(longest <= 20).tolist()


@pytest.mark.parametrize(
    "kwargs", [{"max_tokens": 0}, {"seed": -1}, {"bucket_width": 0}, {"epoch": 1.5}]
)
def test_batching_arguments_are_validated(kwargs):
    arguments = {"max_tokens": 100, "seed": 0, "epoch": 0, **kwargs}
    with pytest.raises(ValueError, match="Received"):
        plan_epoch(_random_corpus(20), **arguments)


def test_eval_batches_keep_corpus_order():
    corpus = _random_corpus(200, seed=4, long_example=True)
    batches = _batches(make_eval_batches(corpus, max_tokens=128))
    start = 0
    for source, target_in, target_out in batches:
        indices = np.arange(start, start + len(source))
        if len(indices) > 1:
            assert len(indices) * max(source.shape[1], target_in.shape[1]) <= 128
        _check_rows(corpus, indices, source, target_in, target_out)
        start += len(source)
    assert start == len(corpus)


# --------------------------------------------------------------------------- download


def _anki_zip(members):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return buffer.getvalue()


ANKI_TEXT = "Go.\tVa !\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272\n"


def test_extract_anki(tmp_path):
    zip_path = tmp_path / "fra-eng.zip"
    zip_path.write_bytes(_anki_zip({"_about.txt": "about", "fra.txt": ANKI_TEXT}))
    path = extract_anki(zip_path, tmp_path / "out")
    assert path == tmp_path / "out" / "fra.txt"
    assert read_pairs(path) == [("Go.", "Va !")]
    assert sorted(p.name for p in path.parent.iterdir()) == ["fra.txt"]
    zip_path.write_bytes(_anki_zip({"deu.txt": ANKI_TEXT}))
    with pytest.raises(ValueError, match="no fra.txt"):
        extract_anki(zip_path, tmp_path)


def test_download_anki_sends_a_browser_user_agent(tmp_path, monkeypatch):
    requests = []

    def fake_urlopen(request, timeout):
        requests.append(request)
        return io.BytesIO(_anki_zip({"fra.txt": ANKI_TEXT}))

    monkeypatch.setattr(data.urllib.request, "urlopen", fake_urlopen)
    path = data.download_anki(tmp_path)
    assert read_pairs(path) == [("Go.", "Va !")]
    assert requests[0].full_url == data.ANKI_URL
    assert requests[0].get_header("User-agent").startswith("Mozilla/5.0")
    assert data.download_anki(tmp_path) == path  # already there: no second download
    assert len(requests) == 1
