"""Decoding speed of an exported model on realistic text, and how far it is from the peak.

Translates a sentences file (default: the traffic mix, 2,000 lines of Anki
test sentences, image captions and news-discussion comments) through
`nmt.inference.translator.Translator` (the path of the server, batch jobs and CLI:
in-graph tokenisation, search, alignments and word links, then NumPy
results), in batches taken in file order and in batches of sentences sorted
by length, for each beam size and batch size asked, on each precision path
asked (`--precision float32,bfloat16` times both paths of one export; auto
is the path `nmt serve` would pick on this CPU). Prints the CPU and its
bfloat16 units, and a Markdown table with sentences/s, target tokens/s, the
useful work done per second and its fraction of the machine's measured
float32 matrix-multiply peak.

    python bench/decode_speed.py [models/en-fr] [--sentences FILE] [--limit N]
        [--beams 1,5] [--batches 64] [--orders file,sorted]
        [--precision auto|float32|bfloat16|float32,bfloat16]

With several paths the peak RSS column is the process's peak so far (both
paths loaded). Useful work counts, per sentence, the encoder over its source pieces and
`beam` decoder steps for each piece of the best translation (shapes from
`bench/flops.py`); steps spent on finished or padded hypotheses are
not counted, so the fraction shows what the search wastes too.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

import tensorflow as tf  # noqa: E402

from bench.flops import decoder_step_macs, encoder_macs, matmul_peak  # noqa: E402
from bench.support.inputs import SENTENCES_HELP, TRAFFIC_MIX, machine, read_sentences  # noqa: E402
from bench.support.memory import peak_rss_mb  # noqa: E402
from nmt.inference.precision import AUTO, LOAD_CHOICES, cpu_bfloat16_units  # noqa: E402
from nmt.inference.translator import Translator  # noqa: E402
from nmt.model import ModelConfig  # noqa: E402
from nmt.options import DEFAULT_MODEL_DIR  # noqa: E402

ORDERS = ("file", "sorted")


def in_order(sentences: list[str], order: str) -> list[str]:
    """File order, or sorted by length in characters (stable)."""
    return sorted(sentences, key=len) if order == "sorted" else list(sentences)


def useful_macs(config: ModelConfig, results, beam: int) -> float:
    """Encoder over each source plus `beam` decoder steps per piece of its best translation."""
    macs = 0.0
    for result in results:
        source_len = len(result.source_tokens) + 1  # with EOS
        target_len = len(result.target_tokens)
        macs += source_len * encoder_macs(config)
        macs += beam * target_len * decoder_step_macs(config, source_len)
    return macs


def time_setting(translator: Translator, sentences: list[str], beam: int,
                 batch: int) -> dict[str, float]:
    """Translates `sentences` in consecutive batches of `batch`; returns rates and counts."""
    translator.translate(sentences[:batch], beam_size=beam)  # warm-up: graph optimisation
    results = []
    started = time.perf_counter()
    for start in range(0, len(sentences), batch):
        results += translator.translate(sentences[start:start + batch], beam_size=beam)
    seconds = time.perf_counter() - started
    # Counted after the clock stops, so the timing is the translation alone.
    config = ModelConfig.from_dict(translator.info.metadata["model_config"])
    tokens = sum(len(result.target_tokens) for result in results)
    macs = useful_macs(config, results, beam)
    return {
        "sentences": len(sentences),
        "seconds": seconds,
        "sentences_per_s": len(sentences) / seconds,
        "tokens_per_s": tokens / seconds,
        "gflops": 2 * macs / seconds / 1e9,
        "peak_rss_mb": peak_rss_mb(),
    }


def int_list(text: str) -> list[int]:
    values = [int(x) for x in text.split(",") if x.strip()]
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers like 1,5; got {text!r}")
    return values


def order_list(text: str) -> list[str]:
    values = [x.strip() for x in text.split(",") if x.strip()]
    if not values or set(values) - set(ORDERS):
        raise argparse.ArgumentTypeError(f"expected orders from {','.join(ORDERS)}; got {text!r}")
    return values


def precision_list(text: str) -> list[str]:
    values = [x.strip() for x in text.split(",") if x.strip()]
    if not values or set(values) - set(LOAD_CHOICES):
        raise argparse.ArgumentTypeError(
            f"expected precisions from {','.join(LOAD_CHOICES)}; got {text!r}")
    return list(dict.fromkeys(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", nargs="?", default=str(DEFAULT_MODEL_DIR),
                        help="base or version directory of the export (default: models/en-fr)")
    parser.add_argument("--sentences", type=Path, default=TRAFFIC_MIX, help=SENTENCES_HELP)
    parser.add_argument("--limit", type=int, default=0,
                        help="translate only the first N lines (default: all)")
    parser.add_argument("--beams", type=int_list, default=[1, 5], help="e.g. 1,5")
    parser.add_argument("--batches", type=int_list, default=[64], help="e.g. 1,64")
    parser.add_argument("--orders", type=order_list, default=list(ORDERS),
                        help="file and/or sorted (default: both)")
    parser.add_argument("--precision", type=precision_list, default=[AUTO],
                        help="the export's paths to time, e.g. float32,bfloat16 (an export "
                             "made with nmt export --precision both carries the two); auto: "
                             "the one nmt serve picks on this CPU (default)")
    args = parser.parse_args()
    if args.limit < 0:
        parser.error(f"--limit must be 0 (all) or positive; got {args.limit}")

    sentences = read_sentences(args.sentences)
    if args.limit:
        sentences = sentences[: args.limit]
    try:
        translators = [Translator.load(args.model, precision) for precision in args.precision]
    except FileNotFoundError as error:
        raise SystemExit(
            f"{error}; export a model first (nmt export) or pass its directory"
        ) from None
    except ValueError as error:  # a path the export does not carry
        raise SystemExit(str(error)) from None
    peak = matmul_peak(tf.float32)
    rows = []
    for translator in translators:
        for beam in args.beams:
            for batch in args.batches:
                for order in args.orders:
                    r = time_setting(translator, in_order(sentences, order), beam, batch)
                    rows.append(
                        f"| {translator.info.precision} | {beam} | {batch} | {order} | "
                        f"{r['sentences']} | {r['sentences_per_s']:,.1f} | "
                        f"{r['tokens_per_s']:,.0f} | {r['gflops']:,.1f} | "
                        f"{r['gflops'] / peak:.1%} | {r['peak_rss_mb']:,.0f} |"
                    )
                    print(rows[-1], file=sys.stderr, flush=True)  # progress

    info = translators[0].info
    print(f"model: {info.path} ({info.name}, {info.attention}; carries "
          f"{', '.join(info.precisions)}), sentences: {args.sentences}")
    units = ", ".join(cpu_bfloat16_units()) or "none (bfloat16 is emulated)"
    print(f"machine: {machine()}, TensorFlow {tf.__version__}; bfloat16 units: {units}; "
          f"float32 matmul peak {peak:,.0f} GFLOP/s")
    for translator in translators:
        print(f"precision {translator.info.precision}: {translator.info.precision_reason}")
    print("\n| precision | beam | batch | order | sentences | sentences/s | target tokens/s | "
          "useful GFLOP/s | of peak | peak RSS (MB) |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
