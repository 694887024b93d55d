"""The model card states exactly the figures of the files that measured them."""

import json
import os
import sys

import pytest

from nmt.constants import METADATA_PATH
from training.model_card import main, render
from training.model_card_commands import reproduce
from training.model_card_data import ATTRIBUTION

# The model_config of an export with version 8's architecture and alignment head.
HEAD_MODEL_CONFIG = {"encoder_layers": 2, "decoder_layers": 1, "cell": "lstm",
                     "hidden_dim": 512, "embedding_dim": 256, "share_embeddings": True,
                     "tie_embeddings": True, "target_vocab_size": 8000,
                     "alignment_head": "general"}


def test_card_reports_measured_figures(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({
        "name": "en-fr", "steps": 1234, "epochs_completed": 3, "train_seconds": 5400.0,
        "parameters": 7306048, "tensorflow": "2.21.0", "python": "3.11.7",
        "train_pairs": 161958, "dev_sources": 1412, "joined_examples": 16190,
        "machine": {"cpu": "Test CPU 9000", "cores": 2, "accelerators": []},
        "guided_alignment": {"type": "ce", "weight": 0.5, "symmetrization": "intersection"},
    }))
    (run / "history.jsonl").write_text(
        json.dumps({"step": 400, "bleu": 12.5}) + "\n" + json.dumps({"step": 800, "bleu": 31.25})
        + "\n"
    )
    (run / "config.yaml").write_text("name: en-fr\n")
    export = tmp_path / "models" / "3"
    (export / METADATA_PATH).parent.mkdir(parents=True)
    (export / METADATA_PATH).write_text(json.dumps({
        "attention": "luong-general", "precision": "bfloat16",
        "shortlist": {"frequent": 500, "per_source_token": 100, "corpus": "train.tsv"},
        "model_config": {"encoder_layers": 2, "decoder_layers": 1, "cell": "lstm",
                         "hidden_dim": 512, "embedding_dim": 256, "share_embeddings": True,
                         "tie_embeddings": True, "target_vocab_size": 8000},
    }))
    evaluation = {
        "translation": {"bleu": 41.234, "chrf": 60.5, "sentences": 2000, "beam_size": 5,
                        "bleu_signature": "nrefs:var|bs", "chrf_signature": "nrefs:var|c"},
        "alignment": {"aer": 0.4321, "precision": 0.5, "recall": 0.6, "pairs": 522},
    }
    other = {"Captions": {"translation": {"bleu": 20.0, "chrf": 45.5, "sentences": 1000,
                                          "beam_size": 5}}}
    card = render(run, evaluation, export, other=other)
    assert "| BLEU, `test.tsv` | 41.23 |" in card
    assert "| chrF, `test.tsv` | 60.50 |" in card
    assert "| AER, Alibi | 0.432 |" in card
    assert "31.25 | greedy, step 800" in card
    assert "7,306,048 parameters" in card
    assert "1,234 steps" in card and "90 minutes" in card
    assert ATTRIBUTION in card
    assert "nmt train --config training/configs/en-fr.yaml" in card
    assert "--version 3" in card and "--from-export models/en-fr/3" in card
    assert "161,958 pairs used after cleaning" in card and "1,412 distinct sources" in card
    assert "on Test CPU 9000 (2 cores, no GPU or TPU)" in card
    assert "`ce` loss with weight 0.5" in card and "intersection" in card
    assert "| BLEU / chrF, Captions | 20.00 / 45.50 |" in card
    assert "best dev BLEU" in card and "--average" not in card
    assert "16,190 long examples made by joining" in card
    assert "multiplies matrices in bfloat16" in card
    assert "--version 3 --precision bfloat16" in card  # the export command reproduces it
    assert "the 500 most frequent target pieces and the 100 likeliest" in card
    assert ("--shortlist-corpus ../shared/data/anki-fra-eng/train.tsv --shortlist-size 500 100"
            in card)


def test_card_of_an_averaged_export_says_so(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({
        "name": "en-fr", "steps": 10, "epochs_completed": 0, "train_seconds": 60.0,
        "parameters": 1, "tensorflow": "2.21.0", "python": "3.11.7"}))
    (run / "history.jsonl").write_text("")
    (run / "config.yaml").write_text("name: en-fr\n")
    export = tmp_path / "models" / "3"
    (export / METADATA_PATH).parent.mkdir(parents=True)
    (export / METADATA_PATH).write_text(json.dumps({
        "attention": "bahdanau", "averaged_checkpoints": [9000, 9500],
        "model_config": {"encoder_layers": 2, "decoder_layers": 1, "cell": "lstm",
                         "hidden_dim": 512, "embedding_dim": 256, "share_embeddings": True,
                         "tie_embeddings": True, "target_vocab_size": 8000},
    }))
    card = render(run, {}, export)
    assert "mean of the last 2 checkpoints (steps 9,000, 9,500)" in card
    assert "--version 3 --average 2" in card
    assert "a machine the run did not record" in card
    assert "No guided alignment" in card
    assert "No joined examples" in card and "computes in float32" in card
    assert "--average 2 --precision float32" in card  # a one-path export says which
    assert "shortlist" not in card

    metadata = json.loads((export / METADATA_PATH).read_text())
    (export / METADATA_PATH).write_text(json.dumps(
        {**metadata, "precision": "float32", "precisions": ["float32", "bfloat16"]}))
    card = render(run, {}, export)
    assert "carries two paths over float32 weights" in card and "`serving_bfloat16`" in card
    assert "--precision" not in card  # both paths: the export's default


