"""`nmt serve`: the translation service, gRPC and HTTP/JSON (registered by `nmt_cli`)."""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

from nmt.options import (
    DEFAULT_MODEL_DIR,
    add_precision_option,
    add_thread_options,
    apply_thread_options,
)
from nmt_api.protos import DEFAULT_GRPC_PORT

DEFAULT_TOKEN_ENV = "NMT_AUTH_TOKEN"


def add_serve_parser(sub) -> None:
    """Registers `serve` on the `nmt` command's subparsers."""
    from serving.batching import BatchingConfig
    from serving.cache import CacheConfig
    from serving.server import DEFAULT_HTTP_PORT, DEFAULT_METRICS_PORT
    from serving.validation import Limits

    batching, cache, limits = BatchingConfig(), CacheConfig(), Limits()
    p = sub.add_parser("serve", help="run the translation service (gRPC, HTTP/JSON and a page)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", type=Path, default=DEFAULT_MODEL_DIR,
                   help="base directory of <version>/ SavedModels (the highest version serves)")
    p.add_argument("--host", default="0.0.0.0", help="address to listen on")
    p.add_argument("--port", type=int, default=DEFAULT_GRPC_PORT, help="gRPC port")
    p.add_argument("--http-port", type=int, default=DEFAULT_HTTP_PORT,
                   help="HTTP/JSON API (/v1/...), probes (/healthz, /readyz) and the page (/); "
                        "0 disables it")
    p.add_argument("--http-host", help="address for HTTP if not --host, e.g. 127.0.0.1 behind a "
                                       "reverse proxy that terminates TLS")
    p.add_argument("--metrics-port", type=int, default=DEFAULT_METRICS_PORT,
                   help="Prometheus /metrics port; 0 disables it")
    add_precision_option(p)
    g = p.add_argument_group("batching")
    g.add_argument("--max-batch-size", type=int, default=batching.max_batch_size,
                   help="sentences per model call")
    g.add_argument("--max-wait-ms", type=float, default=batching.max_wait_ms,
                   help="longest a sentence waits for others to share its batch")
    g.add_argument("--no-batching", action="store_true",
                   help="translate each request on its own (no sharing between requests)")
    g.add_argument("--max-queue", type=int, default=batching.max_queue,
                   help="sentences allowed to wait; more are refused (RESOURCE_EXHAUSTED)")
    g.add_argument("--workers", type=int, default=batching.workers,
                   help="model calls running at once")
    g = p.add_argument_group("translation cache")
    g.add_argument("--cache-entries", type=int, default=cache.max_entries,
                   help="sentence translations kept for repeated sentences (per model version, "
                        "least recently used evicted); 0 turns the cache off")
    g.add_argument("--cache-mb", type=float, default=cache.max_mb,
                   help="estimated megabytes the cached translations may hold; 0 turns the "
                        "cache off")
    g.add_argument("--no-cache", action="store_true", help="translate every sentence anew")
    g = p.add_argument_group("limits")
    g.add_argument("--max-sentences", type=int, default=limits.max_sentences,
                   help="sentences per request")
    g.add_argument("--max-chars", type=int, default=limits.max_chars,
                   help="characters per sentence")
    g.add_argument("--max-message-bytes", type=int, default=limits.max_message_bytes,
                   help="size of one request message (gRPC) or body (HTTP)")
    g.add_argument("--max-beam-size", type=int, default=limits.max_beam_size,
                   help="largest beam_size a request may ask for")
    g.add_argument("--max-glossary-entries", type=int, default=limits.max_glossary_entries,
                   help="inline glossary entries per request (larger glossaries: --glossaries)")
    g.add_argument("--max-file-bytes", type=int, default=limits.max_file_bytes,
                   help="size of one file to translate whole (TranslateFile, POST "
                        "/v1/files:translate); larger: RESOURCE_EXHAUSTED, HTTP 413")
    g.add_argument("--max-file-sentences", type=int, default=limits.max_file_sentences,
                   help="distinct sentences one file may send to the model; more: "
                        "RESOURCE_EXHAUSTED, HTTP 413, before any is translated")
    g = p.add_argument_group("glossaries")
    g.add_argument("--glossaries", type=Path, metavar="DIR",
                   help="directory of named glossaries, NAME.tsv (source<TAB>target a line) or "
                        "NAME.csv, chosen by name in requests (glossary_id) and reloaded when "
                        "they change (every --poll-interval); see docs/glossaries.md")
    g = p.add_argument_group("operations")
    g.add_argument("--poll-interval", type=float, default=10.0,
                   help="seconds between checks for new model versions and changed glossaries; "
                        "0 disables them")
    g.add_argument("--grace", type=float, default=10.0,
                   help="seconds calls in flight get to finish on SIGTERM")
    g.add_argument("--max-connection-age", type=float, default=0.0, metavar="SECONDS",
                   help="close each gRPC connection after about SECONDS (clients reconnect at "
                        "their next call), so that long-lived clients behind a Kubernetes "
                        "Service spread over new pods; 0 keeps connections open. See "
                        "docs/serving.md")
    g.add_argument("--max-connection-age-grace", type=float, metavar="SECONDS",
                   help="how long calls in flight on an aged connection may still run before "
                        "it is cut; unset: until they end (streams included)")
    g.add_argument("--tls-cert", type=Path,
                   help="PEM certificate (enables TLS on gRPC with --tls-key; put the HTTP port "
                        "behind a reverse proxy for TLS)")
    g.add_argument("--tls-key", type=Path, help="PEM private key")
    g.add_argument("--keys", type=Path, metavar="FILE",
                   help="API keys with quotas, made by `nmt keys add NAME --file FILE`: every "
                        "call needs a key of FILE (authorization: Bearer <key>, or x-api-key: "
                        "<key>) within its limits; reloaded when it changes (every "
                        "--poll-interval); see docs/serving.md")
    g.add_argument("--keys-usage", type=Path, metavar="FILE",
                   help="where the keys' usage of the day is saved, so a restart keeps it; "
                        "unset: beside --keys (keys.usage.json for keys.json)")
    g.add_argument("--auth-token-env", default=DEFAULT_TOKEN_ENV,
                   help="environment variable holding the bearer token; auth is on when it is "
                        "set and not empty")
    # One thread per operation, and model calls side by side (`--workers`): small
    # operations waste less time handing work between threads (bench/load_test.py).
    add_thread_options(p, intra_op_default=1)
    p.set_defaults(func=run_serve)


