"""Target-vocabulary shortlists: the output layer restricted to likely words.

Most of a search step's work grows with the target vocabulary: the output
product `(rows, d) x (d, V)`, its bias, the log-softmax and the top-k over V.
A sentence only ever needs a small part of the vocabulary: the words its
source words translate to, and the frequent words every sentence uses. A
shortlist lists those (as the lexical shortlists of Marian and the vocabulary
maps of CTranslate2 do): a sentence may use

- the `frequent` most frequent target tokens of the training corpus,
- for each of its source tokens, the `per_source` likeliest translations
  under IBM Model 1 (Brown et al. 1993), trained here by EM on the training
  pairs' subword ids,
- the special tokens.

A batch computes logits for the union of its sentences' lists only (that is
the saving), and each sentence's search is masked to its own list, so a
translation does not depend on the sentences batched with it. Probabilities
are normalised over the sentence's list, so scores differ slightly from a
full-vocabulary search; a token outside the list can't be produced.
`bench/decode_speed.py` and `nmt evaluate` measure the trade.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import tensorflow as tf

from nmt.data.encoding import RaggedIds, encode_pairs
from nmt.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, UNK_ID

SPECIAL_IDS = (PAD_ID, UNK_ID, BOS_ID, EOS_ID)


@dataclasses.dataclass(frozen=True)
class Shortlist:
    """The vocabulary a search may use, by source token.

    Attributes:
        frequent: int32 `(N,)`, target ids always in the list.
        translations: int32 `(source_vocab, M)`, the M likeliest target ids
            of each source id (special ids for source ids never seen).
    """

    frequent: np.ndarray
    translations: np.ndarray

    def __post_init__(self) -> None:
        if self.frequent.ndim != 1 or self.translations.ndim != 2:
            raise ValueError(
                f"a shortlist needs frequent ids (N,) and translations (source_vocab, M). "
                f"Received shapes {self.frequent.shape} and {self.translations.shape}")

    @property
    def settings(self) -> dict:
        """How many ids it takes, for the model's metadata."""
        return {"frequent": int(self.frequent.shape[0]),
                "per_source_token": int(self.translations.shape[1])}


def sentence_vocabularies(frequent: tf.Tensor, translations: tf.Tensor, source: tf.Tensor,
                          target_vocab: int) -> tf.Tensor:
    """The target ids each sentence may use: bool `(batch, V)`, special ids included.

    Args:
        frequent, translations: a `Shortlist`'s arrays as tensors.
        source: int32 `(batch, S)` source ids, 0 at padding.
        target_vocab: V, the size of the whole target vocabulary.
    """
    ids = tf.gather(translations, source)  # (batch, S, M)
    ids = tf.where(tf.equal(source, PAD_ID)[:, :, None], EOS_ID, ids)  # padding adds nothing
    own = tf.math.bincount(tf.reshape(ids, [tf.shape(ids)[0], -1]), minlength=target_vocab,
                           maxlength=target_vocab, binary_output=True, axis=-1)  # (batch, V)
    everyone = tf.scatter_nd(
        tf.concat([tf.constant(SPECIAL_IDS, tf.int32), frequent], axis=0)[:, None],
        tf.ones([len(SPECIAL_IDS) + tf.size(frequent)], tf.int32), [target_vocab]) > 0  # (V,)
    return (own > 0) | everyone[None, :]


def batch_vocabulary(allowed: tf.Tensor, multiple: int = 1) -> tf.Tensor:
    """The target ids some sentence of a batch may use: int32 `(V',)`.

    The ids are sorted, so a tie between two tokens breaks towards the lower
    id, as over the whole vocabulary, and the special ids (the lowest) keep
    their values as positions. Then PAD ids fill the list up to a multiple of
    `multiple` (the search bans PAD, so they are never chosen).

    Args:
        allowed: bool `(batch, V)`, from `sentence_vocabularies`.
        multiple: V' is a multiple of it.
    """
    ids = tf.cast(tf.where(tf.reduce_any(allowed, axis=0))[:, 0], tf.int32)
    return tf.pad(ids, [[0, -tf.size(ids) % multiple]], constant_values=PAD_ID)


