"""API keys: the keys file (`serving.keys`) and the quotas (`serving.quotas`), on a clock moved
by hand."""

import asyncio
import dataclasses
import datetime
import json
import logging

import pytest

from nmt.atomic_write import write_atomically
from nmt_api import protos
from serving.errors import LimitExceeded, Unauthenticated, http_status_for, status_for
from serving.keys import (
    KeysFile,
    KeysFileError,
    Quota,
    new_key,
    parse_keys,
    read_keys,
    read_usage,
    token_id,
    usage_path_for,
)
from serving.quotas import (
    KeyMetrics,
    PermissionDenied,
    QuotaExceeded,
    Quotas,
    SlidingWindow,
    request_chars,
)

pb2, _ = protos.load()
NO_LIMITS = Quota()
NOON = datetime.datetime(2025, 6, 1, 12, 0, tzinfo=datetime.UTC).timestamp()


class FakeClock:
    """Both clocks at `now`, moved by `advance`."""

    def __init__(self, now: float = NOON):
        self.now = now

    def monotonic(self) -> float:
        return self.now

    def wall(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _write_keys(path, *specs, global_quota=NO_LIMITS) -> dict[str, str]:
    """Writes a keys file of `(name, Quota)` specs; returns `{name: key}`."""
    tokens, keys = {}, []
    for name, quota in specs:
        tokens[name], key = new_key(name, quota, taken_ids={k.id for k in keys})
        keys.append(key)
    write_atomically(path, KeysFile(tuple(keys), global_quota).to_json().encode())
    return tokens


def _bearer(token: str) -> str:
    return f"Bearer {token}"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def metrics() -> KeyMetrics:
    return KeyMetrics()


def _quotas(tmp_path, clock, metrics, *specs, global_quota=NO_LIMITS, usage=False):
    path = tmp_path / "keys.json"
    tokens = _write_keys(path, *specs, global_quota=global_quota)
    quotas = Quotas(path, usage_path=usage_path_for(path) if usage else None, metrics=metrics,
                    clock=clock)
    return quotas, tokens


def _admit(quotas, token, chars=0):
    return quotas.admit(quotas.authenticate(_bearer(token), None), chars)


def _rejections(metrics, reason):
    return metrics.rejections.labels(reason=reason)._value.get()


# --- the keys file -------------------------------------------------------------------------


def test_the_file_keeps_a_salted_hash_never_the_key(tmp_path):
    path = tmp_path / "keys.json"
    tokens = _write_keys(path, ("acme", Quota()), ("globex", Quota()))
    text = path.read_text()
    keys = read_keys(path).keys

    for token in tokens.values():
        assert token.startswith("nmt_") and len(token) == 4 + 12 + 1 + 43
        # The secret's tail: the secret is URL-safe base64, which may itself hold a `_`.
        assert token not in text and token[-20:] not in text
    assert keys[0].salt != keys[1].salt and len(keys[0].salt) == 16
    assert keys[0].matches(tokens["acme"]) and not keys[0].matches(tokens["globex"])
    assert not keys[0].matches(tokens["acme"][:-1] + ("A" if tokens["acme"][-1] != "A" else "B"))
    assert json.loads(text)["keys"][0]["hash"].startswith("sha256:")


def test_the_file_round_trips(tmp_path):
    path = tmp_path / "keys.json"
    _write_keys(path, ("acme", Quota(60, 1000)), ("b", Quota(None, 5)),
                global_quota=Quota(100, None))
    loaded = read_keys(path)

    assert parse_keys(loaded.to_json()) == loaded
    assert loaded.global_quota == Quota(100, None)
    assert [k.quota for k in loaded.keys] == [Quota(60, 1000), Quota(None, 5)]
    assert loaded.keys[0].created.endswith("Z")


def _record(**changes) -> dict:
    _, key = new_key("acme")
    return {**key.to_json(), **changes}


def _text(*records, **top) -> str:
    return json.dumps({"version": 1, "keys": list(records), **top}, indent=2)


@pytest.mark.parametrize("text, expected", [
    ('{"version": 1,\n "keys": [],\n}', ["line 3 column 1", "not valid JSON"]),
    ("[]", ["must be a JSON object", "Received: a JSON list"]),
    (_text(_record(request_per_minute=5)),
     ["keys[0] ('acme', line 5)", "unknown field 'request_per_minute'",
      "did you mean 'requests_per_minute'"]),
    (_text(_record(requests_per_minute=0)), ["requests_per_minute must be a whole number from 1",
                                              "Received: requests_per_minute=0"]),
    (_text(_record(chars_per_day="100")), ["chars_per_day must be a whole number",
                                            "Received: chars_per_day='100'"]),
    (_text(_record(requests_per_minute=10**6)), ["from 1 to 100000"]),
    (_text(_record(revoked="yes")), ["revoked must be true or false"]),
    (_text(_record(hash="acme-secret")), ["hash must be 'sha256:", "never stored"]),
    (_text({"name": "acme", "id": "0123456789ab"}), ["hash is missing"]),
    (_text(_record(name="has space")), ["a key's name must be", "Received: name='has space'"]),
    (_text(_record(id="XYZ")), ["id must be 12 lowercase hex digits"]),
    (_text(_record(), _record()), ["keys[1] (line 14)", "names must be unique"]),
    (_text(**{"global": {"rpm": 5}}), ["global: unknown field 'rpm'; known: "
                                        "requests_per_minute, chars_per_day"]),
    (_text(version=2), ["version must be 1"]),
    (_text(**{"global": {"chars_per_day": -1}}), ["keys.json: global (line 4): chars_per_day "
                                                   "must be a whole number"]),
])
def test_a_bad_file_says_where_and_what_to_fix(text, expected):
    with pytest.raises(KeysFileError) as error:
        parse_keys(text, "keys.json")

    message = str(error.value)
    assert message.startswith("keys.json"), message
    for part in expected:
        assert part in message, message


def test_a_missing_file_says_how_to_make_one(tmp_path):
    with pytest.raises(KeysFileError, match=r"no keys file at .*nmt keys add NAME --file"):
        read_keys(tmp_path / "keys.json")


@pytest.mark.parametrize("token", [
    "", "nmt_", "Bearer x", "nmt_0123456789ab_short", "nmt_0123456789AB_" + "a" * 43,
    "nmt_0123456789ab_" + "a" * 44, "xyz_0123456789ab_" + "a" * 43])
def test_malformed_keys_have_no_id(token):
    assert token_id(token) is None


def test_the_usage_file_sits_beside_the_keys_file(tmp_path):
    assert usage_path_for(tmp_path / "keys.json") == tmp_path / "keys.usage.json"


# --- who calls -----------------------------------------------------------------------------


def test_a_key_is_accepted_as_bearer_or_x_api_key(tmp_path, clock, metrics):
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("acme", Quota()))
    token = tokens["acme"]

    for authorization, api_key in ((_bearer(token), None), (f"bearer  {token} ", None),
                                   (None, token), (_bearer(token), token)):
        assert quotas.authenticate(authorization, api_key).name == "acme"


