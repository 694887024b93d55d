"""`documents.po`: PO/POT files translated, everything not translated kept byte for byte."""

import collections
import datetime
import shutil
import subprocess

import polib
import pytest

from documents.placeholders import find_placeholders
from documents.po import (
    PLURAL_FORMS,
    PoFileError,
    PoOptions,
    _field_lines,
    is_restructuredtext,
    read_po,
    translate_po,
)
from documents.sentences import TextLinks
from tests.documents.helpers import Recorder, backwards, diff, shouting

NOW = datetime.datetime(2025, 3, 4, 5, 6, tzinfo=datetime.UTC)

TEMPLATE = r'''# Messages of a small example program.
# This file is put in the public domain.
#
#, fuzzy
msgid ""
msgstr ""
"Project-Id-Version: example 1.0\n"
"Report-Msgid-Bugs-To: \n"
"POT-Creation-Date: 2025-01-01 10:00+0000\n"
"PO-Revision-Date: YEAR-MO-DA HO:MI+ZONE\n"
"Last-Translator: FULL NAME <EMAIL@ADDRESS>\n"
"Language-Team: LANGUAGE <LL@li.org>\n"
"Language: \n"
"MIME-Version: 1.0\n"
"Content-Type: text/plain; charset=CHARSET\n"
"Content-Transfer-Encoding: 8bit\n"
"Plural-Forms: nplurals=INTEGER; plural=EXPRESSION;\n"

#. The title of the main window.
#: src/window.c:12
msgid "The garden is green."
msgstr ""

#: src/window.c:20 src/menu.c:7
#, c-format
msgid "Delete %s?"
msgstr ""

#: src/list.c:31
#, c-format
msgid "%d apple is ripe."
msgid_plural "%d apples are ripe."
msgstr[0] ""
msgstr[1] ""

#: src/menu.c:40
msgctxt "menu"
msgid "Open"
msgstr ""

#: src/door.c:8
msgctxt "door"
msgid "Open"
msgstr ""

#: src/help.c:3
msgid ""
"The cat sleeps on the warm roof. The dog waits at the door.\n"
"Then they eat."
msgstr ""
'''

FRENCH = r'''# French messages of a small example program.
msgid ""
msgstr ""
"Project-Id-Version: example 1.0\n"
"PO-Revision-Date: 2024-06-01 12:00+0200\n"
"Last-Translator: Jeanne Martin <jeanne@example.org>\n"
"Language-Team: French <fr@example.org>\n"
"Language: fr\n"
"MIME-Version: 1.0\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Content-Transfer-Encoding: 8bit\n"

# Checked by Jeanne.
#: src/window.c:12
msgid "The garden is green."
msgstr "Le jardin est vert."

#: src/window.c:15
msgid "The house is big and the rooms are bright, so we like to spend our evenings there."
msgstr ""

#: src/window.c:18
#, fuzzy
#| msgid "The car is red."
msgid "The car is blue."
msgstr "La voiture est rouge."

#: src/list.c:31
msgid "%d apple is ripe."
msgid_plural "%d apples are ripe."
msgstr[0] "%d pomme est mûre."
msgstr[1] ""

#~ msgid "The old window."
#~ msgstr ""

#~ msgid "An older line that nobody reads."
#~ msgstr "Une ligne plus ancienne."
'''


def translated(text: str, translate=shouting, **options):
    result = translate_po(read_po(text.encode("utf-8"), "test.po"), translate,
                          PoOptions(**options), now=NOW)
    return result.data.decode("utf-8"), result.report


def entries(text: str) -> dict:
    """`{(msgctxt, msgid): entry}` of a PO text, obsolete entries included."""
    return {(e.msgctxt, e.msgid): e for e in polib.pofile(text)}


def test_untranslated_messages_are_filled_and_marked_fuzzy():
    out, report = translated(TEMPLATE)
    found = entries(out)

    green = found[(None, "The garden is green.")]
    assert green.msgstr == "THE GARDEN IS GREEN." and green.flags == ["fuzzy"]
    assert green.comment == "The title of the main window."
    assert green.occurrences == [("src/window.c", "12")]
    assert found[(None, "Delete %s?")].flags == ["fuzzy", "c-format"]
    assert report.messages == report.written == 6 and report.kept == report.obsolete == 0
    # GNU's order: references, then flags, then the message.
    assert '#: src/window.c:12\n#, fuzzy\nmsgid "The garden is green."' in out


