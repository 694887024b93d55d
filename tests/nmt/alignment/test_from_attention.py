"""Word links from subword attention, unknown-word replacement and forced alignment."""

import re

import numpy as np
import pytest
import tensorflow as tf
from conftest import make_tiny_module

from nmt.alignment import from_attention
from nmt.data.tokenizer import BOS_ID, EOS_ID, UNK_ID, WORD_START, TokenizerPair
from nmt.inference.export import TranslationModule

MARK = WORD_START
PHARAOH = re.compile(r"(\d+-\d+( \d+-\d+)*)?")


@pytest.fixture(scope="module")
def module(tiny_tokenizers) -> TranslationModule:
    return make_tiny_module(tiny_tokenizers)


@pytest.fixture(scope="module")
def tokenizers(module) -> TokenizerPair:
    return TokenizerPair(module.source_tokenizer, module.target_tokenizer, joint=True)


@pytest.fixture(scope="module")
def piece_ids(tokenizers) -> dict[str, int]:
    tokenizer = tokenizers.target
    pieces = tokenizer.id_to_piece(tf.range(tokenizer.vocab_size)).numpy()
    return {piece.decode("utf-8"): i for i, piece in enumerate(pieces)}


# ------------------------------------------------------------------------- NumPy reference


def reference_piece_words(pieces: list[str]) -> list[int]:
    """The documented rule, written as a plain loop.

    A piece with visible characters starts a word after a "▁" (its own or a
    lone "▁" piece before it) or when no word came before; a lone "▁" belongs
    to the next word (-1 if there is none).
    """
    words, current, pending_space = [], -1, False
    for piece in pieces:
        if not piece.replace(MARK, ""):
            words.append(None)
            pending_space = True
            continue
        if current < 0 or pending_space or piece.startswith(MARK):
            current += 1
        pending_space = False
        words.append(current)
    for i, word in enumerate(words):
        if word is None:
            following = [w for w in words[i + 1:] if w is not None]
            words[i] = following[0] if following else -1
    return words


def reference_links(attention, source_words, target_words) -> set[tuple[int, int]]:
    """Sum source columns per word, average target rows per word, argmax per target word."""
    n_source, n_target = max(source_words, default=-1) + 1, max(target_words, default=-1) + 1
    merged = np.zeros((n_target, n_source))
    counts = np.zeros(n_target)
    for t, target_word in enumerate(target_words):
        if target_word < 0:
            continue
        counts[target_word] += 1
        for s, source_word in enumerate(source_words):
            if source_word >= 0:
                merged[target_word, source_word] += attention[t, s]
    merged /= np.maximum(counts, 1)[:, None]
    return {(int(row.argmax()), t) for t, row in enumerate(merged) if row.max() > 0}


def links(pharaoh: bytes) -> set[tuple[int, int]]:
    text = pharaoh.decode("utf-8")
    assert PHARAOH.fullmatch(text), text
    return {tuple(int(x) for x in link.split("-")) for link in text.split()}


# ------------------------------------------------------------------------- helpers


def source_ids(tokenizer, sentences) -> np.ndarray:
    """`(N, S)` ids ending with EOS, padded with 0."""
    rows = [[*tokenizer.tokenize(s).numpy().tolist(), EOS_ID] for s in sentences]
    width = max(map(len, rows))
    return np.array([row + [0] * (width - len(row)) for row in rows], np.int32)


def target_ids(piece_ids, rows: list[list[str]]) -> tuple[np.ndarray, np.ndarray]:
    """Hand-written piece rows -> `(N, T)` ids (with EOS) and lengths incl. EOS."""
    ids = [[piece_ids[p] if p != "<unk>" else UNK_ID for p in row] + [EOS_ID] for row in rows]
    width = max(map(len, ids))
    return (np.array([row + [0] * (width - len(row)) for row in ids], np.int32),
            np.array([len(row) for row in ids], np.int32))


