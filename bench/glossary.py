"""Do the user's terms reach the translation? WMT 2021 terminology, with and without a glossary.

Reads `terminology-enfr/dev.jsonl` (see ../shared/data/README.md): English
sentences, a French reference, and per term occurrence the French forms a
translation must use. Each sentence gets a glossary of its own terms, as the
task gave them: the term's source -> the form of its `targets` that the
reference uses (else the first). Translated with the shipped model:

- none: the plain translation;
- aligned (approach (a), `documents.terminology.apply_terms`): the
  target words aligned to each term replaced by its glossary target, step
  step by step: as before (English plurals only), + the
  English forms of the source (`documents.english_forms`), + the French form
  the English asks for (`documents.agreement`), + acronyms matched in
  capitals only (what ships); then what ships without the article
  adjustment, and without inserting unaligned terms;
- protected (`protect_terms`): the model reads each term as a number
  (7, 8...), replaced by the term where it was copied, else placed as (a);
- with `--annotated-model`, a model trained with inline term annotations
  (`training.term_annotation`): its plain translation, what ships applied to
  it, and annotated (`annotate_terms`): it reads each term followed by the
  form to write, and a term it did not write is placed as (a); the last
  also with each glossary in dictionary forms.

Printed per method: term exact match (the WMT 2021 scorer's: a term occurrence
counts when one of its French forms is in the output, lowercased, on whole
tokens, each output position counted for one occurrence only), the same with
only the form its reference uses (`ref.f.`: `hospitalisés`, where the exact
match also takes `hospitaliser`), window overlap
(of the two reference words on each side of the term, the share also around
it in the output), BLEU and chrF against the reference (sacrebleu), the terms
placed by alignment / next to a neighbour (no target word aligned) / as a
copied stand-in, and sentences per second (translation included; the glossary
step's own milliseconds per sentence below). Then the inflection and case steps again with
each sentence's glossary in dictionary forms (`dictionary_entry`:
`hospitalize -> hospitaliser`, `symptoms -> symptôme`), and what
English plural matching buys: each term written in the singular (`symptoms`
-> `symptom`, with a singular French form), matched with and without
inflection.

    python bench/glossary.py [--model models/en-fr] [--data ../shared/data]
        [--set dev] [--limit N] [--batch-size 32] [--cache FILE]
        [--annotated-model DIR [--annotated-cache FILE]]

`--cache FILE` keeps the model's translations (text, word links, and the
seconds each took) as JSON, so that a change to the pure-Python part measures
in seconds; it belongs to one model (and machine): delete it for another. A
sentence two methods read alike (one without terms) is translated once and
its time counted for both. Tune on `dev` only; `--set test` is for a final
figure.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.support.inputs import add_model_and_data_arguments, machine  # noqa: E402
from documents.english_forms import only_verb  # noqa: E402
from documents.french_forms import Wanted, kind_of  # noqa: E402
from documents.glossary import Glossary, GlossaryEntry  # noqa: E402
from documents.terminology import TermsApplied, annotate_terms, apply_terms, protect_terms  # noqa: E402
from nmt.evaluation.metrics import corpus_scores  # noqa: E402
from nmt.types import parse_pharaoh  # noqa: E402

TERMINOLOGY = Path("terminology-enfr")
WINDOW = 2  # words on each side of a term, for the window overlap
_TOKEN = re.compile(r"\w+|[^\w\s]")

# The variants of approach (a): name, the glossary's options, `apply_terms`'s options.
# The first four are the inflection and case steps, each adding one; the fourth is what ships.
SHIPS = "aligned"
ALIGNED = (
    ("plurals only", {"forms": frozenset({"plural"}), "acronym_case": False},
     {"agree": False}),
    ("+ English forms", {"acronym_case": False}, {"agree": False}),
    ("+ French agreement", {"acronym_case": False}, {}),
    (SHIPS, {}, {}),
    ("aligned, articles as given", {}, {"articles": False}),
    ("aligned, no insertion", {}, {"insert": False}),
)
METHODS = ("none", *(name for name, _, _ in ALIGNED), "protected (stand-ins)")
ANNOTATED = ("trained: none", f"trained: {SHIPS}", "trained: annotated",
             "trained: annotated, dict.")
Output = tuple[str, tuple[tuple[int, int], ...]]  # a translation: text, word links


def read_set(data: Path, name: str = "dev", limit: int = 0) -> list[dict]:
    """The sentences of `terminology-enfr/<name>.jsonl`, the first `limit` (0: all)."""
    path = data / TERMINOLOGY / f"{name}.jsonl"
    if not path.is_file():
        raise SystemExit(f"No terminology set at {path} (skipped); pass --data DIR")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]
    return rows[:limit] if limit else rows


def tokens(text: str) -> list[str]:
    """Lowercased words and punctuation marks, as the term forms are compared."""
    return _TOKEN.findall(text.lower().replace("\u2019", "'"))


def positions(form: str, words: Sequence[str]) -> list[int]:
    """Where the tokens of `form` start in `words`."""
    needle = tokens(form)
    return [k for k in range(len(words) - len(needle) + 1)
            if needle and list(words[k:k + len(needle)]) == needle]


def reference_form(term: dict, reference: str) -> str:
    """The term's French form the reference uses (the first of them), else its first form."""
    words = tokens(reference)
    return next((form for form in term["targets"] if positions(form, words)),
                term["targets"][0])


