# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The burn_in check family in the engine: records in a results directory -> fleet_verdict -> checks and verdicts.

SYNTHETIC samples (tests/fixtures/nvml-samples/synthetic_nvml.py); the GPU facts are minimal hand-made dicts.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

from gpufleet.results import burn_in as records
from gpufleet.checks import engine
from gpufleet.checks.burn_in import check_burn_in
from gpufleet.checks.model import NodeContext
from gpufleet.history.prometheus import prometheus_text
from gpufleet.history.store import append_run
from gpufleet.results.store import ResultsError, RunDir
from gpufleet.results.verdicts import judge_run

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "nvml-samples"))

import synthetic_nvml as synth  # noqa: E402  pylint: disable=import-error,wrong-import-position
from profile_double import FakeJudge  # noqa: E402  pylint: disable=import-error,wrong-import-position

FAMILY = ("burn_in",)
LOAD_OK = {"tool": "gpu-burn", "outcome": "ok", "reason": ""}


def choice(settings=None):
    return {"claim": None, "profile": None, "overrides": None, "settings": dict(settings or {})}


def facts_results():
    groups = {"topology": {"gpu_pairs": []}, "gpu": {"gpu_count": 4}, "nic": {"interfaces": []}, "host": {"summary": []}}
    return {group: {"ansible_facts": {"gpufleet_%s" % group: value}, "raw": {}} for group, value in groups.items()}


def sag_gpu2(gpu, tick, sample):
    if gpu == 2 and tick >= 6:
        sample["sm_clock_mhz"] = 1500


def write_samples(tmp_path, name, change=None, gpus=4):
    path = tmp_path / name
    path.write_text(synth.text(synth.series(gpus=gpus, change=change)))
    return str(path)


def test_the_family_is_a_default_family():
    assert "burn_in" in engine.DEFAULT_FAMILIES


def test_a_node_without_burn_in_gets_one_skip():
    report = engine.run_checks([NodeContext("n", settings={})], families=FAMILY)
    assert [(item["id"], item["status"]) for item in report["nodes"]["n"]["checks"]] == [("burn_in", "skip")]


def test_record_then_judge_through_fleet_verdict(tmp_path):
    run = RunDir.create(str(tmp_path / "run"), hosts=["good", "sag", "diag", "nosamples"])
    for host in ("good", "sag", "diag", "nosamples"):
        run.record_facts(host, facts_results())
    record, parsed = records.record_burn_in(run, "good", samples_source=write_samples(tmp_path, "good.jsonl"), load=LOAD_OK, duration_s=9.0)
    records.record_burn_in(run, "sag", samples_source=write_samples(tmp_path, "sag.jsonl", sag_gpu2), load=LOAD_OK)
    records.record_burn_in(run, "diag", sample_records=synth.series(gpus=4),
                           load={"tool": "dcgmi", "outcome": "failed", "reason": "Diagnostic test failed", "level": 3})
    records.record_burn_in(run, "nosamples", sampler_error="libnvidia-ml.so.1 not found: is the NVIDIA driver installed?", load=LOAD_OK)
    # the record: samples copied into raw/, per-GPU summaries, the load as given
    assert record["samples_path"] == "raw/good/burn_in/burn_in.jsonl" and (tmp_path / "run" / record["samples_path"]).is_file()
    assert record["kind"] == "burn_in" and record["load"] == LOAD_OK and record["duration_s"] == 9.0
    assert record["sampler"]["samples"] == 40 and record["sampler"]["ticks"] == 10 and record["sampler"]["ended"] == "duration"
    assert record["gpus"][0]["sm_clock_median_mhz"] == 1980 and record["gpus"][0]["temp_p95_c"] == 60 and len(parsed["samples"]) == 40
    on_disk = json.loads((tmp_path / "run" / "hosts" / "diag.json").read_text())
    assert on_disk["burn_in"][0]["load"]["level"] == 3 and on_disk["burn_in"][0]["samples_path"] == "raw/diag/burn_in/burn_in.jsonl"

    hosts = ["good", "sag", "diag", "nosamples"]
    report, _fleet, _profiles = judge_run(run, hosts, set(hosts), {host: choice() for host in hosts}, FakeJudge(), families=FAMILY)
    nodes = report["nodes"]
    assert nodes["good"]["verdict"] == "ACCEPT"
    assert nodes["sag"]["verdict"] == "REJECT" and nodes["sag"]["failed"] == ["burn_in.clock_sag"]
    sag = [item for item in nodes["sag"]["checks"] if item["id"] == "burn_in.clock_sag"][0]
    assert sag["gpu"]["index"] == 2 and sag["measured"] == 0.4
    assert nodes["diag"]["verdict"] == "REJECT" and nodes["diag"]["failed"] == ["burn_in.load"]
    assert nodes["nosamples"]["verdict"] == "ACCEPT WITH WARNINGS"
    error = [item for item in nodes["nosamples"]["checks"] if item["status"] == "error"][0]
    assert error["id"] == "burn_in.samples" and "libnvidia-ml.so.1 not found" in error["message"]
    # written into the host records (the report reads them), with the GPU on each finding
    written = json.loads((tmp_path / "run" / "hosts" / "sag.json").read_text())
    assert [item["gpu"]["uuid"] for item in written["checks"] if item["status"] == "fail"] == [synth.uuid_of(2)]


