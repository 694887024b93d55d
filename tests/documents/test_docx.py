"""`documents.docx`: Word documents translated in every part, formatting on aligned words."""

import io
import re
import shutil
import struct
import subprocess
import zipfile
import zlib

import docx
import pytest
from docx.opc.constants import RELATIONSHIP_TYPE as RT
from docx.oxml import parse_xml
from docx.oxml.ns import nsdecls
from lxml import etree

from documents import docx as docx_module
from documents.docx import (
    DocxFileError,
    DocxLimitError,
    DocxOptions,
    read_docx,
    translate_docx,
)
from documents.wordml import read_paragraph
from tests.documents.helpers import Recorder, backwards, shouting

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
URL = "https://example.org/garden"
_NOTES = {  # part -> (root element, note element)
    "footnotes": ("footnotes", "footnote"), "endnotes": ("endnotes", "endnote")}


# ---------------------------------------------------------------------------------------------
# The fixture: a small gardening guide with something in every part.


def tiny_png() -> bytes:
    """A 1x1 PNG (python-docx reads its size)."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data)))
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"\x00\x00\x80\x00")) + chunk(b"IEND", b""))


def xml_run(inner: str, properties: str = ""):
    return parse_xml(f'<w:r {nsdecls("w")}>{properties}{inner}</w:r>')


def add_field(paragraph, code: str, result: str) -> None:
    """A complex field (begin, code, separate, result, end) at the end of `paragraph`."""
    for inner in ('<w:fldChar w:fldCharType="begin"/>',
                  f'<w:instrText xml:space="preserve"> {code} </w:instrText>',
                  '<w:fldChar w:fldCharType="separate"/>', f"<w:t>{result}</w:t>",
                  '<w:fldChar w:fldCharType="end"/>'):
        paragraph._p.append(xml_run(inner))


def build_docx() -> bytes:
    d = docx.Document()
    p = d.add_paragraph("The ")
    p.add_run("green").bold = True
    p.add_run(" watering can is ")
    p.add_run("very cheap").italic = True
    p.add_run(".")

    p = d.add_paragraph("Read ")
    r_id = p.part.relate_to(URL, RT.HYPERLINK, is_external=True)
    p._p.append(parse_xml(
        f'<w:hyperlink {nsdecls("w", "r")} r:id="{r_id}"><w:r><w:rPr><w:u w:val="single"/>'
        '</w:rPr><w:t>the garden guide</w:t></w:r></w:hyperlink>'))
    p.add_run(" before planting.")

    p = d.add_paragraph("Sow the seeds")
    p._p.append(xml_run('<w:footnoteReference w:id="1"/>',
                        '<w:rPr><w:vertAlign w:val="superscript"/></w:rPr>'))
    p._p.append(xml_run('<w:endnoteReference w:id="1"/>',
                        '<w:rPr><w:vertAlign w:val="superscript"/></w:rPr>'))
    p.add_run(" in spring.")

    p = d.add_paragraph("Name:")
    p.add_run().add_tab()
    p.add_run("Rose garden.")
    p.add_run().add_break()
    p.add_run("Water it daily.")

    p = d.add_paragraph("Keep the ")
    p._p.append(parse_xml(f'<w:bookmarkStart {nsdecls("w")} w:id="7" w:name="prices"/>'))
    p.add_run("price list")
    p._p.append(parse_xml(f'<w:bookmarkEnd {nsdecls("w")} w:id="7"/>'))
    p.add_run(" close.")

    p = d.add_paragraph("Type ")
    p.add_run("pip install seeds").font.name = "Courier New"
    p.add_run(" to begin.")

    d.add_paragraph("Press %s to water the {name} bed.")

    p = d.add_paragraph()
    p.add_run().add_picture(io.BytesIO(tiny_png()))

    p = d.add_paragraph("The shed has a box.")
    p._p.append(parse_xml(
        f'<w:r {nsdecls("w")} xmlns:v="urn:schemas-microsoft-com:vml"><w:pict>'
        '<v:shape id="box" style="width:200pt;height:40pt">'
        '<v:textbox><w:txbxContent><w:p><w:r><w:t>Seeds inside the box.</w:t></w:r></w:p>'
        '</w:txbxContent></v:textbox></v:shape></w:pict></w:r>'))

    comment_run = d.add_paragraph("Tomatoes need sun.").runs[0]
    d.add_comment(comment_run, text="Check the variety.", author="Ann", initials="A")

    table = d.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "Plant early."
    inner = table.cell(0, 1).add_table(rows=1, cols=1)
    inner.cell(0, 0).text = "Nested cells grow too."

    section = d.sections[0]
    section.different_first_page_header_footer = True
    d.settings.odd_and_even_pages_header_footer = True
    section.header.paragraphs[0].text = "Default header words."
    section.first_page_header.paragraphs[0].text = "First page header."
    section.even_page_header.paragraphs[0].text = "Even page header."
    footer = section.footer.paragraphs[0]
    footer.add_run("Page ")
    add_field(footer, "PAGE", "1")
    footer.add_run(" of the guide.")

    second = d.add_section()
    second.header.is_linked_to_previous = False
    second.header.paragraphs[0].text = "Second section header."
    second.footer.is_linked_to_previous = False  # a footer without words
    d.add_paragraph("The end.")

    buffer = io.BytesIO()
    d.save(buffer)
    return with_notes(buffer.getvalue())


def notes_part(kind: str, text: str) -> bytes:
    root, note = _NOTES[kind]
    return (f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
            f'<w:{root} {nsdecls("w")}>'
            f'<w:{note} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p>'
            f'</w:{note}>'
            f'<w:{note} w:id="1"><w:p><w:r><w:rPr><w:vertAlign w:val="superscript"/></w:rPr>'
            f'<w:{note}Ref/></w:r><w:r><w:t xml:space="preserve"> {text}</w:t></w:r></w:p>'
            f'</w:{note}></w:{root}>').encode()


def with_notes(data: bytes) -> bytes:
    """The document with footnotes and endnotes parts (python-docx writes none)."""
    types = ('<Override PartName="/word/{0}.xml" ContentType="application/vnd.openxmlformats-'
             'officedocument.wordprocessingml.{0}+xml"/>')
    rels = ('<Relationship Id="rIdN{0}" Type="http://schemas.openxmlformats.org/'
            'officeDocument/2006/relationships/{0}" Target="{0}.xml"/>')

    def edit(name, content):
        if name == "[Content_Types].xml":
            added = "".join(types.format(kind) for kind in _NOTES)
            return content.replace(b"</Types>", added.encode() + b"</Types>")
        if name == "word/_rels/document.xml.rels":
            added = "".join(rels.format(kind) for kind in _NOTES)
            return content.replace(b"</Relationships>", added.encode() + b"</Relationships>")
        return content

    return rezipped(data, edit, {"word/footnotes.xml": notes_part("footnotes", "Seeds keep "
                                                                  "for a year."),
                                 "word/endnotes.xml": notes_part("endnotes", "See the "
                                                                 "catalogue.")})


def rezipped(data: bytes, edit=lambda name, content: content, added=None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as old, zipfile.ZipFile(out, "w") as new:
        for info in old.infolist():
            new.writestr(info, edit(info.filename, old.read(info)))
        for name, content in (added or {}).items():
            new.writestr(name, content, zipfile.ZIP_DEFLATED)
    return out.getvalue()


@pytest.fixture(scope="module")
def source() -> bytes:
    return build_docx()


@pytest.fixture(scope="module")
def shouted(source) -> bytes:
    return translate_docx(read_docx(source, "guide.docx"), shouting).data


@pytest.fixture(scope="module")
def reversed_docx(source) -> bytes:
    return translate_docx(read_docx(source, "guide.docx"), backwards).data


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def part(data: bytes, name: str):
    return etree.fromstring(members(data)[name])


def texts(root) -> list[str]:
    """Each paragraph's own text (its `w:t`, those of a text box inside it aside)."""
    return ["".join(t.text or "" for t in p.iter(f"{W}t") if next(t.iterancestors(f"{W}p")) is p)
            for p in root.iter(f"{W}p")]


