"""`nmt translate-file IN OUT`: the format from the extension, IN never written, OUT atomic."""

import os
import shutil
import subprocess
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import polib
import pytest

from nmt.types import DecodeOptions
from nmt_cli import main as cli
from nmt_cli.files import file_format, write_atomically
from tests.documents.helpers import shouting

TEMPLATE = r'''# Messages of a small example program.
#, fuzzy
msgid ""
msgstr ""
"Project-Id-Version: example 1.0\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=INTEGER; plural=EXPRESSION;\n"

#: src/main.c:4
msgid "I like green tea."
msgstr ""

#: src/main.c:9
#, c-format
msgid "%d cat sleeps."
msgid_plural "%d cats sleep."
msgstr[0] ""
msgstr[1] ""

#: src/main.c:12
msgctxt "button"
msgid "Thank you."
msgstr "Merci."

#~ msgid "Goodbye."
#~ msgstr "Au revoir."
'''
XLIFF = '''<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="en">
  <file id="f">
    <unit id="tea"><segment><source>I like <pc id="1">green</pc> tea.</source></segment></unit>
    <unit id="thanks"><segment state="final"><source>Thank you.</source><target>Merci.</target>
    </segment></unit>
    <unit id="name" translate="no"><segment><source>Acme</source></segment></unit>
  </file>
</xliff>
'''
MSGFMT = pytest.mark.skipif(shutil.which("msgfmt") is None,
                            reason="needs GNU gettext's msgfmt (apt-get install gettext)")


class FakeTranslator:
    """Stands for `nmt.inference.translator.Translator` without TensorFlow: upper-cases."""

    loads = 0
    fail = False
    info = types.SimpleNamespace(default_options=DecodeOptions())

    @classmethod
    def load(cls, path, precision=None):
        cls.loads += 1
        return cls()

    def translate(self, sentences, options=None):
        if FakeTranslator.fail:
            raise RuntimeError("the model broke down")
        return shouting(sentences)


@pytest.fixture
def fake_translator(monkeypatch):
    module = types.ModuleType("nmt.inference.translator")
    module.Translator = FakeTranslator
    monkeypatch.setitem(sys.modules, "nmt.inference.translator", module)
    FakeTranslator.loads, FakeTranslator.fail = 0, False
    return FakeTranslator


@pytest.fixture
def template(tmp_path) -> Path:
    path = tmp_path / "messages.pot"
    path.write_text(TEMPLATE, encoding="utf-8")
    return path


