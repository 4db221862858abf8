# The developer loop. Every target installs what it needs by itself; CI runs `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
export PYTHONPATH := $(CURDIR):$(CURDIR)/receiver-kit
# Modules are compiled once, by the first process that imports them, and kept in .venv/pycache
# (never beside the sources): uv installs without compiling, and where the environment says
# PYTHONDONTWRITEBYTECODE each of a test run's hundreds of processes compiled all it imported.
export PYTHONDONTWRITEBYTECODE :=
export PYTHONPYCACHEPREFIX := $(CURDIR)/$(VENV)/pycache
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_VERSION_CHECK := 1

.PHONY: run test coverage lint format synth deploy dist bench simulate clean browser smoke verify mutation chaos docs

# The pinned requirements go in with uv (pinned too): it fetches and unpacks in parallel, about 5 s
# where pip took 70 on a clean clone. Where uv cannot be had or cannot reach the index (it reads no
# pip.conf), pip installs them as before. The project itself is installed editable, without
# dependencies (they are the pinned ones just installed): that is what puts `sundial` in .venv/bin.
# Its distribution was `sundial` before 0.2.0 (now `sundial-scheduler`): a venv made then loses it.
UV_VERSION := 0.13.9
$(STAMP): requirements.txt requirements-cli.txt requirements-dev.txt requirements-awscli.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	{ $(PY) -m pip install --quiet uv==$(UV_VERSION) && \
		$(VENV)/bin/uv pip install --quiet --python $(PY) -r requirements-dev.txt && \
		{ $(VENV)/bin/uv pip uninstall --quiet --python $(PY) sundial 2>/dev/null || true; } && \
		$(VENV)/bin/uv pip install --quiet --python $(PY) --no-deps --editable .; } || \
		{ echo "uv did not install the requirements: pip will"; \
		$(PY) -m pip install --quiet --upgrade pip && $(PY) -m pip install --quiet -r requirements-dev.txt && \
		$(PY) -m pip install --quiet --no-deps --editable .; }
	$(VENV)/bin/uv pip install --quiet --python $(PY) --target $(VENV)/awscli -r requirements-awscli.txt || \
		echo "the AWS CLI was not installed in $(VENV)/awscli: its tests will skip"
	touch $@

# The console's browser tests drive Debian's chromium (tests/browser). Installed where this
# machine lets us (root and apt-get); elsewhere the browser tests skip and say why.
BROWSER ?= /usr/bin/chromium
browser:
	@test -x $(BROWSER) || { \
		if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
			echo "installing Debian's chromium for the browser tests"; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
		else echo "no $(BROWSER), and no root with apt-get to install it: the browser tests will skip"; fi; }

$(NODE_STAMP): package.json
	npm install --no-audit --no-fund --loglevel=error
	touch $@

run: $(STAMP)  ## the whole system on moto, API on http://127.0.0.1:$${SUNDIAL_PORT:-8080}
	$(PY) -W ignore::UserWarning -m local

# `make test` runs three things side by side: the lint, the infrastructure suite (a pytest of its
# own: its modules import the CDK, whose jsii runtime costs seconds of CPU in every process that
# collects them, and each pytest-xdist worker collects every test), and the other suites spread
# over TEST_WORKERS processes (pytest-xdist: one per core, and one each for the groups that hold a
# worker for minutes while mostly waiting: the OpenAPI fuzzer, the two e2e halves, the browser
# suite and the e2e files with runtimes of their own; at most 6;
# TEST_WORKERS=0 runs them in one process). Tests that share a costly session fixture run in one
# worker (tests/support/suites.py: --dist loadgroup; the e2e suite in two halves, a runtime each).
# A run that selects no test of its part (PYTEST_ARGS="-m unit": pytest's exit 5) is no failure.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 4 )))
PYTEST := $(PY) -m pytest -p no:cacheprovider -W ignore::UserWarning
test: $(STAMP) browser  ## lint and every suite (unit, integration, infrastructure, e2e, browser), in parallel
	@lint_log=$$(mktemp); infra_log=$$(mktemp); \
	( $(LINT) ) >$$lint_log 2>&1 & lint=$$!; \
	$(PYTEST) $(PYTEST_ARGS) tests/infrastructure >$$infra_log 2>&1 & infra=$$!; \
	$(PYTEST) -n $(TEST_WORKERS) --maxprocesses 6 --dist loadgroup --ignore=tests/infrastructure $(PYTEST_ARGS) tests; \
	suites=$$?; ((suites == 5)) && suites=0; \
	wait $$infra; infrastructure=$$?; ((infrastructure == 5)) && infrastructure=0; \
	wait $$lint; linted=$$?; \
	echo "--- the infrastructure suite (tests/infrastructure; ran alongside): $$( ((infrastructure)) && echo FAILED || echo passed)"; \
	cat $$infra_log; \
	echo "--- make lint (ruff check, ruff format --check, mypy, lint-imports; ran alongside the suites): $$( ((linted)) && echo FAILED || echo passed)"; \
	cat $$lint_log; rm -f $$lint_log $$infra_log; \
	exit $$(( suites || infrastructure || linted ))

