"""`nmt batch IN_DIR OUT_DIR`: the command-line side of `batch.file_tree`.

Builds the job from `nmt batch`'s arguments, shows the files done, and sums up:
one line per file that could not be translated, then the totals; the exit
status is 1 when a file was left untranslated (the others are written), 130
when interrupted (rerun with --resume).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

# Line-file flags that mean nothing for a directory: (attribute, flag, default).
_LINE_FLAGS = (("format", "--format", None), ("document_format", "--document-format", None),
               ("input_format", "--input-format", None), ("alignment", "--alignment", False))


def add_file_tree_options(parser: argparse.ArgumentParser) -> None:
    """Adds the options of a directory INPUT: `--overwrite`, `--no-fuzzy`, `--cue-by-cue`."""
    group = parser.add_argument_group("a directory INPUT (files translated whole)")
    group.add_argument("--overwrite", action="store_true",
                       help="PO and XLIFF: translate messages that have a translation too "
                            "(default: keep them)")
    group.add_argument("--no-fuzzy", dest="fuzzy", action="store_false",
                       help="do not mark machine translations for review (PO fuzzy, XLIFF 1.2 "
                            "needs-review-translation)")
    group.add_argument("--cue-by-cue", dest="merge_cues", action="store_false",
                       help="subtitles: translate each cue on its own (default: a sentence "
                            "over several cues is translated whole and split back)")


def run_file_tree(args: argparse.Namespace, make_engine: Callable) -> int:
    """`nmt batch IN_DIR OUT_DIR`; `make_engine(args)` gives the engine (local or server)."""
    from batch.file_tree import TreeConfig, translate_tree
    from batch.options import read_glossary
    from documents.file_formats import FileSettings

    for attribute, flag, default in _LINE_FLAGS:
        if getattr(args, attribute) != default:
            raise ValueError(f"{flag} is for a file of lines; {args.input} is a directory, "
                             "whose files are translated whole in their own format: drop it")
    settings = FileSettings(overwrite=args.overwrite, review=args.fuzzy,
                            merge_cues=args.merge_cues, placeholders=args.placeholders,
                            batch_size=args.batch_size)
    config = TreeConfig(args.input, args.output, settings, read_glossary(args), args.resume)
    engine = make_engine(args)
    started = time.perf_counter()
    try:
        report = translate_tree(config, engine, _FileProgress(not args.no_progress))
    except KeyboardInterrupt:
        print(f"\ninterrupted; rerun with --resume to continue {args.output}", file=sys.stderr)
        return 130
    finally:
        getattr(engine, "close", lambda: None)()
    for relative, message in report.errors:
        print(f"{relative}: not translated: {message}", file=sys.stderr)
    skipped = f", {len(report.skipped)} already there" if report.skipped else ""
    print(f"{args.output}: {len(report.translated)} files translated{skipped}, "
          f"{len(report.errors)} with errors, {report.other_files} of other formats left out, "
          f"in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return 1 if report.errors else 0


class _FileProgress:
    """A bar of files on a terminal's stderr (tqdm), nothing elsewhere."""

    def __init__(self, enabled: bool):
        self.enabled, self.bar = enabled and sys.stderr.isatty(), None

    def __call__(self, relative: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="file", file=sys.stderr, leave=False)
        self.bar.set_postfix_str(relative[-40:], refresh=False)
        self.bar.update(done - self.bar.n)
        if done == total:
            self.bar.close()
