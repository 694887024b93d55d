"""`keras.layers.Bidirectional` that survives `keras.saving.load_model` every time."""

from __future__ import annotations

import weakref

import keras

# Each wrapper's given layer, kept alive as long as the wrapper (and out of its attributes,
# which Keras would save as a child layer).
_GIVEN = weakref.WeakKeyDictionary()


def bidirectional(layer: keras.layers.Layer, **kwargs) -> keras.layers.Bidirectional:
    """`keras.layers.Bidirectional(layer, **kwargs)`, with `layer` kept alive beside it.

    The wrapper builds its two directions by serialising `layer`, then drops it.
    Inside `load_model`, serialisation remembers objects by `id()`, so when a
    dropped layer's `id` went to the next wrapper's layer, Keras handed back
    the earlier wrapper's backward copy for both directions of the new one
    ("Forward layer and backward layer should have different `go_backwards`
    value"), a load that failed now and then. A layer kept alive keeps its `id`.
    """
    wrapper = keras.layers.Bidirectional(layer, **kwargs)
    _GIVEN[wrapper] = layer
    return wrapper
