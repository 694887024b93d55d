"""Writes `MODEL_CARD.md` for an exported model from the files that measured it.

    python -m training.model_card --run runs/en-fr --evaluation evaluation.json \
        --export models/en-fr/5 --out models/en-fr/MODEL_CARD.md \
        [--other 'NAME=nmt-evaluate.json' ...] [--corpus DIR]

Every figure and fact about the run in the card (pairs, steps, time, machine,
guidance) is read from the run's `summary.json`, `history.jsonl` and
`config.yaml`, the JSON written by `nmt evaluate --json`, and the export's
metadata, so the card never states a number no command produced, and
rendering it on another machine changes nothing. A run on a corpus of
`nmt corpus` (a `manifest.json` beside its `data.train`) gets its sources,
counts, licences and attributions from that manifest; the card refuses to
guess when the training file is not where the run's config says (`--corpus`
names the directory it is in now).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from nmt.constants import METADATA_PATH
from nmt.inference.precision import BOTH, export_flag
from nmt.types import RECOMMENDED_DECODING, DecodeOptions, recommended_options
from training.corpus.build import MANIFEST
from training.model_card_data import (
    corpus_data,
    find_manifest,
    limits_line,
    plain_data,
)


def _export_options(average: int, precision: str, links: str = "argmax") -> str:
    options = f" --average {average}" if average else ""
    options += f" --precision {precision}" if precision != BOTH else ""
    return options + (f" --links {links}" if links != "argmax" else "")


def reproduce(version: str, average: int = 0, precision: str = BOTH,
              shortlist: dict | None = None, start: dict | None = None,
              run_name: str = "en-fr", links: str = "argmax",
              distillation: dict | None = None,
              recommended: dict | None = None, corpus: str | None = None) -> tuple[str, ...]:
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
            data paths point.
    """
    export = f"models/en-fr/{version}"
    data = "../shared/data"
    ood = f"{data}/out-of-domain"
    listing = ""
    if shortlist:
        listing = (f"    --shortlist-corpus {data}/anki-fra-eng/{shortlist['corpus']} "
                   f"--shortlist-size {shortlist['frequent']} {shortlist['per_source_token']} \\\n")
    training = ["nmt train --config training/configs/en-fr.yaml --run runs/en-fr"]
    run = "runs/en-fr"
    if corpus or (start and "version" not in start):
        training, run = _training_commands(run_name, start, corpus)
    elif start:
        base = _export_options(len(start.get("averaged_checkpoints") or ()),
                               export_flag(start))
        training += [
            f"nmt export --run runs/en-fr --out models/en-fr --version {start['version']}{base} "
            "\\\n    --metadata training/configs/en-fr.metadata.json",
            f"nmt train --config training/configs/{run_name}.yaml --run runs/{run_name}",
        ]
        run = f"runs/{run_name}"
    making = (
        f"nmt export --run {run} --out models/en-fr --version {version}"
        f"{_export_options(average, precision, links)}{_recommended_flag(recommended)} \\\n"
        f"{listing}"
        "    --metadata training/configs/en-fr.metadata.json",)
    if distillation:
        training, making = [], (_distill_command(distillation, version, average, precision,
                                                 run_name, recommended),)
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


def _training_commands(run_name: str, start: dict | None,
                       corpus: str | None) -> tuple[list[str], str]:
    """The `nmt corpus` and `nmt train` commands of a run that trained on a corpus or
    started from another run, and the run's directory.

    A starting run is trained first; an exported starting model (`models/en-fr/N`) is
    one the repository ships, named in a comment.
    """
    runs = "../runs" if corpus else "runs"
    training = ([f"nmt corpus --recipe training/corpora/{corpus}.yaml --out {runs}/corpus-{corpus}"]
                if corpus else [])
    if start and "version" not in start:
        training.append(_train_command(start["name"], runs,
                                       (start.get("training") or {}).get("starting_model")))
        start = None
    training.append(_train_command(run_name, runs, start))
    return training, f"{runs}/{run_name}"


def _train_command(name: str, runs: str, start: dict | None) -> str:
    """`nmt train` of config `name`, saying which export it starts from."""
    command = f"nmt train --config training/configs/{name}.yaml --run {runs}/{name}"
    if start and "version" in start:
        command += f"   # starts from models/en-fr/{start['version']}"
    return command


