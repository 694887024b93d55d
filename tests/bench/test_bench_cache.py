"""`bench/cache.py` and `bench/support/cache_workloads.py`: the Zipf draws and their repeat
rate, the workloads on tiny files, the clients' loop with a fake sender, /metrics parsing, the table
(no server)."""

import asyncio
import io
import math
import urllib.request

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from bench import cache
from bench.cache import (
    CacheFigures,
    Row,
    Timing,
    cache_figures,
    cache_options,
    latency_ms,
    parse_args,
    run_requests,
    server_values,
    small_cache_mb,
    table_lines,
)
from bench.soak import MB
from bench.support.cache_workloads import (
    DOCUMENTS,
    SENTENCES,
    Request,
    keyed_sentences,
    read_messages,
    rerun_requests,
    ui_requests,
    warmup_requests,
    workload_repeats,
    zipf_draws,
    zipf_probabilities,
)
from serving.metrics import ServingMetrics
from serving.testing import scrape_metrics

POT = r'''# A tiny template.
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\n"

#: ui.cpp
msgid "Save"
msgstr ""

msgctxt "menu"
msgid "Save"
msgstr ""

msgid "Delete one file?"
msgid_plural "Delete %d files?"
msgstr[0] ""
msgstr[1] ""

msgid "Open %s in the editor. It stays open."
msgstr ""

#~ msgid "Gone"
#~ msgstr ""
'''


def strings(n):
    return [f"String number {i}" for i in range(n)]


# --- Zipf draws and the repeat rate --------------------------------------------------------

def test_zipf_probabilities_follow_the_law_and_check_their_arguments():
    p = zipf_probabilities(4, 1.0)
    np.testing.assert_allclose(p, np.array([1, 1 / 2, 1 / 3, 1 / 4]) / (25 / 12))
    np.testing.assert_allclose(zipf_probabilities(5, 0.0), np.full(5, 0.2))
    with pytest.raises(ValueError, match="Received: n=0"):
        zipf_probabilities(0, 1.1)
    with pytest.raises(ValueError, match="Received: s=-1"):
        zipf_probabilities(3, -1)


def test_zipf_draws_are_seeded_and_popularity_is_not_file_order():
    items = strings(50)
    first = zipf_draws(items, 500, 1.1, np.random.default_rng(7))
    assert first == zipf_draws(items, 500, 1.1, np.random.default_rng(7))
    assert first != zipf_draws(items, 500, 1.1, np.random.default_rng(8))
    counts = {item: first.count(item) for item in items}
    assert max(counts, key=counts.get) != items[0]  # rank 1 is a shuffled item (seed 7)


def test_drawn_frequencies_by_rank_match_the_zipf_law():
    items = strings(30)
    drawn = zipf_draws(items, 20_000, 1.1, np.random.default_rng(0))
    _, counts = np.unique(drawn, return_counts=True)
    by_rank = np.sort(counts)[::-1] / len(drawn)
    np.testing.assert_allclose(by_rank, zipf_probabilities(30, 1.1), atol=0.01)


def numpy_repeat_rate(sequence):
    """Reference: the share of positions that are not an item's first occurrence."""
    codes = np.unique(np.asarray(sequence), return_inverse=True)[1]
    first = np.unique(codes, return_index=True)[1]
    return 1 - first.size / codes.size


def expected_repeat_rate(n, draws, s):
    """E[share seen before] = 1 - E[distinct] / draws, E[distinct] = sum_i 1 - (1 - p_i)**draws."""
    p = np.arange(1, n + 1, dtype=np.float64) ** -s
    p /= p.sum()
    return 1 - np.sum(1 - (1 - p) ** draws) / draws


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_ui_sequence_repeats_as_numpy_reckons(seed):
    requests = ui_requests(strings(200), 600, 1.1, 3, seed)
    sequence = [s for r in requests for s in r.texts]
    repeats = workload_repeats(requests)

    assert repeats.sentences == len(sequence)
    assert repeats.distinct == len(set(sequence))
    assert repeats.rate == pytest.approx(numpy_repeat_rate(sequence), abs=1e-12)
    assert repeats.rate == pytest.approx(expected_repeat_rate(200, len(sequence), 1.1), abs=0.02)


