"""`nmt shards`: tokenizes a corpus once into training shards (`nmt.data.shards`).

What `nmt train` does to its training file, reproduced here so that a trainer
without TensorFlow reads the same examples:

1. `nmt.data.corpus.clean_pairs_with_indices` with the config's `data.cleaning`
   (`max_words`, `max_ratio`, `min_words`, `dedupe`);
2. each side tokenized (`nmt.data.subwords.PlainTokenizer`, or the in-graph
   tokenizer through the same interface); a pair is dropped when its source +
   EOS or its BOS + target is longer than `data.max_tokens_per_sentence`;
3. the joined examples of `data.join_fraction` are drawn when loading
   (`nmt.data.shards.join_examples`), so the shards do not depend on the seed.

The dev split is kept whole and in order, with its references and domains
(the per-domain dev scores). No TensorFlow import.
"""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import io
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from nmt.atomic_write import write_atomically
from nmt.data.corpus import CleaningConfig, clean_pairs_with_indices, iter_pairs
from nmt.data.shards import FORMAT, MANIFEST_FILE
from nmt.data.subwords import BOS_ID, EOS_ID, PAD_ID, UNK_ID

log = logging.getLogger(__name__)

TRAIN_FILE, DEV_FILE = "train.tsv", "dev.tsv"  # of a corpus directory (`nmt corpus`)
_CHUNK = 8192  # sentences per tokenizer call
_MAX_DOMAINS = 255  # more distinct third columns than this are not domains (attributions)


class Tokenizer(Protocol):
    """What `write_shards` needs of a tokenizer (`nmt.data.subwords.PlainTokenizer`)."""

    language: str
    model_proto: bytes
    vocab_size: int

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]: ...


def write_shards(
    corpus: str | Path,
    out_dir: str | Path,
    tokenizers: tuple[Tokenizer, Tokenizer],
    *,
    max_tokens_per_sentence: int,
    cleaning: CleaningConfig | None = None,
    dev: str | Path | None = None,
    tokenized_with: str = "sentencepiece",
    overwrite: bool = False,
) -> dict:
    """Tokenizes a corpus into `out_dir` and returns its manifest.

    Args:
        corpus: a directory of `nmt corpus` (its `train.tsv` and, if there,
            `dev.tsv`) or one `English<TAB>French[<TAB>domain]` file (train).
        out_dir: the directory to write (created).
        tokenizers: `(source, target)`; the same model twice for a joint one.
        max_tokens_per_sentence: `data.max_tokens_per_sentence` of the training
            config (train only).
        cleaning: `data.cleaning` of the training config (train only);
            default `CleaningConfig()`.
        dev: a dev file, instead of (or without) the corpus directory's.
        tokenized_with: what `tokenizers` are, for the manifest.
        overwrite: replace shards already in `out_dir`.

    Returns:
        The manifest written to `out_dir/manifest.json`.

    Raises:
        ValueError: `out_dir` holds shards and `overwrite` is False, or an
            option is out of range.
        FileNotFoundError: the corpus or the dev file does not exist.
    """
    if isinstance(max_tokens_per_sentence, bool) or not (
        isinstance(max_tokens_per_sentence, int) and max_tokens_per_sentence >= 2
    ):
        raise ValueError(
            "max_tokens_per_sentence must be an integer >= 2. "
            f"Received: max_tokens_per_sentence={max_tokens_per_sentence!r}"
        )
    cleaning = cleaning or CleaningConfig()
    files = _split_files(Path(corpus), dev)
    out_dir = Path(out_dir)
    if (out_dir / MANIFEST_FILE).exists() and not overwrite:
        raise ValueError(f"{out_dir} already holds shards; pass --overwrite to rebuild them")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / MANIFEST_FILE).unlink(missing_ok=True)  # written last: present = complete
    started = time.time()
    splits = {}
    for split, path in files.items():
        is_train = split == "train"
        arrays, facts = _encode_split(
            path,
            tokenizers,
            cleaning=cleaning if is_train else None,
            max_tokens=max_tokens_per_sentence if is_train else None,
        )
        _save_arrays(out_dir / f"{split}.npz", arrays)
        splits[split] = {"file": f"{split}.npz", "from": str(path),
                         "sha256": _file_sha256(path), **facts}
        log.info("%s: %d examples, %d target tokens", split, facts["examples"],
                 facts["target_tokens"])
    models = {}
    for role, tokenizer in zip(("source", "target"), tokenizers, strict=True):
        name = f"{tokenizer.language}.spm.model"
        write_atomically(out_dir / name, tokenizer.model_proto)
        models[role] = {"language": tokenizer.language, "file": name,
                        "sha256": hashlib.sha256(tokenizer.model_proto).hexdigest(),
                        "vocab_size": int(tokenizer.vocab_size)}
    manifest = {
        "format": FORMAT,
        "tokenizers": {**models, "joint": models["source"]["sha256"] == models["target"]["sha256"],
                       "tokenized_with": tokenized_with},
        "ids": {"pad": PAD_ID, "unk": UNK_ID, "bos": BOS_ID, "eos": EOS_ID,
                "dtype": str(_ids_dtype(tokenizers))},
        "batches": "source = ids + [EOS]; target_in = [BOS] + ids; target_out = ids + [EOS]; "
                   "padded on the right with PAD",
        "cleaning": dataclasses.asdict(cleaning),
        "max_tokens_per_sentence": max_tokens_per_sentence,
        "splits": splits,
        "build_seconds": round(time.time() - started, 1),
    }
    _write_json(out_dir / MANIFEST_FILE, manifest)
    return manifest