def random_attention(rng, src, target_lengths, width) -> np.ndarray:
    """`(N, T, S)` rows summing to 1 over the non-padding source positions."""
    attention = np.zeros((len(src), width, src.shape[1]), np.float32)
    for n, row in enumerate(src):
        valid = int((row > 0).sum())
        attention[n, : target_lengths[n], :valid] = rng.dirichlet(
            np.full(valid, 0.3), size=target_lengths[n]
        )
    return attention


def peaked_attention(src, target_lengths, width, columns: list[list[int]]) -> np.ndarray:
    """`(N, T, S)` with all weight of target step t on source position columns[n][t]."""
    attention = np.zeros((len(src), width, src.shape[1]), np.float32)
    for n, row in enumerate(columns):
        for t, s in enumerate(row[: target_lengths[n]]):
            attention[n, t, s] = 1.0
    return attention


def outputs(tokenizers, sentences, src, tgt, lengths, attention, replace=True, targets=None):
    return from_attention.signature_outputs(
        tokenizers.source, tokenizers.target, tf.constant(sentences), tf.constant(src),
        tf.constant(tgt), tf.constant(lengths), tf.constant(attention), tf.constant(replace),
        targets=None if targets is None else tf.constant(targets),
    )


def pieces_of(tokenizer, ids) -> list[str]:
    return [p.decode("utf-8") for p in tokenizer.id_to_piece(tf.constant(ids)).numpy()]


# ------------------------------------------------------------------------- word grouping

PIECE_ROWS = [
    ["▁le", "▁ch", "a", "t", "▁", "n", "o", "i", "r"],
    ["a", "t", "▁le", "▁", "▁", "n", "o"],  # no leading "▁"; two lone "▁" in a row
    ["▁", "▁le", "▁ch", "▁"],  # lone "▁" first and last
    ["▁le", "<unk>", "▁", "<unk>", "a"],
    ["▁"],
]


@pytest.mark.parametrize("pieces", PIECE_ROWS)
def test_piece_words_follow_the_documented_rule(pieces):
    width = max(map(len, PIECE_ROWS)) + 1
    padded = [*pieces, "</s>"] + [""] * (width - len(pieces) - 1)
    valid = [i < len(pieces) for i in range(width)]
    words = from_attention.piece_words(tf.constant([padded]), tf.constant([valid])).numpy()[0]
    expected = reference_piece_words(pieces)
    assert words[: len(pieces)].tolist() == expected
    assert (words[len(pieces):] == -1).all()
    # The words are exactly those of the joined text.
    text = "".join(pieces).replace(MARK, " ").split()
    assert max(expected, default=-1) + 1 == len(text)


def test_word_links_match_the_numpy_reference(tokenizers, piece_ids):
    sentences = ["I love you.", "The cat is black.", "Hello there friend", "I love you."]
    src = source_ids(tokenizers.source, sentences)
    tgt, lengths = target_ids(piece_ids, PIECE_ROWS[:4])
    attention = random_attention(np.random.default_rng(0), src, lengths, tgt.shape[1])
    out = outputs(tokenizers, sentences, src, tgt, lengths, attention, replace=False)
    for n, sentence in enumerate(sentences):
        source_length = int((src[n] > 0).sum())
        source_pieces = pieces_of(tokenizers.source, src[n, : source_length - 1])
        source_words = reference_piece_words(source_pieces)
        target_words = reference_piece_words(PIECE_ROWS[n])
        expected = reference_links(attention[n], source_words, target_words)
        assert links(out["word_alignments"].numpy()[n]) == expected, sentence
        assert len(expected) == len(out["translations"].numpy()[n].decode().split())


def test_pharaoh_links_put_the_source_word_first(tokenizers, piece_ids):
    # "I love you" -> pieces ▁I ▁l o v e ▁you: words 0, 1, 1, 1, 1, 2.
    src = source_ids(tokenizers.source, ["I love you"])
    tgt, lengths = target_ids(piece_ids, [["▁le", "▁ch", "a", "t", "▁", "n", "o", "i", "r"]])
    # Target words: le -> "you" (5), chat -> "love" (2, 3), noir -> "I" (0).
    attention = peaked_attention(src, lengths, tgt.shape[1], [[5, 2, 3, 3, 0, 0, 0, 0, 0, 6]])
    out = outputs(tokenizers, ["I love you"], src, tgt, lengths, attention)
    assert out["word_alignments"].numpy()[0] == b"2-0 1-1 0-2"
    assert out["translations"].numpy()[0].decode() == "le chat noir"


