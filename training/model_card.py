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
names the directory it is in now). A run that started from another model is
followed back through each `starting_model` (`run_chain`) to an export the
repository shipped: the card gives a line to each run of that chain, and its
commands (`training.model_card_commands`) build each corpus, run and intermediate
export in order.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from nmt.constants import METADATA_PATH
from nmt.inference.precision import BOTH, export_flag
from nmt.types import RECOMMENDED_DECODING, DecodeOptions, recommended_options
from training.corpus.build import MANIFEST
from training.model_card_commands import reproduce
from training.model_card_data import (
    MODELS,
    Stage,
    Start,
    chain_corpora_data,
    corpus_data,
    limits_line,
    plain_data,
    run_chain,
)

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
    """The training machine as the run recorded it (and the Keras trainer's backend)."""
    machine = summary.get("machine")
    keras = (f"; Keras on {summary['backend']}, {summary.get('precision', 'float32')}"
             if "backend" in summary else "")
    device = summary.get("device", "")  # the Keras trainer's `gpu: NVIDIA H200`, `cpu: ...`
    if not machine and device.startswith("gpu: "):
        return f"one {device[5:]} GPU (its host's CPU not recorded{keras})"
    if not machine and device:
        return f"a CPU whose model the run did not record ({keras[2:]})"
    if not machine:
        return "a machine the run did not record"
    accelerators = ", ".join(machine.get("accelerators") or ()) or "no GPU or TPU"
    return f"{machine['cpu']} ({machine['cores']} cores, {accelerators}{keras})"


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


def _head(summary: dict, model: dict, minutes: float, metadata_links: str,
          start: Start | None = None, upstream: Start | None = None) -> list[str]:
    """Lines on the alignment head and, for a frozen head, on the model it sits on.

    Args:
        start: what the run started from (`Stage.start`).
        upstream: what that model started from, when it is a run's.
    """
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
    if head.get("train") == "frozen" and start and start.version is None:
        lines.append(_frozen_on_run(summary, start.record, minutes, upstream))
    elif head.get("train") == "frozen" and start:
        base = start.record.get("training") or {}
        label = start.label
        itself = (f"{label[:1].upper()}{label[1:]} itself" if start.shipped else
                  f"The `{start.run_name}` run that made it")
        lines.append(
            f"- The head alone was trained, {summary['steps']:,} steps ({minutes:.0f} minutes), "
            f"with every other weight frozen at {label}'s{_origin(start)}, so the translations "
            f"are {label}'s, byte for byte. {itself}: {base.get('steps', 0):,} steps "
            f"({_epochs(base.get('epochs_completed', 0))}), "
            f"{base.get('train_seconds', 0) / 60:.0f} minutes on {_machine(base)}; "
            + _lower(_guidance(base)[2:].rstrip(".")) + "; exported weights: "
            + _weights_text(start.record) + "."
        )
    return lines


def _frozen_on_run(summary: dict, start: dict, minutes: float,
                   upstream: Start | None = None) -> str:
    """The line on a frozen head trained on a run's model, and on that run.

    `start` is the head's `starting_model`: the starting run's `summary.json` as the
    head read it with the weights (`training`), so it describes those weights even if
    the run went on later, and needs no other directory. `upstream` is what that run
    started from.
    """
    name = start.get("name", "?")
    base = start.get("training") or {}
    if "steps" not in base:
        raise ValueError(
            f"The head's starting_model, run `{name}`, records no training summary (the run "
            "had written no summary.json when the head started from it), so the card cannot "
            "describe the model under the head: train the head again from the finished run")
    started = (f", started from {upstream.label}'s weights and vocabulary{_origin(upstream)}"
               if upstream else ", from scratch")
    best = (f" ({base['best_dev_bleu']:.2f})" if "best_dev_bleu" in base else "")
    averaged = base.get("averaged_checkpoints") or ()
    weights = (f"the checkpoint with the best dev BLEU{best}" if "backend" not in base else
               "those it handed back, the mean of its last checkpoints"
               + (f" (steps {', '.join(f'{s:,}' for s in averaged)})" if averaged else ""))
    return (
        f"- The head alone was trained, {summary['steps']:,} steps ({minutes:.0f} minutes), "
        f"with every other weight frozen at those of the `{name}` run, so the translations "
        f"are that model's. The `{name}` model itself: {base['steps']:,} steps "
        f"({_epochs(base.get('epochs_completed', 0))}), "
        f"{base.get('train_seconds', 0) / 60:.0f} minutes on {_machine(base)}{started}; "
        + _lower(_guidance(base)[2:].rstrip(".")) + f"; its weights: {weights}."
    )


def _origin(start: Start) -> str:
    """` (an export of the `en-fr-broad` run)` after an intermediate export's name."""
    if start.version is None or start.shipped:
        return ""
    return f" (an export of the `{start.run_name}` run)"


def _warm_start(summary: dict, start: Start | None) -> list[str]:
    """The line on a whole model started from another's weights (`init_from`)."""
    if not start or _frozen_head(summary):  # a frozen head's line says it
        return []
    return [f"- Warm start: every weight the two models share, and the vocabulary, started "
            f"from {start.label}'s{_origin(start)} (`init_from`)."]


def _epochs(count: int) -> str:
    return f"{count} full epoch" + ("" if count == 1 else "s")


def _lower(text: str) -> str:
    """A sentence continued after a semicolon."""
    return text[:1].lower() + text[1:]


