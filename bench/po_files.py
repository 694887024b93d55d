"""Whole gettext PO files: the templates of `files-enfr/` filled by the model, scored and checked.

- `python-docs-*.po` (Python documentation, reStructuredText prose): a
  temporary copy with every msgstr emptied (fuzzy flags and `#|` lines
  dropped) is translated; the references are the file's own translations
  that are not fuzzy.
- `godot-extractable.pot` (Godot user-interface strings): translated as it
  is; the references are `godot-extractable-fr.po`'s.
- `godot-editor.pot` (6,421 strings): timed only, not scored (its French is
  in the training data); `--no-scale` leaves it out.

Printed per file: messages written, seconds and messages/s (model loaded
beforehand), chrF and BLEU over the messages with a reference (sacrebleu;
each plural form one segment), and whether the structure was kept:
entries (contexts, msgids, comments, references, obsolete entries), flags
(the input's plus `fuzzy` on what was written), placeholders (each written
form has its msgid's, `documents.placeholders`), lines changed outside
the written msgstr, flags and header fields (0 expected), `msgfmt --check`
(and with `--use-fuzzy`, which checks the machine translations too), and
reStructuredText's inline markup kept: each role, literal, reference and a
line's final `::` of a msgid (kind `rest` of `documents.placeholders`:
:func:`len`, ``code``, `text <url>`_, |version|, [#]_) found in the
translation exactly as often. `--no-rest` lets the model read that markup (as
before it was protected); by default a file whose references name `.rst`
files keeps it (`documents.po.is_restructuredtext`). The round trip: the
original python-docs file translated as it is (its translations kept, its few
untranslated messages filled): lines changed outside what was written (0
expected), against the lines polib's own save rewrites in the original file at
its best wrap width.

    python bench/po_files.py [--model models/en-fr] [--data ../shared/data]
        [--files godot-extractable.pot ...] [--limit N] [--no-scale] [--batch-size 64]
        [--rest | --no-rest]
"""

from __future__ import annotations

import argparse
import collections
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import polib  # noqa: E402

from bench.support.inputs import add_model_and_data_arguments, machine  # noqa: E402
from documents.placeholders import KINDS, find_placeholders  # noqa: E402
from documents.po import FUZZY, PoOptions, read_po, translate_po  # noqa: E402
from nmt.constants import DEFAULT_BATCH_SIZE  # noqa: E402
from nmt.evaluation.metrics import corpus_scores  # noqa: E402

SCORED = ("python-docs-faq-general.po", "python-docs-tutorial-introduction.po",
          "python-docs-tutorial-controlflow.po", "godot-extractable.pot")
SCALE = "godot-editor.pot"
REFERENCES = {"godot-extractable.pot": "godot-extractable-fr.po"}


def key(entry: polib.POEntry) -> tuple:
    return entry.msgctxt, entry.msgid, entry.msgid_plural


def forms(entry: polib.POEntry) -> dict[int, str]:
    return dict(entry.msgstr_plural) if entry.msgid_plural else {0: entry.msgstr}


def references_of(catalog: polib.POFile) -> dict[tuple, dict[int, str]]:
    """Each translated message's forms, fuzzy and obsolete ones aside."""
    return {key(e): forms(e) for e in catalog
            if not e.obsolete and FUZZY not in e.flags and all(forms(e).values())}


def emptied(catalog: polib.POFile) -> bytes:
    """The catalogue with every message untranslated, as `nmt translate-file` would get it."""
    for entry in catalog:
        if entry.obsolete:
            continue
        entry.msgstr = ""
        entry.msgstr_plural = {k: "" for k in entry.msgstr_plural}
        entry.flags = [flag for flag in entry.flags if flag != FUZZY]
        entry.previous_msgctxt = entry.previous_msgid = entry.previous_msgid_plural = None
    return str(catalog).encode("utf-8") + b"\n"


def original(data_dir: Path, name: str) -> Path:
    path = data_dir / "files-enfr" / name
    if not path.is_file():
        raise SystemExit(f"No {name} at {path}; pass --data DIR")
    return path