def glossary_of(row: dict, singular: bool = False, inflect: bool = True,
                dictionary: bool = False, **options) -> Glossary:
    """The sentence's glossary: each term -> the form its reference uses.

    `singular`: each term written in the singular where its last word reads as an
    English plural and the term has a singular French form (`symptoms` -> `symptom`).
    `dictionary`: each term in its dictionary forms on both sides (`dictionary_entry`).
    `options`: `Glossary`'s (`forms`, `acronym_case`).
    """
    entries: dict[str, GlossaryEntry] = {}
    for term in row["terms"]:
        entry = GlossaryEntry(term["source"], reference_form(term, row["reference"]))
        if singular:
            entry = singular_entry(term) or entry
        if dictionary:
            entry = dictionary_entry(term)
        entries.setdefault(entry.source.casefold(), entry)
    glossary = Glossary.from_entries(entries.values(), inflect=inflect)
    return dataclasses.replace(glossary, **options) if options else glossary


def singular_entry(term: dict) -> GlossaryEntry | None:
    """The term written in the singular, with a singular French form (one of its forms,
    else `french_singular`); None where its last word is no regular English plural."""
    source = term["source"]
    if not re.search(r"[^su]s$|[^s]es$", source) or source.endswith(("ss", "us", "is")):
        return None
    if source.endswith("ies"):
        stem = source[:-3] + "y"
    elif re.search(r"(s|x|z|ch|sh)es$", source):
        stem = source[:-2]
    else:
        stem = source[:-1]
    forms = [form for form in term["targets"] if form.split(" ")[0][-1:] not in "sx"]
    return GlossaryEntry(stem, forms[0] if forms else french_singular(term["targets"][0]))


def dictionary_entry(term: dict) -> GlossaryEntry:
    """The term as a dictionary writes it, whatever its sentence needs: English in the
    singular (`singular_entry`), French the first of its forms that reads as an infinitive
    where the English is a verb only (`hospitalize -> hospitaliser`), else the first that
    reads as a singular noun (`outbreak -> épidémie`), else the first in the singular."""
    source = (singular_entry(term) or GlossaryEntry(term["source"], "")).source
    kinds = [(form, kind_of(form)) for form in term["targets"]]
    verb = only_verb(source.split(" ")[0])
    choice = next((form for form, kind in kinds if verb and kind.kind == "infinitive"), None)
    choice = choice or next((form for form, kind in kinds
                             if kind == Wanted("noun", False)), None)
    return GlossaryEntry(source, choice or french_singular(term["targets"][0]))


def french_singular(term: str) -> str:
    """`term`'s words before a preposition in the singular, by the regular rules
    (`essais cliniques` -> `essai clinique`); the inverse of `french_plural`, roughly."""
    words = term.split(" ")
    for k, word in enumerate(words):
        if word in ("de", "d'", "du", "des", "à", "en", "pour"):
            break
        if word.endswith("eaux"):
            words[k] = word[:-1]
        elif word.endswith("aux"):
            words[k] = word[:-3] + "al"
        elif word.endswith("s") and not word.endswith(("ss", "us", "ès")) and len(word) > 3:
            words[k] = word[:-1]
    return " ".join(words)