def test_ui_requests_hold_one_to_n_distinct_strings_each_and_are_seeded():
    pool = [*strings(10), "String number 3"]  # a repeated msgid is one string
    requests = ui_requests(pool, 300, 1.1, 3, seed=4)
    assert len(requests) == 300
    assert {len(r.texts) for r in requests} == {1, 2, 3}
    assert {r.kind for r in requests} == {SENTENCES}
    assert {t for r in requests for t in r.texts} <= set(pool)
    assert requests == ui_requests(pool, 300, 1.1, 3, seed=4)
    with pytest.raises(ValueError, match="Received: requests=0, per_request=3"):
        ui_requests(pool, 0, 1.1, 3, 0)
    with pytest.raises(ValueError, match="strings is empty"):
        ui_requests([], 5, 1.1, 3, 0)


# --- the workloads on tiny files -----------------------------------------------------------

def test_read_messages_takes_live_msgids_and_plurals_in_order(tmp_path):
    path = tmp_path / "tiny.pot"
    path.write_text(POT, encoding="utf-8")
    assert read_messages(path) == ["Save", "Save", "Delete one file?", "Delete %d files?",
                                   "Open %s in the editor. It stays open."]
    assert read_messages(path, max_chars=20) == ["Save", "Save", "Delete one file?",
                                                 "Delete %d files?"]


def test_keyed_sentences_are_what_the_server_looks_up():
    sentences = Request(SENTENCES, ("Open %s", "Open %d", "%s", "  ", "Save"))
    assert keyed_sentences(sentences) == ["Open", "Open", "Save"]  # placeholders out, blanks out
    document = Request(DOCUMENTS, ("Hello there. How are you?\nBye.", "« Déjà vu », she said.", ""))
    assert keyed_sentences(document) == ["Hello there.", "How are you?", "Bye.",
                                         "« Déjà vu », she said."]
    with pytest.raises(ValueError, match="Received: kind='html'"):
        Request("html", ("<p>Hi</p>",))


def test_a_rerun_sends_every_file_again_and_repeats_half_its_sentences():
    files = [["One. Two.", "Three.", "Four."], ["Five."]]
    requests = rerun_requests(files, passes=2, per_request=2)
    assert [r.texts for r in requests] == [("One. Two.", "Three."), ("Four.",), ("Five.",)] * 2
    assert {r.kind for r in requests} == {DOCUMENTS}
    repeats = workload_repeats(requests)
    assert (repeats.sentences, repeats.repeated, repeats.distinct) == (10, 5, 5)
    assert repeats.rate == 0.5
    with pytest.raises(ValueError, match="Received: passes=0"):
        rerun_requests(files, 0, 2)


def test_the_warm_up_shares_no_sentence_with_the_workload_nor_repeats_itself():
    pool = ["Save", "A cat.", "A dog. Save", "A cat.", "Hi. Hi.", "Long. " * 200, "A bird.",
            "A fish.", "A cow."]
    warmup = warmup_requests(pool, count=2, per_request=2, kind=DOCUMENTS, avoid={"Save"})
    assert [r.texts for r in warmup] == [("A cat.", "A bird."), ("A fish.", "A cow.")]
    as_sentences = warmup_requests(pool, 10, 3, SENTENCES, {"Save"})  # "Hi. Hi.": one
    assert [r.texts for r in as_sentences] == [("A cat.", "A dog. Save", "Hi. Hi."),
                                               ("A bird.", "A fish.", "A cow.")]


def data_dir_with(tmp_path, names):
    files = tmp_path / "files-enfr"
    files.mkdir()
    for name in names:
        (files / name).write_text(POT, encoding="utf-8")
    return tmp_path


