"""Building a training corpus: a recipe of sources (`spec`), pair rules (`filters`), and the
build with its held-out splits and manifest (`build`)."""
