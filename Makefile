# latentnb: the README's two commands are `make reproduce` and `make test`.
SHELL := /bin/bash
PY    := .venv/bin/python
VENV_STAMP := .venv/.installed
export LATENTNB_SOURCE_ORDER ?= local-first
export PYTHONUNBUFFERED := 1

.PHONY: help install data reproduce retrain smoke test gpu-check gpu-bundle lab site clean-venv chromium

help:
	@echo "make reproduce  - fresh machine: venv, pinned deps, data, run every notebook (profile quick), figures/ + figures/RESULTS.md"
	@echo "make test       - fresh machine: venv, notebooks clean + library in sync, nbdev_test (profile ci), pytest tests/"
	@echo "make retrain    - train every committed quick checkpoint from scratch (into data/retrained/quick/), then reproduce on them"
	@echo "make smoke      - every notebook under the paper profile, budgets x LATENTNB_BUDGET_SCALE (default 0.001), on this machine -> figures/SMOKE.md"
	@echo "make gpu-check  - on a CUDA machine: correctness vs CPU, search, Table III, an RQ1 cell, training, widgets -> benchmarks/gpu/ (MINUTES=9)"
	@echo "                  DRY_RUN=1: every step's code path on this CPU at ci scale (make test runs it)"
	@echo "make gpu-bundle - _build/gpu-bundle/ (< 60 MiB): what gpu-check reads + wheels a bare GPU machine lacks; see its README.md"
	@echo "make lab        - JupyterLab on the venv"

# --- environment -------------------------------------------------------------------------------------
$(VENV_STAMP): requirements.txt requirements-nodeps.txt requirements.lock setup.py settings.ini
	@free=$$(df -Pk . | awk 'NR==2 {print int($$4/1048576)}'); if [ ! -x $(PY) ] && [ "$$free" -lt 7 ]; then \
	  echo "error: installing the pinned dependencies needs about 7 GB free disk (the venv measured 6.8 GB with torch's CUDA build);" \
	       "$$free GB free on $$(df -P . | awk 'NR==2 {print $$6}'). Free space, or point TMPDIR and the checkout at a larger disk." >&2; exit 1; fi
	@test -x $(PY) || python3 -m venv .venv
	@echo "== installing pinned dependencies into .venv (first time: several minutes, ~7 GB with torch)"
	.venv/bin/pip install -q --disable-pip-version-check -r requirements.txt -c requirements.lock
	.venv/bin/pip install -q --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	.venv/bin/pip install -q --disable-pip-version-check --no-deps -e .
	@touch $(VENV_STAMP)

install: $(VENV_STAMP)

# Debian's apt lists may be empty on a fresh machine: refresh them once so the Fashion-MNIST source works.
data: $(VENV_STAMP)
	@if command -v apt-get >/dev/null && [ -z "$$(ls -A /var/lib/apt/lists 2>/dev/null | grep -v lock)" ]; then \
	  echo "== apt-get update (empty package lists)"; apt-get update -qq || true; fi
	.venv/bin/latentnb_fetch mnist fashion-mnist digits

# --- the two README commands -------------------------------------------------------------------------
reproduce: data
	LATENTNB_PROFILE=quick $(PY) tools/reproduce.py

# Every committed checkpoint trained from scratch in dependency order (about 4.8 h of training on the 2-core CPU, as
# recorded in the manifests), into data/retrained/<profile>/, then every notebook on those models.
retrain: data
	LATENTNB_PROFILE=quick $(PY) tools/retrain.py

# The `paper` profile end to end on a CPU: its models and methods, every budget scaled down (tools/smoke.py), in a scratch copy.
smoke: data
	LATENTNB_PROFILE=paper LATENTNB_BUDGET_SCALE=$${LATENTNB_BUDGET_SCALE:-0.001} $(PY) tools/smoke.py

# The GPU check (tools/gpu_check.py): MINUTES of steps that keep what finished; DRY_RUN=1 runs them on this CPU at ci scale.
gpu-check: data
	$(PY) tools/gpu_check.py --minutes $${MINUTES:-9} $(if $(DRY_RUN),--dry-run,)

# What gpu-check reads (its dry run records it) + the wheels a bare GPU machine lacks, in _build/gpu-bundle/ (under 60 MiB);
# its README.md has the line to run there and the device tool's recipe. `tools/gpu_bundle.py --check` then tests a copy of it.
gpu-bundle: data
	$(PY) tools/gpu_bundle.py

test: data chromium
	$(PY) tools/run_tests.py

# Best effort: Debian's chromium for the browser tests (tests/test_browser.py skips without it); never fails the build.
chromium:
	@if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else SUDO=no; fi; \
	  if [ "$$SUDO" != no ]; then \
	    echo "== installing Debian's chromium for the browser tests (best effort)"; \
	    export DEBIAN_FRONTEND=noninteractive; \
	    ( timeout 900 $$SUDO apt-get install -y -qq chromium >/dev/null 2>&1 || \
	      ( timeout 300 $$SUDO apt-get update -qq >/dev/null 2>&1; timeout 900 $$SUDO apt-get install -y -qq chromium >/dev/null 2>&1 ) ) \
	    || echo "   could not install chromium; the browser tests will be skipped"; \
	  else echo "== no root/sudo for apt-get: chromium not installed; the browser tests will be skipped"; fi; \
	fi; true

# --- extras --------------------------------------------------------------------------------------------
lab: $(VENV_STAMP)
	.venv/bin/jupyter lab --notebook-dir=nbs

site: $(VENV_STAMP)
	$(PY) tools/site.py

clean-venv:
	rm -rf .venv