def test_build_workload_from_the_files_or_says_why_it_skips(tmp_path):
    data = data_dir_with(tmp_path, ["a.pot", "godot-extractable.pot"])
    args = parse_args(["--data", str(data), "--requests", "40", "--po-files", "a.pot"])
    ui = cache.build_workload("ui", args)
    assert len(ui.requests) == 40 and ui.repeats.sentences > 40
    assert "from the 4 msgids of godot-extractable.pot" in ui.description
    rerun = cache.build_workload("po-rerun", args)
    assert len(rerun.requests) == 4 and rerun.repeats.rate > 0.5  # "Save" twice in the file
    avoid = {s for r in rerun.requests for s in keyed_sentences(r)}
    assert rerun.warmup and not avoid.intersection(
        s for r in rerun.warmup for s in keyed_sentences(r))

    args = parse_args(["--data", str(tmp_path / "none"), "--po-files", "a.pot"])
    assert cache.build_workload("ui", args).startswith("no ")
    assert "pass --po-files or --data" in cache.build_workload("po-rerun", args)


# --- the clients' loop ---------------------------------------------------------------------

def test_run_requests_sends_each_request_once_with_at_most_n_in_flight():
    requests = [Request(SENTENCES, (f"s{i}",)) for i in range(20)]
    sent, in_flight, most = [], 0, 0

    async def send(request):
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.001)
        in_flight -= 1
        sent.append(request.texts[0])
        if request.texts[0] == "s5":
            raise RuntimeError("refused")

    timing = asyncio.run(run_requests(requests, 3, send))
    assert sorted(sent) == sorted(f"s{i}" for i in range(20))
    assert most == 3
    assert (len(timing.latencies_s), timing.errors) == (19, 1)
    assert timing.examples == ("RuntimeError: refused",)
    assert timing.wall_s >= max(timing.latencies_s) > 0
    with pytest.raises(ValueError, match="Received: clients=0"):
        asyncio.run(run_requests(requests, 0, send))


# --- /metrics ------------------------------------------------------------------------------

def serving_metrics():
    metrics = ServingMetrics(CollectorRegistry())
    metrics.model.info({"name": "en-fr", "version": "4"})  # as serving/model_store.py sets it
    return metrics


def scraped_from(metrics, monkeypatch):
    """`serving.testing.scrape_metrics` reading `metrics`' exposition instead of a port."""
    text = generate_latest(metrics.registry)
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout: io.BytesIO(text))
    return server_values(scrape_metrics(1))


def test_server_values_and_the_run_figures_come_from_the_servers_metrics(monkeypatch):
    metrics = serving_metrics()
    metrics.cache_lookups.labels(result="miss").inc(2)
    metrics.sentences.inc(2)
    metrics.cache_bytes.set(MB)
    before = scraped_from(metrics, monkeypatch)
    metrics.cache_lookups.labels(result="hit").inc(6)
    metrics.cache_lookups.labels(result="miss").inc(2)
    metrics.cache_evictions.inc(1)
    metrics.cache_entries.set(3)
    metrics.cache_bytes.set(3 * MB)
    metrics.sentences.inc(2)
    after = scraped_from(metrics, monkeypatch)

    assert (after["cache_hits"], after["cache_misses"], after["model_sentences"]) == (6, 4, 4)
    figures = cache_figures(before, after)
    assert figures == CacheFigures(hit_rate=0.75, model_sentences=2, evictions=1, entries=3,
                                   cache_mb=3.0, workload_mb=2.0)


def test_a_server_without_cache_lookups_has_no_hit_rate(monkeypatch):
    metrics = serving_metrics()
    metrics.sentences.inc(5)
    after = scraped_from(metrics, monkeypatch)
    figures = cache_figures({}, after)
    assert math.isnan(figures.hit_rate)
    assert (figures.model_sentences, figures.entries, figures.evictions) == (5, 0, 0)