def _links(source: RaggedIds, target: RaggedIds, target_vocab: int
           ) -> tuple[np.ndarray, np.ndarray, int]:
    """Every (source token, target token) link within each pair.

    Returns:
        `(cell, group, groups)`: the table cell `source * V + target` of each
        link, its group (one group per target token: its links to every source
        token of its pair), and the number of groups.
    """
    group_pair = np.repeat(np.arange(len(target)), target.lengths)  # (G,)
    group_size = source.lengths[group_pair]
    link_group = np.repeat(np.arange(group_pair.size), group_size)  # (E,)
    first_link = np.cumsum(group_size) - group_size
    position = np.arange(link_group.size) - first_link[link_group]
    link_source = source.values[source.row_splits[group_pair][link_group] + position]
    link_target = target.values[link_group]
    return link_source.astype(np.int64) * target_vocab + link_target, link_group, group_pair.size


def model1_translation_table(source: RaggedIds, target: RaggedIds, source_vocab: int,
                             target_vocab: int, iterations: int = 5,
                             chunk: int = 20_000) -> np.ndarray:
    """IBM Model 1 translation probabilities t(target | source), by EM.

    Every target token of a pair is generated by one of its source tokens or
    by NULL; EM re-estimates t from the expected counts of those links.

    Args:
        source, target: the ids of each sentence pair's two sides.
        iterations: EM iterations (Model 1 has one optimum; 5 get close).
        chunk: pairs whose links are held in memory at once.

    Returns:
        float32 `(source_vocab + 1, target_vocab)`, rows summing to 1; the
        last row is NULL. Rows of source ids never seen are uniform.
    """
    if len(source) != len(target):
        raise ValueError(f"{len(source)} source sentences but {len(target)} target sentences")
    source = source.append(source_vocab)  # NULL ends every source sentence
    size = (source_vocab + 1) * target_vocab
    table = np.full(size, 1.0 / target_vocab, np.float32)
    for _ in range(iterations):
        counts = np.zeros(size)
        for start in range(0, len(source), chunk):
            rows = np.arange(start, min(start + chunk, len(source)))
            cell, group, groups = _links(source.take(rows), target.take(rows), target_vocab)
            p = table[cell]
            posterior = p / np.bincount(group, weights=p, minlength=groups)[group]
            counts += np.bincount(cell, weights=posterior, minlength=size)
        counts = counts.reshape(source_vocab + 1, target_vocab)
        totals = counts.sum(axis=1, keepdims=True)
        table = np.where(totals > 0, counts / np.maximum(totals, 1e-30),
                         1.0 / target_vocab).astype(np.float32).reshape(-1)
    return table.reshape(source_vocab + 1, target_vocab)


def build_shortlist(source: RaggedIds, target: RaggedIds, source_vocab: int,
                    target_vocab: int, *, frequent: int = 500, per_source: int = 100,
                    iterations: int = 5) -> Shortlist:
    """A shortlist from the subword ids of training pairs.

    Args:
        source, target: the ids of each pair's two sides (special ids in
            them, such as the EOS ending encoded sources, get no entries).
        frequent: the most frequent target ids always kept.
        per_source: the likeliest translations kept for each source id.
    """
    if frequent < 0 or per_source < 1:
        raise ValueError(
            f"a shortlist needs frequent >= 0 and per_source >= 1. "
            f"Received: frequent={frequent}, per_source={per_source}")
    if len(source) == 0:
        raise ValueError("a shortlist needs at least one sentence pair")
    specials = list(SPECIAL_IDS)
    table = model1_translation_table(source, target, source_vocab, target_vocab,
                                     iterations)[:-1]
    table[:, specials] = -1.0  # always in the list anyway
    per_source = min(per_source, target_vocab)
    best = np.argsort(-table, axis=1, kind="stable")[:, :per_source].astype(np.int32)
    seen = np.bincount(source.values, minlength=source_vocab) > 0
    seen[specials] = False
    best[~seen] = EOS_ID  # nothing learnt: adds no ids
    counts = np.bincount(target.values, minlength=target_vocab)
    counts[specials] = -1
    top = np.argsort(-counts, kind="stable")[:min(frequent, target_vocab)]
    return Shortlist(frequent=np.sort(top).astype(np.int32), translations=best)


def shortlist_from_pairs(pairs, tokenizers, *, frequent: int = 500,
                         per_source: int = 100) -> Shortlist:
    """`build_shortlist` over `(source, target)` sentences and the model's tokenizers."""
    corpus = encode_pairs(pairs, tokenizers)
    return build_shortlist(corpus.source, corpus.target, tokenizers.source.vocab_size,
                           tokenizers.target.vocab_size, frequent=frequent,
                           per_source=per_source)
