"""`documents.xliff`: XLIFF 1.2 and 2.x files translated, everything else kept byte for byte."""

import re
import xml.etree.ElementTree as ET

import pytest

from documents.markup import MAX_DEPTH
from documents.sentences import TextLinks
from documents.xliff import (
    XliffFileError,
    XliffOptions,
    read_xliff,
    translate_xliff,
)
from tests.documents.helpers import Recorder, backwards, diff, shouting

NS_1 = "{urn:oasis:names:tc:xliff:document:1.2}"
NS_2 = "{urn:oasis:names:tc:xliff:document:2.0}"

XLIFF_1 = '''<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <!-- The strings of a small garden shop. -->
  <file original="shop.html" source-language="en" datatype="html">
    <header><note>Prices are in euros.</note></header>
    <body>
      <trans-unit id="title">
        <source>The <g id="1">green</g> watering can is <x id="2"/>cheap.</source>
        <note from="dev">Shown on the front page.</note>
      </trans-unit>
      <trans-unit id="button">
        <source>Press <bpt id="1">&lt;b&gt;</bpt>Buy<ept id="1">&lt;/b&gt;</ept> now.</source>
        <alt-trans><source>Press Buy.</source><target>Appuyez sur Acheter.</target></alt-trans>
      </trans-unit>
      <trans-unit id="basket" approved="yes">
        <source>Your basket is empty.</source>
        <target state="final">Votre panier est vide.</target>
      </trans-unit>
      <trans-unit id="count">
        <source>You have %d seeds <ph id="1">&lt;br/&gt;</ph> left.</source><target/>
      </trans-unit>
      <trans-unit id="brand" translate="no"><source>Green Thumb Ltd</source></trans-unit>
      <group id="legal" translate="no">
        <trans-unit id="licence"><source>All rights reserved.</source></trans-unit>
      </group>
      <trans-unit id="help">
        <source>Water the plants. Then rest.</source>
        <seg-source><mrk mtype="seg" mid="1">Water the plants.</mrk>
          <mrk mtype="seg" mid="2">Then rest.</mrk></seg-source>
      </trans-unit>
      <trans-unit id="icon"><source><x id="7"/></source></trans-unit>
    </body>
  </file>
</xliff>
'''

XLIFF_2 = '''<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.1" srcLang="en-GB">
  <file id="app">
    <unit id="welcome">
      <segment id="1" state="initial" subState="shop:draft">
        <source>Welcome to our <pc id="1">little</pc> shop.</source>
      </segment>
      <ignorable><source> </source></ignorable>
      <segment id="2">
        <source>Ask <ph id="2"/> for <mrk id="m1" translate="no">Bob Smith</mrk>.</source>
      </segment>
    </unit>
    <unit id="sale">
      <segment state="reviewed">
        <source>Everything is on sale.</source><target>Tout est en solde.</target>
      </segment>
    </unit>
    <unit id="bold">
      <segment>
        <source>Take <sc id="1"/>very good care<ec startRef="1"/> of it.</source><target/>
      </segment>
    </unit>
  </file>
  <file id="legal" translate="no">
    <unit id="terms"><segment><source>Terms apply.</source></segment></unit>
  </file>
</xliff>
'''


def translated(text: str, translate=shouting, **options):
    result = translate_xliff(read_xliff(text.encode("utf-8"), "shop.xlf"), translate,
                             XliffOptions(**options))
    return result.data.decode("utf-8"), result.report


def units(text: str, ns: str = NS_1) -> dict:
    """`{id: element}` of the trans-units (1.2) or units (2.x), read by ElementTree."""
    root = ET.fromstring(text.encode("utf-8"))
    return {unit.get("id"): unit for unit in root.iter(f"{ns}trans-unit" if ns == NS_1
                                                      else f"{ns}unit")}


def inner(element) -> str:
    """An element's content as ElementTree writes it, namespace prefixes aside."""
    text = ET.tostring(element, encoding="unicode")
    text = re.sub(r' xmlns:ns0="[^"]*"', "", text).replace("ns0:", "")
    return text[text.index(">") + 1:text.rindex("<")]


