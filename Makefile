# The developer loop. Every target installs what it needs by itself; CI runs `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NODE_STAMP := node_modules/.installed
export PYTHONPATH := $(CURDIR)
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_VERSION_CHECK := 1

.PHONY: run test lint format synth deploy bench clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

$(NODE_STAMP): package.json
	npm install --no-audit --no-fund --loglevel=error
	touch $@

run: $(STAMP)  ## the whole system on moto, API on http://127.0.0.1:$${SUNDIAL_PORT:-8080}
	$(PY) -W ignore::UserWarning -m local

test: $(STAMP) lint  ## lint, then every suite
	$(PY) -m pytest -p no:cacheprovider -W ignore::UserWarning tests

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports --no-logo

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

synth: $(STAMP)  ## cdk.out/; fails on any cdk-nag finding (warnings too) or cfn-lint problem
	$(PY) -m infra.synth_check

deploy: synth $(NODE_STAMP)  ## deploys exactly the assembly `make synth` checked (AWS credentials, a bootstrapped account)
	CDK_DISABLE_CLI_TELEMETRY=1 npx --no-install cdk deploy --app cdk.out --all --require-approval broadening

bench: $(STAMP)  ## measured figures for the README (flags: make bench ARGS="--help")
	$(PY) -W ignore::UserWarning -m bench $(ARGS)

clean:
	rm -rf cdk.out .build .pytest_cache .mypy_cache .ruff_cache .import_linter_cache