def test_card_of_a_frozen_head_describes_the_head_and_the_model_under_it(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    base = {"steps": 12092, "epochs_completed": 6, "train_seconds": 5718.2,
            "machine": {"cpu": "Base CPU", "cores": 2, "accelerators": []},
            "guided_alignment": {"type": "ce", "weight": 0.5, "symmetrization": "intersection"}}
    (run / "summary.json").write_text(json.dumps({
        "name": "en-fr-head", "steps": 4000, "epochs_completed": 2, "train_seconds": 600.0,
        "parameters": 7699264, "tensorflow": "2.21.0", "python": "3.11.7",
        "machine": {"cpu": "Head CPU", "cores": 2, "accelerators": []},
        "guided_alignment": {"type": "none", "weight": 0.0, "symmetrization": "intersection"},
        "alignment_head": {"train": "frozen", "init_from": "../../models/en-fr/4", "type": "ce",
                           "weight": 1.0},
        "starting_model": {"name": "en-fr", "version": 4, "training": base,
                           "averaged_checkpoints": [11000, 11500, 12000, 12092],
                           "precision": "bfloat16"},
    }))
    (run / "config.yaml").write_text("name: en-fr-head\n")  # no history.jsonl: no dev BLEU
    export = tmp_path / "models" / "5"
    (export / METADATA_PATH).parent.mkdir(parents=True)
    (export / METADATA_PATH).write_text(json.dumps({
        "attention": "luong-general+head-general", "precision": "bfloat16",
        "averaged_checkpoints": [3500, 4000], "word_links": "intersect",
        "model_config": {"encoder_layers": 2, "decoder_layers": 1, "cell": "lstm",
                         "hidden_dim": 512, "embedding_dim": 256, "share_embeddings": True,
                         "tie_embeddings": True, "target_vocab_size": 8000,
                         "alignment_head": "general", "alignment_head_keys": "encoder"},
    }))
    card = render(run, {"alignment": {"aer": 0.25, "precision": 0.8, "recall": 0.7,
                                      "pairs": 522}}, export)
    assert "a `general` attention whose query for target piece j is [h_j; embedding(y_j)]" in card
    assert "keys are the encoder states" in card
    assert "(read by the `intersect` rule)" in card and "is the `attention` output" in card
    assert "(intersection, mapped onto the pieces)" in card
    assert "4,000 steps (10 minutes), with every other weight frozen at version 4's" in card
    assert "Version 4 itself: 12,092 steps (6 full epochs), 95 minutes on Base CPU" in card
    assert "mean of the last 4 checkpoints (steps 11,000, 11,500, 12,000, 12,092)" in card
    assert "nmt export --run runs/en-fr --out models/en-fr --version 4 --average 4 " in card
    assert "nmt train --config training/configs/en-fr-head.yaml --run runs/en-fr-head" in card
    assert ("nmt export --run runs/en-fr-head --out models/en-fr --version 5 --average 2 "
            "--precision bfloat16 --links intersect") in card
    assert "python -m training.model_card --run runs/en-fr-head" in card
    assert "best dev BLEU" not in card
    assert "No guided alignment" not in card  # the decoder's attention is version 4's, guided
    assert "; guided alignment: attention supervised by eflomal" in card
    assert "followed by a bidirectional LSTM" not in card

    # A head with a target context says so.
    metadata = json.loads((export / METADATA_PATH).read_text())
    metadata["model_config"]["alignment_head_context"] = 256
    (export / METADATA_PATH).write_text(json.dumps(metadata))
    card = render(run, {"alignment": {"aer": 0.21, "precision": 0.8, "recall": 0.7,
                                      "pairs": 522}}, export)
    assert ("[h_j; embedding(y_j)] followed by a bidirectional LSTM (256 units a direction) "
            "over those vectors along the whole target") in card
    assert "agreement" not in card

    # A projected reader and a head that agrees with its reverse direction say so.
    metadata["model_config"].update(alignment_head_context=128,
                                    alignment_head_context_input=128,
                                    alignment_head_agreement="separate")
    (export / METADATA_PATH).write_text(json.dumps(metadata))
    card = render(run, {"alignment": {"aer": 0.2, "precision": 0.8, "recall": 0.8,
                                      "pairs": 522}}, export)
    assert ("a bidirectional LSTM (128 units a direction) over those vectors projected to 128 "
            "along the whole target") in card
    assert ("; it also gives each source piece a distribution over the "
            "target pieces (a second attention of the same kind), and its rows are the two "
            "directions' product, renormalised (alignment by agreement); it gives") in card


def test_reproduce_of_a_distilled_export_is_one_distill_command():
    distillation = {"teacher": {"path": "models/en-fr/4", "name": "en-fr", "version": 4},
                    "decoding": {"beam_size": 5}, "overrides": {"model.hidden_dim": 384}}

    commands = "\n".join(reproduce("7", average=2, distillation=distillation,
                                   run_name="en-fr-student",
                                   recommended={"beam_size": 1}))

    assert ("nmt distill --teacher models/en-fr/4 \\\n    --config "
            "training/configs/en-fr-student.yaml --run runs/en-fr-student \\\n    --out "
            "models/en-fr --version 7 --set model.hidden_dim=384 --average 2 \\\n") in commands
    assert "nmt train" not in commands and "nmt export --run" not in commands
    assert "python -m training.model_card --run runs/en-fr-student" in commands
    # A recommended beam other than the student's default is part of the command.
    assert "--recommended-beam-size 2" in "\n".join(reproduce(
        "7", distillation=distillation, run_name="s", recommended={"beam_size": 2}))


def _source(name, **fields):
    """A source of a corpus manifest (`training.corpus.build.make_manifest`)."""
    dropped = {"too_long": 0, "duplicate": 0, "near_duplicate": 0, "dev_overlap": 0}
    return {"name": name, "file": f"{name}.tsv.gz", "licence": f"{name} licence",
            "attribution": f"{name} attribution", "weight": 1, "read": 0, "dropped": dropped,
            "dev": 0, "dev_file": f"dev-{name}.tsv", "train": 0, "train_written": 0, **fields}


def _write_corpus(directory, sources, name="broad"):
    """A corpus directory of `nmt corpus`: its training file and manifest."""
    directory.mkdir(parents=True)
    (directory / "train.tsv").write_text("Hello.\tBonjour.\tanki\n")
    (directory / "manifest.json").write_text(json.dumps({
        "name": name, "seed": 1, "train_file": "train.tsv",
        "train_pairs": sum(s["train_written"] for s in sources), "dev_file": "dev.tsv",
        "dev_mix_pairs": 500, "excluded_files": ["test.tsv", "newstest2013.en"],
        "sources": sources}))
    return directory


def _write_export(directory, **metadata):
    (directory / METADATA_PATH).parent.mkdir(parents=True)
    (directory / METADATA_PATH).write_text(json.dumps({
        "attention": "luong-general", "precision": "float32",
        "model_config": {"encoder_layers": 2, "decoder_layers": 1, "cell": "lstm",
                         "hidden_dim": 512, "embedding_dim": 256, "share_embeddings": True,
                         "tie_embeddings": True, "target_vocab_size": 8000},
        **metadata}))
    return directory


GUIDED = {"type": "ce", "weight": 0.5, "symmetrization": "intersection"}
CORPUS_SOURCES = [
    _source("anki", weight=1, read=1000, dropped={"duplicate": 10}, dev=200, dev_from="dev.tsv",
            train=990, train_written=990,
            attribution="Sentence pairs from tatoeba.org (test)"),
    _source("laws", weight=0.5, read=5000, dropped={"too_long": 300, "dev_overlap": 20},
            dev=180, held_out={"by": "document", "units": 4, "of": 90}, train=4500,
            train_written=2250, licence="Open Government Licence – Canada",
            attribution="Contains information licensed under the OGL – Canada"),
]


def _corpus_run(run, corpus, config_extra=""):
    """A run whose config's data.train is the corpus's train.tsv, relative to the run."""
    run.mkdir(parents=True)
    train = os.path.relpath(corpus / "train.tsv", run)
    (run / "config.yaml").write_text(f"name: {run.name}\ndata:\n  train: {train}\n"
                                     f"{config_extra}")
    return run


def test_card_of_a_frozen_head_on_a_warm_started_corpus_run(tmp_path):
    corpus = _write_corpus(tmp_path / "runs" / "corpus-broad", CORPUS_SOURCES)
    run = _corpus_run(tmp_path / "runs" / "head-broad", corpus,
                      "alignment_head:\n  train: frozen\n  init_from: ../broad\n")
    version_8 = {"name": "en-fr", "version": 8, "training": {"steps": 4000},
                 "averaged_checkpoints": [3500, 4000]}
    broad = {"name": "broad", "steps": 40000, "epochs_completed": 3, "train_seconds": 43020.0,
             "best_dev_bleu": 38.123, "guided_alignment": GUIDED, "starting_model": version_8,
             "machine": {"cpu": "Broad CPU", "cores": 2, "accelerators": []}}
    (run / "summary.json").write_text(json.dumps({
        "name": "head-broad", "steps": 4000, "epochs_completed": 1, "train_seconds": 420.0,
        "parameters": 7699264, "tensorflow": "2.21.0", "python": "3.11.7",
        "train_pairs": 3200, "dev_sources": 640,
        "guided_alignment": {"type": "none", "weight": 0.0, "symmetrization": "intersection"},
        "alignment_head": {"train": "frozen", "init_from": "../broad", "type": "ce"},
        # The broad run's summary.json as the head read it with the weights: the card
        # needs no ../broad directory (there is none here).
        "starting_model": {"name": "broad", "training": broad},
    }))
    export = _write_export(tmp_path / "models" / "9", averaged_checkpoints=[3500, 4000],
                           word_links="intersect",
                           model_config=HEAD_MODEL_CONFIG)

    card = render(run, {}, export)

    # Data: one line per source of the manifest, its licence and attribution.
    assert ("the `broad` corpus built by `nmt corpus` (`training/corpora/broad.yaml`), 3,240 "
            "training pairs (`train.tsv`, 3,200 used after cleaning) from 2 sources") in card
    assert ("    - `anki` (`anki.tsv.gz`): 1,000 pairs read, 10 dropped, 200 held out from its "
            "own `dev.tsv`; 990 kept for training, written with weight 1 (990 pairs). Licence: "
            "anki licence. Attribution: \"Sentence pairs from tatoeba.org (test)\".") in card
    assert ("    - `laws` (`laws.tsv.gz`): 5,000 pairs read, 320 dropped, 180 held out (4 of its "
            "90 documents); 4,500 kept for training, written with weight 0.5 (2,250 pairs). "
            "Licence: Open Government Licence – Canada. Attribution: \"Contains information "
            "licensed under the OGL – Canada\".") in card
    assert "the 2 evaluation files `test.tsv`, `newstest2013.en`." in card
    assert ("Model selection on `dev.tsv`: up to 500 held-out pairs of each source, named in "
            "its third column, 640 distinct English sentences.") in card
    assert ATTRIBUTION not in card and "CC-BY 2.0 France" not in card  # not the Anki release
    # Training: the head on the broad model, the broad model on version 8.
    assert ("- The head alone was trained, 4,000 steps (7 minutes), with every other weight "
            "frozen at those of the `broad` run, so the translations are that model's. The "
            "`broad` model itself: 40,000 steps (3 full epochs), 717 minutes on Broad CPU "
            "(2 cores, no GPU or TPU), started from version 8's weights and vocabulary; guided "
            "alignment: attention supervised by eflomal") in card
    assert "; its weights: the checkpoint with the best dev BLEU (38.12)." in card
    assert "Version 8 itself" not in card and "frozen at version" not in card
    assert "Warm start" not in card  # the head's line says where the weights came from
    # Reproduce: the corpus, the broad run, the head, then the export of the head.
    commands = [
        "nmt corpus --recipe training/corpora/broad.yaml --out ../runs/corpus-broad\n",
        "nmt train --config training/configs/broad.yaml --run ../runs/broad"
        "   # starts from models/en-fr/8\n",
        "nmt train --config training/configs/head-broad.yaml --run ../runs/head-broad\n",
        "nmt export --run ../runs/head-broad --out models/en-fr --version 9 --average 2 "
        "--precision float32 --links intersect",
        "nmt evaluate --model models/en-fr --test",
        "python -m training.model_card --run ../runs/head-broad",
    ]
    positions = [card.find(command) for command in commands]
    assert -1 not in positions and positions == sorted(positions)
    assert "nmt export --run runs/en-fr" not in card  # version 8 is not re-exported
    # Limits: the corpus's domains, not "short everyday sentences".
    assert ("- Trained on the domains of its 2 sources only (`anki`, `laws`; see Data); other "
            "domains (news, medical, literature) were not in training") in card
    assert "short, everyday sentences" not in card


def test_card_of_a_warm_started_corpus_run_says_where_its_weights_began(tmp_path):
    sources = [_source("anki", train=10, train_written=10),
               _source("news-commentary", train=5, train_written=5)]
    corpus = _write_corpus(tmp_path / "corpus", sources, name="mixed")
    run = _corpus_run(tmp_path / "runs" / "broad", corpus)
    (run / "summary.json").write_text(json.dumps({
        "name": "broad", "steps": 100, "epochs_completed": 1, "train_seconds": 60.0,
        "parameters": 1, "tensorflow": "2.21.0", "python": "3.11.7",
        "guided_alignment": GUIDED, "starting_model": {"name": "en-fr", "version": 8}}))
    (run / "history.jsonl").write_text(json.dumps({"step": 100, "bleu": 30.5}) + "\n")
    card = render(run, {}, _write_export(tmp_path / "models" / "9"))

    assert "- Warm start: every weight the two models share, and the vocabulary, started from "\
        "version 8's (`init_from`)." in card
    assert ("nmt corpus --recipe training/corpora/mixed.yaml --out ../runs/corpus-mixed\n"
            "nmt train --config training/configs/broad.yaml --run ../runs/broad"
            "   # starts from models/en-fr/8\nnmt export --run ../runs/broad ") in card
    # A source of a domain the card would call unseen takes it off that list.
    assert "other domains (medical, literature) were not in training" in card


def test_a_moved_corpus_is_refused_until_corpus_names_it(tmp_path, monkeypatch, capsys):
    corpus = _write_corpus(tmp_path / "corpus", CORPUS_SOURCES)
    run = _corpus_run(tmp_path / "runs" / "broad", tmp_path / "gone")  # not where it was
    (run / "summary.json").write_text(json.dumps({
        "name": "broad", "steps": 10, "epochs_completed": 0, "train_seconds": 60.0,
        "parameters": 1, "tensorflow": "2.21.0", "python": "3.11.7"}))
    export = _write_export(tmp_path / "models" / "9")

    with pytest.raises(FileNotFoundError, match=r"gone/train\.tsv \(data\.train of .*"
                                                r"pass --corpus DIR"):
        render(run, {}, export)
    with pytest.raises(FileNotFoundError, match="holds neither manifest.json nor train.tsv"):
        render(run, {}, export, corpus=tmp_path)
    card = render(run, {}, export, corpus=corpus)
    assert "`laws` (`laws.tsv.gz`): 5,000 pairs read" in card

    # The command line says what to do, without a traceback.
    (tmp_path / "evaluation.json").write_text("{}")
    argv = ["model_card", "--run", str(run), "--evaluation", str(tmp_path / "evaluation.json"),
            "--export", str(export), "--out", str(tmp_path / "MODEL_CARD.md")]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit):
        main()
    assert "pass --corpus DIR" in capsys.readouterr().err

    # The command line passes --corpus on.
    monkeypatch.setattr(sys, "argv", [*argv, "--corpus", str(corpus)])
    main()
    assert (tmp_path / "MODEL_CARD.md").read_text() == card

    # A plain training file (no manifest beside it) gives the Anki card, as before.
    (tmp_path / "anki").mkdir()
    (tmp_path / "anki" / "train.tsv").write_text("Hello.\tBonjour.\n")
    card = render(run, {}, export, corpus=tmp_path / "anki")
    assert ATTRIBUTION in card and "short, everyday sentences" in card
    assert "nmt corpus" not in card and "--run runs/en-fr\n" in card

    # A manifest of another training file is not this run's corpus.
    manifest = json.loads((corpus / "manifest.json").read_text())
    (corpus / "manifest.json").write_text(json.dumps({**manifest, "train_file": "other.tsv"}))
    with pytest.raises(ValueError, match="describes other.tsv, not the run's data.train"):
        render(run, {}, export, corpus=corpus)