@pytest.mark.parametrize("authorization, api_key, reason, expected", [
    (None, None, "missing", "needs an API key"),
    ("", "", "missing", "`x-api-key: <key>`"),
    ("Basic YWxhZGRpbjpvcGVu", None, "invalid", "must read `Bearer <key>`"),
    ("Bearer", None, "invalid", "must read `Bearer <key>`"),
    ("Bearer nmt_not_a_key", None, "invalid", "not valid for this server"),
    (None, "WRONG", "invalid", "not valid for this server"),
])
def test_calls_without_a_valid_key_are_unauthenticated(tmp_path, clock, metrics, authorization,
                                                        api_key, reason, expected):
    quotas, _ = _quotas(tmp_path, clock, metrics, ("acme", Quota()))

    with pytest.raises(Unauthenticated, match=expected.replace("`", ".").replace("<", ".")
                       .replace(">", ".")) as error:
        quotas.authenticate(authorization, api_key)
    assert http_status_for(error.value)[0] == 401
    assert metrics.auth_failures.labels(reason=reason)._value.get() == 1


def test_a_right_id_with_a_wrong_secret_is_not_valid(tmp_path, clock, metrics):
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("acme", Quota()))
    forged = tokens["acme"][:18] + "x" * 43  # the public id, another secret

    with pytest.raises(Unauthenticated, match="not valid"):
        quotas.authenticate(_bearer(forged), None)


def test_two_different_keys_in_one_call_are_refused(tmp_path, clock, metrics):
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("a", Quota()), ("b", Quota()))

    with pytest.raises(Unauthenticated, match="different keys; send one"):
        quotas.authenticate(_bearer(tokens["a"]), tokens["b"])


