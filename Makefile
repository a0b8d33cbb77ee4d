# The two commands a fresh machine needs: `make evidence` and `make test` (see README.md).
PYTHON ?= $(shell if [ -x /usr/bin/python3.11 ]; then echo /usr/bin/python3.11; else command -v python3; fi)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: setup test test-all

setup: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

test: setup
	$(BIN)/ruff check symcc_ulfm tests
	$(BIN)/python -m pytest -m "not slow"

test-all: setup
	$(BIN)/ruff check symcc_ulfm tests
	$(BIN)/python -m pytest
