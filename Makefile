# icepark: two commands set everything up.
#   make test   creates the venv, installs everything (the reference engine too) and runs
#               ruff, mypy and the whole test suite
#   make docs   builds the documentation site (docs/, mkdocs.yml) into site/, warnings as errors
#   make demo   runs the main job on the embedded default catalog (./warehouse), or where
#               ICEPARK_WAREHOUSE says (s3://bucket/wh, with s3.* in ~/.icepark.yaml);
#               DEMO_ROWS sets its size, ICEPARK_SPARK_MASTER its Spark master
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
REF_VENV ?= .venv-ref
CLIENT_VENV ?= .venv-client
SHARED ?= ../shared
BIN := $(VENV)/bin
STAMP := $(VENV)/.icepark-installed

.PHONY: test demo docs install reference client-venv lint typecheck pytest plain-install bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# The Java reference engine (Iceberg 1.10.2 on Spark 3.5), for the interop tests.
reference:
	@if [ -x $(SHARED)/reference-iceberg/setup.sh ]; then \
	  bash $(SHARED)/reference-iceberg/setup.sh $(abspath $(REF_VENV)); \
	else echo "no $(SHARED)/reference-iceberg: interop tests will be skipped"; fi

# A Spark Connect client without a JVM (pyspark-client + icepark), for the Connect tests;
# made again only when pyproject.toml changes.
$(CLIENT_VENV)/.icepark-client: pyproject.toml | $(STAMP)
	bash scripts/make_client_venv.sh $(CLIENT_VENV) $(PYTHON)

client-venv: $(CLIENT_VENV)/.icepark-client

lint: $(STAMP)
	$(BIN)/ruff check icepark tests bench scripts
	$(BIN)/ruff format --check icepark

typecheck: $(STAMP)
	$(BIN)/mypy icepark

# Two workers for two cores; whole files stay on one worker so that each worker starts the
# reference engine and Spark at most once.
PYTEST_ARGS ?= -n 2 --dist loadfile

pytest: $(STAMP) reference client-venv
	PYTHONHASHSEED=0 $(BIN)/python -m pytest -q $(PYTEST_ARGS)

# The wheel installed without extras into a fresh venv: the CLI and a one-machine
# create/append/scan work there (every runtime import is a declared dependency).
plain-install: $(STAMP) | client-venv
	bash scripts/check_plain_install.sh $(BIN)/python

# The site, strictly (a broken link or reference fails). `make test` builds it too, inside
# the test run (tests/docs/test_site.py, beside the other worker), and runs its examples.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# The checks and the three environments are made side by side first (mostly downloads and
# unpacking, one core each; setuptools builds of this checkout wait for one another: they
# share its icepark.egg-info), then the tests.
test:
	$(MAKE) -j4 --output-sync=target lint typecheck plain-install reference client-venv
	$(MAKE) pytest

DEMO_ROWS ?= 2000000

demo: $(STAMP)
	$(BIN)/python -m icepark.spark.demo $(DEMO_ROWS)

bench: $(STAMP) reference
	$(BIN)/python -m bench.run

clean:
	rm -rf $(VENV) $(REF_VENV) $(CLIENT_VENV) .services warehouse site .pytest_cache .mypy_cache .ruff_cache
