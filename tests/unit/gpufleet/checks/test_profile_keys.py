# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every key of the profile schema applies, or is refused naming why: an operator's number is never ignored.

For each key a profile may set (``SCHEMA`` and each threshold's fields in ``THRESHOLD_APPLIES``), the key set through
``apply_overrides`` (as ``gpufleet_profile_overrides`` sets it) on a shipped profile changes the outcome of the check
that reads it; ``match`` keys, which the overrides may not set, change the profile chosen when a profile file sets
them. Every other threshold field, and a key no check reads, is refused naming the key and why. The meta-tests hold
the two lists to the schema, so a new key without a test fails here.

Facts and records are built as the check tests build them (the recordings named; helpers mirror test_gpu_checks,
test_pcie_checks, test_network_checks, test_host_checks, test_benchmark_checks, test_bench_network_checks). Where a
case says SYNTHETIC, named fields of the built facts were changed. Expected outcomes are read by hand from the
recordings and the shipped profiles.
"""

from __future__ import annotations

import copy
import os
import sys
import tempfile

import pytest

from ansible_collections.gpufleet.acceptance.plugins.modules import nic_facts
from gpufleet.checks import bench_network, benchmarks, fleet, gpu, host, network, nvlink, pcie, topology
from gpufleet.checks import profiles as prof
from gpufleet.checks.model import NodeContext
from gpufleet.checks.verdict import Judge
from gpufleet.facts import host as host_inventory
from gpufleet.facts.gpu import build_inventory, merge_nvlink
from gpufleet.facts.nic import build_nic_facts
from gpufleet.facts.topology import analyse_topology
from gpufleet.parsers.registry import parse

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs"))

import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position

DELLA_H100 = "smi/princeton-della-h100-nvidia-smi-a-text-545.txt"  # 1x NVIDIA H100 80GB HBM3, 81559 MiB, 33 C
H100_8X = "smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt"  # 8x Gen5 x16 of Gen5 x16
H100_BRAKE = (
    "smi/gpud-nvidia-smi-q-text-8x-h100-535.183.01-fabric-completed-power-brake-swthermal-ACTIVE.txt"  # 700 W each
)
A10G_XML = "smi/telegraf-nvidia-smi-q-x-a10g-515-v11.xml.txt"  # GPU 0: x8 Gen1, max x16 Gen4, idle
A100_NVLINK = "smi/gpud-nvlink-status-8x-a100-sxm4-80gb.txt"  # 8 GPUs x 12 links x 25 GB/s
DGX_A100_TOPO = "topo/gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt"  # NV12 on all 28 pairs
NC_A100_TOPO = (
    "topo/azure-ncads-a100-v4-style-4x-a100-pcie-nv12-bridge-pairs-4numa.txt"  # GPU0-1, GPU2-3 NV12; SYS across
)
IBSTAT_NDR = "ib/gpud-ibstat-h100-8x-ndr400-ib-plus-bf3-bond-roce200-SPACES.txt"  # 8 NDR ports Active at 400
# the 8 ConnectX-7 of the h100-ndr-ib tree (its tree.txt), at Gen5 x16 of Gen5 x16
NDR_HCAS = ("mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9")
NO_PEERMEM = "misc/nccl-issue988-a100-lsmod-grep-peermem-EMPTY-not-loaded.txt"
PEERMEM = "misc/gpud-pr39-h100-lsmod-peermem-ib_core-nvidia-3lines-FROM-YAML.txt"
LOCKED_65536 = "misc/trinityx-issue188-slurmd-proc-limits-grep-locked-65536.txt"  # Max locked memory 65536
XID_LOG = "misc/gpud-dmesg-iso-xid-48-63-94-dbe-rowremap-plus-peermem-errors.txt"  # Xid 48, 63, 94
NCCL_SINGLE = "nccl/h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt"  # 512M 431.81 ... 4G 473.60
NCCL_MULTI = "nccl/h100-2node-16rank-ndr-ib-allreduce-RING-PARTIAL-issue290.txt"  # 2 nodes, 8 GiB busbw 89.90
IB_HDR_8M = "perf/superbench-ib_write_bw-loopback-8M-HDR.txt"  # 8388608 bytes, 201.80 Gb/s
IB_ALL_SIZES = "perf/ib_write_bw-gdr-a100-k8s-pod-all-sizes-report_gbits.txt"  # 4096: 74.83, 8388608: 80.96 Gb/s
NVB_H2D = "perf/nvbandwidth-readme-8gpu-h2d-ce-row.txt"  # CPU -> GPU0..7, lowest 25.94 (GPU1)
NVB_D2D = "perf/nvbandwidth-readme-8gpu-d2d-write-ce-matrix.txt"  # lowest off-diagonal 274.89 (6->0)
# SYNTHETIC fabric of one GPU, the values of
# smi/azure-fabric-completed-INSUFFICIENT-RESOURCES-cliqueid0-zero-clusteruuid-PR506.txt
FABRIC_NOT_READY = {"state": "Completed", "status": "Insufficient Resources", "clique_id": 0, "cluster_uuid": None}
OVERRIDES = "gpufleet_profile_overrides (replaces the profile's value)"


@pytest.fixture(name="shipped", scope="module")
def shipped_fixture():
    return prof.load_profiles()


# --- facts and records, as the check tests build them ---------------------------------------------------------------


def smi_facts(fixture_text, relative):
    if relative.endswith(".xml.txt"):
        return build_inventory(xml=parse("nvidia-smi-xml", fixture_text(relative)))
    return build_inventory(text=parse("nvidia-smi-q", fixture_text(relative)))


def nvlink_facts(fixture_text):
    status = parse("nvlink-status", fixture_text(A100_NVLINK))
    gpus = [{"index": item["index"], "name": None, "uuid": None, "pci_bus_id": None} for item in status["gpus"]]
    merge_nvlink(gpus, status, None)
    return {"gpus": gpus, "gpu_count": len(gpus)}


def topology_facts(fixture_text, relative):
    parsed = parse("topo", fixture_text(relative))
    return dict(parsed, **analyse_topology(parsed))


def nic_facts_ndr(tmp_path, fixture_text):
    # a fresh directory per rendering: a case renders the tree once per side
    root = render_tree.render(
        render_tree.named_tree("h100-ndr-ib"), os.path.join(tempfile.mkdtemp(dir=str(tmp_path)), "root")
    )
    sysfs = {"net": nic_facts.read_net(root), "infiniband": nic_facts.read_infiniband(root)}
    return build_nic_facts(sysfs, ibstat=parse("ibstat", fixture_text(IBSTAT_NDR)))


def host_facts(fixture_text, lsmod=PEERMEM, limits=None, log=None):
    """gpufleet_host as test_host_checks.host_facts builds it (kernel, driver banner SYNTHETIC as there)."""
    kernel = host_inventory.kernel_info("5.4.0-150-generic", None)
    driver = host_inventory.driver_info(
        "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.154.05  Thu Dec 28 15:37:48 UTC 2023\n"
    )
    modules = parse("kernel-modules", fixture_text(lsmod))
    facts = {
        "kernel": kernel,
        "driver": driver,
        "gpudirect_rdma": host_inventory.gpudirect_rdma(modules, kernel, driver, None),
        "memlock": host_inventory.memlock_info(
            parse("limits", fixture_text(limits)) if limits else None, {"soft": None, "hard": None, "error": None}
        ),
        "xid": host_inventory.xid_summary(
            parse("kernel-log", fixture_text(log)) if log else None, "dmesg" if log else None, None
        ),
    }
    return facts


def nccl_record(fixture_text, relative, kind, hosts, **extra):
    out = {
        "name": "all_reduce_perf",
        "command": ["all_reduce_perf"],
        "environment": {"NCCL_DEBUG": "INFO"},
        "message_size_bytes": None,
        "algorithm": None,
        "raw_output_path": None,
        "parsed": parse("nccl", fixture_text(relative)),
        "started": "2026-01-01T00:00:00Z",
        "duration_s": 1.0,
        "kind": kind,
        "hosts": hosts,
        "outcome": "ok",
        "reason": None,
        "rc": 0,
        "repeat": 0,
        "round": None,
        "group": None,
    }
    out.update(extra)
    return out


def pair_record(kind, parsed, hosts, **extra):
    out = {
        "name": kind,
        "kind": kind,
        "hosts": list(hosts),
        "outcome": "ok",
        "reason": "",
        "parsed": parsed,
        "round": None,
        "group": None,
        "repeat": 1,
    }
    out.update(extra)
    return out


def bench_node(name, records, profile, **facts):
    return NodeContext(name, facts=facts, profile=profile, settings={"benchmarks": list(records)})


def rail_ring(names, parsed, profile_of):
    """ib_write_bw over a ring of hosts on rail mlx5_1, each client recording its run (test_bench_network_checks)."""
    return [
        bench_node(
            name,
            [pair_record("ib_write_bw", parsed, (name, names[(i + 1) % len(names)]), group="mlx5_1->mlx5_1")],
            profile_of(name),
        )
        for i, name in enumerate(names)
    ]


def nvbandwidth_record(fixture_text, relative, testcase=None):
    parsed = parse("nvbandwidth", fixture_text(relative))
    if testcase:
        parsed["testcases"][0]["name"] = testcase  # SYNTHETIC: the recorded matrix under another testcase's name
    return pair_record("nvbandwidth", parsed, ("n1",))


# --- what each check says, in a few fields -------------------------------------------------------------------------


def statuses(results):
    return sorted({item["status"] for item in results})


def one(results):
    assert len(results) == 1, results
    item = results[0]
    return item["status"], item["expected"]


def gpu_count(profile, fixture_text, _tmp_path):
    return one(gpu.count(NodeContext("n1", facts={"gpu": smi_facts(fixture_text, DELLA_H100)}, profile=profile)))


def gpu_model(profile, fixture_text, _tmp_path):
    return one(gpu.model(NodeContext("n1", facts={"gpu": smi_facts(fixture_text, DELLA_H100)}, profile=profile)))


def gpu_memory(profile, fixture_text, _tmp_path):
    return one(gpu.memory(NodeContext("n1", facts={"gpu": smi_facts(fixture_text, DELLA_H100)}, profile=profile)))


def gpu_pairs(relative):
    def judge(profile, fixture_text, _tmp_path):
        results = topology.gpu_pairs(
            NodeContext("n1", facts={"topology": topology_facts(fixture_text, relative)}, profile=profile)
        )
        return statuses(results), len(results)

    return judge


def link_active(profile, fixture_text, _tmp_path):
    results = nvlink.link_active(NodeContext("n1", facts={"gpu": nvlink_facts(fixture_text)}, profile=profile))
    return statuses(results), len(results)


def link_speed(profile, fixture_text, _tmp_path):
    results = nvlink.link_speed(NodeContext("n1", facts={"gpu": nvlink_facts(fixture_text)}, profile=profile))
    return statuses(results), len(results)


def gpu_link(relative):
    def judge(profile, fixture_text, _tmp_path):
        return statuses(
            pcie.gpu_link(NodeContext("n1", facts={"gpu": smi_facts(fixture_text, relative)}, profile=profile))
        )

    return judge


def nic_link(width_current=None):
    def judge(profile, fixture_text, tmp_path):
        facts = nic_facts_ndr(tmp_path, fixture_text)
        if width_current:
            iface = next(item for item in facts["interfaces"] if item["rdma_device"] == "mlx5_0")
            iface["pcie"]["width_current"] = width_current  # SYNTHETIC: mlx5_0 given fewer lanes than the card has
        return sorted(
            (item["status"], item["subject"] or "")
            for item in pcie.nic_link(NodeContext("n1", facts={"nic": facts}, profile=profile))
            if item["status"] != "skip"
        )

    return judge


def fabric(profile, fixture_text, _tmp_path):
    facts = smi_facts(fixture_text, H100_BRAKE)
    facts["gpus"][4]["fabric"] = dict(FABRIC_NOT_READY)  # SYNTHETIC, see FABRIC_NOT_READY
    return [
        (item["status"], item["subject"])
        for item in gpu.fabric(NodeContext("n1", facts={"gpu": facts}, profile=profile))
    ]


def rdma_port_state(profile, fixture_text, tmp_path):
    results = network.check_rdma_port_state(
        NodeContext("n1", facts={"nic": nic_facts_ndr(tmp_path, fixture_text)}, profile=profile)
    )
    return [(item["status"], item["message"]) for item in results]


def consistency(profile, fixture_text, _tmp_path):
    facts = smi_facts(fixture_text, H100_BRAKE)
    facts["gpus"][3]["vbios_version"] = "96.00.89.00.01"  # SYNTHETIC: GPU3 of another VBIOS
    return [
        (item["status"], item["subject"])
        for item in gpu.consistency(NodeContext("n1", facts={"gpu": facts}, profile=profile))
    ]


def power_limit_relative(profile, fixture_text, _tmp_path):
    nodes = []
    for name in ("a", "b", "c"):
        facts = smi_facts(fixture_text, H100_BRAKE)
        if name == "c":
            facts["gpus"][5]["power_limit_w"] = 650.0  # SYNTHETIC: one GPU of c capped at 650 W
        nodes.append(NodeContext(name, facts={"gpu": facts}, profile=profile))
    out = power_limits(nodes)
    return {name: (items[0]["status"], items[0]["expected"]) for name, items in sorted(out.items())}


def power_limits(nodes):
    """fleet.power_limit over the nodes, as test_fleet_checks judges it."""
    return fleet._relative("fleet.power_limit", nodes)  # pylint: disable=protected-access


def memlock(profile, fixture_text, _tmp_path):
    node = NodeContext("n1", facts={"host": host_facts(fixture_text, limits=LOCKED_65536)}, profile=profile)
    return [item["status"] for item in host.check_memlock(node)]


def gpudirect(profile, fixture_text, _tmp_path):
    node = NodeContext("n1", facts={"host": host_facts(fixture_text, lsmod=NO_PEERMEM)}, profile=profile)
    return [item["status"] for item in host.check_gpudirect(node)]


def temperature(profile, fixture_text, _tmp_path):
    results = gpu.temperature(NodeContext("n1", facts={"gpu": smi_facts(fixture_text, DELLA_H100)}, profile=profile))
    return [(item["status"], item["expected"]) for item in results]


def xid(profile, fixture_text, _tmp_path):
    node = NodeContext("n1", facts={"host": host_facts(fixture_text, log=XID_LOG)}, profile=profile)
    return [(item["status"], item["subject"]) for item in host.check_xid(node)]


def allreduce_single(profile, fixture_text, _tmp_path):
    record = nccl_record(fixture_text, NCCL_SINGLE, "allreduce_single", ["n1"])
    [item] = benchmarks.check_allreduce_single(bench_node("n1", [record], profile))
    return item["status"], item["measured"], item["expected"], item["threshold_source"]


def allreduce_algo(profile, fixture_text, _tmp_path):
    record = nccl_record(fixture_text, NCCL_SINGLE, "allreduce_single", ["n1"], environment={"NCCL_NVLS_ENABLE": "0"})
    return [item["status"] for item in benchmarks.check_allreduce_algo(bench_node("n1", [record], profile))]


def allreduce_multi(profile, fixture_text, _tmp_path):
    record = nccl_record(fixture_text, NCCL_MULTI, "allreduce_multi", ["node005", "node007"])
    out = benchmarks.check_allreduce_multi(
        [bench_node("node005", [record], profile), bench_node("node007", [], profile)]
    )
    [item] = out["node007"]
    return item["status"], item["expected"], item["threshold_source"]


def ib_write_bw(relative):
    def judge(profile, fixture_text, _tmp_path):
        parsed = parse("ib-bw", fixture_text(relative))
        [item] = bench_network.check_ib_write_bw(rail_ring(["a", "b", "c"], parsed, lambda name: profile))["a"]
        # the words after the threshold's own source are the pair search's fault model, the same on both sides
        return item["status"], item["measured"], item["threshold_source"].split("; fault model")[0]

    return judge


def nvbandwidth(relative, testcase=None):
    def judge(profile, fixture_text, _tmp_path):
        node = bench_node("n1", [nvbandwidth_record(fixture_text, relative, testcase)], profile)
        [item] = bench_network.check_nvbandwidth(node)
        return item["status"], item["expected"], item["threshold_source"]

    return judge


# --- every key applies ---------------------------------------------------------------------------------------------

# (key, shipped profile, overrides set first on both sides or None, the key's override, the check, outcome with the
# shipped value, outcome with the override), each outcome read by hand from the recording and the profile.
APPLIES = [
    # 1 GPU in the della recording; hgx-h100-8 expects 8
    ("expect.gpu_count", "hgx-h100-8", None, {"expect": {"gpu_count": 1}}, gpu_count, ("fail", 8), ("pass", 1)),
    # "NVIDIA H100 80GB HBM3" matches 'H100', not 'A100'
    (
        "expect.gpu_name",
        "hgx-h100-8",
        None,
        {"expect": {"gpu_name": "A100"}},
        gpu_model,
        ("pass", "H100"),
        ("fail", "A100"),
    ),
    # 81559 MiB < 80 GiB = 81920 MiB; hgx-h100-8 sets no minimum
    (
        "expect.gpu_memory_min",
        "hgx-h100-8",
        None,
        {"expect": {"gpu_memory_min": "80 GiB"}},
        gpu_memory,
        ("skip", None),
        ("fail", 81920),
    ),
    # bridged pairs pass as bridged pairs; sold as NVSwitch the 4 SYS pairs fail
    (
        "expect.interconnect",
        "a100-pcie-bridged-4",
        None,
        {"expect": {"interconnect": "nvswitch"}},
        gpu_pairs(NC_A100_TOPO),
        (["pass"], 1),
        (["fail"], 4),
    ),
    # NV12 on all 28 pairs: NV12 expected passes, NV18 fails every pair
    (
        "expect.gpu_pair_link",
        "dgx-a100-8",
        None,
        {"expect": {"gpu_pair_link": "NV18"}},
        gpu_pairs(DGX_A100_TOPO),
        (["pass"], 1),
        (["fail"], 28),
    ),
    # 12 active links per GPU: 12 expected passes, 18 fails each of the 8 GPUs
    (
        "expect.nvlink_links_per_gpu",
        "dgx-a100-8",
        None,
        {"expect": {"nvlink_links_per_gpu": 18}},
        link_active,
        (["pass"], 1),
        (["fail"], 8),
    ),
    # 96 links at 25 GB/s: 25 passes, 26.562 fails each link
    (
        "expect.nvlink_link_speed",
        "dgx-a100-8",
        None,
        {"expect": {"nvlink_link_speed": "26.562 GB/s"}},
        link_speed,
        (["pass"], 1),
        (["fail"], 96),
    ),
    # every GPU is capable of Gen5: a Gen6 expectation fails
    ("expect.gpu_pcie_gen", "hgx-h100-8", None, {"expect": {"gpu_pcie_gen": 6}}, gpu_link(H100_8X), ["pass"], ["fail"]),
    # the A10G runs x8 of x16: fails against the card, passes against a SKU built at x8
    (
        "expect.gpu_pcie_width",
        "pcie-generic",
        None,
        {"expect": {"gpu_pcie_width": 8}},
        gpu_link(A10G_XML),
        ["fail"],
        ["pass"],
    ),
    # the 8 CX-7 run Gen5 x16 of Gen5 x16: a Gen6 expectation fails each
    (
        "expect.nic_pcie_gen",
        "hgx-h100-8",
        None,
        {"expect": {"nic_pcie_gen": 6}},
        nic_link(),
        [("pass", "")],
        [("fail", hca) for hca in NDR_HCAS],
    ),
    (
        "expect.nic_pcie_width",
        "hgx-h100-8",
        None,
        {"expect": {"nic_pcie_width": 8}},
        nic_link(width_current=8),
        [("fail", "mlx5_0")],
        [("pass", "")],
    ),
    # GPU4 not registered: Fabric Manager expected fails it, not expected warns
    (
        "expect.fabric_manager",
        "hgx-h100-8",
        None,
        {"expect": {"fabric_manager": False}},
        fabric,
        [("fail", "GPU4")],
        [("warn", "GPU4")],
    ),
    # a PCIe profile only warns; a multi-node NVLink domain needs every GPU registered
    (
        "expect.fabric_clique_scope",
        "pcie-generic",
        None,
        {"expect": {"fabric_clique_scope": "nvlink_domain"}},
        fabric,
        [("warn", "GPU4")],
        [("fail", "GPU4")],
    ),
    # 8 of 8 NDR ports Active at 400: 8 x 400 passes, 8 x 800 finds none at the rate
    (
        "expect.compute_rail",
        "hgx-h100-8",
        None,
        {"expect": {"compute_rail": {"rate": "800 Gb/s"}}},
        rdma_port_state,
        [("pass", "8 of 8 InfiniBand ports Active at >= 400 Gb/s (8 wanted)")],
        [("fail", "%s/1 is Active at 400 Gb/s, expected 800 Gb/s" % hca) for hca in NDR_HCAS],
    ),
    # c's lowest power limit 650 W is 7.1 % below the median 700: within 10 %, beyond 5 %
    (
        "fleet.max_below_median",
        "hgx-h100-8",
        None,
        {"fleet": {"max_below_median": "5 %"}},
        power_limit_relative,
        {"a": ("pass", 630.0), "b": ("pass", 630.0), "c": ("pass", 630.0)},
        {"a": ("pass", 665.0), "b": ("pass", 665.0), "c": ("fail", 665.0)},
    ),
    # GPU3's VBIOS differs: compared by default, not when the profile lists the model only
    (
        "fleet.consistent_gpu_fields",
        "hgx-h100-8",
        None,
        {"fleet": {"consistent_gpu_fields": ["name"]}},
        consistency,
        [("fail", "GPU3")],
        [("pass", None)],
    ),
    # memlock 65536 on a node of 8 IB rails: required fails, not required is not judged
    ("host.memlock_unlimited", "hgx-h100-8", None, {"host": {"memlock_unlimited": False}}, memlock, ["fail"], ["skip"]),
    # no peermem, no dma-buf (kernel 5.4, proprietary module) on a PCIe profile: warns; required: fails
    (
        "host.gpudirect_required",
        "pcie-generic",
        None,
        {"host": {"gpudirect_required": True}},
        gpudirect,
        ["warn"],
        ["fail"],
    ),
    # 33 C, no slowdown temperature printed: no limit; 30 C warns
    (
        "host.temperature_max",
        "pcie-generic",
        None,
        {"host": {"temperature_max": "30 C"}},
        temperature,
        [("skip", None)],
        [("warn", 30.0)],
    ),
    # Xid 48, 63, 94 fail; downgraded they warn
    (
        "host.xid_critical_fail",
        "generic",
        None,
        {"host": {"xid_critical_fail": False}},
        xid,
        [("fail", "Xid 48"), ("fail", "Xid 63"), ("fail", "Xid 94")],
        [("warn", "Xid 48"), ("warn", "Xid 63"), ("warn", "Xid 94")],
    ),
    # 473.60 at 4 GiB (16 GiB absent from the sweep) against 460
    (
        "thresholds.allreduce_single_node.floor",
        "hgx-h100-8",
        None,
        {"thresholds": {"allreduce_single_node": {"floor": "480 GB/s", "warn_below": None}}},
        allreduce_single,
        ("pass", 473.6, 460.0, None),
        ("fail", 473.6, 480.0, OVERRIDES),
    ),
    (
        "thresholds.allreduce_single_node.warn_below",
        "hgx-h100-8",
        None,
        {"thresholds": {"allreduce_single_node": {"warn_below": "475 GB/s"}}},
        allreduce_single,
        ("pass", 473.6, 460.0, None),
        ("warn", 473.6, 460.0, OVERRIDES),
    ),
    # the 512 MiB row: 431.81, below 460
    (
        "thresholds.allreduce_single_node.message_size",
        "hgx-h100-8",
        None,
        {"thresholds": {"allreduce_single_node": {"message_size": "512 MiB"}}},
        allreduce_single,
        ("pass", 473.6, 460.0, None),
        ("fail", 431.81, 460.0, OVERRIDES),
    ),
    # the run had NVLS off (NCCL_NVLS_ENABLE=0): a floor assuming NVLS warns
    (
        "thresholds.allreduce_single_node.nvls",
        "hgx-h100-8",
        None,
        {"thresholds": {"allreduce_single_node": {"nvls": False}}},
        allreduce_algo,
        ["warn"],
        ["pass"],
    ),
    (
        "thresholds.allreduce_single_node.source",
        "hgx-h100-8",
        None,
        {"thresholds": {"allreduce_single_node": {"source": "site contract, annex B"}}},
        allreduce_single,
        ("pass", 473.6, 460.0, None),
        ("pass", 473.6, 460.0, "site contract, annex B"),
    ),
    # two nodes, busbw 89.90 at 8 GiB
    (
        "thresholds.allreduce_multi_node.floor",
        "hgx-h100-8",
        None,
        {"thresholds": {"allreduce_multi_node": {"floor": "80 GB/s"}}},
        allreduce_multi,
        ("fail", 440.0, None),
        ("pass", 80.0, OVERRIDES),
    ),
    # the floor for 3 nodes does not judge a 2-node run: the NIC-bound floor of 8 x 400 Gb/s IB,
    # 0.9 x 0.94 x 400 = 338.4
    (
        "thresholds.allreduce_multi_node.nodes",
        "hgx-h100-8",
        None,
        {"thresholds": {"allreduce_multi_node": {"nodes": 3}}},
        allreduce_multi,
        ("fail", 440.0, None),
        ("fail", 338.4, "...; thresholds.allreduce_multi_node (440 GB/s) is for 3 nodes (its nodes), not 2"),
    ),
    (
        "thresholds.allreduce_multi_node.source",
        "hgx-h100-8",
        None,
        {"thresholds": {"allreduce_multi_node": {"source": "site figure"}}},
        allreduce_multi,
        ("fail", 440.0, None),
        ("fail", 440.0, "site figure"),
    ),
    # 201.80 Gb/s at 8 MiB against 380
    (
        "thresholds.ib_write_bw.floor",
        "hgx-h100-8",
        None,
        {"thresholds": {"ib_write_bw": {"floor": "200 Gb/s"}}},
        ib_write_bw(IB_HDR_8M),
        ("fail", 201.8, None),
        ("pass", 201.8, "profile hgx-h100-8 thresholds.ib_write_bw: " + OVERRIDES),
    ),
    # with a floor of 75: the 8 MiB row 80.96 passes, the 4 KiB row 74.83 fails
    (
        "thresholds.ib_write_bw.message_size",
        "hgx-h100-8",
        {"thresholds": {"ib_write_bw": {"floor": "75 Gb/s", "source": "site floor"}}},
        {"thresholds": {"ib_write_bw": {"message_size": "4 KiB"}}},
        ib_write_bw(IB_ALL_SIZES),
        ("pass", 80.96, "profile hgx-h100-8 thresholds.ib_write_bw: site floor"),
        ("fail", 74.83, "profile hgx-h100-8 thresholds.ib_write_bw: site floor"),
    ),
    (
        "thresholds.ib_write_bw.source",
        "hgx-h100-8",
        None,
        {"thresholds": {"ib_write_bw": {"source": "site figure"}}},
        ib_write_bw(IB_HDR_8M),
        ("fail", 201.8, None),
        ("fail", 201.8, "profile hgx-h100-8 thresholds.ib_write_bw: site figure"),
    ),
    # CPU -> GPU copies, lowest 25.94, against 48
    (
        "thresholds.h2d_bandwidth.floor",
        "hgx-h100-8",
        None,
        {"thresholds": {"h2d_bandwidth": {"floor": "25 GB/s"}}},
        nvbandwidth(NVB_H2D),
        ("fail", 48.0, None),
        ("pass", 25.0, OVERRIDES),
    ),
    (
        "thresholds.h2d_bandwidth.warn_below",
        "hgx-h100-8",
        {"thresholds": {"h2d_bandwidth": {"floor": "25 GB/s", "source": "site"}}},
        {"thresholds": {"h2d_bandwidth": {"warn_below": "26 GB/s"}}},
        nvbandwidth(NVB_H2D),
        ("pass", 25.0, "site"),
        ("warn", 25.0, "site"),
    ),
    (
        "thresholds.h2d_bandwidth.source",
        "hgx-h100-8",
        None,
        {"thresholds": {"h2d_bandwidth": {"source": "site figure"}}},
        nvbandwidth(NVB_H2D),
        ("fail", 48.0, None),
        ("fail", 48.0, "site figure"),
    ),
    # the same row as GPU -> CPU copies (SYNTHETIC testcase name)
    (
        "thresholds.d2h_bandwidth.floor",
        "hgx-h100-8",
        None,
        {"thresholds": {"d2h_bandwidth": {"floor": "25 GB/s"}}},
        nvbandwidth(NVB_H2D, "device_to_host_memcpy_ce"),
        ("fail", 48.0, None),
        ("pass", 25.0, OVERRIDES),
    ),
    (
        "thresholds.d2h_bandwidth.warn_below",
        "hgx-h100-8",
        {"thresholds": {"d2h_bandwidth": {"floor": "25 GB/s", "source": "site"}}},
        {"thresholds": {"d2h_bandwidth": {"warn_below": "26 GB/s"}}},
        nvbandwidth(NVB_H2D, "device_to_host_memcpy_ce"),
        ("pass", 25.0, "site"),
        ("warn", 25.0, "site"),
    ),
    (
        "thresholds.d2h_bandwidth.source",
        "hgx-h100-8",
        None,
        {"thresholds": {"d2h_bandwidth": {"source": "site figure"}}},
        nvbandwidth(NVB_H2D, "device_to_host_memcpy_ce"),
        ("fail", 48.0, None),
        ("fail", 48.0, "site figure"),
    ),
    # GPU <- GPU copies, lowest 274.89, against 335
    (
        "thresholds.p2p_bandwidth.floor",
        "hgx-h100-8",
        None,
        {"thresholds": {"p2p_bandwidth": {"floor": "270 GB/s"}}},
        nvbandwidth(NVB_D2D),
        ("fail", 335.0, None),
        ("pass", 270.0, OVERRIDES),
    ),
    (
        "thresholds.p2p_bandwidth.warn_below",
        "hgx-h100-8",
        {"thresholds": {"p2p_bandwidth": {"floor": "270 GB/s", "source": "site"}}},
        {"thresholds": {"p2p_bandwidth": {"warn_below": "275 GB/s"}}},
        nvbandwidth(NVB_D2D),
        ("pass", 270.0, "site"),
        ("warn", 270.0, "site"),
    ),
    (
        "thresholds.p2p_bandwidth.source",
        "hgx-h100-8",
        None,
        {"thresholds": {"p2p_bandwidth": {"source": "site figure"}}},
        nvbandwidth(NVB_D2D),
        ("fail", 335.0, None),
        ("fail", 335.0, "site figure"),
    ),
]


def _merged(*overrides):
    out = {}
    for override in overrides:
        for section, value in (override or {}).items():
            for key, entry in value.items():
                if isinstance(entry, dict):
                    out.setdefault(section, {}).setdefault(key, {}).update(entry)
                else:
                    out.setdefault(section, {})[key] = entry
    return out


def _comparable(outcome, shipped_outcome):
    """Sources of shipped profiles are long citations: a case writes None for 'the shipped one', '...' for its end."""
    if not isinstance(outcome, tuple) or not isinstance(shipped_outcome, tuple):
        return outcome
    out = []
    for got, want in zip(outcome, shipped_outcome):
        if isinstance(got, str) and isinstance(want, str) and want.startswith("..."):
            got = "..." + got[len(got) - len(want) + 3 :] if got.endswith(want[3:]) else got
        elif want is None and isinstance(got, str) and ("docs/baselines.md" in got):
            got = None
        out.append(got)
    return tuple(out)


@pytest.mark.parametrize("key, name, base, override, judge, before, after", APPLIES, ids=[case[0] for case in APPLIES])
def test_the_key_set_by_the_overrides_changes_the_outcome(
    shipped, fixture_text, tmp_path, key, name, base, override, judge, before, after
):
    assert key.split(".")[-1] in str(override), "the case sets its own key"
    start = prof.apply_overrides(shipped[name], base) if base else shipped[name]
    assert _comparable(judge(start, fixture_text, tmp_path), before) == before
    changed = prof.apply_overrides(shipped[name], _merged(base, override))
    assert _comparable(judge(changed, fixture_text, tmp_path), after) == after


# match: the overrides may not set it (the profile is chosen before they apply); a profile file's match chooses
MATCHES = [
    # 8x H100 SXM: hgx-h100-8 matches; with its count set to 4 it does not, and generic is the fallback
    ("match.gpu_count", {"gpu_count": 4}, "generic"),
    # with its name pattern set to A100 it does not match an H100 either
    ("match.gpu_name", {"gpu_name": "A100"}, "generic"),
]


@pytest.mark.parametrize("key, match, chosen", MATCHES, ids=[case[0] for case in MATCHES])
def test_a_match_key_in_a_profile_file_changes_the_profile_chosen(shipped, fixture_text, key, match, chosen):
    facts = {"gpu": smi_facts(fixture_text, H100_8X)}
    assert prof.select_profile(facts, None, None, shipped)[0]["name"] == "hgx-h100-8"
    document = copy.deepcopy(shipped["hgx-h100-8"]["document"])
    document["match"].update(match)
    edited = dict(shipped, **{"hgx-h100-8": prof.validate_profile(document, origin="hgx-h100-8.yml")})
    assert prof.select_profile(facts, None, None, edited)[0]["name"] == chosen
    with pytest.raises(prof.ProfileError) as caught:
        prof.apply_overrides(shipped["hgx-h100-8"], {"match": match})
    assert str(caught.value).endswith(
        ": match: the profile is chosen before its overrides apply, so match cannot change the "
        "choice: name the profile with gpufleet_profile"
    ), key


# --- what cannot apply is refused, naming why ----------------------------------------------------------------------

ONLY_SINGLE = (
    "applies only to allreduce_single_node, not %s: benchmarks.allreduce_algo reads it for the single-node floor only"
)
ONLY_MULTI = "applies only to allreduce_multi_node, not %s: only thresholds.allreduce_multi_node takes a node count"
NO_ALGORITHM = (
    "applies to no threshold, not %s: no check reads it: the runs' NCCL_ALGO is gpufleet_nccl_algo, which "
    "benchmarks.allreduce_algo reports"
)
NVBANDWIDTH_SIZE = (
    "message_size applies only to allreduce_single_node, ib_write_bw, not %s: bench_network.nvbandwidth judges "
    "every copy at nvbandwidth's own buffer size"
)
NO_BAND = "warn_below applies only to allreduce_single_node, h2d_bandwidth, d2h_bandwidth, p2p_bandwidth, not %s: %s"

# (threshold, field, value, why): every field THRESHOLD_APPLIES leaves out for the threshold
REFUSED = [
    ("allreduce_single_node", "algorithm", "RING", "algorithm " + NO_ALGORITHM % "allreduce_single_node"),
    ("allreduce_single_node", "nodes", 2, "nodes " + ONLY_MULTI % "allreduce_single_node"),
    (
        "allreduce_multi_node",
        "warn_below",
        "450 GB/s",
        NO_BAND % ("allreduce_multi_node", "benchmarks.allreduce_multi has no warning band (below the floor fails)"),
    ),
    (
        "allreduce_multi_node",
        "message_size",
        "8 GiB",
        "message_size applies only to allreduce_single_node, ib_write_bw, not allreduce_multi_node: "
        "benchmarks.allreduce_multi "
        "judges the largest size of the sweep (gpufleet_allreduce_max_size)",
    ),
    ("allreduce_multi_node", "algorithm", "RING", "algorithm " + NO_ALGORITHM % "allreduce_multi_node"),
    ("allreduce_multi_node", "nvls", True, "nvls " + ONLY_SINGLE % "allreduce_multi_node"),
    (
        "ib_write_bw",
        "warn_below",
        "390 Gb/s",
        NO_BAND % ("ib_write_bw", "bench_network.ib_write_bw has no warning band (a rail below the floor fails)"),
    ),
    ("ib_write_bw", "algorithm", "RING", "algorithm " + NO_ALGORITHM % "ib_write_bw"),
    ("ib_write_bw", "nvls", True, "nvls " + ONLY_SINGLE % "ib_write_bw"),
    ("ib_write_bw", "nodes", 2, "nodes " + ONLY_MULTI % "ib_write_bw"),
    ("h2d_bandwidth", "message_size", "64 MiB", NVBANDWIDTH_SIZE % "h2d_bandwidth"),
    ("h2d_bandwidth", "algorithm", "RING", "algorithm " + NO_ALGORITHM % "h2d_bandwidth"),
    ("h2d_bandwidth", "nvls", False, "nvls " + ONLY_SINGLE % "h2d_bandwidth"),
    ("h2d_bandwidth", "nodes", 2, "nodes " + ONLY_MULTI % "h2d_bandwidth"),
    ("d2h_bandwidth", "message_size", "64 MiB", NVBANDWIDTH_SIZE % "d2h_bandwidth"),
    ("d2h_bandwidth", "algorithm", "RING", "algorithm " + NO_ALGORITHM % "d2h_bandwidth"),
    ("d2h_bandwidth", "nvls", False, "nvls " + ONLY_SINGLE % "d2h_bandwidth"),
    ("d2h_bandwidth", "nodes", 2, "nodes " + ONLY_MULTI % "d2h_bandwidth"),
    ("p2p_bandwidth", "message_size", "64 MiB", NVBANDWIDTH_SIZE % "p2p_bandwidth"),
    ("p2p_bandwidth", "algorithm", "RING", "algorithm " + NO_ALGORITHM % "p2p_bandwidth"),
    ("p2p_bandwidth", "nvls", True, "nvls " + ONLY_SINGLE % "p2p_bandwidth"),
    ("p2p_bandwidth", "nodes", 2, "nodes " + ONLY_MULTI % "p2p_bandwidth"),
]


@pytest.mark.parametrize("name, field, value, why", REFUSED, ids=["%s.%s" % case[:2] for case in REFUSED])
def test_a_field_no_check_reads_is_refused_naming_the_threshold(shipped, name, field, value, why):
    key = "thresholds.%s.%s" % (name, field)
    with pytest.raises(prof.ProfileError) as caught:
        prof.apply_overrides(shipped["hgx-h100-8"], {"thresholds": {name: {field: value}}})
    assert str(caught.value).endswith(": %s: %s; leave it out" % (key, why))
    # in a profile file as well
    document = copy.deepcopy(shipped["hgx-h100-8"]["document"])
    document["thresholds"][name][field] = value
    with pytest.raises(prof.ProfileError) as caught:
        prof.validate_profile(document, origin="site.yml")
    assert str(caught.value) == "site.yml: %s: %s; leave it out" % (key, why)
    # null leaves it unset (an override's way to remove a field)
    document["thresholds"][name][field] = None
    assert (
        prof.validate_profile(document, origin="site.yml")["thresholds"][name]["floor"]
        == shipped["hgx-h100-8"]["thresholds"][name]["floor"]
    )


NOT_READ = [
    (
        "expect.nvlink_domain_gpus",
        {"expect": {"nvlink_domain_gpus": 72}},
        "no check reads it: nvlink.fabric_domain judges one ClusterUUID/CliqueId per NVLink domain, "
        "not the domain's GPU count",
    ),
]


@pytest.mark.parametrize("key, override, why", NOT_READ, ids=[case[0] for case in NOT_READ])
def test_a_key_no_check_reads_is_refused(shipped, key, override, why):
    with pytest.raises(prof.ProfileError) as caught:
        prof.apply_overrides(shipped["gb200-nvl72"], override)
    assert str(caught.value).endswith(": %s: %s; leave it out" % (key, why))


def test_a_threshold_the_profile_lacks_is_not_adjusted_without_its_floor(shipped):
    # generic (the fallback, and the profile the preflight checks overrides against when none is named) has no
    # thresholds
    with pytest.raises(prof.ProfileError) as caught:
        prof.apply_overrides(shipped["generic"], {"thresholds": {"allreduce_single_node": {"warn_below": "470 GB/s"}}})
    assert str(caught.value).endswith(
        ": thresholds.allreduce_single_node: profile generic has no thresholds.allreduce_single_node to adjust (given: "
        "warn_below): give its floor and source too, or name a profile that has one with gpufleet_profile"
    )
    full = prof.apply_overrides(
        shipped["generic"], {"thresholds": {"allreduce_single_node": {"floor": "460 GB/s", "warn_below": "470 GB/s"}}}
    )
    assert (
        full["thresholds"]["allreduce_single_node"]["floor"],
        full["thresholds"]["allreduce_single_node"]["warn_below"],
    ) == (460.0, 470.0)


def test_the_preflight_refuses_a_field_no_check_reads_naming_the_variable_and_the_key():
    judge = Judge()
    choice = {"claim": None, "profile": "hgx-h100-8", "overrides": {"thresholds": {"ib_write_bw": {"nvls": True}}}}
    [problem] = judge.validate_host("node-a", choice)
    assert problem.startswith("node-a: gpufleet_profile_overrides: ")
    assert problem.endswith(
        "hgx-h100-8.yml + gpufleet_profile_overrides: thresholds.ib_write_bw.nvls: nvls applies only to "
        "allreduce_single_node, not ib_write_bw: benchmarks.allreduce_algo reads it for the single-node "
        "floor only; leave it out"
    )
    # no profile named: checked against generic, the same key is named (not generic's missing floor)
    [problem] = judge.validate_host("node-a", dict(choice, profile=None))
    assert "generic.yml + gpufleet_profile_overrides: thresholds.ib_write_bw.nvls: nvls applies only to" in problem
    [problem] = judge.validate_host("node-a", dict(choice, overrides={"match": {"gpu_count": 4}}))
    assert problem.endswith(
        ": match: the profile is chosen before its overrides apply, so match cannot change the choice: "
        "name the profile with gpufleet_profile"
    )


# --- cases a key covers only in part: the result says which threshold was not applied --------------------------------


def test_a_hosts_own_max_below_median_applies_though_another_host_of_its_cohort_comes_first(shipped, fixture_text):
    # Before, the cohort's limit was read off its first member: c's stricter 5 % was ignored (c passed against a's
    # 10 %).
    strict = prof.apply_overrides(shipped["hgx-h100-8"], {"fleet": {"max_below_median": "5 %"}})
    nodes = []
    for name, profile in (("a", shipped["hgx-h100-8"]), ("b", shipped["hgx-h100-8"]), ("c", strict)):
        facts = smi_facts(fixture_text, H100_BRAKE)
        if name == "c":
            facts["gpus"][5]["power_limit_w"] = 650.0  # SYNTHETIC: one GPU of c capped at 650 W, 7.1 % below 700
        nodes.append(NodeContext(name, facts={"gpu": facts}, profile=profile))
    out = power_limits(nodes)
    judged = {name: (items[0]["status"], items[0]["expected"]) for name, items in sorted(out.items())}
    assert judged == {"a": ("pass", 630.0), "b": ("pass", 630.0), "c": ("fail", 665.0)}
    assert out["c"][0]["threshold_source"] == "policy (docs/baselines.md 9): profile hgx-h100-8: " + OVERRIDES


def test_a_hosts_own_max_below_median_applies_to_the_single_node_all_reduce_too(shipped, fixture_text):
    # Before, benchmarks.allreduce_relative read the limit off the cohort's first member: c's stricter 5 % was ignored
    # (c passed against a's 10 %).
    strict = prof.apply_overrides(shipped["hgx-h100-8"], {"fleet": {"max_below_median": "5 %"}})
    nodes = []
    for name, value in (("a", 473.6), ("b", 470.0), ("c", 440.0), ("d", 475.0)):
        record = nccl_record(fixture_text, NCCL_SINGLE, "allreduce_single", [name])
        record["parsed"]["rows"] = []  # SYNTHETIC figures on the real envelope
        record["parsed"]["busbw_at_largest_size_gbs"] = value
        nodes.append(bench_node(name, [record], strict if name == "c" else shipped["hgx-h100-8"]))
    out = benchmarks.check_allreduce_relative(nodes)
    judged = {name: (items[0]["status"], items[0]["expected"]) for name, items in sorted(out.items())}
    # median (470 + 473.6) / 2 = 471.8: 10 % under it is 424.62, 5 % is 448.21; c's 440 is 6.7 % under
    assert judged == {"a": ("pass", 424.62), "b": ("pass", 424.62), "c": ("fail", 448.21), "d": ("pass", 424.62)}
    assert out["c"][0]["threshold_source"] == "policy (docs/baselines.md 9): profile hgx-h100-8: " + OVERRIDES


def test_ib_write_bw_sizes_that_differ_between_profiles_are_named_not_dropped(shipped, fixture_text):
    # a's profile names 4 KiB, b's and c's 8 MiB: no single size applies to the ring; before, the largest size was
    # judged
    # without a word
    parsed = parse("ib-bw", fixture_text(IB_ALL_SIZES))
    small = prof.apply_overrides(
        shipped["hgx-h100-8"], {"thresholds": {"ib_write_bw": {"floor": "75 Gb/s", "message_size": "4 KiB"}}}
    )
    large = prof.apply_overrides(shipped["hgx-h100-8"], {"thresholds": {"ib_write_bw": {"floor": "75 Gb/s"}}})
    out = bench_network.check_ib_write_bw(
        rail_ring(["a", "b", "c"], parsed, lambda name: small if name == "a" else large)
    )
    [item] = out["b"]
    assert (item["status"], item["measured"]) == ("pass", 80.96)
    assert (
        "at 8388608 bytes, the largest size printed; the profiles' thresholds.ib_write_bw.message_size differ "
        "(4096, 8388608 bytes), so none was applied"
    ) in item["message"]
    # one size named, absent from the output: judged at the largest, naming the size
    only_4m = prof.apply_overrides(
        shipped["hgx-h100-8"], {"thresholds": {"ib_write_bw": {"floor": "200 Gb/s", "message_size": "4 MiB"}}}
    )
    [item] = bench_network.check_ib_write_bw(
        rail_ring(["a", "b", "c"], parse("ib-bw", fixture_text(IB_HDR_8M)), lambda name: only_4m)
    )["a"]
    assert (
        "at 8388608 bytes, the largest size printed; thresholds.ib_write_bw.message_size 4194304 bytes is not in the "
        "output"
    ) in item["message"]


# --- the lists above are the schema ---------------------------------------------------------------------------------


def _schema_keys():
    return {"%s.%s" % (section, key) for section, keys in prof.SCHEMA.items() for key in keys}


def _applied_threshold_keys():
    return {
        "thresholds.%s.%s" % (name, field)
        for name in prof.THRESHOLD_DIMENSIONS
        for field in prof.THRESHOLD_APPLIES[name]
    }


def test_every_key_a_profile_may_set_has_a_test_that_it_applies():
    covered = {case[0] for case in APPLIES} | {case[0] for case in MATCHES}
    assert covered == _schema_keys() | _applied_threshold_keys()
    assert set(prof.THRESHOLD_APPLIES) == set(prof.THRESHOLD_DIMENSIONS)
    assert all(set(fields) <= set(prof.THRESHOLD_FIELDS) for fields in prof.THRESHOLD_APPLIES.values())


def test_every_key_a_profile_may_not_set_has_a_test_that_it_is_refused():
    every_field = {
        "thresholds.%s.%s" % (name, field) for name in prof.THRESHOLD_DIMENSIONS for field in prof.THRESHOLD_FIELDS
    }
    refused = {"thresholds.%s.%s" % case[:2] for case in REFUSED}
    assert refused == every_field - _applied_threshold_keys()
    assert {case[0] for case in NOT_READ} == set(prof.NOT_READ)
    assert not set(prof.NOT_READ) & _schema_keys()
