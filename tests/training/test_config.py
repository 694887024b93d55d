"""`--set` overrides as parsed for `nmt train` and the benchmarks."""

import pytest

from training.config import parse_overrides


def test_values_are_read_as_yaml():
    parsed = parse_overrides(["optim.max_tokens=1500", "model.input_feeding=true",
                              "optim.precision=float32", "optim.learning_rate=0.002"])
    assert parsed == {"optim.max_tokens": 1500, "model.input_feeding": True,
                      "optim.precision": "float32", "optim.learning_rate": 0.002}


@pytest.mark.parametrize("item", ["optim.max_tokens", "max_tokens=1500"])
def test_malformed_items_name_the_expected_form(item):
    with pytest.raises(ValueError, match="SECTION.KEY=VALUE"):
        parse_overrides([item])
