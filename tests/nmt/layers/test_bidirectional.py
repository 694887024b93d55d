"""`bidirectional`: a wrapper built inside `load_model` gets its own two directions."""

import gc
import weakref

import keras
import numpy as np

from nmt.layers.bidirectional import bidirectional

WRAPPERS = 120  # plain `keras.layers.Bidirectional` failed here on 3 to 6 loads of 200 wrappers


@keras.saving.register_keras_serializable(package="nmt_tests")
class ManyDirections(keras.layers.Layer):
    """Builds its wrappers in `__init__`, as the encoder and the alignment head do, so that
    `load_model` builds them inside its object-sharing scope."""

    def __init__(self, count: int, **kwargs):
        super().__init__(**kwargs)
        self.count = count
        self.wrappers = [bidirectional(keras.layers.LSTM(1, return_sequences=True))
                         for _ in range(count)]

    def get_config(self):
        return {**super().get_config(), "count": self.count}

    def call(self, x):
        return ops_sum([wrapper(x) for wrapper in self.wrappers])


def ops_sum(values):
    return keras.ops.sum(keras.ops.stack(values), axis=0)


def test_every_wrapper_survives_a_save_and_load(tmp_path):
    inputs = keras.Input((3, 2))
    model = keras.Model(inputs, ManyDirections(WRAPPERS)(inputs))
    x = np.random.default_rng(0).normal(size=(2, 3, 2)).astype("float32")
    model.save(tmp_path / "model.keras")

    reloaded = keras.saving.load_model(tmp_path / "model.keras")

    wrappers = reloaded.layers[-1].wrappers
    assert [(w.forward_layer.go_backwards, w.backward_layer.go_backwards) for w in wrappers] == [
        (False, True)] * WRAPPERS
    directions = {id(w.forward_layer) for w in wrappers} | {id(w.backward_layer) for w in wrappers}
    assert len(directions) == 2 * WRAPPERS, "no direction shared between wrappers"
    np.testing.assert_allclose(reloaded(x), model(x), rtol=1e-6)


def test_the_given_layer_lives_on_beside_the_wrapper_not_in_it():
    given = keras.layers.LSTM(2, return_sequences=True)
    alive = weakref.ref(given)
    wrapper = bidirectional(given)
    del given
    gc.collect()
    assert alive() is not None, "its id cannot go to another layer while the wrapper lives"
    assert all(value is not alive() for value in vars(wrapper).values())