def test_a_revoked_key_is_permission_denied(tmp_path, clock, metrics):
    path = tmp_path / "keys.json"
    tokens = _write_keys(path, ("acme", Quota()))
    keys_file = read_keys(path)
    revoked = dataclasses.replace(keys_file.keys[0], revoked=True)
    write_atomically(path, keys_file.replaced(revoked).to_json().encode())
    quotas = Quotas(path, metrics=metrics, clock=clock)

    with pytest.raises(PermissionDenied, match="'acme' was revoked") as error:
        quotas.authenticate(_bearer(tokens["acme"]), None)
    assert status_for(error.value)[0].name == "PERMISSION_DENIED"
    assert http_status_for(error.value)[0] == 403
    assert metrics.auth_failures.labels(reason="revoked")._value.get() == 1


# --- requests per minute -------------------------------------------------------------------


def test_the_rate_limit_is_reached_exactly_and_one_more_waits_for_the_oldest(
        tmp_path, clock, metrics):
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("acme", Quota(requests_per_minute=3)))
    for _ in range(3):
        _admit(quotas, tokens["acme"])
        clock.advance(10)  # requests at 0, 10 and 20 s

    with pytest.raises(QuotaExceeded) as error:  # at 30 s: the one at 0 s leaves at 60 s
        _admit(quotas, tokens["acme"])
    assert error.value.retry_after == pytest.approx(30)
    assert error.value.retry_after_s == 30
    assert error.value.trailing_metadata == (("retry-after", "30"),)
    assert "'acme' is at its limit of 3 requests per minute; retry in 30 s" in str(error.value)
    assert status_for(error.value)[0].name == "RESOURCE_EXHAUSTED"
    assert http_status_for(error.value)[0] == 429
    assert _rejections(metrics, "requests_per_minute") == 1

    clock.advance(30)  # 60 s: the first request's minute is over
    _admit(quotas, tokens["acme"])
    with pytest.raises(QuotaExceeded) as error:
        _admit(quotas, tokens["acme"])
    assert error.value.retry_after == pytest.approx(10)  # the one at 10 s leaves at 70 s
    usage = quotas.usage().keys["acme"]
    assert (usage.requests, usage.rejected) == (4, 2)  # refused requests use nothing


def test_a_sliding_window_keeps_its_latest_times_when_resized():
    window = SlidingWindow(3)
    for moment in (0.0, 1.0, 2.0):
        window.record(moment)

    assert window.wait(2.0) == 58.0
    assert window.resized(2).times() == [1.0, 2.0] and window.resized(2).wait(2.0) == 59.0
    assert window.resized(5).wait(2.0) == 0.0


def test_a_lower_limit_in_a_reloaded_file_applies_to_the_requests_already_made(
        tmp_path, clock, metrics):
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("acme", Quota(requests_per_minute=10)))
    for _ in range(3):
        _admit(quotas, tokens["acme"])
    keys_file = quotas.keys_file
    lower = dataclasses.replace(keys_file.keys[0], quota=Quota(requests_per_minute=3))
    write_atomically(quotas.path, keys_file.replaced(lower).to_json().encode())

    assert asyncio.run(quotas.refresh())
    with pytest.raises(QuotaExceeded, match="limit of 3 requests per minute"):
        _admit(quotas, tokens["acme"])


# --- characters per day --------------------------------------------------------------------


def test_a_request_that_would_pass_the_daily_limit_is_refused_whole(tmp_path, clock, metrics):
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("acme", Quota(chars_per_day=100)))
    _admit(quotas, tokens["acme"], 60)

    with pytest.raises(QuotaExceeded) as error:  # 60 + 50 > 100: none of the 50 passes
        _admit(quotas, tokens["acme"], 50)
    assert error.value.retry_after == pytest.approx(12 * 3600)  # noon to midnight, UTC
    assert "has 40 of its 100 characters a day left (UTC) and this request has 50" in str(
        error.value)
    assert quotas.usage().keys["acme"].chars == 60

    _admit(quotas, tokens["acme"], 40)  # exactly the limit
    with pytest.raises(QuotaExceeded):
        _admit(quotas, tokens["acme"], 1)
    assert quotas.usage().keys["acme"].chars == 100
    assert _rejections(metrics, "chars_per_day") == 2


def test_a_request_larger_than_a_days_limit_is_over_a_limit_with_no_retry(
        tmp_path, clock, metrics):
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("acme", Quota(chars_per_day=100)))

    with pytest.raises(LimitExceeded) as error:
        _admit(quotas, tokens["acme"], 101)
    assert not isinstance(error.value, QuotaExceeded)
    assert http_status_for(error.value)[0] == 413
    assert "more than the key 'acme' may send in a day (100); send it in smaller" in str(
        error.value)