def _recommended_flag(recommended: dict | None, default: int | None = None) -> str:
    """`nmt export --recommended-beam-size N`, unless `N` is `default`."""
    beam = (recommended or {}).get("beam_size")
    return "" if beam is None or beam == default else f" --recommended-beam-size {beam}"


def _distill_command(distillation: dict, version: str, average: int, precision: str,
                     run_name: str, recommended: dict | None) -> str:
    """The `nmt distill` command that made a distilled export."""
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
            "    --metadata training/configs/en-fr.metadata.json")


# How the card names the scores of `nmt evaluate --json` (`scores`), and their format.
_SCORE_NAMES = {"test_bleu": ("test BLEU", ".2f"), "test_chrf": ("test chrF", ".2f"),
                "alibi_aer": ("Alibi AER", ".3f")}


def _scores_text(scores: dict) -> str:
    """`test BLEU 47.15, Alibi AER 0.433`: the numeric scores an export records."""
    parts = []
    for key, value in scores.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            name, form = _SCORE_NAMES.get(key, (key, "g"))
            parts.append(f"{name} {value:{form}}")
    return ", ".join(parts)


def _decoding_text(options: DecodeOptions) -> str:
    """`greedy (beam 1)` or `beam 5`, with the length penalty when it counts."""
    if options.beam_size == 1:
        return "greedy (beam 1)"
    return f"beam {options.beam_size}, length penalty {options.length_penalty:g}"


def _distillation(metadata: dict) -> list[str]:
    """Lines on a distilled model's teacher and data (`training.distill`)."""
    record = metadata.get("distillation")
    if not record:
        return []
    teacher = record["teacher"]
    scores = _scores_text(teacher.get("scores") or {})
    decoding = _decoding_text(DecodeOptions(**record["decoding"]))
    made = (f" of the {record['sources']:,} distinct training sources ({record['pairs']:,} "
            "pairs)" if "sources" in record else " of the training sources")
    return [
        "- Sequence-level knowledge distillation (Kim & Rush 2016): trained on the "
        f"translations that the teacher, {teacher['name']} version {teacher['version']} "
        f"(`{teacher['path']}`, {teacher.get('attention') or 'its architecture'}"
        + (f"; {scores}" if scores else "") + f"), made{made} with {decoding}, in place of "
        "the references; the guided-alignment and head links are eflomal's on those pairs."]


def _default_decoding(metadata: dict) -> list[str]:
    """The line on a recommended decoding, the model's default everywhere."""
    if RECOMMENDED_DECODING not in metadata:
        return []
    return [f"- Default decoding: {_decoding_text(recommended_options(metadata))}, this "
            "export's `recommended_decoding`: what `Translator`, `nmt serve`, `nmt translate` "
            "and `nmt batch` use when a caller sets no beam; a request may still ask for any "
            "beam size and n-best."]


def _machine(summary: dict) -> str:
    """The training machine as the run recorded it."""
    machine = summary.get("machine")
    if not machine:
        return "a machine the run did not record"
    accelerators = ", ".join(machine.get("accelerators") or ()) or "no GPU or TPU"
    return f"{machine['cpu']} ({machine['cores']} cores, {accelerators})"


def _size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def _cell(text: str) -> str:
    """Text for a Markdown table cell (sacrebleu signatures contain pipes)."""
    return text.replace("|", "\\|")


def _guidance(summary: dict) -> str:
    guide = summary.get("guided_alignment") or {}
    if guide.get("type", "none") == "none":
        return "- No guided alignment: attention learned from the translation loss alone."
    return (
        f"- Guided alignment: attention supervised by eflomal word alignments of the "
        f"training pairs ({guide['symmetrization']}, mapped onto the pieces), "
        f"`{guide['type']}` loss with weight {guide['weight']} added to the translation loss."
    )


