"""From subword attention to what users read: text, tokens and word links.

All functions are TensorFlow graph ops, so they run inside the exported
SavedModel.

Words. Word indices count the whitespace-separated words (in the sense of
Python's `str.split()`) of the source as the caller gave it, and of the
returned translation (or, for forced alignment, of the target as given).
Pieces are grouped into words the way their joined text splits: a piece with
visible characters starts a word when a "▁" occurs since the previous such
piece (or none came before it); a piece without visible characters (a lone
"▁") belongs to the word that follows it. Normalisation may split a given word
(French "Va!" becomes "Va !"), so the words of the normalised text are mapped
back to the given word they came from.

Word-alignment rule: subword attention is merged into a word matrix by
summing the columns of the pieces of each source word and averaging the rows
of the pieces of each target word; the end-of-sentence column and row are
left out. Every target word is then linked to the source word it attends to
most (argmax per target word), so each target word has exactly one link,
unless its attention on the source words is 0 (all of it on the
end-of-sentence token, or an empty source): then it has none.

Unknown words (after Luong et al. 2015, "Addressing the rare word problem"):
an unknown output piece is replaced by what the source word it attends to
most holds in place of it. Where that word has unknown pieces of its own (a
character the vocabulary lacks: "[Save]", "#urgent", "user_name"), the piece
becomes the characters of the one it attends to most, in place, so that the
pieces the model wrote around it stay ("[Save]." not "[Save]Save [Save].").
Where the word has none, the piece becomes that whole (normalised) word, as a
word of its own.

French spacing: a model trained on targets normalised before that rule spared
marks inside tokens (version 10 and earlier) writes a space before `! ? : ;`
there too ("https ://", ":meth :`x`"); that space is taken back where the
source holds the mark glued on both sides (`glue_marks`).
"""

from __future__ import annotations

import tensorflow as tf

from nmt.data.tokenizer import EOS_ID, UNK_ID, WORD_START

_EOS_PIECE = "</s>"
_UNK_PIECE = "<unk>"
# The characters Python's str.split() splits on; RE2's \s is ASCII-only and
# lacks \v, and \p{Z} covers the Unicode space separators.
_PY_WHITESPACE = r"[\s\x{0b}\x{1c}-\x{1f}\x{85}\p{Z}]+"


def _visible_lengths(ids, lengths):
    """Lengths without the final EOS, `(N,)`."""
    last = tf.gather(ids, tf.maximum(lengths - 1, 0), batch_dims=1)  # (N,)
    ended = tf.logical_and(lengths > 0, tf.equal(last, EOS_ID))
    return lengths - tf.cast(ended, lengths.dtype)


def _starts_with_marker(pieces):
    marker = WORD_START.encode("utf-8")
    return tf.equal(tf.strings.substr(pieces, 0, len(marker)), marker)


def piece_words(pieces, valid):
    """Word index of every piece, as the joined pieces split into words.

    Args:
        pieces: string `(N, L)`, SentencePiece pieces ("▁" marks a space).
        valid: bool `(N, L)`, False at EOS and padding.

    Returns:
        int32 `(N, L)`: 0-based word index; -1 where not valid and for
        invisible pieces that no word follows.
    """
    spaced = valid & _starts_with_marker(pieces)  # (N, L)
    bare = tf.strings.regex_replace(pieces, WORD_START, "")
    visible = valid & (tf.strings.length(bare) > 0)  # (N, L)
    # Group g holds the pieces after the g-th visible piece up to the next
    # visible one (inclusive); that piece starts a word if its group has a space.
    group = tf.cumsum(tf.cast(visible, tf.int32), axis=1, exclusive=True)  # (N, L)
    width = tf.shape(pieces)[1] + 1
    segments = group + tf.range(tf.shape(pieces)[0])[:, None] * width  # (N, L)
    any_space = tf.math.unsorted_segment_max(
        tf.cast(spaced, tf.int32), segments, tf.shape(pieces)[0] * width
    )
    group_spaced = tf.gather(any_space, segments) > 0  # (N, L)
    starts = visible & (group_spaced | tf.equal(group, 0))
    count = tf.cumsum(tf.cast(starts, tf.int32), axis=1)  # (N, L) words begun so far
    words = tf.reduce_sum(tf.cast(starts, tf.int32), axis=1, keepdims=True)  # (N, 1)
    index = tf.where(visible, count - 1, count)  # invisible pieces join the next word
    return tf.where(valid & (index < words), index, -1)


