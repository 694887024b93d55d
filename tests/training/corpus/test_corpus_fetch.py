"""`nmt corpus fetch` on archives built here (training/corpus/fetch.py, download.py, sources/).

No test reaches GitHub: the archives are tiny `.tar.gz` files in the layout
codeload.github.com serves (one top directory, the commit in a pax header),
given with `--archive` or served by a local HTTP server.
"""

import gzip
import http.server
import io
import json
import re
import socket
import tarfile
import threading
import urllib.error

import pytest

from nmt.data.corpus import iter_pairs
from nmt_cli.main import main
from training.corpus import download as download_module
from training.corpus.build import build_corpus
from training.corpus.download import DownloadError, download
from training.corpus.fetch import fetch_source, manifest_name
from training.corpus.sources import SOURCES
from training.corpus.sources import laws as laws_module
from training.corpus.sources.laws import normalise_label, units_of
from training.corpus.spec import load_spec

LAWS_COMMIT = "d6853c4af2ae" + "0" * 28
GODOT_COMMIT = SOURCES["ui"].archives[0].ref
DOCTYPE = ('<?xml version="1.0" encoding="UTF-8"?><!DOCTYPE Statute PUBLIC '
           '"-//Justice Canada//DTD Bill Exchange v2.5.0//EN" "BillExchange.dtd">')

ACT_EN = DOCTYPE + """<Statute xml:lang="en" xmlns:lims="http://justice.gc.ca/lims">
<Identification><LongTitle>An Act respecting tests</LongTitle>
<ShortTitle status="official">Test Act</ShortTitle><RunningHead>Tests</RunningHead></Identification>
<Body>
<Heading level="1"><TitleText>Interpretation</TitleText></Heading>
<Section lims:id="1"><MarginalNote>Definitions</MarginalNote><Label>1</Label>
<Text>The following definitions apply in this Act.</Text>
<Definition><Text><DefinedTermEn>board</DefinedTermEn> means the Test Board.
(<DefinedTermFr>office</DefinedTermFr>)</Text></Definition>
<Definition><Text><DefinedTermEn>minister</DefinedTermEn> means the Minister of Tests.
(<DefinedTermFr>ministre</DefinedTermFr>)</Text></Definition>
<HistoricalNote><HistoricalNoteSubItem>2019, c. 29, s. 1</HistoricalNoteSubItem></HistoricalNote>
</Section>
<Heading level="1"><TitleText>Powers</TitleText></Heading>
<Section><MarginalNote>Powers of the Minister</MarginalNote><Label>2</Label>
<Subsection><Label>(1)</Label><Text>The Minister may<?Pub Caret1?> make&nbsp;rules respecting</Text>
<Paragraph><Label>(a)</Label><Text>tests; and</Text></Paragraph>
<Paragraph><Label>(b)</Label>
<Text>results<FootnoteRef idref="f1">1</FootnoteRef>.</Text></Paragraph>
</Subsection>
<Subsection><Label>(2)</Label><Text>This subsection has no French version.</Text></Subsection>
</Section>
</Body></Statute>"""

# The definitions in French alphabetical order (ministre, office), the paragraphs
# labelled "a)", a subsection that the English version lacks.
ACT_FR = DOCTYPE + """<Statute xml:lang="fr" xmlns:lims="http://justice.gc.ca/lims">
<Identification><LongTitle>Loi concernant les essais</LongTitle>
<ShortTitle status="official">Loi sur les essais</ShortTitle>
<RunningHead>Essais</RunningHead></Identification>
<Body>
<Heading level="1"><TitleText>Définitions</TitleText></Heading>
<Section lims:id="1"><MarginalNote>Définitions</MarginalNote><Label>1</Label>
<Text>Les définitions qui suivent s’appliquent à la présente loi.</Text>
<Definition><Text><DefinedTermFr>ministre</DefinedTermFr> Le ministre des Essais.
(<DefinedTermEn>minister</DefinedTermEn>)</Text></Definition>
<Definition><Text><DefinedTermFr>office</DefinedTermFr> L’Office des essais.
(<DefinedTermEn>board</DefinedTermEn>)</Text></Definition>
<HistoricalNote><HistoricalNoteSubItem>2019, ch. 29, art. 1</HistoricalNoteSubItem></HistoricalNote>
</Section>
<Heading level="1"><TitleText>Pouvoirs</TitleText></Heading>
<Section><MarginalNote>Pouvoirs du ministre</MarginalNote><Label>2</Label>
<Subsection><Label>(1)</Label><Text>Le ministre peut prendre des règles concernant :</Text>
<Paragraph><Label>a)</Label><Text>les essais;</Text></Paragraph>
<Paragraph><Label>b)</Label>
<Text>les résultats<FootnoteRef idref="f1">1</FootnoteRef>.</Text></Paragraph>
</Subsection>
<Subsection><Label>(3)</Label><Text>Ce paragraphe n’a pas de version anglaise.</Text></Subsection>
</Section>
</Body></Statute>"""

