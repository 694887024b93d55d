"""Soak test: `nmt serve` under a mixed load for a long time, its memory sampled.

Copies the model's highest version into a temporary base directory, starts
`nmt serve` on it (batching on, the server's own cache and limits, a short
`--poll-interval`) and runs `--clients` clients for `--minutes`, half over
gRPC (`nmt_api.client.AsyncTranslationClient`), half over HTTP/JSON
(aiohttp). Each draws its next request from a weighted mix
(`bench/support/soak_mix.py`): single sentences, a few UI strings again and again
(the translation cache), batches, HTML documents, Align calls, n-best lists
(beam 5, 3 best), streams (gRPC), and requests that must fail: a sentence over
`--max-chars`, a beam of 0, malformed JSON (HTTP). Half-way through it copies
the version to the next number; the server must load it and go on answering.

Every `--interval` seconds it samples the server process: resident memory
(psutil where installed, else /proc), threads, open files, and from /metrics
the cache (`nmt_cache_entries`, `nmt_cache_bytes`), the garbage collector and
the calls answered by code. It prints, with the machine, per phase (the
warm-up, then windows of `--window-minutes`) the memory at start and end,
requests/s and errors, and the growth after the warm-up (end against start,
and a least-squares trend in MB/hour); it exits 1 on any error besides the
intended ones, or if the reload does not take.

    .venv/bin/python bench/soak.py                      # models/en-fr, 25 min, 16 clients
    .venv/bin/python bench/soak.py --minutes 2 --warmup-minutes 1 --interval 5   # smoke
    .venv/bin/python bench/soak.py --csv soak.csv --server-args '--workers 2'

Not visible from outside the server, so not sampled: the Python heap (objects
alive; /metrics counts the objects the collector freed, not those alive;
tracemalloc or `gc.get_objects()` must run inside the process) and
tf.function trace counts. A growth found here is located in-process.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import dataclasses
import math
import os
import random
import shutil
import sys
import tempfile
import time
import urllib.error
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run from a checkout without installing

from bench.support.inputs import TRAFFIC_MIX, machine  # noqa: E402
from bench.support.memory import rss_mb  # noqa: E402
from bench.support.server_process import start_server  # noqa: E402
from bench.support.soak_mix import (  # noqa: E402
    INTENDED,
    MIX,
    PROTOCOLS,
    UNINTENDED,
    GrpcSender,
    HttpSender,
    Tally,
    Texts,
    build_request,
    load_texts,
    mix_weights,
)
from nmt.constants import DEFAULT_MAX_CHARS  # noqa: E402
from nmt.options import DEFAULT_MODEL_DIR  # noqa: E402
from nmt.paths import data_dir, version_dirs  # noqa: E402
from serving.testing import free_port, scrape_metrics  # noqa: E402

try:
    import psutil
except ImportError:  # not a dependency of the project (ipython brings it in dev)
    psutil = None
_GONE = (OSError, StopIteration) + ((psutil.Error,) if psutil else ())  # the process exited

MULTI30K = data_dir() / "out-of-domain" / "multi30k-test2017-flickr.en"
GOAL_GROWTH_PERCENT = 5.0  # the goal: under 5% growth after the warm-up
MB = 2**20


# --- samples -------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Sample:
    """The server at one moment, and the clients' counts up to it.

    Attributes:
        t_s: seconds since the load started.
        rss_mb: resident memory of the server process (MiB).
        threads: its threads.
        open_files: its open file descriptors.
        requests / intended / unintended: answers the clients got so far, and
            of those the intended and unintended errors.
        server: from /metrics (`metric_values`); empty if it did not answer.
    """

    t_s: float
    rss_mb: float
    threads: int
    open_files: int
    requests: int
    intended: int
    unintended: int
    server: Mapping[str, float]


def process_stats(pid: int) -> tuple[float, int, int]:
    """`(resident MiB, threads, open file descriptors)` of `pid`; NaN and -1 once it is gone."""
    try:
        if psutil is not None:
            process = psutil.Process(pid)
            with process.oneshot():
                return process.memory_info().rss / MB, process.num_threads(), process.num_fds()
        status = Path(f"/proc/{pid}/status").read_text()
        threads = next(int(line.split()[1]) for line in status.splitlines()
                       if line.startswith("Threads:"))
        return rss_mb(pid), threads, len(os.listdir(f"/proc/{pid}/fd"))
    except _GONE:
        return math.nan, -1, -1


CACHE_RESULTS = {"hit": "cache_hits", "miss": "cache_misses"}  # nmt_cache_lookups_total{result}


def metric_values(scraped: Mapping[tuple[str, tuple], float]) -> dict[str, float]:
    """The figures the soak follows, from `serving.testing.scrape_metrics`' answer.

    Returns:
        `metrics_rss_mb` (the process collector's view of the same memory),
        `cache_entries`, `cache_mb`, `cache_hits`, `cache_misses`,
        `cache_evictions`, `gc_collected`, `gc_uncollectable`,
        `gc_collections` (summed over generations), `model_version`,
        `model_loads`, `queue_depth`, and `requests_<CODE>` per status code
        (`nmt_requests_total` summed over methods and protocols); the ones
        /metrics lacks are left out.
    """
    values: dict[str, float] = {}
    simple = {"process_resident_memory_bytes": ("metrics_rss_mb", 1 / MB),
              "nmt_cache_entries": ("cache_entries", 1), "nmt_cache_bytes": ("cache_mb", 1 / MB),
              "nmt_cache_evictions_total": ("cache_evictions", 1),
              "nmt_queue_depth": ("queue_depth", 1)}
    summed = {"python_gc_objects_collected_total": "gc_collected",
              "python_gc_objects_uncollectable_total": "gc_uncollectable",
              "python_gc_collections_total": "gc_collections"}
    for (name, labels), value in scraped.items():
        label = dict(labels)
        if name in simple:
            key, scale = simple[name]
            values[key] = value * scale
        elif name in summed:
            values[summed[name]] = values.get(summed[name], 0.0) + value
        elif name == "nmt_cache_lookups_total":
            if label.get("result") in CACHE_RESULTS:
                values[CACHE_RESULTS[label["result"]]] = value
        elif name == "nmt_model_info":
            values["model_version"] = float(label["version"])
        elif name == "nmt_model_loads_total" and label.get("result") == "success":
            values["model_loads"] = value
        elif name == "nmt_requests_total":
            key = f"requests_{label['code']}"
            values[key] = values.get(key, 0.0) + value
    return values


def scrape(metrics_port: int) -> dict[str, float]:
    """`metric_values` of the server's /metrics; {} if it does not answer."""
    try:
        return metric_values(scrape_metrics(metrics_port))
    except (OSError, urllib.error.URLError, ValueError):
        return {}


# --- phases and growth ---------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Phase:
    name: str
    start_s: float
    end_s: float


def split_phases(duration_s: float, warmup_s: float, window_s: float) -> list[Phase]:
    """The warm-up `[0, warmup_s)`, then windows of `window_s` up to `duration_s` (the
    last one shorter if they do not divide it)."""
    if not (duration_s > 0 and warmup_s >= 0 and window_s > 0):
        raise ValueError("duration_s and window_s must be > 0 and warmup_s >= 0. Received: "
                         f"duration_s={duration_s!r}, warmup_s={warmup_s!r}, "
                         f"window_s={window_s!r}")
    warmup_s = min(warmup_s, duration_s)
    phases = [Phase(f"warm-up, 0–{warmup_s / 60:g} min", 0.0, warmup_s)] if warmup_s else []
    start = warmup_s
    while duration_s - start > 1e-6:
        end = min(start + window_s, duration_s)
        phases.append(Phase(f"{start / 60:g}–{end / 60:g} min", start, end))
        start = end
    return phases


def nearest(samples: Sequence[Sample], t_s: float) -> Sample:
    """The sample taken closest to `t_s` (the earlier one on a tie)."""
    return min(samples, key=lambda s: (abs(s.t_s - t_s), s.t_s))


@dataclasses.dataclass(frozen=True)
class PhaseRow:
    phase: Phase
    rss_start_mb: float
    rss_end_mb: float
    requests_per_s: float
    intended: int
    unintended: int


def phase_row(phase: Phase, samples: Sequence[Sample]) -> PhaseRow:
    """The phase between the samples nearest its start and its end (the last phase ends
    at the final sample, taken once the clients have stopped)."""
    first, last = nearest(samples, phase.start_s), nearest(samples, phase.end_s)
    elapsed = last.t_s - first.t_s
    return PhaseRow(phase, first.rss_mb, last.rss_mb,
                    (last.requests - first.requests) / elapsed if elapsed > 0 else math.nan,
                    last.intended - first.intended, last.unintended - first.unintended)


def linear_fit(x: Sequence[float], y: Sequence[float]) -> tuple[float, float]:
    """`(slope, intercept)` of the least-squares line through the points `(x, y)`."""
    if len(x) != len(y):
        raise ValueError(f"x and y must pair up. Received: {len(x)} x and {len(y)} y")
    n = len(x)
    mean_x, mean_y = (sum(x) / n, sum(y) / n) if n else (0.0, 0.0)
    sxx = sum((xi - mean_x) ** 2 for xi in x)
    if n < 2 or sxx == 0:
        raise ValueError(f"a line needs points at two different x at least. Received: x={x!r}")
    slope = sum((xi - mean_x) * (yi - mean_y) for xi, yi in zip(x, y, strict=True)) / sxx
    return slope, mean_y - slope * mean_x


@dataclasses.dataclass(frozen=True)
class Growth:
    """Resident memory after the warm-up.

    Attributes:
        start_mb / end_mb: measured at the first and last sample.
        trend_mb_per_hour: least-squares slope over every sample.
        trend_percent: the fitted line's rise from first to last sample, as a
            percentage of its value at the first (less noisy than the ends).
        samples: how many samples were fitted.
    """

    start_mb: float
    end_mb: float
    trend_mb_per_hour: float
    trend_percent: float
    samples: int

    @property
    def percent(self) -> float:
        return (self.end_mb - self.start_mb) / self.start_mb * 100


def growth_between(samples: Sequence[Sample], from_s: float, to_s: float = math.inf
                   ) -> Growth | None:
    """The growth from the sample nearest `from_s` to the last one at or before `to_s`;
    None with fewer than two samples there."""
    if not samples:
        return None
    start = nearest(samples, from_s).t_s
    inside = [s for s in samples if start <= s.t_s <= to_s and not math.isnan(s.rss_mb)]
    times = [s.t_s for s in inside]
    if len(set(times)) < 2:
        return None
    slope, intercept = linear_fit(times, [s.rss_mb for s in inside])
    fitted_start, fitted_end = intercept + slope * times[0], intercept + slope * times[-1]
    return Growth(inside[0].rss_mb, inside[-1].rss_mb, slope * 3600,
                  (fitted_end - fitted_start) / fitted_start * 100, len(inside))


# --- the run -------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Reload:
    """The mid-run model reload: `version` copied in at `copied_s`, serving from
    `served_s` (seconds since the load started; None: it never served)."""

    version: int
    copied_s: float
    served_s: float | None


def copy_version(base: Path, version: int, new: int) -> None:
    """Copies `base/version` to `base/new`, under another name first: the server never
    sees a half-copied version."""
    partial = base / f".{new}.partial"
    shutil.copytree(base / str(version), partial)
    partial.rename(base / str(new))


async def reload_midway(base: Path, version: int, at_s: float, start: float, end: float,
                        metrics_port: int) -> Reload:
    """At `at_s`, copies `version` to `version + 1`, then polls /metrics every second
    until the server reports it (or the run ends)."""
    loop = asyncio.get_running_loop()
    await asyncio.sleep(max(0.0, start + at_s - loop.time()))
    new = version + 1
    await asyncio.to_thread(copy_version, base, version, new)
    copied = loop.time() - start
    while loop.time() < end:
        served = await asyncio.to_thread(scrape, metrics_port)
        if served.get("model_version") == new:
            return Reload(new, copied, loop.time() - start)
        await asyncio.sleep(1.0)
    return Reload(new, copied, None)


async def client_loop(index: int, protocol: str, sender, texts: Texts, max_chars: int,
                      tally: Tally, end: float) -> None:
    """One client: requests drawn from the mix of `protocol`, one at a time, until `end`."""
    rng = random.Random(index)
    weights = mix_weights(protocol)
    kinds, shares = list(weights), list(weights.values())
    loop = asyncio.get_running_loop()
    while loop.time() < end:
        kind = rng.choices(kinds, shares)[0]
        outcome = await sender.send(build_request(kind, rng, texts, max_chars))
        tally.add(kind, protocol, outcome)


async def take_sample(pid: int, metrics_port: int, tally: Tally, start: float) -> Sample:
    loop = asyncio.get_running_loop()
    t_s = loop.time() - start
    counts = tally.total(), tally.total(INTENDED), tally.total(UNINTENDED)  # on the loop
    rss, threads, files = await asyncio.to_thread(process_stats, pid)
    server = await asyncio.to_thread(scrape, metrics_port)
    return Sample(t_s, rss, threads, files, *counts, server)


@dataclasses.dataclass
class Run:
    samples: list[Sample]
    tally: Tally
    reload: Reload
    server_exit: int | None = None  # the server's exit code if it stopped during the run


async def soak(args, pid: int, target: str, url: str, metrics_port: int, base: Path,
               version: int, texts: Texts) -> Run:
    """The clients, the reload and the sampling, for `args.minutes`."""
    loop = asyncio.get_running_loop()
    duration = args.minutes * 60
    start = loop.time()
    end = start + duration
    tally, samples = Tally(), []
    async with GrpcSender(target, args.timeout) as grpc_sender, \
            HttpSender(url, args.timeout, args.clients) as http_sender:
        senders = dict(zip(PROTOCOLS, (grpc_sender, http_sender), strict=True))
        clients = [asyncio.create_task(client_loop(
            i, PROTOCOLS[i % 2], senders[PROTOCOLS[i % 2]], texts, args.max_chars, tally, end))
            for i in range(args.clients)]
        reload = asyncio.create_task(
            reload_midway(base, version, duration / 2, start, end, metrics_port))
        for k in range(math.ceil(duration / args.interval)):
            await asyncio.sleep(max(0.0, start + k * args.interval - loop.time()))
            samples.append(await take_sample(pid, metrics_port, tally, start))
        await asyncio.gather(*clients)
        samples.append(await take_sample(pid, metrics_port, tally, start))
        return Run(samples, tally, await reload)


# --- the report ----------------------------------------------------------------------------

def print_report(run: Run, phases: Sequence[Phase], warmup_s: float) -> list[str]:
    """Prints the tables; returns what went wrong (empty: nothing)."""
    samples, tally = run.samples, run.tally
    print("| phase | RSS start MB | RSS end MB | requests/s | intended errors | "
          "unintended errors |")
    print("|---|---:|---:|---:|---:|---:|")
    for row in (phase_row(p, samples) for p in phases):
        print(f"| {row.phase.name} | {row.rss_start_mb:,.0f} | {row.rss_end_mb:,.0f} | "
              f"{row.requests_per_s:.1f} | {row.intended} | {row.unintended} |")
    print()
    reload = run.reload
    print(f"Model reload: version {reload.version} copied in at {reload.copied_s:.0f} s, "
          + (f"serving at {reload.served_s:.0f} s." if reload.served_s is not None
             else "NEVER SERVED."))
    print_growth(samples, warmup_s, reload)
    print_server_side(samples)
    print()
    print_kinds(tally)
    return problems(run)


def print_growth(samples: Sequence[Sample], warmup_s: float, reload: Reload) -> None:
    """The growth after the warm-up against the goal, and on each side of the reload (a
    second model loaded is a step, not a leak: the trends apart tell them apart)."""
    growth = growth_between(samples, warmup_s)
    if growth is None:
        print("Growth after the warm-up: too few samples after it (lengthen --minutes).")
        return
    verdict = "met" if growth.trend_percent < GOAL_GROWTH_PERCENT else "NOT met"
    print(f"Growth after the warm-up: {growth.start_mb:,.0f} → {growth.end_mb:,.0f} MB "
          f"({growth.percent:+.1f}%); trend {growth.trend_mb_per_hour:+,.1f} MB/hour "
          f"(least squares over {growth.samples} samples), {growth.trend_percent:+.1f}% "
          f"over the span: goal (< {GOAL_GROWTH_PERCENT:g}%) {verdict}.")
    if reload.served_s is None or reload.copied_s <= warmup_s:
        return
    before = growth_between(samples, warmup_s, reload.copied_s)
    after = growth_between(samples, reload.served_s)
    print("Either side of the reload: "
          + "; ".join(f"{name} {g.trend_mb_per_hour:+,.1f} MB/hour ({g.trend_percent:+.1f}%, "
                      f"{g.samples} samples)" if g else f"{name}: too few samples"
                      for name, g in (("before", before), ("after", after))) + ".")


def print_server_side(samples: Sequence[Sample]) -> None:
    first, last = samples[0], samples[-1]
    end = last.server
    print(f"Threads {first.threads} → {last.threads}, open files {first.open_files} → "
          f"{last.open_files}.")
    if not end:
        print("/metrics did not answer at the end.")
        return
    print(f"Cache at the end: {end.get('cache_entries', 0):,.0f} entries, "
          f"{end.get('cache_mb', 0):.1f} MB (most: "
          f"{max(s.server.get('cache_mb', 0) for s in samples):.1f} MB); "
          f"{end.get('cache_hits', 0):,.0f} hits, {end.get('cache_misses', 0):,.0f} misses, "
          f"{end.get('cache_evictions', 0):,.0f} evictions.")
    print(f"Python's collector: {end.get('gc_collected', 0):,.0f} objects freed, "
          f"{end.get('gc_uncollectable', 0):,.0f} uncollectable, "
          f"{end.get('gc_collections', 0):,.0f} collections (objects alive: not visible from "
          "outside).")
    codes = {k.removeprefix("requests_"): v for k, v in sorted(end.items())
             if k.startswith("requests_")}
    print("Server's nmt_requests_total by code: "
          + ", ".join(f"{code} {n:,.0f}" for code, n in codes.items()) + ".")


def print_kinds(tally: Tally) -> None:
    shares = {p: mix_weights(p) for p in PROTOCOLS}
    print("| kind | share gRPC / HTTP | gRPC | HTTP | ok | intended errors | unintended |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in tally.by_kind(tuple(MIX)):
        share = " / ".join(f"{shares[p].get(row['kind'], 0):.0%}" for p in PROTOCOLS)
        print(f"| {row['kind']} | {share} | {row['grpc']:,} | {row['http']:,} | {row['ok']:,} | "
              f"{row[INTENDED]:,} | {row[UNINTENDED]:,} |")


def problems(run: Run) -> list[str]:
    """What makes the soak fail: unintended answers, a reload that did not take."""
    found = [f"{kind} over {protocol}: {o.code}"
             + (f" (HTTP {o.http_status})" if o.http_status else "") + f": {o.details[:160]}"
             for kind, protocol, o in run.tally.examples]
    missing = run.tally.total(UNINTENDED) - len(found)
    if missing > 0:
        found.append(f"... and {missing} more unintended answers")
    if run.server_exit is not None:
        found.append(f"the server exited during the run (code {run.server_exit})")
    if run.reload.served_s is None:
        found.append(f"version {run.reload.version} (copied in at {run.reload.copied_s:.0f} s) "
                     "never served")
    return found


def write_csv(path: Path, samples: Sequence[Sample]) -> None:
    """One row per sample: the `Sample` fields, then the /metrics figures by name."""
    fixed = [f.name for f in dataclasses.fields(Sample) if f.name != "server"]
    extra = sorted({key for s in samples for key in s.server})
    with open(path, "w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(fixed + extra)
        for s in samples:
            values = [getattr(s, name) for name in fixed] + [s.server.get(key, "") for key in extra]
            writer.writerow([round(v, 3) if isinstance(v, float) else v for v in values])


# --- main ----------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR,
                        help="base directory of <version>/ SavedModels (its highest is copied)")
    parser.add_argument("--minutes", type=float, default=25.0, help="length of the load")
    parser.add_argument("--warmup-minutes", type=float, default=5.0,
                        help="first phase, left out of the growth")
    parser.add_argument("--window-minutes", type=float, default=5.0,
                        help="phases after the warm-up")
    parser.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    parser.add_argument("--clients", type=int, default=16,
                        help="concurrent clients, alternately gRPC and HTTP")
    parser.add_argument("--sentences", type=Path, default=TRAFFIC_MIX,
                        help="one sentence a line (default: the traffic mix; a built-in list "
                             "when it is absent)")
    parser.add_argument("--pairs", type=Path, default=MULTI30K,
                        help="English file of Align pairs, its French beside it as .fr "
                             "(default: Multi30k test 2017; a built-in list when absent)")
    parser.add_argument("--max-chars", type=int, default=DEFAULT_MAX_CHARS,
                        help="the server's characters per sentence (passed to it); oversized "
                             "requests go over it")
    parser.add_argument("--poll-interval", type=float, default=2.0,
                        help="the server's seconds between checks for new versions")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds a request may take before it counts as an error")
    parser.add_argument("--csv", type=Path, help="write the samples there")
    parser.add_argument("--server-args", default="",
                        help="more `nmt serve` options, e.g. '--workers 2 --cache-mb 16'")
    args = parser.parse_args(argv)
    for name in ("minutes", "interval", "window_minutes", "poll_interval", "timeout"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be > 0. "
                         f"Received: {getattr(args, name)!r}")
    if args.warmup_minutes < 0 or args.clients < 1:
        parser.error("--warmup-minutes must be >= 0 and --clients >= 1. Received: "
                     f"{args.warmup_minutes!r}, {args.clients!r}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    versions = version_dirs(args.model)
    if not versions:
        print(f"no model at {args.model}; export one or pass --model", file=sys.stderr)
        return 2
    version = max(versions)
    texts, source = load_texts(args.sentences, args.pairs, args.max_chars)
    log_path = Path(tempfile.mkdtemp(prefix="nmt-soak-")) / "server.log"
    phases = split_phases(args.minutes * 60, args.warmup_minutes * 60, args.window_minutes * 60)
    print(f"Machine: {machine()}")
    print(f"Model: {args.model} version {version}, copied to version {version + 1} half-way; "
          f"{args.clients} clients ({(args.clients + 1) // 2} gRPC, {args.clients // 2} HTTP) "
          f"for {args.minutes:g} min, warm-up {args.warmup_minutes:g} min, a sample every "
          f"{args.interval:g} s; {source}; server log: {log_path}"
          + (f"; server options: {args.server_args}" if args.server_args else ""))
    print(f"Memory: resident set of the server process ({'psutil' if psutil else '/proc'}). "
          "The Python heap and tf.function traces are not visible from outside the server.")
    print()
    with tempfile.TemporaryDirectory(prefix="nmt-soak-models-") as tmp:
        base = Path(tmp)
        shutil.copytree(versions[version], base / str(version))
        run = run_server_and_load(args, base, version, texts, log_path)
    found = print_report(run, phases, args.warmup_minutes * 60)
    if args.csv:
        write_csv(args.csv, run.samples)
        print(f"\nSamples: {args.csv}")
    print(f"\nUnintended errors: {run.tally.total(UNINTENDED)}")
    for problem in found:
        print(f"  {problem}")
    return 1 if found else 0


def run_server_and_load(args, base: Path, version: int, texts: Texts, log_path: Path) -> Run:
    metrics_port = free_port()
    extra = ["--max-chars", str(args.max_chars), *args.server_args.split()]
    process, target, url = start_server(base, True, log_path, extra, metrics_port=metrics_port,
                                        poll_interval=args.poll_interval)
    try:
        run = asyncio.run(soak(args, process.pid, target, url, metrics_port, base, version,
                               texts))
        run.server_exit = process.poll()
        return run
    finally:
        process.terminate()
        process.wait(30)


if __name__ == "__main__":
    started = time.monotonic()
    code = main()
    print(f"({time.monotonic() - started:.0f} s)")
    sys.exit(code)
