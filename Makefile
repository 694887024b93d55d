# `make serve` sets everything up and starts the service; `make test` runs lint, the docs build
# and the tests (`make test-slow`: the slow end-to-end ones).
PY := .venv/bin/python
STAMP := .venv/.installed

export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: test test-slow serve bench install export docs

$(PY):
	python3 -m venv .venv

# Reinstall only when the package metadata or the build step changed. Every role and the
# test tools; the build step (setup.py) generates nmt_api/v1/*_pb2*.py in the checkout.
$(STAMP): pyproject.toml setup.py | $(PY)
	$(PY) -m pip install -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The tests on every core (pytest-xdist: a worker a core, at most 4, tests/conftest.py), a
# test module at a time per worker, so that a module's exports and servers are built once.
PYTEST := $(PY) -m pytest -n auto --dist loadfile

test: $(STAMP)
	.venv/bin/ruff check .
	$(MAKE) --no-print-directory docs
	$(PYTEST) -m "not slow"

# The end-to-end checks that `make test` leaves out (marked `slow`: training runs, the
# two-worker run, the client's own install, the backends compared); CI runs both.
test-slow: $(STAMP)
	$(PYTEST) -m slow

# The documentation site (docs/, mkdocs.yml), strict: a broken link or anchor, or a page
# missing from the nav, fails it.
docs: $(STAMP)
	$(PY) -m mkdocs build --strict --site-dir site

serve: $(STAMP)
	.venv/bin/nmt serve

# The figures in docs/performance.md (each script prints its machine); minutes, not hours.
bench: $(STAMP)
	$(PY) bench/decode_speed.py models/en-fr
	$(PY) bench/load_test.py
	$(PY) bench/batch_throughput.py --lines 20000 --serve
	$(PY) bench/train_speed.py --config training/configs/en-fr.yaml

# Rebuild the shipped SavedModel (its highest version, in place) from what is committed,
# after an export-format change.
export: $(STAMP)
	$(PY) -m nmt_cli export --from-export models/en-fr --out models/en-fr --overwrite
