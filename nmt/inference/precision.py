"""The precisions an export carries, and the one a machine runs best.

An export translates with its matrix products (encoder and decoder step) in
float32 or in bfloat16 (float32 weights cast once per call, everything else
float32; see `nmt.layers.step_kernels`). bfloat16 products run 2-3 times faster on
CPUs with bfloat16 units (Intel AMX, AVX512-BF16 on Intel Cooper Lake and
AMD Zen 4, Arm's BF16 extension), and 1.2-1.6 times slower than float32
where they are emulated (AMD Zen 3 and older, Intel before Cooper Lake, most
Arm servers before Neoverse V1).

`nmt export --precision both` (the default) writes one export with both
paths over the same weights: float32 in the standard signatures
(`serving_default`, `translate_with_options`; what TensorFlow Serving users
get unless they ask for another) and bfloat16 products in parallel
signatures named `<name>_bfloat16` (`serving_bfloat16`,
`translate_with_options_bfloat16`). `align` is teacher-forced through the
Keras layers and computes in float32 in every export, so it has no parallel
signature. An export with one path (`--precision float32` or `bfloat16`, and
every export made before paths were parallel) has it in the standard
signatures. The metadata records `precision` (the standard signatures' path)
and `precisions` (every path, that one first).

Loaders pick with `choose_precision`: `float32` or `bfloat16` by name, or
`auto`, which reads the CPU's features (`/proc/cpuinfo`): bfloat16 where the
CPU lists a bfloat16 unit, float32 otherwise. Features, not timings: the
decision is free (no second warm-up), the same on every start and every
replica of a machine type (so they return the same translations), and not
fooled by a busy neighbour or by the few short warm-up sentences, whose
timings say little about full batches. `bench/decode_speed.py --precision`
times both paths where the rule needs checking.

No TensorFlow import: command-line parsers and the server's configuration
use it before TensorFlow loads.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

FLOAT32 = "float32"
BFLOAT16 = "bfloat16"
# The paths an export may carry (names of the dtypes of their matrix products).
PRECISIONS = (FLOAT32, BFLOAT16)
AUTO = "auto"
# What a loader may ask for (`--precision` of `nmt serve`, `translate`, `batch`).
LOAD_CHOICES = (AUTO, *PRECISIONS)
BOTH = "both"
# What `nmt export --precision` takes; `both` is the default.
EXPORT_CHOICES = (BOTH, *PRECISIONS)

# /proc/cpuinfo names of bfloat16 units: x86 `flags` (Intel AMX tiles; AVX512-BF16 on
# Intel Cooper Lake and later, AMD Zen 4 and later) and Arm `Features` (Armv8.6 BF16:
# BFMMLA/BFDOT, e.g. Neoverse V1/V2, AWS Graviton 3 and 4).
BFLOAT16_UNITS = ("amx_bf16", "avx512_bf16", "bf16")
CPUINFO = Path("/proc/cpuinfo")

# The standard signatures whose computation depends on the path; `serving_default`'s
# parallel signature drops `_default` (`serving_bfloat16`).
PATH_SIGNATURES = ("serving_default", "translate_with_options")


@dataclasses.dataclass(frozen=True)
class PrecisionChoice:
    """The path a loader translates with, and why (logged and shown by the server).

    Attributes:
        precision: a name of `PRECISIONS`.
        reason: e.g. "auto: the CPU has avx512_bf16".
    """

    precision: str
    reason: str


def export_paths(precision: str) -> tuple[str, ...]:
    """The paths of an `nmt export --precision` value, the standard signatures' first.

    Raises:
        ValueError: `precision` is not one of `EXPORT_CHOICES`.
    """
    if precision == BOTH:
        return PRECISIONS
    if precision in PRECISIONS:
        return (precision,)
    raise ValueError(f"precision must be one of {EXPORT_CHOICES}. "
                     f"Received: precision={precision!r}")


def export_flag(metadata: Mapping) -> str:
    """The `nmt export --precision` value that gives an export's paths (from its metadata)."""
    return BOTH if set(carried_paths(metadata)) == set(PRECISIONS) else carried_paths(metadata)[0]