ACT_PAIRS = [
    ("An Act respecting tests", "Loi concernant les essais"),
    ("Test Act", "Loi sur les essais"),
    ("Interpretation", "Définitions"),
    ("Definitions", "Définitions"),
    ("The following definitions apply in this Act.",
     "Les définitions qui suivent s’appliquent à la présente loi."),
    ("board means the Test Board. (office)", "office L’Office des essais. (board)"),
    ("minister means the Minister of Tests. (ministre)",
     "ministre Le ministre des Essais. (minister)"),
    ("Powers", "Pouvoirs"),
    ("Powers of the Minister", "Pouvoirs du ministre"),
    ("The Minister may make rules respecting", "Le ministre peut prendre des règles concernant :"),
    ("tests; and", "les essais;"),
    ("results.", "les résultats."),
]


def _regulation(language, title, text):
    return (f'<Regulation xml:lang="{language}"><Identification><ShortTitle>{title}</ShortTitle>'
            f"</Identification><Body><Section><Label>1</Label><Text>{text}</Text></Section>"
            "</Body></Regulation>")


LAW_FILES = {
    "README.md": "# laws-lois-xml\n",
    "eng/acts/T-1.xml": ACT_EN,
    "fra/lois/T-1.xml": ACT_FR,
    # A regulation: SOR- in English, DORS- in French; its provision repeats a pair above.
    "eng/regulations/SOR-2000-1.xml": _regulation("en", "Test Regulations", "tests; and"),
    "fra/reglements/DORS-2000-1.xml": _regulation("fr", "Règlement sur les essais",
                                                  "les essais;"),
    "eng/acts/U-2.xml": _regulation("en", "An Act without French", "Nothing."),
    "eng/acts/B-9.xml": _regulation("en", "A very long Act", "word " * 1200),
    "fra/lois/B-9.xml": _regulation("fr", "Une loi très longue", "mot " * 1500),
}

INTRODUCTION_PO = r'''msgid ""
msgstr ""
"Project-Id-Version: Python 3\n"
"Language: fr\n"
"Content-Type: text/plain; charset=UTF-8\n"
"Plural-Forms: nplurals=2; plural=(n > 1);\n"

#: tutorial/introduction.rst:5
msgid "An Informal Introduction to Python"
msgstr "Introduction informelle à Python"

msgid ""
"Comments in Python start with the hash character, ``#``, and extend to the\n"
"end of the   physical line."
msgstr ""
"Les commentaires en Python commencent avec un caractère croisillon, ``#``, "
"et s'étendent jusqu'à la fin de la ligne."

#, fuzzy
msgid "Strings can be indexed."
msgstr "Les chaînes peuvent être indexées."

msgid "Untranslated sentence."
msgstr ""

msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d fichier"
msgstr[1] "%d fichiers"

msgid "%d line"
msgid_plural "%d lines"
msgstr[0] "%d ligne"
msgstr[1] ""

#~ msgid "Old text."
#~ msgstr "Ancien texte."
'''

HEADER = 'msgid ""\nmsgstr ""\n"Language: fr\\n"\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'


def _po(*messages):
    return HEADER + "".join(f'msgid "{en}"\nmsgstr "{fr}"\n\n' for en, fr in messages)