def part_named(data: bytes, kind: str, words: str) -> str:
    """The part whose text holds `words` (headers and footers are numbered by python-docx)."""
    for name, content in members(data).items():
        if name.startswith(f"word/{kind}") and words in "\n".join(texts(etree.fromstring(
                content))):
            return name
    raise AssertionError(f"no {kind} part with {words!r}")


# ---------------------------------------------------------------------------------------------
# Every part.


def test_every_part_with_text_is_read(source):
    document = read_docx(source, "guide.docx")
    kinds = sorted(re.sub(r"^word/|\d*\.xml$", "", name) for name in document.parts)
    # header: default, first page, even page, second section; footer: first section's and
    # the second's (without words); the comments part python-docx writes.
    assert kinds == ["comments", "document", "endnotes", "footer", "footer", "footnotes",
                     "header", "header", "header", "header"]


@pytest.mark.parametrize(("kind", "english", "french"), [
    ("document", "The green watering can is very cheap.", "THE GREEN WATERING CAN IS VERY CHEAP."),
    ("document", "Plant early.", "PLANT EARLY."),  # a table
    ("document", "Nested cells grow too.", "NESTED CELLS GROW TOO."),
    ("document", "Seeds inside the box.", "SEEDS INSIDE THE BOX."),  # a text box
    ("header", "Default header words.", "DEFAULT HEADER WORDS."),
    ("header", "First page header.", "FIRST PAGE HEADER."),
    ("header", "Even page header.", "EVEN PAGE HEADER."),
    ("header", "Second section header.", "SECOND SECTION HEADER."),
    ("footer", "of the guide.", "PAGE 1 OF THE GUIDE."),
    ("footnotes", "Seeds keep for a year.", " SEEDS KEEP FOR A YEAR."),
    ("endnotes", "See the catalogue.", " SEE THE CATALOGUE."),
    ("comments", "Check the variety.", "CHECK THE VARIETY."),
])
def test_every_part_is_translated(source, shouted, kind, english, french):
    name = part_named(source, kind, english)
    assert french in texts(part(shouted, name))
    assert english not in " ".join(texts(part(shouted, name)))