def prepare(data_dir: Path, name: str, limit: int) -> tuple[bytes, dict]:
    """The input to translate (the first `limit` messages, 0: all) and its references."""
    path = original(data_dir, name)
    catalog = polib.pofile(str(path))
    if name.endswith(".pot"):
        reference = REFERENCES.get(name)
        references = (references_of(polib.pofile(str(path.parent / reference)))
                      if reference else {})
        data = path.read_bytes()
    else:
        references = references_of(catalog)
        data = emptied(catalog)
    if limit:
        catalog = polib.pofile(data.decode("utf-8"))
        for entry in [e for e in catalog if not e.obsolete][limit:]:
            catalog.remove(entry)
        data = str(catalog).encode("utf-8") + b"\n"
    return data, references


def placeholder_counts(text: str, kinds=KINDS) -> collections.Counter:
    return collections.Counter(p.text for p in find_placeholders(text, kinds))


def structure(before: bytes, after: bytes) -> dict:
    """What of the input the output kept (see the module docstring)."""
    given, written = polib.pofile(before.decode("utf-8")), polib.pofile(after.decode("utf-8"))
    kept = [(key(e), e.obsolete, e.comment, e.tcomment, e.occurrences) for e in given] == [
        (key(e), e.obsolete, e.comment, e.tcomment, e.occurrences) for e in written]
    flags = all([f for f in a.flags if f != FUZZY] == [f for f in b.flags if f != FUZZY]
                for a, b in zip(given, written, strict=True)) if kept else False
    found = collections.Counter(dict.fromkeys(
        ("translations", "translations kept", "forms", "with placeholders", "placeholders kept",
         "rest", "rest kept"), 0))
    for a, b in zip(given, written, strict=True):
        if not a.obsolete and any(forms(a).values()):
            found["translations"] += 1
            found["translations kept"] += all(
                text == forms(b)[k] for k, text in forms(a).items() if text)
        if a.obsolete or forms(a) == forms(b):
            continue
        for k, text in forms(b).items():
            source = a.msgid if k == 0 else a.msgid_plural
            wanted = placeholder_counts(source)
            found["forms"] += 1
            found["with placeholders"] += bool(wanted)
            found["placeholders kept"] += bool(wanted) and placeholder_counts(text) == wanted
            rest, got = placeholder_counts(source, ("rest",)), placeholder_counts(text, ("rest",))
            found["rest"] += sum(rest.values())
            found["rest kept"] += sum(n for markup, n in rest.items() if got[markup] == n)
    return {"entries": kept, "flags": flags,
            "fuzzy": sum(FUZZY in e.flags for e in written if not e.obsolete),
            **found, "other lines changed": other_changes(before, after)}


def other_changes(before: bytes, after: bytes) -> int:
    """Lines changed, added or removed beyond msgstr lines (the header's too) and flags.

    (The translations kept are compared by `structure`.)
    """
    matcher = difflib.SequenceMatcher(None, _other_lines(before), _other_lines(after),
                                      autojunk=False)
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in matcher.get_opcodes()
               if tag != "equal")


def _other_lines(data: bytes) -> list[str]:
    """The lines of a PO file but its msgstr lines (continuations included) and flags."""
    lines, in_msgstr = [], False
    for line in data.decode("utf-8").splitlines():
        body = line.strip()
        in_msgstr = body.startswith("msgstr") or (in_msgstr and body.startswith('"'))
        if not in_msgstr and not body.startswith("#,"):
            lines.append(line)
    return lines


def polib_rewrites(data: bytes) -> tuple[int, int]:
    """`(lines, width)`: the fewest input lines polib's own save changes, and at which width."""
    text = data.decode("utf-8")
    best = None
    for width in range(76, 82):
        catalog = polib.pofile(text, wrapwidth=width)
        saved = str(catalog) + "\n"
        changed = sum(1 for line in difflib.unified_diff(text.splitlines(), saved.splitlines(),
                                                         lineterm="", n=0)
                      if line.startswith("-") and not line.startswith("---"))
        best = min(best or (changed, width), (changed, width))
    return best


def msgfmt(data: bytes, use_fuzzy: bool) -> str:
    """`msgfmt --check`'s verdict: "clean", or its exit code and messages counted."""
    if shutil.which("msgfmt") is None:
        return "msgfmt not installed (apt-get install gettext)"
    with tempfile.NamedTemporaryFile(suffix=".po") as f:
        f.write(data)
        f.flush()
        done = subprocess.run(["msgfmt", "--check", *(["--use-fuzzy"] * use_fuzzy), "-o",
                               os.devnull, f.name], capture_output=True, text=True)
    lines = done.stderr.strip().splitlines()
    return "clean" if done.returncode == 0 and not lines else (
        f"exit {done.returncode}, {len(lines)} lines: {lines[:2]}")


