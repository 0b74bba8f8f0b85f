# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""checks/after_stress.py: the health facts read after stress held against the first reading.

"Before" facts are built from recordings, "after" facts from their SYNTHETIC edited copies
(tests/fixtures/*/SOURCES.md):
- kernel log: misc/gpud-dmesg-iso-xid-48-63-94-... (11 Xid lines: 48, 63, 9x 94 on 0000:19:00) and its edited copy
  whose first 5 lines (peermem errors) rotated out and which ends with a new Xid 79 on 0000:3b:00.
- GPUs: smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt and its edited copy in which GPU 1 (3B) counts 2 volatile and 2
  aggregate uncorrectable DRAM errors (0 before).
The IB ports and the NVLink link below are small hand-written synthetic facts (counter values chosen here).
"""

from __future__ import annotations

import copy

from gpufleet.checks import engine
from gpufleet.checks.after_stress import FACTS_READ_SETTING, READINGS_SETTING, judge_phase, new_events
from gpufleet.checks.evidence import REQUIRED_AFTER_STRESS_SETTING
from gpufleet.checks.model import NodeContext
from gpufleet.facts.gpu import build_inventory
from gpufleet.facts.host import xid_summary
from gpufleet.parsers.kernel_log import parse_kernel_log
from gpufleet.parsers.nvidia_smi_query_text import parse_query_text

FAMILY = ["after_stress"]
READ_AT = "2026-01-31T12:00:00Z"
DMESG = "misc/gpud-dmesg-iso-xid-48-63-94-dbe-rowremap-plus-peermem-errors.txt"
DMESG_AFTER = "misc/gpud-dmesg-iso-xid-48-63-94-EDITED-first-5-lines-rotated-out-plus-xid-79-synthetic.txt"
SMI = "smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt"
SMI_AFTER = "smi/gpud-nvidia-smi-q-8x-h100-535.161.08-EDITED-gpu1-dram-uncorrectable-2-synthetic.txt"


def host_facts(text):
    return {"xid": xid_summary(parse_kernel_log(text), "dmesg")}


def gpu_facts(text):
    return build_inventory(text=parse_query_text(text))


def nic_facts(symbol_error=0, state="Active"):
    """SYNTHETIC: one IB port, its counters chosen by the test."""
    counters = {"symbol_error": symbol_error, "link_downed": 0, "port_rcv_errors": 0}
    return {"rdma": [{"device": "mlx5_0", "ports": [{"port": 1, "state": state, "counters": counters}]}]}


def node(before, after=None, required=("benchmarks",), read_before=READ_AT, phase="benchmarks"):
    readings = {}
    if after is not None:
        readings[phase] = {
            "phase": phase,
            "read": "2026-01-31T13:00:00Z",
            "before": read_before,
            "groups": sorted(after),
            "facts": after,
            "fact_errors": {},
            "unreachable": None,
            "raw": {},
        }
    settings = {READINGS_SETTING: readings, FACTS_READ_SETTING: READ_AT, REQUIRED_AFTER_STRESS_SETTING: list(required)}
    return NodeContext("n", facts=before, settings=settings)


def findings(items, status):
    return [
        (item["subject"], item["counter"], item["before"], item["after"]) for item in items if item["status"] == status
    ]


def test_new_xid_lines_are_found_by_identity_though_old_lines_rotated_out(fixture_text):
    before, after = host_facts(fixture_text(DMESG)), host_facts(fixture_text(DMESG_AFTER))
    assert (before["xid"]["events_total"], after["xid"]["events_total"]) == (11, 12)
    fresh, count = new_events(before["xid"], after["xid"])
    assert [(event["xid"], event["pci"], event["timestamp"]) for event in fresh] == [
        (79, "0000:3b:00", "2024-11-15T12:40:01,120334+00:00")
    ]
    assert count == 1
    items = judge_phase(node({"host": before}, {"host": after}), "benchmarks")
    assert findings(items, "fail") == [("kernel log", "Xid 79", 0, 1)]
    assert items[0]["gpus"] == ["0000:3b:00"] and "GPU has fallen off the bus" in items[0]["message"]
    assert [(item["id"], item["status"]) for item in items][-1] == ("after_stress.benchmarks.reading", "pass")


def test_the_same_log_read_twice_is_no_new_line(fixture_text):
    before = host_facts(fixture_text(DMESG))
    items = judge_phase(node({"host": before}, {"host": copy.deepcopy(before)}), "benchmarks")
    assert [(item["id"], item["status"]) for item in items] == [
        ("after_stress.benchmarks", "pass"),
        ("after_stress.benchmarks.reading", "pass"),
    ]
    assert (
        items[0]["message"] == "kernel log: no new Xid or SXid line during the benchmarks (11 events before, 11 after)"
    )


def test_uncorrectable_ecc_that_grew_fails_naming_the_counter(fixture_text):
    before, after = gpu_facts(fixture_text(SMI)), gpu_facts(fixture_text(SMI_AFTER))
    report = engine.run_checks([node({"gpu": before}, {"gpu": after})], families=FAMILY)["nodes"]["n"]
    assert report["verdict"] == "REJECT"
    assert findings(report["checks"], "fail") == [
        ("GPU1", "ecc_errors_volatile_uncorrectable", 0, 2), ("GPU1", "ecc_errors_aggregate_uncorrectable", 0, 2)]
    item, = report["coverage"]["items"]
    assert (item["item"], item["status"]) == ("after_stress.benchmarks", "failed")


def test_a_gpu_gone_and_a_narrower_pcie_link_after_stress(fixture_text):
    before = gpu_facts(fixture_text(SMI))
    after = copy.deepcopy(before)
    gone = after["gpus"].pop(7)
    after["gpus"][0]["pcie_link_width_current"] = 8  # SYNTHETIC: x16 in the recording
    items = judge_phase(node({"gpu": before}, {"gpu": after}), "benchmarks")
    assert findings(items, "fail") == [("GPU7", "present", True, False), ("GPU0", "pcie_link_width_current", 16, 8)]
    assert gone["index"] == 7


def test_pcie_replays_that_grew_fail(fixture_text):
    # The gpud H100 recording prints "Replays Since Reset : 43" for GPU 3 (read by hand); SYNTHETIC: 50 after stress.
    before = gpu_facts(fixture_text(SMI))
    assert before["gpus"][3]["replays_since_reset"] == 43
    after = copy.deepcopy(before)
    after["gpus"][3]["replays_since_reset"] = 50
    items = judge_phase(node({"gpu": before}, {"gpu": after}), "benchmarks")
    assert findings(items, "fail") == [("GPU3", "replays_since_reset", 43, 50)]
    # the readings are an hour apart (12:00 -> 13:00): 7 / 60 = 0.12 per minute, within DCGM's 8, yet growth fails
    assert items[0]["message"] == ("GPU3: PCIe replays grew by 7 (43 -> 50) during the benchmarks: 0.12 per minute "
                                   "over 60 min, within DCGM's health-watch limit of 8 per minute")
    assert items[0]["per_minute"] == 0.117
    # The same counts read twice (67, 63, ... unchanged): nothing grew.
    items = judge_phase(node({"gpu": before}, {"gpu": copy.deepcopy(before)}), "benchmarks")
    assert [item["status"] for item in items] == ["pass", "pass"]


def test_new_xids_are_judged_by_the_catalog_bucket(fixture_text):
    # SYNTHETIC events appended to the recording's facts: Xid 13 (RESTART_APP) warns, Xid 119 (RESET_GPU) fails.
    before = host_facts(fixture_text(DMESG))
    after = copy.deepcopy(before)
    for number in (13, 119):
        event = {"timestamp": "2024-11-15T13:00:0%d" % (number % 10), "pci": "0000:19:00", "xid": number,
                 "message": "synthetic"}
        after["xid"]["events"].append(event)
        after["xid"]["events_total"] += 1
    items = judge_phase(node({"host": before}, {"host": after}), "benchmarks")
    assert findings(items, "warn") == [("kernel log", "Xid 13", 0, 1)]
    assert findings(items, "fail") == [("kernel log", "Xid 119", 0, 1)]
    assert (
        "GSP RPC timeout (catalog bucket RESET_GPU)"
        in [item for item in items if item["status"] == "fail"][0]["message"]
    )


def test_nvlink_and_ib_counters_that_grew(fixture_text):
    before_gpu = gpu_facts(fixture_text(SMI))
    before_gpu["gpus"][2]["nvlink"] = {
        "links": [{"link": 4, "replay_errors": 0, "recovery_errors": 0, "crc_errors": 3}]
    }
    after_gpu = copy.deepcopy(before_gpu)
    after_gpu["gpus"][2]["nvlink"]["links"][0]["crc_errors"] = 40
    items = judge_phase(
        node(
            {"gpu": before_gpu, "nic": nic_facts()}, {"gpu": after_gpu, "nic": nic_facts(symbol_error=7, state="Down")}
        ),
        "benchmarks",
    )
    assert findings(items, "fail") == [
        ("GPU2/link4", "nvlink crc_errors", 3, 40),
        ("mlx5_0/1", "state", "Active", "Down"),
        ("mlx5_0/1", "symbol_error", 0, 7),
    ]


def test_a_missing_re_read_is_not_verified_and_the_node_incomplete(fixture_text):
    report = engine.run_checks([node({"host": host_facts(fixture_text(DMESG))})], families=FAMILY)["nodes"]["n"]
    assert report["verdict"] == "INCOMPLETE"
    item, = report["checks"]
    assert (item["id"], item["status"]) == ("after_stress.benchmarks.reading", "skip")
    assert (
        item["message"]
        == "not verified: no health re-read after the benchmarks recorded (the phase was skipped or failed)"
    )
    assert report["coverage"]["incomplete"][0].startswith(
        "health after the benchmarks: after_stress.benchmarks.reading: not verified"
    )
    # not asked of the node (level quick): nothing is said, nothing required
    report = engine.run_checks([node({"host": host_facts(fixture_text(DMESG))}, required=())], families=FAMILY)[
        "nodes"
    ]["n"]
    assert report["checks"] == [] and report["coverage"]["required"] == 0


def test_a_re_read_following_another_facts_reading_is_never_compared(fixture_text):
    before = host_facts(fixture_text(DMESG))
    stale = node({"host": before}, {"host": host_facts(fixture_text(DMESG_AFTER))}, read_before="2026-01-30T08:00:00Z")
    report = engine.run_checks([stale], families=FAMILY)["nodes"]["n"]
    assert report["verdict"] == "INCOMPLETE" and report["failed"] == []
    item, = report["checks"]
    assert (
        "follows the facts read at 2026-01-30T08:00:00Z, not this run's first reading (2026-01-31T12:00:00Z)"
        in item["message"]
    )


def test_a_group_read_before_but_not_after_leaves_the_phase_unverified(fixture_text):
    before = {"host": host_facts(fixture_text(DMESG)), "gpu": gpu_facts(fixture_text(SMI))}
    after = {
        "host": {"xid": xid_summary(None, None, "`dmesg` exited 1: Operation not permitted")},
        "gpu": gpu_facts(fixture_text(SMI)),
    }
    report = engine.run_checks([node(before, after, required=("burn_in",), phase="burn_in")], families=FAMILY)["nodes"][
        "n"
    ]
    assert report["verdict"] == "INCOMPLETE"
    statuses = [(item["id"], item["status"]) for item in report["checks"]]
    assert statuses == [("after_stress.burn_in", "pass"), ("after_stress.burn_in.reading", "skip")]
    assert report["checks"][1]["message"] == ("not verified after the burn-in: host (kernel log): `dmesg` exited 1: "
                                              "Operation not permitted")