def test_a_plural_message_fills_both_french_forms():
    found = entries(translated(TEMPLATE)[0])

    apples = found[(None, "%d apple is ripe.")]
    assert apples.msgstr_plural == {0: "%d APPLE IS RIPE.", 1: "%d APPLES ARE RIPE."}


def test_only_the_empty_form_of_a_plural_is_filled():
    found = entries(translated(FRENCH)[0])

    assert found[(None, "%d apple is ripe.")].msgstr_plural == {
        0: "%d pomme est mûre.", 1: "%d APPLES ARE RIPE."}


def test_contexts_are_kept_and_a_text_is_translated_once():
    recorder = Recorder()
    found = entries(translated(TEMPLATE, recorder)[0])

    assert found[("menu", "Open")].msgstr == found[("door", "Open")].msgstr == "OPEN"
    read = [s for call in recorder.calls for s in call]
    assert read.count("Open") == 1


def test_an_entry_of_several_sentences_and_lines_is_split_and_joined():
    recorder = Recorder()
    found = entries(translated(TEMPLATE, recorder)[0])

    assert found[(None, "The cat sleeps on the warm roof. The dog waits at the door.\n"
                        "Then they eat.")].msgstr == (
        "THE CAT SLEEPS ON THE WARM ROOF. THE DOG WAITS AT THE DOOR.\nTHEN THEY EAT.")
    read = [s for call in recorder.calls for s in call]
    assert {"The cat sleeps on the warm roof.", "The dog waits at the door.",
            "Then they eat."} <= set(read)


def test_all_sentences_of_the_file_go_in_few_calls_sorted_by_length():
    recorder = Recorder()
    translated(TEMPLATE, recorder, batch_size=3)

    read = [s for call in recorder.calls for s in call]
    assert [len(call) for call in recorder.calls] == [3, 3, 2]  # 8 distinct sentences
    assert read == sorted(read, key=lambda s: (len(s), s))
    assert read[:2] == ["Open", "Delete"]  # "Open" once; "%s?" is not the model's to read


def test_placeholders_come_back_as_written():
    """Through the path of `nmt translate --format text`, which takes them out."""
    found = entries(translated(TEMPLATE)[0])

    assert found[(None, "Delete %s?")].msgstr == "DELETE %s?"
    assert found[(None, "%d apple is ripe.")].msgstr_plural[0].startswith("%d ")


def test_existing_translations_are_kept_unless_overwrite():
    kept, report = translated(FRENCH)
    found = entries(kept)
    assert found[(None, "The garden is green.")].msgstr == "Le jardin est vert."
    car = found[(None, "The car is blue.")]
    assert car.msgstr == "La voiture est rouge." and car.previous_msgid == "The car is red."
    assert report.kept == 2 and report.written == 2  # the house; the empty plural form

    overwritten, report = translated(FRENCH, overwrite=True)
    found = entries(overwritten)
    assert found[(None, "The garden is green.")].msgstr == "THE GARDEN IS GREEN."
    assert found[(None, "The garden is green.")].tcomment == "Checked by Jeanne."
    assert found[(None, "%d apple is ripe.")].msgstr_plural[0] == "%d APPLE IS RIPE."
    assert report.kept == 0 and report.written == 4


def test_no_fuzzy_clears_the_flag_and_the_previous_msgid_of_what_it_writes():
    out, _ = translated(FRENCH, overwrite=True, fuzzy=False)
    car = entries(out)[(None, "The car is blue.")]

    assert car.msgstr == "THE CAR IS BLUE." and car.flags == [] and car.previous_msgid is None
    assert "#," not in out and "#| msgid" not in out


def test_obsolete_entries_are_left_alone():
    out, report = translated(FRENCH, overwrite=True)

    assert report.obsolete == 2
    assert '#~ msgid "The old window."\n#~ msgstr ""\n' in out
    assert out.endswith(FRENCH[FRENCH.index("#~ msgid"):])


def test_a_template_header_becomes_a_french_one():
    out, _ = translated(TEMPLATE)
    header = polib.pofile(out).metadata

    assert header["Language"] == "fr" and header["Plural-Forms"] == PLURAL_FORMS
    assert header["Content-Type"] == "text/plain; charset=UTF-8"
    assert header["PO-Revision-Date"] == "2025-03-04 05:06+0000"
    assert header["Last-Translator"] == "Automatically generated"  # as msginit --no-translator
    assert header["Language-Team"] == "none"
    assert header["Project-Id-Version"] == "example 1.0"
    assert out.startswith("# Messages of a small example program.\n")


