"""`nmt distill` end to end on tiny models: the teacher's translations through the batch
job (and its resume), the student trained on them with guided alignment and a joint
alignment head, the export recording the teacher, and the student's recommended
decoding becoming its default in `Translator` and the server."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from nmt.constants import METADATA_PATH
from nmt.inference.export import export_saved_model
from nmt.types import DecodeOptions
from tests.conftest import make_tiny_module
from training import distill

# End-to-end: `make test-slow` (and CI) runs it; `make test` leaves it out.
pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
WINDOW = 100  # the teacher's job commits every 100 sources: 3 windows of the fixture
TEACHER_SCORES = {"test_bleu": 12.5, "alibi_aer": 0.61}


def distinct_sources() -> list[str]:
    seen: dict[str, None] = {}
    for line in (FIXTURES / "tiny_pairs.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip():
            seen.setdefault(line.split("\t")[0].strip(), None)
    return list(seen)


def student_config(tmp_path: Path) -> Path:
    """A tiny student: guided alignment and an alignment head trained jointly."""
    config = {
        "name": "tiny-student",
        "data": {"train": str(FIXTURES / "tiny_pairs.tsv"),
                 "dev": str(FIXTURES / "tiny_pairs.tsv"), "dev_limit": 8},
        "tokenizer": {"vocab_size": 150, "joint": True},
        "model": {"embedding_dim": 16, "hidden_dim": 16, "attention_units": 8,
                  "encoder_layers": 1, "dropout": 0.0, "input_feeding": False,
                  "alignment_head": "general"},
        "optim": {"max_tokens": 400, "learning_rate": 0.01, "warmup_steps": 2,
                  "precision": "float32", "checkpoint_every": 2, "eval_every": 4,
                  "log_every": 2, "max_steps": 4},
        "guided_alignment": {"type": "ce", "weight": 0.5},
        "alignment_head": {"train": "joint"},
    }
    path = tmp_path / "student.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def teacher(tmp_path_factory, tiny_tokenizers) -> Path:
    """`<base>/3`: a tiny exported teacher whose metadata holds scores."""
    base = tmp_path_factory.mktemp("teacher") / "tiny"
    module = make_tiny_module(tiny_tokenizers)
    module.metadata["scores"] = TEACHER_SCORES
    module.metadata["word_links"] = "intersect"
    return export_saved_model(module, base, 3)


@pytest.fixture(scope="module")
def distilled(tmp_path_factory, teacher):
    """The pipeline run once, to the export: `(config, result)`."""
    tmp_path = tmp_path_factory.mktemp("distill")
    config = distill.DistillConfig(
        teacher=teacher.parent, config=student_config(tmp_path), run_dir=tmp_path / "run",
        out=tmp_path / "student", version=1, window=WINDOW, precision="float32",
        export_precision="float32")
    return config, distill.run(config)


def read_tsv(path: Path) -> list[tuple[str, str]]:
    return [tuple(line.split("\t")) for line in path.read_text(encoding="utf-8").splitlines()]


def test_pipeline_writes_each_step_and_the_student_learns_the_teachers_output(
        distilled, teacher):
    from nmt.inference.translator import Translator

    config, result = distilled
    run = config.run_dir
    assert result.ran == distill.STEPS and result.skipped == ()
    assert result.export == config.out / "1"
    assert (run / "sources.txt").read_text(encoding="utf-8").splitlines() == distinct_sources()
    pairs = read_tsv(run / "pairs.tsv")
    records = [json.loads(line) for line in (run / "teacher.jsonl").read_text().splitlines()]
    assert [r["source"] for r in records] == distinct_sources()
    # Every source the teacher translated to some words, in order (an untrained teacher
    # may end a sentence at once).
    kept = [r["source"] for r in records if r["error"] is None and r["translation"].strip()]
    assert [source for source, _ in pairs] == kept and len(kept) > 0.9 * len(records)
    # The targets are the teacher's beam-5 translations, not the references.
    some = [source for source, _ in pairs[::37]]
    expected = Translator.load(teacher, "float32").translate(some, beam_size=5)
    assert [t for s, t in pairs[::37]] == [" ".join(t.text.split()) for t in expected]
    references = dict(read_tsv(FIXTURES / "tiny_pairs.tsv"))
    assert sum(target != references[source] for source, target in pairs) > len(pairs) // 2
    # The trainer read the pairs and aligned them itself (guided alignment and the head).
    saved = yaml.safe_load((run / "config.yaml").read_text())
    assert saved["data"]["train"] == "pairs.tsv"
    assert len((run / "alignments.txt").read_text().splitlines()) == len(pairs)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 4 and 0 < summary["train_pairs"] <= len(pairs)  # cleaned
    assert summary["alignment_head"]["train"] == "joint"
    assert summary["guided_alignment"]["type"] == "ce"


def test_summary_and_export_record_the_teacher_and_its_decoding(distilled, teacher):
    config, result = distilled
    expected_teacher = {"path": str(teacher), "name": "tiny", "version": 3,
                        "attention": "luong-general", "scores": TEACHER_SCORES}
    summary = json.loads((config.run_dir / "summary.json").read_text())
    record = summary["distillation"]
    assert record["teacher"] == expected_teacher
    assert record["decoding"] == {**DecodeOptions().__dict__, "beam_size": 5, "n_best": 1}
    assert record["sources"] == len(distinct_sources()) == record["pairs"] + record["errors"]
    assert record["teacher_engine"]["options"]["beam_size"] == 5
    metadata = json.loads((result.export / METADATA_PATH).read_text())
    assert metadata["distillation"] == record
    assert "distillation" not in metadata["training"]  # said once, at the top
    assert metadata["recommended_decoding"] == {"beam_size": 1}
    assert metadata["attribution"] == "test fixture"  # the teacher's corpus facts
    assert metadata["word_links"] == "intersect"  # and its link rule
    assert metadata["name"] == "tiny-student"


def test_model_card_states_the_distillation(distilled):
    from training.model_card import render

    config, result = distilled
    card = render(config.run_dir, {}, result.export)
    assert "knowledge distillation" in card
    assert "tiny version 3" in card and "beam 5" in card
    assert "test BLEU 12.50" in card
    assert "greedy (beam 1)" in card
    assert f"--teacher {config.teacher}/3" in card.replace("\\\n    ", "")


def test_a_rerun_skips_every_complete_step(distilled, capsys):
    from nmt_cli.main import main

    config, _ = distilled
    before = (config.run_dir / "distill.json").read_text()
    assert main(["distill", "--teacher", str(config.teacher), "--config", str(config.config),
                 "--run", str(config.run_dir), "--out", str(config.out), "--version", "1",
                 "--window", str(WINDOW), "--precision", "float32",
                 "--export-precision", "float32"]) == 0
    out = capsys.readouterr().out
    assert "ran nothing (translate, train, export done before)" in out
    assert (config.run_dir / "distill.json").read_text() == before


def test_a_rerun_with_another_teacher_decoding_or_config_is_refused(distilled, tmp_path):
    import dataclasses

    config, _ = distilled
    teacher_dir = config.teacher / "3"
    with pytest.raises(ValueError, match="another decoding"):
        distill.start_run(dataclasses.replace(config, beam_size=3), teacher_dir)
    with pytest.raises(ValueError, match="another student_config"):
        distill.start_run(dataclasses.replace(config, overrides={"model.hidden_dim": 8}),
                          teacher_dir)
    # Stopping limits may change between reruns.
    distill.start_run(dataclasses.replace(config, overrides={"optim.max_steps": 8}), teacher_dir)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "config.yaml").write_text("name: x\n")
    with pytest.raises(ValueError, match="no distill.json"):
        distill.start_run(dataclasses.replace(config, run_dir=tmp_path / "other"), teacher_dir)


class FailingEngine:
    """The real engine for `windows` windows, then a crash (as a killed job)."""

    def __init__(self, engine, windows: int):
        self.engine, self.windows, self.max_source_tokens = engine, windows, 256

    def translate(self, sentences):
        if self.windows == 0:
            raise RuntimeError("the machine went down")
        self.windows -= 1
        return self.engine.translate(sentences)

    def settings(self):
        return self.engine.settings()


def test_translation_resumes_after_an_interruption(distilled, tmp_path):
    config, _ = distilled
    config = distill.DistillConfig(teacher=config.teacher, config=config.config,
                                   run_dir=tmp_path / "run", window=WINDOW, precision="float32")
    calls: list[int] = []

    def failing(*args):
        return FailingEngine(distill._local_engine(*args), windows=1)

    with pytest.raises(RuntimeError, match="went down"):
        distill.run(config, failing, until="translate")
    checkpoint = json.loads((config.run_dir / "teacher.jsonl.part.json").read_text())
    assert checkpoint["lines"] == WINDOW
    assert not (config.run_dir / "pairs.tsv").exists()

    def counting(*args):
        engine = distill._local_engine(*args)
        translate = engine.translate
        engine.translate = lambda sentences: calls.append(len(sentences)) or translate(sentences)
        return engine

    result = distill.run(config, counting, until="translate")
    assert result.ran == ("translate",) and result.export is None
    assert sum(calls) == len(distinct_sources()) - WINDOW  # only what was left
    full_run = distilled[0].run_dir
    assert (config.run_dir / "teacher.jsonl").read_bytes() == (
        full_run / "teacher.jsonl").read_bytes()
    assert (config.run_dir / "pairs.tsv").read_bytes() == (full_run / "pairs.tsv").read_bytes()


def test_a_signal_during_training_is_resumed_by_a_rerun(distilled, tmp_path, monkeypatch):
    from training import train as train_module

    config, _ = distilled
    run_dir = tmp_path / "run"
    shutil.copytree(distilled[0].run_dir, run_dir, ignore=shutil.ignore_patterns(
        "checkpoints", "best", "logs", "summary.json", "history.jsonl", "config.yaml",
        "tokenizer", "alignments.txt"))
    config = distill.DistillConfig(teacher=config.teacher, config=config.config, run_dir=run_dir,
                                   window=WINDOW, precision="float32")
    state = json.loads((run_dir / "distill.json").read_text())
    state["steps"] = {"translate": state["steps"]["translate"]}  # not trained yet
    state["fingerprint"] = distill._fingerprint(config, config.teacher / "3")  # moved run
    (run_dir / "distill.json").write_text(json.dumps(state))
    real_run = train_module.run

    def interrupted(*args, **kwargs):
        kwargs["overrides"] = {**kwargs["overrides"], "optim.max_steps": 2}
        path = real_run(*args, **kwargs)
        summary = json.loads((path / "summary.json").read_text())
        (path / "summary.json").write_text(json.dumps({**summary, "stopped_by": "signal SIGINT"}))
        return path

    monkeypatch.setattr(train_module, "run", interrupted)
    with pytest.raises(distill.DistillInterrupted, match="rerun the same nmt distill"):
        distill.run(config, until="train")
    assert "train" not in json.loads((run_dir / "distill.json").read_text())["steps"]
    monkeypatch.setattr(train_module, "run", real_run)
    result = distill.run(config, until="train")
    assert result.ran == ("train",) and result.skipped == ("translate",)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 4 and "stopped_by" not in summary  # went on from step 2
    assert summary["distillation"]["teacher"]["version"] == 3


class BeamSpy:
    """Wraps a Translator's signature to record the beam of each call."""

    def __init__(self, translator):
        self.beams: list[int] = []
        self._call = translator._translate
        translator._translate = self

    def __call__(self, **inputs):
        self.beams.append(int(inputs["beam_size"]))
        return self._call(**inputs)