def given_word_map(normalize, texts):
    """Maps the words of normalised texts to the whitespace words of `texts`.

    Args:
        normalize: the tokenizer's normalisation function (string tensor in,
            same shape out).
        texts: string `(N,)`, as the caller gave them.

    Returns:
        int32 `(N, W)`: for each word of `normalize(texts)`, the index of the
        given word it comes from; -1 padding. W may be 0.
    """
    words = tf.strings.split(tf.strings.regex_replace(texts, _PY_WHITESPACE, " "))  # (N, G)
    per_word = tf.strings.split(normalize(words.flat_values)).row_lengths()  # (total G,)
    local = tf.ragged.range(words.row_lengths()).flat_values  # (total G,)
    per_text = tf.reduce_sum(words.with_flat_values(per_word), axis=1)  # (N,)
    mapping = tf.RaggedTensor.from_row_lengths(tf.repeat(local, per_word), per_text)
    return tf.cast(mapping.to_tensor(default_value=-1), tf.int32)  # (N, W)


def _remap(index, mapping):
    """`mapping[n, index[n, l]]`, -1 where `index` is -1 or beyond the mapping."""
    width = tf.shape(mapping)[1]
    padded = tf.pad(mapping, [[0, 0], [0, 1]], constant_values=-1)  # (N, W + 1)
    safe = tf.where((index >= 0) & (index < width), index, width)
    return tf.gather(padded, safe, batch_dims=1)


def _one_hot_words(words):
    """`(N, L)` word indices -> `(N, L, W)` float32, zero rows at -1; W >= 1."""
    return tf.one_hot(words, tf.maximum(tf.reduce_max(words) + 1, 1))


def word_matrix(attention, source_words, target_words):
    """Merges subword attention `(N, T, S)` into `(N, Wt, Ws)` word attention.

    Columns of the pieces of a source word are summed, rows of the pieces of
    a target word averaged; pieces with word index -1 are left out.
    """
    src_onehot = _one_hot_words(source_words)  # (N, S, Ws)
    tgt_onehot = _one_hot_words(target_words)  # (N, T, Wt)
    summed = tf.matmul(attention, src_onehot)  # (N, T, Ws)
    merged = tf.matmul(tgt_onehot, summed, transpose_a=True)  # (N, Wt, Ws)
    counts = tf.reduce_sum(tgt_onehot, axis=1)[:, :, None]  # (N, Wt, 1)
    return merged / tf.maximum(counts, 1.0)


def word_scores(piece_scores, target_words):
    """Each target word's score: the mean of its pieces' log-probabilities.

    As Bergamot's word quality scores (the mean log-probability of a word's
    subwords); the pieces are grouped as the rows of `word_matrix`.

    Args:
        piece_scores: float32 `(N, T)`, log-probability of each target piece.
        target_words: int32 `(N, T)`, word index of each piece, -1 for none
            (EOS, padding).

    Returns:
        float32 `(N, Wt)`, 0 beyond each sentence's words; Wt as `word_matrix`'s.
    """
    onehot = _one_hot_words(target_words)  # (N, T, Wt)
    summed = tf.reduce_sum(onehot * piece_scores[:, :, None], axis=1)  # (N, Wt)
    counts = tf.reduce_sum(onehot, axis=1)  # (N, Wt)
    return summed / tf.maximum(counts, 1.0)


# The rules of `nmt.alignment.word_links` the graph can apply itself (`grow` is iterative: clients
# apply it to the returned word matrix).
GRAPH_LINK_RULES = ("argmax", "intersect")


