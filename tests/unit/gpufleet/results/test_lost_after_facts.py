# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node lost after its facts were recorded (gpufleet/results/verdicts.py ``lost_after_facts``): it left the play
and a benchmark run on it was recorded ``unreachable``, so it is UNREACHABLE, naming the phase and the run, never
judged on the facts of a node that is gone; its partner is not blamed. Expected verdicts and reasons written by hand
from the records built here."""

from __future__ import annotations

from gpufleet.checks import engine
from gpufleet.checks.model import PASS, result
from gpufleet.results.bench import plain_record
from gpufleet.results.store import RunDir
from gpufleet.results.verdicts import judge_run
from profile_double import FakeJudge  # pylint: disable=import-error

FAMILY = __name__
SSH_LOST = "Failed to connect to the host via ssh: ssh: connect to host 10.0.0.2 port 22: Connection timed out"


@engine.node_check("lost_demo.facts_read", requires=("gpu",))
def _facts_read(node):
    return [result("lost_demo.facts_read", PASS, "%d GPUs read" % node.group("gpu")["gpu_count"])]


def _results():
    facts = {"topology": {"gpu_pairs": []}, "gpu": {"gpu_count": 8}, "nic": {"interfaces": [], "rdma": []}, "host": {}}
    return {group: {"ansible_facts": {"gpufleet_%s" % group: value}, "raw": {}} for group, value in facts.items()}


def _choice():
    return {"claim": None, "profile": None, "overrides": None, "settings": {}}


def _judged(tmp_path, reachable, outcome="unreachable"):
    """Hosts a and b with facts; the pair a-b's run recorded under a with ``outcome``; judged with ``reachable``."""
    run = RunDir.create(str(tmp_path / "run"), hosts=["a", "b"], extra={"settings": {}})
    for host in ("a", "b"):
        run.record_facts(host, _results())
    run.add_benchmark("a", plain_record("allreduce_pair", "allreduce_pair", ["a", "b"], "2026-01-01T00:00:00Z",
                                        outcome=outcome, reason=SSH_LOST, job_id="j1-pair-0-a-b"))
    report, _fleet, profiles = judge_run(run, ["a", "b"], reachable, {"a": _choice(), "b": _choice()}, FakeJudge(),
                                         families=[FAMILY])
    return report["nodes"], profiles


def test_a_node_that_left_the_play_with_an_unreachable_run_is_unreachable_naming_the_phase(tmp_path):
    nodes, profiles = _judged(tmp_path, {"b"})
    assert nodes["a"]["verdict"] == "UNREACHABLE"
    assert nodes["a"]["unreachable"] == (
        "unreachable in the benchmark phase (allreduce_pair, job j1-pair-0-a-b: " + SSH_LOST + "); its facts, "
        "recorded before, are kept in its record")
    assert nodes["a"]["checks"] == [] and profiles["a"]["reason"] == "not chosen: host unreachable"
    # the partner is judged on its own evidence, never marked for a's loss
    assert nodes["b"]["verdict"] == "ACCEPT" and nodes["b"]["unreachable"] is None
    assert [item["id"] for item in nodes["b"]["checks"] if item["status"] != PASS] == []


def test_a_node_still_in_the_play_is_judged_on_what_it_recorded(tmp_path):
    # the connection came back (a later task reached it): the failed run is evidence, not a lost node
    nodes, _profiles = _judged(tmp_path, {"a", "b"})
    assert nodes["a"]["verdict"] == "ACCEPT" and nodes["a"]["unreachable"] is None
    assert [item["id"] for item in nodes["a"]["checks"]] == ["lost_demo.facts_read"]


def test_a_node_that_left_the_play_for_a_failed_run_is_not_called_unreachable(tmp_path):
    # out of the play, but its run failed on the node (a crash), not for want of an answer: judged on its records
    nodes, _profiles = _judged(tmp_path, {"b"}, outcome="crash")
    assert nodes["a"]["verdict"] == "ACCEPT" and nodes["a"]["unreachable"] is None