def term_matches(rows: Sequence[dict], outputs: Sequence[str]) -> tuple[int, int]:
    """`(matched, occurrences)`: the WMT 2021 exact match, lowercased, on whole tokens; a
    position of the output counts for one occurrence only."""
    matched = total = 0
    for row, output in zip(rows, outputs, strict=True):
        words, used = tokens(output), set()
        for term in row["terms"]:
            total += 1
            for form in term["targets"]:
                free = [k for k in positions(form, words) if k not in used]
                if free:
                    used.add(free[0])
                    matched += 1
                    break
    return matched, total


def reference_form_matches(rows: Sequence[dict], outputs: Sequence[str]) -> int:
    """Term occurrences whose output has the very form the reference uses (`hospitalisés`,
    not `hospitaliser`): what writing the form the sentence asks for buys, which the exact
    match (any of the term's forms) does not see."""
    matched = 0
    for row, output in zip(rows, outputs, strict=True):
        words, used = tokens(output), set()
        for term in row["terms"]:
            free = [k for k in positions(reference_form(term, row["reference"]), words)
                    if k not in used]
            if free:
                used.add(free[0])
                matched += 1
    return matched


def _window(words: Sequence[str], start: int, length: int) -> list[str]:
    """The WINDOW words (punctuation aside) on each side of `words[start:start + length]`."""
    left = [w for w in reversed(words[:start]) if w[0].isalnum()]
    right = [w for w in words[start + length:] if w[0].isalnum()]
    return left[:WINDOW] + right[:WINDOW]


def window_overlap(rows: Sequence[dict], outputs: Sequence[str]) -> float:
    """Mean over the term occurrences found in their reference: the share of the reference's
    window words around the term also around its first occurrence in the output (0 where
    the output lacks the term)."""
    shares = []
    for row, output in zip(rows, outputs, strict=True):
        reference, words = tokens(row["reference"]), tokens(output)
        for term in row["terms"]:
            form = reference_form(term, row["reference"])
            where = positions(form, reference)
            if not where:
                continue
            expected = _window(reference, where[0], len(tokens(form)))
            if not expected:
                continue
            found = [(k, f) for f in term["targets"] for k in positions(f, words)]
            around = _window(words, found[0][0], len(tokens(found[0][1]))) if found else []
            hits = 0
            for word in expected:
                if word in around:
                    around.remove(word)
                    hits += 1
            shares.append(hits / len(expected))
    return sum(shares) / len(shares) if shares else 0.0


def score(rows: Sequence[dict], outputs: Sequence[str], seconds: float,
          applied: Sequence[TermsApplied] = ()) -> dict:
    """Term exact match, window overlap, BLEU, chrF, placements and speed of `outputs`."""
    scores = corpus_scores(list(outputs), [[row["reference"]] for row in rows])
    matched, total = term_matches(rows, outputs)
    return {"matched": matched, "terms": total, "window": window_overlap(rows, outputs),
            "reference form": reference_form_matches(rows, outputs),
            "bleu": scores.bleu, "chrf": scores.chrf,
            "placed": Counter(a.placement for result in applied for a in result.applied),
            "per_second": len(rows) / seconds if seconds else float("inf")}


class Translations:
    """The model's translations (text, word links) of sentences, kept as JSON in `path`,
    with the seconds each took (its batch's time over its size) when it was translated."""

    def __init__(self, translate: Callable[[list[str]], Sequence] | None,
                 path: Path | None = None, batch_size: int = 32):
        self.translate, self.path, self.batch_size = translate, path, batch_size
        self.held: dict[str, list] = {}
        if path is not None and path.exists():
            self.held = json.loads(path.read_text(encoding="utf-8"))

    def __call__(self, sentences: Sequence[str]) -> list[Output]:
        missing = list(dict.fromkeys(s for s in sentences if s not in self.held))
        for start in range(0, len(missing), self.batch_size):
            chunk = missing[start:start + self.batch_size]
            started = time.perf_counter()
            results = self.translate(chunk)
            each = (time.perf_counter() - started) / len(chunk)
            for sentence, result in zip(chunk, results, strict=True):
                self.held[sentence] = [result.text, result.best.pharaoh(), each]
            if self.path is not None:  # after each batch: an interrupted run keeps its work
                self.path.write_text(json.dumps(self.held, ensure_ascii=False),
                                     encoding="utf-8")
        return [(self.held[s][0], parse_pharaoh(self.held[s][1])) for s in sentences]

    def seconds(self, sentences: Sequence[str]) -> float:
        """What translating `sentences` took (each counted as often as it is given, so a
        sentence two methods share counts for both)."""
        return sum(self.held[s][2] for s in sentences)