def carried_paths(metadata: Mapping) -> tuple[str, ...]:
    """The paths an export carries, from its metadata: the standard signatures' first.

    Exports made before paths were parallel record only `precision` (or, older
    still, nothing: float32).
    """
    default = metadata.get("precision", FLOAT32)
    return (default, *[p for p in metadata.get("precisions", ()) if p != default])


def signature_name(signature: str, precision: str, default: str) -> str:
    """The name of a standard signature's version for the path `precision`.

    Args:
        signature: one of `PATH_SIGNATURES`.
        precision: the path.
        default: the path of the export's standard signatures.

    Returns:
        `signature` itself for the default path, else e.g. `serving_bfloat16`,
        `translate_with_options_bfloat16`.
    """
    if signature not in PATH_SIGNATURES:
        raise ValueError(f"signature must be one of {PATH_SIGNATURES}. "
                         f"Received: signature={signature!r}")
    if precision == default:
        return signature
    return f"{signature.removesuffix('_default')}_{precision}"


def bfloat16_units(cpuinfo: str) -> tuple[str, ...]:
    """The bfloat16 units (`BFLOAT16_UNITS`) that `/proc/cpuinfo` text lists.

    Reads the `flags` lines (x86) and `Features` lines (Arm).
    """
    found = set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip().lower() in ("flags", "features"):
            found.update(value.split())
    return tuple(unit for unit in BFLOAT16_UNITS if unit in found)


def cpu_bfloat16_units() -> tuple[str, ...]:
    """The bfloat16 units of this machine's CPU; none where `/proc/cpuinfo` cannot be read
    (macOS, Windows: `auto` then keeps float32, which is never emulated)."""
    try:
        return bfloat16_units(CPUINFO.read_text(errors="replace"))
    except OSError:
        return ()


def check_load_choice(precision: str) -> str:
    """`precision` if it is one of `LOAD_CHOICES`.

    Raises:
        ValueError: it is not; the message lists them.
    """
    if precision not in LOAD_CHOICES:
        raise ValueError(f"precision must be one of {LOAD_CHOICES}. "
                         f"Received: precision={precision!r}")
    return precision


def choose_precision(requested: str, carried: Sequence[str],
                     units: Sequence[str] | None = None, where: str = "this export"
                     ) -> PrecisionChoice:
    """The path to translate with.

    Args:
        requested: one of `LOAD_CHOICES`.
        carried: the export's paths (`carried_paths`).
        units: the CPU's bfloat16 units; None reads them (`cpu_bfloat16_units`).
        where: names the export in errors (its path).

    Returns:
        By name, that path. `auto`: the only path of a one-path export;
        otherwise bfloat16 where the CPU has a bfloat16 unit, float32 where
        it has none (bfloat16 would be emulated there, and slower).

    Raises:
        ValueError: `requested` is unknown, or names a path the export does
            not carry (the message says how to re-export it with both).
    """
    check_load_choice(requested)
    if requested != AUTO:
        if requested not in carried:
            raise ValueError(
                f"{where} carries no {requested} path (it carries {', '.join(carried)}): "
                "re-export it with both (nmt export --from-export DIR --out BASE --precision "
                "both), or load it with precision auto")
        return PrecisionChoice(requested, "asked for")
    units = cpu_bfloat16_units() if units is None else tuple(units)
    if len(carried) == 1:
        only = carried[0]
        emulated = " (emulated on this CPU, which has no bfloat16 unit)" if (
            only == BFLOAT16 and not units) else ""
        return PrecisionChoice(only, f"auto: the export carries only {only}{emulated}")
    if units:
        return PrecisionChoice(BFLOAT16, f"auto: the CPU has {', '.join(units)}")
    return PrecisionChoice(FLOAT32, "auto: the CPU has no bfloat16 unit "
                                    f"({', '.join(BFLOAT16_UNITS)}), bfloat16 would be emulated")