# --- settings, percentiles and the table ---------------------------------------------------

def test_cache_settings_and_the_small_cache_size():
    assert cache_options("off", None) == ["--no-cache"]
    assert cache_options("on", None) == []
    assert cache_options("small", 1.049) == ["--cache-mb", "1.049"]
    with pytest.raises(ValueError, match="Received: cache='small', small_mb=None"):
        cache_options("small", None)
    assert small_cache_mb(4.0) == 1.049  # a quarter of 4 MiB, in --cache-mb's 10**6 bytes
    assert small_cache_mb(1e-6) == 0.001
    with pytest.raises(ValueError, match="pass --small-cache-mb"):
        small_cache_mb(0.0)


def test_latency_percentiles_in_milliseconds():
    latencies = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    ms = latency_ms(latencies)
    assert ms == pytest.approx({"p50": 50.5, "p95": 95.05, "p99": 99.01})
    assert all(math.isnan(v) for v in latency_ms([]).values())


def row(cache_name, wall_s, latency_s, hit_rate, model_sentences, rss_end, options=""):
    timing = Timing((latency_s,) * 10, 0, (), wall_s)
    figures = CacheFigures(hit_rate, model_sentences, 0, 10, 0.5, 0.5)
    return Row(cache_name, options, 100, 250, timing, figures, 900.0, rss_end)


def test_the_table_has_a_line_per_setting_and_the_ratio_to_off():
    rows = [row("off", 10.0, 0.2, math.nan, 250, 1000.0, "--no-cache"),
            row("on", 4.0, 0.05, 0.9, 25, 1012.0)]
    lines = table_lines(rows)

    assert len(lines) == 5
    assert {line.count("|") for line in lines} == {14}  # 13 columns everywhere
    assert lines[2].startswith("| off (`--no-cache`) | 10.0 | 25.0 | 200.0 | 200.0 | 200.0 | – |")
    assert lines[3].startswith("| on (defaults) | 25.0 | 62.5 | 50.0 | 50.0 | 50.0 | 90.0% | 25 |")
    assert lines[3].endswith("| 900 → 1,012 | 0 |")
    assert lines[4] == ("| on ÷ off | ×2.50 | ×2.50 | ×0.25 | ×0.25 | ×0.25 | | ×0.10 | | | | "
                        "+12 at the end | |")


def test_the_table_without_an_off_run_has_no_ratio():
    assert len(table_lines([row("on", 4.0, 0.05, 0.9, 25, 1012.0)])) == 3


def test_small_is_sized_from_the_on_run(monkeypatch):
    seen = []

    def fake_measure(args, workload, cache_name, small_mb, log_path):
        seen.append((cache_name, small_mb))  # each run's cache took 4 MiB of the workload
        return Row(cache_name, "", 1, 1, Timing((0.01,), 0, (), 1.0),
                   CacheFigures(0.5, 1, 0, 1, 4.0, 4.0), 900.0, 900.0)

    monkeypatch.setattr(cache, "measure", fake_measure)
    args = parse_args(["--caches", "small", "on", "off"])
    rows = cache.run_workload(args, None, None)
    assert [r.cache for r in rows] == ["off", "on", "small"]
    assert seen == [("off", None), ("on", None), ("small", 1.049)]


def test_arguments_that_cannot_work_are_refused(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--caches", "off", "small"])
    assert "add `on` to --caches or pass --small-cache-mb" in capsys.readouterr().err
    assert parse_args(["--caches", "small", "--small-cache-mb", "0.5"]).small_cache_mb == 0.5
    with pytest.raises(SystemExit):
        parse_args(["--clients", "0"])


def test_main_without_a_model_starts_nothing(tmp_path, capsys):
    assert cache.main(["--model", str(tmp_path / "missing")]) == 2
    assert "no model at" in capsys.readouterr().err