def _frozen_head(summary: dict) -> bool:
    return (summary.get("alignment_head") or {}).get("train") == "frozen"


def _weights(metadata: dict) -> str:
    return f"- Exported weights: {_weights_text(metadata)}."


def _weights_text(metadata: dict) -> str:
    """`the mean of the last 4 checkpoints (steps …)`: the weights an export holds."""
    steps = metadata.get("averaged_checkpoints")
    if steps:
        return (f"the mean of the last {len(steps)} checkpoints "
                f"(steps {', '.join(f'{s:,}' for s in steps)})")
    return "the checkpoint with the best dev BLEU"


def _chain_line(stages: Sequence[Stage]) -> list[str]:
    """The whole chain in one line (runs, steps, hours, epochs, hardware), before its runs:
    the last run alone (often a head's half hour) is not the model's training."""
    recorded = [stage.summary for stage in stages if "steps" in stage.summary]
    if len(stages) < 2 or not recorded:
        return []
    hours = sum(summary.get("train_seconds", 0) for summary in recorded) / 3600
    machines = list(dict.fromkeys(_machine(summary) for summary in recorded))
    epochs = max(summary.get("epochs_completed", 0) for summary in recorded)
    seen = ("no run completed a full epoch of its corpus" if epochs == 0 else
            f"at most {_epochs(epochs)} of its corpus in one run")
    unknown = len(stages) - len(recorded)
    missing = f" ({unknown} of them not recorded)" if unknown else ""
    return [f"- In all: {len(stages)} runs{missing}, "
            f"{sum(summary['steps'] for summary in recorded):,} steps in {hours:.1f} hours of "
            f"wall clock on {_series(machines)}; {seen}."]


def _series(items: Sequence[str]) -> str:
    """`a`, `a and b`, `a, b and c`."""
    return " and ".join(filter(None, (", ".join(items[:-1]), items[-1])))


def _last_run(stages: Sequence[Stage]) -> str:
    """`The last run, `name`: ` before the exported run's own figures, in a chain."""
    return f"The last run, `{stages[-1].name}`: " if len(stages) > 1 else ""


def _stage_lines(stages: Sequence[Stage], metadata: dict) -> list[str]:
    """A line per run of a chain of more than one, oldest first."""
    if len(stages) < 2:
        return []
    return [f"- Made by {len(stages)} runs, each from the weights of the one before (figures "
            "from each run's summary as the next run recorded it with the weights):",
            *(f"    - {_stage_text(stage, after.start if after else None, metadata)}"
              for stage, after in zip(stages, (*stages[1:], None), strict=True))]


def _stage_text(stage: Stage, made: Start | None, metadata: dict) -> str:
    """What a run started from, trained on, for how long, and the weights it handed on
    (`made`: what the next run started from; None for the exported run)."""
    summary, start = stage.summary, stage.start
    origin = ("scratch" if not start else f"{start.label} (`{MODELS}/{start.version}`, in "
              "the git history)" if start.shipped else start.label)
    if _frozen_head(summary):
        origin = f"{origin}, its alignment head alone trained (every other weight frozen)"
    pairs = (f" ({summary['train_pairs']:,} pairs used)" if "train_pairs" in summary else "")
    data = (f"on the `{stage.corpus}` corpus{pairs}" if stage.manifest else
            f"on a training file without a corpus manifest{pairs}" if stage.run else
            "on data not known here (no run directory)")
    if "steps" not in summary:
        return f"`{stage.name}`: from {origin}, {data}; its training was not recorded."
    stopped = f", stopped on a {summary['stopped_by']}" if summary.get("stopped_by") else ""
    if made is None:
        handed = f"this export: {_weights_text(metadata)}"
    elif made.version is None and "backend" in summary:  # the Keras trainer's `--out`
        handed = "the next run started from the weights it handed back"
    elif made.version is None:
        handed = "the next run started from its best dev-BLEU checkpoint"
    else:
        handed = f"exported as {_weights_text(made.record)} to {made.label}"
    seconds = summary.get("train_seconds", 0)
    took = f"{seconds / 3600:.1f} hours" if seconds >= 3600 else f"{seconds / 60:.0f} minutes"
    return (f"`{stage.name}`: from {origin}, {data}, {summary['steps']:,} steps in {took} of "
            f"wall clock on {_machine(summary)}{stopped}; {handed}.")


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
    stages = run_chain(run, corpus)  # the runs that made the weights, `run` last
    summary, manifest, start = stages[-1].summary, stages[-1].manifest, stages[-1].start
    upstream = stages[-2].start if len(stages) > 1 else None
    others = [stage.manifest for stage in stages[:-1] if stage.manifest]
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
        *chain_corpora_data(stages, manifest),
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
        *_chain_line(stages),
        *_stage_lines(stages, metadata),
        f"- {_last_run(stages)}{summary['steps']:,} steps "
        f"({_epochs(summary['epochs_completed'])}), "
        f"{minutes:.0f} minutes of wall clock on {_machine(summary)}, "
        f"TensorFlow {summary['tensorflow']}, Python {summary['python']}."
        + (f" {note}" if note else ""),
        *_warm_start(summary, start),
        *([] if _frozen_head(summary) else [_guidance(summary)]),  # the head's line says it
        *_head(summary, model, minutes, metadata.get("word_links", "argmax"), start, upstream),
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
                   metadata.get(RECOMMENDED_DECODING), manifest["name"] if manifest else None,
                   stages),
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
        limits_line(manifest, others),
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
