# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validation level in the verdict (gpufleet/results/verdicts.py): what run.json's level required of each host is
required evidence (INCOMPLETE when not judged, naming it), and an ACCEPT at level quick is "static checks only".
Expected items, verdicts and lines written by hand from the records built here."""

from __future__ import annotations

import json

from gpufleet.checks import engine, verdict
from gpufleet.checks.model import PASS, result
from gpufleet.results.bench import plain_record
from gpufleet.results.store import RunDir
from gpufleet.results.verdicts import judge_run
from profile_double import FakeJudge  # pylint: disable=import-error

FAMILY = __name__
PROVISION = "provision first: `ansible-playbook gpufleet.acceptance.provision`"


@engine.node_check("levels_demo.facts_read", requires=("gpu",))
def _facts_read(node):
    return [result("levels_demo.facts_read", PASS, "%d GPUs read" % node.group("gpu")["gpu_count"])]


def _results(rdma=None):
    facts = {"topology": {"gpu_pairs": []}, "gpu": {"gpu_count": 8}, "nic": {"interfaces": [], "rdma": rdma or []}, "host": {}}
    return {group: {"ansible_facts": {"gpufleet_%s" % group: value}, "raw": {}} for group, value in facts.items()}


def _choice(**settings):
    return {"claim": None, "profile": None, "overrides": None, "settings": settings}


def _run(tmp_path, hosts, settings):
    run = RunDir.create(str(tmp_path / "run"), hosts=hosts, extra={"settings": settings})
    for host in hosts:
        run.record_facts(host, _results())
    return run


def test_level_quick_accept_is_labelled_static_checks_only(tmp_path):
    run = _run(tmp_path, ["q"], {"level": "quick", "benchmarks": None, "burn_in": None})
    report, fleet, profiles = judge_run(run, ["q"], {"q"}, {"q": _choice()}, FakeJudge(), families=[FAMILY])
    node = report["nodes"]["q"]
    assert node["verdict"] == "ACCEPT"
    assert (node["coverage"]["level"], node["coverage"]["label"], node["coverage"]["required"]) == ("quick", "static checks only", 0)
    assert verdict.verdict_lines(report, profiles)["q"] == "q: ACCEPT (profile demo; judged against no claim; static checks only)"
    assert (fleet["verdict"], fleet["level"], fleet["label"]) == ("ACCEPT", "quick", "static checks only")
    on_disk = json.loads((tmp_path / "run" / "fleet.json").read_text())
    assert on_disk["label"] == "static checks only" and on_disk["node_verdicts"]["q"]["coverage"]["label"] == "static checks only"


def test_level_standard_requires_its_benchmarks_and_names_the_missing_binary(tmp_path):
    # two hosts, neither with an RDMA rail: the level asks each for allreduce_single, the pair search and iperf3
    # (nvbandwidth is built nowhere: no record of it, no item); the preflight found no all_reduce_perf on "a"
    run = _run(tmp_path, ["a", "b"], {"level": "standard", "benchmarks": None, "burn_in": None})
    reason = "all_reduce_perf is not on this node (/opt/x/all_reduce_perf: no such file): " + PROVISION
    for kind in ("allreduce_single", "allreduce_pair"):
        # the record benchmark_tasks/preflight.yml writes (gpufleet.acceptance.bench_record)
        run.add_benchmark("a", plain_record(kind, kind, ["a"], "2026-01-01T00:00:00Z", outcome="missing_binary", reason=reason))
    report, fleet, profiles = judge_run(run, ["a", "b"], {"a", "b"}, {"a": _choice(), "b": _choice()}, FakeJudge(),
                                        families=[FAMILY, "benchmarks", "bench_network"])
    node = report["nodes"]["a"]
    # the tool is missing: nothing was measured, so not verified (a verdict's meaning: "not run, tool missing" is
    # INCOMPLETE), never REJECT, and the item says why with the fix
    assert node["verdict"] == "INCOMPLETE"
    items = {item["item"]: item for item in node["coverage"]["items"]}
    assert sorted(items) == ["benchmark.allreduce_pairs", "benchmark.allreduce_single", "benchmark.gpu_compute",
                             "benchmark.iperf3"]
    assert items["benchmark.allreduce_single"]["status"] == "unverified"
    assert items["benchmark.allreduce_single"]["reason"] == (
        "not verified: allreduce_single was not run: missing binary (" + reason + ")")
    assert items["benchmark.allreduce_pairs"]["status"] == "unverified"
    assert items["benchmark.allreduce_pairs"]["reason"] == "not judged: the node was in no measured pair: missing_binary: " + reason
    assert items["benchmark.iperf3"]["reason"] == "no iperf3 run recorded with this host"
    # "b" has no record at all: each benchmark its level asked for is named, the node is INCOMPLETE, never ACCEPT
    other = report["nodes"]["b"]
    assert other["verdict"] == "INCOMPLETE" and other["coverage"]["level"] == "standard" and other["coverage"]["label"] is None
    assert other["coverage"]["incomplete"] == [
        "benchmark single-node all-reduce: not judged: no single-node all_reduce_perf run recorded",
        "benchmark pairwise bad-node search: not judged: the node was in no measured pair",
        "benchmark iperf3: no iperf3 run recorded with this host",
        # the compute family is not judged in this test: its item is named as not run or not recorded
        "benchmark per-GPU compute and memory throughput: no result from benchmarks.gpu_compute: not run or not recorded",
    ]
    assert verdict.verdict_lines(report, profiles)["b"].startswith(
        "b: INCOMPLETE (profile demo; judged against no claim) - not verified: benchmark single-node all-reduce: not judged")
    assert fleet["label"] is None


def test_a_host_of_its_own_level_and_a_run_without_one(tmp_path):
    # the host's gpufleet_level wins over the run's; a run that recorded no level asks only its gpufleet_benchmarks
    run = _run(tmp_path, ["q"], {"level": "standard"})
    report, _fleet, _profiles = judge_run(run, ["q"], {"q"}, {"q": _choice(gpufleet_level="quick")}, FakeJudge(), families=[FAMILY])
    assert report["nodes"]["q"]["verdict"] == "ACCEPT" and report["nodes"]["q"]["coverage"]["label"] == "static checks only"
    bare = RunDir.create(str(tmp_path / "bare"), hosts=["n"])
    bare.record_facts("n", _results())
    report, fleet, _profiles = judge_run(bare, ["n"], {"n"}, {"n": _choice()}, FakeJudge(), families=[FAMILY])
    assert report["nodes"]["n"]["verdict"] == "ACCEPT" and report["nodes"]["n"]["coverage"]["level"] is None
    assert report["nodes"]["n"]["coverage"]["label"] is None and fleet["label"] is None