def _head(summary: dict, model: dict, minutes: float, metadata_links: str) -> list[str]:
    """Lines on the alignment head and, for a frozen head, on the model it sits on."""
    if not model.get("alignment_head"):
        return []
    head = summary.get("alignment_head") or {}
    symmetrization = (summary.get("guided_alignment") or {}).get("symmetrization", "")
    keys = {"encoder": "the encoder states", "embedding": "the source piece embeddings",
            "both": "the encoder states and source piece embeddings"}[
        model.get("alignment_head_keys", "encoder")]
    context = model.get("alignment_head_context") or 0
    projected = model.get("alignment_head_context_input") or 0
    reader = (f"two convolutions of width 5 ({2 * context} filters)"
              if model.get("alignment_head_reader") == "conv" else
              f"a bidirectional LSTM ({context} units a direction)")
    reads = ("[h_j; embedding(y_j)] (it has read the piece it aligns)" if not context else
             f"[h_j; embedding(y_j)] followed by {reader} over those vectors"
             + (f" projected to {projected}" if projected else "")
             + " along the whole target (it has read the piece it aligns and the pieces "
             "around it)")
    agreement = model.get("alignment_head_agreement", "none")
    agrees = "" if agreement == "none" else (
        "; it also gives each source piece a distribution over the target pieces ("
        + ("its own scores normalised over the target" if agreement == "shared" else
           "a second attention of the same kind") + "), and its rows are the two "
        "directions' product, renormalised (alignment by agreement)")
    lines = [
        f"- Alignment head: a `{model['alignment_head']}` attention whose query for target "
        f"piece j is {reads} and whose keys "
        f"are {keys}{agrees}; it gives `alignments` and the word links (read by the "
        f"`{metadata_links}` rule), and does not feed the prediction; the decoder's own "
        f"attention is the `attention` output. Supervised by eflomal word alignments of "
        f"the training pairs "
        f"({symmetrization}, mapped onto the pieces), `{head.get('type', 'ce')}` loss.",
    ]
    start = summary.get("starting_model")
    if head.get("train") == "frozen" and start and "version" not in start:
        lines.append(_frozen_on_run(summary, start, minutes))
    elif head.get("train") == "frozen" and start:
        base = start.get("training") or {}
        lines.append(
            f"- The head alone was trained, {summary['steps']:,} steps ({minutes:.0f} minutes), "
            f"with every other weight frozen at version {start.get('version', '?')}'s, so "
            "the translations are version "
            f"{start.get('version', '?')}'s, byte for byte. Version "
            f"{start.get('version', '?')} itself: {base.get('steps', 0):,} steps "
            f"({_epochs(base.get('epochs_completed', 0))}), "
            f"{base.get('train_seconds', 0) / 60:.0f} minutes on {_machine(base)}; "
            + _lower(_guidance(base)[2:].rstrip(".")) + "; "
            + _lower(_weights(start)[2:].rstrip(".")) + "."
        )
    return lines


def _frozen_on_run(summary: dict, start: dict, minutes: float) -> str:
    """The line on a frozen head trained on a run's model, and on that run.

    `start` is the head's `starting_model`: the starting run's `summary.json` as the
    head read it with the weights (`training`), so it describes those weights even if
    the run went on later, and needs no other directory.
    """
    name = start.get("name", "?")
    base = start.get("training") or {}
    if "steps" not in base:
        raise ValueError(
            f"The head's starting_model, run `{name}`, records no training summary (the run "
            "had written no summary.json when the head started from it), so the card cannot "
            "describe the model under the head: train the head again from the finished run")
    upstream = base.get("starting_model")
    started = (f", started from {_model_name(upstream)}'s weights and vocabulary"
               if upstream else ", from scratch")
    best = (f" ({base['best_dev_bleu']:.2f})" if "best_dev_bleu" in base else "")
    return (
        f"- The head alone was trained, {summary['steps']:,} steps ({minutes:.0f} minutes), "
        f"with every other weight frozen at those of the `{name}` run, so the translations "
        f"are that model's. The `{name}` model itself: {base['steps']:,} steps "
        f"({_epochs(base.get('epochs_completed', 0))}), "
        f"{base.get('train_seconds', 0) / 60:.0f} minutes on {_machine(base)}{started}; "
        + _lower(_guidance(base)[2:].rstrip(".")) + "; its weights: the checkpoint with the "
        f"best dev BLEU{best}."
    )


