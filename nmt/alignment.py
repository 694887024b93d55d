"""From subword attention to what users read: text, tokens and word links.

All functions are TensorFlow graph ops, so they run inside the exported
SavedModel.

Word-alignment rule: subword attention is merged into a word matrix by
summing the columns of the pieces of each source word and averaging the rows
of the pieces of each target word; the end-of-sentence column and row are
left out. Every target word is then linked to the source word it attends to
most (argmax per target word), so each target word has exactly one link.
Words are the whitespace-separated words of the source as given and of the
returned translation (pieces starting with "▁" begin a word).
"""

from __future__ import annotations

import tensorflow as tf

from nmt.tokenizer import EOS_ID, UNK_ID, WORD_START

_EOS_PIECE = "</s>"


def _visible_lengths(ids, lengths):
    """Lengths without the final EOS, `(N,)`."""
    last = tf.gather(ids, tf.maximum(lengths - 1, 0), batch_dims=1)  # (N,)
    ended = tf.logical_and(lengths > 0, tf.equal(last, EOS_ID))
    return lengths - tf.cast(ended, lengths.dtype)


def _word_index(starts, valid):
    """0-based word index of every piece; -1 where not valid. `(N, L)`."""
    starts = tf.logical_or(starts, tf.equal(tf.cumsum(tf.cast(valid, tf.int32), axis=1), 1))
    index = tf.cumsum(tf.cast(tf.logical_and(starts, valid), tf.int32), axis=1) - 1
    return tf.where(valid, index, -1)


def _pieces(tokenizer, ids, with_eos_lengths):
    """Piece strings `(N, L)`, "" beyond `with_eos_lengths`, "</s>" at EOS."""
    positions = tf.range(tf.shape(ids)[1])[None, :]  # (1, L)
    pieces = tokenizer.id_to_piece(ids)
    pieces = tf.where(tf.equal(ids, EOS_ID), _EOS_PIECE, pieces)
    return tf.where(positions < with_eos_lengths[:, None], pieces, "")


def _replace_unknown(pieces, target_ids, target_valid, source_words, best_source_word):
    """Unknown pieces become the source word they attend to most (Luong et al. 2015b)."""
    words = tf.gather(source_words, tf.maximum(best_source_word, 0), batch_dims=1)  # (N, T)
    unknown = tf.logical_and(tf.equal(target_ids, UNK_ID), target_valid)
    return tf.where(unknown, WORD_START + words, pieces)


def _join_pieces(pieces, valid):
    """SentencePiece-style detokenization of piece strings -> `(N,)` text."""
    text = tf.strings.reduce_join(tf.where(valid, pieces, ""), axis=1)
    text = tf.strings.regex_replace(text, WORD_START, " ")
    return tf.strings.strip(tf.strings.regex_replace(text, " +", " "))


def _word_matrix(attention, source_words, target_words):
    """Merges subword attention `(N, T, S)` into `(N, Wt, Ws)` word attention."""
    depth_s = tf.reduce_max(source_words) + 1
    depth_t = tf.reduce_max(target_words) + 1
    src_onehot = tf.one_hot(source_words, tf.maximum(depth_s, 1))  # (N, S, Ws), 0 at -1
    tgt_onehot = tf.one_hot(target_words, tf.maximum(depth_t, 1))  # (N, T, Wt)
    summed = tf.matmul(attention, src_onehot)  # (N, T, Ws)
    merged = tf.matmul(tgt_onehot, summed, transpose_a=True)  # (N, Wt, Ws)
    counts = tf.reduce_sum(tgt_onehot, axis=1)[:, :, None]  # (N, Wt, 1)
    return merged / tf.maximum(counts, 1.0)