def test_source_indices_count_the_given_words(tokenizers, piece_ids):
    # A zero-width space is not whitespace for str.split(), but normalisation
    # turns it into a space: the given words are "Hello\u200bthere", "friend".
    sentence = "Hello\u200bthere friend"
    assert len(tokenizers.source.normalize(sentence).numpy().split()) == 3
    src = source_ids(tokenizers.source, [sentence])
    pieces = pieces_of(tokenizers.source, src[0])
    friend = pieces.index("▁fr")
    tgt, lengths = target_ids(piece_ids, [["▁le", "▁ch"]])
    attention = peaked_attention(src, lengths, tgt.shape[1], [[friend, 0, 0]])
    out = outputs(tokenizers, [sentence], src, tgt, lengths, attention)
    assert out["word_alignments"].numpy()[0] == b"1-0 0-1"


def test_forced_target_indices_count_the_given_words(tokenizers):
    # French normalisation splits "Va!" into "Va !"; both pieces of it are given word 0.
    targets = ["Va! le chat"]
    assert tokenizers.target.normalize(targets[0]).numpy() == b"Va ! le chat"
    src = source_ids(tokenizers.source, ["I love you"])
    tgt = source_ids(tokenizers.target, targets)
    lengths = (tgt > 0).sum(axis=1).astype(np.int32)
    attention = peaked_attention(src, lengths, tgt.shape[1], [[5] * tgt.shape[1]])
    out = outputs(tokenizers, ["I love you"], src, tgt, lengths, attention, targets=targets)
    assert out["translations"].numpy()[0].decode() == targets[0]
    assert out["word_alignments"].numpy()[0] == b"2-0 2-1 2-2"


def test_given_word_map(tokenizers):
    # str.split() whitespace includes NBSP, ideographic space and \x1c; ZWSP is not.
    texts = ["Va! Oui", "a\u200bb  c", "", "a\u00a0b\u3000c\x1cd"]
    mapping = from_attention.given_word_map(tokenizers.target.normalize, tf.constant(texts))
    assert mapping.numpy().tolist() == [
        [0, 0, 1, -1], [0, 0, 1, -1], [-1, -1, -1, -1], [0, 1, 2, 3]
    ]
    assert [len(text.split()) for text in texts] == [2, 2, 0, 4]


def test_no_links_without_source_words_or_attention(tokenizers, piece_ids):
    src = source_ids(tokenizers.source, ["", "I love you"])
    tgt, lengths = target_ids(piece_ids, [["▁le", "▁ch"], ["▁le", "▁ch"]])
    # Sentence 1: "le" attends only to the source EOS (position 6).
    columns = [[0, 0, 0], [6, 0, 0]]
    attention = peaked_attention(src, lengths, tgt.shape[1], columns)
    out = outputs(tokenizers, ["", "I love you"], src, tgt, lengths, attention)
    assert out["word_alignments"].numpy().tolist() == [b"", b"0-1"]


# ------------------------------------------------------------------------- unknown words


@pytest.mark.parametrize("replace", [True, False])
def test_unknown_piece_is_replaced_by_the_attended_source_word(tokenizers, piece_ids, replace):
    sentence = "I love Zanzibar"
    src = source_ids(tokenizers.source, [sentence])
    pieces = pieces_of(tokenizers.source, src[0])
    zanzibar = [i for i, p in enumerate(pieces) if p.startswith(MARK)][2]  # first piece of word 2
    tgt, lengths = target_ids(piece_ids, [["▁le", "<unk>", "▁ch", "a", "t"]])
    attention = peaked_attention(src, lengths, tgt.shape[1], [[0, zanzibar, 1, 1, 1, 0]])
    out = outputs(tokenizers, [sentence], src, tgt, lengths, attention, replace=replace)
    text = out["translations"].numpy()[0].decode()
    if replace:
        assert text == "le Zanzibar chat"
        assert out["word_alignments"].numpy()[0] == b"0-0 2-1 1-2"
    else:
        assert "Zanzibar" not in text and "<unk>" in text
    assert "<unk>" in pieces_of(tokenizers.target, [UNK_ID])
    assert out["target_tokens"].numpy()[0, 1] == b"<unk>"  # tokens stay the model's