def _model_name(start: dict) -> str:
    """"version 8" for an exported model, "the `en-fr-broad` run" for a run."""
    if "version" in start:
        return f"version {start['version']}"
    return f"the `{start.get('name', '?')}` run"


def _warm_start(summary: dict) -> list[str]:
    """The line on a whole model started from another's weights (`init_from`)."""
    start = summary.get("starting_model")
    if not start or _frozen_head(summary):  # a frozen head's line says it
        return []
    return [f"- Warm start: every weight the two models share, and the vocabulary, started "
            f"from {_model_name(start)}'s (`init_from`)."]


def _epochs(count: int) -> str:
    return f"{count} full epoch" + ("" if count == 1 else "s")


def _lower(text: str) -> str:
    """A sentence continued after a semicolon."""
    return text[:1].lower() + text[1:]


def _frozen_head(summary: dict) -> bool:
    return (summary.get("alignment_head") or {}).get("train") == "frozen"


def _weights(metadata: dict) -> str:
    steps = metadata.get("averaged_checkpoints")
    if steps:
        return (f"- Exported weights: the mean of the last {len(steps)} checkpoints "
                f"(steps {', '.join(f'{s:,}' for s in steps)}).")
    return "- Exported weights: the checkpoint with the best dev BLEU."


def _precision(precision: str) -> str:
    """What the export computes in, from its `nmt export --precision`."""
    if precision == BOTH:
        return ("carries two paths over float32 weights: float32 in `serving_default` and "
                "bfloat16 matrix products in `serving_bfloat16` (loaders pick bfloat16 where "
                "the CPU has a bfloat16 unit)")
    if precision == "float32":
        return "computes in float32"
    return (f"multiplies matrices in {precision} when translating (weights stored in "
            "float32, everything else computed in float32)")


def _shortlist(shortlist: dict | None) -> str:
    if not shortlist:
        return ""
    return (f" Each sentence is searched over a vocabulary shortlist: the "
            f"{shortlist['frequent']} most frequent target pieces and the "
            f"{shortlist['per_source_token']} likeliest translations of each source piece "
            f"(IBM Model 1 on `{shortlist.get('corpus', 'the training pairs')}`); "
            "`align` scores over the whole vocabulary.")


def _other_sets(other: dict[str, dict]) -> list[str]:
    rows = []
    for name, result in other.items():
        t = result["translation"]
        rows.append(f"| BLEU / chrF, {name} | {t['bleu']:.2f} / {t['chrf']:.2f} | "
                    f"{t['sentences']} sentences, one reference, beam {t['beam_size']} |")
    return rows


