"""`nmt keys add|list|revoke|global|usage` on a keys file, and the keys working on a server's
`Quotas`."""

import argparse
import asyncio
import json
import re

import pytest

from nmt_cli.keys import add_keys_parser
from serving.keys import read_keys, usage_path_for
from serving.quotas import PermissionDenied, QuotaExceeded, Quotas

KEY = re.compile(r"nmt_[0-9a-f]{12}_[A-Za-z0-9_-]{43}")


def nmt_keys(*argv) -> int:
    parser = argparse.ArgumentParser(prog="nmt")
    add_keys_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["keys", *map(str, argv)])
    return args.func(args)


@pytest.fixture
def keys(tmp_path):
    return tmp_path / "keys.json"


def _add(keys, name, capsys, *options) -> str:
    assert nmt_keys("add", name, "--file", keys, *options) == 0
    out = capsys.readouterr().out
    return out.strip()


def test_add_prints_the_key_once_alone_and_the_file_keeps_its_hash(keys, capsys):
    assert nmt_keys("add", "acme", "--file", keys, "--requests-per-minute", 60,
                    "--chars-per-day", 100000) == 0
    captured = capsys.readouterr()

    token = captured.out.strip()
    assert KEY.fullmatch(token) and captured.out.count("\n") == 1
    assert "shown only now" in captured.err and token not in captured.err
    text = keys.read_text()
    assert token not in text and token[-43:] not in text
    record = json.loads(text)["keys"][0]
    assert (record["name"], record["requests_per_minute"], record["chars_per_day"]) == (
        "acme", 60, 100000)
    assert Quotas(keys).authenticate(f"Bearer {token}", None).name == "acme"
    assert [p.name for p in keys.parent.iterdir()] == ["keys.json"]  # no temporary file left


def test_a_name_is_added_once(keys, capsys):
    _add(keys, "acme", capsys)

    with pytest.raises(ValueError, match="a key named 'acme' exists already"):
        nmt_keys("add", "acme", "--file", keys)
    assert len(read_keys(keys).keys) == 1


@pytest.mark.parametrize("argv, message", [
    (("add", "has space"), "a key's name must be"),
    (("add", "acme", "--requests-per-minute", 10**6), "from 1 to 100000"),
])
def test_bad_names_and_limits_are_refused(keys, argv, message):
    with pytest.raises(ValueError, match=message):
        nmt_keys(*argv, "--file", keys)
    assert not keys.exists()


def test_a_limit_must_be_a_positive_number(keys, capsys):
    with pytest.raises(SystemExit):
        nmt_keys("add", "acme", "--file", keys, "--chars-per-day", "0")
    assert "must be a whole number from 1" in capsys.readouterr().err


def test_a_missing_directory_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no directory"):
        nmt_keys("add", "acme", "--file", tmp_path / "nowhere" / "keys.json")


def test_list_shows_names_ids_states_and_limits_never_keys(keys, capsys):
    token = _add(keys, "acme", capsys, "--requests-per-minute", 60)
    _add(keys, "globex", capsys, "--chars-per-day", 2500000)

    assert nmt_keys("list", "--file", keys) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["name", "id", "state", "requests/min", "chars/day", "created"]
    assert lines[1].startswith("acme") and token[4:16] in lines[1] and "active" in lines[1]
    assert "60" in lines[1] and "2 500 000" in lines[2]
    assert lines[-1] == ("global: no limit on requests per minute, no limit on characters "
                         "per day")
    assert token not in out


def test_revoke_refuses_the_key_and_keeps_its_record(keys, capsys):
    token = _add(keys, "acme", capsys)
    quotas = Quotas(keys)
    key = quotas.authenticate(f"Bearer {token}", None)

    assert nmt_keys("revoke", "acme", "--file", keys) == 0
    assert "next poll" in capsys.readouterr().err
    assert read_keys(keys).named("acme").revoked
    assert asyncio.run(quotas.refresh())  # the running server's next poll
    with pytest.raises(PermissionDenied):
        quotas.admit(key)
    assert nmt_keys("revoke", "acme", "--file", keys) == 0
    assert "revoked already" in capsys.readouterr().err


def test_revoking_an_unknown_name_says_which_names_there_are(keys, capsys):
    _add(keys, "acme", capsys)

    with pytest.raises(ValueError, match=r"no key named 'acne' in the file \(it has 'acme'\)"):
        nmt_keys("revoke", "acne", "--file", keys)


def test_global_sets_and_removes_the_limits_of_all_keys(keys, capsys):
    _add(keys, "acme", capsys)

    nmt_keys("global", "--file", keys, "--requests-per-minute", 600, "--chars-per-day", 1000)
    assert read_keys(keys).global_quota.to_json() == {"requests_per_minute": 600,
                                                      "chars_per_day": 1000}
    nmt_keys("global", "--file", keys, "--chars-per-day", "none")
    assert read_keys(keys).global_quota.to_json() == {"requests_per_minute": 600,
                                                      "chars_per_day": None}
    with pytest.raises(ValueError, match="give --requests-per-minute and/or --chars-per-day"):
        nmt_keys("global", "--file", keys)


def test_usage_shows_what_the_server_saved_for_each_key(keys, capsys):
    acme = _add(keys, "acme", capsys, "--chars-per-day", 20)
    _add(keys, "idle", capsys)
    quotas = Quotas(keys, usage_path=usage_path_for(keys))
    key = quotas.authenticate(f"Bearer {acme}", None)
    quotas.admit(key, 12)
    with pytest.raises(QuotaExceeded):
        quotas.admit(key, 12)
    asyncio.run(quotas.save_usage())

    assert nmt_keys("usage", "--file", keys) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "usage of" in lines[0] and "keys.usage.json" in lines[0]
    assert lines[1].split()[:5] == ["name", "state", "requests", "rejected", "chars"]
    assert lines[2].split()[:6] == ["acme", "active", "1", "1", "12", "20"]
    assert lines[3].split()[:5] == ["idle", "active", "0", "0", "0"] and "never" in lines[3]
    assert lines[4].split()[:4] == ["(all)", "1", "1", "12"]


def test_usage_before_the_server_saved_any_says_so(keys, capsys):
    _add(keys, "acme", capsys)

    with pytest.raises(FileNotFoundError, match="no usage file at .*keys.usage.json"):
        nmt_keys("usage", "--file", keys)