# ---------------------------------------------------------------------------------------------
# XLIFF 1.2


def test_1_2_units_are_filled_and_marked_for_review():
    out, report = translated(XLIFF_1)
    found = units(out)

    target = found["title"].find(f"{NS_1}target")
    assert target.get("state") == "needs-review-translation"
    assert target.get("state-qualifier") == "mt-suggestion"
    assert ET.fromstring(out).find(f"{NS_1}file").get("target-language") == "fr"
    assert report.segments == 8 and report.written == 4 and report.kept == 1
    assert report.skipped == 2 and report.wordless == 1


def test_only_the_targets_and_marks_change_byte_for_byte():
    out, _ = translated(XLIFF_1)
    marked = '<target state="needs-review-translation" state-qualifier="mt-suggestion">'

    assert diff(XLIFF_1, out) == [
        '-  <file original="shop.html" source-language="en" datatype="html">',
        '+  <file original="shop.html" source-language="en" datatype="html" '
        'target-language="fr">',
        f'+        {marked}THE <g id="1">GREEN</g> WATERING CAN IS <x id="2"/>CHEAP.</target>',
        f'+        {marked}PRESS <bpt id="1">&lt;b&gt;</bpt>BUY<ept id="1">&lt;/b&gt;</ept> '
        'NOW.</target>',
        '-        <source>You have %d seeds <ph id="1">&lt;br/&gt;</ph> left.</source><target/>',
        '+        <source>You have %d seeds <ph id="1">&lt;br/&gt;</ph> left.</source>'
        f'{marked}YOU HAVE %d SEEDS <ph id="1">&lt;br/&gt;</ph> LEFT.</target>',
        f'+        {marked}<mrk mtype="seg" mid="1">WATER THE PLANTS.</mrk>',
        '+          <mrk mtype="seg" mid="2">THEN REST.</mrk></target>']


def test_a_file_with_nothing_to_do_comes_back_identical():
    done = XLIFF_1.replace('datatype="html">', 'datatype="html" target-language="fr-FR">')
    done = done.replace("<target/>", "<target>Il vous reste %d graines.</target>")
    for unit in ("title", "button", "help"):
        done = done.replace(f'<trans-unit id="{unit}">',
                            f'<trans-unit id="{unit}"><target>Fait.</target>')

    result = translate_xliff(read_xliff(done.encode(), "done.xlf"), shouting)

    assert result.data == done.encode()
    assert result.report.written == 0 and result.report.kept == 5


def test_inline_elements_come_back_once_and_native_code_is_not_read():
    recorder = Recorder()
    found = units(translated(XLIFF_1, recorder)[0])

    assert inner(found["button"].find(f"{NS_1}target")) == (
        'PRESS <bpt id="1">&lt;b&gt;</bpt>BUY<ept id="1">&lt;/b&gt;</ept> NOW.')
    assert inner(found["count"].find(f"{NS_1}target")) == (
        'YOU HAVE %d SEEDS <ph id="1">&lt;br/&gt;</ph> LEFT.')
    assert not any("b>" in s or "br" in s or "%d" in s for s in recorder.read)
    assert "You have seeds left." in recorder.read


def test_placeholders_can_be_read_by_the_model():
    recorder = Recorder()
    translated(XLIFF_1, recorder, placeholders=False)

    assert "You have %d seeds left." in recorder.read


def test_alt_trans_and_seg_source_are_not_units():
    found = units(translated(XLIFF_1)[0])

    button = found["button"]
    assert [t.text for t in button.iter(f"{NS_1}target")][-1] == "Appuyez sur Acheter."
    assert len(button.findall(f"{NS_1}target")) == 1
    mids = [m.get("mid") for m in found["help"].find(f"{NS_1}target")]
    assert mids == ["1", "2"]  # the target keeps seg-source's segments