def run(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main(["translate-file", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_format_comes_from_the_extension_or_the_flag():
    assert file_format(Path("fr.po"), None) == file_format(Path("app.POT"), None) == "po"
    assert file_format(Path("a.xlf"), None) == file_format(Path("b.XLIFF"), None) == "xliff"
    assert file_format(Path("strings.txt"), "po") == "po"
    assert file_format(Path("film.SRT"), None) == "srt"
    assert file_format(Path("film.vtt"), None) == "vtt"
    assert file_format(Path("letter.docx"), None) == "docx"
    with pytest.raises(ValueError, match=r"cannot tell the format of notes.rtf from its "
                                         r"extension '.rtf': supported are .po \(po\), .pot "
                                         r"\(po\), .xlf \(xliff\), .xliff \(xliff\), .srt "
                                         r"\(srt\), .vtt \(vtt\), .docx \(docx\), .*; name one "
                                         r"with --format po\|xliff\|srt\|vtt\|docx"):
        file_format(Path("notes.rtf"), None)


def test_translate_file_fills_the_template(fake_translator, template, tmp_path, capsys):
    out = tmp_path / "fr.po"

    code, printed, err = run(capsys, template, out)

    assert code == 0, err
    assert template.read_text(encoding="utf-8") == TEMPLATE  # IN is never written
    found = {(e.msgctxt, e.msgid): e for e in polib.pofile(str(out))}
    assert found[(None, "I like green tea.")].msgstr == "I LIKE GREEN TEA."
    assert found[(None, "%d cat sleeps.")].msgstr_plural == {0: "%d CAT SLEEPS.",
                                                              1: "%d CATS SLEEP."}
    assert found[(None, "%d cat sleeps.")].flags == ["fuzzy", "c-format"]
    assert found[("button", "Thank you.")].msgstr == "Merci."  # kept
    assert printed.startswith(f"{out}: 2 of 3 messages translated (fuzzy), 1 translations kept, "
                              "1 obsolete entries left as they were; 3 sentences in ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fr.po", "messages.pot"]  # no temp


def test_translate_file_fills_an_xliff_file(fake_translator, tmp_path, capsys):
    source, out = tmp_path / "app.xlf", tmp_path / "app.fr.xlf"
    source.write_text(XLIFF, encoding="utf-8")

    code, printed, err = run(capsys, source, out)

    assert code == 0, err
    assert source.read_text(encoding="utf-8") == XLIFF  # IN is never written
    written = out.read_text(encoding="utf-8")
    assert written == XLIFF.replace('srcLang="en">', 'srcLang="en" trgLang="fr">').replace(
        '<unit id="tea"><segment><source>I like <pc id="1">green</pc> tea.</source>',
        '<unit id="tea"><segment state="translated"><source>I like <pc id="1">green</pc> tea.'
        '</source><target>I LIKE <pc id="1">GREEN</pc> TEA.</target>')
    assert printed.startswith(f"{out}: 1 of 3 segments translated (for review), 1 translations "
                              "kept, 1 not to translate, 0 without words; 1 sentences in ")

    assert run(capsys, source, out, "--overwrite")[0] == 0
    assert "<target>THANK YOU.</target>" in out.read_text(encoding="utf-8")


def test_an_xliff_file_for_another_language_fails_before_the_model_loads(fake_translator,
                                                                          tmp_path, capsys):
    source = tmp_path / "app.xliff"
    source.write_text(XLIFF.replace('srcLang="en"', 'srcLang="en" trgLang="de"'))

    code, _, err = run(capsys, source, tmp_path / "out.xliff")

    assert code == 2 and fake_translator.loads == 0
    assert err == (f'nmt translate-file: error: {source}:2: trgLang="de"; this model translates '
                   'into French: give a file for French (trgLang="fr", fr-CA...) or one without '
                   "trgLang\n")


def test_overwrite_and_no_fuzzy(fake_translator, template, tmp_path, capsys):
    out = tmp_path / "fr.po"

    assert run(capsys, template, out, "--overwrite", "--no-fuzzy")[0] == 0

    found = {(e.msgctxt, e.msgid): e for e in polib.pofile(str(out))}
    assert found[("button", "Thank you.")].msgstr == "THANK YOU."
    assert all("fuzzy" not in e.flags for e in found.values())


@pytest.mark.parametrize(("make", "message"), [
    (lambda d: (d / "none.po", d / "fr.po"), "no file at {d}/none.po"),
    (lambda d: (d / "messages.pot", d / "messages.pot"),
     "OUT ({d}/messages.pot) is IN: write the translation to another file"),
    (lambda d: (d / "messages.pot", d / "missing" / "fr.po"),
     "no directory {d}/missing to write fr.po in"),
    (lambda d: (d / "messages.pot", d), "OUT ({d}) is a directory"),
    (lambda d: (d / "notes.txt", d / "fr.po"), "cannot tell the format of {d}/notes.txt"),
])
def test_bad_paths_fail_before_the_model_loads(fake_translator, template, tmp_path, capsys,
                                               make, message):
    (tmp_path / "notes.txt").write_text("Some notes.\n")
    source, target = make(tmp_path)

    code, _, err = run(capsys, source, target)

    assert code == 2
    assert err.startswith(f"nmt translate-file: error: {message.format(d=tmp_path)}")
    assert fake_translator.loads == 0
    assert template.read_text(encoding="utf-8") == TEMPLATE


def test_out_linked_to_in_is_refused(fake_translator, template, tmp_path, capsys):
    link = tmp_path / "fr.po"
    link.symlink_to(template)

    code, _, err = run(capsys, template, link)

    assert code == 2 and "is IN" in err
    assert template.read_text(encoding="utf-8") == TEMPLATE


def test_a_file_that_is_not_po_is_refused_with_its_line(fake_translator, tmp_path, capsys):
    notes = tmp_path / "notes.po"
    notes.write_text("# Notes\n\nBuy bread.\n")

    code, _, err = run(capsys, notes, tmp_path / "fr.po")

    assert code == 2
    assert err == (f"nmt translate-file: error: {notes}:3: not PO syntax (not a comment, "
                   "keyword or quoted string): is it a PO or POT file?\n")
    assert fake_translator.loads == 0 and not (tmp_path / "fr.po").exists()


def test_a_failed_translation_leaves_out_as_it_was(fake_translator, template, tmp_path,
                                                    capsys):
    out = tmp_path / "fr.po"
    out.write_text("the previous translation\n")
    fake_translator.fail = True

    with pytest.raises(RuntimeError, match="the model broke down"):
        run(capsys, template, out)

    assert out.read_text() == "the previous translation\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fr.po", "messages.pot"]


def test_write_atomically_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    path = tmp_path / "fr.po"
    path.write_text("old")
    os.chmod(path, 0o640)

    write_atomically(path, "nouveau é".encode())

    assert path.read_text(encoding="utf-8") == "nouveau é"
    assert path.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["fr.po"]


@MSGFMT
def test_the_tiny_model_translates_a_template_end_to_end(tiny_model_dir, template, tmp_path,
                                                         capsys):
    """The real path: a SavedModel (untrained: gibberish), placeholders kept, msgfmt clean."""
    out = tmp_path / "fr.po"

    code, printed, err = run(capsys, template, out, "--model", tiny_model_dir, "--beam-size", "1")

    assert code == 0, err
    assert "2 of 3 messages translated (fuzzy)" in printed
    given, written = polib.pofile(str(template)), polib.pofile(str(out))
    assert [(e.msgctxt, e.msgid, e.obsolete) for e in written] == [
        (e.msgctxt, e.msgid, e.obsolete) for e in given]
    plural = written.find("%d cat sleeps.")
    assert all(form.count("%d") == 1 for form in plural.msgstr_plural.values())
    for use_fuzzy in ([], ["--use-fuzzy"]):
        checked = subprocess.run(["msgfmt", "--check", *use_fuzzy, "-o", "/dev/null", str(out)],
                                 capture_output=True, text=True)
        assert checked.returncode == 0 and checked.stderr == "", checked.stderr


def test_the_tiny_model_translates_an_xliff_file_end_to_end(tiny_model_dir, tmp_path, capsys):
    """The real path (an untrained SavedModel: gibberish): every inline element back once."""
    source, out = tmp_path / "app.xlf", tmp_path / "app.fr.xlf"
    source.write_text(XLIFF.replace("I like <pc", 'I have %d <ph id="2"/> cups. I like <pc'),
                      encoding="utf-8")

    code, printed, err = run(capsys, source, out, "--model", tiny_model_dir, "--beam-size", "1")

    assert code == 0, err
    assert "1 of 3 segments translated (for review)" in printed
    ns = "{urn:oasis:names:tc:xliff:document:2.0}"
    target = ET.parse(out).getroot().find(f"{ns}file/{ns}unit/{ns}segment/{ns}target")
    assert [child.tag for child in target] in ([f"{ns}ph", f"{ns}pc"], [f"{ns}pc", f"{ns}ph"])
    assert "".join(target.itertext()).count("%d") == 1


SUBTITLES = ("1\r\n00:00:01,000 --> 00:00:02,000\r\nI went to the\r\n\r\n"
             "2\r\n00:00:02,000 --> 00:00:03,000\r\n<i>market.</i>\r\n")


def test_translate_file_translates_subtitles(fake_translator, tmp_path, capsys):
    source, out = tmp_path / "film.srt", tmp_path / "film.fr.srt"
    source.write_bytes(SUBTITLES.encode())

    code, printed, err = run(capsys, source, out)

    assert code == 0, err
    assert out.read_bytes() == SUBTITLES.replace("I went to the", "I WENT TO THE").replace(
        "market.", "MARKET.").encode()
    assert printed.startswith(f"{out}: 2 of 2 cues translated, 1 sentences over several cues; "
                              "1 sentences in ")
    code, printed, err = run(capsys, source, out, "--cue-by-cue")
    assert code == 0 and ", 0 sentences over several cues; 2 sentences in " in printed


def test_a_webvtt_file_without_its_header_fails_before_the_model_loads(fake_translator,
                                                                       tmp_path, capsys):
    source = tmp_path / "film.vtt"
    source.write_text("00:01.000 --> 00:02.000\nHi.\n", encoding="utf-8")

    code, _, err = run(capsys, source, tmp_path / "out.vtt")

    assert code == 2 and fake_translator.loads == 0
    assert err == (f"nmt translate-file: error: {source}:1: a WebVTT file starts with the line "
                   "WEBVTT; found '00:01.000 --> 00:02.000': add WEBVTT as the first line\n")


def test_translate_file_translates_a_word_document(fake_translator, tmp_path, capsys):
    import docx

    document = docx.Document()
    document.add_paragraph("I like ").add_run("green").bold = True
    document.sections[0].header.paragraphs[0].text = "Quarterly report"
    source, out = tmp_path / "report.docx", tmp_path / "rapport.docx"
    document.save(source)

    code, printed, err = run(capsys, source, out)

    assert code == 0, err
    translated = docx.Document(out)
    assert translated.paragraphs[0].text == "I LIKE GREEN"
    assert [r.text for r in translated.paragraphs[0].runs if r.bold] == ["GREEN"]
    assert translated.sections[0].header.paragraphs[0].text == "QUARTERLY REPORT"
    assert printed.startswith(f"{out}: 2 paragraphs translated in ")


def test_a_file_that_is_not_a_word_document_fails_before_the_model_loads(fake_translator,
                                                                         tmp_path, capsys):
    source = tmp_path / "report.docx"
    source.write_bytes(b"this is plain text, not a zip package")

    code, _, err = run(capsys, source, tmp_path / "out.docx")

    assert code == 2 and fake_translator.loads == 0
    assert err.startswith(f"nmt translate-file: error: {source}") and "\n" == err[-1]


def test_translate_file_translates_markdown(fake_translator, tmp_path, capsys):
    source, out = tmp_path / "guide.md", tmp_path / "guide.fr.md"
    source.write_text("# Tea\n\nI like `green` tea.\n", encoding="utf-8")

    code, printed, err = run(capsys, source, out)

    assert code == 0, err
    assert out.read_text(encoding="utf-8") == "# TEA\n\nI LIKE `green` TEA.\n"
    assert printed.startswith(f"{out}: 2 of 2 paragraphs, headings and table cells translated, "
                              "0 texts left in English")


def test_a_markdown_file_that_is_not_utf8_fails_before_the_model_loads(fake_translator,
                                                                       tmp_path, capsys):
    source = tmp_path / "guide.markdown"
    source.write_bytes("# Tea\n\nCaf\u00e9 au lait.\n".encode("latin-1"))

    code, _, err = run(capsys, source, tmp_path / "out.md")

    assert code == 2 and fake_translator.loads == 0
    assert err.startswith(f"nmt translate-file: error: {source}:3: not UTF-8 text")


# --- through a server (--server HOST:PORT) ---------------------------------------------------


@pytest.fixture(scope="module")
def shouting_server(tmp_path_factory):
    from tests.serving.file_fakes import fake_server

    with fake_server(tmp_path_factory.mktemp("model")) as (server, _):
        yield server


def _without_revision_date(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if "PO-Revision-Date" not in line)


@pytest.mark.parametrize("flags", [[], ["--overwrite", "--no-fuzzy"]])
def test_through_a_server_the_file_and_the_summary_line_are_those_of_the_model_in_process(
        fake_translator, shouting_server, template, tmp_path, capsys, flags):
    local, remote = tmp_path / "local.po", tmp_path / "remote.po"

    code, printed_here, err = run(capsys, template, local, *flags)
    assert code == 0, err
    code, printed_there, err = run(capsys, template, remote, "--server", shouting_server.target,
                                   "--beam-size", "2", *flags)

    assert code == 0, err
    assert _without_revision_date(remote.read_text(encoding="utf-8")) == (
        _without_revision_date(local.read_text(encoding="utf-8")))
    assert printed_there.split(" in ")[0] == printed_here.split(" in ")[0].replace(
        "local.po", "remote.po")
    assert fake_translator.loads == 1  # the local run only
    assert sorted(p.name for p in tmp_path.iterdir()) == ["local.po", "messages.pot",
                                                          "remote.po"]


def test_through_a_server_its_refusal_is_printed_and_out_is_left_alone(shouting_server,
                                                                       tmp_path, capsys):
    notes, out = tmp_path / "notes.po", tmp_path / "fr.po"
    notes.write_text("# Notes\n\nBuy bread.\n")

    code, _, err = run(capsys, notes, out, "--server", shouting_server.target)

    assert code == 1 and not out.exists()
    assert err == ("nmt translate-file: error: the server answered INVALID_ARGUMENT: notes.po:3: "
                   "not PO syntax (not a comment, keyword or quoted string): is it a PO or POT "
                   "file?\n")


def test_through_a_server_a_local_precision_or_model_is_refused(template, tmp_path, capsys):
    code, _, err = run(capsys, template, tmp_path / "fr.po", "--server", "localhost:1",
                       "--precision", "float32")
    assert code == 2 and "--precision float32 applies to a local --model" in err

    with pytest.raises(SystemExit):  # argparse: --model and --server exclude each other
        run(capsys, template, tmp_path / "fr.po", "--server", "localhost:1", "--model", "m")


def test_rest_roles_are_kept_in_sphinx_files_unless_no_rest(fake_translator, tmp_path, capsys):
    source = tmp_path / "functions.po"
    source.write_text('#: ../../library/functions.rst:3\nmsgid "Call :func:`len` on ``x``."\n'
                      'msgstr ""\n', encoding="utf-8")

    for flags, wanted in (((), "CALL :func:`len` ON ``x``."),
                          (("--no-rest",), "CALL :FUNC:`LEN` ON ``X``.")):
        code, _, err = run(capsys, source, tmp_path / "fr.po", *flags)
        assert code == 0, err
        assert polib.pofile(str(tmp_path / "fr.po"))[0].msgstr == wanted

    code, _, err = run(capsys, source, tmp_path / "fr.po", "--server", "localhost:1", "--rest")
    assert code == 2 and "--rest applies to a local --model" in err


# --- with a glossary (--glossary FILE) ---------------------------------------------------------


def test_a_glossary_is_written_into_the_file_here_and_through_a_server(
        fake_translator, monkeypatch, shouting_server, template, tmp_path, capsys):
    from tests.serving.file_fakes import shouted

    monkeypatch.setattr(FakeTranslator, "translate",
                        lambda self, sentences, options=None: [shouted(s) for s in sentences])
    terms = tmp_path / "terms.tsv"
    terms.write_text("green tea\tthé vert\n", encoding="utf-8")
    local, remote = tmp_path / "local.po", tmp_path / "remote.po"

    code, _, err = run(capsys, template, local, "--glossary", terms)
    assert code == 0, err
    code, _, err = run(capsys, template, remote, "--glossary", terms,
                       "--server", shouting_server.target)
    assert code == 0, err

    found = {(e.msgctxt, e.msgid): e for e in polib.pofile(str(local))}
    assert found[(None, "I like green tea.")].msgstr == "I LIKE thé vert."
    assert _without_revision_date(remote.read_text(encoding="utf-8")) == (
        _without_revision_date(local.read_text(encoding="utf-8")))


def test_a_glossary_id_needs_a_server(fake_translator, template, tmp_path, capsys):
    code, _, err = run(capsys, template, tmp_path / "fr.po", "--glossary-id", "medical")
    assert code == 2 and "--glossary-id names a glossary of a server" in err
    assert fake_translator.loads == 0