def test_the_daily_count_starts_again_at_midnight_utc(tmp_path, clock, metrics):
    clock.now = datetime.datetime(2025, 6, 1, 23, 59, 30, tzinfo=datetime.UTC).timestamp()
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("acme", Quota(chars_per_day=100)))
    _admit(quotas, tokens["acme"], 100)

    with pytest.raises(QuotaExceeded) as error:
        _admit(quotas, tokens["acme"], 1)
    assert error.value.retry_after == pytest.approx(30)

    clock.advance(30)  # 00:00:00 UTC, June 2nd
    _admit(quotas, tokens["acme"], 100)
    usage = quotas.usage()
    assert usage.day == "2025-06-02" and usage.keys["acme"].chars == 100


def test_characters_given_back_return_to_the_day_they_were_charged_to(tmp_path, clock, metrics):
    clock.now = datetime.datetime(2025, 6, 1, 23, 59, 59, tzinfo=datetime.UTC).timestamp()
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("acme", Quota(chars_per_day=100)))
    charge = _admit(quotas, tokens["acme"], 70)
    charge.refund()
    charge.refund()  # once only
    assert quotas.usage().keys["acme"].chars == 0

    late = _admit(quotas, tokens["acme"], 70)
    clock.advance(1)  # the next day
    _admit(quotas, tokens["acme"], 30)
    late.refund()  # of yesterday: today's count is left alone
    assert quotas.usage().keys["acme"].chars == 30


# --- global limits and concurrency -----------------------------------------------------------


def test_global_limits_hold_for_all_keys_together(tmp_path, clock, metrics):
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("a", Quota()), ("b", Quota()),
                             global_quota=Quota(requests_per_minute=3, chars_per_day=50))
    _admit(quotas, tokens["a"], 20)
    _admit(quotas, tokens["b"], 20)

    with pytest.raises(QuotaExceeded, match="for all keys together, has 10 of its 50"):
        _admit(quotas, tokens["a"], 20)
    _admit(quotas, tokens["b"], 10)
    with pytest.raises(QuotaExceeded, match="for all keys together, is at its limit of 3 "):
        _admit(quotas, tokens["a"])
    assert _rejections(metrics, "global_chars_per_day") == 1
    assert _rejections(metrics, "global_requests_per_minute") == 1
    assert quotas.usage().global_usage.chars == 50


def test_concurrent_requests_of_one_key_do_not_pass_its_limit_together(tmp_path, clock, metrics):
    quotas, tokens = _quotas(tmp_path, clock, metrics,
                             ("acme", Quota(requests_per_minute=5, chars_per_day=1000)))
    key = quotas.authenticate(_bearer(tokens["acme"]), None)

    async def request(index: int) -> str:
        await asyncio.sleep(0)  # every request gets this far before any is admitted
        try:
            charge = quotas.admit(key, 150)
        except QuotaExceeded:
            return "refused"
        await asyncio.sleep(0.01)  # the model call
        if index % 2:
            charge.refund()  # some fail: their characters come back
        return "done"

    async def burst():
        return await asyncio.gather(*(request(i) for i in range(20)))

    outcomes = asyncio.run(burst())
    assert outcomes.count("done") == 5 and outcomes.count("refused") == 15
    assert quotas.usage().keys["acme"].requests == 5
    assert quotas.usage().keys["acme"].chars == 150 * sum(1 for i in range(5) if i % 2 == 0)


# --- the file changing under a running server ----------------------------------------------


def test_a_key_revoked_in_the_file_is_refused_at_its_next_request(tmp_path, clock, metrics):
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("acme", Quota()), ("b", Quota()))
    key = quotas.authenticate(_bearer(tokens["acme"]), None)
    quotas.admit(key)
    keys_file = quotas.keys_file
    write_atomically(quotas.path, keys_file.replaced(
        dataclasses.replace(keys_file.named("acme"), revoked=True)).to_json().encode())

    assert asyncio.run(quotas.refresh())
    with pytest.raises(PermissionDenied):  # a stream that authenticated before
        quotas.admit(key)
    with pytest.raises(PermissionDenied):
        quotas.authenticate(_bearer(tokens["acme"]), None)
    _admit(quotas, tokens["b"])


def test_a_key_removed_from_the_file_is_unauthenticated(tmp_path, clock, metrics):
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("acme", Quota()), ("b", Quota()))
    key = quotas.authenticate(_bearer(tokens["acme"]), None)
    keys_file = quotas.keys_file
    write_atomically(quotas.path, dataclasses.replace(
        keys_file, keys=(keys_file.named("b"),)).to_json().encode())

    assert asyncio.run(quotas.refresh())
    with pytest.raises(Unauthenticated, match="no longer a key of this server"):
        quotas.admit(key)


