"""`nmt.options`: the decoding flags shared by `nmt translate`, `nmt batch` and the Beam job."""

import argparse
import dataclasses

import pytest

from nmt.options import DEFAULT_MODEL_DIR, add_decode_options, decode_options
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
