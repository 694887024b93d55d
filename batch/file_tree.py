"""`nmt batch IN_DIR OUT_DIR`: every file of a directory tree translated, its format kept.

The files are those of a whole-file format (`documents.file_formats`: PO/POT,
XLIFF, SRT/WebVTT, .docx, Markdown), found under IN_DIR at any depth (hidden
files and directories left out); each translation is written at the same
relative path under OUT_DIR, atomically, so an output file is always whole.
Files of other formats are counted, not copied.

A run can stop anywhere and continue with `resume`: OUT_DIR holds the job's
fingerprint (`.nmt-batch.json`: engine, options, glossary), a resumed job must
have the same, and it skips every file whose output is there. A file that
cannot be read as its format (or whose sentence the engine rejects) is
reported and the others go on; an engine that fails (a server gone) stops the
job, to be resumed.

    report = translate_tree(TreeConfig(Path("docs"), Path("docs-fr")), engine)
    report.translated, report.errors    # [(relative path, summary)], [(path, message)]

Nothing here imports TensorFlow: `engine` is any `batch.engines.Engine`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

from batch.engines import BadInputError, Engine
from batch.job import glossary_digest
from documents.file_formats import FILE_FORMATS, FileSettings, read_file
from documents.glossary import Glossary
from documents.sentences import Translate
from documents.terminology import translating_with_glossary
from nmt.atomic_write import write_atomically

log = logging.getLogger("nmt.batch")

JOB_FILE = ".nmt-batch.json"  # in OUT_DIR: the fingerprint of the job that writes it
_EXTENSIONS = {ext: format for format, exts in FILE_FORMATS.items() for ext in exts}

# Called with `(relative path, files done, files to do)` after each file.
TreeProgress = Callable[[str, int, int], None]


@dataclasses.dataclass(frozen=True)
class TreeConfig:
    """A directory job.

    Attributes:
        input: the directory to read (never written).
        output: the directory to write (made if missing); must not be inside
            `input`, nor `input` inside it.
        settings: how each file is translated.
        glossary: terms written into every sentence's translation; None: none.
        resume: continue a job begun in `output` (same fingerprint), skipping
            the files already written.
    """

    input: Path
    output: Path
    settings: FileSettings = FileSettings()
    glossary: Glossary | None = None
    resume: bool = False

    def __post_init__(self) -> None:
        source, target = Path(self.input).resolve(), Path(self.output).resolve()
        if not source.is_dir():
            raise FileNotFoundError(f"no directory {self.input}")
        if source == target or source in target.parents or target in source.parents:
            raise ValueError(f"OUT_DIR ({self.output}) and IN_DIR ({self.input}) overlap: write "
                             "the translations to a directory outside the one read")
        if target.exists() and not target.is_dir():
            raise ValueError(f"OUT_DIR ({self.output}) is a file: name a directory")


@dataclasses.dataclass
class TreeReport:
    """What a directory job did.

    Attributes:
        translated: `(relative path, summary)` of each file written by this run.
        skipped: relative paths already written by the run resumed.
        errors: `(relative path, message)` of each file left untranslated.
        other_files: files of no whole-file format, left out.
    """

    translated: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    skipped: list[str] = dataclasses.field(default_factory=list)
    errors: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    other_files: int = 0


def find_files(root: Path) -> tuple[list[tuple[str, str]], int]:
    """The files under `root` of a whole-file format, and how many others there are.

    Returns:
        (`[(relative path with "/", format)]` sorted, files of no such format);
        hidden files and directories (a name starting with ".") are not looked at.
    """
    found, others = [], 0
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith("."))
        for name in files:
            if name.startswith("."):
                continue
            relative = Path(directory, name).relative_to(root).as_posix()
            format = _EXTENSIONS.get(Path(name).suffix.lower())
            if format is None:
                others += 1
            else:
                found.append((relative, format))
    return sorted(found), others


def tree_fingerprint(config: TreeConfig, engine: Engine) -> dict:
    """Everything that decides the output files; a job resumes only if it is unchanged."""
    facts = {"input": str(Path(config.input).resolve()), "engine": engine.settings(),
             "settings": dataclasses.asdict(config.settings),
             "glossary": None if config.glossary is None else glossary_digest(config.glossary)}
    return json.loads(json.dumps(facts))  # as saved: lists, not tuples


def translate_tree(config: TreeConfig, engine: Engine,
                   progress: TreeProgress | None = None) -> TreeReport:
    """Translates every file of `config.input` into `config.output` (module docstring).

    Raises:
        ValueError: OUT_DIR holds another job's files (without `resume`), or the
            job resumed has another fingerprint (the message names what changed).
        Exception: whatever the engine raises besides `BadInputError` (resume later).
    """
    files, others = find_files(Path(config.input))
    _start(config, tree_fingerprint(config, engine), [path for path, _ in files])
    report = TreeReport(other_files=others)
    translate = translating_with_glossary(engine.translate, config.glossary)
    for done, (relative, format) in enumerate(files, 1):
        target = Path(config.output, relative)
        if target.exists():
            report.skipped.append(relative)
        else:
            _translate_one(config, relative, format, translate, report)
        if progress is not None:
            progress(relative, done, len(files))
    return report


def _start(config: TreeConfig, facts: dict, relatives: list[str]) -> None:
    """Checks OUT_DIR against the job and records the job's fingerprint there."""
    job_file = Path(config.output, JOB_FILE)
    if config.resume and job_file.is_file():
        saved = json.loads(job_file.read_text(encoding="utf-8"))
        changed = sorted(k for k in saved.keys() | facts.keys() if saved.get(k) != facts.get(k))
        if changed:
            raise ValueError(f"cannot resume: {', '.join(changed)} changed since {job_file} was "
                             "written; rerun without --resume into an empty directory")
        return
    if not config.resume:
        written = [r for r in relatives if Path(config.output, r).exists()]
        if written or job_file.exists():
            example = f" (e.g. {written[0]})" if written else ""
            raise ValueError(f"{config.output} already holds translations{example}: add "
                             "--resume to continue that job, or name an empty directory")
    Path(config.output).mkdir(parents=True, exist_ok=True)
    write_atomically(job_file, (json.dumps(facts, indent=2) + "\n").encode())


def _translate_one(config: TreeConfig, relative: str, format: str, translate: Translate,
                   report: TreeReport) -> None:
    """Translates one file into OUT_DIR, or records why it could not be."""
    source = Path(config.input, relative)
    try:
        result = read_file(format, source.read_bytes(), relative, config.settings)(translate)
    except (ValueError, BadInputError, UnicodeError) as error:  # the file, not the engine
        log.warning("%s: not translated: %s", relative, error)
        report.errors.append((relative, str(error)))
        return
    target = Path(config.output, relative)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(target, result.data)
    report.translated.append((relative, result.summary))
