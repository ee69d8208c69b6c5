# The two commands of the README: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed

.PHONY: run demo test test-floor lint bench clean system-deps system-deps-test \
        package package-check install-desktop uninstall-desktop typecheck icons

run: system-deps $(STAMP)
	$(BIN)/gpuwatch

demo: system-deps $(STAMP)
	$(BIN)/gpuwatch gui --demo

# The suite runs on every core (pytest-xdist); TEST_JOBS=0 runs it in one process.
TEST_JOBS ?= auto
test: system-deps-test $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -n $(TEST_JOBS)
	$(BIN)/ruff check gpuwatch tests benchmarks

# The suite again with every dependency at the lowest version pyproject.toml allows.
FLOOR_VENV ?= .venv-floor
test-floor: system-deps-test
	test -x $(FLOOR_VENV)/bin/python || $(PYTHON) -m venv $(FLOOR_VENV)
	$(PYTHON) scripts/floor_constraints.py > $(FLOOR_VENV)/constraints.txt
	$(FLOOR_VENV)/bin/python -m pip install -q -c $(FLOOR_VENV)/constraints.txt -e '.[dev]'
	QT_QPA_PLATFORM=offscreen $(FLOOR_VENV)/bin/python -m pytest -q -n $(TEST_JOBS) -p no:cacheprovider

lint: $(STAMP)
	$(BIN)/ruff check gpuwatch tests benchmarks

# The standalone one-folder build, dist/gpuwatch (PyInstaller goes into the venv).
package: $(STAMP)
	PYTHON=$(BIN)/python packaging/build.sh

# CI's packaging checks: the desktop entry and AppStream metainfo validate, the icon's
# PNGs are all there, the bundle builds, and the frozen binary passes its smoke test.
package-check: system-deps-test $(STAMP)
	desktop-file-validate packaging/gpuwatch.desktop
	appstreamcli validate --no-net packaging/io.github.gpuwatch.gpuwatch.metainfo.xml
	$(BIN)/python scripts/render_icons.py --check
	PYTHON=$(BIN)/python packaging/build.sh
	packaging/smoke.sh dist/gpuwatch

# The launcher entry, icon, metainfo and completions for this user, running this venv's
# gpuwatch (packaging/install.sh --bundle dist/gpuwatch installs the bundle instead).
install-desktop: $(STAMP)
	packaging/install.sh --exec $(BIN)/gpuwatch

uninstall-desktop:
	packaging/install.sh --uninstall

# Typed: the public library parts (the estimator, the in-process probe, the planner),
# and the advisor with the core it reads.
typecheck: $(STAMP)
	$(BIN)/mypy gpuwatch/budget gpuwatch/probe gpuwatch/plan gpuwatch/advisor gpuwatch/core

# The application icon's PNGs, rendered again from its SVG.
icons: $(STAMP)
	$(BIN)/python scripts/render_icons.py

bench: $(STAMP)
	$(BIN)/python benchmarks/sampler.py

system-deps:
	@scripts/system-deps.sh

system-deps-test:
	@scripts/system-deps.sh test

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

clean:
	rm -rf $(VENV) $(FLOOR_VENV) .pytest_cache .ruff_cache build dist *.egg-info
