"""`nmt translate --format` and `nmt align --format`: one output line per input line."""

import io
import sys
import types

from documents.markup import _parse
from documents.sentences import TextLinks
from nmt.types import DecodeOptions
from nmt_cli import main as cli
from nmt_cli.documents import project_lines, translate_lines

FRENCH = {"Click Save.": "Cliquez Enregistrer.", "Hello.": "Bonjour.", "Thank you.": "Merci.",
          "Saved": "Enregistré", "Saved %d.": "Enregistré %d."}


def fake_translate(sentences):
    out = []
    for sentence in sentences:
        target = FRENCH[sentence]
        count = min(len(sentence.split()), len(target.split()))
        out.append(TextLinks(target, tuple((i, i) for i in range(count))))
    return out


class FakeTranslator:
    """Stands for `nmt.inference.translator.Translator` without TensorFlow."""

    calls: list = []
    info = types.SimpleNamespace(default_options=DecodeOptions())

    @classmethod
    def load(cls, path, precision=None):
        return cls()

    def translate(self, sentences, options=None, **overrides):
        FakeTranslator.calls.append(list(sentences))
        return fake_translate(sentences)

    def align(self, sources, targets, **overrides):
        return [TextLinks(t, tuple((i, i) for i in range(min(len(s.split()), len(t.split())))))
                for s, t in zip(sources, targets, strict=True)]


def with_fake_translator(monkeypatch):
    module = types.ModuleType("nmt.inference.translator")
    module.Translator = FakeTranslator
    monkeypatch.setitem(sys.modules, "nmt.inference.translator", module)
    FakeTranslator.calls = []


def test_translate_lines_keeps_blank_lines_and_one_call_per_batch():
    calls = []

    def translate(sentences):
        calls.append(sentences)
        return fake_translate(sentences)

    lines = ["Hello. Thank you.", "", "Click <b>Save</b>."]
    assert list(translate_lines(lines, "html", translate)) == [
        "Bonjour. Merci.", "", "Cliquez <b>Enregistrer</b>."]
    assert calls == [["Hello.", "Thank you.", "Click Save."]]


def test_malformed_line_is_named():
    try:
        list(translate_lines(["Hello.", "Click <b>Save."], "html", fake_translate))
    except ValueError as error:
        assert str(error).startswith("line 2: <b> is never closed at character 6")
    else:
        raise AssertionError("no error")


def test_project_lines_puts_the_source_tags_on_each_target():
    pairs = [('Click <g id="1">Save</g>.', "Cliquez Enregistrer."), ("", ""), ("<x/>", "Oui")]
    out = list(project_lines(pairs, "xml", FakeTranslator().align))
    assert out == ['Cliquez <g id="1">Enregistrer</g>.', "", "<x/>Oui"]


def test_cli_translate_format_html(monkeypatch, capsys):
    with_fake_translator(monkeypatch)
    monkeypatch.setattr("sys.stdin", io.StringIO("<p>Hello.</p> <i>Thank you.</i>\n\nHello.\n"))
    assert cli.main(["translate", "--format", "html"]) == 0
    assert capsys.readouterr().out == "<p>Bonjour.</p> <i>Merci.</i>\n\nBonjour.\n"
    assert FakeTranslator.calls == [["Hello.", "Thank you.", "Hello."]]


def test_cli_translate_format_text_keeps_sentences_apart(monkeypatch, capsys):
    with_fake_translator(monkeypatch)
    assert cli.main(["translate", "--format", "text", "Hello.  Thank you."]) == 0
    assert capsys.readouterr().out == "Bonjour.  Merci.\n"


def test_cli_translate_malformed_markup_is_a_usage_error(monkeypatch, capsys):
    with_fake_translator(monkeypatch)
    assert cli.main(["translate", "--format", "xml", "Click <b>Save."]) == 2
    assert "line 1: <b> is never closed" in capsys.readouterr().err


def test_cli_align_format_projects_tags(monkeypatch, capsys, tmp_path):
    with_fake_translator(monkeypatch)
    source, target = tmp_path / "s.html", tmp_path / "t.txt"
    source.write_text("Click <b>Save</b> &amp; <br>go.\n", encoding="utf-8")
    target.write_text("Cliquez Enregistrer & allez.\n", encoding="utf-8")
    assert cli.main(["align", "--format", "html", "--source", str(source),
                     "--target", str(target)]) == 0
    out = capsys.readouterr().out
    assert out == "Cliquez <b>Enregistrer</b> &amp; <br>allez.\n"
    assert sorted(t for t in (out[i.start:i.end] for i in _parse(out, "html")) if "<" in t) == [
        "</b>", "<b>", "<br>"]


def test_cli_translate_format_with_the_tiny_model(tiny_model_dir, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(
        'I love <b>you</b>. <x id="1"/>The cat.\n\n<g id="2">Hi.</g>\n'))
    code = cli.main(["translate", "--model", str(tiny_model_dir), "--beam-size", "1",
                     "--format", "xml"])
    assert code == 0
    lines = capsys.readouterr().out.split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""
    assert sorted(t for t in (lines[0][i.start:i.end] for i in _parse(lines[0], "xml"))
                  if "<" in t) == ["</b>", "<b>", '<x id="1"/>']
    assert lines[2].startswith('<g id="2">') and lines[2].endswith("</g>")


def test_cli_translate_documents_keep_placeholders_unless_told_not_to(monkeypatch, capsys):
    with_fake_translator(monkeypatch)
    assert cli.main(["translate", "--format", "text", "Saved %d. Thank you."]) == 0
    assert capsys.readouterr().out == "Enregistré %d. Merci.\n"
    assert FakeTranslator.calls == [["Saved", "Thank you."]]  # "%d." is a word of its own
    assert cli.main(["translate", "--format", "html", "--no-placeholders", "<b>Saved %d.</b>"]) == 0
    assert capsys.readouterr().out == "<b>Enregistré %d.</b>\n"
    assert FakeTranslator.calls[-1] == ["Saved %d."]
