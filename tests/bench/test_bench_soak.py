"""`bench/soak.py` and `bench/support/soak_mix.py`: the request mix, how answers are judged, phases,
the memory growth fit and the report's inputs, with fakes (no server)."""

import json
import math
import random

import numpy as np
import pytest

from bench.soak import (
    Phase,
    Reload,
    Run,
    Sample,
    growth_between,
    linear_fit,
    metric_values,
    phase_row,
    problems,
    split_phases,
    write_csv,
)
from bench.support.soak_mix import (
    BAD_BEAM,
    BATCH_SENTENCES,
    INTENDED,
    MIX,
    NBEST,
    OK,
    PAIRS,
    SENTENCES,
    UI_STRINGS,
    UNINTENDED,
    Outcome,
    Tally,
    Texts,
    build_request,
    classify,
    client_failure,
    http_body,
    load_texts,
    mix_weights,
)

TEXTS = Texts(("Fish & chips <cheap>.", "The cat sleeps on the warm sofa.", "Hello there."),
              ("Save", "Cancel"), (("Hello.", "Bonjour."),))


def sample(t_s, rss_mb, requests=0, intended=0, unintended=0, server=None):
    return Sample(t_s, rss_mb, 40, 20, requests, intended, unintended, server or {})


# --- the mix -------------------------------------------------------------------------------

def test_each_protocol_has_its_kinds_with_shares_that_sum_to_one():
    grpc, http = mix_weights("grpc"), mix_weights("http")
    assert set(grpc) == set(MIX) - {"malformed_json"}
    assert set(http) == set(MIX) - {"stream"}
    for shares in (grpc, http):
        assert math.isclose(sum(shares.values()), 1.0)
        assert math.isclose(shares["sentence"] / shares["repeat"], MIX["sentence"] / MIX["repeat"])
    assert math.isclose(grpc["stream"], MIX["stream"] / (sum(MIX.values()) - MIX["malformed_json"]))
    with pytest.raises(ValueError, match="Received: protocol='ftp'"):
        mix_weights("ftp")


def test_every_kind_builds_a_request_within_the_limits_but_oversized():
    rng, max_chars = random.Random(0), 120
    for kind in MIX:
        request = build_request(kind, rng, TEXTS, max_chars)
        assert request.kind == kind
        longest = max(len(s) for s in request.sentences)
        assert (longest > max_chars) == (kind == "oversized"), (kind, request)
    assert build_request("repeat", rng, TEXTS, 120).sentences[0] in TEXTS.repeats
    assert len(build_request("batch", rng, TEXTS, 120).sentences) == BATCH_SENTENCES
    assert build_request("nbest", rng, TEXTS, 120).options == NBEST
    assert build_request("bad_beam", rng, TEXTS, 120).options == BAD_BEAM
    align = build_request("align", rng, TEXTS, 120)
    assert (align.sentences, align.targets) == (("Hello.",), ("Bonjour.",))
    with pytest.raises(ValueError, match="Received: kind='poem'"):
        build_request("poem", rng, TEXTS, 120)


def test_documents_are_escaped_html_with_a_heading_and_one_bold_word():
    texts = Texts(("Fish & chips <cheap>.",), ("Save",), PAIRS)
    [document] = build_request("document", random.Random(1), texts, 1000).sentences
    assert document.startswith("<h2>Save</h2><p>Fish &amp; chips &lt;cheap&gt;.")
    assert document.count("<b>") == 1 and "<ul><li>" in document
    [short] = build_request("document", random.Random(1), texts, 80).sentences
    assert len(short) <= 80 and short.startswith("<h2>Save</h2>")


def test_http_bodies_are_proto_json_and_malformed_json_is_not_json():
    rng = random.Random(2)
    path, body = http_body(build_request("nbest", rng, TEXTS, 1000))
    assert path == "/v1/translate"
    assert json.loads(body)["options"] == {"beamSize": 5, "nBest": 3}
    assert json.loads(http_body(build_request("document", rng, TEXTS, 1000))[1])["format"] \
        == "TEXT_FORMAT_HTML"
    path, body = http_body(build_request("align", rng, TEXTS, 1000))
    assert path == "/v1/align" and json.loads(body) == {"sources": ["Hello."],
                                                       "targets": ["Bonjour."]}
    with pytest.raises(json.JSONDecodeError):
        json.loads(http_body(build_request("malformed_json", rng, TEXTS, 1000))[1])