def scores(after: bytes, references: dict) -> tuple | None:
    """Corpus scores of the written messages that have a reference (one segment a form)."""
    hypotheses, wanted = [], []
    for entry in polib.pofile(after.decode("utf-8")):
        reference = references.get(key(entry))
        if reference is None or entry.obsolete:
            continue
        for k, text in forms(entry).items():
            if k in reference:
                hypotheses.append(text)
                wanted.append([reference[k]])
    return (corpus_scores(hypotheses, wanted), len(hypotheses)) if hypotheses else None


def run_file(name: str, data: bytes, references: dict, translate, options: PoOptions) -> None:
    started = time.perf_counter()
    result = translate_po(read_po(data, name), translate, options)
    seconds = time.perf_counter() - started
    report = result.report
    print(f"{name}: {report.written} of {report.messages} messages written ("
          f"{report.sentences} distinct sentences) in {seconds:.1f} s, "
          f"{report.written / seconds:.1f} messages/s")
    found = scores(result.data, references)
    if found:
        print(f"  chrF {found[0].chrf:.2f}  BLEU {found[0].bleu:.2f}  ({found[1]} segments "
              f"with a reference)")
    kept = structure(data, result.data)
    print(f"  entries, comments, contexts kept: {kept['entries']}; flags kept: {kept['flags']}"
          f" (+ fuzzy on {kept['fuzzy']}); other lines changed: {kept['other lines changed']}")
    print(f"  placeholders kept in {kept['placeholders kept']} of {kept['with placeholders']} "
          f"forms that have some; reST roles and literals kept {kept['rest kept']} of "
          f"{kept['rest']}")
    print(f"  msgfmt --check: {msgfmt(result.data, False)}; with --use-fuzzy: "
          f"{msgfmt(result.data, True)}")
    lines, width = polib_rewrites(data)
    print(f"  polib's own save would rewrite {lines} of the input's {len(data.splitlines())} "
          f"lines (at its best wrap width, {width})")


def round_trip(path: Path, translate, options: PoOptions) -> None:
    """The original file translated as it is: what changed beyond what was written."""
    data = path.read_bytes()
    result = translate_po(read_po(data, path.name), translate, options)
    lines, width = polib_rewrites(data)
    kept = structure(data, result.data)
    print(f"{path.name} as it is: {result.report.written} messages written, "
          f"{kept['translations kept']} of {kept['translations']} translations kept as they "
          f"were; lines changed beyond them: {kept['other lines changed']} (polib's own save "
          f"rewrites {lines} of {len(data.splitlines())} lines, at its best wrap width "
          f"{width}); msgfmt --check: {msgfmt(result.data, False)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_and_data_arguments(parser)
    parser.add_argument("--files", nargs="+", default=list(SCORED), choices=(*SCORED, SCALE))
    parser.add_argument("--no-scale", action="store_true", help=f"leave {SCALE} out")
    parser.add_argument("--limit", type=int, default=0, help="first N messages of each file")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
                        help="sentences per model call")
    parser.add_argument("--rest", action=argparse.BooleanOptionalAction, default=None,
                        help="keep reStructuredText markup (default: in files whose references "
                             "name .rst files); --no-rest lets the model read it")
    args = parser.parse_args(argv)
    names = [*args.files, *([] if args.no_scale or SCALE in args.files else [SCALE])]
    inputs = {name: prepare(args.data, name, args.limit) for name in names}

    from nmt.inference.translator import Translator

    translator = Translator.load(args.model)
    options = translator.info.default_options
    print(f"model {translator.info.path} (beam {options.beam_size}); {machine()}")
    def translate(sentences):
        return translator.translate(sentences, options)

    po_options = PoOptions(batch_size=args.batch_size, rest=args.rest)
    for name, (data, references) in inputs.items():
        run_file(name, data, references, translate, po_options)
    for name in names:
        if name.startswith("python-docs-"):
            round_trip(original(args.data, name), translate, po_options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