def pharaoh_links(words, rule: str = "argmax"):
    """`(N, Wt, Ws)` word attention -> Pharaoh "s-t s-t ..." strings `(N,)`.

    `argmax`: each target word links to its argmax source word; rows without
    attention mass on any source word get no link. `intersect`: cells that
    are the maximum of their row and of their column (and not 0). The same
    rules as `nmt.alignment.word_links`; links in target-word order.
    """
    if rule not in GRAPH_LINK_RULES:
        raise ValueError(f"rule must be one of {GRAPH_LINK_RULES}. Received: rule={rule!r}")
    if rule == "argmax":
        best = tf.argmax(words, axis=2, output_type=tf.int32)  # (N, Wt)
        cells = tf.one_hot(best, tf.shape(words)[2], on_value=True, off_value=False)
        cells &= (tf.reduce_max(words, axis=2) > 0.0)[:, :, None]  # (N, Wt, Ws)
    else:
        cells = ((words == tf.reduce_max(words, axis=2, keepdims=True))
                 & (words == tf.reduce_max(words, axis=1, keepdims=True)) & (words > 0.0))
    where = tf.cast(tf.where(cells), tf.int32)  # (links, 3) as (n, t, s), row-major
    pairs = tf.strings.as_string(where[:, 2]) + "-" + tf.strings.as_string(where[:, 1])
    per_sentence = tf.RaggedTensor.from_value_rowids(pairs, where[:, 0],
                                                     nrows=tf.shape(words)[0])
    return tf.strings.reduce_join(per_sentence, axis=1, separator=" ")


def _pieces(tokenizer, ids, with_eos_lengths):
    """Piece strings `(N, L)`, "" beyond `with_eos_lengths`, "</s>" at EOS."""
    positions = tf.range(tf.shape(ids)[1])[None, :]  # (1, L)
    pieces = tokenizer.id_to_piece(ids)
    pieces = tf.where(tf.equal(ids, EOS_ID), _EOS_PIECE, pieces)
    return tf.where(positions < with_eos_lengths[:, None], pieces, "")


def unknown_piece_texts(tokenizer, sentences, source_ids):
    """The normalised characters each unknown source piece stands for.

    Args:
        tokenizer: the source `SubwordTokenizer`.
        sentences: string `(N,)`, the sources as given.
        source_ids: int `(N, S)`, their ids as searched (truncated, EOS, 0 padding).

    Returns:
        string `(N, S)`: the characters of `normalize(sentences)` under each
        unknown piece (SentencePiece gives a run of unknown characters one
        piece: "<=", "北京"), "" at every other position.
    """
    ids, starts, ends = tokenizer.tokenize_with_offsets(sentences)
    shape = tf.shape(source_ids, out_type=tf.int64)
    dense_ids = tf.cast(ids.to_tensor(0, shape=shape), tf.int32)
    starts = starts.to_tensor(0, shape=shape)
    ends = ends.to_tensor(0, shape=shape)
    texts = tf.broadcast_to(tokenizer.normalize(sentences)[:, None], tf.cast(shape, tf.int32))
    chars = tf.strings.substr(texts, starts, ends - starts)
    unknown = tf.equal(dense_ids, UNK_ID) & tf.equal(tf.cast(source_ids, tf.int32), UNK_ID)
    return tf.where(unknown, chars, "")


def _edge_characters(pieces, blank):
    """The last character of the piece before each piece and the first of the one after.

    Args:
        pieces: string `(N, L)`, "" beyond the length.
        blank: what an absent or empty neighbour gives (a character no piece holds).

    Returns:
        Two string `(N, L)` tensors; "▁" counts as a character (a space).
    """
    shifted_right = tf.pad(pieces, [[0, 0], [1, 0]])[:, :-1]
    shifted_left = tf.pad(pieces, [[0, 0], [0, 1]])[:, 1:]
    last = tf.strings.substr(blank + shifted_right, -1, 1, unit="UTF8_CHAR")
    first = tf.strings.substr(shifted_left + blank, 0, 1, unit="UTF8_CHAR")
    return last, first