def test_unknown_piece_texts_are_the_characters_under_unknown_pieces(tokenizers):
    sentences = ["x <= 5 [you]", "I love you"]
    src = source_ids(tokenizers.source, sentences)
    texts = from_attention.unknown_piece_texts(
        tokenizers.source, tf.constant(sentences), tf.constant(src)).numpy()
    assert [t.decode() for t in texts[0] if t] == ["<=", "[", "]"]  # a run is one piece
    assert np.array_equal(texts[0] != b"", src[0] == UNK_ID)
    assert not texts[1].any()


def copied_unknown(tokenizers, piece_ids, sentence, word, columns):
    """`sentence`'s word `word` copied piece by piece after "▁le"; the k-th copied piece
    attends to source position `columns(k, position)`."""
    src = source_ids(tokenizers.source, [sentence])
    pieces = pieces_of(tokenizers.source, src[0])
    starts = [i for i, p in enumerate(pieces) if p.startswith(MARK)]
    first = starts[word]
    last = starts[word + 1] if word + 1 < len(starts) else len(pieces) - 1
    row = ["▁le", *pieces[first:last]]
    assert "<unk>" in row, f"the tiny vocabulary reads {sentence!r} without unknown pieces"
    tgt, lengths = target_ids(piece_ids, [row])
    attention = peaked_attention(src, lengths, tgt.shape[1], [
        [0, *(columns(k, first + k) for k in range(last - first)), len(pieces) - 1]])
    return outputs(tokenizers, [sentence], src, tgt, lengths, attention)


@pytest.mark.parametrize("sentence", ["I love [you]", "I love #you now", "x <= 5"])
def test_a_copied_unknown_piece_becomes_its_characters_in_place(tokenizers, piece_ids, sentence):
    word = 2 if sentence.startswith("I") else 1
    out = copied_unknown(tokenizers, piece_ids, sentence, word, lambda k, position: position)
    expected = sentence.split()[word]
    assert out["translations"].numpy()[0].decode() == f"le {expected}"
    assert out["word_alignments"].numpy()[0] == f"0-0 {word}-1".encode()


def test_neighbours_choose_among_a_words_unknown_pieces(tokenizers, piece_ids):
    # Every piece of "[you]" attends to its first piece: the "]" piece still becomes "]",
    # as its neighbour ("u" before it) is the one around the source's "]".
    src = source_ids(tokenizers.source, ["I love [you]"])
    first = pieces_of(tokenizers.source, src[0]).index("<unk>")
    out = copied_unknown(tokenizers, piece_ids, "I love [you]", 2, lambda k, position: first)
    assert out["translations"].numpy()[0].decode() == "le [you]"


# ------------------------------------------------------------------------- spaced marks


def glued(rows: list[list[str]], sources: list[str]) -> list[str]:
    width = max(map(len, rows))
    pieces = tf.constant([row + [""] * (width - len(row)) for row in rows])
    valid = tf.constant([[i < len(row) for i in range(width)] for row in rows])
    out = from_attention.glue_marks(pieces, valid, tf.constant(sources)).numpy()
    return ["".join(p.decode() for p in row).replace(MARK, " ").strip() for row in out]


