# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NCCL evidence of runs across nodes (benchmarks.nccl_network) and one fabric clique per NVLink domain
(nvlink.fabric_domain), on the tpgds-aihub0008 NCCL_DEBUG=INFO recording (2 nodes x 8 H100, 8 RoCE rails, every
channel ``via NET/IB/<dev>/GDRDMA``, ``MNNVL 0``) and its EDITED copies (SOURCES.md says what each changes).

Each rule has a case that passed before the rule existed and must fail now, and a healthy case that keeps passing;
the expected values are read by hand from the recordings.
"""

from __future__ import annotations

import copy

from gpufleet.checks import benchmarks, fleet, nvlink
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, NodeContext
from gpufleet.checks.profiles import load_profiles
from gpufleet.parsers.registry import parse

HEALTHY = "nccl-debug/tpgds-aihub0008-2node-16rank-h100-8x-roce-gdrdma-p2p-ipc-ofi-plugin-fallback-to-IB-PARTIAL.txt"
NO_GDR = "nccl-debug/tpgds-aihub0008-2node-16rank-h100-8x-roce-EDITED-no-GDRDMA-PARTIAL.txt"
FOUR_HCAS = "nccl-debug/tpgds-aihub0008-2node-16rank-h100-8x-roce-gdrdma-EDITED-4-of-8-HCAs-PARTIAL.txt"
MIXED = "nccl-debug/tpgds-aihub0008-2node-16rank-h100-8x-roce-gdrdma-EDITED-ranks-6-7-socket-PARTIAL.txt"
MNNVL_ON = "nccl-debug/tpgds-aihub0008-2node-16rank-h100-8x-roce-gdrdma-EDITED-MNNVL-1-PARTIAL.txt"
LOG_HOST = "tpgds-aihub0008"  # the host NCCL printed; the other node of the run is not in this part of the log
OTHER = "tpgds-aihub0007"
NCCL = "benchmarks.nccl_network"


def profile(name="hgx-h100-8"):
    return copy.deepcopy(load_profiles()[name])


def run(fixture_text, path, kind="allreduce_multi"):
    return {"name": "all_reduce_perf", "kind": kind, "hosts": [OTHER, LOG_HOST], "outcome": "ok", "reason": None,
            "started": "2026-01-01T00:00:00Z", "repeat": 0, "round": None, "group": None,
            # the recordings hold the NCCL_DEBUG part of the run (its result table was not copied): the record carries
            # what the nccl parser attaches as ``debug`` for a finished run
            "parsed": {"debug": parse("nccl-debug", fixture_text(path)), "failed": False}}


def judged(fixture_text, path, prof=None, claim=None, kind="allreduce_multi"):
    """The results on the node NCCL named (LOG_HOST); the other node's lines are not in the recording."""
    record = run(fixture_text, path, kind)
    nodes = [NodeContext(name, profile=prof or profile(), claim=claim, settings={"benchmarks": [record]})
             for name in (OTHER, LOG_HOST)]
    out = benchmarks.check_nccl_network(nodes)
    assert OTHER not in out  # its lines are not in the output: nothing judged about it
    return out[LOG_HOST]


def statuses(items):
    return sorted(item["status"] for item in items)


# --- GDRDMA where GPUDirect is required --------------------------------------------------------------------


