"""`Translator`: the one Python entry point to an exported model.

The server, batch jobs and the CLI all translate through this class, which
calls the SavedModel's signatures and turns their tensors into the plain
types of `nmt.types`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Sequence

import numpy as np
import tensorflow as tf
import tensorflow_text  # noqa: F401  (registers the SentencePiece ops the graph uses)

from nmt.alignment import word_links
from nmt.constants import METADATA_PATH
from nmt.inference import confidence
from nmt.inference.precision import AUTO, FLOAT32, carried_paths, choose_precision, signature_name
from nmt.paths import resolve_version_dir
from nmt.types import (
    DecodeOptions,
    Hypothesis,
    Translation,
    options_over,
    parse_pharaoh,
    recommended_options,
    sentence_list,
)

log = logging.getLogger("nmt.inference.translator")


@dataclasses.dataclass(frozen=True)
class ModelInfo:
    """What is known about a loaded model.

    Attributes:
        name: model name (e.g. `en-fr`).
        version: the version directory's number (TF Serving layout), or 0.
        path: the version directory.
        attention: short description of the architecture, e.g. `luong-general`.
        source_vocab_size / target_vocab_size: subword vocabulary sizes.
        metadata: everything else from the export's metadata (scores,
            attribution, training summary).
        alignment: where `Hypothesis.alignment` comes from: `"alignment_head"`
            or `"attention"` (the decoder's).
        word_links: the rule of the exported word links (`nmt.alignment.word_links`).
        default_options: the decoding of a caller that sets no options: the
            export's recommended decoding (metadata `recommended_decoding`,
            e.g. greedy for a distilled student) over `DecodeOptions()`.
        precision: the path translations run on: `"float32"` or `"bfloat16"`
            matrix products (`nmt.inference.precision`).
        precisions: the paths the export carries, its standard signatures' first.
        precision_reason: why `precision` was chosen, e.g. "auto: the CPU has
            avx512_bf16".
    """

    name: str
    version: int
    path: str
    attention: str
    source_vocab_size: int
    target_vocab_size: int
    metadata: dict
    alignment: str = "attention"
    word_links: str = word_links.DEFAULT_LINK_RULE
    default_options: DecodeOptions = DecodeOptions()
    precision: str = FLOAT32
    precisions: tuple[str, ...] = (FLOAT32,)
    precision_reason: str = ""


def _strings(values: np.ndarray) -> list[str]:
    return [v.decode("utf-8", errors="replace") for v in values]


def _decode_options(options: DecodeOptions, overrides: dict) -> DecodeOptions:
    """`options` with `overrides` applied (`nmt.types.options_over`); unknown names raise
    ValueError."""
    return options_over(options, overrides) if overrides else options


class Translator:
    """Translates with an exported SavedModel.

    Use `Translator.load(path)`; `path` is a version directory or a base
    directory whose highest version is loaded. Translations run on the path
    `info.precision` of the export; forced alignment (`align`) computes in
    float32 on every path.
    """

    def __init__(self, loaded, info: ModelInfo):
        self._loaded = loaded
        name = signature_name("translate_with_options", info.precision, info.precisions[0])
        if name not in loaded.signatures:
            raise ValueError(f"the export {info.path} has no {name} signature for its "
                             f"{info.precision} path: re-export it (nmt export --from-export)")
        self._translate = loaded.signatures[name]
        self._align = loaded.signatures["align"]
        self.info = info

    @classmethod
    def load(cls, path: str | os.PathLike, precision: str = AUTO) -> Translator:
        """Loads a version directory, or the highest version under a base directory.

        Args:
            path: a version directory, or a base directory of them.
            precision: the path to translate with: `"float32"`, `"bfloat16"`, or
                `"auto"`, which reads the CPU's features: bfloat16 where it has a
                bfloat16 unit (AMX, AVX512-BF16, Arm BF16), else float32, and the
                only path of an export that carries one (see `nmt.inference.precision` for
                why features rather than timings). The choice is logged and
                kept in `info.precision` and `info.precision_reason`.

        Raises:
            FileNotFoundError: no SavedModel at `path`.
            ValueError: `precision` is unknown, or names a path the export
                does not carry.
        """
        version_dir = resolve_version_dir(path)
        metadata_path = version_dir / METADATA_PATH
        metadata = json.loads(metadata_path.read_text()) if metadata_path.exists() else {}
        carried = carried_paths(metadata)
        choice = choose_precision(precision, carried, where=f"the export {version_dir}")
        loaded = tf.saved_model.load(str(version_dir))
        config = metadata.get("model_config", {})
        info = ModelInfo(
            name=str(metadata.get("name", version_dir.parent.name)),
            version=int(version_dir.name) if version_dir.name.isdigit() else 0,
            path=str(version_dir),
            attention=str(metadata.get("attention", "")),
            source_vocab_size=int(config.get("source_vocab_size", 0)),
            target_vocab_size=int(config.get("target_vocab_size", 0)),
            metadata=metadata,
            alignment="alignment_head" if config.get("alignment_head") else "attention",
            word_links=str(metadata.get("word_links", word_links.DEFAULT_LINK_RULE)),
            default_options=recommended_options(metadata),
            precision=choice.precision, precisions=carried, precision_reason=choice.reason,
        )
        log.info("%s version %s translates with %s matrix products (%s)", info.name,
                 info.version, info.precision, info.precision_reason)
        return cls(loaded, info)

    def translate(self, sentences: Sequence[str], options: DecodeOptions | None = None, *,
                  links: str | None = None, link_threshold: float = word_links.DEFAULT_THRESHOLD,
                  **overrides) -> list[Translation]:
        """Translates sentences; keyword arguments override `DecodeOptions` fields.

        Args:
            sentences: the source sentences (a list, not a single string).
            options: decoding options; defaults to the model's,
                `info.default_options` (its export's recommended decoding, else
                `DecodeOptions()`).
            links: a rule of `nmt.alignment.word_links.LINK_RULES` to read the word links
                with; None keeps the model's own (`argmax`).
            link_threshold: the rule's threshold (`threshold` and `grow`).
            **overrides: any `DecodeOptions` field, e.g. `beam_size=1`, set over
                `options` (an `n_best` above their beam, with no `beam_size`,
                widens the beam to `n_best`).

        Returns:
            One `Translation` per sentence, in order (an empty list for no input).
            Each hypothesis has `piece_scores` and `word_scores`, the searched
            pieces' log-probabilities and the words' means (None from exports
            whose translations do not return them), and `confidence`.

        Raises:
            TypeError: `sentences` is a single string, or holds a non-string
                (the same check as `nmt_api.client.TranslationClient`).
            ValueError: a decoding option is out of range or unknown, or a link
                rule is unknown or needs a newer export.
        """
        options = _decode_options(options or self.info.default_options, overrides)
        self._check_links(links, link_threshold)
        sentences = sentence_list(sentences, "sentences")
        if not sentences:
            return []
        out = self._translate(
            sentences=tf.constant(sentences, tf.string),
            beam_size=tf.constant(options.beam_size, tf.int32),
            max_length_ratio=tf.constant(options.max_length_ratio, tf.float32),
            max_length_offset=tf.constant(options.max_length_offset, tf.int32),
            length_penalty=tf.constant(options.length_penalty, tf.float32),
            coverage_penalty=tf.constant(options.coverage_penalty, tf.float32),
            n_best=tf.constant(options.n_best, tf.int32),
            replace_unknown=tf.constant(options.replace_unknown, tf.bool),
        )
        out = {key: value.numpy() for key, value in out.items()}
        return [self._translation(sentences[i], out, i, links, link_threshold, options)
                for i in range(len(sentences))]

    def _check_links(self, links: str | None, threshold: float) -> None:
        if links is None:
            return
        word_links.check_rule(links, threshold)
        if "word_attention" not in self._align.structured_outputs:
            raise ValueError(
                f"link rule {links!r} needs the word matrix, which this export "
                f"({self.info.path}) does not return: re-export it with this version "
                "(nmt export --from-export ... --overwrite), or leave the rule unset"
            )

    def align(self, sources: Sequence[str], targets: Sequence[str], *,
              links: str | None = None,
              link_threshold: float = word_links.DEFAULT_THRESHOLD) -> list[Translation]:
        """Forced alignment of given pairs: the target is scored, not searched.

        Returns:
            One `Translation` per pair whose hypothesis text is the target as
            given (word links count its whitespace words) and whose score is
            the target's total log-probability (not length-normalised); its
            `piece_scores` and `word_scores` are the target's pieces' and
            words' log-probabilities (exports from before them: None).
            `links` and `link_threshold` as for `translate`.

        Raises:
            TypeError: `sources` or `targets` is a single string, or holds a
                non-string.
            ValueError: `sources` and `targets` differ in length.
        """
        sources = sentence_list(sources, "sources")
        targets = sentence_list(targets, "targets")
        if len(sources) != len(targets):
            raise ValueError(
                f"sources and targets must have the same length. Received: {len(sources)} "
                f"sources and {len(targets)} targets"
            )
        self._check_links(links, link_threshold)
        if not sources:
            return []
        out = self._align(sources=tf.constant(sources, tf.string),
                          targets=tf.constant(targets, tf.string))
        out = {key: value.numpy()[:, None] for key, value in out.items()}
        return [self._translation(sources[i], out, i, links, link_threshold)
                for i in range(len(sources))]

    @staticmethod
    def _translation(source: str, out: dict, i: int, links: str | None = None,
                     threshold: float = word_links.DEFAULT_THRESHOLD,
                     options: DecodeOptions | None = None) -> Translation:
        """Sentence i of the signature's outputs; `options` as decoded (None: forced
        alignment, whose scores are total log-probabilities)."""
        source_length = int(out["source_lengths"][i, 0])
        source_tokens = tuple(_strings(out["source_tokens"][i, 0][:source_length]))
        nbest = []
        for n in range(out["translations"].shape[1]):
            length = int(out["target_lengths"][i, n])
            score = float(out["scores"][i, n])
            if length == 0 and not np.isfinite(score):
                continue  # fewer hypotheses exist than were asked for
            text = out["translations"][i, n].decode("utf-8", errors="replace")
            matrix = None
            if "word_attention" in out:
                words = len(text.split()), len(source.split())
                matrix = np.asarray(out["word_attention"][i, n][:words[0], :words[1]])
            if links is None:
                pharaoh = parse_pharaoh(out["word_alignments"][i, n].decode("utf-8"))
            else:
                pharaoh = tuple(word_links.word_links(matrix, links, threshold))
            attention = out.get("attention")
            nbest.append(Hypothesis(
                text=text,
                target_tokens=tuple(_strings(out["target_tokens"][i, n][:length])),
                score=score,
                alignment=np.asarray(out["alignments"][i, n][:length, :source_length]),
                word_alignment=pharaoh,
                attention=(None if attention is None
                           else np.asarray(attention[i, n][:length, :source_length])),
                word_matrix=matrix,
                **_scores(out, (i, n), length, source_length, len(text.split()), options),
            ))
        return Translation(source=source, source_tokens=source_tokens, nbest=tuple(nbest))


def _scores(out: dict, at: tuple[int, int], length: int, source_length: int, words: int,
            options: DecodeOptions | None) -> dict:
    """`confidence`, `word_scores` and `piece_scores` of hypothesis `at`
    (`nmt.inference.confidence`): the confidence is the pieces' mean, recovered
    from a searched hypothesis' score where the export returns no pieces.

    Args:
        out: the signature's outputs, `(batch, N, ...)`.
        at: `(sentence, hypothesis)`.
        length: the hypothesis's pieces T; source_length: the source's S.
        words: whitespace words of the hypothesis's text.
        options: the decoding options of a searched hypothesis; None for
            forced alignment (`scores` are then total log-probabilities).
    """
    found = {}
    if "piece_scores" in out:
        found["piece_scores"] = np.asarray(out["piece_scores"][at][:length])
    if "word_scores" in out:
        found["word_scores"] = np.asarray(out["word_scores"][at][:words])
    score = float(out["scores"][at])
    if options is None:
        total = score
    elif "piece_scores" in found:
        total = float(found["piece_scores"].sum(dtype=np.float64))
    else:  # an export whose translations return no piece log-probabilities
        rows = out.get("attention", out["alignments"])[at][:length, :source_length]  # (T, S)
        total = confidence.total_log_prob(score, length, options.length_penalty,
                                          options.coverage_penalty, rows)
    return {"confidence": confidence.sentence_confidence(total, length), **found}
