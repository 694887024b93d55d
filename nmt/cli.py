"""The `nmt` command: serve, translate, batch, train, evaluate, export."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "models" / "en-fr"


def _add_train(sub) -> None:
    p = sub.add_parser("train", help="train a model from a YAML config")
    p.add_argument("--config", required=True, help="training/configs/<name>.yaml")
    p.add_argument("--run", required=True, help="run directory (checkpoints, logs, tokenizer)")
    p.add_argument("--resume", action="store_true", help="continue the run in --run")
    p.add_argument("--max-time", help="wall-clock budget, e.g. 90m (overrides the config)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a config value, e.g. --set optim.max_steps=100")
    p.set_defaults(func=_train)


def _parse_overrides(items: list[str]) -> dict:
    import yaml

    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or "." not in key:
            raise SystemExit(f"--set takes SECTION.KEY=VALUE, e.g. optim.max_steps=100; got {item!r}")
        overrides[key] = yaml.safe_load(value)
    return overrides


def _train(args) -> int:
    from training.train import run

    run(args.config, args.run, resume=args.resume, max_time=args.max_time,
        overrides=_parse_overrides(args.set))
    return 0


def _add_export(sub) -> None:
    p = sub.add_parser("export", help="export a SavedModel (TF Serving layout)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--run", help="training run directory (uses its best dev checkpoint)")
    source.add_argument("--from-export", help="an existing <base>/<version> to re-export")
    p.add_argument("--out", required=True, help="base directory, e.g. models/en-fr")
    p.add_argument("--version", type=int, required=True, help="version number (a new directory)")
    p.add_argument("--metadata", help="JSON file of extra metadata (scores, attribution)")
    p.set_defaults(func=_export)


def _export(args) -> int:
    import json

    from training.export_run import module_from_run

    from nmt.export import export_saved_model, module_from_export

    extra = json.loads(Path(args.metadata).read_text()) if args.metadata else {}
    if args.run:
        module = module_from_run(Path(args.run), extra)
    else:
        module = module_from_export(args.from_export)
        module.metadata.update(extra)
    path = export_saved_model(module, args.out, args.version)
    print(path)
    return 0


def _add_optional(sub, module: str, function: str) -> None:
    """Registers a subcommand that lives beside its implementation (serving/, batch/)."""
    import importlib

    try:
        getattr(importlib.import_module(module), function)(sub)
    except ModuleNotFoundError as error:
        if error.name != module:
            raise


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    parser = argparse.ArgumentParser(prog="nmt", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_train(sub)
    _add_export(sub)
    _add_optional(sub, "serving.cli", "add_serve_parser")
    _add_optional(sub, "batch.cli", "add_batch_parser")
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as error:
        print(f"nmt {args.command}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