DOCS_FILES = {
    "3.11": {"tutorial/introduction.po": INTRODUCTION_PO,
             ".github/ignored.po": _po(("Hidden", "Caché")), "README.rst": "Traduction\n"},
    "3.12": {"tutorial/introduction.po": _po(("An Informal Introduction to Python",
                                              "Introduction informelle à Python")),
             "library/os.po": _po(("Miscellaneous operating system interfaces",
                                   "Interfaces diverses du système d'exploitation"))},
    "3.13": {"about.po": _po(("About these documents", "À propos de ces documents"))},
}

GODOT_EDITOR_PO = HEADER + r'''msgctxt "Locale"
msgid "Script"
msgstr "Écriture"

msgctxt "Action"
msgid "Open"
msgstr "Ouvrir"

msgid "Open"
msgstr "Ouvrir"

msgid "Mouse motion at position (%s) with velocity (%s)"
msgstr "Mouvement de souris vers la position (%s) avec une vélocité de (%s)"

msgid "%d item selected"
msgid_plural "%d items selected"
msgstr[0] "%d élément sélectionné"
msgstr[1] "%d éléments sélectionnés"
'''

GODOT_FILES = {
    "editor/fr.po": GODOT_EDITOR_PO,
    "editor/de.po": _po(("Open", "Öffnen")),
    "editor/editor.pot": _po(("Open", "")),
    "properties/fr.po": _po(("Physics Ticks per Second", "Ticks physiques par seconde")),
}


def _archive(path, top, files, commit=None):
    """A `.tar.gz` as codeload.github.com serves it: `top/` and the commit in a pax header."""
    headers = {"comment": commit} if commit else {}
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT, pax_headers=headers) as tar:
        directory = tarfile.TarInfo(top)
        directory.type = tarfile.DIRTYPE
        tar.addfile(directory)
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _rows(path):
    return [(english, french, origin) for _, english, french, origin in iter_pairs(path)]


@pytest.fixture
def law_archive(tmp_path, monkeypatch):
    monkeypatch.setattr(laws_module, "MAX_FILE_BYTES", 5000)  # B-9.xml is "4 MiB or more"
    return _archive(tmp_path / "laws.tar.gz", f"laws-lois-xml-{LAWS_COMMIT}", LAW_FILES,
                    LAWS_COMMIT)


@pytest.fixture
def evaluation(tmp_path):
    path = tmp_path / "eval" / "test.en"
    path.parent.mkdir()
    path.write_text("TEST   act\nAbout these documents\n", encoding="utf-8")
    return path


def test_labels_read_alike_in_both_languages():
    assert [normalise_label(label) for label in ("(a)", "a)", "1.", "(1.1)", "a.1)", " 2 ")] == [
        "a", "a", "1", "1.1", "a.1", "2"]


def test_law_units_are_paired_by_label_and_defined_term():
    english, french = units_of(ACT_EN.encode()), units_of(ACT_FR.encode())
    paired = [(text, french[place]) for place, text in english.items() if place in french]
    assert paired == ACT_PAIRS
    assert [text for place, text in english.items() if place not in french] == [
        "This subsection has no French version."]
    assert "/Body[1]/Section[2]/Subsection[1]/Paragraph[a]/Text[1]" in english
    assert "Tests" not in english.values() and not any("2019" in t for t in english.values()), \
        "running heads and history notes are left out"


def test_laws_are_rebuilt_from_the_archive(tmp_path, law_archive, evaluation):
    manifest = fetch_source(SOURCES["laws"], tmp_path / "out", cache_dir=tmp_path / "cache",
                            archives={"": law_archive}, exclude=[evaluation])
    rows = _rows(tmp_path / "out" / "justice-canada-laws.tsv.gz")
    expected = [(en, fr, "eng/acts/T-1.xml") for en, fr in ACT_PAIRS if en != "Test Act"]
    assert rows == expected + [("Test Regulations", "Règlement sur les essais",
                                "eng/regulations/SOR-2000-1.xml")]
    assert manifest["pairing"] == {
        "documents": 2, "files_without_french": 1, "large_files": 1, "max_file_bytes": 5000,
        "units_english_only": 1, "units_french_only": 1, "units_paired": 14, "xml_files": 5}
    assert (manifest["read"], manifest["written"]) == (14, 12)
    assert manifest["dropped"] == {"empty": 0, "duplicate": 1, "evaluation_overlap": 1}
    assert manifest["archives"] == [{
        "label": "", "url": "https://codeload.github.com/justicecanada/laws-lois-xml/tar.gz/"
        "d6853c4af2ae", "ref": "d6853c4af2ae", "commit": LAWS_COMMIT, "file": "laws.tar.gz",
        "bytes": law_archive.stat().st_size, "sha256": manifest["archives"][0]["sha256"],
        "downloaded": False}]
    assert manifest["licence"] == "Open Government Licence – Canada"
    assert manifest["excluded_files"] == ["test.en"] and manifest["excluded_sentences"] == 2
    on_disk = json.loads((tmp_path / "out" / "justice-canada-laws.manifest.json").read_text())
    assert on_disk == manifest
    assert not list((tmp_path / "cache").iterdir()), "the extracted XML is removed"