def test_the_recommended_decoding_is_the_translators_default(distilled):
    from nmt.inference.translator import Translator

    _, result = distilled
    translator = Translator.load(result.export, "float32")
    assert translator.info.default_options == DecodeOptions(beam_size=1)
    spy = BeamSpy(translator)
    sentences = ["I like coffee.", "We eat bread."]
    greedy = translator.translate(sentences)
    translator.translate(sentences, beam_size=4)  # an explicit beam is honoured
    translator.translate(sentences, n_best=3)  # the beam widens to the n-best asked for
    translator.translate(sentences, DecodeOptions())  # complete options, as given
    same = translator.translate(sentences, DecodeOptions(beam_size=1))
    assert spy.beams == [1, 4, 3, 5, 1]
    assert [t.text for t in greedy] == [t.text for t in same]
    assert [len(t.nbest) for t in greedy] == [1, 1]


def test_the_recommended_decoding_is_the_servers_default(distilled):
    from prometheus_client import CollectorRegistry

    from nmt.inference.translator import Translator
    from nmt_api.client import TranslationClient
    from serving.server import ServerConfig
    from serving.testing import ServerThread, free_port

    _, result = distilled
    spies = []

    def loader(path):
        translator = Translator.load(path, "float32")
        spies.append(BeamSpy(translator))
        return translator

    config = ServerConfig(model_dir=result.export.parent, host="127.0.0.1", port=0,
                          metrics_port=free_port(), poll_interval_s=0, grace_s=0)
    with ServerThread(config, loader=loader, registry=CollectorRegistry()) as server:
        server.wait_until_serving()
        with TranslationClient(server.target) as client:
            info = client.model_info()
            assert info["default_options"] == {**DecodeOptions().__dict__, "beam_size": 1}
            assert client.default_options() == DecodeOptions(beam_size=1)
            spies[-1].beams.clear()  # the warm-up's
            client.translate(["I like coffee."])
            client.translate(["I like coffee."], DecodeOptions(beam_size=4))
            client.translate(["I like coffee."], DecodeOptions(beam_size=2, n_best=2))
    assert spies[-1].beams == [1, 4, 2]