def test_a_french_header_gets_only_what_it_lacks():
    out, _ = translated(FRENCH)
    header_diff = diff(FRENCH, out)[:4]

    assert header_diff == ['-"PO-Revision-Date: 2024-06-01 12:00+0200\\n"',
                           '+"PO-Revision-Date: 2025-03-04 05:06+0000\\n"',  # messages written
                           '+"Plural-Forms: nplurals=2; plural=(n > 1);\\n"',  # was missing
                           "+#, fuzzy"]  # the first message written
    assert out.index("Content-Transfer-Encoding") < out.index("Plural-Forms")
    nothing_to_do = FRENCH.replace('msgstr[1] ""', 'msgstr[1] "%d pommes sont mûres."').replace(
        'evenings there."\nmsgstr ""', 'evenings there."\nmsgstr "La maison."')
    assert diff(nothing_to_do, translated(nothing_to_do)[0]) == [
        '+"Plural-Forms: nplurals=2; plural=(n > 1);\\n"']  # no message written: same date


def test_a_wrapped_header_field_stays_as_written_and_an_odd_header_is_rewritten():
    wrapped = FRENCH.replace('"Language-Team: French <fr@example.org>\\n"',
                             '"Language-Team: French <https://translate.example.org/projects/"\n'
                             '"example/fr/>\\n"')
    assert diff(wrapped, translated(wrapped)[0])[:3] == [
        '-"PO-Revision-Date: 2024-06-01 12:00+0200\\n"',
        '+"PO-Revision-Date: 2025-03-04 05:06+0000\\n"',
        '+"Plural-Forms: nplurals=2; plural=(n > 1);\\n"']

    one_line = ('msgid ""\nmsgstr "Language: fr\\nContent-Type: text/plain; charset=UTF-8\\n"\n'
                '\nmsgid "Good night."\nmsgstr ""\n')
    out, _ = translated(one_line)
    assert out.splitlines()[:10] == [
        'msgid ""', 'msgstr ""', '"PO-Revision-Date: 2025-03-04 05:06+0000\\n"',
        '"Last-Translator: Automatically generated\\n"', '"Language-Team: none\\n"',
        '"Language: fr\\n"', '"MIME-Version: 1.0\\n"',
        '"Content-Type: text/plain; charset=UTF-8\\n"', '"Content-Transfer-Encoding: 8bit\\n"',
        '"Plural-Forms: nplurals=2; plural=(n > 1);\\n"']
    assert polib.pofile(out).metadata["Last-Translator"] == "Automatically generated"


def test_a_file_without_a_header_gets_one_below_its_top_comments():
    text = '# A header-less file.\n\nmsgid "Good morning."\nmsgstr ""\n'

    out, _ = translated(text)

    assert out.startswith('# A header-less file.\n\nmsgid ""\nmsgstr ""\n"PO-Revision-Date')
    assert polib.pofile(out).metadata["Language"] == "fr"
    assert out.endswith('#, fuzzy\nmsgid "Good morning."\nmsgstr "GOOD MORNING."\n')


def test_a_file_for_another_language_is_refused():
    german = FRENCH.replace('"Language: fr\\n"', '"Language: de\\n"')

    with pytest.raises(PoFileError, match="Language: de; this model translates into French"):
        translated(german)
    for french in ("fr_CA", "fr-BE", "French"):
        assert translated(FRENCH.replace("Language: fr", f"Language: {french}"))[1].written == 2


def test_untouched_lines_are_kept_byte_for_byte():
    """Odd wrapping, CRLF line ends, comments in any order: only msgstr and flags change."""
    odd = (FRENCH.replace('"Language: fr\\n"\n', '"Language: fr\\n"\n"Plural-Forms: '
                          'nplurals=2; plural=n>1;\\n"\n')
           .replace('msgid "The car is blue."', 'msgid ""\n"The car "\n"is blue."')
           + '\n#: src/end.c:1\nmsgid "Last."\nmsgstr "Dernier."\n'
           ).replace("\n", "\r\n")
    done = odd.replace("\r\n", "\n").replace('msgstr[1] ""', 'msgstr[1] "x"').replace(
        'bright, so we like to spend our evenings there."\nmsgstr ""',
        'bright, so we like to spend our evenings there."\nmsgstr "y"').replace("\n", "\r\n")

    untouched = translate_po(read_po(done.encode(), "t.po"), shouting, now=NOW)
    assert untouched.data == done.encode()  # nothing to write: every byte as it was
    assert untouched.report.written == 0

    out = translate_po(read_po(odd.encode(), "t.po"), shouting, now=NOW).data.decode()
    assert diff(odd, out) == [
        '-"PO-Revision-Date: 2024-06-01 12:00+0200\\n"',
        '+"PO-Revision-Date: 2025-03-04 05:06+0000\\n"',
        "+#, fuzzy",  # the house: a msgstr "" before, and after
        '+"THE HOUSE IS BIG AND THE ROOMS ARE BRIGHT, SO WE LIKE TO SPEND OUR EVENINGS "',
        '+"THERE."',
        "+#, fuzzy",
        '-msgstr[1] ""',
        '+msgstr[1] "%d APPLES ARE RIPE."']
    assert out.count("\r\n") == out.count("\n")


