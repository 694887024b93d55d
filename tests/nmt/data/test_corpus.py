"""`nmt.data.corpus`: reading pair and line files, and cleaning pairs."""

import gzip

import pytest

from nmt.data.corpus import CleaningConfig, CleaningStats, clean_pairs, read_lines, read_pairs

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


def test_read_lines_splits_on_newlines_only(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("\ufeffun\u2028deux\r\ntrois\n", encoding="utf-8")
    assert read_lines(path) == ["un\u2028deux", "trois"]
    path.write_text("", encoding="utf-8")
    assert read_lines(path) == []


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
