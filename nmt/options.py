"""Command-line options shared by `nmt translate`, `nmt evaluate`, `nmt batch`, the Beam
pipeline, `nmt serve` and the benchmarks: decoding options, the export's precision path,
TensorFlow's thread pools and the default model directory.

No TensorFlow import: parsers are built before TensorFlow loads.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from nmt.inference.precision import AUTO, LOAD_CHOICES
from nmt.types import DecodeOptions, options_over

# The shipped model (base directory of `<version>/` SavedModels) in a checkout.
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "models" / "en-fr"


# The decoding flags of `add_decode_options`: (`DecodeOptions` field, type, help).
_DECODE_FLAGS = (
    ("beam_size", int, "beams; 1 = greedy"),
    ("n_best", int, "hypotheses per sentence"),
    ("length_penalty", float, "alpha of Wu et al. 2016"),
    ("coverage_penalty", float, "beta of Wu et al. 2016"),
    ("max_length_ratio", float, "most target tokens per source token"),
)


def add_decode_options(parser: argparse.ArgumentParser) -> None:
    """Adds the `DecodeOptions` flags to `parser`.

    A flag left out takes the model's default decoding (its export's
    recommended decoding, e.g. greedy for a distilled model), else the
    `DecodeOptions` default shown in the help.
    """
    default = DecodeOptions()
    for name, kind, text in _DECODE_FLAGS:
        parser.add_argument("--" + name.replace("_", "-"), type=kind, default=None,
                            help=f"{text} (default: the model's, else {getattr(default, name)})")
    parser.add_argument("--no-replace-unknown", action="store_true",
                        help="keep unknown pieces instead of copying the attended source word")


def given_decode_options(args: argparse.Namespace) -> dict:
    """The `DecodeOptions` fields set on the command line (`add_decode_options`)."""
    given = {name: getattr(args, name) for name, _, _ in _DECODE_FLAGS
             if getattr(args, name) is not None}
    if args.no_replace_unknown:
        given["replace_unknown"] = False
    return given


def decode_options(args: argparse.Namespace,
                   defaults: DecodeOptions | None = None) -> DecodeOptions:
    """The `DecodeOptions` of arguments parsed with `add_decode_options`: the flags given,
    over `defaults` (`nmt.types.options_over`).

    Args:
        args: the parsed arguments.
        defaults: the model's default decoding (`Translator.info.default_options`,
            a server's `TranslationClient.default_options()`); None: `DecodeOptions()`.

    Raises:
        ValueError: an option is out of range (the message names it).
    """
    return options_over(defaults or DecodeOptions(), given_decode_options(args))


def client_decode_options(args: argparse.Namespace, client) -> DecodeOptions | None:
    """The options to send a server with the flags of `add_decode_options`.

    Args:
        args: the parsed arguments.
        client: an `nmt_api.client.TranslationClient` (its `default_options()`).

    Returns:
        None when no flag is given (the served model's default decoding
        applies), else the flags over that default.
    """
    given = given_decode_options(args)
    return options_over(client.default_options(), given) if given else None


def add_precision_option(parser: argparse.ArgumentParser) -> None:
    """Adds `--precision auto|float32|bfloat16`: the export's path to translate with
    (`nmt.inference.precision`)."""
    parser.add_argument("--precision", choices=LOAD_CHOICES, default=AUTO,
                        help="matrix products in float32 or bfloat16 (an export made with "
                             "--precision both carries the two); auto (the default): bfloat16 "
                             "where the CPU has a bfloat16 unit (AMX, AVX512-BF16, Arm BF16), "
                             "else float32")


def local_precision(args: argparse.Namespace) -> str:
    """The `--precision` of arguments parsed with `add_precision_option`.

    Raises:
        ValueError: a path is named with `--server`: a server translates on the
            path it chose (`nmt serve --precision`).
    """
    if getattr(args, "server", None) and args.precision != AUTO:
        raise ValueError(f"--precision {args.precision} applies to a local --model; a server "
                         "translates on the path it chose (nmt serve --precision)")
    return args.precision


def add_thread_options(parser: argparse.ArgumentParser, intra_op_default: int = 0) -> None:
    """Adds `--intra-op-threads` and `--inter-op-threads` (TensorFlow's two thread pools)."""
    group = parser.add_argument_group("TensorFlow threads")
    group.add_argument("--intra-op-threads", type=int, default=intra_op_default,
                       help="threads one operation may split its work over; 0 = one per core")
    group.add_argument("--inter-op-threads", type=int, default=0,
                       help="operations that may run at once; 0 = one per core")


def apply_thread_options(args: argparse.Namespace) -> None:
    """Sizes TensorFlow's thread pools from `add_thread_options` arguments.

    Must run before TensorFlow runs its first operation in the process.

    Raises:
        ValueError: a count is negative, or TensorFlow is already running.
    """
    for flag, value in (("--intra-op-threads", args.intra_op_threads),
                        ("--inter-op-threads", args.inter_op_threads)):
        if value < 0:
            raise ValueError(f"{flag} must be 0 (one per core) or more. Received: {value}")
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(args.intra_op_threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.inter_op_threads)
    except RuntimeError as error:
        raise ValueError(
            "TensorFlow's threads can only be set before it runs its first operation; "
            f"set them at the start of the process ({error})") from error
