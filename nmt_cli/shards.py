"""`nmt shards`: a corpus tokenized once into training shards (`nmt.data.shard_writer`).

    nmt shards --corpus ../runs/corpus-en-fr-v10 --spm models/en-fr/10/assets/en.spm.model \\
        --out ../runs/shards-en-fr-v10 --config training/configs/en-fr-broad.yaml

The cleaning options and the length limit are `nmt train`'s: those of
`--config` (its `data:` section), else the defaults of a training config, each
overridable by its own option. Ids come from the in-graph tokenizer the export
embeds (`--tokenizer tensorflow`, the ids `nmt train` feeds), or, without
TensorFlow, from the `sentencepiece` package (`--tokenizer sentencepiece`: the
same ids but where two segmentations tie within float rounding, the same pieces
in another order: 37 of the 390,988 distinct training pairs of en-fr-v10).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
from pathlib import Path

TOKENIZERS = ("tensorflow", "sentencepiece")
LANGUAGES = ("en", "fr")  # source, target: the model's direction


def add_shards_parser(sub) -> None:
    """Registers `nmt shards` on the `nmt` command's subparsers."""
    p = sub.add_parser(
        "shards", help="tokenize a corpus once into training shards (read without TensorFlow)",
        description="Cleans and tokenizes train.tsv (and dev.tsv) of a corpus as `nmt train` "
                    "does, and writes the ids (uint16, compressed .npz), the SentencePiece "
                    "models and manifest.json into --out, for a trainer on any Keras backend "
                    "(nmt.data.shards).")
    p.add_argument("--corpus", type=Path,
                   help="a corpus directory of `nmt corpus` (train.tsv, dev.tsv) or one "
                        "English<TAB>French TSV (required)")
    p.add_argument("--spm", type=Path, metavar="MODEL",
                   help="the SentencePiece model, e.g. models/en-fr/10/assets/en.spm.model "
                        "(joint: both sides) (required)")
    p.add_argument("--target-spm", type=Path, metavar="MODEL",
                   help="the French side's model, when it is not --spm's (not joint)")
    p.add_argument("--out", type=Path,
                   help="directory to write (keep it outside the work tree) (required)")
    p.add_argument("--dev", type=Path, metavar="TSV",
                   help="the dev file (default: dev.tsv of a corpus directory)")
    p.add_argument("--config", type=Path,
                   help="a training config: its data.cleaning and data.max_tokens_per_sentence")
    p.add_argument("--max-words", type=int, metavar="N", help="data.cleaning.max_words")
    p.add_argument("--max-ratio", type=float, metavar="R", help="data.cleaning.max_ratio")
    p.add_argument("--dedupe", action=argparse.BooleanOptionalAction,
                   help="data.cleaning.dedupe (--no-dedupe keeps a recipe's weighted copies)")
    p.add_argument("--max-tokens-per-sentence", type=int, metavar="N",
                   help="data.max_tokens_per_sentence")
    p.add_argument("--tokenizer", choices=TOKENIZERS, default="tensorflow",
                   help="tensorflow: the in-graph tokenizer, the ids `nmt train` feeds "
                        "(default); sentencepiece: without TensorFlow")
    p.add_argument("--overwrite", action="store_true", help="rebuild shards already in --out")
    p.set_defaults(func=functools.partial(shards_command, parser=p))


def shards_command(args, parser) -> int:
    from nmt.data.shard_writer import write_shards

    if args.corpus is None or args.spm is None or args.out is None:
        parser.error("the following arguments are required: --corpus, --spm, --out")
    cleaning, max_tokens = _data_options(args)
    models = (args.spm, args.target_spm or args.spm)
    tokenizers, tokenized_with = _tokenizers(args.tokenizer, models)
    manifest = write_shards(args.corpus, args.out, tokenizers, cleaning=cleaning,
                            max_tokens_per_sentence=max_tokens, dev=args.dev,
                            tokenized_with=tokenized_with, overwrite=args.overwrite)
    _print_table(manifest, args.out)
    return 0


def _data_options(args):
    """`(CleaningConfig, max_tokens_per_sentence)`: --config's or a config's defaults,
    then the options given."""
    from training.config import DataConfig

    if args.config is not None:
        from training.config import load_config

        data = load_config(args.config).data
        cleaning, max_tokens = data.cleaning, data.max_tokens_per_sentence
    else:
        fields = {f.name: f for f in dataclasses.fields(DataConfig)}
        cleaning = fields["cleaning"].default
        max_tokens = fields["max_tokens_per_sentence"].default
    given = {"max_words": args.max_words, "max_ratio": args.max_ratio, "dedupe": args.dedupe}
    cleaning = dataclasses.replace(cleaning, **{k: v for k, v in given.items() if v is not None})
    if args.max_tokens_per_sentence is not None:
        max_tokens = args.max_tokens_per_sentence
    return cleaning, max_tokens


def _tokenizers(kind: str, models: tuple[Path, Path]):
    """`((source, target), description)` for `write_shards`."""
    for path in models:
        if not path.is_file():
            raise FileNotFoundError(f"--spm: {path} does not exist")
    if kind == "sentencepiece":
        import sentencepiece

        from nmt.data.subwords import PlainTokenizer

        pair = tuple(PlainTokenizer.from_file(p, lang) for p, lang in zip(models, LANGUAGES,
                                                                          strict=True))
        return pair, f"sentencepiece {sentencepiece.__version__} (nmt.data.subwords)"
    try:
        import tensorflow_text
    except ImportError:
        raise ValueError("--tokenizer tensorflow needs tensorflow-text, which is not installed "
                         "here: pass --tokenizer sentencepiece") from None
    pair = tuple(GraphTokenizer(p.read_bytes(), lang) for p, lang in zip(models, LANGUAGES,
                                                                         strict=True))
    return pair, f"tensorflow-text {tensorflow_text.__version__} (nmt.data.tokenizer)"


class GraphTokenizer:
    """`nmt.data.tokenizer.SubwordTokenizer` (the export's tokenizer) with the interface of
    `nmt.data.subwords.PlainTokenizer` that `write_shards` takes."""

    def __init__(self, model_proto: bytes, language: str) -> None:
        from nmt.data.tokenizer import SubwordTokenizer

        self._tokenizer = SubwordTokenizer(model_proto, language)
        self.language, self.model_proto = language, model_proto
        self.vocab_size = self._tokenizer.vocab_size

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        import tensorflow as tf

        return self._tokenizer.tokenize(tf.constant(texts, dtype=tf.string)).to_list()


def _print_table(manifest: dict, out: Path) -> None:
    from nmt.data.shards import MANIFEST_FILE

    print(f"{'split':<6} {'read':>9} {'dropped':>8} {'examples':>9} {'rows':>9} "
          f"{'src tokens':>11} {'tgt tokens':>11} {'MB':>6}")
    for name, split in manifest["splits"].items():
        dropped = split["pairs_read"] - split["examples"]
        size = (out / split["file"]).stat().st_size / 1e6
        print(f"{name:<6} {split['pairs_read']:>9,} {dropped:>8,} {split['examples']:>9,} "
              f"{split['rows']:>9,} {split['source_tokens']:>11,} {split['target_tokens']:>11,} "
              f"{size:>6.1f}")
    for name, split in manifest["splits"].items():
        if split["examples_per_domain"]:
            counts = ", ".join(f"{d} {n:,}" for d, n in split["examples_per_domain"].items())
            print(f"{name} examples by domain: {counts}")
    print(f"ids of {manifest['tokenizers']['tokenized_with']} -> {out}; "
          f"counts in {out / MANIFEST_FILE}")
