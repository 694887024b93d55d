"""The self-contained translation graph and its SavedModel export.

`TranslationModule` holds the tokenizers and the model and exposes
`tf.function`s that go from text to text plus alignments. The same module is
used in-process (dev evaluation during training, tests) and exported with
`export_saved_model`; the exported graph needs only core TensorFlow and
tensorflow-text ops.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

import tensorflow as tf

from nmt.alignment import from_attention
from nmt.constants import MAX_SENTENCE_TOKENS, METADATA_PATH
from nmt.data.tokenizer import BOS_ID, EOS_ID, PAD_ID, SubwordTokenizer, TokenizerPair
from nmt.inference import fast_encoder
from nmt.inference.precision import BFLOAT16, FLOAT32, export_flag, export_paths, signature_name
from nmt.inference.search import VOCAB_BLOCK, beam_search, tile_beams
from nmt.inference.shortlist import Shortlist, batch_vocabulary, sentence_vocabularies
from nmt.model import ModelConfig, Seq2Seq
from nmt.types import DecodeOptions, recommended_options

_STRINGS = tf.TensorSpec([None], tf.string)
_OPTION_SPECS = {
    "beam_size": tf.TensorSpec([], tf.int32),
    "max_length_ratio": tf.TensorSpec([], tf.float32),
    "max_length_offset": tf.TensorSpec([], tf.int32),
    "length_penalty": tf.TensorSpec([], tf.float32),
    "coverage_penalty": tf.TensorSpec([], tf.float32),
    "n_best": tf.TensorSpec([], tf.int32),
    "replace_unknown": tf.TensorSpec([], tf.bool),
}
# The `DecodeOptions` defaults: what `serving_default` decodes with unless the metadata
# recommends other options (`TranslationModule.default_options`).
DEFAULT_OPTIONS = dataclasses.asdict(DecodeOptions())


class TranslationModule(tf.Module):
    """Text-in, text-and-alignments-out translation graph.

    Args:
        model: a built `Seq2Seq`.
        tokenizers: source and target `SubwordTokenizer`s.
        metadata: JSON-serialisable facts about the model (name, config,
            scores, attribution) stored beside the SavedModel. Its
            `"word_links"` names the rule of `word_alignments` (one of
            `nmt.alignment.from_attention.GRAPH_LINK_RULES`; default argmax).
        matmul_dtype: dtype of the matrix products of the encoder and the
            decoder step in translation (`tf.bfloat16` casts their weights
            once per call); everything else computes in float32. The path of
            `translate`, `translate_with_options` and the standard signatures.
        parallel_precisions: further paths (names of `EXPORT_PRECISIONS`), each
            with its own `translate_<p>` and `translate_with_options_<p>`,
            exported as `serving_<p>` and `translate_with_options_<p>`
            (`nmt.inference.precision`).
        shortlist: restricts each sentence's search to the target ids it lists
            for the sentence (`nmt.inference.shortlist`); None searches the whole
            vocabulary. `align` always scores over the whole vocabulary (PAD and BOS aside).
    """

    def __init__(self, model: Seq2Seq, tokenizers: TokenizerPair, metadata: dict | None = None,
                 matmul_dtype: tf.DType = tf.float32, shortlist: Shortlist | None = None,
                 parallel_precisions: Sequence[str] = ()):
        super().__init__(name="translation")
        self.model = model
        self.matmul_dtype = matmul_dtype
        self.precisions = (matmul_dtype.name, *[p for p in parallel_precisions
                                                if p != matmul_dtype.name])
        for precision in self.precisions[1:]:
            self._add_path(precision)
        self.shortlist = shortlist
        if shortlist is not None:  # saved with the weights
            self.shortlist_frequent = tf.Variable(shortlist.frequent, trainable=False,
                                                  name="shortlist_frequent")
            self.shortlist_translations = tf.Variable(shortlist.translations, trainable=False,
                                                      name="shortlist_translations")
        self.tokenizers = tokenizers
        self.source_tokenizer = tokenizers.source
        self.target_tokenizer = tokenizers.target
        self.metadata = _with_shortlist_settings(metadata or {}, shortlist)
        # An ordered list of the weights, so a rebuilt model can restore them by
        # position (see `module_from_export`).
        self.model_weights = list(model.weights)

    @property
    def default_options(self) -> dict:
        """What `translate` (`serving_default`) decodes with: the metadata's
        `recommended_decoding` (e.g. greedy for a distilled model) over the
        `DecodeOptions` defaults. Read when the function is traced (at export)."""
        return dataclasses.asdict(recommended_options(self.metadata))

    @property
    def link_rule(self) -> str:
        """The rule of the `word_alignments` output (`metadata["word_links"]`)."""
        rule = self.metadata.get("word_links", "argmax")
        if rule not in from_attention.GRAPH_LINK_RULES:
            raise ValueError(f"word_links must be one of {from_attention.GRAPH_LINK_RULES}. "
                             f"Received: word_links={rule!r}")
        return rule

    @property
    def has_head(self) -> bool:
        """Whether alignments come from an alignment head (the decoder's attention
        is then the second output, `attention`)."""
        return self.model.decoder.alignment_head is not None

    def with_shortlist(self, shortlist: Shortlist | None,
                       source: str | None = None) -> TranslationModule:
        """The same model and tokenizers with another shortlist (None: the whole vocabulary).

        Args:
            source: where the shortlist came from, recorded in the metadata.
        """
        metadata = {key: value for key, value in self.metadata.items() if key != "shortlist"}
        if shortlist is not None and source:
            metadata["shortlist"] = {"corpus": source}
        return TranslationModule(self.model, self.tokenizers, metadata, self.matmul_dtype,
                                 shortlist, self.precisions[1:])

    def path_function(self, name: str, precision: str):
        """`translate` or `translate_with_options` of the path `precision` (one of
        `self.precisions`)."""
        if precision not in self.precisions:
            raise ValueError(f"precision must be one of this module's {self.precisions}. "
                             f"Received: precision={precision!r}")
        suffix = "" if precision == self.precisions[0] else f"_{precision}"
        return getattr(self, name + suffix)

    def _add_path(self, precision: str) -> None:
        """Adds `translate_<precision>` and `translate_with_options_<precision>`: the
        standard functions with the matrix products in that dtype."""
        if precision not in EXPORT_PRECISIONS:
            raise ValueError(f"precision must be one of {tuple(EXPORT_PRECISIONS)}. "
                             f"Received: precision={precision!r}")
        dtype = EXPORT_PRECISIONS[precision]

        @tf.function(input_signature=[_STRINGS, *_OPTION_SPECS.values()])
        def translate_with_options(sentences, beam_size, max_length_ratio, max_length_offset,
                                   length_penalty, coverage_penalty, n_best, replace_unknown):
            options = _named_options(beam_size, max_length_ratio, max_length_offset,
                                     length_penalty, coverage_penalty, n_best, replace_unknown)
            return self._translate(sentences, options, dtype)

        @tf.function(input_signature=[_STRINGS])
        def translate(sentences):
            out = translate_with_options(sentences, **self.default_options)
            return {key: value[:, 0] for key, value in out.items()}

        setattr(self, f"translate_with_options_{precision}", translate_with_options)
        setattr(self, f"translate_{precision}", translate)

    # --- the graph ----------------------------------------------------------------

    def _encode_sources(self, sentences):
        ids = self.source_tokenizer.tokenize(sentences)  # ragged (batch, None)
        ids = ids[:, : MAX_SENTENCE_TOKENS - 1]
        eos = tf.fill([ids.nrows(), 1], tf.constant(EOS_ID, ids.dtype))
        return _dense(tf.concat([ids, eos], axis=1))  # (batch, S)

    def _search(self, source, options, matmul_dtype=None):
        """Beam search -> `(SearchResult, head rows (batch, N, T, S) or None)`, matrix
        products in `matmul_dtype` (None: the module's)."""
        matmul_dtype = self.matmul_dtype if matmul_dtype is None else matmul_dtype
        values, mask = fast_encoder.encode(self.model.encoder, source, matmul_dtype)
        memory = self.model.prepare_memory(source, values, mask)
        batch = tf.shape(source)[0]
        beam = options["beam_size"]
        # The memory stays one row per sentence: a step attends with K queries per sentence.
        state = tile_beams(self.model.initial_state(memory), beam)
        kernels = self.model.decoder.cast_kernels(matmul_dtype)  # once, not per step
        # PAD and BOS are excluded from the search (`_banned_specials`).
        if self.shortlist is None:
            banned = self._banned_specials()
            context = memory
        else:
            # Logits for the batch's shortlist only; the search runs over positions in
            # `vocab` (the special ids keep their values as positions), each sentence
            # over its own list (`sentence_banned`, one row per sentence, in `context`
            # so that it leaves the search with its sentence).
            allowed = sentence_vocabularies(self.shortlist_frequent, self.shortlist_translations,
                                            source, self.model.config.target_vocab_size)
            vocab = batch_vocabulary(allowed, multiple=VOCAB_BLOCK)  # (V',)
            allowed = tf.gather(allowed, vocab, axis=1) & (vocab != PAD_ID) & (vocab != BOS_ID)
            context = (memory, tf.where(allowed, 0.0, float("-inf")))  # (batch, V')
            kernels = kernels.restrict(vocab)

        with_head = self.has_head  # the step also gives h_t, kept for each chosen piece

        def step_fn(tokens, state, context):  # context: rows of the sentences still searched
            if self.shortlist is None:
                logits, state, weights, *query = self.model.decode_step(
                    tokens, state, context, kernels, return_query=with_head)
                return (tf.nn.log_softmax(logits + banned), state, weights, *query)
            memory, sentence_banned = context
            logits, state, weights, *query = self.model.decode_step(
                tf.gather(vocab, tokens), state, memory, kernels, return_query=with_head)
            # Normalised over each sentence's own list: a translation does not depend
            # on the sentences batched with it.
            shape = tf.shape(sentence_banned)
            by_sentence = tf.reshape(logits, [shape[0], -1, shape[1]]) + sentence_banned[:, None]
            log_probs = tf.nn.log_softmax(tf.reshape(by_sentence, tf.shape(logits)))
            return (log_probs, state, weights, *query)

        source_lengths = tf.reduce_sum(tf.cast(memory.mask, tf.int32), axis=1)  # (batch,)
        max_lengths = tf.cast(
            tf.math.ceil(tf.cast(source_lengths, tf.float32) * options["max_length_ratio"]),
            tf.int32,
        ) + options["max_length_offset"]
        result = beam_search(
            step_fn, state, batch_size=batch, beam_size=beam, max_lengths=max_lengths,
            source_lengths=source_lengths, bos_id=BOS_ID, eos_id=EOS_ID,
            length_penalty=options["length_penalty"],
            coverage_penalty=options["coverage_penalty"], n_best=options["n_best"],
            context=context, step_queries=with_head,
        )
        if self.shortlist is not None:
            # Padding positions hold 0, which is PAD's position too.
            result = result._replace(tokens=tf.gather(vocab, result.tokens))
        head = self._head_rows(result, memory) if with_head else None
        return result, head

    def _head_rows(self, result, memory):
        """The alignment head's rows `(batch, N, T, S)` of the hypotheses found, from the
        states search kept for their pieces: one batched product after the search."""
        rows = self.model.decoder.head_weights(result.queries, result.tokens, memory)
        shape = tf.shape(result.tokens)  # (B, N, T)
        in_target = tf.sequence_mask(result.lengths, shape[2])[..., None]  # (B, N, T, 1)
        return tf.where(in_target, rows, 0.0)

    def _translate(self, sentences, options, matmul_dtype=None):
        """All outputs with an n-best axis N: `(batch, N, ...)`. `piece_scores` and
        `word_scores` are as `align`'s, the pieces' log-probabilities being the search's:
        over the ids it may choose (PAD and BOS never, as in `align`; with a shortlist,
        the sentence's list)."""
        source = self._encode_sources(sentences)  # (batch, S)
        result, head = self._search(source, options, matmul_dtype)
        batch, n_best = tf.shape(result.tokens)[0], tf.shape(result.tokens)[1]
        flat = lambda t: tf.reshape(t, tf.concat([[-1], tf.shape(t)[2:]], 0))  # noqa: E731
        tokens, lengths = flat(result.tokens), flat(result.lengths)  # (B*N, T), (B*N,)
        sources = tf.repeat(sentences, n_best)
        head = result.attention if head is None else head
        out = from_attention.signature_outputs(
            self.source_tokenizer, self.target_tokenizer, sources,
            tf.repeat(source, n_best, axis=0), tokens, lengths, flat(head),
            options["replace_unknown"], attention=flat(result.attention),
            link_rule=self.link_rule, piece_log_probs=flat(result.piece_log_probs),
        )
        unflat = lambda t: tf.reshape(t, tf.concat([[batch, n_best], tf.shape(t)[1:]], 0))  # noqa: E731
        out = {key: unflat(value) for key, value in out.items()}
        out["scores"] = result.scores
        return out

    @tf.function(input_signature=[_STRINGS, *_OPTION_SPECS.values()])
    def translate_with_options(self, sentences, beam_size, max_length_ratio, max_length_offset,
                               length_penalty, coverage_penalty, n_best, replace_unknown):
        """Translation with explicit decoding options; outputs have an n-best axis."""
        options = _named_options(beam_size, max_length_ratio, max_length_offset,
                                 length_penalty, coverage_penalty, n_best, replace_unknown)
        return self._translate(sentences, options)

    @tf.function(input_signature=[_STRINGS])
    def translate(self, sentences):
        """Decoding with the model's default options (`default_options`); outputs without
        the n-best axis."""
        out = self.translate_with_options(sentences, **self.default_options)
        return {key: value[:, 0] for key, value in out.items()}

    @tf.function(input_signature=[_STRINGS])
    def translate_greedy(self, sentences):
        """Greedy decoding, used for fast dev evaluation during training."""
        options = {**DEFAULT_OPTIONS, "beam_size": 1}
        out = self.translate_with_options(sentences, **options)
        return {key: value[:, 0] for key, value in out.items()}

    def _banned_specials(self) -> tf.Tensor:
        """`(V,)`: -inf at PAD and BOS, 0 elsewhere. They never occur inside a target
        sentence (an untrained or weak model could still pick them), so neither the
        search nor forced decoding gives them probability."""
        vocab = tf.range(self.model.config.target_vocab_size)  # (V,)
        return tf.where((vocab == PAD_ID) | (vocab == BOS_ID), float("-inf"), 0.0)

    @tf.function(input_signature=[_STRINGS, _STRINGS])
    def align(self, sources, targets):
        """Forced decoding of given pairs: attention and word links of `targets`.

        `translations` are the targets as given, and word indices count their
        whitespace words; `scores` are total log-probabilities (not
        length-normalised), `piece_scores` and `word_scores` the pieces' and
        the target words' (see `nmt.alignment.from_attention.signature_outputs`).
        """
        tf.debugging.assert_equal(
            tf.size(sources), tf.size(targets), message="align needs one target per source"
        )
        source = self._encode_sources(sources)  # (batch, S)
        target_ids = self.target_tokenizer.tokenize(targets)[:, : MAX_SENTENCE_TOKENS - 1]
        target_ids = tf.cast(target_ids, tf.int32)
        bos = tf.fill([target_ids.nrows(), 1], BOS_ID)
        eos = tf.fill([target_ids.nrows(), 1], EOS_ID)
        target_in = _dense(tf.concat([bos, target_ids], axis=1))  # (batch, T)
        target_out = _dense(tf.concat([target_ids, eos], axis=1))  # (batch, T)
        out = self.model.teacher_forced(source, target_in, target_out, training=False)
        logits, weights = out["logits"], out.get("head", out["attention"])
        lengths = tf.cast(tf.reduce_sum(tf.cast(target_out > 0, tf.int32), axis=1), tf.int32)
        # Normalised as the search normalises (without a shortlist): a translation's
        # pieces then score the same whether searched or aligned.
        log_probs = tf.nn.log_softmax(logits + self._banned_specials())
        token_log_probs = tf.gather(log_probs, target_out, batch_dims=2)  # (batch, T)
        # Target pieces are never PAD or BOS; 0 (PAD) only fills the rows' padding.
        token_log_probs = tf.where(target_out > 0, token_log_probs, 0.0)
        out = from_attention.signature_outputs(
            self.source_tokenizer, self.target_tokenizer, sources, source, target_out,
            lengths, weights, tf.constant(False), targets=targets, attention=out["attention"],
            link_rule=self.link_rule, piece_log_probs=token_log_probs,
        )
        out["scores"] = tf.reduce_sum(token_log_probs, axis=1)
        return out


def _named_options(*values) -> dict:
    """The option arguments of a `translate_with_options` function, by name (in the
    order of `_OPTION_SPECS`)."""
    return dict(zip(_OPTION_SPECS, values, strict=True))


def _dense(ids: tf.RaggedTensor) -> tf.Tensor:
    """Ragged ids -> int32 `(batch, L)` padded with 0, with L >= 1.

    An empty batch would otherwise give L = 0, which the RNNs cannot run over.
    """
    ids = tf.cast(ids.to_tensor(), tf.int32)
    return tf.pad(ids, [[0, 0], [0, tf.maximum(1 - tf.shape(ids)[1], 0)]])


# How an exported graph translates: all float32, or the matrix products of the encoder and
# the search step in bfloat16 (float32 weights cast once per call; AMX or AVX512-BF16 make
# them faster). An export carries one path or both (`nmt.inference.precision`).
EXPORT_PRECISIONS = {FLOAT32: tf.float32, BFLOAT16: tf.bfloat16}


def build_module(config: ModelConfig, tokenizers: TokenizerPair,
                 metadata: dict | None = None, precision: str = "float32",
                 shortlist: Shortlist | None = None) -> TranslationModule:
    """A fresh (untrained) model wrapped in a `TranslationModule`.

    Args:
        precision: one of `nmt.inference.precision.EXPORT_CHOICES`: `both` (float32 in the
            standard functions and signatures, bfloat16 products in parallel ones),
            or the one path `float32` or `bfloat16`. The metadata records
            `precision` (the standard signatures' path) and `precisions` (all).
        shortlist: see `TranslationModule`.
    """
    paths = export_paths(precision)
    model = Seq2Seq(config, dtype="float32")
    model.build_for()
    metadata = {**(metadata or {}), "precision": paths[0], "precisions": list(paths)}
    return TranslationModule(model, tokenizers, metadata,
                             matmul_dtype=EXPORT_PRECISIONS[paths[0]], shortlist=shortlist,
                             parallel_precisions=paths[1:])


def _with_shortlist_settings(metadata: dict, shortlist: Shortlist | None) -> dict:
    """`metadata` whose "shortlist" entry describes `shortlist` (kept facts such as
    its corpus stay), or has none without one."""
    metadata = dict(metadata)
    if shortlist is None:
        metadata.pop("shortlist", None)
    else:
        metadata["shortlist"] = {**metadata.get("shortlist", {}), **shortlist.settings}
    return metadata


def export_saved_model(module: TranslationModule, base_dir: str | os.PathLike,
                       version: int, *, overwrite: bool = False) -> Path:
    """Writes `<base_dir>/<version>/` in the TensorFlow Serving layout.

    Signatures: `serving_default` (sentences -> best translation and
    alignments), `translate_with_options` (explicit decoding options, n-best
    axis) and `align` (sources, targets -> forced alignment), in the module's
    first path; for each further path `p`, `serving_<p>` and
    `translate_with_options_<p>` (`nmt.inference.precision`). The metadata records the
    paths (`precision`: the standard signatures', `precisions`: all).

    The export is written under a temporary name and renamed into place, so a
    server watching `base_dir` never sees a half-written version. With
    `overwrite`, an existing version is replaced (to re-export it after a
    change of the export format).
    """
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"version must be a positive integer. Received: version={version!r}")
    path = Path(base_dir) / str(version)
    if path.exists() and not overwrite:
        raise ValueError(f"{path} already exists; choose a new version number.")
    staging = Path(base_dir) / f".{version}.partial"
    shutil.rmtree(staging, ignore_errors=True)
    signatures = {
        "serving_default": module.translate,
        "translate_with_options": module.translate_with_options,
        "align": module.align,
    }
    default = module.precisions[0]
    for precision in module.precisions[1:]:
        for name, function in (("serving_default", "translate"),
                               ("translate_with_options", "translate_with_options")):
            signatures[signature_name(name, precision, default)] = module.path_function(
                function, precision)
    tf.saved_model.save(module, str(staging), signatures=signatures)
    config = module.model.config
    metadata = {"attention": config.architecture_name(), **module.metadata,
                "precision": default, "precisions": list(module.precisions),
                "model_config": config.to_dict()}
    (staging / METADATA_PATH).parent.mkdir(exist_ok=True)
    (staging / METADATA_PATH).write_text(json.dumps(metadata, indent=2) + "\n")
    if path.exists():
        retired = Path(base_dir) / f".{version}.old"
        shutil.rmtree(retired, ignore_errors=True)
        path.rename(retired)
        staging.rename(path)
        shutil.rmtree(retired)
    else:
        staging.rename(path)
    return path


