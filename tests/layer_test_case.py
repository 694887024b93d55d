"""`run_layer_test`: checks every custom Keras layer the same way.

Modelled on keras-hub's `TestCase.run_layer_test`: one call checks the config
round trip, a symbolic (KerasTensor) and an eager call, one `fit` step, saving
and reloading a `.keras` file, and a `mixed_bfloat16` run. Layer-specific
assertions go in the `check_outputs` callback, which sees every set of outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import keras
import numpy as np
import tensorflow as tf

OutputCheck = Callable[[keras.layers.Layer, list[np.ndarray], Mapping[str, np.ndarray]], None]


def run_layer_test(
    layer_cls: type[keras.layers.Layer],
    init_kwargs: Mapping[str, Any],
    call_kwargs: Mapping[str, np.ndarray],
    expected_output_shapes: list[tuple[int, ...]],
    tmp_path: Path,
    *,
    check_outputs: OutputCheck | None = None,
    expected_output_dtypes: list[str] | None = None,
    mixed_precision_dtypes: list[str] | None = None,
    seed: int = 0,
) -> None:
    """Runs the shared checks on `layer_cls(**init_kwargs)(**call_kwargs)`.

    Args:
        layer_cls: the layer class (registered as Keras serializable).
        init_kwargs: constructor arguments.
        call_kwargs: NumPy arrays passed by name to `call`; the first axis is
            the batch.
        expected_output_shapes: shapes of the flattened outputs, batch included.
        tmp_path: directory for the `.keras` file.
        check_outputs: `(layer, outputs, call_kwargs) -> None`, called on the
            eager outputs in float32 and under `mixed_bfloat16`.
        expected_output_dtypes: dtypes of the flattened float32 outputs.
        mixed_precision_dtypes: dtypes of the outputs under `mixed_bfloat16`.
        seed: seed of Keras' random generators.
    """
    keras.utils.set_random_seed(seed)
    check_config_round_trip(layer_cls, init_kwargs)
    model = _functional_model(layer_cls(**init_kwargs), call_kwargs, expected_output_shapes)
    layer = model.layers[-1]
    eager = _eager_outputs(layer, call_kwargs, expected_output_shapes, expected_output_dtypes)
    through_model = [np.asarray(x) for x in keras.tree.flatten(model(dict(call_kwargs)))]
    _assert_all_close(through_model, eager, "functional model vs eager layer call")
    if check_outputs is not None:
        check_outputs(layer, eager, call_kwargs)
    _check_saving(model, call_kwargs, eager, tmp_path / f"{layer_cls.__name__}.keras")
    _check_fit_step(model, call_kwargs, eager)
    _check_mixed_precision(
        layer_cls, init_kwargs, call_kwargs, expected_output_shapes, mixed_precision_dtypes,
        check_outputs,
    )


def check_config_round_trip(layer_cls, init_kwargs) -> keras.layers.Layer:
    """Checks that `get_config` records every constructor argument and revives the layer.

    A sublayer passed to the constructor is recorded serialized, as Keras 3
    does it (`keras.saving.serialize_keras_object`).

    Returns:
        The layer revived through the registry, as `keras.saving.load_model`
        does it, for layer-specific checks.
    """
    layer = layer_cls(**init_kwargs)
    config = layer.get_config()
    for key, value in init_kwargs.items():
        if key == "dtype":
            continue
        if isinstance(value, keras.layers.Layer):
            value = keras.saving.serialize_keras_object(value)
        assert config[key] == value, f"get_config()[{key!r}]={config[key]!r}, want {value!r}"
    assert layer_cls.from_config(config).get_config() == config
    revived = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer))
    assert type(revived) is layer_cls
    assert revived.get_config() == config
    return revived


def _functional_model(layer, call_kwargs, expected_output_shapes) -> keras.Model:
    """Calls `layer` on KerasTensors and checks the symbolic output shapes."""
    inputs = {
        name: keras.Input(shape=value.shape[1:], dtype=str(value.dtype), name=name)
        for name, value in call_kwargs.items()
    }
    outputs = layer(**inputs)
    flat = keras.tree.flatten(outputs)
    assert all(isinstance(x, keras.KerasTensor) for x in flat)
    symbolic_shapes = [tuple(x.shape) for x in flat]
    expected = [(None, *shape[1:]) for shape in expected_output_shapes]
    assert symbolic_shapes == expected, f"symbolic shapes {symbolic_shapes}, want {expected}"
    return keras.Model(inputs, flat)


def _eager_outputs(layer, call_kwargs, expected_shapes, expected_dtypes) -> list[np.ndarray]:
    tensors = {name: tf.constant(value) for name, value in call_kwargs.items()}
    outputs = keras.tree.flatten(layer(**tensors))
    shapes = [tuple(x.shape) for x in outputs]
    assert shapes == [tuple(s) for s in expected_shapes], f"eager shapes {shapes}"
    if expected_dtypes is not None:
        dtypes = [x.dtype.name for x in outputs]
        assert dtypes == expected_dtypes, f"eager dtypes {dtypes}, want {expected_dtypes}"
    return [np.asarray(x) for x in outputs]


def _check_saving(model, call_kwargs, expected, path: Path) -> None:
    model.save(path)
    reloaded = keras.saving.load_model(path)
    outputs = [np.asarray(x) for x in keras.tree.flatten(reloaded(dict(call_kwargs)))]
    _assert_all_close(outputs, expected, f"outputs after reloading {path.name}")


def _check_fit_step(model, call_kwargs, outputs) -> None:
    """One SGD step on a squared error to a shifted target must move the weights."""
    targets = [x + 1.0 for x in outputs]
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss=["mse"] * len(outputs))
    before = [w.numpy().copy() for w in model.trainable_weights]
    history = model.fit(dict(call_kwargs), targets, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    weights = model.trainable_weights
    stuck = [w.path for b, w in zip(before, weights, strict=True) if np.array_equal(b, w.numpy())]
    assert not stuck, f"fit did not update {stuck}"


def _check_mixed_precision(layer_cls, init_kwargs, call_kwargs, expected_shapes,
                           expected_dtypes, check_outputs) -> None:
    layer = layer_cls(**{**init_kwargs, "dtype": "mixed_bfloat16"})
    tensors = {name: tf.constant(value) for name, value in call_kwargs.items()}
    outputs = keras.tree.flatten(layer(**tensors))
    assert [tuple(x.shape) for x in outputs] == [tuple(s) for s in expected_shapes]
    if expected_dtypes is not None:
        dtypes = [x.dtype.name for x in outputs]
        assert dtypes == expected_dtypes, f"mixed_bfloat16 output dtypes {dtypes}"
    # Variables stay float32 under a mixed policy; only computations run in bfloat16.
    assert all(w.dtype == "float32" for w in layer.weights), [w.dtype for w in layer.weights]
    arrays = [np.asarray(tf.cast(x, tf.float32)) for x in outputs]
    assert all(np.isfinite(x).all() for x in arrays), "non-finite output under mixed_bfloat16"
    if check_outputs is not None:
        check_outputs(layer, arrays, call_kwargs)


def _assert_all_close(actual, expected, what: str, atol: float = 1e-6) -> None:
    assert len(actual) == len(expected), what
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        np.testing.assert_allclose(a, e, atol=atol, rtol=1e-6, err_msg=f"{what}: output {i}")