def test_a_long_translation_is_wrapped_as_gnu_gettext_does():
    text = ("Le jardin est vert et la maison est grande, les pièces sont claires et nous "
            "aimons y passer nos soirées « tranquilles ».")

    assert _field_lines("msgstr", text) == [
        'msgstr ""',
        '"Le jardin est vert et la maison est grande, les pièces sont claires et nous "',
        '"aimons y passer nos soirées « tranquilles »."']
    assert _field_lines("msgstr[1]", 'Il a dit "oui".\nPuis\tnon.\n') == [
        'msgstr[1] ""', '"Il a dit \\"oui\\".\\n"', '"Puis\\tnon.\\n"']
    assert _field_lines("msgstr", "Court.\n") == ['msgstr "Court.\\n"']


def test_the_file_keeps_its_charset():
    latin = FRENCH.replace("charset=UTF-8", "charset=ISO-8859-1")
    data = latin.encode("latin-1")

    out = translate_po(read_po(data, "latin.po"), shouting, now=NOW).data
    assert "pomme est mûre".encode("latin-1") in out

    def euro(sentences):
        return [TextLinks("Prix en €") for _ in sentences]

    with pytest.raises(PoFileError, match="ISO-8859-1 cannot write: convert the file to UTF-8"):
        translate_po(read_po(data, "latin.po"), euro, now=NOW)


@pytest.mark.parametrize(("data", "message"), [
    (b"\xff\xfe\x00binary", r"bad\.po is not UTF-8 text \(byte 0\): is it a PO or POT file\?"),
    (b"# A title\n\nSome prose, not a catalogue.\n",
     r"bad\.po:3: not PO syntax \(not a comment, keyword or quoted string\)"),
    (b'msgid "An "unescaped" quote"\nmsgstr ""\n', r"bad\.po:1: not PO syntax \(unescaped"),
    (b"# Only a comment.\n", r"bad\.po has no PO message \(no msgid\)"),
    (b"", r"bad\.po has no PO message"),
])
def test_what_is_not_a_po_file_is_refused_with_its_line(data, message):
    with pytest.raises(PoFileError, match=message):
        read_po(data, "bad.po")


def test_a_plural_forms_without_nplurals_is_refused_where_plurals_need_it():
    broken = TEMPLATE.replace("nplurals=INTEGER; plural=EXPRESSION;", "plural=(n > 1);")

    with pytest.raises(PoFileError, match="Plural-Forms .* has no nplurals"):
        translated(broken)


def test_batch_size_is_checked():
    with pytest.raises(ValueError, match="batch_size must be at least 1. Received: 0"):
        PoOptions(batch_size=0)


@pytest.mark.skipif(shutil.which("msgfmt") is None,
                    reason="needs GNU gettext's msgfmt (apt-get install gettext)")
@pytest.mark.parametrize("fuzzy", [True, False])
def test_the_result_passes_msgfmt_check(tmp_path, fuzzy):
    for name, text in (("template.pot", TEMPLATE), ("french.po", FRENCH)):
        path = tmp_path / f"{name}.po"
        path.write_text(translated(text, overwrite=True, fuzzy=fuzzy)[0], encoding="utf-8")
        for use_fuzzy in ([], ["--use-fuzzy"]):
            checked = subprocess.run(["msgfmt", "--check", *use_fuzzy, "-o", "/dev/null",
                                      str(path)], capture_output=True, text=True)
            assert checked.returncode == 0 and checked.stderr == "", (name, checked.stderr)


# --- reStructuredText documentation (Sphinx's gettext output) --------------------------------