def replace_unknown(pieces, unknown, attention, source_words, word_strings, source_pieces,
                    source_unknown):
    """Unknown pieces become what the source word they attend to most holds for them.

    A piece the model wrote as a copy of an unknown piece of that word (the
    character before or after it is the same as around the source's: "▁ <unk>
    S a ve <unk>" for "[Save]") becomes that piece's characters, in place; of
    several, the one with most such neighbours, then most attention. Any
    other becomes the whole attended word, as a word of its own (a lone
    "<unk>" for "Zanzibar").

    Args:
        pieces: string `(N, T)` target pieces, "" beyond the length.
        unknown: bool `(N, T)`, the pieces to replace.
        attention: float32 `(N, T, S)`.
        source_words: int32 `(N, S)`, word index of each source piece, -1 for none.
        word_strings: string `(N, W)`, the source words those indices refer to.
        source_pieces: string `(N, S)` source pieces, "" beyond the length.
        source_unknown: string `(N, S)`, `unknown_piece_texts`.

    Returns:
        string `(N, T)`, the pieces with unknown ones replaced; unknown pieces
        that attend to no source word are kept.
    """
    per_word = tf.matmul(attention, _one_hot_words(source_words))  # (N, T, Ws)
    best = tf.argmax(per_word, axis=2, output_type=tf.int32)  # (N, T)
    found = (tf.reduce_max(per_word, axis=2) > 0.0) & (best < tf.shape(word_strings)[1])
    padded = tf.pad(word_strings, [[0, 0], [0, 1]])  # gather-safe when W = 0
    words = tf.gather(padded, tf.where(found, best, 0), batch_dims=1)  # (N, T)
    # The attended word's unknown pieces, scored by the neighbours they share with the
    # target piece (2 each) and then by attention (at most 1).
    in_best = (tf.not_equal(source_unknown, "")[:, None, :]
               & tf.equal(source_words[:, None, :], best[:, :, None]))  # (N, T, S)
    before, after = _edge_characters(pieces, "\x01")  # (N, T)
    source_before, source_after = _edge_characters(source_pieces, "\x02")  # (N, S)
    shared = (tf.cast(tf.equal(before[:, :, None], source_before[:, None, :]), tf.float32)
              + tf.cast(tf.equal(after[:, :, None], source_after[:, None, :]), tf.float32))
    score = tf.where(in_best, 2.0 * shared + tf.cast(attention, tf.float32), -1.0)
    piece = tf.argmax(score, axis=2, output_type=tf.int32)  # (N, T)
    copied = tf.reduce_max(score, axis=2) >= 2.0
    chars = tf.gather(source_unknown, piece, batch_dims=1)  # (N, T)
    return tf.where(unknown & found, tf.where(copied, chars, WORD_START + words), pieces)


# French spacing puts a space before these (`nmt.data.tokenizer`'s French rules), and the
# model writes it, also where the mark is inside a token: ":meth:`x`", "std::vector".
_SPACED_MARKS = ("!", "?", ":", ";")


def _is_mark(characters):
    found = tf.zeros_like(characters, tf.bool)
    for mark in _SPACED_MARKS:
        found |= tf.equal(characters, mark)
    return found