def test_members_not_translated_are_byte_identical_and_in_order(source, shouted):
    before, after = members(source), members(shouted)
    assert list(before) == list(after)
    translated = set(read_docx(source).parts)
    untouched = [name for name in before if name not in translated]
    assert "word/styles.xml" in untouched and "word/_rels/document.xml.rels" in untouched
    assert any(name.startswith("word/media/") for name in untouched)
    for name in untouched:
        assert after[name] == before[name], name
    with zipfile.ZipFile(io.BytesIO(source)) as a, zipfile.ZipFile(io.BytesIO(shouted)) as b:
        assert [(i.compress_type, i.date_time) for i in a.infolist()] == [
            (i.compress_type, i.date_time) for i in b.infolist()]


def test_a_part_written_keeps_its_xml_declaration(shouted):
    assert members(shouted)["word/footnotes.xml"].startswith(
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:footnotes ')


def test_a_part_without_words_is_copied_as_it_is(source, shouted):
    document = read_docx(source)
    silent = [name for name in document.parts if not any(
        text.strip() for text in texts(part(source, name)))]
    assert silent  # the second section's footer
    for name in silent:
        assert members(shouted)[name] == members(source)[name]


def test_the_result_opens_in_python_docx(shouted):
    d = docx.Document(io.BytesIO(shouted))
    assert d.paragraphs[0].text == "THE GREEN WATERING CAN IS VERY CHEAP."
    assert d.tables[0].cell(0, 0).text == "PLANT EARLY."
    assert d.sections[0].first_page_header.paragraphs[0].text == "FIRST PAGE HEADER."
    assert d.sections[0].even_page_header.paragraphs[0].text == "EVEN PAGE HEADER."
    assert d.sections[1].header.paragraphs[0].text == "SECOND SECTION HEADER."
    assert [c.text for c in d.comments] == ["CHECK THE VARIETY."]


@pytest.mark.skipif(shutil.which("soffice") is None,
                    reason="LibreOffice (soffice) is not installed: the converter check needs it")
def test_libreoffice_converts_the_result(shouted, tmp_path):
    path = tmp_path / "guide.docx"
    path.write_bytes(shouted)
    subprocess.run(["soffice", "--headless", "--convert-to", "txt:Text", "--outdir",
                    str(tmp_path), str(path)], check=True, capture_output=True, timeout=120)
    text = (tmp_path / "guide.txt").read_text(encoding="utf-8-sig")
    assert "THE GREEN WATERING CAN IS VERY CHEAP." in text
    assert "NESTED CELLS GROW TOO." in text


# ---------------------------------------------------------------------------------------------
# Runs: formatting, links, fields, tabs, references and marks on the aligned words.


def test_a_paragraph_reads_as_markup(source):
    body = part(source, "word/document.xml")
    first, link = list(body.iter(f"{W}p"))[:2]
    assert read_paragraph(first).markup == (
        "The <r0>green</r0> watering can is <r1>very cheap</r1>.")
    assert read_paragraph(link).markup == "Read <c0><r0>the garden guide</r0></c0> before planting."


def test_bold_and_italic_land_on_the_aligned_words(reversed_docx):
    runs = docx.Document(io.BytesIO(reversed_docx)).paragraphs[0].runs
    assert "".join(run.text for run in runs) == "CHEAP. VERY IS CAN WATERING GREEN THE"
    assert [run.text for run in runs if run.bold] == ["GREEN"]
    assert [run.text for run in runs if run.italic] == ["CHEAP. VERY"]


def test_a_hyperlink_keeps_its_target_around_the_aligned_words(source, reversed_docx):
    body = part(reversed_docx, "word/document.xml")
    (link,) = body.iter(f"{W}hyperlink")
    assert "".join(link.itertext()) == "GUIDE GARDEN THE"
    assert link.find(f"{W}r/{W}rPr/{W}u") is not None  # the link's own formatting
    (old,) = part(source, "word/document.xml").iter(f"{W}hyperlink")
    assert link.get(R_ID) == old.get(R_ID)
    assert texts(link.getparent())[0] == "PLANTING. BEFORE GUIDE GARDEN THE READ"


def test_note_references_follow_their_word(reversed_docx):
    body = part(reversed_docx, "word/document.xml")
    paragraph = next(p for p in body.iter(f"{W}p") if "SOW" in "".join(p.itertext()))
    items = [child.tag.rpartition("}")[2] if child.tag != f"{W}t" else child.text
             for run in paragraph.iter(f"{W}r") for child in run if child.tag != f"{W}rPr"]
    assert items == ["SPRING. IN SEEDS", "footnoteReference", "endnoteReference", " THE SOW"]


def test_tabs_and_breaks_are_kept_and_part_words(shouted):
    body = part(shouted, "word/document.xml")
    paragraph = next(p for p in body.iter(f"{W}p") if "NAME:" in "".join(p.itertext()))
    items = [child.tag.rpartition("}")[2] if child.tag != f"{W}t" else child.text
             for run in paragraph.iter(f"{W}r") for child in run if child.tag != f"{W}rPr"]
    assert items == ["NAME:", "tab", "ROSE GARDEN.", "br", "WATER IT DAILY."]


def test_a_field_keeps_its_code_and_its_result_in_order(source, shouted):
    name = part_named(source, "footer", "of the guide.")
    items = []
    for run in part(shouted, name).iter(f"{W}r"):
        for child in run:
            tag = child.tag.rpartition("}")[2]
            if tag == "fldChar":
                items.append(child.get(f"{W}fldCharType"))
            elif tag in ("instrText", "t"):
                items.append(child.text)
    assert items == ["PAGE ", "begin", " PAGE ", "separate", "1", "end", " OF THE GUIDE."]


def test_a_bookmark_starts_before_it_ends(reversed_docx):
    body = part(reversed_docx, "word/document.xml")
    (start,) = body.iter(f"{W}bookmarkStart")
    (end,) = body.iter(f"{W}bookmarkEnd")
    paragraph = start.getparent()
    assert end.getparent() is paragraph
    assert paragraph.index(start) < paragraph.index(end)
    between = "".join(t.text for child in paragraph[paragraph.index(start):paragraph.index(end)]
                      for t in child.iter(f"{W}t"))
    assert between == "LIST PRICE"


def test_a_comment_keeps_its_range_and_reference(reversed_docx):
    body = part(reversed_docx, "word/document.xml")
    paragraph = next(body.iter(f"{W}commentRangeStart")).getparent()
    tags = [child.tag.rpartition("}")[2] for child in paragraph if child.tag != f"{W}pPr"]
    assert tags[0] == "commentRangeStart" and "commentRangeEnd" in tags
    assert next(paragraph.iter(f"{W}commentReference")) is not None
    assert "".join(paragraph.itertext()) == "SUN. NEED TOMATOES"


def test_code_runs_are_kept_and_not_read(source):
    recorder = Recorder()
    out = translate_docx(read_docx(source), recorder).data
    assert "Type to begin." in recorder.read
    assert not any("pip" in sentence for sentence in recorder.read)
    assert "TYPE pip install seeds TO BEGIN." in texts(part(out, "word/document.xml"))


def test_a_paragraph_without_words_is_left_as_it_was(source, shouted):
    def picture(data):
        body = part(data, "word/document.xml")
        return etree.tostring(next(body.iter(f"{W}drawing")).getparent().getparent())
    assert picture(shouted) == picture(source)


def test_placeholders_come_back_unless_switched_off(source, shouted):
    assert "PRESS %s TO WATER THE {name} BED." in texts(part(shouted, "word/document.xml"))
    recorder = Recorder()
    out = translate_docx(read_docx(source), recorder, DocxOptions(placeholders=False)).data
    assert "Press %s to water the {name} bed." in recorder.read
    assert "PRESS %S TO WATER THE {NAME} BED." in texts(part(out, "word/document.xml"))


def test_runs_word_split_alike_are_one_text_and_proofing_marks_go():
    d = docx.Document()
    lang = '<w:rPr><w:lang w:val="en-GB"/></w:rPr>'
    d.element.body.insert(0, parse_xml(
        f'<w:p {nsdecls("w")}><w:r w:rsidR="00A1">{lang}<w:t>Wat</w:t></w:r>'
        f'<w:proofErr w:type="spellStart"/><w:r w:rsidR="00B2">{lang}<w:lastRenderedPageBreak/>'
        f'<w:t xml:space="preserve">er the lawn </w:t></w:r><w:proofErr w:type="spellEnd"/>'
        f'<w:r>{lang}<w:t>today.</w:t></w:r></w:p>'))
    (paragraph,) = [p for p in d.element.body.iter(f"{W}p") if "Wat" in "".join(p.itertext())]
    assert read_paragraph(paragraph).markup == "Water the lawn today."
    buffer = io.BytesIO()
    d.save(buffer)
    out = part(translate_docx(read_docx(buffer.getvalue()), shouting).data, "word/document.xml")
    first = next(out.iter(f"{W}p"))
    assert [etree.QName(child).localname for child in first] == ["r"]
    assert first.find(f"{W}r/{W}rPr/{W}lang").get(f"{W}val") == "en-GB"
    assert texts(first) == ["WATER THE LAWN TODAY."]


def test_escapes_and_non_ascii_text_come_back_as_text():
    d = docx.Document()
    d.add_paragraph("Don’t mix « salt » & <pepper> in the café.")
    buffer = io.BytesIO()
    d.save(buffer)
    out = translate_docx(read_docx(buffer.getvalue()), shouting).data
    assert docx.Document(io.BytesIO(out)).paragraphs[0].text == (
        "DON’T MIX « SALT » & <PEPPER> IN THE CAFÉ.")


def test_a_document_without_words_comes_back_with_every_member_identical():
    d = docx.Document()
    d.add_paragraph("")
    d.add_paragraph("   ")
    buffer = io.BytesIO()
    d.save(buffer)
    recorder = Recorder()
    translation = translate_docx(read_docx(buffer.getvalue()), recorder)
    assert recorder.calls == []
    assert (translation.report.written, translation.report.paragraphs) == (0, 0)
    assert members(translation.data) == members(buffer.getvalue())


def test_sentences_of_the_whole_document_go_together_sorted_by_length(source):
    recorder, seen = Recorder(), []
    data = rezipped(source, lambda name, content: content.replace(
        b"Second section header.", b"Plant early.") if "header" in name else content)
    translate_docx(read_docx(data), recorder, DocxOptions(batch_size=3),
                   progress=lambda done, total: seen.append((done, total)))
    assert all(len(call) <= 3 for call in recorder.calls)
    assert recorder.read == sorted(set(recorder.read), key=lambda s: (len(s), s))
    assert recorder.read.count("Plant early.") == 1  # in the body's table and a header
    assert {"Seeds inside the box.", "Check the variety.", "Seeds keep for a year."} <= set(
        recorder.read)
    assert seen[-1] == (len(recorder.read), len(recorder.read))


def test_the_report_counts_parts_paragraphs_and_sentences(source):
    report = translate_docx(read_docx(source), shouting).report
    assert (report.parts, report.written) == (10, 9)
    # 13 in the body (the picture's has no word), 4 headers, a footer, 2 notes, a comment;
    # `Name: Rose garden. Water it daily.` is two sentences.
    assert report.paragraphs == 21
    assert report.sentences == 22


def structures_docx() -> bytes:
    """A table of contents over three paragraphs, a content control, a simple field and a
    DrawingML text box with its VML fallback (the XML Word writes, trimmed)."""
    d = docx.Document()
    ns = (f'{nsdecls("w")} xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/'
          '2006" xmlns:v="urn:schemas-microsoft-com:vml"')

    def run(inner):
        return f"<w:r>{inner}</w:r>"

    def field_char(kind):
        return run(f'<w:fldChar w:fldCharType="{kind}"/>')

    def instruction(code):
        return run(f'<w:instrText xml:space="preserve"> {code} </w:instrText>')

    paragraphs = [
        field_char("begin") + instruction('TOC \\o "1-3" \\h') + field_char("separate")
        + '<w:hyperlink w:anchor="_Toc1">' + run("<w:t>Planting the beds</w:t>")
        + run("<w:tab/>") + field_char("begin") + instruction("PAGEREF _Toc1 \\h")
        + field_char("separate") + run("<w:t>2</w:t>") + field_char("end") + "</w:hyperlink>",
        run("<w:t>Watering the beds</w:t>") + run("<w:tab/>") + run("<w:t>3</w:t>"),
        field_char("end"),
        run('<w:t xml:space="preserve">Signed by </w:t>')
        + '<w:sdt><w:sdtPr><w:alias w:val="Owner"/></w:sdtPr><w:sdtContent>'
        + run("<w:t>the garden owner</w:t>") + "</w:sdtContent></w:sdt>"
        + run("<w:t>.</w:t>"),
        run('<w:t xml:space="preserve">Pages in all: </w:t>')
        + '<w:fldSimple w:instr=" NUMPAGES ">' + run("<w:t>4</w:t>") + "</w:fldSimple>",
        run('<mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><w:txbxContent>'
            + '<w:p><w:r><w:t>Words in a box.</w:t></w:r></w:p></w:txbxContent></w:drawing>'
            + '</mc:Choice><mc:Fallback><w:pict><v:shape><v:textbox><w:txbxContent><w:p>'
            + '<w:r><w:t>Words in a box.</w:t></w:r></w:p></w:txbxContent></v:textbox>'
            + '</v:shape></w:pict></mc:Fallback></mc:AlternateContent>'),
    ]
    body = d.element.body
    for inner in paragraphs:
        body.insert(len(body) - 1, parse_xml(f"<w:p {ns}>{inner}</w:p>"))
    buffer = io.BytesIO()
    d.save(buffer)
    return buffer.getvalue()


def items(element) -> list[str]:
    """What a reader meets in `element`, in order: texts, field characters, tabs and the
    elements around runs."""
    out = []
    for e in element.iter():
        tag = e.tag.rpartition("}")[2] if isinstance(e.tag, str) else ""
        if tag in ("t", "instrText"):
            out.append(e.text)
        elif tag == "fldChar":
            out.append(e.get(f"{W}fldCharType"))
        elif tag in ("tab", "hyperlink", "sdt", "sdtPr", "sdtContent", "fldSimple"):
            out.append(tag)
    return out


@pytest.fixture(scope="module")
def structures() -> tuple[bytes, bytes, Recorder]:
    source, recorder = structures_docx(), Recorder()
    return source, translate_docx(read_docx(source), recorder).data, recorder


def test_a_table_of_contents_over_paragraphs_keeps_its_code_first(structures):
    _, out, _ = structures
    first, second, third = list(part(out, "word/document.xml").iter(f"{W}p"))[:3]
    assert items(first) == [
        "begin", ' TOC \\o "1-3" \\h ', "separate", "hyperlink", "PLANTING THE BEDS", "tab",
        "begin", " PAGEREF _Toc1 \\h ", "separate", "2", "end"]
    assert items(second) == ["WATERING THE BEDS", "tab", "3"]
    assert items(third) == ["end"]


def test_a_content_control_keeps_its_properties_around_its_words(structures):
    _, out, _ = structures
    body = part(out, "word/document.xml")
    (sdt,) = body.iter(f"{W}sdt")
    assert items(sdt.getparent()) == ["SIGNED BY ", "sdt", "sdtPr", "sdtContent",
                                      "THE GARDEN OWNER", "."]
    assert sdt.find(f"{W}sdtPr/{W}alias").get(f"{W}val") == "Owner"


def test_a_simple_field_keeps_its_instruction(structures):
    _, out, _ = structures
    (simple,) = part(out, "word/document.xml").iter(f"{W}fldSimple")
    assert simple.get(f"{W}instr") == " NUMPAGES "
    assert items(simple.getparent()) == ["PAGES IN ALL: ", "fldSimple", "4"]


def test_a_text_box_and_its_fallback_are_both_translated_once(structures):
    _, out, recorder = structures
    boxes = list(part(out, "word/document.xml").iter(f"{W}txbxContent"))
    assert [texts(box) for box in boxes] == [["WORDS IN A BOX."], ["WORDS IN A BOX."]]
    assert recorder.read.count("Words in a box.") == 1


# ---------------------------------------------------------------------------------------------
# Bad files.


def plain_zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return out.getvalue()


def with_document(source: bytes, document: bytes) -> bytes:
    return rezipped(source, lambda name, content: document if name == "word/document.xml"
                    else content)


@pytest.mark.parametrize(("make", "message"), [
    (lambda s: b"Just some text.", r"^guide\.docx is not a readable zip \(File is not a zip "
                                   r"file\): is it a \.docx"),
    (lambda s: s[:len(s) // 2], r"^guide\.docx is not a readable zip"),
    (lambda s: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(100),
     r"password-protected Word document or an old binary \.doc"),
    (lambda s: plain_zip({"a.txt": b"hello"}), r"has no \[Content_Types\]\.xml: .* not an "
                                               r"Office Open XML"),
    (lambda s: rezipped(s, lambda n, c: c.replace(b"document.main+xml", b"presentation+xml")
                        if n == "[Content_Types].xml" else c),
     r"has no Word document part .*\(\.xlsx and \.pptx are not read\)"),
    (lambda s: with_document(s, b"<w:document><w:body>"),
     r"^guide\.docx: word/document\.xml is not well-formed XML \(line 1: .*\): the file is "
     r"damaged"),
    (lambda s: with_document(s, b'<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaa">'
                                b'<!ENTITY b "&a;&a;&a;&a;">]><w:document xmlns:w="http://'
                                b'schemas.openxmlformats.org/wordprocessingml/2006/main">&b;'
                                b'</w:document>'),
     r"word/document\.xml declares a document type .* entities are refused"),
    (lambda s: with_document(s, b'<w:document xmlns:w="http://purl.oclc.org/ooxml/'
                                b'wordprocessingml/main"/>'),
     r"Strict Open XML document, which is not read"),
    (lambda s: with_document(s, b'<w:body xmlns:w="http://schemas.openxmlformats.org/'
                                b'wordprocessingml/2006/main"/>'),
     r"word/document\.xml's root element is .*body, not a WordprocessingML <w:document>"),
])
def test_a_bad_file_is_refused_saying_what_is_wrong(source, make, message):
    with pytest.raises(DocxFileError, match=message):
        read_docx(make(source), "guide.docx")


def test_a_zip_bomb_is_refused_as_it_is_read(source, monkeypatch):
    monkeypatch.setattr(docx_module, "MAX_DOCX_BYTES", 4 * 2**20)
    bomb = rezipped(source, added={"word/media/zeros.bin": bytes(8 * 2**20)})
    assert len(bomb) < len(source) + 2**16  # 8 MiB of zeros compress to a few kilobytes
    with pytest.raises(DocxLimitError, match=r"uncompresses to more than MAX_DOCX_BYTES=4194304 "
                                            r"bytes .* a zip bomb"):
        read_docx(bomb, "guide.docx")


def test_a_zip_lying_about_its_sizes_is_refused(source):
    bomb = bytearray(rezipped(source, added={"zeros.bin": bytes(2**20)}))
    central = bomb.rindex(b"PK\x01\x02")  # the last central directory entry
    bomb[central + 24:central + 28] = struct.pack("<I", 10)  # uncompressed size: 10 bytes
    with pytest.raises(DocxFileError, match=r"^guide\.docx is not a readable zip"):
        read_docx(bytes(bomb), "guide.docx")


def test_too_many_members_are_refused(source, monkeypatch):
    monkeypatch.setattr(docx_module, "MAX_DOCX_MEMBERS", 5)
    with pytest.raises(DocxLimitError, match=r"holds \d+ zip members; the limit is "
                                            r"MAX_DOCX_MEMBERS=5"):
        read_docx(source, "guide.docx")


def test_batch_size_is_checked():
    with pytest.raises(ValueError, match="batch_size must be at least 1. Received: 0"):
        DocxOptions(batch_size=0)
