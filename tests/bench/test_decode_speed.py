"""`bench/decode_speed.py`: the precision paths it times."""

import argparse

import pytest

from bench.decode_speed import precision_list


def test_precisions_are_a_comma_list_of_load_choices():
    assert precision_list("float32,bfloat16") == ["float32", "bfloat16"]
    assert precision_list(" auto , float32,auto") == ["auto", "float32"]  # each once
    with pytest.raises(argparse.ArgumentTypeError, match="auto,float32,bfloat16; got 'fp16'"):
        precision_list("fp16")
    with pytest.raises(argparse.ArgumentTypeError):
        precision_list(",")