def glue_marks(pieces, valid, sources):
    """Takes back the space the model wrote before `! ? : ;` inside a token.

    French spacing ("Va !", "Note : ceci") is right before a mark that ends a
    word; before one glued to what follows it is not ("https ://",
    ":meth :`x`"). A space the model wrote before a mark is removed where the
    mark is glued to the character after it and the source holds the same
    character glued to the same mark (":pep:`529`" gives back ":pep:`529`",
    its first colon, spaced in the source, staying spaced).

    Args:
        pieces: string `(N, T)`, the output pieces (unknown ones replaced).
        valid: bool `(N, T)`, False at EOS and padding.
        sources: string `(N,)`, the normalised sources.

    Returns:
        string `(N, T)`: the pieces, a "▁" taken off where a space goes.
    """
    given, pieces = pieces, tf.where(valid, pieces, "")
    bare = tf.strings.regex_replace(pieces, WORD_START, "")
    first = tf.strings.substr(bare + "\x01", 0, 1, unit="UTF8_CHAR")  # (N, T)
    # The mark is glued to what follows: more characters in its piece, or a next piece
    # that starts without a space.
    next_first = tf.strings.substr(_shifted(pieces, -1, "") + "\x01", 0, 1, unit="UTF8_CHAR")
    glued_after = ((tf.strings.length(bare, unit="UTF8_CHAR") > 1)
                   | (tf.not_equal(next_first, WORD_START) & tf.not_equal(next_first, "\x01")))
    lone_space = tf.equal(pieces, WORD_START)
    spaced = _starts_with_marker(pieces)
    space_before = spaced | _shifted(lone_space, 1, False)
    # The character written before that space: the end of the piece before "▁:", or of
    # the one before the lone "▁".
    before = tf.where(spaced, _shifted(bare, 1, ""), _shifted(bare, 2, ""))
    before = tf.strings.substr("\x01" + before, -1, 1, unit="UTF8_CHAR")
    candidate = valid & _is_mark(first) & space_before & glued_after
    # The source's marks glued to the character before them: "p:" of ":pep:`529`".
    characters = tf.strings.unicode_split(sources, "UTF-8").to_tensor("")  # (N, C)
    previous = _shifted(characters, 1, "")
    glued = (_is_mark(characters) & ~_is_mark(previous) & tf.not_equal(previous, " ")
             & tf.not_equal(previous, ""))
    pairs = tf.ragged.boolean_mask(previous + characters, glued).to_tensor("\x02")  # (N, P)
    in_source = tf.reduce_any(tf.equal((before + first)[:, :, None], pairs[:, None, :]), axis=2)
    glue = candidate & in_source
    unspaced = tf.where(glue & spaced, bare, given)
    return tf.where(_shifted(glue & ~spaced, -1, False) & lone_space, "", unspaced)


def _shifted(values, by, fill):
    """`values[:, t - by]` along axis 1, `fill` where that is outside the row."""
    if by > 0:
        return tf.pad(values, [[0, 0], [by, 0]], constant_values=fill)[:, :-by]
    return tf.pad(values, [[0, 0], [0, -by]], constant_values=fill)[:, -by:]


def _join_pieces(pieces, valid):
    """SentencePiece-style detokenization of piece strings -> `(N,)` text."""
    text = tf.strings.reduce_join(tf.where(valid, pieces, ""), axis=1)
    text = tf.strings.regex_replace(text, WORD_START, " ")
    return tf.strings.strip(tf.strings.regex_replace(text, " +", " "))


def _valid(ids, lengths):
    """`(N, L)` positions before `lengths` that are not the final EOS."""
    visible = _visible_lengths(ids, lengths)
    return tf.range(tf.shape(ids)[1])[None, :] < visible[:, None]


