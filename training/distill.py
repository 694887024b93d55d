"""`nmt distill`: sequence-level knowledge distillation of an exported teacher.

Kim & Rush 2016 ("Sequence-Level Knowledge Distillation", Sec. 3.2) train a
student on the teacher's beam-search translations of the training sources
instead of the references: the beam output approximates the mode of the
teacher's sequence distribution, which the student learns to produce in one
greedy pass, so greedy search on the student comes close to beam search on
the teacher at a fraction of the cost. Three steps, each skipped when its
output is complete, so the same command continues after any interruption:

1. translate: the distinct English sources of the student config's
   `data.train` are translated by the teacher export (beam 5 by default)
   through the resumable batch job (`batch.job`), and the (source, teacher
   translation) pairs written as a TSV;
2. train: `nmt train` (`training.train.run`) on those pairs with the
   student config; with guided alignment or an alignment head the trainer
   aligns the new pairs with eflomal itself (`alignments.txt`);
3. export: the student's SavedModel, whose metadata records the teacher
   and the decoding that made the data (`distillation`) and the student's
   recommended decoding (`recommended_decoding`, greedy by default), which
   `Translator`, the server and the CLI use when a caller sets no options.

The run directory is the student's training run (`nmt train --run`,
`nmt export --run` and `training.model_card --run` read it), with:

    <run>/distill.json      the teacher (path, name, version, scores), the decoding
                            of its translations, the student's effective config,
                            and the steps done
    <run>/sources.txt       the distinct training sources, one a line (the job's input)
    <run>/teacher.jsonl     the batch job's records of the teacher's translations
                            (teacher.jsonl.part and .part.json while it runs)
    <run>/pairs.tsv         source<TAB>teacher translation: the student's data.train
    <run>/summary.json      the training summary, with the teacher under "distillation"

and the other files of a training run (`training.train`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from batch.engines import Engine
from batch.job import JobConfig, run_job
from batch.readers import InputFormat
from nmt.constants import DEFAULT_BATCH_SIZE, METADATA_PATH
from nmt.data.corpus import read_pairs
from nmt.inference.precision import AUTO, BOTH, EXPORT_CHOICES, LOAD_CHOICES
from nmt.paths import SAVED_MODEL_FILE, resolve_version_dir
from nmt.types import RECOMMENDED_DECODING, DecodeOptions, options_over, recommended_options

log = logging.getLogger("nmt.distill")

DISTILL_FILE = "distill.json"
SOURCES_FILE = "sources.txt"
TEACHER_FILE = "teacher.jsonl"
PAIRS_FILE = "pairs.tsv"
SUMMARY_FILE = "summary.json"
# The teacher's beam (Kim & Rush 2016 use 5) and the student's recommended one (greedy).
TEACHER_BEAM = 5
STUDENT_BEAM = 1
# The teacher's metadata that holds for the student too: the corpus facts (its
# translations come from that corpus) and the word-link rule (the student's head is
# trained like the teacher's, and its links are read the same way).
INHERITED_METADATA = ("attribution", "data", "licence", "word_links")
# The steps, in order (`run`'s `until`).
STEPS = ("translate", "train", "export")
# Student config keys that only decide when training stops: a rerun may change them.
STOPPING_KEYS = ("max_time", "max_steps", "max_epochs", "patience")

# (teacher version directory, options, batch size, precision) -> engine.
EngineFactory = Callable[[Path, DecodeOptions, int, str], Engine]


class DistillInterrupted(RuntimeError):
    """A signal stopped the student's training (its checkpoint saved): rerun to continue."""