def render(run: Path, evaluation: dict, export: Path, note: str = "",
           other: dict[str, dict] | None = None, corpus: Path | None = None) -> str:
    """The model card of `export`, made from `run`.

    Args:
        corpus: the directory that holds the run's training data now, when it is
            not where the run's `config.yaml` says (see `find_manifest`).
    """
    summary = json.loads((run / "summary.json").read_text())
    manifest = find_manifest(run, corpus)
    history_path = run / "history.jsonl"  # none for a frozen head: no dev BLEU to follow
    history = ([json.loads(line) for line in history_path.read_text().splitlines()]
               if history_path.exists() else [])
    config = (run / "config.yaml").read_text()
    best = max(history, key=lambda h: h["bleu"]) if history else {}
    metadata = json.loads((export / METADATA_PATH).read_text())
    model = metadata["model_config"]
    translation = evaluation.get("translation", {})
    alignment = evaluation.get("alignment", {})
    minutes = summary["train_seconds"] / 60
    lines = [
        f"# Model card: {metadata.get('name', summary['name'])} (version {export.name})",
        "",
        "English→French attentional RNN translation model, exported as a TensorFlow "
        "SavedModel (text in; translation, tokens, scores and alignments out).",
        "",
        "## Architecture",
        "",
        f"- {metadata['attention']}: {model['encoder_layers']}-layer bidirectional "
        f"{model['cell'].upper()} encoder, {model['decoder_layers']}-layer decoder, "
        f"hidden size {model['hidden_dim']}, embeddings {model['embedding_dim']} "
        f"(shared source/target: {model['share_embeddings']}, tied output projection: "
        f"{model['tie_embeddings']}).",
        f"- Joint SentencePiece vocabulary of {model['target_vocab_size']} pieces, "
        "applied inside the graph (tensorflow-text).",
        f"- {summary['parameters']:,} parameters; the export is {_size_mb(export):.1f} MB "
        f"and {_precision(export_flag(metadata))}."
        + _shortlist(metadata.get("shortlist")),
        "",
        "## Data",
        "",
        *(corpus_data(manifest, summary) if manifest else plain_data(summary)),
        "- Alignment evaluation: the Alibi English–French gold word alignments "
        "(522 pairs from five literary short stories), CC-BY-SA 4.0.",
        "",
        "## Scores",
        "",
        "| measure | value | how |",
        "|---|---|---|",
    ]
    if translation:
        lines += [
            f"| BLEU, `test.tsv` | {translation['bleu']:.2f} | multi-reference "
            f"({translation['sentences']} unique sources), beam {translation['beam_size']}; "
            f"`{_cell(translation['bleu_signature'])}` |",
            f"| chrF, `test.tsv` | {translation['chrf']:.2f} | "
            f"`{_cell(translation['chrf_signature'])}` |",
        ]
    if alignment:
        lines.append(
            f"| AER, Alibi | {alignment['aer']:.3f} | forced decoding of the reference, "
            f"{alignment['pairs']} pairs; precision {alignment['precision']:.3f}, "
            f"recall {alignment['recall']:.3f} |"
        )
    lines += _other_sets(other or {})
    if best:
        lines.append(
            f"| best dev BLEU during training | {best['bleu']:.2f} | greedy, step {best['step']} |"
        )
    lines += [
        "",
        "## Training",
        "",
        f"- {summary['steps']:,} steps ({_epochs(summary['epochs_completed'])}), "
        f"{minutes:.0f} minutes of wall clock on {_machine(summary)}, "
        f"TensorFlow {summary['tensorflow']}, Python {summary['python']}."
        + (f" {note}" if note else ""),
        *_warm_start(summary),
        *([] if _frozen_head(summary) else [_guidance(summary)]),  # the head's line says it
        *_head(summary, model, minutes, metadata.get("word_links", "argmax")),
        *_distillation(metadata),
        _weights(metadata),
        *_default_decoding(metadata),
        "- Reproduce:",
        "",
        "```sh",
        *reproduce(export.name, len(metadata.get("averaged_checkpoints") or ()),
                   export_flag(metadata), metadata.get("shortlist"),
                   summary.get("starting_model"), summary["name"],
                   metadata.get("word_links", "argmax"), metadata.get("distillation"),
                   metadata.get(RECOMMENDED_DECODING), manifest["name"] if manifest else None),
        "```",
        "",
        f"- Config (`training/configs/{summary['name']}.yaml`, as the run saved it; paths "
        "relative to the run directory):",
        "",
        "```yaml",
        config.strip(),
        "```",
        "",
        "## Limits",
        "",
        limits_line(manifest),
        "- One direction only (English→French); no casing or formatting control.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, required=True)
    parser.add_argument("--evaluation", type=Path, required=True, help="nmt evaluate --json output")
    parser.add_argument("--export", type=Path, required=True, help="the exported version dir")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--note", default="", help="a sentence about this run's conditions")
    parser.add_argument("--other", action="append", default=[], metavar="NAME=JSON",
                        help="`nmt evaluate --json` of another test set, e.g. "
                             "'Multi30k test 2017=multi30k.json'; repeat for more")
    parser.add_argument("--corpus", type=Path, metavar="DIR",
                        help="the directory that holds the run's training data (and the "
                             f"{MANIFEST} of `nmt corpus`) when it has moved from where the "
                             "run's config.yaml says")
    args = parser.parse_args()
    evaluation = json.loads(args.evaluation.read_text())
    other = {}
    for item in args.other:
        name, sep, path = item.partition("=")
        if not sep:
            parser.error(f"--other takes NAME=JSON. Received: {item!r}")
        other[name] = json.loads(Path(path).read_text())
    try:
        card = render(args.run, evaluation, args.export, args.note, other, args.corpus)
    except (FileNotFoundError, ValueError) as error:  # a moved corpus, a start without summary
        parser.error(str(error))
    args.out.write_text(card)


if __name__ == "__main__":
    main()