def test_card_of_a_head_on_a_run_without_a_summary_is_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("name: head\n")
    (run / "summary.json").write_text(json.dumps({
        "name": "head", "steps": 10, "epochs_completed": 0, "train_seconds": 60.0,
        "parameters": 1, "tensorflow": "2.21.0", "python": "3.11.7",
        "alignment_head": {"train": "frozen", "init_from": "../broad"},
        "starting_model": {"name": "broad", "training": {}}}))
    export = _write_export(tmp_path / "models" / "9", model_config={
        "encoder_layers": 2, "decoder_layers": 1, "cell": "lstm", "hidden_dim": 512,
        "embedding_dim": 256, "share_embeddings": True, "tie_embeddings": True,
        "target_vocab_size": 8000, "alignment_head": "general"})
    with pytest.raises(ValueError, match="run `broad`, records no training summary"):
        render(run, {}, export)


ANNEAL_SOURCES = [
    {**CORPUS_SOURCES[0], "weight": 3, "train_written": 2970},
    {**CORPUS_SOURCES[1], "weight": 0.25, "train_written": 1125},
]


def _write_chain(tmp_path, first_corpus="broad"):
    """Version 9's chain in `tmp_path/runs`: `broad` from version 8 (gone from the tree) on
    the `broad` corpus (named `first_corpus`), exported to `broad-last/1`; `anneal` from it
    on the `anneal` corpus, exported to `avg/1`; a frozen `head` on that, on the `broad`
    corpus. Each summary keeps the metadata of the export it started from
    (`starting_model`), nested."""
    runs = tmp_path / "runs"
    broad_corpus = _write_corpus(runs / "corpus-broad", CORPUS_SOURCES, name=first_corpus)
    anneal_corpus = _write_corpus(runs / "corpus-anneal", ANNEAL_SOURCES, name="anneal")
    version_8 = {"name": "en-fr", "version": 8, "training": {"name": "en-fr-head", "steps": 4000},
                 "averaged_checkpoints": [3500, 4000], "precision": "float32"}
    broad = {"name": "broad", "steps": 1200, "epochs_completed": 0, "train_seconds": 15690.1,
             "train_pairs": 3100, "stopped_by": "signal SIGTERM", "guided_alignment": GUIDED,
             "machine": {"cpu": "Broad CPU", "cores": 2, "accelerators": []},
             "starting_model": version_8}
    anneal = {"name": "anneal", "steps": 600, "epochs_completed": 0, "train_seconds": 6840.0,
              "train_pairs": 4000, "machine": {"cpu": "Anneal CPU", "cores": 2, "accelerators": []},
              "starting_model": {"name": "broad", "version": 1, "training": broad,
                                 "averaged_checkpoints": [1100, 1118, 1131, 1200],
                                 "precision": "float32", "precisions": ["float32"]}}
    head = {"name": "head", "steps": 4000, "epochs_completed": 1, "train_seconds": 1800.0,
            "parameters": 8453952, "tensorflow": "2.21.0", "python": "3.11.7",
            "train_pairs": 3100, "machine": {"cpu": "Head CPU", "cores": 2, "accelerators": []},
            "guided_alignment": {"type": "none", "weight": 0.0, "symmetrization": "intersection"},
            "alignment_head": {"train": "frozen", "init_from": None, "type": "ce"},
            # Both paths: the intermediate export's command takes no --precision.
            "starting_model": {"name": "anneal", "version": 1, "training": anneal,
                               "averaged_checkpoints": [300, 400, 500, 600],
                               "precision": "float32", "precisions": ["float32", "bfloat16"]}}
    for summary, corpus, start in [
            (broad, broad_corpus, "init_from: ../../models/en-fr/8\n"),
            (anneal, anneal_corpus, "init_from: ../broad-last/1\n"),
            (head, broad_corpus, "alignment_head:\n  train: frozen\n  init_from: ../avg/1\n")]:
        run = _corpus_run(runs / summary["name"], corpus, start)
        (run / "summary.json").write_text(json.dumps(summary))
    export = _write_export(tmp_path / "models" / "9", averaged_checkpoints=[3500, 4000],
                           word_links="intersect",
                           model_config=HEAD_MODEL_CONFIG)
    return runs, export