@pytest.mark.parametrize("row, source, expected", [
    # A mark glued to the next character and to the same character before it in the
    # source loses the space French spacing put before it; its first colon, spaced in the
    # source, keeps its space.
    (["▁Vo", "ir", "▁", ":", "pe", "p", "▁", ":", "x"], "See :pep:x", "Voir :pep:x"),
    (["▁https", "▁", ":", "//", "a", ".b"], "at https://a.b", "https://a.b"),
    (["▁page", "▁?", "id", "=1"], "page?id=1", "page?id=1"),
    # French spacing stays: the mark ends a word, or the source spaces it too.
    (["▁Not", "e", "▁", ":", "▁c", "eci"], "Note: this", "Note : ceci"),
    (["▁Oui", "▁!", "▁Non", "▁?"], "Yes! No?", "Oui ! Non ?"),
    (["▁a", "▁", ":", "b"], "a :b", "a :b"),
    (["▁le", "▁", ":", "b"], "thy:b", "le :b"),  # "e:" is not in the source
])
def test_a_space_before_a_mark_inside_a_token_is_taken_back(row, source, expected):
    assert glued([row], [source]) == [expected]


def test_glued_marks_keep_words_and_links_consistent(tokenizers, piece_ids):
    # The model wrote "▁le ▁ : a ▁le" for "le:a love": "le:a" is one word of the text.
    assert ":" in piece_ids, "the tiny vocabulary has no ':' piece"
    sentence = "le:a love"
    src = source_ids(tokenizers.source, [sentence])
    tgt, lengths = target_ids(piece_ids, [["▁le", "▁", ":", "a", "▁le"]])
    attention = peaked_attention(src, lengths, tgt.shape[1], [[1, 1, 1, 1, 2, 0]])
    out = outputs(tokenizers, [sentence], src, tgt, lengths, attention)
    text = out["translations"].numpy()[0].decode()
    assert text == "le:a le"
    assert out["word_attention"].numpy()[0].any(axis=1).sum() == len(text.split())
    assert out["target_tokens"].numpy()[0, 1] == MARK.encode()  # tokens stay the model's


# ------------------------------------------------------------------------- forced alignment


def test_forced_alignment_equals_teacher_forced_attention(module, tokenizers):
    sources = ["I love you.", "The cat is black and the children read a book."]
    targets = ["Je t'aime.", "Le chat est noir."]
    out = module.align(tf.constant(sources), tf.constant(targets))

    src = source_ids(tokenizers.source, sources)
    tgt = [tokenizers.target.tokenize(t).numpy().tolist() for t in targets]
    width = max(map(len, tgt)) + 1
    target_in = np.array([[BOS_ID, *row] + [0] * (width - len(row) - 1) for row in tgt], np.int32)
    _, expected = module.model((tf.constant(src), tf.constant(target_in)), training=False)
    for n, row in enumerate(tgt):
        length = len(row) + 1  # with EOS
        assert out["target_lengths"].numpy()[n] == length
        np.testing.assert_allclose(
            out["alignments"].numpy()[n, :length], expected.numpy()[n, :length], atol=1e-6
        )
        assert not out["alignments"].numpy()[n, length:].any()
    assert [t.decode() for t in out["translations"].numpy()] == targets
    for pharaoh, target in zip(out["word_alignments"].numpy(), targets, strict=True):
        assert {t for _, t in links(pharaoh)} <= set(range(len(target.split())))


@pytest.mark.parametrize("rule", ["argmax", "intersect"])
def test_graph_link_rules_match_the_numpy_rules(rule):
    from nmt.alignment.word_links import word_links

    rng = np.random.default_rng(3)
    shapes = [(4, 5), (2, 7), (6, 3), (1, 1)]
    words = np.zeros((len(shapes), 6, 7), np.float32)  # padded as a batch is
    for n, (t, s) in enumerate(shapes):
        words[n, :t, :s] = rng.dirichlet(np.ones(s) * 0.5, size=t)
    words[0, 2] = 0.0  # a target word without attention on any source word
    words[1, 0, :2] = 0.5  # a tie
    texts = from_attention.pharaoh_links(tf.constant(words), rule).numpy()
    for n, (t, s) in enumerate(shapes):
        got = sorted(tuple(int(x) for x in link.split("-")) for link in texts[n].decode().split())
        assert got == word_links(words[n, :t, :s], rule), (n, rule)


def test_an_unknown_graph_link_rule_is_refused():
    with pytest.raises(ValueError, match="rule='grow'"):
        from_attention.pharaoh_links(tf.zeros([1, 2, 2]), "grow")