def test_malformed_json_is_cut_between_characters_so_it_stays_utf8():
    from bench.support.soak_mix import Request

    for sentence in ("Où est la gare ?", "«é»" * 7, "ééééé"):
        body = http_body(Request("malformed_json", (sentence,)))[1]
        text = body.decode("utf-8")  # a cut inside a character would fail here
        with pytest.raises(json.JSONDecodeError):
            json.loads(text)


def test_texts_come_from_the_files_else_from_the_built_in_lists(tmp_path):
    texts, where = load_texts(tmp_path / "none.en", tmp_path / "none.en", 1000)
    assert (texts.sentences, texts.pairs, texts.repeats) == (SENTENCES, PAIRS, UI_STRINGS)
    assert "built" not in where and "bench/support/soak_mix.py" in where
    (tmp_path / "s.en").write_text("Short one.\n\n" + "x" * 50 + "\n", encoding="utf-8")
    (tmp_path / "p.en").write_text("Hi.\nA dog runs.\n", encoding="utf-8")
    (tmp_path / "p.fr").write_text("Salut.\nUn chien court.\n", encoding="utf-8")
    texts, where = load_texts(tmp_path / "s.en", tmp_path / "p.en", 20)
    assert texts.sentences == ("Short one.",), "blank lines and lines over 20 characters left out"
    assert texts.pairs == (("Hi.", "Salut."), ("A dog runs.", "Un chien court."))
    assert "1 sentences of" in where and "2 pairs of" in where


# --- judging the answers -------------------------------------------------------------------

@pytest.mark.parametrize("kind, outcome, verdict", [
    ("sentence", Outcome("OK"), OK),
    ("document", Outcome("OK", 200), OK),
    ("sentence", Outcome("UNAVAILABLE", None, "no model is loaded yet"), UNINTENDED),
    ("align", Outcome("RESOURCE_EXHAUSTED", 429, "the server is busy"), UNINTENDED),
    ("oversized", Outcome("RESOURCE_EXHAUSTED", None, "sentence 0 is too long: at most"), INTENDED),
    ("oversized", Outcome("RESOURCE_EXHAUSTED", 413, "sentence 0 is too long: at most"), INTENDED),
    ("oversized", Outcome("RESOURCE_EXHAUSTED", 429, "the server is busy"), UNINTENDED),
    ("oversized", Outcome("RESOURCE_EXHAUSTED", None, "the server is busy"), UNINTENDED),
    ("oversized", Outcome("OK"), UNINTENDED),
    ("bad_beam", Outcome("INVALID_ARGUMENT", 400, "invalid options: beam_size must be"), INTENDED),
    ("bad_beam", Outcome("INTERNAL", 500, "internal error"), UNINTENDED),
    ("malformed_json", Outcome("INVALID_ARGUMENT", 400, "the body is not JSON: Expecting"),
     INTENDED),
    ("malformed_json", Outcome("INVALID_ARGUMENT", 400, "invalid options"), UNINTENDED),
    ("stream", client_failure(ConnectionResetError("reset by peer")), UNINTENDED),
])
def test_only_the_documented_error_of_a_kind_is_intended(kind, outcome, verdict):
    assert classify(kind, outcome) == verdict


def test_a_client_failure_names_the_exception():
    outcome = client_failure(TimeoutError("no answer in 120 s"))
    assert (outcome.code, outcome.http_status) == ("CLIENT_TimeoutError", None)


def test_tally_counts_by_kind_protocol_and_verdict_and_keeps_unintended_examples():
    tally = Tally()
    tally.add("sentence", "grpc", Outcome("OK"))
    tally.add("sentence", "http", Outcome("OK", 200))
    tally.add("oversized", "http", Outcome("RESOURCE_EXHAUSTED", 413, "is too long"))
    tally.add("align", "grpc", Outcome("INTERNAL", None, "boom"))
    assert (tally.total(), tally.total(OK), tally.total(INTENDED), tally.total(UNINTENDED)) \
        == (4, 2, 1, 1)
    rows = {row["kind"]: row for row in tally.by_kind()}
    assert (rows["sentence"]["grpc"], rows["sentence"]["http"], rows["sentence"][OK]) == (1, 1, 2)
    assert rows["align"][UNINTENDED] == 1 and rows["stream"]["grpc"] == 0
    assert tally.examples == [("align", "grpc", Outcome("INTERNAL", None, "boom"))]