def test_units_not_to_translate_and_wordless_sources_get_no_target():
    found = units(translated(XLIFF_1)[0])

    for unit in ("brand", "licence", "icon"):
        assert found[unit].find(f"{NS_1}target") is None, unit


def test_an_existing_target_is_kept_unless_overwrite():
    kept = units(translated(XLIFF_1)[0])["basket"]
    assert kept.find(f"{NS_1}target").text == "Votre panier est vide."
    assert kept.get("approved") == "yes"

    out, report = translated(XLIFF_1, overwrite=True)
    basket = units(out)["basket"]
    target = basket.find(f"{NS_1}target")
    assert target.text == "YOUR BASKET IS EMPTY."
    assert target.get("state") == "needs-review-translation"  # was final
    assert basket.get("approved") == "no"  # a machine translation is not approved
    assert report.written == 5 and report.kept == 0


def test_no_review_marks_targets_translated():
    out, _ = translated(XLIFF_1, review=False)
    target = units(out)["title"].find(f"{NS_1}target")

    assert target.get("state") == "translated" and target.get("state-qualifier") == "mt-suggestion"


def test_a_prefixed_namespace_and_crlf_line_ends_are_kept():
    text = ('<?xml version="1.0"?>\r\n<x:xliff version="1.2" '
            'xmlns:x="urn:oasis:names:tc:xliff:document:1.2">\r\n'
            " <x:file original='a' source-language='en' target-language='fr'><x:body>\r\n"
            "   <x:trans-unit id='1'>\r\n"
            "     <x:source>Good morning.</x:source>\r\n"
            "   </x:trans-unit>\r\n"
            " </x:body></x:file>\r\n</x:xliff>\r\n")

    out, _ = translated(text)

    assert out == text.replace(
        "</x:source>\r\n",
        "</x:source>\r\n     <x:target state=\"needs-review-translation\" "
        "state-qualifier=\"mt-suggestion\">GOOD MORNING.</x:target>\r\n")


# ---------------------------------------------------------------------------------------------
# XLIFF 2.x


def test_2_segments_are_filled_and_marked_translated():
    out, report = translated(XLIFF_2)
    root = ET.fromstring(out)
    segments = {s.find(f"{NS_2}source").text: s for s in root.iter(f"{NS_2}segment")}

    welcome = segments["Welcome to our "]
    assert welcome.get("state") == "translated" and welcome.get("subState") is None
    assert inner(welcome.find(f"{NS_2}target")) == 'WELCOME TO OUR <pc id="1">LITTLE</pc> SHOP.'
    assert root.get("trgLang") == "fr" and root.get("srcLang") == "en-GB"
    assert report.segments == 5 and report.written == 3 and report.kept == 1
    assert report.skipped == 1


def test_2_diff_is_the_targets_and_the_states():
    out, _ = translated(XLIFF_2)

    assert diff(XLIFF_2, out) == [
        '-<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.1" srcLang="en-GB">',
        '+<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.1" srcLang="en-GB" '
        'trgLang="fr">',
        '-      <segment id="1" state="initial" subState="shop:draft">',
        '+      <segment id="1" state="translated">',
        '+        <target>WELCOME TO OUR <pc id="1">LITTLE</pc> SHOP.</target>',
        '-      <segment id="2">',
        '+      <segment id="2" state="translated">',
        '+        <target>ASK <ph id="2"/> FOR <mrk id="m1" translate="no">Bob Smith</mrk>.'
        '</target>',
        '-      <segment>',
        '-        <source>Take <sc id="1"/>very good care<ec startRef="1"/> of it.</source>'
        '<target/>',
        '+      <segment state="translated">',
        '+        <source>Take <sc id="1"/>very good care<ec startRef="1"/> of it.</source><target>'
        'TAKE <sc id="1"/>VERY GOOD CARE<ec startRef="1"/> OF IT.</target>']


