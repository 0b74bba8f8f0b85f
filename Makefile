# gpufleet — the two entry points a fresh machine needs: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LINK := collections/ansible_collections/gpufleet/acceptance
STAMP := $(VENV)/.installed
SANITY_PYTHON ?= 3.11
SANITY_DIR := $(abspath tests/output/sanity-tree)

.PHONY: demo test venv link unit sanity lint clean

link: $(LINK)
$(LINK):
	mkdir -p $(dir $(LINK))
	ln -sfn ../../.. $(LINK)

venv: $(STAMP)
$(STAMP): pyproject.toml | $(LINK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[test]'
	touch $(STAMP)

# Until the simulated fleet lands (issue 4), the demo parses every recorded tool output we
# ship with the same parsers the fact modules use.
demo: venv
	@set -e; for f in tests/fixtures/topo/gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt; do \
	  echo "== gpufleet parse topo $$f"; $(BIN)/gpufleet parse topo "$$f" | head -40; done

unit: venv
	$(BIN)/pytest -q

# ansible-test needs the collection at .../ansible_collections/gpufleet/acceptance and
# rejects directory links inside it, so it runs on a copy of the tracked tree.
sanity: venv
	@# ansible-test downloads a pip bootstrap script from a host these machines cannot reach;
	@# shared/tools holds a stand-in that bootstraps from the interpreter's own wheel.
	@if [ -f ../shared/tools/get_pip_offline.py ]; then mkdir -p ~/.ansible/test/cache && \
	  cp ../shared/tools/get_pip_offline.py ~/.ansible/test/cache/get_pip_24_2.py; fi
	rm -rf $(SANITY_DIR) && mkdir -p $(SANITY_DIR)/ansible_collections/gpufleet/acceptance
	git ls-files -z --cached --others --exclude-standard | grep -zv '^collections/' \
	  | xargs -0 cp --parents -t $(SANITY_DIR)/ansible_collections/gpufleet/acceptance
	cd $(SANITY_DIR)/ansible_collections/gpufleet/acceptance && git init -q && git add -A \
	  && PATH=$(abspath $(BIN)):$$PATH $(abspath $(BIN))/ansible-test sanity --local --python $(SANITY_PYTHON) --color no

lint: venv
	$(BIN)/ansible-lint --profile production

test: unit sanity lint

clean:
	rm -rf $(VENV) tests/output collections/ansible_collections