def _pharaoh(links, target_word_count):
    """`(N, Wt)` source word of each target word -> "s-t s-t ..." strings `(N,)`."""
    target = tf.range(tf.shape(links)[1])[None, :] + tf.zeros_like(links)  # (N, Wt)
    pairs = tf.strings.as_string(links) + "-" + tf.strings.as_string(target)
    valid = target < target_word_count[:, None]
    return tf.strings.reduce_join(tf.ragged.boolean_mask(pairs, valid), axis=1, separator=" ")


def describe(source_tokenizer, target_tokenizer, sentences, source_ids, target_ids,
             target_lengths, attention, replace_unknown):
    """Turns search (or forced-decoding) output into user-facing tensors.

    Args:
        source_tokenizer / target_tokenizer: `SubwordTokenizer`s.
        sentences: string `(N,)`, the sources as given.
        source_ids: int `(N, S)`, ending with EOS, padded with 0.
        target_ids: int `(N, T)`, including EOS when a hypothesis ended.
        target_lengths: int `(N,)`, tokens including EOS.
        attention: float32 `(N, T, S)`.
        replace_unknown: bool scalar.

    Returns:
        dict with `translations (N,)`, `source_tokens (N, S)`, `target_tokens
        (N, T)` (pieces, "" padding, "</s>" for EOS), `alignments (N, T, S)`,
        `source_lengths`, `target_lengths` (tokens incl. EOS) and
        `word_alignments (N,)` (Pharaoh "i-j", source word first).
    """
    source_ids = tf.cast(source_ids, tf.int32)
    target_ids = tf.cast(target_ids, tf.int32)
    target_lengths = tf.cast(target_lengths, tf.int32)
    source_lengths = tf.reduce_sum(tf.cast(source_ids > 0, tf.int32), axis=1)  # (N,)
    src_visible = _visible_lengths(source_ids, source_lengths)
    tgt_visible = _visible_lengths(target_ids, target_lengths)
    src_valid = tf.range(tf.shape(source_ids)[1])[None, :] < src_visible[:, None]  # (N, S)
    tgt_valid = tf.range(tf.shape(target_ids)[1])[None, :] < tgt_visible[:, None]  # (N, T)
    source_words = _word_index(source_tokenizer.word_starts(source_ids), src_valid)
    target_starts = tf.logical_or(
        target_tokenizer.word_starts(target_ids), tf.equal(target_ids, UNK_ID)
    )
    target_words = _word_index(target_starts, tgt_valid)
    with_eos = tf.range(tf.shape(target_ids)[1])[None, :] < target_lengths[:, None]  # (N, T)
    attention = attention * tf.cast(with_eos, attention.dtype)[:, :, None]  # EOS row kept
    word_rows = attention * tf.cast(tgt_valid, attention.dtype)[:, :, None]  # EOS row dropped
    words = _word_matrix(word_rows, source_words, target_words)  # (N, Wt, Ws)
    links = tf.cast(tf.argmax(words, axis=2), tf.int32)  # (N, Wt)

    source_pieces = _pieces(source_tokenizer, source_ids, source_lengths)
    target_pieces = _pieces(target_tokenizer, target_ids, target_lengths)
    given_words = tf.strings.split(source_tokenizer.normalize(sentences)).to_tensor("")
    source_onehot = tf.one_hot(source_words, tf.maximum(tf.reduce_max(source_words) + 1, 1))
    best_word = tf.argmax(tf.matmul(word_rows, source_onehot), axis=2, output_type=tf.int32)
    text_pieces = tf.cond(
        tf.convert_to_tensor(replace_unknown),
        lambda: _replace_unknown(target_pieces, target_ids, tgt_valid, given_words, best_word),
        lambda: target_pieces,
    )
    target_word_count = tf.reduce_max(target_words, axis=1) + 1  # (N,)
    return {
        "translations": _join_pieces(text_pieces, tgt_valid),
        "source_tokens": source_pieces,
        "target_tokens": target_pieces,
        "alignments": attention,
        "source_lengths": source_lengths,
        "target_lengths": target_lengths,
        "word_alignments": _pharaoh(links, target_word_count),
    }