def test_2_text_not_to_translate_is_not_read():
    recorder = Recorder()
    translated(XLIFF_2, recorder)

    assert "Ask for ." in recorder.read  # <ph/> and the <mrk> not to translate taken out
    assert not any("Bob" in s or "Terms" in s for s in recorder.read)


def test_an_end_code_never_comes_before_its_start_code():
    out, _ = translated(XLIFF_2, backwards)
    target = [s for s in ET.fromstring(out).iter(f"{NS_2}segment")
              if s.find(f"{NS_2}source").text == "Take "][0].find(f"{NS_2}target")

    # The alignment puts <ec/> after CARE and <sc/> before VERY: they swap.
    assert inner(target) == 'IT. OF CARE<sc id="1" /> GOOD <ec startRef="1" />VERY TAKE'


def test_sentences_of_the_whole_file_go_together_sorted_by_length():
    recorder = Recorder()
    twice = XLIFF_1.replace('<trans-unit id="icon"><source><x id="7"/>',
                            '<trans-unit id="again"><source>Then rest.')
    translated(twice, recorder, batch_size=4, overwrite=True)

    assert [len(call) for call in recorder.calls] == [4, 2]  # 6 distinct sentences
    assert recorder.read == sorted(recorder.read, key=lambda s: (len(s), s))
    assert recorder.read[:2] == ["Then rest.", "Press Buy now."]  # "Then rest." read once

    progress = []
    translate_xliff(read_xliff(XLIFF_2.encode(), "a.xlf"), shouting, XliffOptions(batch_size=2),
                    progress=lambda done, total: progress.append((done, total)))
    assert progress == [(2, 3), (3, 3)]


# ---------------------------------------------------------------------------------------------
# Languages, encodings, refusals.


def test_a_file_for_another_language_is_refused_with_its_line():
    german = XLIFF_1.replace('datatype="html">', 'datatype="html" target-language="de">')
    with pytest.raises(XliffFileError, match=r'^shop\.xlf:4: target-language="de"; this model '
                                             r'translates into French'):
        read_xliff(german.encode(), "shop.xlf")
    with pytest.raises(XliffFileError, match=r'^s\.xlf:2: trgLang="de-DE"; .* into French'):
        read_xliff(XLIFF_2.replace('srcLang="en-GB"', 'srcLang="en" trgLang="de-DE"').encode(),
                   "s.xlf")
    with pytest.raises(XliffFileError, match=r'srcLang="es"; this model translates from English'):
        read_xliff(XLIFF_2.replace('srcLang="en-GB"', 'srcLang="es"').encode(), "s.xlf")
    canadian = XLIFF_2.replace('srcLang="en-GB"', 'srcLang="en" trgLang="fr-CA"')
    out, _ = translated(canadian)
    assert 'trgLang="fr-CA"' in out and 'trgLang="fr"' not in out


def test_the_file_keeps_its_encoding_and_its_byte_order_mark():
    latin = XLIFF_1.replace('encoding="UTF-8"', 'encoding="ISO-8859-1"').replace(
        "Prices are in euros.", "Prix en euros, déjà payés.")

    def euro(sentences):
        return [TextLinks("Prix en €") for _ in sentences]

    result = translate_xliff(read_xliff(latin.encode("latin-1"), "l.xlf"), euro)
    assert "déjà payés".encode("latin-1") in result.data
    assert b'<mrk mtype="seg" mid="1">Prix en &#8364;</mrk>' in result.data  # no € in Latin-1

    marked = "\ufeff".encode() + XLIFF_2.encode()
    out = translate_xliff(read_xliff(marked, "m.xlf"), shouting).data
    assert out.startswith("\ufeff".encode() + b"<?xml") and b"WELCOME" in out
    wide = translate_xliff(read_xliff(XLIFF_2.encode("utf-16"), "w.xlf"), shouting).data
    assert wide.decode("utf-16") == out.decode("utf-8-sig")