def test_healthy_run_passes_naming_the_eight_hcas(fixture_text):
    item, = judged(fixture_text, HEALTHY)
    assert item["status"] == PASS and item["id"] == NCCL
    assert item["measured"] == ["mlx5_0", "mlx5_1", "mlx5_11", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8"]
    assert "8 HCA(s)" in item["message"] and "for 8 rails" in item["message"] and "all with GDRDMA" in item["message"]


def test_net_ib_without_gdrdma_fails_where_gpudirect_is_required(fixture_text):
    items = judged(fixture_text, NO_GDR)  # hgx-h100-8: host.gpudirect_required true
    item, = [item for item in items if item["status"] == FAIL]
    assert "30 of 30 NET/IB channel transport(s) without GDRDMA" not in item["message"]  # per distinct transport
    assert "8 of 8 NET/IB channel transport(s) without GDRDMA" in item["message"]
    # the first channel line of the recording: line 195, 'Channel 06/0 : 7[7] -> 14[6] [receive] via NET/IB/6'
    assert "NET/IB/6 x4 (line 195)" in item["message"]
    assert item["measured"] == "NET/IB without GDRDMA"


def test_net_ib_without_gdrdma_passes_where_the_profile_does_not_require_gpudirect(fixture_text):
    prof = profile()
    prof["host"]["gpudirect_required"] = False
    item, = judged(fixture_text, NO_GDR, prof=prof)
    assert item["status"] == PASS and "8 without GDRDMA (GPUDirect not required" in item["message"]


def test_claimed_compute_rails_require_gpudirect_when_the_profile_says_nothing(fixture_text):
    prof = profile()
    del prof["host"]["gpudirect_required"]
    claim = {"nics": [{"role": "compute", "type": "roce", "count": 8, "gbps": 400}]}
    items = judged(fixture_text, NO_GDR, prof=prof, claim=claim)
    assert [item["status"] for item in items] == [FAIL] and "claim (compute RDMA NICs)" in items[0]["message"]


# --- distinct HCAs against the rails ------------------------------------------------------------------------


def test_four_hcas_for_eight_rails_fails_naming_them(fixture_text):
    item, = judged(fixture_text, FOUR_HCAS)
    assert item["status"] == FAIL
    assert item["measured"] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5"]  # devices [0]..[3] of the NET/IB : Using line
    assert "4 distinct HCA(s) (mlx5_0, mlx5_1, mlx5_2, mlx5_5) for 8 compute rails" in item["message"]


def test_four_hcas_pass_when_the_claim_sells_four_rails(fixture_text):
    claim = {"nics": [{"role": "compute", "type": "roce", "count": 4, "gbps": 400}]}
    item, = judged(fixture_text, FOUR_HCAS, claim=claim)
    assert item["status"] == PASS and "for 4 rails" in item["message"]


def test_pair_runs_are_judged_as_well(fixture_text):
    item, = judged(fixture_text, FOUR_HCAS, kind="allreduce_pair")
    assert item["status"] == FAIL and "for 8 compute rails" in item["message"]


# --- ranks that disagree on the network ---------------------------------------------------------------------


def test_ranks_on_ib_and_on_sockets_warn(fixture_text):
    items = judged(fixture_text, MIXED)
    warn, = [item for item in items if item["status"] == WARN]
    assert warn["measured"] == ["IB", "Socket"] and "tpgds-aihub0008: IB, Socket" in warn["message"]
    # the ranks on sockets leave two rails unused: devices [0]..[5] carry the NET/IB connections
    fail, = [item for item in items if item["status"] == FAIL]
    assert fail["measured"] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_5", "mlx5_6", "mlx5_7"]


# --- multi-node NVLink: MNNVL ------------------------------------------------------------------------------


def nvl72():
    prof = profile("gb200-nvl72")
    assert prof["expect"]["fabric_clique_scope"] == "nvlink_domain"
    return prof


def test_mnnvl_off_fails_on_a_multi_node_nvlink_profile(fixture_text):
    items = judged(fixture_text, HEALTHY, prof=nvl72())
    mnnvl = [item for item in items if item["measured"] == "MNNVL 0"]
    assert [item["status"] for item in mnnvl] == [FAIL] and "MNNVL 0 on a multi-node NVLink system" in mnnvl[0][
        "message"
    ]


def test_mnnvl_off_is_not_judged_on_hgx_h100(fixture_text):
    assert statuses(judged(fixture_text, HEALTHY)) == [PASS]


def test_mnnvl_on_passes_on_a_multi_node_nvlink_profile(fixture_text):
    items = judged(fixture_text, MNNVL_ON, prof=nvl72())
    assert FAIL not in statuses(items) and not [item for item in items if item["measured"] == "MNNVL 0"]


def test_a_failed_run_gives_no_nccl_evidence(fixture_text):
    record = dict(run(fixture_text, NO_GDR), outcome="crash", reason="rank 3 died")
    nodes = [NodeContext(name, profile=profile(), settings={"benchmarks": [record]}) for name in (OTHER, LOG_HOST)]
    assert benchmarks.check_nccl_network(nodes) == {}


# --- one fabric cluster and clique per NVLink domain (GPU facts, SYNTHETIC minimal dicts) -------------------

UUID_A = "5e3c2d1a-7b4f-4c2e-9a8b-1f2e3d4c5b6a"
UUID_B = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def tray(name, fabric, settings=None, claim=None):
    gpus = [
        {
            "index": index,
            "fabric": {"state": "Completed", "status": "Success", "clique_id": clique, "cluster_uuid": uuid},
        }
        for index, (uuid, clique) in enumerate(fabric)
    ]
    return NodeContext(name, facts={"gpu": {"gpus": gpus}}, profile=nvl72(), settings=settings, claim=claim)


def test_one_clique_across_the_trays_of_a_rack_passes():
    nodes = [
        tray("tray%d" % index, [(UUID_A, 32766)] * 4, settings={"gpufleet_nvlink_domain": "rack1"})
        for index in range(3)
    ]
    out = nvlink.fabric_domain(nodes)
    assert [item["status"] for name in out for item in out[name]] == [PASS, PASS, PASS]
    # measured: the (cluster, clique) pair as a dict (it was a list in the merged fleet.nvlink_domain)
    assert out["tray0"][0]["measured"] == {"cluster_uuid": UUID_A, "clique_id": 32766}
    assert out["tray0"][0]["message"].startswith(
        "NVLink domain rack1 (gpufleet_nvlink_domain): 3 tray(s) in one clique"
    )


def test_a_tray_in_another_clique_of_the_same_rack_fails():
    nodes = [tray("tray0", [(UUID_A, 32766)] * 4, claim={"rack": "r1"}),
             tray("tray1", [(UUID_A, 32766)] * 4, claim={"rack": "r1"}),
             tray("tray2", [(UUID_A, 1)] * 4, claim={"rack": "r1"})]
    out = nvlink.fabric_domain(nodes)
    assert [item["status"] for item in out["tray0"] + out["tray1"]] == [PASS, PASS]
    # one result for the tray (its four GPUs agree: the tray sits in the other clique as a whole), not one per GPU
    assert [item["status"] for item in out["tray2"]] == [FAIL]
    assert out["tray2"][0]["message"].startswith("rack r1: this tray is in cluster %s clique 1, the other trays in "
                                                 "cluster %s clique 32766 x2" % (UUID_A, UUID_A))
    assert out["tray2"][0]["expected"] == {"cluster_uuid": UUID_A, "clique_id": 32766}


def test_a_tray_of_another_cluster_in_the_same_rack_fails():
    nodes = [
        tray("tray%d" % index, [(UUID_A, 7)] * 4, settings={"gpufleet_nvlink_domain": "rack1"}) for index in range(2)
    ]
    nodes.append(tray("tray2", [(UUID_B, 7)] * 4, settings={"gpufleet_nvlink_domain": "rack1"}))
    out = nvlink.fabric_domain(nodes)
    assert [item["status"] for item in out["tray2"]] == [FAIL]  # one per tray whose GPUs agree
    assert out["tray2"][0]["measured"] == {"cluster_uuid": UUID_B, "clique_id": 7}


def test_mixed_cliques_within_one_unlabelled_cluster_fail_and_two_racks_pass():
    # without a domain label: the trays of one cluster UUID are one domain; another cluster is another rack
    nodes = [
        tray("a0", [(UUID_A, 5)] * 4),
        tray("a1", [(UUID_A, 5)] * 2 + [(UUID_A, 6)] * 2),
        tray("b0", [(UUID_B, 9)] * 4),
    ]
    out = nvlink.fabric_domain(nodes)
    assert statuses(out["a0"]) == [PASS] and statuses(out["b0"]) == [PASS]
    assert [item["subject"] for item in out["a1"]] == ["GPU2", "GPU3"]
    assert statuses(out["a1"]) == [FAIL, FAIL] and "the node's GPUs are in 2 NVLink cliques" in out["a1"][0]["message"]


def test_an_all_zero_cluster_uuid_fails():
    zero = "00000000-0000-0000-0000-000000000000"
    out = nvlink.fabric_domain([tray("t0", [(zero, 0)] * 4)])
    # one result naming the four GPUs (they print one pair), not one per GPU
    assert [item["status"] for item in out["t0"]] == [FAIL] and "no NVLink domain" in out["t0"][0]["message"]
    assert out["t0"][0]["message"].startswith("GPU0, GPU1, GPU2, GPU3 in no NVLink domain")


def test_single_node_profiles_are_not_judged_and_no_fabric_is_a_skip():
    hgx = NodeContext("h0", facts={"gpu": {"gpus": [{"index": 0, "fabric": {"cluster_uuid": UUID_A, "clique_id": 1}}]}},
                      profile=profile())
    bare = NodeContext("g0", facts={"gpu": {"gpus": [{"index": 0, "fabric": None}]}}, profile=nvl72())
    out = nvlink.fabric_domain([hgx, bare])
    assert "h0" not in out and statuses(out["g0"]) == [SKIP]


# --- thresholds without a published figure are labelled policy ----------------------------------------------


def test_fleet_spread_is_labelled_policy():
    out = fleet.fleet_relative({"a": 100.0, "b": 100.0, "c": 80.0}, 0.1, "docs/baselines.md 1: nccl-tests 0.9 margin")
    assert out["c"][0]["status"] == FAIL
    assert out["c"][0]["threshold_source"] == "policy (docs/baselines.md 9): docs/baselines.md 1: nccl-tests 0.9 margin"


def test_concurrent_ratio_is_labelled_policy():
    from gpufleet.checks import bench_network
    assert bench_network.CONCURRENT_SOURCE.startswith("policy (docs/baselines.md 9)")


def test_warn_bands_sit_below_the_typical_figures():
    profiles = load_profiles()
    # typical (docs/baselines.md 3a): A100 230-236, H100 ~470-482 with NVLS, H200 ~476-478
    for name, lowest_typical in (("dgx-a100-8", 230.0), ("hgx-h100-8", 470.0), ("hgx-h200-8", 476.0)):
        single = profiles[name]["thresholds"]["allreduce_single_node"]
        assert single["floor"] < single["warn_below"] < lowest_typical
    multi = profiles["dgx-a100-8"]["thresholds"]["allreduce_multi_node"]
    # OCI's figure averages the 1 GiB and 10 GiB rows (its source says so); no size is set: benchmarks.allreduce_multi
    # judges the largest size of the sweep, so a message_size there is refused (test_profile_keys.py)
    assert multi["message_size"] is None and "1 GiB and 10 GiB rows" in multi["source"]