def test_an_archive_of_another_commit_is_refused(tmp_path, law_archive):
    other = _archive(tmp_path / "other.tar.gz", "laws-lois-xml-x", LAW_FILES, "f" * 40)
    with pytest.raises(ValueError, match=f"holds commit {'f' * 40}, not d6853c4af2ae"):
        fetch_source(SOURCES["laws"], tmp_path / "out", archives={"": other})
    manifest = fetch_source(SOURCES["laws"], tmp_path / "out", archives={"": other},
                            refs={"": "f" * 40}, cache_dir=tmp_path / "cache")
    assert manifest["archives"][0]["commit"] == "f" * 40
    with pytest.raises(ValueError, match="pass --overwrite"):
        fetch_source(SOURCES["laws"], tmp_path / "out", archives={"": law_archive})


def test_documentation_pairs_are_translated_checked_po_messages(tmp_path, evaluation):
    archives = {branch: _archive(tmp_path / f"docs-{branch}.tar.gz", f"python-docs-fr-{branch}",
                                 files) for branch, files in DOCS_FILES.items()}
    manifest = fetch_source(SOURCES["docs"], tmp_path / "out", archives=archives,
                            exclude=[evaluation], cache_dir=tmp_path / "cache")
    assert _rows(tmp_path / "out" / "python-docs.tsv.gz") == [
        ("An Informal Introduction to Python", "Introduction informelle à Python",
         "3.11/tutorial/introduction.po"),
        ("Comments in Python start with the hash character, ``#``, and extend to the end of "
         "the physical line.", "Les commentaires en Python commencent avec un caractère "
         "croisillon, ``#``, et s'étendent jusqu'à la fin de la ligne.",
         "3.11/tutorial/introduction.po"),
        ("%d file", "%d fichier", "3.11/tutorial/introduction.po"),
        ("%d files", "%d fichiers", "3.11/tutorial/introduction.po"),
        ("%d line", "%d ligne", "3.11/tutorial/introduction.po"),
        ("Miscellaneous operating system interfaces",
         "Interfaces diverses du système d'exploitation", "3.12/library/os.po"),
    ]
    assert manifest["pairing"] == {"fuzzy": 1, "messages": 10, "obsolete": 1, "po_files": 4,
                                   "untranslated": 1}
    assert manifest["dropped"] == {"empty": 0, "duplicate": 1, "evaluation_overlap": 1}
    assert [a["label"] for a in manifest["archives"]] == ["3.11", "3.12", "3.13"]
    assert manifest["archives"][0]["commit"] is None  # built here, not by git archive


def test_godot_pairs_come_from_the_two_french_files(tmp_path):
    archive = _archive(tmp_path / "godot.tar.gz", f"godot-editor-l10n-{GODOT_COMMIT}",
                       GODOT_FILES, GODOT_COMMIT)
    fetch_source(SOURCES["ui"], tmp_path / "out", archives={"": archive})
    assert _rows(tmp_path / "out" / "godot-editor.tsv.gz") == [
        ("Script", "Écriture", "editor.po"),
        ("Open", "Ouvrir", "editor.po"),
        ("Mouse motion at position (%s) with velocity (%s)",
         "Mouvement de souris vers la position (%s) avec une vélocité de (%s)", "editor.po"),
        ("%d item selected", "%d élément sélectionné", "editor.po"),
        ("%d items selected", "%d éléments sélectionnés", "editor.po"),
        ("Physics Ticks per Second", "Ticks physiques par seconde", "properties.po"),
    ]
    wrong = _archive(tmp_path / "wrong.tar.gz", "x", {"editor/fr.po": GODOT_EDITOR_PO})
    with pytest.raises(ValueError, match="lacks some of"):
        fetch_source(SOURCES["ui"], tmp_path / "wrong", archives={"": wrong})
    assert not (tmp_path / "wrong" / "godot-editor.tsv.gz").exists()
    assert not list((tmp_path / "wrong").glob("*.part")), "no partial file is left"