def test_thresholds_from_the_inventory_reach_the_checks(tmp_path):
    run = RunDir.create(str(tmp_path / "run"), hosts=["sag"])
    run.record_facts("sag", facts_results())
    records.record_burn_in(run, "sag", samples_source=write_samples(tmp_path, "sag.jsonl", sag_gpu2), load=LOAD_OK)
    # 4 of 10 ticks sagging: a 50% time share allows it
    loose = {"sag": choice({"gpufleet_burn_in_thresholds": {"clock_sag_time_share": 0.5}})}
    report, _fleet, _profiles = judge_run(run, ["sag"], {"sag"}, loose, FakeJudge(), families=FAMILY)
    assert report["nodes"]["sag"]["verdict"] == "ACCEPT"
    bad = {"sag": choice({"gpufleet_burn_in_thresholds": {"clock_sag_tim": 0.5}})}
    report, _fleet, _profiles = judge_run(run, ["sag"], {"sag"}, bad, FakeJudge(), families=FAMILY)
    item, = report["nodes"]["sag"]["checks"]
    assert item["status"] == "error" and "clock_sag_tim: unknown key" in item["message"]


def test_a_samples_path_outside_the_run_is_not_read(tmp_path):
    node = NodeContext("n", settings=records.judging_settings(str(tmp_path), "n", {"burn_in": [{"name": "x", "samples_path": "../../etc/passwd"}]}))
    item, = check_burn_in(node)
    assert item["status"] == "error" and "not inside the results directory" in item["message"]


def test_history_drift_becomes_checks_and_prometheus_text(tmp_path):
    """Three runs of one host into one history: the third run's GPU 1 clock fell; the drift is judged and exported."""
    db = str(tmp_path / "history" / "health.sqlite")
    clocks = {0: 1980, 1: 1980}
    for number, fallen in enumerate((1980, 1970, 1800)):
        run = RunDir.create(str(tmp_path / ("run%d" % number)), hosts=["node-a"])
        run.update_run(started="2026-01-%02dT00:00:00Z" % (1 + 7 * number))
        run.record_facts("node-a", facts_results())

        def change(gpu, tick, sample, fallen=fallen):
            sample["sm_clock_mhz"] = fallen if gpu == 1 else clocks[0]
        records.record_burn_in(run, "node-a", sample_records=synth.series(gpus=2, change=change), load=LOAD_OK)
        outcome = append_run(run, db)
    # run 3: GPU 1 at 1800 < 0.95 x median(1980, 1970) = 0.95 x 1975 = 1876.25
    assert [(flag["gpu"], flag["metric"]) for flag in outcome["flags"]] == [(1, "sm_clock")]
    assert outcome["rows"] == 2 and outcome["hosts"] == ["node-a"]
    document = json.loads((tmp_path / "run2" / "history.json").read_text())
    assert [point["sm_clock_median_mhz"] for point in document["series"]["node-a"][1]["points"]] == [1980, 1970, 1800]

    report, _fleet, _profiles = judge_run(run, ["node-a"], {"node-a"}, {"node-a": choice()}, FakeJudge(), families=FAMILY)
    drift = [item for item in report["nodes"]["node-a"]["checks"] if item["id"] == "burn_in.drift"]
    assert [(item["status"], item["gpu"]["index"]) for item in drift] == [("warn", 1)]
    assert report["nodes"]["node-a"]["verdict"] == "ACCEPT WITH WARNINGS"

    content, gpus = prometheus_text(run, "node-a")
    assert gpus == 2
    assert 'gpufleet_gpu_findings{gpu="1",uuid="%s",name="%s",status="warn"} 1' % (synth.uuid_of(1), synth.MODEL) in content.splitlines()
    with pytest.raises(ResultsError, match="no burn-in record named other"):
        prometheus_text(run, "node-a", record_name="other")