SPHINX = r"""msgid ""
msgstr ""
"Project-Id-Version: Python 3.13\n"
"Language: fr\n"
"MIME-Version: 1.0\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Content-Transfer-Encoding: 8bit\n"

#: ../../library/functions.rst:12
msgid "Return the length of an object with :func:`len`, as in ``len(x) == 3``."
msgstr ""

#: ../../library/functions.rst:20 ../../library/stdtypes.rst:7
msgid ""
"Read :ref:`the tutorial <tut-intro>` and `the guide <https://docs.python.org/"
"3/>`_ first. It describes |version| of :py:meth:`str.split` [#]_."
msgstr ""

#: ../../library/functions.rst:31
msgid "The :keyword:`!if` statement takes ``'%s' % name`` and ``{0}``. For example::"
msgstr ""

#: ../../library/functions.rst:40
msgid "This is *important* and **strong**; see :class:`~os.PathLike`, `here`__ and :pep:`8`."
msgstr ""

#: ../../tutorial/introduction.rst:50
msgid "The loop runs while (here: ``a < 10``) holds, see `the page <https://x.org>`_. Then stop."
msgstr ""
"""


def rest_markup(text: str) -> collections.Counter:
    return collections.Counter(p.text for p in find_placeholders(text, ("rest",)))


@pytest.mark.parametrize("translate", [shouting, backwards])
def test_a_rest_file_keeps_each_role_and_literal_exactly_once(translate):
    read = []

    def reading(sentences):
        read.extend(sentences)
        return translate(sentences)

    out, report = translated(SPHINX, reading)

    assert report.written == 5
    for entry in polib.pofile(out):
        if entry.msgid:
            wanted = rest_markup(entry.msgid)
            assert wanted and rest_markup(entry.msgstr) == wanted, entry.msgstr
    for sentence in read:  # the model read none of it
        assert "`" not in sentence and "|" not in sentence and "[#]_" not in sentence
        assert not sentence.endswith("::") and "%s" not in sentence and "{0}" not in sentence
    assert "This is *important* and **strong**; see" in read  # emphasis is text


def test_rest_markup_over_several_words_is_never_glued_to_a_word():
    """Alone, a link read as `via .` went before the word its `.` links to: `_plaît.`."""
    glued_to_plait = ("Contribuez s'il vous plaît.", ((1, 0), (3, 3)))  # `.` -> "plaît."
    recorder = Recorder({"Please contribute via .": glued_to_plait})
    sphinx = SPHINX + ('\n#: ../../faq/general.rst:9\nmsgid "Please contribute via `the PSF '
                       'page <https://x.org>`_."\nmsgstr ""\n')

    found = entries(translated(sphinx, recorder)[0])

    assert found[(None, "Please contribute via `the PSF page <https://x.org>`_.")].msgstr == (
        "PLEASE CONTRIBUTE VIA `the PSF page <https://x.org>`_.")
    assert "Please contribute via" in recorder.read


def test_a_rest_markup_piece_comes_back_where_its_word_goes():
    found = entries(translated(SPHINX)[0])

    assert found[(None, "Return the length of an object with :func:`len`, as in "
                        "``len(x) == 3``.")].msgstr == (
        "RETURN THE LENGTH OF AN OBJECT WITH :func:`len`, AS IN ``len(x) == 3``.")
    assert found[(None, "The :keyword:`!if` statement takes ``'%s' % name`` and ``{0}``. "
                        "For example::")].msgstr.endswith("FOR EXAMPLE::")


def test_rest_is_told_from_the_references_and_can_be_forced_either_way():
    assert is_restructuredtext(read_po(SPHINX.encode(), "sphinx.po"))
    assert not is_restructuredtext(read_po(TEMPLATE.encode(), "template.pot"))
    obsolete_only = TEMPLATE + '\n#: ../../old.rst:3\n#~ msgid "Gone."\n#~ msgstr ""\n'
    assert not is_restructuredtext(read_po(obsolete_only.encode(), "t.pot"))

    recorder = Recorder()
    translated(SPHINX, recorder, rest=False)  # the model reads reST as text
    assert "Return the length of an object with :func:`len`, as in ``len(x) == 3``." in (
        recorder.read)


def test_a_file_without_rst_references_is_translated_as_before():
    """Backticks and bars in a C program's messages are text; `rest=True` makes them markup."""
    program = TEMPLATE + ('\n#: src/help.c:9\nmsgid "Press `q` to quit | ``x`` now::"\n'
                          'msgstr ""\n')
    auto, recorder = Recorder(), Recorder()
    assert translated(program, auto)[0] == translated(program, recorder, rest=False)[0]
    assert auto.calls == recorder.calls
    assert "Press `q` to quit | ``x`` now::" in auto.read

    forced = Recorder()
    out = entries(translated(program, forced, rest=True)[0])
    assert "Press to quit | now" in forced.read
    assert out[(None, "Press `q` to quit | ``x`` now::")].msgstr == (
        "PRESS `q` TO QUIT | ``x`` NOW::")
