"""What API keys cost the server (`nmt serve --keys`): per request, and per reload of the file.

Makes a keys file of `--keys` keys (each with both limits, and a global limit),
then times on one core, without the network:

- `authenticate` + `admit` of one request (what `KeyInterceptor` and the
  HTTP routes do per request: parse the header, SHA-256 of the key, the
  minute window and the day's characters), admitted and refused;
- loading the file (at start, and at each reload when it changed).

    python bench/keys_overhead.py [--keys 1000] [--requests 60000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.inputs import machine  # noqa: E402
from nmt.atomic_write import write_atomically  # noqa: E402
from serving.keys import KeysFile, Quota, new_key  # noqa: E402
from serving.quotas import QuotaExceeded, Quotas  # noqa: E402


def make_keys(path: Path, count: int) -> list[str]:
    """A keys file of `count` keys with limits; returns the keys."""
    tokens, keys = [], []
    for index in range(count):
        token, key = new_key(f"client-{index}", Quota(requests_per_minute=60,
                                                      chars_per_day=1_000_000),
                             taken_ids={k.id for k in keys})
        tokens.append(token)
        keys.append(key)
    document = KeysFile(tuple(keys), Quota(requests_per_minute=100_000))
    write_atomically(path, document.to_json().encode())
    return tokens


def per_request_us(quotas: Quotas, tokens: list[str], requests: int) -> tuple[float, float]:
    """Microseconds of `authenticate` + `admit`: `(admitted, refused)`."""
    started = time.perf_counter()
    for index in range(requests):  # 60 a minute per key: keys taken in turn stay under it
        key = quotas.authenticate(f"Bearer {tokens[index % len(tokens)]}", None)
        quotas.admit(key, 100)
    admitted = (time.perf_counter() - started) / requests * 1e6
    refused, started = 0, time.perf_counter()
    for _ in range(requests // 10):
        try:
            quotas.admit(quotas.authenticate(f"Bearer {tokens[0]}", None), 100)
        except QuotaExceeded:
            refused += 1
    refused_us = (time.perf_counter() - started) / (requests // 10) * 1e6
    if refused < requests // 10 - 60:  # the first key's minute was not full: not refused
        raise RuntimeError(f"only {refused} of {requests // 10} requests were refused")
    return admitted, refused_us


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=1000, help="keys in the file")
    parser.add_argument("--requests", type=int, default=60_000,
                        help="requests timed (at most 60 per key: their minute limit)")
    args = parser.parse_args(argv)
    if args.requests > 60 * args.keys:
        raise SystemExit(f"--requests must be at most 60 x --keys ({60 * args.keys}): each "
                         "key may make 60 requests a minute")
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "keys.json"
        tokens = make_keys(path, args.keys)
        started = time.perf_counter()
        quotas = Quotas(path)
        load_ms = (time.perf_counter() - started) * 1e3
        admitted, refused = per_request_us(quotas, tokens, args.requests)
        size_kb = path.stat().st_size / 1024
    print(f"{machine()}")
    print(f"{args.keys} keys ({size_kb:.0f} kB file): load {load_ms:.0f} ms; per request "
          f"{admitted:.1f} us admitted, {refused:.1f} us refused ({args.requests} requests)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