def read_metadata(version_dir: str | os.PathLike) -> dict:
    """The metadata written beside an exported SavedModel."""
    return json.loads((Path(version_dir) / METADATA_PATH).read_text())


def module_from_export(version_dir: str | os.PathLike,
                       precision: str | None = None) -> TranslationModule:
    """Rebuilds a `TranslationModule` from an export (to re-export without retraining),
    with the export's shortlist if it has one (`with_shortlist` changes it).

    Args:
        precision: as for `build_module`; None keeps the export's own paths.
    """
    version_dir = Path(version_dir)
    metadata = read_metadata(version_dir)
    config = ModelConfig.from_dict(metadata.pop("model_config"))
    precision = precision or export_flag(metadata)
    loaded = tf.saved_model.load(str(version_dir))
    tokenizers = TokenizerPair(
        source=SubwordTokenizer(_asset_bytes(loaded.source_tokenizer), "en"),
        target=SubwordTokenizer(_asset_bytes(loaded.target_tokenizer), "fr"),
        joint=False,
    )
    shortlist = None
    if hasattr(loaded, "shortlist_translations"):
        shortlist = Shortlist(frequent=loaded.shortlist_frequent.numpy(),
                              translations=loaded.shortlist_translations.numpy())
    module = build_module(config, tokenizers, metadata, precision, shortlist)
    checkpoint = tf.train.Checkpoint(model_weights=module.model_weights)
    status = checkpoint.read(str(version_dir / "variables" / "variables"))
    status.expect_partial().assert_existing_objects_matched()
    return module


def _asset_bytes(loaded_tokenizer) -> bytes:
    return tf.io.read_file(loaded_tokenizer.model_asset.asset_path).numpy()
