# Two commands do all set-up on a fresh machine with Python 3.11+ and make:
#   make run    reproduce the paper's figures on built-in defaults (writes out/)
#   make test   run the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-slow bench bench-instructions lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/acceptsim reproduce --out out

test: $(STAMP)
	$(BIN)/python -m pytest

test-slow: $(STAMP)
	$(BIN)/python -m pytest -m slow

bench: $(STAMP)
	$(BIN)/python -m pytest -m bench -s

bench-instructions: $(STAMP)
	$(BIN)/python tools/instructions.py

lint: $(STAMP)
	$(BIN)/ruff check sim models acceptsim tests tools

clean:
	rm -rf $(VENV) out