def test_unintended_answers_a_dead_server_or_a_reload_that_never_served_fail_the_soak():
    tally = Tally()
    tally.add("oversized", "grpc", Outcome("RESOURCE_EXHAUSTED", None, "is too long"))
    assert problems(Run([], tally, Reload(9, 60.0, 64.0))) == []
    tally.add("batch", "http", Outcome("UNAVAILABLE", 503, "shutting down"))
    found = problems(Run([], tally, Reload(9, 60.0, None), server_exit=-9))
    assert found[0] == "batch over http: UNAVAILABLE (HTTP 503): shutting down"
    assert "exited during the run (code -9)" in found[1] and "never served" in found[2]


# --- phases and growth ---------------------------------------------------------------------

def test_phases_are_the_warm_up_then_windows_the_last_one_shorter():
    names = [(p.start_s, p.end_s) for p in split_phases(25 * 60, 5 * 60, 5 * 60)]
    assert names == [(0, 300), (300, 600), (600, 900), (900, 1200), (1200, 1500)]
    assert [(p.start_s, p.end_s) for p in split_phases(720, 300, 300)] \
        == [(0, 300), (300, 600), (600, 720)]
    smoke = split_phases(120, 60, 300)
    assert [p.name for p in smoke] == ["warm-up, 0–1 min", "1–2 min"]
    assert [(p.start_s, p.end_s) for p in split_phases(60, 300, 300)] == [(0, 60)]
    assert split_phases(600, 0, 300)[0] == Phase("0–5 min", 0, 300)
    with pytest.raises(ValueError, match="window_s=0"):
        split_phases(600, 60, 0)


def test_the_least_squares_line_is_numpys():
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(0, 1500, 40))
    y = 1200 + 0.01 * x + rng.normal(0, 5, 40)
    slope, intercept = linear_fit(list(x), list(y))
    np.testing.assert_allclose([slope, intercept], np.polyfit(x, y, 1), rtol=1e-9)
    with pytest.raises(ValueError, match="two different x"):
        linear_fit([5.0, 5.0], [1.0, 2.0])


def test_growth_leaves_the_warm_up_out_and_reports_mb_per_hour():
    warm = [sample(t, 800 + t) for t in range(0, 300, 10)]  # +1 MB/s while warming up
    after = [sample(t, 1200 + 20 * t / 3600 + (3 if t % 20 else -3)) for t in range(300, 1510, 10)]
    growth = growth_between(warm + after, 300)
    assert growth.samples == len(after)
    assert growth.trend_mb_per_hour == pytest.approx(20, abs=0.5)
    assert growth.trend_percent == pytest.approx(20 * (1500 - 300) / 3600 / 1201.7 * 100, rel=0.05)
    assert growth.percent == pytest.approx((after[-1].rss_mb - after[0].rss_mb)
                                           / after[0].rss_mb * 100)
    assert growth_between([sample(0, 900), sample(10, 910)], 300) is None, "nothing after"
    step = growth_between(warm + after, 300, 600)  # up to t = 600 only
    assert step.samples == 31 and step.trend_mb_per_hour == pytest.approx(20, abs=3)


def test_a_phase_row_takes_the_samples_nearest_its_ends():
    samples = [sample(0.0, 900, 0), sample(10.2, 950, 40, 1), sample(20.1, 960, 100, 2, 1),
               sample(30.4, 955, 160, 2, 1)]
    row = phase_row(Phase("10–30 s", 10, 30), samples)
    assert (row.rss_start_mb, row.rss_end_mb) == (950, 955)
    assert row.requests_per_s == pytest.approx(120 / 20.2)
    assert (row.intended, row.unintended) == (1, 1)
    assert math.isnan(phase_row(Phase("x", 0, 1), samples[:1]).requests_per_s)


# --- /metrics and the CSV ------------------------------------------------------------------

