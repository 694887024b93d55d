"""`nmt translate-file IN OUT`: the format from the extension, IN never written, OUT atomic."""

import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import polib
import pytest

from nmt.documents.sentences import TextLinks
from nmt.types import DecodeOptions
from nmt_cli import main as cli
from nmt_cli.files import file_format, write_atomically

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
        return [TextLinks(s.upper(), tuple((i, i) for i in range(len(s.split()))))
                for s in sentences]


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
    assert file_format(Path("strings.txt"), "po") == "po"
    with pytest.raises(ValueError, match=r"cannot tell the format of notes.md from its "
                                         r"extension '.md': supported are .po \(po\), .pot "
                                         r"\(po\); name one with --format po"):
        file_format(Path("notes.md"), None)


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
