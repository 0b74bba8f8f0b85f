# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verdict logic behind fleet_verdict: claims validated by key, the fleet judged from the results directory."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from gpufleet.checks import engine, verdict
from gpufleet.checks.model import FAIL, PASS, result
from gpufleet.results.store import ResultsError, RunDir
from gpufleet.results.verdicts import judge_run
from profile_double import FakeJudge  # pylint: disable=import-error

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
FAMILY = __name__


@engine.node_check("demo.claimed_gpus", requires=("gpu",))
def _claimed_gpus(node):
    count = node.group("gpu")["gpu_count"]
    claimed = (node.claim or {}).get("gpu_count")
    status = PASS if count == claimed else FAIL
    return [result("demo.claimed_gpus", status, "%d GPUs, claimed %s" % (count, claimed), measured=count, expected=claimed, threshold_source="claim")]


def _choice(claim=None):
    return {"claim": claim, "profile": None, "overrides": None, "settings": {}}


GOOD_CLAIM = {
    "gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "gpu_memory_gb": 80, "interconnect": "nvswitch", "nvlinks_per_pair": 18,
    "nics": [{"role": "compute", "type": "ib", "count": 8, "gbps": 400}], "price_per_node_hour": 23.5, "rack": None,
}


def test_valid_claims():
    assert verdict.validate_claim(None) == []
    assert verdict.validate_claim(GOOD_CLAIM) == []
    assert verdict.validate_claim({"gpu_count": 4}) == []   # every key is optional


def test_invalid_claims_name_the_key():
    bad = dict(GOOD_CLAIM, gpu_count="eight", interconnect="nvlink", colour="green",
               nics=[{"role": "compute", "type": "infiniband", "count": 0, "gbps": 400}, {"role": "storage", "count": 2, "gbps": 100, "mtu": 9000}])
    problems = verdict.validate_claim(bad)
    assert "gpufleet_claim.gpu_count: must be a whole number >= 0, got 'eight'" in problems
    assert "gpufleet_claim.interconnect: must be one of nvswitch, nvlink_bridge_pairs, pcie, got 'nvlink'" in problems
    assert any(problem.startswith("gpufleet_claim.colour: unknown key") for problem in problems)
    assert "gpufleet_claim.nics[0].type: must be one of ib, roce, ethernet, got 'infiniband'" in problems
    assert "gpufleet_claim.nics[0].count: must be a whole number > 0, got 0" in problems
    assert "gpufleet_claim.nics[1].type: missing" in problems
    assert any(problem.startswith("gpufleet_claim.nics[1].mtu: unknown key") for problem in problems)
    assert len(problems) == 7
    assert verdict.validate_claim(["8x H100"]) == ["gpufleet_claim: must be a mapping, got list"]


def test_example_inventory_claims_and_profiles_are_valid():
    """inventories/rented_nodes/ is what users copy: it must pass the preflight as shipped."""
    base = os.path.join(REPO_ROOT, "inventories", "rented_nodes")
    judge = verdict.Judge()
    checked = 0
    for sub in ("group_vars", "host_vars"):
        for name in sorted(os.listdir(os.path.join(base, sub))):
            with open(os.path.join(base, sub, name), encoding="utf-8") as handle:
                data = yaml.safe_load(handle) or {}
            choice = {"claim": data.get("gpufleet_claim"), "profile": data.get("gpufleet_profile"),
                      "overrides": data.get("gpufleet_profile_overrides"), "settings": {}}
            assert judge.validate_host(name, choice) == []
            checked += 1
    assert checked == 4


def test_unknown_profile_is_refused_naming_it():
    judge = verdict.Judge()
    problems = judge.validate_host("node-a", dict(_choice(), profile="hgx-h100-9"))
    assert len(problems) == 1 and problems[0].startswith("node-a: gpufleet_profile: no profile named 'hgx-h100-9'")
    problems = judge.validate_host("node-a", dict(_choice(), profile="hgx-h100-8", overrides={"fleet": {"max_below_median": "5 GB/s"}}))
    assert len(problems) == 1 and "gpufleet_profile_overrides" in problems[0] and "max_below_median" in problems[0]
    with pytest.raises(verdict.VerdictError, match="node-b: gpufleet_claim.gpu_count"):
        verdict.validate(judge, {"node-a": _choice(GOOD_CLAIM), "node-b": _choice({"gpu_count": -1})})