def signature_outputs(source_tokenizer, target_tokenizer, sentences, source_ids, target_ids,
             target_lengths, alignments, replace_unknown_words, targets=None, attention=None,
             link_rule: str = "argmax", piece_log_probs=None):
    """The outputs of the exported signatures, from search (or forced-decoding) output.

    Args:
        source_tokenizer / target_tokenizer: `SubwordTokenizer`s.
        sentences: string `(N,)`, the sources as given.
        source_ids: int `(N, S)`, ending with EOS, padded with 0.
        target_ids: int `(N, T)`, including EOS when a hypothesis ended.
        target_lengths: int `(N,)`, tokens including EOS.
        alignments: float32 `(N, T, S)`, the rows the word links are read
            from: the alignment head's, or the decoder's attention without one.
        replace_unknown_words: bool scalar.
        targets: string `(N,)`, the targets as given (forced alignment), or
            None for searched targets. When given, they are returned as the
            translations, target word indices count their whitespace words
            and no unknown word is replaced.
        attention: float32 `(N, T, S)`, the decoder's own attention, returned
            as `attention` (the same as `alignments` without a head); None
            returns `alignments` there.
        link_rule: how `word_alignments` are read from the word matrix, one of
            `GRAPH_LINK_RULES`.
        piece_log_probs: float32 `(N, T)`, the log-probability of each target
            piece given the source and the pieces before it, or None (then
            the two outputs below are not returned).

    Returns:
        dict with `translations (N,)`, `source_tokens (N, S)`, `target_tokens
        (N, T)` (pieces, "" padding, "</s>" for EOS), `alignments (N, T, S)`,
        `attention (N, T, S)`,
        `source_lengths`, `target_lengths` (tokens incl. EOS),
        `word_attention (N, Wt, Ws)` (the word matrix the links are read from,
        see `word_matrix`; 0 padding) and `word_alignments (N,)` (Pharaoh
        "i-j", source word first, by `link_rule`). With `piece_log_probs`
        also `piece_scores (N, T)` (those, 0 beyond the length, EOS kept) and
        `word_scores (N, Wt)` (the mean of each target word's pieces, the
        words of `word_attention`'s rows; 0 padding), see `word_scores`.
    """
    source_ids = tf.cast(source_ids, tf.int32)
    target_ids = tf.cast(target_ids, tf.int32)
    target_lengths = tf.cast(target_lengths, tf.int32)
    source_lengths = tf.reduce_sum(tf.cast(source_ids > 0, tf.int32), axis=1)  # (N,)
    src_valid, tgt_valid = _valid(source_ids, source_lengths), _valid(target_ids, target_lengths)
    with_eos = tf.range(tf.shape(target_ids)[1])[None, :] < target_lengths[:, None]  # (N, T)
    in_target = tf.cast(with_eos, alignments.dtype)[:, :, None]
    alignments = alignments * in_target  # EOS row kept
    attention = alignments if attention is None else attention * in_target
    word_rows = alignments * tf.cast(tgt_valid, alignments.dtype)[:, :, None]  # EOS row dropped

    source_pieces = _pieces(source_tokenizer, source_ids, source_lengths)
    target_pieces = _pieces(target_tokenizer, target_ids, target_lengths)
    normalized_words = piece_words(source_pieces, src_valid)  # (N, S)
    source_words = _remap(normalized_words, given_word_map(source_tokenizer.normalize, sentences))
    if targets is None:
        text_pieces = tf.cond(
            tf.convert_to_tensor(replace_unknown_words),
            lambda: replace_unknown(
                target_pieces, tf.equal(target_ids, UNK_ID) & tgt_valid, word_rows,
                normalized_words,
                tf.strings.split(source_tokenizer.normalize(sentences)).to_tensor(""),
                source_pieces, unknown_piece_texts(source_tokenizer, sentences, source_ids),
            ),
            lambda: target_pieces,
        )
        text_pieces = glue_marks(text_pieces, tgt_valid, source_tokenizer.normalize(sentences))
        translations = _join_pieces(text_pieces, tgt_valid)
        target_words = piece_words(text_pieces, tgt_valid)  # (N, T)
    else:
        translations = targets
        target_words = _remap(
            piece_words(target_pieces, tgt_valid),
            given_word_map(target_tokenizer.normalize, targets),
        )
    words = word_matrix(word_rows, source_words, target_words)  # (N, Wt, Ws)
    scores = {}
    if piece_log_probs is not None:
        piece_scores = tf.where(with_eos, tf.cast(piece_log_probs, tf.float32), 0.0)  # (N, T)
        scores = {"piece_scores": piece_scores,
                  "word_scores": word_scores(piece_scores, target_words)}
    return {
        **scores,
        "translations": translations,
        "source_tokens": source_pieces,
        "target_tokens": target_pieces,
        "alignments": alignments,
        "attention": attention,
        "source_lengths": source_lengths,
        "target_lengths": target_lengths,
        "word_attention": words,
        "word_alignments": pharaoh_links(words, link_rule),
    }