def test_metric_values_picks_memory_cache_gc_model_and_codes():
    scraped = {
        ("process_resident_memory_bytes", ()): 1.5 * 2**30,
        ("nmt_cache_entries", ()): 120.0,
        ("nmt_cache_bytes", ()): 3 * 2**20,
        ("nmt_cache_lookups_total", (("result", "hit"),)): 70.0,
        ("nmt_cache_lookups_total", (("result", "miss"),)): 50.0,
        ("python_gc_objects_collected_total", (("generation", "0"),)): 100.0,
        ("python_gc_objects_collected_total", (("generation", "2"),)): 5.0,
        ("nmt_model_info", (("name", "en-fr"), ("version", "9"))): 1.0,
        ("nmt_model_loads_total", (("result", "success"),)): 2.0,
        ("nmt_model_loads_total", (("result", "failure"),)): 0.0,
        ("nmt_requests_total", (("code", "OK"), ("method", "Translate"),
                                ("protocol", "grpc"))): 10.0,
        ("nmt_requests_total", (("code", "OK"), ("method", "Align"), ("protocol", "http"))): 4.0,
        ("nmt_requests_total", (("code", "INVALID_ARGUMENT"), ("method", "Translate"),
                                ("protocol", "http"))): 2.0,
        ("nmt_requests_created", (("code", "OK"), ("method", "Align"),
                                  ("protocol", "http"))): 1.7e9,
    }
    assert metric_values(scraped) == {
        "metrics_rss_mb": 1536.0, "cache_entries": 120.0, "cache_mb": 3.0, "cache_hits": 70.0,
        "cache_misses": 50.0, "gc_collected": 105.0, "model_version": 9.0, "model_loads": 2.0,
        "requests_OK": 14.0, "requests_INVALID_ARGUMENT": 2.0}


def test_the_csv_has_a_column_per_figure_any_sample_has(tmp_path):
    path = tmp_path / "soak.csv"
    write_csv(path, [sample(0, 900, server={"cache_mb": 1.0}),
                     sample(10, 910, 5, server={"cache_mb": 2.0, "requests_OK": 5.0})])
    header, first, second = path.read_text().splitlines()
    assert header == ("t_s,rss_mb,threads,open_files,requests,intended,unintended,"
                      "cache_mb,requests_OK")
    assert first.endswith(",1.0,") and second.endswith(",2.0,5.0")



# --- the HTTP sender, against a fake API ---------------------------------------------------

def test_the_http_sender_reads_codes_from_error_bodies_and_survives_no_answer():
    import asyncio

    from aiohttp import web

    from bench.support.soak_mix import HttpSender, Request
    from serving.testing import free_port

    async def translate(request: web.Request) -> web.Response:
        try:
            body = json.loads(await request.read())
        except ValueError:
            return web.json_response({"code": "INVALID_ARGUMENT",
                                      "message": "the body is not JSON: Expecting"}, status=400)
        if body["sentences"] == ["boom"]:
            return web.Response(text="<html>Bad Gateway</html>", status=502)
        return web.json_response({"translations": []})

    async def run() -> list[Outcome]:
        app = web.Application()
        app.router.add_post("/v1/translate", translate)
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            async with HttpSender(f"http://127.0.0.1:{port}", 10, 2) as sender:
                answers = [await sender.send(Request(kind, (text,)))
                           for kind, text in (("sentence", "Hi."), ("malformed_json", "Hi."),
                                              ("sentence", "boom"))]
        finally:
            await runner.cleanup()
        async with HttpSender(f"http://127.0.0.1:{port}", 10, 2) as sender:  # nobody listens
            answers.append(await sender.send(Request("sentence", ("Hi.",))))
        return answers

    ok, malformed, gateway, refused = asyncio.run(run())
    assert ok == Outcome("OK", 200)
    assert classify("malformed_json", malformed) == INTENDED and malformed.http_status == 400
    assert (gateway.code, gateway.http_status) == ("UNKNOWN", 502)
    assert refused.code.startswith("CLIENT_") and classify("sentence", refused) == UNINTENDED


def test_a_reload_step_shows_as_flat_trends_on_either_side(capsys):
    from bench.soak import print_growth

    samples = [sample(t, 1000 if t < 620 else 1300) for t in range(0, 1210, 10)]
    print_growth(samples, 300, Reload(9, 600.0, 620.0))
    overall, sides = capsys.readouterr().out.splitlines()
    assert "1,000 → 1,300 MB (+30.0%)" in overall and "goal (< 5%) NOT met" in overall
    assert sides == ("Either side of the reload: before +0.0 MB/hour (+0.0%, 31 samples); "
                     "after +0.0 MB/hour (+0.0%, 59 samples).")
