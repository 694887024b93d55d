"""The commands that reproduce an export and its model card (`reproduce`).

The model card (`training.model_card`) lists them under Reproduce: each corpus, run
and intermediate export of the chain of runs that made the weights (`run_chain`),
or the one `nmt distill` of a distilled export; the export with the attributions
of the corpus it was trained on; its evaluations; and the card itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from nmt.inference.precision import BOTH, export_flag
from training.model_card_data import MODELS, Stage, record_chain

_REPO = Path(__file__).resolve().parents[1]
# The export metadata (attributions, licence) of a model trained on the Anki release.
METADATA = "training/configs/en-fr.metadata.json"


def _export_options(average: int, precision: str, links: str = "argmax") -> str:
    options = f" --average {average}" if average else ""
    options += f" --precision {precision}" if precision != BOTH else ""
    return options + (f" --links {links}" if links != "argmax" else "")


def reproduce(version: str, average: int = 0, precision: str = BOTH,
              shortlist: dict | None = None, start: dict | None = None,
              run_name: str = "en-fr", links: str = "argmax",
              distillation: dict | None = None,
              recommended: dict | None = None, corpus: str | None = None,
              stages: Sequence[Stage] = ()) -> tuple[str, ...]:
    """The commands that produce export `version` and its scores (from the repo root,
    with the data under $NMT_DATA_DIR, by default ../shared/data beside the checkout).

    Args:
        start: the `starting_model` record of a run that started from another model:
            from an export (a frozen alignment head), that export is reproduced first;
            from a run (a record without `version`), that run is trained first.
        run_name: the run's config name (`training/configs/<run_name>.yaml`).
        links: the export's word-link rule.
        precision: its `nmt export --precision` (`nmt.inference.precision.export_flag`).
        distillation: the `distillation` record of a distilled export
            (`training.distill`): one `nmt distill` makes the data, trains and
            exports.
        recommended: the export's `recommended_decoding`.
        corpus: the name of the `nmt corpus` recipe the runs trained on
            (`training/corpora/<corpus>.yaml`): the corpus is built first, and the
            corpus and runs live in ../runs beside the checkout, where the configs'
            data paths point. The exports carry the attributions of the chain's first
            corpus (`_metadata_file`).
        stages: the chain of runs that made the export, oldest first (`run_chain`):
            each corpus is built before the first run on it, and each run after the
            export it starts from. By default the chain that `start`, `run_name` and
            `corpus` tell.
    """
    export = f"{MODELS}/{version}"
    data = "../shared/data"
    ood = f"{data}/out-of-domain"
    listing = ""
    if shortlist:
        listing = (f"    --shortlist-corpus {data}/anki-fra-eng/{shortlist['corpus']} "
                   f"--shortlist-size {shortlist['frequent']} {shortlist['per_source_token']} \\\n")
    training = ["nmt train --config training/configs/en-fr.yaml --run runs/en-fr"]
    run = "runs/en-fr"
    stages = tuple(stages) or record_chain(run_name, start, corpus)
    metadata = _metadata_file(stages)
    if len(stages) > 1 or stages[-1].corpus:
        runs = "../runs" if any(stage.corpus for stage in stages) else "runs"
        training = _chain_commands(stages, runs, f"{MODELS}/{version}")
        run = f"{runs}/{stages[-1].name}"
    elif start:
        base = _export_options(len(start.get("averaged_checkpoints") or ()),
                               export_flag(start))
        training += [
            f"nmt export --run runs/en-fr --out models/en-fr --version {start['version']}{base} "
            f"\\\n    --metadata {metadata}",
            f"nmt train --config training/configs/{run_name}.yaml --run runs/{run_name}",
        ]
        run = f"runs/{run_name}"
    making = (
        f"nmt export --run {run} --out models/en-fr --version {version}"
        f"{_export_options(average, precision, links)}{_recommended_flag(recommended)} \\\n"
        f"{listing}"
        f"    --metadata {metadata}",)
    if distillation:
        training, making = [], (_distill_command(distillation, version, average, precision,
                                                 run_name, recommended, metadata),)
        run = f"runs/{run_name}"
    return (
        "pip install '.[align]'   # eflomal, for the guided-alignment links (training only)",
        *training,
        *making,
        f"nmt evaluate --model models/en-fr --test {data}/anki-fra-eng/test.tsv \\\n"
        f"    --alibi {data}/alibi-enfr-alignments --json models/en-fr/evaluation.json",
        f"nmt evaluate --model models/en-fr --source {ood}/multi30k-test2017-flickr.en \\\n"
        f"    --reference {ood}/multi30k-test2017-flickr.fr --json models/en-fr/multi30k.json",
        f"nmt evaluate --model models/en-fr --source {ood}/newsdiscusstest2015.en \\\n"
        f"    --reference {ood}/newsdiscusstest2015.fr --json models/en-fr/newsdiscuss.json",
        f"nmt export --from-export {export} --out models/en-fr --version {version} --overwrite \\\n"
        "    --metadata models/en-fr/evaluation.json   # scores into the model's metadata",
        f"python -m training.model_card --run {run} \\\n"
        f"    --evaluation models/en-fr/evaluation.json --export {export} \\\n"
        "    --other 'Multi30k test 2017 (captions)=models/en-fr/multi30k.json' \\\n"
        "    --other 'WMT news discussion 2015=models/en-fr/newsdiscuss.json' \\\n"
        "    --out models/en-fr/MODEL_CARD.md",
    )


def _chain_commands(stages: Sequence[Stage], runs: str, export: str) -> list[str]:
    """The commands that make the chain's runs, oldest first, in `runs`: the shipped
    export the first starts from, restored from the git history; each corpus, before
    the first run on it (and its shards, before the first Keras trainer run on it); each
    run; and each intermediate export a later run starts from. `export`: the export
    made, whose SentencePiece model the shards are cut with.
    """
    first = stages[0].start
    commands = [_restore(first.version)] if first and first.shipped else []
    built, cut = set(), set()
    for stage, before, after in zip(stages, (None, *stages[:-1]), (*stages[1:], None),
                                    strict=True):
        if stage.corpus and stage.corpus not in built:
            built.add(stage.corpus)
            commands.append(f"nmt corpus --recipe training/corpora/{stage.corpus}.yaml "
                            f"--out {runs}/corpus-{stage.corpus}")
        if "backend" in stage.summary:
            if stage.corpus not in cut:
                cut.add(stage.corpus)
                commands.append(
                    f"nmt shards --corpus {runs}/corpus-{stage.corpus} --config "
                    f"training/configs/{stage.name}.yaml --spm {export}/assets/en.spm.model "
                    f"--out {runs}/shards-{stage.corpus}")
            commands += _keras_commands(stage, before, runs)
            continue
        commands.append(_train_command(stage, runs))
        made = after.start if after else None
        if made and made.version is not None:  # only the first run starts from a shipped one
            commands.append(
                f"nmt export --run {runs}/{stage.name} --out {runs}/{made.out} "
                f"--version {made.version}"
                + _export_options(len(made.record.get("averaged_checkpoints") or ()),
                                  export_flag(made.record)))
    return commands


def _restore(version: int) -> str:
    """The commands that put back a shipped export from the commit that added it."""
    path = f"{MODELS}/{version}"
    return (f"# {path}, which the first run starts from, is in the git history (the commit "
            "that shipped it):\n"
            f'git checkout "$(git log -1 --diff-filter=A --format=%H -- {path}/saved_model.pb)" '
            f"-- {path}")


def _train_command(stage: Stage, runs: str) -> str:
    """`nmt train` of the stage's config, saying which shipped export it starts from and
    stopping where a run stopped by a signal stopped."""
    command = f"nmt train --config training/configs/{stage.name}.yaml --run {runs}/{stage.name}"
    notes = []
    if stage.start and stage.start.shipped:
        notes.append(f"starts from {MODELS}/{stage.start.version}")
    stopped, steps = stage.summary.get("stopped_by"), stage.summary.get("steps")
    if stopped and steps:
        command += f" --set optim.max_steps={steps}"
        notes.append(f"the run stopped on a {stopped} at step {steps:,}")
    return command + (f"   # {'; '.join(notes)}" if notes else "")


def _keras_commands(stage: Stage, before: Stage | None, runs: str) -> list[str]:
    """A Keras trainer run (`training.accelerator.train`, on the backend and in the
    precision it ran in, to the steps it made) and the import of its weights into the
    run directory `{runs}/{name}` that export and later runs read."""
    summary, name = stage.summary, stage.name
    shards, out = f"{runs}/shards-{stage.corpus}", f"{runs}/{name}-out"
    start = (f" \\\n    --init-weights {runs}/{before.name}-out/weights"
             if before is not None and "backend" in before.summary else "")
    precision = summary.get("precision", "float32")
    train = (f"python -m training.accelerator.train --config training/configs/{name}.yaml "
             f"\\\n    --shards {shards} --run {runs}/{name}-keras --backend "
             f"{summary['backend']} --max-steps {summary['steps']}"
             + (f" --precision {precision}" if precision != "float32" else "")
             + f"{start} --out {out}")
    after = f" --after {runs}/{before.name}" if before is not None else ""
    return [train, f"python -m training.accelerator.import_weights --from {out} "
                   f"--shards {shards} \\\n    --run {runs}/{name} --corpus "
                   f"{runs}/corpus-{stage.corpus}{after}"]


def _metadata_file(stages: Sequence[Stage]) -> str:
    """The `nmt export --metadata` file of a model the chain `stages` made:
    `training/configs/<corpus>.metadata.json` of the chain's first corpus (the one its
    earliest run on a corpus trained on, e.g. `en-fr-broad`) when the repository has
    that file, else `METADATA`, the Anki release's.
    """
    corpus = next((stage.corpus for stage in stages if stage.corpus), None)
    path = f"training/configs/{corpus}.metadata.json"
    return path if corpus and (_REPO / path).is_file() else METADATA


def _recommended_flag(recommended: dict | None, default: int | None = None) -> str:
    """`nmt export --recommended-beam-size N`, unless `N` is `default`."""
    beam = (recommended or {}).get("beam_size")
    return "" if beam is None or beam == default else f" --recommended-beam-size {beam}"


def _distill_command(distillation: dict, version: str, average: int, precision: str,
                     run_name: str, recommended: dict | None, metadata: str) -> str:
    """The `nmt distill` command that made a distilled export (`metadata`: its
    `--metadata` file, `_metadata_file`)."""
    from training.distill import STUDENT_BEAM, TEACHER_BEAM

    beam = distillation["decoding"]["beam_size"]
    options = "".join(f" --set {key}={value}"
                      for key, value in (distillation.get("overrides") or {}).items())
    options += f" --beam-size {beam}" if beam != TEACHER_BEAM else ""
    options += f" --average {average}" if average else ""
    options += f" --export-precision {precision}" if precision != BOTH else ""
    return (f"nmt distill --teacher {distillation['teacher']['path']} \\\n"
            f"    --config training/configs/{run_name}.yaml --run runs/{run_name} \\\n"
            f"    --out models/en-fr --version {version}{options}"
            f"{_recommended_flag(recommended, STUDENT_BEAM)} \\\n"
            f"    --metadata {metadata}")