def _commands(card):
    """The lines of the card's Reproduce block."""
    return card.split("```sh\n")[1].split("```")[0].splitlines()


def test_reproduce_of_a_chain_builds_each_corpus_run_and_export_in_order(tmp_path):
    runs, export = _write_chain(tmp_path)

    card = render(runs / "head", {}, export)

    assert _commands(card)[:12] == [
        "pip install '.[align]'   # eflomal, for the guided-alignment links (training only)",
        "# models/en-fr/8, which the first run starts from, is in the git history (the commit "
        "that shipped it):",
        'git checkout "$(git log -1 --diff-filter=A --format=%H -- '
        'models/en-fr/8/saved_model.pb)" -- models/en-fr/8',
        "nmt corpus --recipe training/corpora/broad.yaml --out ../runs/corpus-broad",
        "nmt train --config training/configs/broad.yaml --run ../runs/broad "
        "--set optim.max_steps=1200   # starts from models/en-fr/8; the run stopped on a "
        "signal SIGTERM at step 1,200",
        "nmt export --run ../runs/broad --out ../runs/broad-last --version 1 --average 4 "
        "--precision float32",
        "nmt corpus --recipe training/corpora/anneal.yaml --out ../runs/corpus-anneal",
        "nmt train --config training/configs/anneal.yaml --run ../runs/anneal",
        "nmt export --run ../runs/anneal --out ../runs/avg --version 1 --average 4",
        # The head trains on the broad corpus again: built once, above.
        "nmt train --config training/configs/head.yaml --run ../runs/head",
        "nmt export --run ../runs/head --out models/en-fr --version 9 --average 2 "
        "--precision float32 --links intersect \\",
        "    --metadata training/configs/en-fr.metadata.json",
    ]
    assert "python -m training.model_card --run ../runs/head \\" in _commands(card)
    # Training: the whole chain first, then a line per run, its figures from the records.
    training = card.split("## Training\n\n")[1]
    assert training.startswith(
        "- In all: 3 runs, 5,800 steps in 6.8 hours of wall clock on Broad CPU (2 cores, no "
        "GPU or TPU), Anneal CPU (2 cores, no GPU or TPU) and Head CPU (2 cores, no GPU or "
        "TPU); at most 1 full epoch of its corpus in one run.\n- Made by 3 runs,")
    assert ("\n- The last run, `head`: 4,000 steps (1 full epoch), 30 minutes of wall clock "
            "on Head CPU") in training
    assert (
        "- Made by 3 runs, each from the weights of the one before (figures from each run's "
        "summary as the next run recorded it with the weights):\n"
        "    - `broad`: from version 8 (`models/en-fr/8`, in the git history), on the `broad` "
        "corpus (3,100 pairs used), 1,200 steps in 4.4 hours of wall clock on Broad CPU "
        "(2 cores, no GPU or TPU), stopped on a signal SIGTERM; exported as the mean of the "
        "last 4 checkpoints (steps 1,100, 1,118, 1,131, 1,200) to `broad-last/1`.\n"
        "    - `anneal`: from `broad-last/1`, on the `anneal` corpus (4,000 pairs used), 600 "
        "steps in 1.9 hours of wall clock on Anneal CPU (2 cores, no GPU or TPU); exported "
        "as the mean of the last 4 checkpoints (steps 300, 400, 500, 600) to `avg/1`.\n"
        "    - `head`: from `avg/1`, its alignment head alone trained (every other weight "
        "frozen), on the `broad` corpus (3,100 pairs used), 4,000 steps in 30 minutes of wall "
        "clock on Head CPU (2 cores, no GPU or TPU); this export: the mean of the last 2 "
        "checkpoints (steps 3,500, 4,000).\n") in card
    # The model under the head is an intermediate export, not a shipped version 1.
    assert ("with every other weight frozen at `avg/1`'s (an export of the `anneal` run), so "
            "the translations are `avg/1`'s, byte for byte. The `anneal` run that made it: 600 "
            "steps (0 full epochs), 114 minutes on Anneal CPU") in card
    assert "frozen at version" not in card and "Version 1 itself" not in card
    # Data: the two corpora share their sources; the pairs each wrote per source.
    assert (
        "- The runs of the chain trained on 2 corpora of these 2 sources, licences and "
        "attributions, with other weights; the training pairs each wrote per source (weight):\n"
        "    - `broad` (`training/corpora/broad.yaml`, runs `broad`, `head`): 3,240 pairs: "
        "`anki` 990 (1), `laws` 2,250 (0.5).\n"
        "    - `anneal` (`training/corpora/anneal.yaml`, run `anneal`): 4,095 pairs: "
        "`anki` 2,970 (3), `laws` 1,125 (0.25).\n") in card


