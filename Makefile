# The two set-up commands of the README. Both create .venv when it is missing and install the
# project with its pinned extras; the stamp file re-installs only when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.kraftwire-installed

.PHONY: demo test generate clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m kraftwire.demo

test: $(STAMP)
	$(BIN)/python -m pytest

# Regenerate the bundled codecs after editing schemas/ or codegen/.
generate: $(STAMP)
	$(BIN)/kraftwire codegen --schemas schemas --out generated --package kraftwire.generated

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