@dataclasses.dataclass(frozen=True)
class DistillConfig:
    """What `nmt distill` does.

    Attributes:
        teacher: the teacher export: a version directory, or a base directory
            (its highest version).
        config: the student's training config (YAML); the teacher translates
            the sources of its `data.train`.
        run_dir: the run directory (see the module docstring).
        out: base directory the student is exported to; None: no export.
        version: the export's version number (required with `out`).
        overrides: `section.key` -> value for the student config (`--set`).
        beam_size: the teacher's beam; its other decoding options are its own
            defaults (`Translator`'s), `n_best` 1.
        batch_size: sentences per teacher call.
        window: lines the batch job sorts by length and commits together.
        precision: the teacher's path (`nmt.inference.precision.LOAD_CHOICES`).
        max_time: the student's training budget for this invocation, e.g.
            `95m` (None: the config's `optim.max_time`).
        average: export the mean of the last N checkpoints (0: the best
            dev-BLEU weights).
        export_precision: the paths the student's export carries
            (`nmt.inference.precision.EXPORT_CHOICES`).
        recommended_beam_size: the student's recommended beam: its default
            decoding wherever a caller sets none.
        metadata: more export metadata (as `nmt export --metadata`).
    """

    teacher: Path
    config: Path
    run_dir: Path
    out: Path | None = None
    version: int | None = None
    overrides: Mapping = dataclasses.field(default_factory=dict)
    beam_size: int = TEACHER_BEAM
    batch_size: int = DEFAULT_BATCH_SIZE
    window: int = 2000
    precision: str = AUTO
    max_time: str | None = None
    average: int = 0
    export_precision: str = BOTH
    recommended_beam_size: int = STUDENT_BEAM
    metadata: Mapping = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("beam_size", "recommended_beam_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 64:
                raise ValueError(f"{name} must be an integer from 1 to 64. "
                                 f"Received: {name}={value!r}")
        for name in ("batch_size", "window"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1. Received: {name}={getattr(self, name)!r}")
        if self.average < 0:
            raise ValueError(f"average must be >= 0. Received: average={self.average!r}")
        if self.precision not in LOAD_CHOICES:
            raise ValueError(f"precision must be one of {LOAD_CHOICES}. "
                             f"Received: precision={self.precision!r}")
        if self.export_precision not in EXPORT_CHOICES:
            raise ValueError(f"export_precision must be one of {EXPORT_CHOICES}. "
                             f"Received: export_precision={self.export_precision!r}")
        if self.out is not None and (not isinstance(self.version, int) or self.version < 1):
            raise ValueError("an export (--out) needs a positive version number (--version N). "
                             f"Received: version={self.version!r}")


@dataclasses.dataclass(frozen=True)
class DistillResult:
    """What a `run` did: the steps it ran and those it found complete, and the export."""

    run_dir: Path
    ran: tuple[str, ...]
    skipped: tuple[str, ...]
    export: Path | None


def run(config: DistillConfig, engine_factory: EngineFactory | None = None, *,
        until: str = "export", progress: bool = False) -> DistillResult:
    """Runs the steps of the module docstring that are not complete yet.

    Args:
        config: what to distil.
        engine_factory: makes the teacher's engine (default: an in-process
            `batch.engines.LocalEngine`).
        until: the last step to run (one of `STEPS`), e.g. `translate` to
            make the data on one machine and train on another.
        progress: show a progress bar while the teacher translates.

    Returns:
        The steps run and skipped, and the export's path (None without `out`).

    Raises:
        ValueError: the run directory holds another run, or one started with
            another teacher, teacher decoding or student config.
        DistillInterrupted: a signal stopped the student's training.
    """
    if until not in STEPS:
        raise ValueError(f"until must be one of {STEPS}. Received: until={until!r}")
    teacher_dir = resolve_version_dir(config.teacher)
    state = start_run(config, teacher_dir)
    ran, skipped = [], []
    last = STEPS.index(until)
    for name, step in list(zip(STEPS, (_translate_step, _train_step, _export_step),
                               strict=True))[:last + 1]:
        if name == "export" and config.out is None:
            continue
        if step(config, teacher_dir, state, engine_factory, progress):
            ran.append(name)
        else:
            skipped.append(name)
    exported = "export" in ran or "export" in skipped
    export = config.out / str(config.version) if exported else None
    return DistillResult(config.run_dir, tuple(ran), tuple(skipped), export)


# --- the run's record --------------------------------------------------------------------


def teacher_record(teacher_dir: Path) -> dict:
    """What the student records of its teacher: path, name, version, architecture, scores."""
    metadata = read_export_metadata(teacher_dir)
    return {
        "path": str(teacher_dir),
        "name": str(metadata.get("name", teacher_dir.parent.name)),
        "version": int(teacher_dir.name) if teacher_dir.name.isdigit() else 0,
        "attention": str(metadata.get("attention", "")),
        "scores": metadata.get("scores", {}),
    }


def read_export_metadata(version_dir: Path) -> dict:
    """An export's metadata file (`{}` if it has none); no TensorFlow needed."""
    path = version_dir / METADATA_PATH
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def teacher_options(teacher_dir: Path, beam_size: int) -> DecodeOptions:
    """The teacher's decoding: its recommended options with `beam_size` and one hypothesis."""
    defaults = recommended_options(read_export_metadata(teacher_dir))
    return options_over(defaults, {"beam_size": beam_size, "n_best": 1})


def student_overrides(config: DistillConfig) -> dict:
    """The student config's overrides: the user's, `data.train` = the distilled pairs, and
    no `data.train_alignments` (links of other pairs): the trainer aligns the new pairs."""
    return {**config.overrides, "data.train": str((config.run_dir / PAIRS_FILE).resolve()),
            "data.train_alignments": None}


def _fingerprint(config: DistillConfig, teacher_dir: Path) -> dict:
    """What decides the run's data and model; a rerun must give the same."""
    from training.config import read_raw_config

    student = read_raw_config(config.config, student_overrides(config))
    student["optim"] = {key: value for key, value in (student.get("optim") or {}).items()
                        if key not in STOPPING_KEYS}
    corpus = read_raw_config(config.config, dict(config.overrides))["data"]["train"]
    facts = {"teacher": str(teacher_dir.resolve()),
             "decoding": dataclasses.asdict(teacher_options(teacher_dir, config.beam_size)),
             "sources": corpus, "student_config": student}
    return json.loads(json.dumps(facts))  # as saved: lists, not tuples


def start_run(config: DistillConfig, teacher_dir: Path) -> dict:
    """Creates the run's `distill.json`, or reads it and checks the rerun matches it.

    Raises:
        ValueError: the run directory holds files but no `distill.json`, or the
            rerun differs from the saved run (the message names what changed).
    """
    run_dir = config.run_dir
    path = run_dir / DISTILL_FILE
    facts = _fingerprint(config, teacher_dir)
    if path.exists():
        state = json.loads(path.read_text(encoding="utf-8"))
        changed = sorted(key for key in facts if state["fingerprint"].get(key) != facts[key])
        if changed == ["student_config"] and not _student_started(run_dir, state):
            # The teacher's translations do not depend on the student: one translation
            # serves any student config until that student's training begins.
            log.info("%s: the student config changed before its training began; the "
                     "teacher's translations are kept", run_dir)
            state["fingerprint"] = facts
            state["overrides"] = dict(config.overrides)
            _save_state(run_dir, state)
            return state
        if changed:
            raise ValueError(
                f"{run_dir} is a distillation run with another {' and '.join(changed)}; rerun "
                "with the teacher, --beam-size, --config and --set it was started with, or "
                "choose a new --run directory")
        return state
    if run_dir.exists() and any(run_dir.iterdir()):
        raise ValueError(f"{run_dir} already holds files but no {DISTILL_FILE}: choose an empty "
                         "or new --run directory")
    run_dir.mkdir(parents=True, exist_ok=True)
    state = {"fingerprint": facts, "teacher": teacher_record(teacher_dir),
             "decoding": facts["decoding"], "overrides": dict(config.overrides), "steps": {}}
    _save_state(run_dir, state)
    return state


def _student_started(run_dir: Path, state: dict) -> bool:
    """Whether the student's training has begun (the trainer writes its config first)."""
    return "train" in state["steps"] or (run_dir / "config.yaml").exists()


def _save_state(run_dir: Path, state: dict) -> None:
    _write_atomic(run_dir / DISTILL_FILE, json.dumps(state, indent=2, ensure_ascii=False) + "\n")


def _write_atomic(path: Path, text: str) -> None:
    """Writes `path` whole or not at all (temporary file, fsync, rename)."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


def distillation_record(state: dict) -> dict:
    """What the summary and the export record: the teacher, its decoding, the data made."""
    translate = state["steps"].get("translate", {})
    return {"method": "sequence-level knowledge distillation (Kim & Rush 2016)",
            "teacher": state["teacher"], "decoding": state["decoding"],
            "overrides": state.get("overrides", {}),
            **{key: translate[key] for key in ("sources", "pairs", "errors", "teacher_engine")
               if key in translate}}


# --- step 1: the teacher's translations -------------------------------------------------


def write_sources(train: Path, out: Path) -> int:
    """Writes the distinct sources of the TSV `train`, in order of first occurrence.

    Returns:
        The number of sources written.
    """
    seen: dict[str, None] = {}
    for source, _ in read_pairs(train):
        if source:
            seen.setdefault(source, None)
    _write_atomic(out, "".join(f"{source}\n" for source in seen))
    return len(seen)


def write_pairs(records: Path, out: Path) -> dict:
    """Writes `source<TAB>translation` for each translated record of the batch job.

    A line the teacher did not translate (an error record) or translated to
    nothing is left out.

    Returns:
        `{"pairs": written, "errors": left out}`.
    """
    pairs, errors = [], 0
    with open(records, encoding="utf-8") as f:
        for line in f:
            record = json.loads(line)
            translation = " ".join((record.get("translation") or "").split())
            source = " ".join(record["source"].split())
            if record.get("error") is not None or not translation or not source:
                errors += 1
                continue
            pairs.append(f"{source}\t{translation}\n")
    if not pairs:
        raise ValueError(f"the teacher translated none of the sources in {records}: check the "
                         "teacher export (nmt translate --model TEACHER 'Hello.')")
    _write_atomic(out, "".join(pairs))
    return {"pairs": len(pairs), "errors": errors}


def _complete(output: Path) -> bool:
    """Whether a batch job's output is finished (renamed from its `.part`)."""
    return output.exists() and not output.with_name(output.name + ".part").exists()


def _local_engine(teacher_dir: Path, options: DecodeOptions, batch_size: int,
                  precision: str) -> Engine:
    from batch.engines import LocalEngine

    return LocalEngine.load(teacher_dir, options, batch_size, precision)


def _translate_step(config: DistillConfig, teacher_dir: Path, state: dict,
                    engine_factory: EngineFactory | None, progress: bool) -> bool:
    """Step 1; False if `pairs.tsv` is already there."""
    from training.config import load_config

    run_dir = config.run_dir
    pairs_path = run_dir / PAIRS_FILE
    if pairs_path.exists() and "translate" in state["steps"]:
        log.info("step 1/3 done before: %s holds the teacher's translations", pairs_path)
        return False
    sources = run_dir / SOURCES_FILE
    if not sources.exists():
        train = load_config(config.config, dict(config.overrides)).data.train
        log.info("%d distinct sources of %s -> %s", write_sources(Path(train), sources), train,
                 sources)
    output = run_dir / TEACHER_FILE
    record = dict(state["steps"].get("translating", {}))
    if not _complete(output):
        options = DecodeOptions(**state["decoding"])
        engine = (engine_factory or _local_engine)(teacher_dir, options, config.batch_size,
                                                  config.precision)
        record["teacher_engine"] = engine.settings()
        state["steps"]["translating"] = record
        _save_state(run_dir, state)
        log.info("step 1/3: the teacher %s translates %s (beam %d) -> %s", teacher_dir, sources,
                 options.beam_size, output)
        _run_teacher(JobConfig(sources, output, InputFormat("text"), output_format="jsonl",
                               window=config.window, resume=True), engine, progress)
    stats = write_pairs(output, pairs_path)
    state["steps"]["translate"] = {"sources": _count_lines(sources), **stats, **record}
    state["steps"].pop("translating", None)
    _save_state(run_dir, state)
    log.info("%d (source, teacher translation) pairs -> %s (%d left out)", stats["pairs"],
             pairs_path, stats["errors"])
    return True


def _run_teacher(job: JobConfig, engine: Engine, progress: bool) -> None:
    from batch.cli import JobProgress

    bar = JobProgress(job.input, enabled=progress)
    try:
        result = run_job(job, engine, on_progress=bar.update)
    finally:
        bar.close()
        getattr(engine, "close", lambda: None)()
    resumed = f", resumed after line {result.resumed_from}" if result.resumed_from else ""
    log.info("teacher: %d lines in %.0fs%s", result.lines, result.seconds, resumed)


def _count_lines(path: Path) -> int:
    with open(path, encoding="utf-8") as f:
        return sum(1 for _ in f)


# --- step 2: the student ----------------------------------------------------------------


def _train_step(config: DistillConfig, teacher_dir: Path, state: dict,
                engine_factory: EngineFactory | None, progress: bool) -> bool:
    """Step 2; False if the student was trained before."""
    from training import train as train_module

    run_dir = config.run_dir
    if "train" in state["steps"]:
        log.info("step 2/3 done before: the student in %s is trained (train it further with "
                 "nmt train --config %s --run %s --resume)", run_dir, config.config, run_dir)
        return False
    log.info("step 2/3: training the student (%s) on %s", config.config, run_dir / PAIRS_FILE)
    started = time.time()
    train_module.run(config.config, run_dir, resume=True, max_time=config.max_time,
                     overrides=student_overrides(config))
    summary_path = run_dir / SUMMARY_FILE
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    summary["distillation"] = distillation_record(state)
    _write_atomic(summary_path, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    if summary.get("stopped_by"):
        raise DistillInterrupted(
            f"the student's training stopped on a {summary['stopped_by']} at step "
            f"{summary['steps']}, checkpoint saved: rerun the same nmt distill command to "
            "continue")
    state["steps"]["train"] = {"steps": summary["steps"],
                               "seconds": round(time.time() - started, 1)}
    _save_state(run_dir, state)
    return True


# --- step 3: the export -----------------------------------------------------------------


def export_metadata(config: DistillConfig, teacher_dir: Path) -> dict:
    """The student export's metadata beyond the run's: the teacher's corpus facts and
    word-link rule, `config.metadata`, and the recommended decoding."""
    teacher = read_export_metadata(teacher_dir)
    return {**{key: teacher[key] for key in INHERITED_METADATA if key in teacher},
            **config.metadata,
            RECOMMENDED_DECODING: {"beam_size": config.recommended_beam_size}}


def _export_step(config: DistillConfig, teacher_dir: Path, state: dict,
                 engine_factory: EngineFactory | None, progress: bool) -> bool:
    """Step 3; False if this run's export is already there."""
    path = config.out / str(config.version)
    if state["steps"].get("export") == str(path) and (path / SAVED_MODEL_FILE).exists():
        log.info("step 3/3 done before: %s", path)
        return False
    if path.exists():
        raise ValueError(f"{path} already exists and was not exported by this run; choose "
                         "another --version")
    from nmt.inference.export import export_saved_model
    from training.export_run import module_from_run

    module = module_from_run(config.run_dir, export_metadata(config, teacher_dir),
                             average=config.average, precision=config.export_precision)
    export_saved_model(module, config.out, config.version)
    state["steps"]["export"] = str(path)
    _save_state(config.run_dir, state)
    log.info("step 3/3: the student exported -> %s (recommended beam %d)", path,
             config.recommended_beam_size)
    return True


# --- the command ------------------------------------------------------------------------


def add_distill_parser(sub) -> None:
    """Registers `nmt distill` on the `nmt` command's subparsers (no TensorFlow import)."""
    p = sub.add_parser(
        "distill", help="train a student on a teacher export's translations, and export it",
        description="Sequence-level knowledge distillation: the teacher translates the sources "
                    "of the config's data.train (beam 5), a student trains on its "
                    "translations, and is exported with greedy decoding as its default. Each "
                    "step is skipped when its output is complete: rerun the same command to "
                    "continue after an interruption.")
    p.add_argument("--teacher", required=True,
                   help="the teacher export: <base>/<version>, or <base> (its highest version)")
    p.add_argument("--config", required=True, type=Path,
                   help="the student's training config, e.g. training/configs/en-fr-student.yaml")
    p.add_argument("--run", required=True, type=Path, help="run directory (created, or resumed)")
    p.add_argument("--out", type=Path,
                   help="base directory to export the student to (default: no export)")
    p.add_argument("--version", type=int, help="the export's version number (with --out)")
    p.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                   help="override a student config value, e.g. --set model.hidden_dim=384")
    p.add_argument("--beam-size", type=int, default=TEACHER_BEAM,
                   help=f"the teacher's beam (default {TEACHER_BEAM})")
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
                   help=f"sentences per teacher call (default {DEFAULT_BATCH_SIZE})")
    p.add_argument("--window", type=int, default=2000,
                   help="lines the teacher's job sorts by length and commits together "
                        "(default 2000)")
    p.add_argument("--precision", choices=LOAD_CHOICES, default=AUTO,
                   help="the teacher's path: auto (default), float32 or bfloat16")
    p.add_argument("--max-time", help="the student's training budget, e.g. 95m (default: the "
                                      "config's optim.max_time)")
    p.add_argument("--average", type=int, default=0, metavar="N",
                   help="export the mean of the last N checkpoints (default: the best dev-BLEU "
                        "weights)")
    p.add_argument("--export-precision", choices=EXPORT_CHOICES, default=BOTH,
                   help="the paths the student's export carries (as nmt export --precision)")
    p.add_argument("--recommended-beam-size", type=int, default=STUDENT_BEAM,
                   help=f"the student's default beam (default {STUDENT_BEAM}: greedy)")
    p.add_argument("--metadata", type=Path, help="JSON file of extra export metadata")
    p.add_argument("--until", choices=STEPS, default=STEPS[-1],
                   help="the last step to run (default: export, or train without --out)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    """`nmt distill`: runs `run` with the parsed arguments."""
    from training.config import parse_overrides

    config = DistillConfig(
        teacher=Path(args.teacher), config=args.config, run_dir=args.run, out=args.out,
        version=args.version, overrides=parse_overrides(args.set), beam_size=args.beam_size,
        batch_size=args.batch_size, window=args.window, precision=args.precision,
        max_time=args.max_time, average=args.average, export_precision=args.export_precision,
        recommended_beam_size=args.recommended_beam_size,
        metadata=json.loads(args.metadata.read_text()) if args.metadata else {})
    try:
        result = run(config, until=args.until,
                     progress=not args.no_progress and sys.stderr.isatty())
    except DistillInterrupted as error:
        print(f"nmt distill: {error}", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("\nnmt distill: interrupted; rerun the same command to continue", file=sys.stderr)
        return 130
    done = ", ".join(result.ran) or "nothing"
    skipped = f" ({', '.join(result.skipped)} done before)" if result.skipped else ""
    print(f"{result.run_dir}: ran {done}{skipped}")
    if result.export is not None:
        print(result.export)
    return 0
