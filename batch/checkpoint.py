"""The partial output of a job and its checkpoint, both made durable with fsync.

Output goes to `<output>.part`, one chunk at a time; after each chunk is on
disk, the checkpoint `<output>.part.json` records how many input lines and
output bytes are committed. A crash between the two leaves extra bytes in
the partial output, which a resumed job cuts off. When the job finishes, the
partial output is renamed to `<output>`.

A gzip output is written as one gzip member per chunk (a valid gzip file,
RFC 1952 §2.2), so cutting it at a chunk boundary leaves a valid file.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
from pathlib import Path
from typing import BinaryIO

CHECKPOINT_VERSION = 1


@dataclasses.dataclass(frozen=True)
class Checkpoint:
    """How far a job got.

    Attributes:
        fingerprint: the job's input, options and model; a job resumes only
            with an identical fingerprint.
        lines: input lines whose records are committed.
        output_bytes: committed size of the partial output.
        errors: lines recorded with an error so far.
    """

    fingerprint: dict
    lines: int = 0
    output_bytes: int = 0
    errors: int = 0


def _fsync_directory(path: Path) -> None:
    # Makes a rename or a new file itself durable, not only its contents.
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(path: str | os.PathLike, checkpoint: Checkpoint) -> None:
    """Writes the checkpoint atomically (temporary file, fsync, rename)."""
    path = Path(path)
    data = {"version": CHECKPOINT_VERSION, **dataclasses.asdict(checkpoint)}
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(data, f, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)
    _fsync_directory(path.parent)


def load_checkpoint(path: str | os.PathLike) -> Checkpoint | None:
    """The saved checkpoint, or None if there is none."""
    path = Path(path)
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.pop("version", None) != CHECKPOINT_VERSION:
        raise ValueError(f"{path} was written by another version of `nmt batch`; delete it "
                         "and the .part file beside it to start over")
    return Checkpoint(**data)


class PartialOutput:
    """Appends committed chunks to `<output>.part` and renames it when done.

    Args:
        output: the final output path; gzip-compressed if it ends in `.gz`.
    """

    def __init__(self, output: str | os.PathLike):
        self.output = Path(output)
        self.part = self.output.with_name(self.output.name + ".part")
        self.checkpoint = self.output.with_name(self.output.name + ".part.json")
        self.compress = self.output.name.endswith(".gz")
        self._file: BinaryIO | None = None

    def start(self, committed_bytes: int | None = None) -> None:
        """Opens the partial output: empty, or cut back to `committed_bytes`."""
        if committed_bytes is None:
            self.part.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.part, "wb")
            _fsync_directory(self.part.parent)
            return
        self._file = open(self.part, "r+b")
        size = self._file.seek(0, os.SEEK_END)
        if size < committed_bytes:
            raise ValueError(f"{self.part} has {size} bytes but its checkpoint says "
                             f"{committed_bytes} were committed; start over without --resume")
        self._file.truncate(committed_bytes)
        self._file.seek(committed_bytes)

    def commit(self, text: str) -> int:
        """Appends a chunk and forces it to disk; returns the committed size."""
        data = text.encode("utf-8")
        if self.compress:
            # mtime=0 keeps the bytes identical between runs.
            data = gzip.compress(data, compresslevel=6, mtime=0)
        self._file.write(data)
        self._file.flush()
        os.fsync(self._file.fileno())
        return self._file.tell()

    def finish(self) -> None:
        """Renames the partial output to the final name and drops the checkpoint."""
        if self.compress and self._file.tell() == 0:
            self.commit("")  # an empty gzip file is not a valid one
        self.close()
        os.replace(self.part, self.output)
        self.checkpoint.unlink(missing_ok=True)
        _fsync_directory(self.output.parent)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
