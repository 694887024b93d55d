"""Downloading the public Anki fra-eng corpus (ManyThings.org, from Tatoeba)."""

from __future__ import annotations

import shutil
import urllib.request
import zipfile
from pathlib import Path

ANKI_URL = "https://www.manythings.org/anki/fra-eng.zip"
ANKI_MEMBER = "fra.txt"
# manythings.org answers 403 to urllib's default User-Agent.
_USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/124.0 Safari/537.36"
)


def download_anki(dest_dir: str | Path, *, url: str = ANKI_URL, timeout: float = 60.0) -> Path:
    """Downloads the Anki fra-eng release and extracts `fra.txt`.

    Needs internet access. Nothing is downloaded when `dest_dir/fra.txt`
    already exists.

    Args:
        dest_dir: where to put the zip file and `fra.txt`.
        url: the zip file to download.
        timeout: seconds to wait for the server.

    Returns:
        The path of `fra.txt` (`English<TAB>French<TAB>attribution` lines,
        readable with `nmt.data.corpus.read_pairs`).
    """
    dest_dir = Path(dest_dir)
    if (dest_dir / ANKI_MEMBER).exists():
        return dest_dir / ANKI_MEMBER
    dest_dir.mkdir(parents=True, exist_ok=True)
    zip_path = dest_dir / Path(url).name
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    partial = zip_path.with_name(zip_path.name + ".part")
    with urllib.request.urlopen(request, timeout=timeout) as response, open(partial, "wb") as out:
        shutil.copyfileobj(response, out)
    partial.replace(zip_path)
    return extract_anki(zip_path, dest_dir)


def extract_anki(zip_path: str | Path, dest_dir: str | Path) -> Path:
    """Extracts `fra.txt` (only that member) from an Anki zip file.

    Returns:
        The path of the extracted `fra.txt` in `dest_dir`.
    """
    dest = Path(dest_dir) / ANKI_MEMBER
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path) as archive:
        if ANKI_MEMBER not in archive.namelist():
            raise ValueError(
                f"{zip_path} has no {ANKI_MEMBER}. Received members: {archive.namelist()}"
            )
        partial = dest.with_name(dest.name + ".part")
        with archive.open(ANKI_MEMBER) as member, open(partial, "wb") as out:
            shutil.copyfileobj(member, out)
    partial.replace(dest)
    return dest