def test_the_student_config_may_change_until_its_training_begins(distilled, tmp_path):
    """One translation by the teacher serves several students: before the student's
    training writes its config.yaml, another student config is taken (and recorded);
    after, it is refused."""
    import dataclasses

    config, _ = distilled
    teacher_dir = config.teacher / "3"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for name in ("distill.json", "sources.txt", "teacher.jsonl", "pairs.tsv"):
        shutil.copy(config.run_dir / name, run_dir / name)
    state = json.loads((run_dir / "distill.json").read_text())
    del state["steps"]["train"]
    (run_dir / "distill.json").write_text(json.dumps(state))
    smaller = dataclasses.replace(config, run_dir=run_dir, overrides={"model.hidden_dim": 8})
    taken = distill.start_run(smaller, teacher_dir)
    assert taken["fingerprint"]["student_config"]["model"]["hidden_dim"] == 8
    assert taken["overrides"] == {"model.hidden_dim": 8}
    assert taken["steps"]["translate"] == state["steps"]["translate"]
    assert json.loads((run_dir / "distill.json").read_text()) == taken
    (run_dir / "config.yaml").write_text("name: started\n")
    with pytest.raises(ValueError, match="another student_config"):
        distill.start_run(dataclasses.replace(smaller, overrides={"model.hidden_dim": 12}),
                          teacher_dir)
