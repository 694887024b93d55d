"""`nmt.data.download`: the Anki zip file, without the network."""

import io
import zipfile

import pytest

from nmt.data import download
from nmt.data.corpus import read_pairs
from nmt.data.download import extract_anki


def _anki_zip(members):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return buffer.getvalue()


ANKI_TEXT = "Go.\tVa !\tCC-BY 2.0 (France) Attribution: tatoeba.org #2877272\n"


def test_extract_anki(tmp_path):
    zip_path = tmp_path / "fra-eng.zip"
    zip_path.write_bytes(_anki_zip({"_about.txt": "about", "fra.txt": ANKI_TEXT}))
    path = extract_anki(zip_path, tmp_path / "out")
    assert path == tmp_path / "out" / "fra.txt"
    assert read_pairs(path) == [("Go.", "Va !")]
    assert sorted(p.name for p in path.parent.iterdir()) == ["fra.txt"]
    zip_path.write_bytes(_anki_zip({"deu.txt": ANKI_TEXT}))
    with pytest.raises(ValueError, match="no fra.txt"):
        extract_anki(zip_path, tmp_path)


def test_download_anki_sends_a_browser_user_agent(tmp_path, monkeypatch):
    requests = []

    def fake_urlopen(request, timeout):
        requests.append(request)
        return io.BytesIO(_anki_zip({"fra.txt": ANKI_TEXT}))

    monkeypatch.setattr(download.urllib.request, "urlopen", fake_urlopen)
    path = download.download_anki(tmp_path)
    assert read_pairs(path) == [("Go.", "Va !")]
    assert requests[0].full_url == download.ANKI_URL
    assert requests[0].get_header("User-agent").startswith("Mozilla/5.0")
    assert download.download_anki(tmp_path) == path  # already there: no second download
    assert len(requests) == 1
