"""The model card states exactly the figures of the files that measured them."""

import json

from nmt.constants import METADATA_PATH
from training.model_card import ATTRIBUTION, render


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
    from training.model_card import reproduce

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