def compare(rows: Sequence[dict], translations: Translations,
            annotated: Translations | None = None) -> dict:
    """Every method on `rows` (see the module docstring); the scores of each, by name.
    `annotated`: the translations of a model trained with inline annotations."""
    sources = [row["source"] for row in rows]
    glossaries = [glossary_of(row) for row in rows]
    plain = translations(sources)
    translated = translations.seconds(sources)
    found = {"none": score(rows, [text for text, _ in plain], translated)}
    for name, options, apply_options in ALIGNED:
        started = time.perf_counter()
        variant = [dataclasses.replace(g, **options) for g in glossaries] if options else glossaries
        applied = [apply_terms(source, text, links, glossary, **apply_options)
                   for source, (text, links), glossary in zip(sources, plain, variant,
                                                               strict=True)]
        step = time.perf_counter() - started
        found[name] = score(rows, [a.text for a in applied], translated + step, applied)
        found[name]["step_ms"] = 1000 * step / max(len(rows), 1)
    started = time.perf_counter()
    protected = [protect_terms(source, glossary)
                 for source, glossary in zip(sources, glossaries, strict=True)]
    step = time.perf_counter() - started
    read = translations([p.text for p in protected])
    started = time.perf_counter()
    restored = [p.restore(text, links) for p, (text, links) in zip(protected, read, strict=True)]
    step += time.perf_counter() - started
    found["protected (stand-ins)"] = score(
        rows, [r.text for r in restored],
        translations.seconds([p.text for p in protected]) + step, restored)
    if annotated is not None:
        found.update(trained(rows, annotated))
    found["terms found"] = sum(len(g.find(s)) for g, s in zip(glossaries, sources, strict=True))
    found["plurals"] = plurals(rows, plain)
    found["dictionary"] = dictionary_forms(rows, plain, translated)
    return found


def trained(rows: Sequence[dict], translations: Translations) -> dict:
    """The methods of a model trained with inline annotations (`ANNOTATED`), by name."""
    sources = [row["source"] for row in rows]
    plain = translations(sources)
    translated = translations.seconds(sources)
    found = {ANNOTATED[0]: score(rows, [text for text, _ in plain], translated)}
    applied = [apply_terms(source, text, links, glossary_of(row))
               for source, (text, links), row in zip(sources, plain, rows, strict=True)]
    found[ANNOTATED[1]] = score(rows, [a.text for a in applied], translated, applied)
    for name, dictionary in zip(ANNOTATED[2:], (False, True), strict=True):
        started = time.perf_counter()
        read = [annotate_terms(source, glossary_of(row, dictionary=dictionary))
                for source, row in zip(sources, rows, strict=True)]
        outputs = translations([r.text for r in read])
        restored = [r.restore(text, links) for r, (text, links) in zip(read, outputs, strict=True)]
        step = time.perf_counter() - started
        found[name] = score(rows, [r.text for r in restored],
                            translations.seconds([r.text for r in read]) + step, restored)
    return found


def dictionary_forms(rows: Sequence[dict], plain: Sequence[Output], translated: float) -> dict:
    """The inflection and case steps (the first four of `ALIGNED`) with each sentence's glossary in
    dictionary forms (`dictionary_entry`): what inflection on both sides buys."""
    out = {}
    for name, options, apply_options in ALIGNED[:4]:
        applied = [apply_terms(row["source"], text, links,
                               glossary_of(row, dictionary=True, **options), **apply_options)
                   for row, (text, links) in zip(rows, plain, strict=True)]
        out[name] = score(rows, [a.text for a in applied], translated, applied)
    out["entries changed"] = sum(dictionary_entry(t) != GlossaryEntry(
        t["source"], reference_form(t, r["reference"])) for r in rows for t in r["terms"])
    return out


