"""Which extra to install when a command needs a module that is not installed.

The bare install of the package is the client: `nmt translate|translate-file|align|batch
--server HOST:PORT` through a running server. Every other role is an extra
of `pyproject.toml` (`serve`, `batch`, `train`, `align`, `dev`). A command
that reaches a module of a role that is not installed ends with the
`pip install` line that adds the role, not a traceback. What each extra
installs is read from the installed package's metadata, so the message
follows `pyproject.toml`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import metadata

DISTRIBUTION = "nmt-attention"
# The extras each command needs beyond the client; a missing module they install is
# reported as theirs (`nmt train` without TensorFlow needs `train`, not just `serve`).
COMMAND_EXTRAS: dict[str, tuple[str, ...]] = {
    "serve": ("serve",),
    "translate": ("serve",),
    "translate-file": ("serve",),
    "align": ("serve",),
    "evaluate": ("train",),
    "batch": ("batch",),
    "train": ("train",),
    "corpus": ("train",),  # recipes are YAML
    "shards": ("train",),  # sentencepiece, and tensorflow-text by default
    "align-corpus": ("train", "align"),
    "distill": ("batch", "train", "align"),
    "export": ("train",),
    "keys": (),  # the keys file is JSON, written with the standard library
}
# Commands that also work through a running server (`--server HOST:PORT`), client only.
SERVER_COMMANDS = ("translate", "translate-file", "align", "batch")
# Import names whose distribution has another name (others: `_` read as `-`).
_DISTRIBUTION_OF_MODULE = {
    "yaml": "pyyaml",
    "grpc": "grpcio",
    "grpc_health": "grpcio-health-checking",
    "grpc_reflection": "grpcio-reflection",
    "grpc_tools": "grpcio-tools",
    "google": "protobuf",
    "markdown_it": "markdown-it-py",
}
_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[([^\]]*)\])?[^;]*(?:;(.*))?")
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def distribution_of(module: str) -> str:
    """The (normalised) distribution that provides an import name, e.g. `yaml` -> `pyyaml`."""
    root = module.partition(".")[0]
    return _normalise(_DISTRIBUTION_OF_MODULE.get(root, root))


def extra_distributions(requirements: Iterable[str]) -> dict[str, frozenset[str]]:
    """What each extra installs, its own extras included (`batch` = `serve` + Beam).

    Args:
        requirements: the package's `Requires-Dist` lines, e.g.
            `tensorflow==2.21.0; extra == "serve"` or
            `nmt-attention[serve]; extra == "batch"`.

    Returns:
        `{extra: normalised distribution names}`; the bare install's
        requirements belong to no extra and are left out.
    """
    direct: dict[str, set[str]] = {}
    nested: dict[str, set[str]] = {}
    for line in requirements:
        found = _REQUIREMENT.fullmatch(line)
        if not found:
            raise ValueError(f"not a requirement line. Received: {line!r}")
        name, extras, marker = found.groups()
        extra = _EXTRA_MARKER.search(marker or "")
        if extra is None:
            continue
        owner = _normalise(extra.group(1))
        direct.setdefault(owner, set())
        if _normalise(name) == DISTRIBUTION:
            nested.setdefault(owner, set()).update(
                _normalise(e) for e in (extras or "").split(",") if e.strip())
        else:
            direct[owner].add(_normalise(name))

    def expand(extra: str, seen: frozenset[str]) -> set[str]:
        names = set(direct.get(extra, ()))
        for inner in nested.get(extra, ()):
            if inner not in seen:
                names |= expand(inner, seen | {inner})
        return names

    return {extra: frozenset(expand(extra, frozenset({extra}))) for extra in direct}


def extras_to_install(command: str, module: str,
                      requirements: Iterable[str] | None) -> tuple[str, ...] | None:
    """The extras that bring `module` to `command`, or None if no extra does.

    Args:
        command: the subcommand, e.g. `serve`.
        module: the import name that is missing, e.g. `tensorflow` or `yaml.loader`.
        requirements: the package's `Requires-Dist` lines; None when the
            package is not installed (run from a checkout): then the
            command's own extras are named.

    Returns:
        The command's own extras (`COMMAND_EXTRAS`) when they install the
        module, else the smallest extra that does (`nmt translate --plot`
        needs `train` for matplotlib); None when no extra installs it (not a
        missing role, a real error).
    """
    wanted = COMMAND_EXTRAS.get(command, ())
    if requirements is None:
        return wanted or None
    installs = extra_distributions(requirements)
    distribution = distribution_of(module)
    if any(distribution in installs.get(extra, ()) for extra in wanted):
        return wanted
    providers = sorted((e for e, names in installs.items() if distribution in names),
                       key=lambda e: (len(installs[e]), e))
    return (providers[0],) if providers else None


def installed_requirements() -> list[str] | None:
    """The installed package's `Requires-Dist` lines; None when it is not installed."""
    try:
        return metadata.requires(DISTRIBUTION) or []
    except metadata.PackageNotFoundError:
        return None


def missing_extra_message(command: str, module: str, server: str | None = None,
                          requirements: Iterable[str] | None = None) -> str | None:
    """What to install (or to pass) when `command` fails to import `module`.

    Args:
        command: the subcommand, e.g. `serve`.
        module: `ModuleNotFoundError.name`, e.g. `tensorflow`.
        server: the command's `--server`, if it has one.
        requirements: `Requires-Dist` lines (default: the installed package's).

    Returns:
        A one-line message, e.g. "nmt serve needs the serve extra
        (tensorflow is not installed): pip install 'nmt-attention[serve]'",
        or None when no extra of the package provides `module`.
    """
    if requirements is None:
        requirements = installed_requirements()
    extras = extras_to_install(command, module, requirements)
    if not extras:
        return None
    root = module.partition(".")[0]
    plural = "s" if len(extras) > 1 else ""
    message = (f"nmt {command} needs the {' and '.join(extras)} extra{plural} ({root} is not "
               f"installed): pip install '{DISTRIBUTION}[{','.join(extras)}]'")
    if command in SERVER_COMMANDS and not server:
        message += "; or use a running server with --server HOST:PORT"
    return message
