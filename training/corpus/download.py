"""Downloading a large file to a cache: streamed, resumed, capped, retried.

    path = download(url, cache_dir / "laws.tar.gz", max_bytes=4 * 2**30)

The bytes go to `<dest>.part` and are renamed to `dest` once complete, so a
file named `dest` is always whole. A download that stops (a dropped
connection, a stopped process) continues from the bytes already in
`<dest>.part` with an HTTP `Range` request; a server that ignores `Range`
(status 200) sends the whole file again and the part is restarted. The
entity tag of the first response is kept beside the part (`<dest>.part.etag`)
and sent as `If-Range`, so a file that changed on the server is not glued
onto the start of the old one.

Only the standard library: the corpus tools need no HTTP client package.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import os
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

CHUNK_BYTES = 1 << 20
USER_AGENT = "nmt-attention-corpus-fetch"
# HTTP statuses worth another try: the server is busy or failing for a while.
_RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})
_CONTENT_RANGE = re.compile(r"bytes\s+(?:(\d+)-(\d+)|\*)/(\d+|\*)")


class DownloadError(OSError):
    """A download that did not complete: unreachable host, an HTTP error, a file
    past the size cap. The message says what to do instead."""


def download(url: str, dest: str | Path, *, max_bytes: int, retries: int = 5,
             backoff_seconds: float = 1.0, timeout: float = 60.0,
             sleep: Callable[[float], None] = time.sleep) -> Path:
    """Downloads `url` to `dest` unless `dest` is already there.

    Args:
        url: an `http(s)://` or `file://` URL.
        dest: the file to write (its directory is created).
        max_bytes: the largest file accepted; a bigger one stops the download.
        retries: further attempts after a failed one (each resumes).
        backoff_seconds: the wait before the first retry, doubled each time
            (at most a minute).
        timeout: seconds without an answer or a byte before an attempt fails.
        sleep: waits between attempts (tests pass a function that does not).

    Returns:
        `dest`.

    Raises:
        DownloadError: the host cannot be reached (the message names it and
            says to pass `--archive PATH`), the server refuses the file
            (HTTP 4xx), or the file is larger than `max_bytes`.
    """
    dest = Path(dest)
    if dest.is_file():
        return dest
    if max_bytes < 1:
        raise ValueError(f"max_bytes must be >= 1. Received: max_bytes={max_bytes!r}")
    if retries < 0:
        raise ValueError(f"retries must be >= 0. Received: retries={retries!r}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    host = urllib.parse.urlsplit(url).netloc or url
    for attempt in range(retries + 1):
        try:
            _attempt(url, part, max_bytes, timeout)
            os.replace(part, dest)
            _etag_file(part).unlink(missing_ok=True)
            return dest
        except DownloadError:
            raise
        except urllib.error.HTTPError as error:
            if error.code not in _RETRY_STATUSES:
                raise DownloadError(f"{host} answered HTTP {error.code} {error.reason} for "
                                    f"{url}: check the repository and commit, or download the "
                                    "archive yourself and pass --archive PATH") from None
            reason = f"HTTP {error.code} {error.reason}"
        except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
            reason = str(getattr(error, "reason", None) or error) or type(error).__name__
            if isinstance(getattr(error, "reason", None), socket.gaierror):
                break  # no name resolution: no network, retrying will not help
        if attempt < retries:
            wait = min(backoff_seconds * 2**attempt, 60.0)
            log.warning("%s: %s; attempt %d of %d in %.0f s (resuming at %s bytes)", host,
                        reason, attempt + 2, retries + 1, wait, _size(part))
            sleep(wait)
    raise DownloadError(f"cannot reach {host}: {reason}; download the archive yourself "
                        f"({url}) and pass --archive PATH")


def _attempt(url: str, part: Path, max_bytes: int, timeout: float) -> None:
    """One request: appends what the server sends to `part` (or restarts it)."""
    offset = _size(part)
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    etag_file = _etag_file(part)
    if offset:
        headers["Range"] = f"bytes={offset}-"
        if etag_file.is_file():
            headers["If-Range"] = etag_file.read_text(encoding="utf-8").strip()
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as error:
        if error.code == 416 and offset:  # nothing left after `offset`: whole, or a stale part
            total = _content_range(error.headers.get("Content-Range", ""))[2]
            if total == offset:
                return
            part.unlink()
            raise ConnectionError("the server's file is shorter than the part kept; "
                                  "restarting") from None
        raise
    with response:
        status = getattr(response, "status", None) or 200
        if status == 206:
            start, _, total = _content_range(response.headers.get("Content-Range", ""))
            if start != offset:
                part.unlink()
                raise ConnectionError(f"the server resumed at byte {start}, not {offset}")
        else:  # 200 (or a file:// URL): the whole file from its first byte
            offset = 0
            length = response.headers.get("Content-Length")
            total = int(length) if length and length.isdigit() else None
        if total is not None and total > max_bytes:
            raise DownloadError(f"{url} is {total:,} bytes, more than the cap of {max_bytes:,} "
                                "(--max-bytes)")
        etag = response.headers.get("ETag")
        if etag and not etag.startswith("W/"):
            etag_file.write_text(etag, encoding="utf-8")
        with open(part, "r+b" if offset else "wb") as out:
            out.seek(offset)
            out.truncate()
            written = offset
            while chunk := response.read(CHUNK_BYTES):
                written += len(chunk)
                if written > max_bytes:
                    raise DownloadError(f"{url} passed the cap of {max_bytes:,} bytes "
                                        "(--max-bytes)")
                out.write(chunk)
            out.flush()
            os.fsync(out.fileno())
        if total is not None and written < total:
            raise ConnectionError(f"the connection closed at byte {written:,} of {total:,}")


def _content_range(value: str) -> tuple[int | None, int | None, int | None]:
    """`(first byte, last byte, total)` of a `Content-Range` header (None where `*`)."""
    found = _CONTENT_RANGE.fullmatch(value.strip())
    if not found:
        return None, None, None
    first, last, total = found.groups()
    return (int(first) if first else None, int(last) if last else None,
            int(total) if total and total != "*" else None)


def _etag_file(part: Path) -> Path:
    return part.with_name(part.name + ".etag")


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else 0


def sha256_of(path: str | Path) -> str:
    """The SHA-256 of a file, read in chunks (recorded in manifests, so that two
    downloads of one archive can be compared)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()
