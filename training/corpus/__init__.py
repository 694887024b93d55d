"""Building a training corpus: a recipe of sources (`spec`), pair rules (`filters`), and the
build with its held-out splits and manifest (`build`); the broad corpus's sources rebuilt
from their public repositories (`fetch`, with `download` and `sources`)."""
