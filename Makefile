PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

CATALOGS := $(patsubst %.po,%.mo,$(wildcard translations/*/LC_MESSAGES/messages.po))

.PHONY: run test tools clean messages

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements-dev.txt $(VENV)/.installed
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

# The pages' languages: compiled from the committed .po catalogs, never committed themselves.
translations/%.mo: translations/%.po $(VENV)/.installed
	$(VENV)/bin/pybabel compile -i $< -o $@

# After marking new text: collect it into every catalog, then translate what is new (docs/i18n.md).
messages: $(VENV)/.installed
	$(VENV)/bin/pybabel extract -F babel.cfg -k _l -k lazy_gettext -k lazy_pgettext:1c,2 --add-location=file --sort-by-file \
		--ignore-dirs=".* ._ .venv instance node_modules" -o translations/messages.pot .
	$(VENV)/bin/pybabel update -i translations/messages.pot -d translations --no-fuzzy-matching --ignore-obsolete \
		--ignore-pot-creation-date

run: $(VENV)/.installed $(CATALOGS)
	$(PY) -m jobs.launch

# What the suite runs besides Python, from Debian (never a downloaded build), as command:package:
# Chromium for the browser tests, PostgreSQL and Redis servers for the fault suite. What is missing is
# installed here as root, else the one command to run is said at once.
TOOLS := chromium:chromium pg_createcluster:postgresql redis-server:redis-server

tools:
	@missing=; for t in $(TOOLS); do command -v $${t%%:*} >/dev/null || missing="$$missing $${t#*:}"; done; \
	[ -z "$$missing" ] && exit 0; \
	[ "$$(id -u)" = 0 ] || { printf 'Missing for make test; run this, then make test again:\n  sudo apt-get install -y%s\n' "$$missing" >&2; exit 1; }; \
	echo "Installing$$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$$missing >/dev/null

test: tools $(VENV)/.installed-dev $(CATALOGS)
	$(PY) -m pytest

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis $(CATALOGS)
