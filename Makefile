# Two commands do all set-up on a fresh machine with Python 3.11+ and make:
#   make run    reproduce the paper's figures on built-in defaults (writes out/)
#   make test   run the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the hot path mypyc compiles (acceptsim/sim/native.py's COMPILED): rebuilt when one of them changes
HOT := $(addprefix acceptsim/,$(shell $(PYTHON) acceptsim/sim/native.py))
NATIVE := $(VENV)/.native

.PHONY: run test check test-slow test-docs bench bench-instructions lint clean build build-pgo docs notebook notebooks

# install: pyproject.toml's build requirements first; then the hot path compiles with mypyc
# (setup.py: when a C compiler is present; one C file, about a minute on one core) while pip
# installs the package and everything else on another core (the pure-Python install of the
# package: the compiled modules land beside their sources either way)
$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -c "import subprocess, sys, tomllib; \
		requires = tomllib.load(open('pyproject.toml', 'rb'))['build-system']['requires']; \
		subprocess.run([sys.executable, '-m', 'pip', 'install', '--quiet', *requires], check=True)"
	$(BIN)/python setup.py --quiet build_ext --inplace & compiling=$$!; \
	ACCEPTSIM_PURE_PYTHON=1 $(BIN)/python -m pip install --quiet -e '.[dev]'; installed=$$?; \
	wait $$compiling && exit $$installed
	touch $(STAMP) $(NATIVE)

# recompile the hot path after an edit, or when the list of compiled modules changes (until
# then its Python sources run: acceptsim/sim/native.py);
# not when the build already matches the sources (as right after the install)
$(NATIVE): $(STAMP) $(HOT) acceptsim/sim/native.py
	$(BIN)/python -W ignore -c "from acceptsim.sim import native; raise SystemExit(not native.is_compiled())" \
		|| $(BIN)/python setup.py --quiet build_ext --inplace
	touch $(NATIVE)

build: $(NATIVE)

# the hot path compiled again, laid out by a profile of its own (GCC: build with counters,
# a training run of the bench's servers (seconds), build again; about three minutes, 4-9% less
# CPU a run of the compiled servers: setup.py, PGO_*); `make build` keeps it until a
# compiled source changes
build-pgo: $(STAMP)
	ACCEPTSIM_PGO=1 $(BIN)/python setup.py --quiet build_ext --inplace
	touch $(NATIVE)

run: $(NATIVE)
	$(BIN)/acceptsim reproduce --out out

# on every core (pytest-xdist), each test module on one worker: its module-wide fixtures
# are made once; everything but the slow checks, the benchmarks and the documentation
# build (pyproject.toml's -m; `make test-docs`)
test: $(NATIVE)
	$(BIN)/python -m pytest -n auto --dist loadscope

# the edit-test loop's fast subset (about 20 s on 2 cores): the engine, the kernel and TCP,
# parameters, the accept phase, closed forms, the invariants' property tests, the
# recorded runs' and users' files; `make test` runs everything
CHECK_TESTS := tests/test_engine.py tests/test_kernel.py tests/test_tcp.py \
	tests/test_params.py tests/test_accept_phase.py tests/test_closed_form.py \
	tests/test_invariants.py tests/test_haproxy.py tests/test_user_files.py \
	tests/test_small_items.py tests/test_stats.py tests/test_bandwidth.py \
	tests/test_client_loop.py tests/test_workloads.py tests/test_record.py
check: $(NATIVE)
	$(BIN)/python -m pytest -n auto --dist loadscope $(CHECK_TESTS)

test-slow: $(NATIVE)
	$(BIN)/python -m pytest -m slow

# the documentation site built as `make docs` builds it (into a temporary folder), with
# every notebook executed, and checked (tests/test_docs.py; .ci/run runs it after `make test`)
test-docs: $(NATIVE)
	$(BIN)/python -m pytest -m docs tests/test_docs.py

bench: $(NATIVE)
	$(BIN)/python -m pytest -m bench -s

bench-instructions: $(NATIVE)
	$(BIN)/python tools/instructions.py

# the documentation site (docs/_build/html): notebooks executed, API from docstrings;
# any warning fails the build
docs: $(NATIVE)
	$(BIN)/sphinx-build -W --keep-going -b html docs docs/_build/html

# JupyterLab on docs/notebooks/ (the `notebooks` extra: JupyterLab and ipywidgets, installed
# into .venv on first use)
NOTEBOOKS := $(VENV)/.notebooks
$(NOTEBOOKS): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,notebooks]'
	touch $(NOTEBOOKS)

notebook: $(NATIVE) $(NOTEBOOKS)
	$(BIN)/jupyter lab docs/notebooks

# every notebook of docs/notebooks executed headless (nbclient, the kernel in the notebook's
# folder), a line per notebook on the terminal with its cells as they finish; nothing is
# written back, so the checkout stays as it was.  SCALE=small runs them as the tests do
# (seconds each); the default is the notebooks' own scale (minutes each).
define RUN_NOTEBOOKS
import sys, time
from pathlib import Path
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
paths = [Path(p) for p in sys.argv[1:]]
for i, path in enumerate(paths, 1):
    notebook = nbformat.read(path, as_version=4)
    code = [n for n, c in enumerate(notebook.cells) if c.cell_type == "code"]
    started = time.perf_counter()
    head = f"[{i}/{len(paths)}] {path.name}"
    def show(cell, cell_index, **_):
        done = code.index(cell_index) + 1 if cell_index in code else 0
        print(f"\r{head}: cell {done}/{len(code)}, {time.perf_counter() - started:.0f} s",
              end="", flush=True)
    client = NotebookClient(notebook, timeout=3600, kernel_name="python3",
                            on_cell_executed=show,
                            resources={"metadata": {"path": str(path.parent.resolve())}})
    try:
        client.execute()
    except CellExecutionError as exc:
        print(f"\n{head}: failed: {exc.ename}: {exc.evalue}", file=sys.stderr)
        sys.exit(1)
    print(f"\r{head}: {len(code)} cells, {time.perf_counter() - started:.0f} s" + " " * 10)
endef
export RUN_NOTEBOOKS

notebooks: $(NATIVE)
	$(if $(SCALE),ACCEPTSIM_NOTEBOOK_SCALE=$(SCALE)) $(BIN)/python -c "$$RUN_NOTEBOOKS" docs/notebooks/*.ipynb

lint: $(STAMP)
	$(BIN)/ruff check acceptsim tests tools setup.py

clean:
	rm -rf $(VENV) out build docs/_build docs/jupyter_execute docs/_generated
	find acceptsim -name '*.so' -delete
	rm -f acceptsim/_hot__mypyc*.so