def plurals(rows: Sequence[dict], plain: Sequence[Output]) -> dict:
    """The glossary written in the singular, with and without English plural matching:
    term occurrences found in the source, and the aligned method's exact match."""
    out = {"singular entries": 0}
    for inflect in (True, False):
        outputs, found = [], 0
        for row, (text, links) in zip(rows, plain, strict=True):
            glossary = glossary_of(row, singular=True, inflect=inflect)
            found += len(glossary.find(row["source"]))
            outputs.append(apply_terms(row["source"], text, links, glossary).text)
        matched, _ = term_matches(rows, outputs)
        out["with inflection" if inflect else "as written"] = {"found": found,
                                                               "matched": matched}
    out["singular entries"] = sum(singular_entry(t) is not None for r in rows for t in r["terms"])
    return out


def _line(name: str, s: dict) -> str:
    placed = s["placed"]
    where = (f"{placed['found']:>5} {placed['aligned']:>5} {placed['neighbour']:>5} "
             f"{placed['copied']:>5}" if placed else f"{'':>23}")
    return (f"  {name:<28} {100 * s['matched'] / max(s['terms'], 1):6.1f}%  "
            f"{100 * s['reference form'] / max(s['terms'], 1):6.1f}%  {s['window']:6.3f}  "
            f"{s['bleu']:6.2f}  {s['chrf']:6.2f}  {where}  "
            f"{s['per_second']:7.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_model_and_data_arguments(parser)
    parser.add_argument("--set", default="dev", choices=("dev", "test"),
                        help="dev (default; tune on it) or test (a final figure only)")
    parser.add_argument("--limit", type=int, default=0, help="the first N sentences (0: all)")
    parser.add_argument("--batch-size", type=int, default=32, help="sentences per model call")
    parser.add_argument("--cache", type=Path, help="JSON file keeping the model's translations")
    parser.add_argument("--annotated-model", type=Path,
                        help="an export of a model trained with inline term annotations")
    parser.add_argument("--annotated-cache", type=Path,
                        help="JSON file keeping that model's translations")
    args = parser.parse_args(argv)

    rows = read_set(args.data, args.set, args.limit)
    from nmt.inference.translator import Translator

    translator = Translator.load(args.model)
    translator.translate(["Warm up."])  # the first call traces the graph: not timed
    print(f"model {translator.info.path}; {machine()}")
    translations = Translations(translator.translate, args.cache, args.batch_size)
    annotated = None
    if args.annotated_model is not None:
        trained_model = Translator.load(args.annotated_model)
        trained_model.translate(["Warm up."])
        print(f"trained with inline annotations: {trained_model.info.path}")
        annotated = Translations(trained_model.translate, args.annotated_cache, args.batch_size)
    started = time.perf_counter()
    found = compare(rows, translations, annotated)
    terms = sum(len(row["terms"]) for row in rows)
    print(f"{TERMINOLOGY}/{args.set}.jsonl: {len(rows)} sentences, {terms} term occurrences "
          f"({found['terms found']} found by the glossary), "
          f"{time.perf_counter() - started:.0f} s")
    print(f"  {'':<28} {'terms':>7}  {'ref.f.':>7}  {'window':>6}  {'BLEU':>6}  {'chrF':>6}  "
          f"{'found':>5} {'align':>5} {'neigh':>5} {'copy':>5}  {'sent/s':>7}")
    for name in METHODS + (ANNOTATED if annotated is not None else ()):
        print(_line(name, found[name]))
    print(f"  the glossary step alone (matching and placing, approach (a)): "
          f"{found[SHIPS]['step_ms']:.2f} ms per sentence (plurals only: "
          f"{found[ALIGNED[0][0]]['step_ms']:.2f} ms)")
    d = found["dictionary"]
    print(f"  each glossary in dictionary forms ({d['entries changed']} of the {terms} terms "
          "rewritten):")
    for name, _, _ in ALIGNED[:4]:
        print(_line(name, d[name]))
    p = found["plurals"]
    print(f"  glossary in the singular ({p['singular entries']} of the {terms} terms rewritten): "
          f"found {p['with inflection']['found']} with plural matching, "
          f"{p['as written']['found']} as written; exact match "
          f"{100 * p['with inflection']['matched'] / max(terms, 1):.1f}% against "
          f"{100 * p['as written']['matched'] / max(terms, 1):.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