def _split_files(corpus: Path, dev: str | Path | None) -> dict[str, Path]:
    if corpus.is_dir():
        files = {"train": corpus / TRAIN_FILE}
        if dev is None and (corpus / DEV_FILE).is_file():
            files["dev"] = corpus / DEV_FILE
    else:
        files = {"train": corpus}
    if dev is not None:
        files["dev"] = Path(dev)
    for path in files.values():
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist (a corpus directory of `nmt corpus` "
                                    "holds train.tsv and dev.tsv)")
    return files


def _encode_split(path: Path, tokenizers, *, cleaning: CleaningConfig | None,
                  max_tokens: int | None) -> tuple[dict[str, np.ndarray], dict]:
    """The arrays of one split and the facts the manifest gives about it.

    Train (`cleaning` given) is cleaned and filtered as `nmt train` does;
    dev is kept whole, in order, with its references.
    """
    pairs, domains = [], []
    for _, english, french, domain in iter_pairs(path):
        pairs.append((english, french))
        domains.append(domain)
    facts: dict = {"pairs_read": len(pairs)}
    if cleaning is not None:
        kept, index, stats = clean_pairs_with_indices(pairs, cleaning)
        facts["cleaning"] = dataclasses.asdict(stats)
    else:
        kept, index = pairs, np.arange(len(pairs), dtype=np.int64)
    # Training rows: runs of equal consecutive pairs (a weight's copies), tokenized and
    # stored once. Dev: a row a pair, each with its reference.
    keys = [(*pair, domains[i]) for pair, i in zip(kept, index.tolist(), strict=True)]
    first = [i for i in range(len(keys))
             if cleaning is None or i == 0 or keys[i] != keys[i - 1]]
    repeats = np.diff(np.array([*first, len(keys)], dtype=np.int64))
    source, source_lengths = _tokenize(tokenizers[0], [kept[i][0] for i in first])
    target, target_lengths = _tokenize(tokenizers[1], [kept[i][1] for i in first])
    keep = np.ones(len(first), dtype=bool)
    if max_tokens is not None:
        keep = (source_lengths + 1 <= max_tokens) & (target_lengths + 1 <= max_tokens)
    facts["dropped_over_max_tokens"] = int(repeats[~keep].sum())
    source = source[np.repeat(keep, source_lengths)]
    target = target[np.repeat(keep, target_lengths)]
    source_lengths, target_lengths = source_lengths[keep], target_lengths[keep]
    pair_index = index[np.repeat(keep, repeats)]
    repeats = repeats[keep]
    names, domain = _domains([domains[i] for i in index[np.array(first, np.int64)[keep]]])
    arrays = {
        "source_ids": source, "source_lengths": _small(source_lengths),
        "target_ids": target, "target_lengths": _small(target_lengths),
        "repeats": _small(repeats), "domain": _small(domain),
        "pair_step": _small(np.diff(pair_index, prepend=-1)),
    }
    if cleaning is None:
        references = "\n".join(french for _, french in pairs)
        arrays["references"] = np.frombuffer(references.encode("utf-8"), np.uint8)
    facts.update(_totals(source_lengths, target_lengths, repeats, names, domain))
    return arrays, facts


def _tokenize(tokenizer, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """`(flat ids, lengths)` of `texts`, in chunks; ids in the smallest unsigned dtype."""
    dtype = np.uint16 if tokenizer.vocab_size <= 2**16 else np.uint32
    values, lengths = [], []
    for start in range(0, len(texts), _CHUNK):
        rows = tokenizer.tokenize(texts[start : start + _CHUNK])
        lengths.append(np.fromiter(map(len, rows), np.int64, len(rows)))
        values.append(np.fromiter((i for row in rows for i in row), dtype, int(lengths[-1].sum())))
    if not texts:
        return np.zeros(0, dtype), np.zeros(0, np.int64)
    return np.concatenate(values), np.concatenate(lengths)


def _domains(names: list[str]) -> tuple[list[str], np.ndarray]:
    """`(distinct names in order of appearance, index of each)`; none when the file
    has no third column, or too many names to be domains (the attribution column of a
    raw Anki file)."""
    order = list(dict.fromkeys(names))
    if order == [""] or len(order) > _MAX_DOMAINS:
        return [], np.zeros(len(names), np.int64)
    position = {name: i for i, name in enumerate(order)}
    return order, np.array([position[name] for name in names], dtype=np.int64)


def _totals(source_lengths, target_lengths, repeats, names, domain) -> dict:
    examples = collections.Counter()
    for index, count in zip(domain.tolist(), repeats.tolist(), strict=True):
        examples[names[index] if names else ""] += count
    return {
        "rows": len(repeats),
        "examples": int(repeats.sum()),
        # What the model reads: source + EOS, and BOS + target (or target + EOS).
        "source_tokens": int(((source_lengths + 1) * repeats).sum()),
        "target_tokens": int(((target_lengths + 1) * repeats).sum()),
        "longest": {"source": int(source_lengths.max(initial=0)) + 1,
                    "target": int(target_lengths.max(initial=0)) + 1},
        "domains": names,
        "examples_per_domain": dict(examples) if names else {},
    }


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _ids_dtype(tokenizers) -> np.dtype:
    return np.dtype(np.uint16 if max(t.vocab_size for t in tokenizers) <= 2**16 else np.uint32)


def _small(values: np.ndarray) -> np.ndarray:
    """Non-negative integers in the smallest unsigned dtype that holds them."""
    top = int(values.max(initial=0))
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):
        if top <= np.iinfo(dtype).max:
            return values.astype(dtype)
    raise ValueError(f"values too large to store. Received: max={top}")


def _save_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """`np.savez_compressed`, whole or not at all."""
    data = io.BytesIO()
    np.savez_compressed(data, **arrays)
    write_atomically(path, data.getvalue())


def _write_json(path: Path, value: dict) -> None:
    write_atomically(path, (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode())
