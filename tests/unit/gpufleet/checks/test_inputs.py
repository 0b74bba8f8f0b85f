# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unknown gpufleet_* variables refused with the nearest known name; the known list complete."""

from __future__ import annotations

import os
import re

from gpufleet.checks import inputs
from gpufleet.checks.verdict import SETTINGS_VARS

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
# Where the collection names its variables: playbooks, roles, the example and simulated inventories, Molecule.
SCANNED = ("playbooks", "roles", "inventories", "molecule")
SCANNED_SUFFIXES = (".yml", ".yaml", ".j2", ".md", ".cfg", ".ini")
# A variable name: not part of a path (``files/gpufleet_torch_burn.py``, ``ssh/gpufleet_ed25519``), not a file
# name (``.py``/``.pub``) or a name built from a template (``gpufleet_ed25519{{ item }}``); a trailing ``_``
# is a documented prefix (``gpufleet_iperf3_*``), never matched whole.
VARIABLE = re.compile(r"(?<![/\w])(gpufleet_[a-z0-9_]*[a-z0-9])(?![\w{]|\.py\b|\.pub\b)")


def _names_used():
    used = {}
    for top in SCANNED:
        for folder, _dirs, files in os.walk(os.path.join(REPO_ROOT, top)):
            for name in files:
                if not name.endswith(SCANNED_SUFFIXES):
                    continue
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as handle:
                    for found in VARIABLE.findall(handle.read()):
                        used.setdefault(found, os.path.relpath(path, REPO_ROOT))
    return used


def test_every_gpufleet_variable_the_collection_uses_is_known():
    used = _names_used()
    assert "gpufleet_claim" in used and "gpufleet_perftest_tool" in used  # the scan reads the files at all
    missing = {name: where for name, where in used.items() if name not in inputs.KNOWN_VARIABLES}
    assert missing == {}, "add these to gpufleet/checks/inputs.py: %s" % missing


def test_the_checks_settings_are_known_inputs():
    assert set(SETTINGS_VARS) <= inputs.INPUT_VARIABLES


def test_misspelled_claim_and_profile_name_the_known_variable():
    assert inputs.unknown_variable("gpufleet_clam") == \
        "gpufleet_clam is not a gpufleet variable: did you mean gpufleet_claim?"
    assert inputs.unknown_variable("gpufleet_profle") == \
        "gpufleet_profle is not a gpufleet variable: did you mean gpufleet_profile?"
    assert inputs.nearest_input("gpufleet_profile_override") == "gpufleet_profile_overrides"
    assert inputs.nearest_input("gpufleet_benchmark") == "gpufleet_benchmarks"
    assert inputs.nearest_input("gpufleet_burnin") == "gpufleet_burn_in"


def test_nothing_close_says_so_without_a_guess():
    assert inputs.nearest_input("gpufleet_colour") is None
    assert inputs.unknown_variable("gpufleet_colour").startswith(
        "gpufleet_colour is not a gpufleet variable (the known ones: ")


def test_names_the_collection_sets_itself_are_known_but_never_suggested():
    assert "gpufleet_run" in inputs.KNOWN_VARIABLES and "gpufleet_run" not in inputs.INPUT_VARIABLES
    # gpufleet_verdic is one letter from gpufleet_verdict (a registered result), not from any input
    assert inputs.nearest_input("gpufleet_verdic") != "gpufleet_verdict"


def test_host_variable_problems_per_host_only_for_gpufleet_names():
    names_of = {
        "node-b": ["gpufleet_profle", "gpufleet_claim", "ansible_host", "burn_in_seconds"],
        "node-a": ["gpufleet_clam", "gpufleet_results_dir", "gpufleet_run"],
        "node-c": ["gpufleet_claim", "gpufleet_profile"],
    }
    assert inputs.host_variable_problems(names_of) == [
        "node-a: gpufleet_clam is not a gpufleet variable: did you mean gpufleet_claim?",
        "node-b: gpufleet_profle is not a gpufleet variable: did you mean gpufleet_profile?",
    ]
    assert inputs.host_variable_problems({"node-c": names_of["node-c"]}) == []
