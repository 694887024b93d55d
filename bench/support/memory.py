"""Resident memory of a process, in MiB (printed as MB by every benchmark)."""

from __future__ import annotations

import resource
import sys
from pathlib import Path


def rss_mb(pid: int | str = "self") -> float:
    """Resident memory now (`VmRSS`, Linux); NaN where /proc is not available."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return float("nan")


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (`ru_maxrss`: KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 / (1024 if sys.platform == "darwin" else 1)