@pytest.mark.parametrize(("text", "message"), [
    ('<?xml version="1.0"?>\n<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">'
     '\n<file source-language="en"><body>\n<trans-unit id="1"><source>A <g id="1">b</source>\n'
     "</trans-unit></body></file></xliff>",
     r"^bad\.xlf:4: not well-formed XML \(mismatched tag, column 43\): an end tag does not "
     r"match"),
    ('<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file '
     'source-language="en"><body>\n<trans-unit id="1"><source>Caf&eacute;</source>'
     "</trans-unit></body></file></xliff>",
     r"^bad\.xlf:2: not well-formed XML \(undefined entity.*XML knows only &amp;"),
    ("<html><body>Not a translation file.</body></html>",
     r"^bad\.xlf:1: the root element is <html>, not <xliff>"),
    ('<xliff version="1.1" xmlns="urn:oasis:names:tc:xliff:document:1.1"/>',
     r"^bad\.xlf:1: XLIFF in the namespace 'urn:oasis:names:tc:xliff:document:1.1' \(version "
     r"'1.1'\): only XLIFF 1.2"),
    ('<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file '
     'source-language="en"><body>\n\n<trans-unit id="7"><target>Seul.</target></trans-unit>'
     "</body></file></xliff>",
     r"^bad\.xlf:3: the <trans-unit> '7' has no <source>: add it"),
    ("Just some prose.", r"^bad\.xlf:1: not well-formed XML \(syntax error"),
    ("", r"^bad\.xlf:1: not well-formed XML \(no element found"),
    (b"<xliff>\xff\xfe</xliff>", r"^bad\.xlf is not utf-8 text \(byte 7\)"),
])
def test_what_is_not_xliff_is_refused_with_its_line(text, message):
    data = text if isinstance(text, bytes) else text.encode()
    with pytest.raises(XliffFileError, match=message):
        read_xliff(data, "bad.xlf")


def test_a_source_over_a_markup_limit_is_refused_with_its_line():
    deep = '<g id="1">' * (MAX_DEPTH + 1) + "Deep." + "</g>" * (MAX_DEPTH + 1)
    text = XLIFF_1.replace("<source>Your basket is empty.</source>", f"<source>{deep}</source>")

    with pytest.raises(XliffFileError, match=r"^shop\.xlf:16: the source of 'basket' \(its "
                                             r"characters counted from its start\): More than "
                                             rf"{MAX_DEPTH} nested elements"):
        translated(text, overwrite=True)


LAUGHS = '''<?xml version="1.0"?>
<!DOCTYPE xliff [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
]>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file source-language="en">
<body><trans-unit id="1"><source>&lol2;</source></trans-unit></body></file></xliff>
'''


@pytest.mark.parametrize(("text", "message"), [
    (LAUGHS, r"^bomb\.xlf:3: the document type declares the entity 'lol': entities are refused"),
    (LAUGHS.replace('<!ENTITY lol "lol">', '<!ENTITY lol SYSTEM "file:///etc/passwd">'),
     r"^bomb\.xlf:3: the document type declares the entity 'lol'"),
    (LAUGHS.replace('<!ENTITY lol "lol">', '<!ENTITY % lol SYSTEM "http://example.com/x">'),
     r"^bomb\.xlf:3: the document type declares the entity 'lol'"),
    ('<!DOCTYPE xliff SYSTEM "http://example.com/xliff.dtd">\n<xliff version="1.2" '
     'xmlns="urn:oasis:names:tc:xliff:document:1.2"><file source-language="en"><body>\n'
     '<trans-unit id="1"><source>A&nbsp;b</source></trans-unit></body></file></xliff>',
     r"^bomb\.xlf:3: the entity &nbsp; is declared nowhere in the file \(external DTDs are not "
     r"read\)"),
])
def test_entities_are_refused_before_any_is_expanded(text, message):
    with pytest.raises(XliffFileError, match=message):
        read_xliff(text.encode(), "bomb.xlf")


def test_batch_size_is_checked():
    with pytest.raises(ValueError, match="batch_size must be at least 1. Received: 0"):
        XliffOptions(batch_size=0)
