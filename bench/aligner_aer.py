"""How good is the supervision of guided alignment? eflomal's AER on the Alibi gold set.

Aligns the training pairs together with the 522 Alibi pairs (eflomal is
unsupervised, so the gold pairs only add sentences to align, never labels),
on the words of the model's pieces exactly as `nmt align-corpus` does, maps
the links to pieces and back to the given words (the round trip the model's
supervision takes), and prints precision, recall and AER for each
symmetrisation.

    python bench/aligner_aer.py [--model models/en-fr] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nmt.options import DEFAULT_MODEL_DIR  # noqa: E402
from nmt.paths import data_dir  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR,
                        help="exported model whose SentencePiece pieces are used")
    parser.add_argument("--data", type=Path, default=data_dir(),
                        help="the shared data directory (NMT_DATA_DIR)")
    args = parser.parse_args()

    import tensorflow as tf

    from nmt.alignment.from_attention import given_word_map
    from nmt.data.corpus import read_pairs
    from nmt.data.tokenizer import SubwordTokenizer, TokenizerPair
    from nmt.evaluation.metrics import alignment_scores, read_alibi
    from nmt.inference.translator import resolve_version_dir
    from training import corpus_alignment as ca

    assets = resolve_version_dir(args.model) / "assets"
    tokenizers = TokenizerPair(SubwordTokenizer.from_file(assets / "en.spm.model", "en"),
                               SubwordTokenizer.from_file(assets / "fr.spm.model", "fr"), False)
    train = read_pairs(args.data / "anki-fra-eng" / "train.tsv")
    gold = read_alibi(args.data / "alibi-enfr-alignments")
    alibi = [(" ".join(p.source_words), " ".join(p.target_words)) for p in gold]
    started = time.time()
    aligned = ca.align_words(train + alibi, tokenizers)[len(train):]
    seconds = time.time() - started

    def given(tokenizer, texts):
        return given_word_map(tokenizer.normalize, tf.constant(texts)).numpy()

    source_map = given(tokenizers.source, [s for s, _ in alibi])
    target_map = given(tokenizers.target, [t for _, t in alibi])
    print(f"eflomal on {len(train):,} training + {len(alibi)} Alibi pairs: {seconds:.0f}s "
          "(tokenizing included)\n")
    print("| symmetrisation | precision | recall | AER |")
    print("|---|---:|---:|---:|")
    for method in ca.SYMMETRIZATIONS:
        predicted = []
        for k, (forward, reverse, source, target) in enumerate(aligned):
            pieces = ca.word_links_to_pieces(ca.symmetrize(forward, reverse, method),
                                             source, target)
            words = ca.piece_links_to_words(pieces, source, target)
            predicted.append({(int(source_map[k][i]), int(target_map[k][j])) for i, j in words})
        s = alignment_scores(predicted, [p.sure for p in gold], [p.possible for p in gold])
        print(f"| {method} | {s.precision:.3f} | {s.recall:.3f} | {s.aer:.3f} |")


if __name__ == "__main__":
    main()
