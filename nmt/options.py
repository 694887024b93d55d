"""Command-line options shared by `nmt translate`, `nmt evaluate`, `nmt batch`, the Beam
pipeline and the benchmarks: decoding options and the default model directory.

No TensorFlow import: parsers are built before TensorFlow loads.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nmt.types import DecodeOptions

# The shipped model (base directory of `<version>/` SavedModels) in a checkout.
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "models" / "en-fr"


def add_decode_options(parser: argparse.ArgumentParser) -> None:
    """Adds the `DecodeOptions` flags (defaults from `DecodeOptions`) to `parser`."""
    default = DecodeOptions()
    parser.add_argument("--beam-size", type=int, default=default.beam_size,
                        help=f"beams; 1 = greedy (default {default.beam_size})")
    parser.add_argument("--n-best", type=int, default=default.n_best,
                        help="hypotheses per sentence")
    parser.add_argument("--length-penalty", type=float, default=default.length_penalty,
                        help="alpha of Wu et al. 2016")
    parser.add_argument("--coverage-penalty", type=float, default=default.coverage_penalty,
                        help="beta of Wu et al. 2016")
    parser.add_argument("--max-length-ratio", type=float, default=default.max_length_ratio,
                        help="most target tokens per source token")
    parser.add_argument("--no-replace-unknown", action="store_true",
                        help="keep unknown pieces instead of copying the attended source word")


def decode_options(args: argparse.Namespace) -> DecodeOptions:
    """The `DecodeOptions` of arguments parsed with `add_decode_options`.

    Raises:
        ValueError: an option is out of range (the message names it).
    """
    return DecodeOptions(
        beam_size=args.beam_size, n_best=args.n_best, length_penalty=args.length_penalty,
        coverage_penalty=args.coverage_penalty, max_length_ratio=args.max_length_ratio,
        replace_unknown=not args.no_replace_unknown,
    )
