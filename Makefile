# gpufleet — the two entry points a fresh machine needs: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LINK := collections/ansible_collections/gpufleet/acceptance
STAMP := $(VENV)/.installed
SANITY_PYTHON ?= 3.11
SANITY_DIR := $(abspath tests/output/sanity-tree)

.PHONY: demo test venv link unit sanity lint clean molecule timing

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

# The replayed demo fleet (inventories/simulated/, issue 4): build the replay wrappers and sysfs
# trees of every host (tests/output/simulated, rebuilt each time: fast and idempotent), then
# gather the facts of all of them; one summary line per host.
SIM_OUT := tests/output/simulated
demo: venv
	$(BIN)/python tests/replay/build_fleet.py --inventory inventories/simulated/hosts.yml --out $(SIM_OUT)
	set -o pipefail; ANSIBLE_CONFIG=ansible.cfg ANSIBLE_NOCOLOR=1 $(BIN)/ansible-playbook -i inventories/simulated/hosts.yml \
	  playbooks/gather_facts.yml 2>&1 | grep -E '^ +"msg": |^PLAY RECAP|^[a-z0-9-]+ +: ok='

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

# The Molecule scenario (root: network namespaces, sshd, tc): a 3-host SSH fleet, gather_facts
# over SSH, facts checked against the recordings (molecule/default).
molecule: venv
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/molecule test -s default

test: unit sanity lint molecule

# The timing harness (not part of `make test`; root for the SSH fleet; about 10 minutes):
# gather_facts.yml on 64 replayed local hosts and on an 8-host SSH fleet, stock and with
# Mitogen, 3 runs each; writes its table into docs/performance.md.
timing: venv
	$(BIN)/python benchmarks/time_gather_facts.py --update-doc docs/performance.md

clean:
	rm -rf $(VENV) tests/output collections/ansible_collections