def test_a_bad_file_keeps_the_keys_in_use_and_is_logged_once(tmp_path, clock, metrics, caplog):
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("acme", Quota()))
    text = quotas.path.read_text()
    write_atomically(quotas.path, text.replace('"revoked": false', '"revoked": "no"').encode())

    with caplog.at_level(logging.INFO, logger="nmt.serving.keys"):
        assert not asyncio.run(quotas.refresh())
        assert not asyncio.run(quotas.refresh())  # unchanged since: not logged again
    errors = [json.loads(r.getMessage()) for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0]["event"] == "keys_load_failed"
    assert "('acme', line 9): revoked must be true or false" in errors[0]["error"]
    assert errors[0]["serving"].startswith("the keys loaded at 2025-06-01T12:00:00Z")
    assert metrics.loads.labels(result="failure")._value.get() == 1
    _admit(quotas, tokens["acme"])  # still served by the keys loaded before

    write_atomically(quotas.path, text.encode())
    assert asyncio.run(quotas.refresh())  # fixed: loaded again


def test_a_removed_file_keeps_the_keys_in_use(tmp_path, clock, metrics):
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("acme", Quota()))
    quotas.path.unlink()

    assert not asyncio.run(quotas.refresh())
    _admit(quotas, tokens["acme"])


def test_a_first_bad_file_refuses_to_start(tmp_path, clock):
    path = tmp_path / "keys.json"
    path.write_text('{"version": 1, "keys": [\n  {"name": "acme",}\n]}\n')

    with pytest.raises(KeysFileError, match=r"keys.json: line 2 column .* not valid JSON"):
        Quotas(path, clock=clock)


# --- usage ---------------------------------------------------------------------------------


def test_usage_survives_a_restart_on_the_same_day_only(tmp_path, clock, metrics):
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("acme", Quota(chars_per_day=100)),
                             usage=True)
    _admit(quotas, tokens["acme"], 70)
    asyncio.run(quotas.save_usage())
    saved = read_usage(usage_path_for(quotas.path))
    assert saved.day == "2025-06-01" and saved.keys["acme"].chars == 70

    restarted = Quotas(quotas.path, usage_path=quotas.usage_path, clock=clock)
    with pytest.raises(QuotaExceeded):
        _admit(restarted, tokens["acme"], 40)

    clock.advance(86_400)
    next_day = Quotas(quotas.path, usage_path=quotas.usage_path, clock=clock)
    usage = next_day.usage().keys["acme"]
    assert usage.chars == 0 and usage.last_used == NOON


def test_a_usage_file_that_cannot_be_written_is_logged_once(tmp_path, clock, caplog):
    path = tmp_path / "keys.json"
    tokens = _write_keys(path, ("acme", Quota()))
    quotas = Quotas(path, usage_path=tmp_path / "missing" / "usage.json", clock=clock)

    with caplog.at_level(logging.WARNING, logger="nmt.serving.keys"):
        for _ in range(2):
            _admit(quotas, tokens["acme"])
            asyncio.run(quotas.save_usage())
    assert [json.loads(r.getMessage())["event"] for r in caplog.records] == [
        "keys_usage_save_failed"]


def test_metrics_labels_never_name_a_key(tmp_path, clock, metrics):
    quotas, tokens = _quotas(tmp_path, clock, metrics, ("acme-corp", Quota(requests_per_minute=1)))
    _admit(quotas, tokens["acme-corp"])
    with pytest.raises(QuotaExceeded):
        _admit(quotas, tokens["acme-corp"])

    samples = [s for family in metrics.rejections.collect() + metrics.keys.collect()
               + metrics.auth_failures.collect() + metrics.loads.collect()
               for s in family.samples]
    assert samples and not any("acme" in v for s in samples for v in s.labels.values())
    assert metrics.keys.labels(state="active")._value.get() == 1


@pytest.mark.parametrize("message, chars", [
    (pb2.TranslateRequest(sentences=["Le «café»…", "é"]), 11),
    (pb2.TranslateRequest(sentences=["<p>Hi</p>"], format=pb2.TEXT_FORMAT_HTML), 9),
    (pb2.AlignRequest(sources=["abc"], targets=["de"]), 5),
    (pb2.GetModelInfoRequest(), 0),
    (b"raw bytes", 0),
])
def test_request_chars_counts_the_texts_code_points(message, chars):
    assert request_chars(message) == chars