# The suites as `make test` runs them, but in one pytest-xdist run (the infrastructure suite a
# worker's unit: one run combines every process's data), each process recording the lines it ran
# (pyproject.toml, [tool.coverage.run]); prints line coverage per module and in all.
coverage: $(STAMP) browser  ## line coverage of every suite (coverage.py), printed per module
	rm -rf .coverage-data && mkdir -p .coverage-data
	$(PYTEST) -n $(TEST_WORKERS) --maxprocesses 6 --dist loadgroup --cov --cov-report= $(PYTEST_ARGS) tests; \
	$(PY) -m coverage combine -q; $(PY) -m coverage report --sort=-miss | tail -45

LINT := $(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/mypy && $(VENV)/bin/lint-imports --no-logo
lint: $(STAMP)
	$(LINT)

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

synth: $(STAMP)  ## cdk.out/; fails on any cdk-nag finding (warnings too) or cfn-lint problem
	$(PY) -m infra.synth_check

# After the deploy, the admin key when the stack's table has none (a first deploy, or an upgrade from
# a version that kept it in Secrets Manager): made on this machine, its hash written to the table,
# the key printed once (docs/deploy.md, section 6); with one already, a line saying so.
deploy: synth $(NODE_STAMP)  ## deploys exactly the assembly `make synth` checked (AWS credentials, a bootstrapped account)
	CDK_DISABLE_CLI_TELEMETRY=1 npx --no-install cdk deploy --app cdk.out --all --require-approval broadening
	$(PY) -m sundial_cli admin-key create --if-missing

# The three wheels at the version in VERSION, into dist/: sundial-scheduler (the command line),
# sundial-scheduler-cdk (the construct library, with the functions' code) and sundial-receiver
# (release/dist.py; docs/construct.md, section 2).
dist: $(STAMP)  ## dist/: the wheels sundial-scheduler, sundial-scheduler-cdk and sundial-receiver, one version
	$(PY) -m release.dist --out dist

# Checks any running Sundial from outside, through its HTTP API (sundial_cli/smoke.py): make run's
# by default, else SUNDIAL_URL with SUNDIAL_API_KEY (docs/guide.md, "Checking a deployment").
smoke: $(STAMP)  ## one-shot, recurring, retry, dead letter and chain, each fired on time? (exit 1 if not)
	$(PY) -m sundial_cli.smoke $(ARGS)

bench: $(STAMP)  ## measured figures (docs/measured.md) (flags: make bench ARGS="--help")
	$(PY) -W ignore::UserWarning -m bench $(ARGS)

# Every order of the firing steps of each case, with a crash at every step (verify/; docs/design.md,
# "Exactly once, explored"); `make test` runs the bounded exploration too (tests/unit/test_explorer.py).
verify: $(STAMP)  ## explore every interleaving of the firing core's cases (deeper: make verify ARGS=--deep)
	$(PY) -m verify $(ARGS)

# Mutation testing of the firing core, its store and its domain rules ([tool.mutmut] in
# pyproject.toml): mutmut copies the code into mutants/ and runs there, so the tree's own
# PYTHONPATH must not reach its pytest. Prints the score and the surviving mutants' names.
mutation: $(STAMP)  ## mutants of the firing core against its unit, contract and explorer tests (not in make test)
	rm -rf mutants
	PYTHONPATH= $(VENV)/bin/mutmut run --max-children $$(nproc 2>/dev/null || echo 2) >/dev/null
	PYTHONPATH= $(PY) -m verify.mutation

# The local runtime under AWS's faults injected at random (local/faults.py, verify/chaos.py): lost,
# recorded twice, called twice, final states and lateness over --tasks occurrences.
chaos: $(STAMP)  ## the local runtime under AWS's faults (make chaos ARGS="--tasks 20000"; a fresh seed each run)
	$(PY) -W ignore::UserWarning -m verify.chaos $(ARGS)

simulate: $(STAMP)  ## the discrete-event model of the deployed system: docs/scale/*.png and results.md (docs/scale.md)
	$(PY) -m sim $(ARGS)

# The docs site (mkdocs.yml; mkdocs-material): README.md as the home page, docs/ the rest. --strict
# fails on a broken link or anchor, or a page left out of the nav (tests/unit/test_docs_site.py too).
docs: $(STAMP)  ## the docs site into site/ (mkdocs build --strict: broken links fail it)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict --site-dir site

clean:
	rm -rf cdk.out .build .pytest_cache .mypy_cache .ruff_cache site dist