def _facts(count):
    return {"topology": {"gpu_pairs": []}, "gpu": {"gpu_count": count}, "nic": {"interfaces": []}, "host": {"summary": []}}


def _results(count):
    return {group: {"ansible_facts": {"gpufleet_%s" % group: value}, "raw": {}} for group, value in _facts(count).items()}


def test_judge_run_writes_every_verdict(tmp_path):
    run = RunDir.create(str(tmp_path / "run"), hosts=["good", "short", "nogpu", "gone", "lost", "silent"])
    run.record_facts("good", _results(8))
    run.record_facts("short", _results(7))
    run.record_facts("nogpu", dict(_results(8), gpu={"failed": True, "msg": "nvidia-smi not found: is the NVIDIA driver installed?"}))
    run.record_facts("gone", {"topology": {"unreachable": True, "msg": "ssh: connect to host 127.0.0.1 port 1: Connection refused"}})
    claims = {host: _choice({"gpu_count": 8}) for host in ("good", "short", "nogpu", "gone", "lost", "silent")}
    hosts = ["good", "short", "nogpu", "gone", "lost"]
    # "lost" left the play without a record; "silent" is still in the play but has no record: the controller did
    # not write it (a full results directory), so nothing is judged (it was REJECTed, every fact group failed)
    reachable = {"good", "short", "nogpu", "gone"}
    with pytest.raises(ResultsError, match="^nothing was judged: silent stayed in the play but has no record in "):
        judge_run(run, hosts + ["silent"], reachable | {"silent"}, claims, FakeJudge(), families=[FAMILY])
    assert not os.path.exists(tmp_path / "run" / "fleet.json")
    report, fleet, profiles = judge_run(run, hosts, reachable, claims, FakeJudge(), families=[FAMILY])
    nodes = report["nodes"]
    # "good" has its 8 claimed GPUs counted by the test family's demo.claimed_gpus, but the claimed gpu_count is
    # verified by gpu.count, which this run (families=[FAMILY]) did not run: INCOMPLETE, naming the item
    assert nodes["good"]["verdict"] == "INCOMPLETE"
    assert nodes["good"]["coverage"]["incomplete"] == ["GPU count: no result from gpu.count: not run or not recorded"]
    assert nodes["short"]["verdict"] == "REJECT" and nodes["short"]["failed"] == ["demo.claimed_gpus"]
    short = [item for item in nodes["short"]["checks"] if item["id"] == "demo.claimed_gpus"][0]
    assert (short["measured"], short["expected"], short["threshold_source"]) == (7, 8, "claim")
    assert nodes["nogpu"]["verdict"] == "REJECT" and nodes["nogpu"]["failed"] == ["facts.gpu"]
    assert nodes["gone"]["verdict"] == "UNREACHABLE" and nodes["gone"]["checks"] == []
    assert nodes["lost"]["verdict"] == "UNREACHABLE" and "left the play" in nodes["lost"]["unreachable"]
    assert "silent" not in nodes
    assert fleet["verdict"] == "REJECT"
    assert fleet["counts"] == {"ACCEPT": 0, "ACCEPT WITH WARNINGS": 0, "INCOMPLETE": 1, "REJECT": 2, "UNREACHABLE": 2}
    assert profiles["good"] == {"name": "demo", "reason": "test profile"} and profiles["gone"]["name"] is None
    # written: each host file, fleet.json, and the profiles chosen in run.json
    on_disk = json.loads((tmp_path / "run" / "hosts" / "short.json").read_text())
    assert on_disk["verdict"] == "REJECT" and on_disk["profile"] == {"name": "demo", "reason": "test profile"} and on_disk["claim"] == {"gpu_count": 8}
    assert json.loads((tmp_path / "run" / "hosts" / "lost.json").read_text())["verdict"] == "UNREACHABLE"
    assert json.loads((tmp_path / "run" / "fleet.json").read_text())["node_verdicts"]["nogpu"]["failed"] == ["facts.gpu"]
    assert json.loads((tmp_path / "run" / "run.json").read_text())["profile_choices"]["selected"]["short"]["name"] == "demo"
    lines = verdict.verdict_lines(report, profiles)
    assert lines["short"] == "short: REJECT (profile demo) - 7 GPUs, claimed 8"
    assert lines["gone"] == "gone: UNREACHABLE - ssh: connect to host 127.0.0.1 port 1: Connection refused"