def config_from_args(args: argparse.Namespace):
    """A validated `ServerConfig` from parsed `nmt serve` arguments."""
    from serving.batching import BatchingConfig
    from serving.cache import CacheConfig
    from serving.server import NO_CACHE, ServerConfig
    from serving.validation import Limits

    if not args.model.is_dir():
        raise FileNotFoundError(
            f"model directory {args.model} does not exist: export a model there (`nmt export`, "
            "see docs/model.md) or pass --model <base directory of <version>/ SavedModels>")
    return ServerConfig(
        model_dir=args.model, host=args.host, port=args.port, metrics_port=args.metrics_port,
        http_port=args.http_port, http_host=args.http_host,
        batching=BatchingConfig(
            enabled=not args.no_batching, max_batch_size=args.max_batch_size,
            max_wait_ms=args.max_wait_ms, max_queue=args.max_queue, workers=args.workers),
        cache=NO_CACHE if args.no_cache else CacheConfig(max_entries=args.cache_entries,
                                                         max_mb=args.cache_mb),
        limits=Limits(
            max_sentences=args.max_sentences, max_chars=args.max_chars,
            max_message_bytes=args.max_message_bytes, max_beam_size=args.max_beam_size,
            max_glossary_entries=args.max_glossary_entries,
            max_file_bytes=args.max_file_bytes, max_file_sentences=args.max_file_sentences),
        poll_interval_s=args.poll_interval, grace_s=args.grace,
        max_connection_age_s=args.max_connection_age,
        max_connection_age_grace_s=args.max_connection_age_grace,
        tls_cert=args.tls_cert, tls_key=args.tls_key,
        auth_token=os.environ.get(args.auth_token_env) or None, precision=args.precision,
        glossaries_dir=args.glossaries, keys_file=args.keys, keys_usage_file=args.keys_usage)


def run_serve(args: argparse.Namespace) -> int:
    from prometheus_client import REGISTRY

    from serving.server import serve

    config = config_from_args(args)
    apply_thread_options(args)
    asyncio.run(serve(config, registry=REGISTRY))
    return 0
