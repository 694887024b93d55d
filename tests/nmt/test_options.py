"""`nmt.options`: the decoding and thread flags shared by the commands, the Beam job and
`nmt serve`."""

import argparse
import dataclasses
import subprocess
import sys

import pytest
from conftest import REPO_ROOT

from nmt.options import (
    DEFAULT_MODEL_DIR,
    add_decode_options,
    add_precision_option,
    add_thread_options,
    apply_thread_options,
    decode_options,
    local_precision,
)
from nmt.types import DecodeOptions


def _parse(*argv):
    parser = argparse.ArgumentParser()
    add_decode_options(parser)
    return parser.parse_args(argv)


def test_no_flags_give_the_decode_options_defaults():
    assert decode_options(_parse()) == DecodeOptions()


def test_flags_set_their_fields():
    options = decode_options(_parse("--beam-size", "3", "--n-best", "2", "--length-penalty",
                                    "1.0", "--coverage-penalty", "0.2", "--max-length-ratio",
                                    "1.5", "--no-replace-unknown"))

    assert options == dataclasses.replace(
        DecodeOptions(), beam_size=3, n_best=2, length_penalty=1.0, coverage_penalty=0.2,
        max_length_ratio=1.5, replace_unknown=False)


def test_out_of_range_values_name_the_option():
    with pytest.raises(ValueError, match="beam_size=0"):
        decode_options(_parse("--beam-size", "0"))


def test_the_default_model_is_the_shipped_one():
    assert DEFAULT_MODEL_DIR.parts[-2:] == ("models", "en-fr")
    assert (DEFAULT_MODEL_DIR / "MODEL_CARD.md").exists()


def _threads(*argv, intra_op_default=0):
    parser = argparse.ArgumentParser()
    add_thread_options(parser, intra_op_default)
    return parser.parse_args(argv)


def test_thread_flags_default_to_one_thread_per_core_unless_told():
    assert (_threads().intra_op_threads, _threads().inter_op_threads) == (0, 0)
    assert _threads(intra_op_default=1).intra_op_threads == 1
    assert _threads("--intra-op-threads", "3").intra_op_threads == 3


def test_negative_thread_counts_name_the_flag():
    with pytest.raises(ValueError, match="--inter-op-threads must be 0"):
        apply_thread_options(_threads("--inter-op-threads", "-1"))


# In a fresh interpreter: TensorFlow's pools can only be sized before its first operation.
_SIZE_POOLS = """
import argparse, tensorflow as tf
from nmt.options import add_thread_options, apply_thread_options
parser = argparse.ArgumentParser()
add_thread_options(parser)
apply_thread_options(parser.parse_args(["--intra-op-threads", "1", "--inter-op-threads", "3"]))
tf.constant(1.0) + 1.0
print(tf.config.threading.get_intra_op_parallelism_threads(),
      tf.config.threading.get_inter_op_parallelism_threads())
try:
    apply_thread_options(parser.parse_args([]))
except ValueError as error:
    print(error)
"""


def test_thread_options_size_tensorflow_pools_and_refuse_once_it_runs():
    done = subprocess.run([sys.executable, "-c", _SIZE_POOLS], cwd=REPO_ROOT, text=True,
                          capture_output=True, timeout=300, check=True)
    sizes, refusal = done.stdout.strip().splitlines()[-2:]
    assert sizes == "1 3"
    assert refusal.startswith("TensorFlow's threads can only be set before it runs")


def test_precision_is_auto_unless_named_and_only_a_local_model_takes_a_path():
    parser = argparse.ArgumentParser()
    add_precision_option(parser)
    parser.add_argument("--server")
    assert local_precision(parser.parse_args([])) == "auto"
    assert local_precision(parser.parse_args(["--precision", "bfloat16"])) == "bfloat16"
    assert local_precision(parser.parse_args(["--server", "h:1"])) == "auto"
    with pytest.raises(ValueError, match="--precision float32 applies to a local --model"):
        local_precision(parser.parse_args(["--server", "h:1", "--precision", "float32"]))
    with pytest.raises(SystemExit):
        parser.parse_args(["--precision", "fp16"])


def test_flags_left_out_take_the_models_default_decoding():
    from nmt.options import given_decode_options

    greedy = DecodeOptions(beam_size=1)

    assert given_decode_options(_parse()) == {}
    assert decode_options(_parse(), greedy) == greedy
    assert decode_options(_parse("--length-penalty", "1.0"), greedy) == DecodeOptions(
        beam_size=1, length_penalty=1.0)
    assert decode_options(_parse("--beam-size", "5"), greedy) == DecodeOptions()
    assert decode_options(_parse("--n-best", "2"), greedy) == DecodeOptions(beam_size=2,
                                                                            n_best=2)
    assert given_decode_options(_parse("--no-replace-unknown")) == {"replace_unknown": False}


def test_a_server_gets_only_the_flags_given_over_its_models_default():
    from nmt.options import client_decode_options

    class Client:
        def default_options(self):
            return DecodeOptions(beam_size=1)

    assert client_decode_options(_parse(), Client()) is None  # the server decides
    assert client_decode_options(_parse("--n-best", "3"), Client()) == DecodeOptions(
        beam_size=3, n_best=3)
