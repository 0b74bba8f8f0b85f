# gpufleet — the two entry points a fresh machine needs: `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LINK := collections/ansible_collections/gpufleet/acceptance
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
SANITY_PYTHON ?= 3.11

.PHONY: demo test venv test-venv link unit unit-timed static static-timed shipped-defaults sanity lint imports types
.PHONY: install-check clean molecule molecule-provision timing timing-quick system-packages ee slurm

link: $(LINK)
$(LINK):
	mkdir -p $(dir $(LINK))
	ln -sfn ../../.. $(LINK)

# The CLI and its collection alone: what `make demo` runs.
venv: $(STAMP)
$(STAMP): pyproject.toml | $(LINK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $(STAMP)

# The same environment with the test extras (pytest, ansible-lint, molecule, the cuBLAS wheel, ...): `make test`
# and its parts. `make demo` does not install them.
test-venv: $(TEST_STAMP)
$(TEST_STAMP): $(STAMP)
	$(BIN)/pip install -q -e '.[test]'
	touch $(TEST_STAMP)

# The replayed demo fleet (inventories/simulated/): `gpufleet demo` builds the replay wrappers
# and sysfs trees of every host (tests/output/simulated, rebuilt each time: fast and idempotent), runs
# validate_cluster.yml on all of them through ansible-runner (progress per phase on stderr), and prints
# the summary table and the report's path (results in tests/output/demo/<UTC timestamp>/).
demo: venv
	ANSIBLE_CONFIG=ansible.cfg $(BIN)/gpufleet demo

# The pytest suite (all but the end-to-end run) on three workers, whole files each (--dist loadfile keeps a file's
# module-scoped fleet in one worker; tests/conftest.py gives each worker its own replayed demo fleet). Most of it waits
# on ansible-playbook, ssh and shaped links, so a third worker fills the cores the others leave idle. testpaths lists
# the long files' folders first, and --no-loadscope-reorder keeps that order (xdist would otherwise start the files
# with the most tests first, and the longest file, with two tests, started last and ran alone for its last 45 s).
# No test asserts on CPU load: `make test` runs this beside `static`.
UNIT_WORKERS ?= 3
unit: test-venv
	$(BIN)/pytest -q -n $(UNIT_WORKERS) --dist loadfile --no-loadscope-reorder -m "not shipped_defaults" --durations=15

# The end-to-end run with the shipped defaults (root, SSH fleet): provision.yml builds nccl-tests from a source
# archive, then validate_cluster.yml at level standard with nothing overridden, one host throttled and the others the
# control (tests/sshfleet/test_shipped_defaults.py). Alone, after `unit`: it times links, so it runs when nothing else
# loads this machine (about 4 minutes); -rP prints its rounds, the named host and each phase's wall time.
shipped-defaults: test-venv
	$(BIN)/pytest -q -p no:xdist -rP -m shipped_defaults tests/sshfleet/test_shipped_defaults.py

# ansible-test runs on a copy of the tracked tree (see the script for why).
sanity: test-venv
	tests/tools/ansible_test_sanity.sh $(BIN) $(SANITY_PYTHON)

lint: test-venv
	$(BIN)/ansible-lint --profile production

# The import layers of gpufleet/ (pyproject.toml [tool.importlinter]): a stage imports only the stages
# below it. No cache: it would be written into the working tree.
imports: test-venv
	$(BIN)/lint-imports --no-cache

# mypy on the library ([tool.mypy] in pyproject.toml): every stage at mypy's default settings, and parsers, facts and
# checks at the --strict flags. Its cache goes to a temporary directory, not into the working tree.
types: test-venv
	cache="$$(mktemp -d)" && trap 'rm -rf "$$cache"' EXIT && $(BIN)/mypy --cache-dir "$$cache"

# The Molecule scenario (root: network namespaces, sshd, tc): a 3-host SSH fleet, gather_facts
# over SSH, facts checked against the recordings (molecule/default).
molecule: test-venv
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/molecule test -s default

# Provisioning on the SSH fleet (root): provision.yml converges, a second converge changes
# nothing, then the all-reduce stand-in runs across 3 hosts with the generated mpirun launcher
# (molecule/provision).
molecule-provision: test-venv
	PATH=$(abspath $(BIN)):$$PATH $(BIN)/molecule test -s provision

# The system programs the suite needs (tests/tools/system_packages.sh has the list): silent when all are
# there; as root it installs the missing ones' Debian packages, otherwise it stops naming the command.
system-packages:
	PYTHON=$(PYTHON) tests/tools/system_packages.sh

# Both install routes from a clean copy of the tree (docs/install.md): `pip install .` then `gpufleet demo`
# elsewhere; the wheel's contents; ansible-galaxy build + install, then the playbook by its FQCN.
install-check: test-venv
	PYTHON=$(PYTHON) tests/install/check_install.sh

# The static checks (import layers, types, ansible-lint, ansible-test sanity), the install check and the Molecule
# scenarios, one after the other (each is mostly one process on one core, or waits on SSH).
static: test-venv
	$(MAKE) --no-print-directory -j1 imports types lint sanity install-check molecule molecule-provision

# `make test`: the pytest suite beside `static` (each part's output printed whole when it ends), then the end-to-end
# run alone on the machine. Molecule runs in `static`: its scenarios assert files, exit codes and what a parser read,
# never a rate or a duration. Each part's wall time is printed (timings: lines), so a slow part is seen in CI's log.
TIMED = tests/tools/timed.sh
test: system-packages
	$(TIMED) "unit+static" $(MAKE) --no-print-directory -j2 --output-sync=target unit-timed static-timed
	$(TIMED) shipped-defaults $(MAKE) --no-print-directory shipped-defaults

unit-timed: test-venv
	$(TIMED) unit $(MAKE) --no-print-directory unit
static-timed: test-venv
	$(TIMED) static $(MAKE) --no-print-directory static

# Speed at fleet scale (not part of `make test`; root for the SSH fleet; about an hour on
# 2 cores): validate_cluster.yml against 5 trivial tasks on 16/64/256 replayed and 8/32 SSH hosts,
# 3 runs each, the report of 1,024 synthetic nodes, the bad-node search; writes its tables into
# docs/performance.md. TIMING_ARGS=--quick is the few-minute smoke run. (gather_facts.yml alone,
# stock vs Mitogen: benchmarks/time_gather_facts.py --update-doc docs/performance.md.)
timing: test-venv
	$(BIN)/python benchmarks/fleet_scale.py --update-doc docs/performance.md $(TIMING_ARGS)

# The timing guard (not part of `make test`; about 3 minutes on 2 cores): the controller CPU-s ratio of a level-quick
# validation to the 5-task baseline at 64 local hosts, and the report's CPU-s at 1,024 nodes, against
# benchmarks/budget.json (fails when either is more than 25 % above it). Run it before and after a change to a run's
# hot path; docs/performance.md says when.
timing-quick: test-venv
	$(BIN)/python benchmarks/timing_quick.py $(TIMING_ARGS)

# The execution environment for AWX / Automation Platform (execution-environment.yml): the library's wheel and the
# collection's archive into build/ee/artifacts, then ansible-builder's build context in build/ee/context (no container
# engine needed; `podman build -f build/ee/context/Containerfile build/ee/context` builds the image).
ee: test-venv
	rm -rf build/ee && mkdir -p build/ee/artifacts
	$(BIN)/pip wheel -q --no-deps -w build/ee/artifacts .
	$(BIN)/ansible-galaxy collection build --output-path build/ee/artifacts . >/dev/null
	$(BIN)/ansible-builder create -f execution-environment.yml -c build/ee/context --output-filename Containerfile

# The real Slurm on an SSH fleet (root; tests/sshfleet/slurm.sh): srun as the benchmarks' launcher, the verdicts as
# drains, the health check program and the prolog gate. Part of `make test` (its files run in `unit`).
slurm: test-venv
	$(BIN)/pytest -q -p no:xdist tests/sshfleet/test_bench_allreduce.py tests/sshfleet/test_slurm_drain.py

clean:
	rm -rf $(VENV) tests/output collections/ansible_collections
