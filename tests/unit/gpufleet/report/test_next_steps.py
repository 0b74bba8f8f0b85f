# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The next step named for each node not accepted (gpufleet/report/next_steps.py), as the CLI and the report say it."""

from __future__ import annotations

from gpufleet.report.next_steps import next_step


def test_each_verdict_names_what_to_do():
    assert next_step("ACCEPT", "n1", "/r/run 1") == ""
    assert next_step("ACCEPT WITH WARNINGS", "n1", "/r/run 1") == ""
    assert next_step("REJECT", "n 1", "/r/run 1") == (
        "dispute it with its evidence: gpufleet bundle '/r/run 1' 'n 1'; after the seller's fix: "
        "gpufleet validate -i INVENTORY --retest-failed '/r/run 1' --out NEW_DIR")
    assert next_step("UNREACHABLE", "n1", "/r/run") == (
        "make it reachable over ssh from the controller (see its reason), then: "
        "gpufleet validate -i INVENTORY --retest-failed /r/run --out NEW_DIR")


def test_an_incomplete_node_provisions_first_where_a_tool_is_missing():
    # the benchmark preflight's record of a missing tool (playbooks/benchmark_tasks/preflight.yml)
    missing = ["single-node all-reduce: not run: all_reduce_perf not found on the node; provision first: "
               "`ansible-playbook gpufleet.acceptance.provision`"]
    assert next_step("INCOMPLETE", "n1", "/r/run", missing) == (
        "install the tools it lacks: ansible-playbook -i INVENTORY gpufleet.acceptance.provision; then: "
        "gpufleet validate -i INVENTORY --retest-failed /r/run --out NEW_DIR")
    # two items of one cause: its fix once
    not_gathered = ["GPU model: not judged: gpu facts not gathered", "GPU count: not judged: gpu facts not gathered"]
    assert next_step("INCOMPLETE", "n1", "/r/run", not_gathered) == (
        "gather the gpu facts: gpufleet_fact_groups must include gpu; then: "
        "gpufleet validate -i INVENTORY --retest-failed /r/run --out NEW_DIR")
    assert next_step(None, "n1", "/r/run").startswith("measure what is missing: ")
