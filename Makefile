# `make serve` sets everything up and starts the service; `make test` runs lint and tests.
PY := .venv/bin/python
STAMP := .venv/.installed

export TF_CPP_MIN_LOG_LEVEL ?= 2

.PHONY: test serve bench install

$(PY):
	python3 -m venv .venv

# Reinstall only when the package metadata changed.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	.venv/bin/ruff check .
	$(PY) -m pytest

serve: $(STAMP)
	.venv/bin/nmt serve

bench: $(STAMP)
	@set -e; for script in bench/*.py; do echo "== $$script"; $(PY) $$script; done