def test_the_same_pairs_give_the_same_bytes(tmp_path):
    archive = _archive(tmp_path / "godot.tar.gz", "godot", GODOT_FILES)
    first = fetch_source(SOURCES["ui"], tmp_path / "out", archives={"": archive})
    second = fetch_source(SOURCES["ui"], tmp_path / "out", archives={"": archive},
                          overwrite=True)
    assert first["sha256"] == second["sha256"]
    with gzip.open(tmp_path / "out" / "godot-editor.tsv.gz", "rt", encoding="utf-8") as f:
        assert f.readline() == "Script\tÉcriture\teditor.po\n"


def test_nmt_corpus_builds_on_the_fetched_files(tmp_path, law_archive):
    """The fetched files are what the recipe reads: `nmt corpus` takes them as they are."""
    data = tmp_path / "more-enfr"
    docs = {branch: _archive(tmp_path / f"d{branch}.tar.gz", "d", files)
            for branch, files in DOCS_FILES.items()}
    ui = _archive(tmp_path / "ui.tar.gz", "g", GODOT_FILES)
    for name, archives in (("laws", {"": law_archive}), ("docs", docs), ("ui", {"": ui})):
        fetch_source(SOURCES[name], data, archives=archives, cache_dir=tmp_path / "cache")
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("name: fetched\nfilters: {near_duplicates: false, copies: false}\n"
                      "sources:\n" + "".join(
                          f"  - {{name: {name}, path: more-enfr/{SOURCES[name].output}}}\n"
                          for name in SOURCES), encoding="utf-8")
    manifest = build_corpus(load_spec(recipe), tmp_path / "corpus")
    assert {s["name"]: s["read"] for s in manifest["sources"]} == {
        "laws": 13, "docs": 7, "ui": 6}


def test_cli_fetch_with_an_archive(tmp_path, capsys, evaluation):
    archive = _archive(tmp_path / "godot.tar.gz", "godot", GODOT_FILES, GODOT_COMMIT)
    out = tmp_path / "out"
    assert main(["corpus", "fetch", "--source", "ui", "--archive", str(archive),
                 "--out", str(out), "--exclude", str(evaluation)]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"ui\s+7\s+0\s+1\s+0\s+6\s+.*godot-editor\.tsv\.gz", printed)
    manifest = json.loads((out / manifest_name("godot-editor.tsv.gz")).read_text())
    assert manifest["archives"][0]["commit"] == GODOT_COMMIT
    assert main(["corpus", "fetch", "--archive", str(archive), "--out", str(out)]) == 2
    assert "add --source" in capsys.readouterr().err
    assert main(["corpus", "fetch", "--source", "docs", "--archive", f"3.14={archive}",
                 "--out", str(out)]) == 2
    assert "'3.14' is not one of them" in capsys.readouterr().err


def test_cli_fetch_offline_says_how_to_go_on(tmp_path, capsys, monkeypatch):
    calls = []

    def no_network(request, timeout):
        calls.append(request.full_url)
        raise urllib.error.URLError(socket.gaierror(-3, "Temporary failure in name resolution"))

    monkeypatch.setattr(download_module.urllib.request, "urlopen", no_network)
    assert main(["corpus", "fetch", "--source", "ui", "--out", str(tmp_path / "out"),
                 "--cache", str(tmp_path / "cache")]) == 2
    warning, error = capsys.readouterr().err.splitlines()
    assert warning.startswith("warning: no evaluation file given")
    assert error == ("nmt corpus fetch: error: cannot reach codeload.github.com: "
                            "[Errno -3] Temporary failure in name resolution; download the "
                            "archive yourself (https://codeload.github.com/godotengine/"
                            f"godot-editor-l10n/tar.gz/{GODOT_COMMIT}) and pass --archive PATH")
    assert not list((tmp_path / "cache").glob("*.part")), "nothing was written"
    assert len(calls) == 1, "no name resolution: no retry"
    assert not (tmp_path / "out").exists()