def test_the_export_of_a_chain_carries_the_attributions_of_its_first_corpus(tmp_path):
    # training/configs/en-fr-broad.metadata.json is in the repository; broad.metadata.json
    # is not, so the chain of the test above names the Anki release's.
    runs, export = _write_chain(tmp_path, first_corpus="en-fr-broad")

    commands = _commands(render(runs / "head", {}, export))

    assert commands[3] == ("nmt corpus --recipe training/corpora/en-fr-broad.yaml "
                           "--out ../runs/corpus-en-fr-broad")
    assert commands[10:12] == [
        "nmt export --run ../runs/head --out models/en-fr --version 9 --average 2 "
        "--precision float32 --links intersect \\",
        "    --metadata training/configs/en-fr-broad.metadata.json",
    ]
    assert not any("en-fr.metadata.json" in command for command in commands)


def test_reproduce_names_a_corpus_metadata_file_only_when_the_repository_has_it():
    distillation = {"teacher": {"path": "models/en-fr/4", "name": "en-fr", "version": 4},
                    "decoding": {"beam_size": 5}}

    def metadata(**options):
        return [line for line in "\n".join(reproduce("9", **options)).splitlines()
                if line.startswith("    --metadata training/")]

    broad = ["    --metadata training/configs/en-fr-broad.metadata.json"]
    anki = ["    --metadata training/configs/en-fr.metadata.json"]
    assert metadata(run_name="en-fr-broad", corpus="en-fr-broad") == broad
    assert metadata(run_name="s", corpus="en-fr-broad", distillation=distillation) == broad
    # A run from another run: both on the corpus, whose file names the final export.
    assert metadata(run_name="anneal", corpus="en-fr-broad",
                    start={"name": "en-fr-broad", "training": {}}) == broad
    assert metadata(run_name="other", corpus="no-such-corpus") == anki
    assert metadata() == anki
    # A head on a shipped export: that export's command names the file too.
    assert metadata(run_name="head", start={"version": 8}) == anki * 2


