# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The import layers of gpufleet/ hold: lint-imports (import-linter) keeps every contract of pyproject.toml.

The stages, highest first: cli and adapter (neither imports the other), report, history, results, checks, plan,
facts, parsers; a stage imports only the stages below it, parsers import no other stage, checks never import the
report or the CLI, and no stage below the two top ones imports Ansible (the adapter holds the plugin API). An
import that breaks a contract fails here (and in ``make imports``), naming the importing line.
"""

from __future__ import annotations

import os
import subprocess
import sys

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# lint-imports is installed next to the interpreter running the tests (the test extra of pyproject.toml).
LINT_IMPORTS = os.path.join(os.path.dirname(sys.executable), "lint-imports")
CONTRACTS = (
    "gpufleet stages import only the stages below them",
    "parsers import no other stage of gpufleet",
    "checks never import the report or the command line",
    "the library stages import no Ansible (the adapter and the CLI do)",
)


def test_every_import_contract_is_kept():
    # PYTHONPATH: the gpufleet/ of this checkout is the one analysed, whatever copy the venv holds;
    # no cache: it would be written into the working tree.
    env = dict(os.environ, PYTHONPATH=REPO_ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([LINT_IMPORTS, "--no-cache"], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    for name in CONTRACTS:
        assert "%s KEPT" % name in run.stdout, run.stdout
    assert "0 broken" in run.stdout, run.stdout
