"""Which attention is best here? Trains each mechanism for the same budget and scores it.

For every variant below: `nmt train` with version 2's config
(`training/configs/en-fr-bahdanau.yaml`, unguided Bahdanau), the `--set`
overrides common to all runs and the variant's model settings for `--budget`
of wall clock, export, then dev and
test BLEU (greedy, multi-reference), AER on the Alibi alignments, parameters
and training speed. The last variant repeats luong-general in float32, to
compare bfloat16 and float32 training at equal budget; the `+guided-W`
variants add guided alignment with weight W. Runs one after
another (never two trainings at once on a small machine) and prints a
Markdown table; finished variants are reused, so an interrupted comparison
continues where it stopped.

    python bench/compare_attention.py --budget 10m [--only bahdanau,bahdanau+guided-0.5] \
        [--set optim.max_tokens=1500 --set optim.warmup_steps=200]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nmt.paths import data_dir  # noqa: E402

MECHANISMS = {
    "bahdanau": {"decoder": "bahdanau", "attention": "bahdanau"},
    "bahdanau-normalized": {"decoder": "bahdanau", "attention": "bahdanau", "normalize": True},
    "luong-dot+feed": {"decoder": "luong", "attention": "dot", "input_feeding": True},
    "luong-general+feed": {"decoder": "luong", "attention": "general", "input_feeding": True},
    "luong-concat+feed": {"decoder": "luong", "attention": "concat", "input_feeding": True},
    "luong-general": {"decoder": "luong", "attention": "general", "input_feeding": False},
    "luong-general-local": {"decoder": "luong", "attention": "general", "input_feeding": False,
                            "local_window": 4},
    # Same model as luong-general, trained in float32: bfloat16 vs float32 at equal budget.
    "luong-general-float32": {"decoder": "luong", "attention": "general", "input_feeding": False,
                              "optim.precision": "float32"},
}
UNGUIDED = {"guided_alignment.type": "none", "guided_alignment.weight": 0.0}


def guided(weight: float) -> dict:
    """Guided alignment (cross-entropy) with the config's corpus alignments."""
    return {"guided_alignment.type": "ce", "guided_alignment.weight": weight}


# Every mechanism without guidance, then guided runs: three weights for Bahdanau (the
# weight is chosen on their dev BLEU and AER), one for Luong general and concat.
VARIANTS = {name: {**settings, **UNGUIDED} for name, settings in MECHANISMS.items()}
VARIANTS.update({
    f"bahdanau+guided-{w}": {**MECHANISMS["bahdanau"], **guided(w)} for w in (0.2, 0.5, 1.0)
})
VARIANTS["luong-general+guided-0.5"] = {**MECHANISMS["luong-general"], **guided(0.5)}
VARIANTS["luong-concat+feed+guided-0.5"] = {**MECHANISMS["luong-concat+feed"], **guided(0.5)}
# Long examples joined from 2-5 training pairs (10% more examples): attention that
# has seen long inputs during training.
JOINED = {"data.join_fraction": 0.1, "data.join_max_pairs": 5}
VARIANTS["luong-general+guided-0.5+joined"] = {
    **MECHANISMS["luong-general"], **guided(0.5), **JOINED
}


def run_variant(name: str, settings: dict, args) -> dict:
    from nmt.data.corpus import read_pairs
    from nmt.evaluation.metrics import read_alibi
    from nmt.evaluation.scoring import score_alignments, score_translations
    from nmt.inference.export import export_saved_model
    from nmt.inference.translator import Translator
    from nmt.types import DecodeOptions
    from training.export_run import module_from_run
    from training.train import run

    run_dir = args.work / name
    result_file = run_dir / "comparison.json"
    if result_file.exists():
        return json.loads(result_file.read_text())
    # Bare keys are model settings; dotted keys name their config section.
    overrides = {"optim.eval_every": args.eval_every, **args.overrides}
    overrides.update({key if "." in key else f"model.{key}": value
                      for key, value in settings.items()})
    run(args.config, run_dir, resume=(run_dir / "config.yaml").exists(), max_time=args.budget,
        overrides=overrides)
    export = export_saved_model(module_from_run(run_dir), run_dir / "export", 1, overwrite=True)
    translator = Translator.load(export)
    greedy = DecodeOptions(beam_size=1)
    data = args.data / "anki-fra-eng"
    summary = json.loads((run_dir / "summary.json").read_text())

    def bleu(split: str) -> float:
        return score_translations(translator, read_pairs(data / split), greedy).scores.bleu

    result = {
        "variant": name,
        "dev_bleu": bleu("dev.tsv"),
        "test_bleu": bleu("test.tsv"),
        "aer": score_alignments(translator, read_alibi(args.data / "alibi-enfr-alignments"))
        .scores.aer,
        "parameters": summary["parameters"],
        "tokens_per_second": summary["target_tokens_per_second"],
        "steps": summary["steps"],
    }
    result_file.write_text(json.dumps(result, indent=2) + "\n")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path,
                        default=REPO / "training/configs/en-fr-bahdanau.yaml")
    parser.add_argument("--data", type=Path, default=data_dir(),
                        help="the shared data directory (NMT_DATA_DIR)")
    parser.add_argument("--work", type=Path, default=REPO / "runs" / "compare")
    parser.add_argument("--budget", default="10m", help="wall clock per variant")
    parser.add_argument("--eval-every", type=int, default=200)
    parser.add_argument("--only", help="comma-separated variant names")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="a config value for every variant, e.g. optim.max_tokens=1500")
    args = parser.parse_args()
    from training.config import parse_overrides

    try:
        args.overrides = parse_overrides(args.set)
    except ValueError as error:
        parser.error(str(error))
    names = args.only.split(",") if args.only else list(VARIANTS)
    unknown = sorted(set(names) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {sorted(VARIANTS)}")
    rows = [run_variant(name, VARIANTS[name], args) for name in names]
    settings = "".join(f"; {key}={value}" for key, value in args.overrides.items())
    print(f"\nBudget {args.budget} per variant{settings}; greedy decoding; "
          "BLEU multi-reference.\n")
    print("| attention | dev BLEU | test BLEU | AER (Alibi) | parameters | target tokens/s "
          "| steps |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['variant']} | {r['dev_bleu']:.2f} | {r['test_bleu']:.2f} | {r['aer']:.3f} | "
              f"{r['parameters']:,} | {r['tokens_per_second']:,} | {r['steps']:,} |")


if __name__ == "__main__":
    main()
