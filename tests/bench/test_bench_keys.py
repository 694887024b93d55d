"""`bench/keys_overhead.py`: times a small keys file and prints one line of figures."""

import re

import pytest

from bench.keys_overhead import main


def test_prints_the_load_and_per_request_costs(capsys):
    assert main(["--keys", "20", "--requests", "1000"]) == 0

    line = capsys.readouterr().out.splitlines()[-1]
    assert re.fullmatch(r"20 keys \(\d+ kB file\): load \d+ ms; per request [\d.]+ us "
                        r"admitted, [\d.]+ us refused \(1000 requests\)", line), line


def test_more_requests_than_the_keys_allow_in_a_minute_are_refused():
    with pytest.raises(SystemExit, match="at most 60 x --keys"):
        main(["--keys", "2", "--requests", "1000"])
