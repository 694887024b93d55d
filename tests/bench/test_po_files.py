"""`bench/po_files.py`: templates filled, scored and checked, on small files of our own."""

import polib
import pytest

from bench.po_files import (
    emptied,
    key,
    main,
    other_changes,
    references_of,
    run_file,
    structure,
)
from documents.po import PoOptions
from documents.sentences import TextLinks

DOCS = r'''msgid ""
msgstr ""
"Project-Id-Version: Example docs\n"
"Language: fr\n"
"MIME-Version: 1.0\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Content-Transfer-Encoding: 8bit\n"

#: intro.rst:3
msgid "The :func:`len` function counts the items. Use ``len(x)`` for that."
msgstr ""
"La fonction :func:`len` compte les éléments. Utilisez ``len(x)`` pour cela."

#: intro.rst:7
#, fuzzy
msgid "Lists can grow."
msgstr "Les listes poussent."

#: intro.rst:9
msgid "A string is a sequence of characters."
msgstr ""

#~ msgid "Old text."
#~ msgstr "Vieux texte."
'''
TEMPLATE = r'''msgid ""
msgstr ""
"Project-Id-Version: Example app\n"
"Content-Type: text/plain; charset=UTF-8\n"

#: app.c:1
#, c-format
msgid "Delete %s?"
msgstr ""

#: app.c:2
msgid "Thank you."
msgstr ""
'''
FRENCH = TEMPLATE.replace('"Delete %s?"\nmsgstr ""', '"Delete %s?"\nmsgstr "Supprimer %s ?"'
                          ).replace('"Thank you."\nmsgstr ""', '"Thank you."\nmsgstr "Merci."')


def shouting(sentences):
    return [TextLinks(s.upper(), tuple((i, i) for i in range(len(s.split()))))
            for s in sentences]


def test_the_docs_file_is_emptied_and_its_fuzzy_translations_are_no_reference():
    catalog = polib.pofile(DOCS)

    references = references_of(catalog)
    data = emptied(catalog)

    assert set(references) == {key(catalog[0])}
    again = polib.pofile(data.decode())
    assert [e.msgstr for e in again if not e.obsolete] == ["", "", ""]
    assert all("fuzzy" not in e.flags for e in again)
    assert again.obsolete_entries()[0].msgstr == "Vieux texte."


def test_structure_counts_placeholders_and_rest_kept():
    data = emptied(polib.pofile(DOCS))
    after = data.replace(b'"The :func:`len` function counts the items. Use ``len(x)`` for '
                         b'that."\nmsgstr ""', b'"The :func:`len` function counts the items. Use '
                         b'``len(x)`` for that."\nmsgstr "La :func:`len`, ``len (x)``."')

    found = structure(data, after)

    assert found["entries"] and found["flags"] and found["forms"] == 1
    assert (found["rest"], found["rest kept"]) == (2, 1)
    assert found["other lines changed"] == 0
    assert other_changes(data, data.replace(b"#: intro.rst:9", b"#: intro.rst:10")) == 1
    assert other_changes(data, data.replace(b'msgstr ""\n\n#~', b'msgstr "Une chaine."\n\n#~'
                                            )) == 0


def test_run_file_prints_what_was_kept(capsys):
    references = references_of(polib.pofile(FRENCH))

    run_file("app.pot", TEMPLATE.encode(), references, shouting, PoOptions())

    out = capsys.readouterr().out
    assert out.startswith("app.pot: 2 of 2 messages written (2 distinct sentences)")
    assert "(2 segments with a reference)" in out
    assert "other lines changed: 0" in out
    assert "placeholders kept in 1 of 1 forms that have some" in out


@pytest.mark.parametrize(("rest", "kept"), [(None, 2), (False, 0)])
def test_run_file_counts_the_rest_markup_kept(capsys, rest, kept):
    data = emptied(polib.pofile(DOCS))

    run_file("docs.po", data, references_of(polib.pofile(DOCS)), shouting, PoOptions(rest=rest))

    assert f"reST roles and literals kept {kept} of 2" in capsys.readouterr().out


def test_main_runs_on_small_files(tmp_path, tiny_model_dir, capsys):
    folder = tmp_path / "files-enfr"
    folder.mkdir()
    (folder / "python-docs-faq-general.po").write_text(DOCS, encoding="utf-8")
    (folder / "godot-extractable.pot").write_text(TEMPLATE, encoding="utf-8")
    (folder / "godot-extractable-fr.po").write_text(FRENCH, encoding="utf-8")

    assert main(["--model", str(tiny_model_dir), "--data", str(tmp_path), "--no-scale",
                 "--files", "python-docs-faq-general.po", "godot-extractable.pot"]) == 0

    out = capsys.readouterr().out
    assert "python-docs-faq-general.po: 3 of 3 messages written" in out
    assert "godot-extractable.pot: 2 of 2 messages written" in out
    assert "python-docs-faq-general.po as it is: 1 messages written, 2 of 2 translations " \
           "kept as they were; lines changed beyond them: 0" in out
    with pytest.raises(SystemExit, match="No godot-editor.pot"):
        main(["--data", str(tmp_path), "--files", "godot-editor.pot"])