# --- the downloader, against a local HTTP server ---------------------------------------

class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves `server.files`; honours `Range` when `server.ranges`; cuts the first
    response in half when `server.cut_first`."""

    def do_GET(self):  # noqa: N802 (the name http.server calls)
        server = self.server
        server.requests.append((self.path, self.headers.get("Range"),
                                self.headers.get("If-Range")))
        body = server.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start = 0
        asked = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        if asked and server.ranges:
            start = int(asked.group(1))
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(body) - start))
        self.send_header("ETag", '"v1"')
        self.end_headers()
        payload = body[start:]
        if server.cut_first and len(server.requests) == 1:
            payload = payload[: len(payload) // 2]
            self.close_connection = True
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def http_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.files, server.requests, server.ranges, server.cut_first = {}, [], True, False
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _url(server, path):
    return f"http://127.0.0.1:{server.server_address[1]}{path}"


def test_a_cut_download_resumes_with_a_range_request(tmp_path, http_server):
    body = bytes(range(256)) * 400
    http_server.files["/file"] = body
    http_server.cut_first = True
    waits = []
    path = download(_url(http_server, "/file"), tmp_path / "file.tar.gz", max_bytes=10**6,
                    sleep=waits.append)
    assert path.read_bytes() == body
    assert [(r, i) for _, r, i in http_server.requests] == [
        (None, None), (f"bytes={len(body) // 2}-", '"v1"')]
    assert waits == [1.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.tar.gz"]
    assert download(_url(http_server, "/file"), path, max_bytes=1) == path  # there: no request
    assert len(http_server.requests) == 2


def test_a_server_without_ranges_sends_the_whole_file_again(tmp_path, http_server):
    body = b"0123456789" * 1000
    http_server.files["/file"] = body
    http_server.cut_first, http_server.ranges = True, False
    path = download(_url(http_server, "/file"), tmp_path / "f", max_bytes=10**6,
                    sleep=lambda _: None)
    assert path.read_bytes() == body


def test_the_size_cap_stops_a_download_without_retrying(tmp_path, http_server):
    http_server.files["/big"] = b"x" * 5000
    with pytest.raises(DownloadError, match=r"5,000 bytes, more than the cap of 4,000"):
        download(_url(http_server, "/big"), tmp_path / "big", max_bytes=4000,
                 sleep=lambda _: None)
    assert len(http_server.requests) == 1
    with pytest.raises(DownloadError, match="HTTP 404"):
        download(_url(http_server, "/missing"), tmp_path / "m", max_bytes=10,
                 sleep=lambda _: None)
    assert len(http_server.requests) == 2


def test_an_unreachable_host_is_retried_with_backoff_then_named(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    waits = []
    with pytest.raises(DownloadError, match=rf"cannot reach 127\.0\.0\.1:{port}: .*pass "
                                            r"--archive PATH"):
        download(f"http://127.0.0.1:{port}/x.tar.gz", tmp_path / "x", max_bytes=10,
                 retries=3, sleep=waits.append)
    assert waits == [1.0, 2.0, 4.0]


def test_fetch_downloads_the_pinned_archive_into_the_cache(tmp_path, http_server):
    archive = _archive(tmp_path / "godot.tar.gz", "godot", GODOT_FILES, GODOT_COMMIT)
    path = f"/godotengine/godot-editor-l10n/tar.gz/{GODOT_COMMIT}"
    http_server.files[path] = archive.read_bytes()
    base = _url(http_server, "")
    manifest = fetch_source(SOURCES["ui"], tmp_path / "out", cache_dir=tmp_path / "cache",
                            base_url=base)
    record = manifest["archives"][0]
    assert (record["url"], record["commit"], record["downloaded"]) == (
        base + path, GODOT_COMMIT, True)
    assert (tmp_path / "cache" / f"godot-editor-l10n-{GODOT_COMMIT}.tar.gz").is_file()
    assert manifest["written"] == 6
    fetch_source(SOURCES["ui"], tmp_path / "out", cache_dir=tmp_path / "cache",
                 base_url=base, overwrite=True)
    assert len(http_server.requests) == 1, "the cached archive is used again"

