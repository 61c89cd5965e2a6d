PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: run test clean

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

run: $(VENV)/.installed
	$(PY) -m jobs.launch

test: $(VENV)/.installed-dev
	$(PY) -m pytest

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