def test_a_chain_corpus_of_other_sources_lists_them_and_their_licences(tmp_path):
    runs, export = _write_chain(tmp_path)
    news = _source("news", train=7, train_written=7, licence="News licence",
                   attribution="News attribution")
    (runs / "corpus-anneal" / "manifest.json").write_text(json.dumps({
        **json.loads((runs / "corpus-anneal" / "manifest.json").read_text()),
        "train_pairs": 7, "sources": [news]}))

    card = render(runs / "head", {}, export)

    assert "corpora of these" not in card
    assert ("- The `anneal` corpus (`training/corpora/anneal.yaml`, run `anneal`), 7 training "
            "pairs from 1 sources:\n    - `news` (`news.tsv.gz`): 0 pairs read") in card
    assert "Licence: News licence. Attribution: \"News attribution\"." in card
    assert "domains of its 3 sources only (`anki`, `laws`, `news`; see Data)" in card


def test_a_shipped_export_is_told_by_its_path_not_its_version(tmp_path):
    runs, export = _write_chain(tmp_path)
    # The anneal run now starts from a shipped version 1: the chain stops there.
    config = (runs / "anneal" / "config.yaml").read_text()
    (runs / "anneal" / "config.yaml").write_text(
        config.replace("init_from: ../broad-last/1", "init_from: ../../models/en-fr/1"))

    commands = _commands(render(runs / "head", {}, export))

    assert commands[1:6] == [
        "# models/en-fr/1, which the first run starts from, is in the git history (the commit "
        "that shipped it):",
        'git checkout "$(git log -1 --diff-filter=A --format=%H -- '
        'models/en-fr/1/saved_model.pb)" -- models/en-fr/1',
        "nmt corpus --recipe training/corpora/anneal.yaml --out ../runs/corpus-anneal",
        "nmt train --config training/configs/anneal.yaml --run ../runs/anneal"
        "   # starts from models/en-fr/1",
        "nmt export --run ../runs/anneal --out ../runs/avg --version 1 --average 4",
    ]
    assert not any("../runs/broad" in command for command in commands)