# tests/fixtures/dcgm/ (SOURCES.md): the SYNTHETIC edits of a DCGM 4.5.2 recording, every test Skip / every test Pass
DCGM_ALL_SKIP = "dcgm/gb10-dcgm-4.5.2-diag-r2-j-every-test-Skip-synthetic-EDITED.json"
DCGM_ALL_PASS = "dcgm/gb10-dcgm-4.5.2-diag-r2-j-all-Pass-synthetic-EDITED.json"


def test_a_dcgm_run_whose_every_test_was_skipped_leaves_the_burn_in_unverified(tmp_path, fixture_text):
    """Required burn-in: samples judged good, but DCGM verified nothing -> INCOMPLETE naming the load, never accepted."""
    hosts = ["skipped", "passed"]
    run = RunDir.create(str(tmp_path / "run"), hosts=hosts)
    for host, recording in (("skipped", DCGM_ALL_SKIP), ("passed", DCGM_ALL_PASS)):
        run.record_facts(host, facts_results())
        load = dict(records.dcgmi_load(fixture_text(recording), "ok", ""), tool="dcgmi", level=2)
        records.record_burn_in(run, host, samples_source=write_samples(tmp_path, "%s.jsonl" % host), load=load)
    report, _fleet, _profiles = judge_run(run, hosts, set(hosts), {host: choice() for host in hosts}, FakeJudge(), families=FAMILY,
                                          required_benchmarks={host: ["burn_in"] for host in hosts})
    skipped = report["nodes"]["skipped"]
    assert skipped["verdict"] == "INCOMPLETE", skipped["verdict"]  # was ACCEPT WITH WARNINGS: the samples alone verified it
    item, = [item for item in skipped["coverage"]["items"] if item["item"] == "benchmark.burn_in"]
    assert item["status"] == "unverified"
    assert item["reason"].startswith("burn_in.load: error: dcgmi diag did not verify the GPUs: dcgmi diag: Skip in "
                                     "Deployment/software, Hardware/memory, Integration/pcie (0 of 3 test(s) passed)"), item["reason"]
    assert skipped["coverage"]["incomplete"] == ["benchmark burn-in: %s" % item["reason"]]
    # every DCGM test passed and the samples are good: the burn-in is verified and the node accepted
    passed = report["nodes"]["passed"]
    assert passed["verdict"] == "ACCEPT"
    assert [item["status"] for item in passed["coverage"]["items"] if item["item"] == "benchmark.burn_in"] == ["verified"]


def test_a_required_burn_in_that_never_ran_names_both_parts():
    node = NodeContext("n", settings={"required_benchmarks": ["burn_in"]})
    report = engine.run_checks([node], families=FAMILY)["nodes"]["n"]
    assert report["verdict"] == "INCOMPLETE"
    item, = report["coverage"]["items"]
    assert item["checks"] == ["burn_in", "burn_in.samples", "burn_in.load"]
    assert item["reason"] == ("burn_in, burn_in.samples: not judged: no burn-in or health-check samples recorded; "
                              "burn_in.load: no result from burn_in.load: not run or not recorded")
