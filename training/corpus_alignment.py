"""Statistical word alignment of the training pairs, for guided alignment.

`nmt align-corpus` (and `nmt train` when a config asks for guided alignment
without an alignment file) aligns the training pairs with eflomal (Östling &
Tiedemann 2016), a fast Bayesian IBM-model aligner, and writes one Pharaoh
line per training pair on the model's SentencePiece pieces.

Why words mapped to pieces. eflomal aligns words: the normalised words that
the model's pieces spell (the same grouping of pieces into words that
`nmt.alignment.from_attention` uses to report word links). Each word link (i, j) then
becomes every link between the pieces of source word i and the pieces of
target word j, so the guided loss spreads a target piece's attention over
the pieces of its source word. Aligning words keeps the aligner's
statistics on units that translate as a whole (a piece like "▁re" has no
translation of its own), and the model's word links are read back at word
level, where the gold alignments are.

eflomal is GPL-3.0. It is an optional extra (`pip install '.[align]'`), used
only to prepare training data; the served model and `nmt serve` never
import it.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import tensorflow as tf

from nmt.alignment.from_attention import piece_words as word_index_of_pieces
from nmt.alignment.word_links import grow_diag
from nmt.data.encoding import RaggedIds
from nmt.evaluation.metrics import read_pharaoh
from training.config import SYMMETRIZATIONS

log = logging.getLogger(__name__)

Link = tuple[int, int]


# --------------------------------------------------------------------------- symmetrisation


def symmetrize(forward: Iterable[Link], reverse: Iterable[Link], method: str) -> set[Link]:
    """Combines the two directional alignments of one sentence pair.

    Args:
        forward / reverse: `(source, target)` links of the two directions.
        method: one of `SYMMETRIZATIONS`; `grow-diag-final-and` is Koehn et
            al.'s heuristic (Moses): start from the intersection, add union
            links next to (also diagonally) an existing link that align a
            still unaligned word, then union links whose two words are both
            unaligned.

    Returns:
        The set of `(source, target)` links.
    """
    forward, reverse = set(forward), set(reverse)
    if method == "forward":
        return forward
    if method == "reverse":
        return reverse
    if method == "intersection":
        return forward & reverse
    if method == "union":
        return forward | reverse
    if method == "grow-diag-final-and":
        return _grow_diag_final_and(forward, reverse)
    raise ValueError(f"method must be one of {SYMMETRIZATIONS}. Received: method={method!r}")


def _grow_diag_final_and(forward: set[Link], reverse: set[Link]) -> set[Link]:
    links = grow_diag(forward & reverse, forward | reverse)
    sources = {i for i, _ in links}
    targets = {j for _, j in links}
    for direction in (forward, reverse):
        for i, j in sorted(direction):
            if i not in sources and j not in targets:
                links.add((i, j))
                sources.add(i)
                targets.add(j)
    return links


# --------------------------------------------------------------------------- pieces and words


def piece_words(tokenizer, texts: Sequence[str], batch: int = 4096
                ) -> tuple[list[np.ndarray], list[str]]:
    """Tokenizes `texts` once -> the word index of every piece, and the words.

    Returns:
        `(indices, lines)`: for each text, int `(pieces,)` word indices (-1 for
        a piece of no word; pieces are the tokenizer's, no EOS; words those of
        `nmt.alignment.from_attention`), and the words those pieces spell, space-joined (the
        aligner's input).
    """
    indices: list[np.ndarray] = []
    lines: list[str] = []
    for start in range(0, len(texts), batch):
        ids = tokenizer.tokenize(tf.constant(list(texts[start:start + batch]), tf.string))
        lengths = ids.row_lengths().numpy()
        dense = ids.to_tensor()  # (N, L)
        pieces = tokenizer.id_to_piece(dense)  # (N, L)
        valid = tf.sequence_mask(lengths, tf.shape(dense)[1])  # (N, L)
        words = word_index_of_pieces(pieces, valid).numpy()  # (N, L)
        for row, word_row, length in zip(pieces.numpy(), words, lengths, strict=True):
            index = word_row[:length]
            spelled = [""] * (int(index.max()) + 1 if length else 0)
            for piece, word in zip(row[:length], index, strict=True):
                if word >= 0:
                    spelled[word] += piece.decode("utf-8").replace("▁", "")
            indices.append(index)
            lines.append(" ".join(spelled))
    return indices, lines


def piece_word_indices(tokenizer, texts: Sequence[str]) -> list[np.ndarray]:
    """The word index of every piece of every text (see `piece_words`)."""
    return piece_words(tokenizer, texts)[0]


def word_links_to_pieces(links: Iterable[Link], source_words: np.ndarray,
                         target_words: np.ndarray) -> list[Link]:
    """Word links -> every link between the pieces of the linked words, sorted."""
    pieces: set[Link] = set()
    for i, j in links:
        for source_piece in np.flatnonzero(source_words == i):
            for target_piece in np.flatnonzero(target_words == j):
                pieces.add((int(source_piece), int(target_piece)))
    return sorted(pieces)


def piece_links_to_words(links: Iterable[Link], source_words: np.ndarray,
                         target_words: np.ndarray) -> set[Link]:
    """Piece links -> word links (two words are linked when any of their pieces are)."""
    words = set()
    for i, j in links:
        if source_words[i] >= 0 and target_words[j] >= 0:
            words.add((int(source_words[i]), int(target_words[j])))
    return words


# --------------------------------------------------------------------------- the aligner


def run_eflomal(source_lines: Sequence[str], target_lines: Sequence[str]
                ) -> tuple[list[set[Link]], list[set[Link]]]:
    """Aligns space-tokenized lines with eflomal -> (forward, reverse) links per line."""
    try:
        from eflomal import Aligner
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "Aligning the training corpus needs eflomal (GPL-3.0, used only for training): "
            "pip install 'nmt-attention[align]' — or give your own data.train_alignments file",
            name="eflomal",  # `nmt align-corpus` names the extra from it
        ) from None
    with tempfile.TemporaryDirectory(prefix="nmt-align-") as tmp:
        forward_path, reverse_path = os.path.join(tmp, "fwd"), os.path.join(tmp, "rev")
        # eflomal reads lowercased tokens; an empty line would stop it.
        Aligner().align(
            [(line or "<empty>") + "\n" for line in source_lines],
            [(line or "<empty>") + "\n" for line in target_lines],
            links_filename_fwd=forward_path, links_filename_rev=reverse_path, quiet=True,
        )
        return _read_links(forward_path), _read_links(reverse_path)


def _read_links(path: str) -> list[set[Link]]:
    return [set(links) for links in read_pharaoh(path)]


def align_pairs(pairs: Sequence[tuple[str, str]], tokenizers,
                method: str = "grow-diag-final-and") -> list[list[Link]]:
    """Piece-level links `(source piece, target piece)` for every pair."""
    if method not in SYMMETRIZATIONS:
        raise ValueError(f"method must be one of {SYMMETRIZATIONS}. Received: method={method!r}")
    aligned = align_words(pairs, tokenizers)
    return [
        word_links_to_pieces(symmetrize(forward, reverse, method), source, target)
        for forward, reverse, source, target in aligned
    ]


def align_words(pairs: Sequence[tuple[str, str]], tokenizers):
    """Runs the aligner on the pieces' words.

    Returns:
        One `(forward, reverse, source_piece_words, target_piece_words)` per
        pair: word links of both directions and the word index of each piece.
    """
    sources, targets = [s for s, _ in pairs], [t for _, t in pairs]
    source_index, source_words = piece_words(tokenizers.source, sources)
    target_index, target_words = piece_words(tokenizers.target, targets)
    log.info("aligning %d pairs with eflomal", len(pairs))
    forward, reverse = run_eflomal(source_words, target_words)
    return list(zip(forward, reverse, source_index, target_index, strict=True))


# --------------------------------------------------------------------------- files


def format_links(links: Iterable[Link]) -> str:
    """Pharaoh `i-j i-j ...`, source index first."""
    return " ".join(f"{i}-{j}" for i, j in links)


def write_alignments(path: str | Path, alignments: Iterable[Iterable[Link]]) -> None:
    """Writes one Pharaoh line per pair, atomically (a partial file never appears)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    with open(partial, "w", encoding="utf-8") as f:
        for links in alignments:
            f.write(format_links(links) + "\n")
    os.replace(partial, path)


def read_training_alignments(path: str | Path, pair_count: int) -> list[frozenset[Link]]:
    """Reads a Pharaoh file with one line per training pair, refusing a wrong line count."""
    alignments = read_pharaoh(path)
    if len(alignments) != pair_count:
        raise ValueError(
            f"{path} has {len(alignments)} lines but the training file has {pair_count} "
            "pairs: data.train_alignments needs one Pharaoh line per training pair, in order "
            "(an empty line for a pair without links)"
        )
    return alignments


def corpus_links(alignments: Sequence[frozenset[Link]], pair_indices: np.ndarray,
                 source_lengths: np.ndarray, target_lengths: np.ndarray,
                 path: str | Path = "alignments") -> RaggedIds:
    """The links of the encoded pairs, checked against their piece counts.

    Args:
        alignments: one link set per line of the alignment file.
        pair_indices: for each encoded pair, its 0-based line in the file.
        source_lengths / target_lengths: pieces of each encoded pair
            (without EOS).
        path: named in errors.

    Returns:
        `RaggedIds` rows `[i0, j0, i1, j1, ...]` for `EncodedCorpus.with_alignments`.
    """
    rows = []
    for line, source_length, target_length in zip(
        pair_indices.tolist(), source_lengths.tolist(), target_lengths.tolist(), strict=True
    ):
        links = sorted(alignments[line])
        for i, j in links:
            if i >= source_length or j >= target_length:
                raise ValueError(
                    f"{path}:{line + 1}: link {i}-{j} is outside the pair, which has "
                    f"{source_length} source and {target_length} target pieces. The links "
                    "must index the model's SentencePiece pieces (nmt align-corpus writes "
                    "such a file)"
                )
        rows.append([index for link in links for index in link])
    return RaggedIds.from_lists(rows)
