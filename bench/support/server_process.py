"""`nmt serve` as a subprocess of a benchmark (bench/load_test.py, bench/soak.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from nmt_api.client import TranslationClient
from serving.testing import free_port

REPO = Path(__file__).resolve().parents[2]


def start_server(model: Path, batching: bool, log_path: Path, extra: Sequence[str] = (), *,
                 metrics_port: int = 0, poll_interval: float = 0.0
                 ) -> tuple[subprocess.Popen, str, str]:
    """`(process, gRPC target, HTTP base URL)` of a serving `nmt serve` on 127.0.0.1.

    Args:
        model: base directory of `<version>/` SavedModels.
        batching: dynamic batching on (`--no-batching` when False).
        log_path: the server's stdout and stderr are appended there.
        extra: more `nmt serve` options.
        metrics_port: Prometheus port (`--metrics-port`); 0 disables /metrics.
        poll_interval: seconds between checks for new model versions; 0: none.
    """
    port, http_port = free_port(), free_port()
    command = [sys.executable, "-m", "nmt_cli", "serve", "--model", str(model),
               "--host", "127.0.0.1", "--port", str(port), "--metrics-port", str(metrics_port),
               "--http-port", str(http_port), "--poll-interval", f"{poll_interval:g}",
               "--grace", "2"]
    if not batching:
        command.append("--no-batching")
    command += list(extra)
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(REPO)}
    env.pop("NMT_AUTH_TOKEN", None)
    log = open(log_path, "a")  # kept open for the server's lifetime
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=log)
    target = f"127.0.0.1:{port}"
    with TranslationClient(target) as client:
        try:
            client.wait_until_serving(timeout=300)
        except TimeoutError:
            process.terminate()
            raise SystemExit(f"the server did not start; see {log_path}") from None
    return process, target, f"http://127.0.0.1:{http_port}"