def test_a_chain_whose_earlier_run_or_corpus_is_gone_is_refused(tmp_path):
    runs, export = _write_chain(tmp_path)
    (runs / "corpus-anneal" / "train.tsv").unlink()
    (runs / "corpus-anneal" / "manifest.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"runs/anneal, an earlier run of the chain"):
        render(runs / "head", {}, export)

    runs, export = _write_chain(tmp_path / "again")
    (runs / "broad" / "summary.json").unlink()
    with pytest.raises(FileNotFoundError, match=r"broad/summary\.json does not exist: anneal "
                                                r"started from .*broad-last/1, an export of "
                                                r"the `broad` run"):
        render(runs / "anneal", {}, export)


def test_a_chain_of_keras_trainer_runs_reproduces_with_the_accelerator_script(tmp_path):
    """Version 10's chain: a GPU run and a CPU last phase with the Keras trainer (imported
    with `training.accelerator.import_weights`), then a frozen head with `nmt train`."""
    runs = tmp_path / "runs"
    main_corpus = _write_corpus(runs / "corpus-v10", CORPUS_SOURCES, name="v10")
    anneal_corpus = _write_corpus(runs / "corpus-v10-anneal", ANNEAL_SOURCES, name="v10-anneal")
    gpu = {"name": "v10", "steps": 8144, "epochs_completed": 10, "train_seconds": 612.3,
           "train_pairs": 3100, "backend": "jax", "device": "gpu: NVIDIA H200",
           "precision": "mixed_bfloat16"}
    anneal = {"name": "v10-anneal", "steps": 1400, "epochs_completed": 0,
              "train_seconds": 7200.0, "backend": "jax", "device": "cpu: cpu",
              "precision": "float32", "starting_model": {"name": "v10", "training": gpu}}
    head = {"name": "v10-head", "steps": 4000, "epochs_completed": 1, "train_seconds": 1800.0,
            "parameters": 8453952, "tensorflow": "2.21.0", "python": "3.11.7",
            "train_pairs": 3100, "machine": {"cpu": "Head CPU", "cores": 2, "accelerators": []},
            "guided_alignment": {"type": "none", "weight": 0.0, "symmetrization": "intersection"},
            "alignment_head": {"train": "frozen", "init_from": None, "type": "ce"},
            "starting_model": {"name": "v10-anneal", "training": anneal}}
    for summary, corpus, start in [
            (gpu, main_corpus, ""), (anneal, anneal_corpus, "init_from: ../v10\n"),
            (head, main_corpus, "alignment_head:\n  train: frozen\n  init_from: ../v10-anneal\n")]:
        run = _corpus_run(runs / summary["name"], corpus, start)
        (run / "summary.json").write_text(json.dumps(summary))
    export = _write_export(tmp_path / "models" / "10", averaged_checkpoints=[3500, 4000],
                           word_links="intersect", model_config=HEAD_MODEL_CONFIG)

    card = render(runs / "v10-head", {}, export)

    assert _commands(card)[1:12] == [
        "nmt corpus --recipe training/corpora/v10.yaml --out ../runs/corpus-v10",
        "nmt shards --corpus ../runs/corpus-v10 --config training/configs/v10.yaml "
        "--spm models/en-fr/10/assets/en.spm.model --out ../runs/shards-v10",
        "python -m training.accelerator.train --config training/configs/v10.yaml \\",
        "    --shards ../runs/shards-v10 --run ../runs/v10-keras --backend jax --max-steps 8144 "
        "--precision mixed_bfloat16 --out ../runs/v10-out",
        "python -m training.accelerator.import_weights --from ../runs/v10-out "
        "--shards ../runs/shards-v10 \\",
        "    --run ../runs/v10 --corpus ../runs/corpus-v10",
        "nmt corpus --recipe training/corpora/v10-anneal.yaml --out ../runs/corpus-v10-anneal",
        "nmt shards --corpus ../runs/corpus-v10-anneal --config training/configs/v10-anneal.yaml "
        "--spm models/en-fr/10/assets/en.spm.model --out ../runs/shards-v10-anneal",
        "python -m training.accelerator.train --config training/configs/v10-anneal.yaml \\",
        "    --shards ../runs/shards-v10-anneal --run ../runs/v10-anneal-keras --backend jax "
        "--max-steps 1400 \\",
        "    --init-weights ../runs/v10-out/weights --out ../runs/v10-anneal-out",
    ]
    assert _commands(card)[12:15] == [
        "python -m training.accelerator.import_weights --from ../runs/v10-anneal-out "
        "--shards ../runs/shards-v10-anneal \\",
        "    --run ../runs/v10-anneal --corpus ../runs/corpus-v10-anneal --after ../runs/v10",
        "nmt train --config training/configs/v10-head.yaml --run ../runs/v10-head",
    ]
    assert (
        "    - `v10`: from scratch, on the `v10` corpus (3,100 pairs used), 8,144 steps in 10 "
        "minutes of wall clock on one NVIDIA H200 GPU (its host's CPU not recorded; Keras on "
        "jax, mixed_bfloat16); the next run started from the weights it handed back.\n"
        "    - `v10-anneal`: from the `v10` run, on the `v10-anneal` corpus, 1,400 steps in 2.0 "
        "hours of wall clock on a CPU whose model the run did not record (Keras on jax, "
        "float32); the next run started from the weights it handed back.\n") in card
    assert "- In all: 3 runs, 13,544 steps in 2.7 hours" in card
    assert ("no guided alignment: attention learned from the translation loss alone; its "
            "weights: those it handed back, the mean of its last checkpoints.") in card
