"""The model being served, and the watch over its base directory for new versions.

The base directory holds `<version>/` SavedModels (TensorFlow Serving layout).
`refresh()` (called periodically by the server) serves the highest version
that loads and warms up. A new version takes
traffic only once it is warmed up; a version that fails is logged, remembered
(until its files change) and the current one keeps serving.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from nmt.inference.precision import AUTO, check_load_choice
from nmt.paths import version_dirs
from nmt.types import DecodeOptions
from serving.errors import ModelUnavailable
from serving.metrics import ServingMetrics

log = logging.getLogger("nmt.serving.model_store")

WARMUP_SENTENCES = ("Hello.", "How are you today?")


def translator_loader(precision: str = AUTO) -> Callable[[Path], object]:
    """`path -> Translator` on the path `precision` (`Translator.load`)."""
    check_load_choice(precision)

    def load(path: Path):
        from nmt.inference.translator import (
            Translator,  # imports TensorFlow; only the server needs it
        )

        return Translator.load(path, precision)

    return load


class ModelStore:
    """Holds the current `nmt.inference.translator.Translator` and swaps in new versions.

    Args:
        base_dir: directory of numbered version directories.
        metrics: where to count loads and publish the version served (and the
            precision path it translates on).
        loader: `path -> Translator`; `Translator.load` by default, with auto
            precision (`translator_loader`).
        warmup_sentences: translated once before a version takes traffic.
    """

    def __init__(self, base_dir: str | os.PathLike, metrics: ServingMetrics,
                 loader: Callable[[Path], object] | None = None,
                 warmup_sentences: Sequence[str] = WARMUP_SENTENCES):
        self.base_dir = Path(base_dir)
        self._metrics = metrics
        self._loader = loader or translator_loader()
        self._warmup = list(warmup_sentences)
        self._current = None  # the Translator serving; replaced whole, never mutated
        self._failed: dict[int, float] = {}  # version -> files' mtime when it failed
        self._refresh_lock = threading.Lock()

    @property
    def translator(self):
        """The translator serving now; raises `ModelUnavailable` before the first load."""
        current = self._current
        if current is None:
            raise ModelUnavailable(
                f"no model is loaded yet (watching {self.base_dir}); retry when the health "
                "service reports SERVING")
        return current

    @property
    def version(self) -> int | None:
        current = self._current
        return None if current is None else current.info.version

    def translate(self, sentences: list[str], options: DecodeOptions) -> tuple[int, list]:
        """Blocking: translates with the current version; returns `(version, translations)`."""
        translator = self.translator
        return translator.info.version, translator.translate(sentences, options)

    def align(self, sources: list[str], targets: list[str]) -> tuple[int, list]:
        """Blocking: forced alignment of pairs with the current version.

        Args:
            sources: source sentences.
            targets: one target per source.

        Returns:
            `(version, translations)`: one `Translation` per pair whose
            hypothesis is the target, with attention `(T, S)` (see
            `Translator.align`).
        """
        translator = self.translator
        return translator.info.version, translator.align(sources, targets)

    def refresh(self) -> bool:
        """Blocking: serves the highest version that loads, if it is not served yet.

        Returns:
            Whether a new version now serves.
        """
        with self._refresh_lock:
            for version, path in sorted(version_dirs(self.base_dir).items(), reverse=True):
                if version == self.version:
                    return False
                stamp = _files_mtime(path)
                if self._failed.get(version) == stamp:
                    continue  # failed before and unchanged since
                if self._try_load(version, path, stamp):
                    return True
            return False

    def _try_load(self, version: int, path: Path, stamp: float) -> bool:
        try:
            translator = self._loader(path)
            translator.translate(self._warmup)  # with the model's default decoding
        except Exception as error:  # a broken export must never stop the server
            self._failed[version] = stamp
            self._metrics.model_loads.labels(result="failure").inc()
            log.error(json.dumps({"event": "model_load_failed", "version": version,
                                  "path": str(path), "error": f"{type(error).__name__}: {error}",
                                  "serving_version": self.version}))
            return False
        previous = self.version
        self._current = translator
        self._failed.pop(version, None)
        self._metrics.model_loads.labels(result="success").inc()
        info = translator.info
        self._metrics.model.info({"name": info.name, "version": str(info.version),
                                  "attention": info.attention, "precision": info.precision})
        log.info(json.dumps({"event": "model_loaded", "version": version, "path": str(path),
                             "previous_version": previous, "precision": info.precision,
                             "precision_reason": info.precision_reason}))
        return True


def _files_mtime(path: Path) -> float:
    """Latest modification time under a version directory (changes when files are rewritten)."""
    stamps = [path.stat().st_mtime]
    for root, _, files in os.walk(path):
        stamps.extend((Path(root) / name).stat().st_mtime for name in files)
    return max(stamps)

