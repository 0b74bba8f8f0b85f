# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests that can fail: playbooks/validate_cluster.yml judges the replayed demo fleet.

One run of the product's playbook, unchanged, on the whole of inventories/simulated/ (module
fixture); the test reads the results directory it writes (hosts/<host>.json, fleet.json). Every
expected verdict, check id and measured / expected figure below is written by hand from the
recording the comment names (inventories/simulated/nodes/<host>.yml says which file answers which
command). Each node is judged only on the fact groups its recordings back (host_vars
``gpufleet_fact_groups``): the checks of the other groups must skip, never pass.
"""

from __future__ import annotations

import glob
import json
import os
import re

import pytest
import yaml

from gpufleet.report.cost import cost_view
from gpufleet.results.compact import expand_document

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIM = os.path.join(REPO_ROOT, "inventories", "simulated")

ACCEPT, WARNINGS, INCOMPLETE, REJECT = "ACCEPT", "ACCEPT WITH WARNINGS", "INCOMPLETE", "REJECT"

# host -> (verdict, ids of the checks that fail). Reasons: inventories/simulated/README.md.
# dgx-a100-nv12 and a100-pcie-nvlink-bridge-pairs are backed by `topo -m` (and nvlink) recordings only: their claimed
# GPU model, count, memory, NVLinks per GPU and NICs were never measured, so they are INCOMPLETE, not ACCEPT (an
# ACCEPT means every required item was measured). della-h100-1gpu has every claimed item measured (GPU model, count
# and memory from `nvidia-smi -q`; a single PCIe GPU has no pair and no NVLink to verify; it is sold with no NIC).
EXPECTED = {
    "dgx-a100-nv12": (INCOMPLETE, set()),
    "a100-pcie-nvlink-bridge-pairs": (INCOMPLETE, set()),
    "della-h100-1gpu": (ACCEPT, set()),
    # + the two-node all-reduce it starts over itself and hgx-h100-rdma-down (nccl/h100-2node-...-issue290.txt: 155.57 GB/s)
    "hgx-h100-nv18": (REJECT, {"gpu.throttle", "network.ib_port_errors", "benchmarks.allreduce_multi"}),
    "sold-8x-nvlink-rtx4090-pcie": (REJECT, {"topology.gpu_pairs", "gpu.processes"}),
    "azure-a100-nvlink-inactive": (REJECT, {"facts.nic"}),
    "hgx-h100-rdma-down": (REJECT, {"gpu.processes", "gpu.throttle", "network.nic_speed", "benchmarks.allreduce_multi"}),
    "azure-a100-retired-pages-synthetic": (REJECT, {"gpu.retired_pages"}),
    "frontend-1g-copper": (REJECT, {"network.nic_speed"}),
    "i40e-sfp-speed-unknown": (REJECT, {"network.nic_speed"}),
    "hgx-h100-xid-peermem": (REJECT, {"host.memlock", "host.xid"}),
    "dgx-spark-roce-2-down": (REJECT, {"network.nic_speed", "network.rdma_port_state"}),
    # the two priced offers of the cost view (EDITED -q without the power brake, SYNTHETIC clean IB counters): the
    # recording's PCIe replay counts (43-82 per GPU, one reading without a time base) are noted, not judged (they
    # warned before: ACCEPT WITH WARNINGS)
    "hgx-h100-offer-nvlink": (ACCEPT, set()),
    "h100-offer-pcie-only": (ACCEPT, set()),
}
# nothing measured on these was wrong (the INCOMPLETE ones lack evidence, not health)
HEALTHY = sorted(host for host, (verdict, _failed) in EXPECTED.items() if verdict in (ACCEPT, INCOMPLETE))

# The fact group each check reads (the requires= of its registration), written out here.
GROUP_OF = {"topology.": "topology", "numa.": "topology", "gpu.": "gpu", "nvlink.": "gpu", "pcie.gpu_link": "gpu",
            "pcie.nic_link": "nic", "network.": "nic", "host.": "host", "fleet.hca_firmware": "nic", "fleet.mtu": "nic",
            "fleet.gpu_": "gpu", "fleet.nvlink_active_links": "gpu", "fleet.max_sm_clock": "gpu", "fleet.power_limit": "gpu",
            "software.cuda": "gpu", "software.nccl": "host", "software.ofed": "host", "software.mpi": "host"}


def _group_of(check_id):
    for prefix, group in GROUP_OF.items():
        if check_id.startswith(prefix):
            return group
    return None


@pytest.fixture(name="run", scope="module")
def run_fixture(simulated_validate_run):
    """``{"hosts": {host: record}, "fleet": fleet.json, "stdout": str}`` of one validate_cluster.yml run (shared)."""
    proc = simulated_validate_run
    run_dir = proc["results_dir"]
    # The verdicts are written, then the run fails for each node not accepted (REJECT, INCOMPLETE), and exits with the
    # verdicts' code: 3, some node REJECT (gpufleet/results/exit_codes.py), so CI sees this fleet as not accepted.
    assert proc["rc"] == 3, proc["stdout"][-4000:] + proc["stderr"][-4000:]
    hosts = {}
    for path in glob.glob(os.path.join(run_dir, "hosts", "*.json")):
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
        hosts[record["host"]] = record
    with open(os.path.join(run_dir, "fleet.json"), encoding="utf-8") as handle:
        fleet = json.load(handle)
    with open(os.path.join(run_dir, "results.json"), encoding="utf-8") as handle:
        document = json.load(handle)
    return {"hosts": hosts, "fleet": fleet, "stdout": proc["stdout"], "results_json": document}


def _results(record, check_id, status=None):
    return [item for item in record["checks"] if item["id"] == check_id and (status is None or item["status"] == status)]


def _by_subject(items):
    by = {item["subject"]: item for item in items}
    assert len(by) == len(items), [item["subject"] for item in items]
    return by


def _one(record, check_id, status):
    found = _results(record, check_id, status)
    assert len(found) == 1, (record["host"], check_id, status, found)
    return found[0]


def _fact_groups(host):
    with open(os.path.join(SIM, "host_vars", host + ".yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["gpufleet_fact_groups"]


def test_every_node_judged_and_the_fleet_rejected(run):
    with open(os.path.join(SIM, "hosts.yml"), encoding="utf-8") as handle:
        hosts = yaml.safe_load(handle)["all"]["children"]["simulated"]["hosts"]
    assert sorted(hosts) == sorted(EXPECTED) == sorted(run["hosts"])
    fleet = run["fleet"]
    assert fleet["verdict"] == REJECT and fleet["nodes"] == 14
    assert fleet["counts"] == {"ACCEPT": 3, "ACCEPT WITH WARNINGS": 0, "INCOMPLETE": 2, "REJECT": 9, "UNREACHABLE": 0}
    for host, (verdict, _failed) in EXPECTED.items():
        assert fleet["node_verdicts"][host]["verdict"] == verdict, host
        # the one line per node the playbook prints (one list, a line per node: "msg": [..., "<host>: <verdict> ...", ...])
        assert '\n        "%s: %s' % (host, verdict) in run["stdout"].split("TASK [Verdict | one line per node]")[1], host


def _referenced(host):
    """The indexes into values that a host of results.json refers to (its check rows, coverage items and reasons)."""
    coverage = host.get("coverage") or {}
    rows = [row if isinstance(row, list) else [row] for row in host["checks"] + (coverage.get("items") or [])]
    return {index for row in rows for index in row if index is not None} | set(coverage.get("incomplete") or [])


def _compact_size(value):
    return len(json.dumps(value, separators=(",", ":")))


def test_results_json_holds_every_record_but_its_readings_and_a_healthy_node_in_10_kb(run):
    document = run["results_json"]
    assert document["schema"] == "gpufleet.results/v2"
    expanded = expand_document(document)["hosts"]
    assert sorted(expanded) == sorted(run["hosts"])
    for host, record in run["hosts"].items():
        whole = {key: value for key, value in record.items()
                 if key not in ("schema", "facts", "raw", "health_after")}
        whole["benchmarks"] = [{key: value for key, value in bench.items() if key != "parsed"}
                               for bench in record["benchmarks"]]
        assert expanded[host] == dict(whole, record="hosts/%s.json" % host), host
    # what a healthy node adds to the file: its entry, and the values no other node of the fleet refers to
    referenced = {host: _referenced(entry) for host, entry in document["hosts"].items()}
    healthy = [host for host, (verdict, _failed) in EXPECTED.items() if verdict == ACCEPT]
    assert len(healthy) == 3
    for host in healthy:
        others = set().union(*(refs for name, refs in referenced.items() if name != host))
        own = sum(_compact_size(document["values"][index]) + 1 for index in referenced[host] - others)
        assert _compact_size(document["hosts"][host]) + own <= 10 * 1024, host


@pytest.mark.parametrize("host", sorted(EXPECTED))
def test_verdict_and_failing_check_ids(run, host):
    record = run["hosts"][host]
    verdict, failed = EXPECTED[host]
    assert record["verdict"] == verdict, [(item["id"], item["message"]) for item in record["checks"] if item["status"] == "fail"]
    assert set(record["failed"]) == failed
    assert not [item for item in record["checks"] if item["status"] == "error"], host
    # only recorded evidence: no fact group fails for want of a recording
    assert set(record["fact_errors"]) == ({"nic"} if host == "azure-a100-nvlink-inactive" else set())


@pytest.mark.parametrize("host", sorted(EXPECTED))
def test_groups_left_out_only_skip(run, host):
    """A group the node's recordings do not back is not gathered, and every check reading it skips."""
    record = run["hosts"][host]
    wanted = _fact_groups(host)
    for group, facts in record["facts"].items():
        assert (facts is not None) == (group in wanted and group not in record["fact_errors"]), (host, group)
    for item in record["checks"]:
        group = _group_of(item["id"])
        if group is not None and group not in wanted:
            assert item["status"] == "skip" and "%s facts not gathered" % group in item["message"], (host, item)


@pytest.mark.parametrize("host", HEALTHY)
def test_healthy_nodes_have_no_warning_or_failure(run, host):
    record = run["hosts"][host]
    assert [item for item in record["checks"] if item["status"] in ("warn", "fail", "error")] == []
    assert record["failed"] == []


@pytest.mark.parametrize("host", ["hgx-h100-offer-nvlink", "h100-offer-pcie-only"])
def test_pcie_replays_of_one_reading_noted_not_judged(run, host):
    # smi/gpud-nvidia-smi-q-8x-h100-535.161.08-EDITED-clock-events-not-active.txt: "Replays Since Reset" 67, 63, 52,
    # 43, 49, 53, 82, 67 on the eight GPUs: a count since an unknown start, no time base, so a pass naming them
    noted = _one(run["hosts"][host], "gpu.pcie_replay", "pass")
    assert noted["measured"] == {"GPU0": 67, "GPU1": 63, "GPU2": 52, "GPU3": 43, "GPU4": 49, "GPU5": 53, "GPU6": 82,
                                 "GPU7": 67}
    assert noted["message"].startswith("noted, not judged: PCIe replays since the last driver load or GPU reset: GPU0 67")


def test_dgx_a100_nv12_topology_as_sold(run):
    record = run["hosts"]["dgx-a100-nv12"]
    # topo/gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt: NV12 in all 28 GPU pair cells
    pairs = _one(record, "topology.gpu_pairs", "pass")
    assert (pairs["measured"], pairs["expected"]) == ("NV12", "NV12")
    # GPU NUMA affinity 1,1,3,3,5,5,7,7
    assert _one(record, "numa.gpu_spread", "pass")["measured"] == [1, 3, 5, 7]


def test_dgx_a100_nv12_incomplete_naming_what_was_not_measured(run):
    record = run["hosts"]["dgx-a100-nv12"]
    coverage = record["coverage"]
    # claim: model, count, memory, nvswitch pairs, NVLink on each of 8 GPUs, 2 NIC lines, the IB rails = 15 items;
    # only the pair interconnect is measured (topo -m); gpu and nic facts are not gathered (gpufleet_fact_groups)
    assert (coverage["required"], coverage["judged"], coverage["skipped"], coverage["failed"]) == (15, 1, 14, 0)
    assert coverage["claim"] is True
    unverified = {item["item"]: item["reason"] for item in coverage["items"] if item["status"] == "unverified"}
    assert sorted(unverified) == sorted(["gpu.model", "gpu.count", "gpu.memory", "nic.0", "nic.1", "rdma"]
                                        + ["nvlink.GPU%d" % i for i in range(8)])
    assert unverified["gpu.model"] == "not judged: gpu facts not gathered"
    assert unverified["nvlink.GPU3"] == "not judged: gpu facts not gathered"
    assert unverified["rdma"] == "not judged: nic facts not gathered"
    assert "GPU model: not judged: gpu facts not gathered" in coverage["incomplete"]
    # each with its fix: its host_vars set gpufleet_fact_groups [topology]
    fixes = {item["item"]: item["fix"] for item in coverage["items"] if item["status"] == "unverified"}
    assert fixes["gpu.model"] == "gather the gpu facts: gpufleet_fact_groups must include gpu"
    assert fixes["rdma"] == "gather the nic facts: gpufleet_fact_groups must include nic"
    assert run["fleet"]["node_verdicts"]["dgx-a100-nv12"]["coverage"]["skipped"] == 14
    assert "dgx-a100-nv12: INCOMPLETE (profile" in run["stdout"]
    assert "not verified: GPU model: not judged" in run["stdout"]


def test_della_accepted_on_every_required_item(run):
    coverage = run["hosts"]["della-h100-1gpu"]["coverage"]
    assert [item["item"] for item in coverage["items"]] == ["gpu.model", "gpu.count", "gpu.memory"]
    assert (coverage["required"], coverage["judged"], coverage["skipped"]) == (3, 3, 0) and coverage["incomplete"] == []


def test_bridge_pairs_as_sold(run):
    record = run["hosts"]["a100-pcie-nvlink-bridge-pairs"]
    # topo/azure-ncads-a100-v4-style-...: GPU0-GPU1 NV12, GPU2-GPU3 NV12, SYS between the pairs
    pairs = _one(record, "topology.gpu_pairs", "pass")
    assert (pairs["measured"], pairs["expected"]) == (["GPU0-GPU1", "GPU2-GPU3"], "NV12")


def test_della_h100_single_gpu_healthy(run):
    record = run["hosts"]["della-h100-1gpu"]
    # smi/princeton-della-h100-nvidia-smi-a-text-545.txt: Attached GPUs 1, NVIDIA H100 80GB HBM3,
    # FB Total 81559 MiB, ECC errors all 0, no pending remap, MIG Disabled, Persistence Enabled,
    # Processes None, Fabric Completed / Success, only 'Idle : Active' among the clocks event reasons
    assert (_one(record, "gpu.count", "pass")["measured"], _one(record, "gpu.count", "pass")["expected"]) == (1, 1)
    assert _one(record, "gpu.model", "pass")["measured"] == ["NVIDIA H100 80GB HBM3"]
    assert _one(record, "gpu.memory", "pass")["measured"] == 81559
    assert _one(record, "gpu.ecc_errors", "pass")["measured"] == 0
    assert _one(record, "gpu.processes", "pass")["measured"] == 0
    assert _one(record, "gpu.persistence", "pass")["measured"] is True
    assert _one(record, "gpu.mig", "pass")["measured"] == "Disabled"
    assert _one(record, "gpu.fabric", "pass")["measured"] == {"state": "Completed", "status": "Success"}
    assert _one(record, "gpu.throttle", "pass")["measured"] == []
    # topo/princeton-pli-1gpu-slurm-alloc-6nic-cpu-affinity-0.txt: GPU0 PIX to NIC0 (mlx5_0) and NIC1
    assert _one(record, "numa.nearest_nic", "pass")["measured"] == "PIX"


def test_reasons_speak_of_the_node_not_the_simulation(run):
    # a call a node file has no recording for answers as a real tool that printed nothing would: no simulation words
    # (replay_tool.py, node file paths) reach a reason
    text = json.dumps(run["hosts"])
    assert "has no recording" not in text and "replay: " not in text and "inventories/simulated/nodes" not in text
    # sold-8x-nvlink-rtx4090-pcie: only `topo -m` and `nvidia-smi -q` of it were recorded
    nvlink = _results(run["hosts"]["sold-8x-nvlink-rtx4090-pcie"], "nvlink.link_active", "skip")
    assert nvlink and all("exited 127: nvidia-smi: no output for `nvidia-smi nvlink -s`" in item["message"]
                          for item in nvlink)


def test_rtx4090_sold_as_nvlink(run):
    record = run["hosts"]["sold-8x-nvlink-rtx4090-pcie"]
    # topo/8x-rtx4090-pcie-all-SYS-2nic-no-legend.txt: every one of the 28 pairs SYS; claim: nvswitch
    pairs = _by_subject(_results(record, "topology.gpu_pairs", "fail"))
    assert sorted(pairs) == sorted("GPU%d-GPU%d" % (a, b) for a in range(8) for b in range(a + 1, 8))
    assert {(item["measured"], item["expected"]) for item in pairs.values()} == {("SYS", "NVLink")}
    assert pairs["GPU0-GPU1"]["message"] == "GPU0-GPU1: SYS, expected NVLink"
    # smi/gpud-nvidia-smi-q-8x-rtx4090-535.154.05.txt: one process on each GPU (GPU1: /opt/conda/bin/python, 21952 MiB)
    procs = _by_subject(_results(record, "gpu.processes", "fail"))
    assert sorted(procs) == ["GPU%d" % index for index in range(8)]
    assert (procs["GPU1"]["measured"], procs["GPU1"]["expected"]) == (1, 0) and "21952 MiB" in procs["GPU1"]["message"]


def test_hgx_h100_nv18_throttled_and_counters_saturated(run):
    record = run["hosts"]["hgx-h100-nv18"]
    # the fabric is as sold: NV18 in every pair (mlengineering topo), 8 NDR 400 IB ports Active (ibstat)
    pairs = _one(record, "topology.gpu_pairs", "pass")
    assert (pairs["measured"], pairs["expected"]) == ("NV18", "NV18")
    assert _results(record, "network.rdma_port_state", "fail") == []
    # smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt: on all 8 GPUs 'HW Slowdown : Active' and
    # 'HW Power Brake Slowdown : Active', SM clock 86 MHz of max 1980 MHz
    throttle = _by_subject(_results(record, "gpu.throttle", "fail"))
    assert sorted(throttle) == ["GPU%d" % index for index in range(8)]
    for item in throttle.values():
        assert (sorted(item["measured"]), item["expected"]) == (["hw_power_brake_slowdown", "hw_slowdown"], [])
        assert "86/1980 MHz" in item["message"]
    # ib-sysfs/gpud-h100-8x-cx7-ndr400-plus-bf3-bond-sysfs-tree-grep-r-CLONED-COUNTERS.txt (sysfs tree h100-ndr-ib):
    # every port excessive_buffer_overrun_errors 15 (a 4-bit counter at its maximum), port_rcv_errors 14,
    # port_rcv_switch_relay_errors 1; mlx5_1 link_downed 255 (8-bit maximum) and switch_relay 2
    errors = _by_subject(_results(record, "network.ib_port_errors", "fail"))
    assert sorted(errors) == sorted(["mlx5_%d/1" % n for n in (0, 1, 4, 5, 6, 7, 8, 9)] + ["mlx5_bond_0/1"])
    assert errors["mlx5_0/1"]["measured"] == {"excessive_buffer_overrun_errors": 15, "port_rcv_errors": 14, "port_rcv_switch_relay_errors": 1}
    assert errors["mlx5_1/1"]["measured"] == {"excessive_buffer_overrun_errors": 15, "link_downed": 255, "port_rcv_errors": 14,
                                              "port_rcv_switch_relay_errors": 2}
    assert errors["mlx5_1/1"]["expected"] == 0
    assert "link_downed 255 (SATURATED" in errors["mlx5_1/1"]["message"]


def test_hgx_h100_rdma_down(run):
    record = run["hosts"]["hgx-h100-rdma-down"]
    # ib/gpud-ibstat-h100-ndr-ib-3ports-down-disabled.txt: mlx5_2, mlx5_7, mlx5_8 Ethernet, State Down,
    # Physical state Disabled, Rate 40; claimed 4x 100 Gb/s storage ethernet. The 8 NDR IB ports are Active.
    speed = _by_subject(_results(record, "network.nic_speed", "fail"))
    assert sorted(speed) == ["mlx5_2/1", "mlx5_7/1", "mlx5_8/1"]
    assert {(item["measured"], item["expected"]) for item in speed.values()} == {(40, 100)}
    assert _results(record, "network.rdma_port_state", "fail") == []
    # smi/...-535.183.01-fabric-completed-power-brake-swthermal-ACTIVE.txt: the third GPU (00000000:75:00.0)
    # has SW Power Cap, HW Power Brake Slowdown and SW Thermal Slowdown Active and runs /usr/bin/python (9212 MiB)
    throttle = _one(record, "gpu.throttle", "fail")
    assert throttle["subject"] == "GPU2"
    assert sorted(throttle["measured"]) == ["hw_power_brake_slowdown", "sw_power_cap", "sw_thermal_slowdown"]
    procs = _one(record, "gpu.processes", "fail")
    assert (procs["subject"], procs["measured"], procs["expected"]) == ("GPU2", 1, 0) and "9212 MiB" in procs["message"]


def test_retired_pages_synthetic(run):
    record = run["hosts"]["azure-a100-retired-pages-synthetic"]
    # smi/azure-nvsmi-q-retired-pages-8gpu-bad-EDITED.txt (SYNTHETIC values): 'Pending Page Blacklist : Yes'
    # on the 2nd, 4th, 6th and 8th GPU with (double, single) = (61, 2), (0, 6), (45, 20), (56, 8)
    pending = _by_subject(_results(record, "gpu.retired_pages", "fail"))
    assert {subject: (item["measured"]["double_bit_ecc"], item["measured"]["single_bit_ecc"], item["measured"]["pending"])
            for subject, item in pending.items()} == {"GPU1": (61, 2, True), "GPU3": (0, 6, True), "GPU5": (45, 20, True), "GPU7": (56, 8, True)}
    assert {json.dumps(item["expected"], sort_keys=True) for item in pending.values()} == {'{"pending": false}'}
    # the 1st GPU: 5 double-bit and 60 single-bit pages retired, nothing pending: a warning
    warned = _one(record, "gpu.retired_pages", "warn")
    assert (warned["subject"], warned["measured"]) == ("GPU0", {"double_bit_ecc": 5, "single_bit_ecc": 60, "pending": False})


def test_ibstat_panic(run):
    record = run["hosts"]["azure-a100-nvlink-inactive"]
    # ib/gpud-ibstat-azure-a100-hdr-8xcx6vf-ibpanic-exit255.txt: ibpanic on the vanished mlx5_8, exit 255
    fact = _one(record, "facts.nic", "fail")
    assert fact["subject"] == "nic" and "exited 255" in fact["message"] and "mlx5_8" in fact["message"]


def test_frontend_at_1g(run):
    # ethtool/node-exporter-eth0-1g-netlink-error-not-permitted.txt: Speed 1000Mb/s; claimed 1x 10 Gb/s frontend
    item = _one(run["hosts"]["frontend-1g-copper"], "network.nic_speed", "fail")
    assert (item["subject"], item["measured"], item["expected"], item["threshold_source"]) == ("eth0", 1.0, 10, "claim")


def test_unsupported_sfp_no_link(run):
    # ethtool/intel-i40e-unsupported-sfp-speed-unknown-link-no.txt: Speed Unknown!, Link detected: no; claimed 10 Gb/s storage
    item = _one(run["hosts"]["i40e-sfp-speed-unknown"], "network.nic_speed", "fail")
    assert (item["subject"], item["measured"], item["expected"]) == ("net03", None, 10)
    assert "Link detected: no" in item["message"]


def test_dgx_spark_two_roce_ports_down(run):
    record = run["hosts"]["dgx-spark-roce-2-down"]
    # ib/dgx-spark-gb10-cx7-roce-ibv_devinfo-2up-2down.txt: rocep1s0f0 and roceP2p1s0f0 PORT_DOWN,
    # rocep1s0f1 and roceP2p1s0f1 PORT_ACTIVE; claimed 4x 200 Gb/s compute RoCE
    down = _by_subject(_results(record, "network.rdma_port_state", "fail"))
    assert sorted(down) == ["roceP2p1s0f0/1", "rocep1s0f0/1"]
    assert {(item["measured"], item["expected"]) for item in down.values()} == {("Down", "Active")}
    speed = _by_subject(_results(record, "network.nic_speed", "fail"))
    for port in ("roceP2p1s0f0/1", "rocep1s0f0/1"):
        assert (speed[port]["measured"], speed[port]["expected"]) == (None, 200) and " is Down" in speed[port]["message"]


def test_xid_and_memlock(run):
    record = run["hosts"]["hgx-h100-xid-peermem"]
    # misc/gpud-dmesg-iso-xid-48-63-94-dbe-rowremap-plus-peermem-errors.txt: Xid 48 once, 63 once, 94 nine
    # times on PCI:0000:19:00, and 30 nvidia-peermem ERROR lines
    xids = _by_subject(_results(record, "host.xid", "fail"))
    assert {subject: (item["measured"], item["expected"]) for subject, item in xids.items()} == {
        "Xid 48": (1, 0), "Xid 63": (1, 0), "Xid 94": (9, 0)}
    peermem = _one(record, "host.peermem_errors", "warn")
    assert (peermem["measured"], peermem["expected"]) == (30, 0)
    # sysfs tree host-hgx-h100-xe9680 proc/self/limits: 'Max locked memory 65536 65536 bytes'
    memlock = _one(record, "host.memlock", "fail")
    assert (memlock["measured"], memlock["expected"]) == (65536, "unlimited")


def _benchmarks(record, kind):
    return [bench for bench in record["benchmarks"] if bench["kind"] == kind]


def test_h100_benchmarks_replayed_from_recordings(run):
    """The two H100 nodes run their recorded all-reduces through the product's benchmark phase (host_vars name them)."""
    nv18, down = run["hosts"]["hgx-h100-nv18"], run["hosts"]["hgx-h100-rdma-down"]
    # hgx-h100-rdma-down: `all_reduce_perf -b 128M -e 4G -f 2 -n 2 -g 8` answered by
    # nccl/h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt (one run: gpufleet_benchmark_repeats 1)
    [single] = _benchmarks(down, "allreduce_single")
    assert single["outcome"] == "ok" and single["command"][1:] == ["-b", "128M", "-e", "4G", "-f", "2", "-n", "2", "-g", "8"]
    # its last row: 4294967296 B, out-of-place busbw 473.60 GB/s; 8 ranks; profile hgx-h100-8 floor 460, warn below 470
    item = _one(down, "benchmarks.allreduce_single", "pass")
    assert (item["measured"], item["expected"]) == (473.6, 460)
    assert "over 8 of 8 GPUs" in item["message"] and "judged at its largest size" in item["message"]
    # '# Out of bounds values : 0 OK' and #wrong 0 in every row (validation: 1)
    assert _one(down, "benchmarks.allreduce_wrong", "pass")["measured"] == 0
    # hgx-h100-nv18 starts the two-node run through the srun launcher (first host of the benchmark play): answered by
    # nccl/h100-2node-16rank-ndr-ib-allreduce-srun-prefix-validation0-issue290.txt, recorded on nv18's host only
    assert _benchmarks(nv18, "allreduce_single") == [] and _benchmarks(down, "allreduce_multi") == []
    [multi] = _benchmarks(nv18, "allreduce_multi")
    assert multi["outcome"] == "ok" and multi["hosts"] == ["hgx-h100-nv18", "hgx-h100-rdma-down"]
    assert multi["command"][1:4] == ["-l", "--nodes=2", "--ntasks-per-node=8"]
    assert multi["command"][5:] == ["-b", "8M", "-e", "8G", "-f", "2", "-n", "200", "-c", "0", "-g", "1"]
    # its last row: 8589934592 B, out-of-place busbw 155.57 GB/s, below the profile's two-node floor 440 GB/s
    # (8 NDR Active on each node add up to the profile's compute rail): both nodes fail it
    for record in (nv18, down):
        item = _one(record, "benchmarks.allreduce_multi", "fail")
        assert (item["measured"], item["expected"]) == (155.57, 440)
        assert "busbw 155.57 GB/s at 8 GiB" in item["message"]
    # validation: 0, '#wrong' N/A: not validated, never a pass
    assert "-c 0" in _one(nv18, "benchmarks.allreduce_wrong", "skip")["message"]
    # each named benchmark is a required item, judged: nv18 the multi-node run, rdma-down both
    for record, names in ((nv18, ["allreduce_multi"]), (down, ["allreduce_single", "allreduce_multi"])):
        items = {item["item"]: item["status"] for item in record["coverage"]["items"]}
        assert {name: items.get("benchmark." + name) for name in names} == {
            name: "failed" if name == "allreduce_multi" else "verified" for name in names}
    # no other node asked for a benchmark (the demo is at level quick)
    others = [host for host in EXPECTED if host not in ("hgx-h100-nv18", "hgx-h100-rdma-down")]
    assert [host for host in others if run["hosts"][host]["benchmarks"]] == []


def test_the_two_priced_offers_as_judged_and_as_costed(run):
    """The demo's cost view on this run's records (report/cost.py, what the report role renders): the NVLink offer
    at 23.5 $/h trains the 70B reference model cheaper than the same GPUs over PCIe at 21.0 $/h, and the 7B one
    dearer; no node that is not accepted is ranked."""
    nvlink, pcie = run["hosts"]["hgx-h100-offer-nvlink"], run["hosts"]["h100-offer-pcie-only"]
    # mlengineering topo: NV18 in all 28 pairs; the Dell `topo -mp` matrix: no NVLink pair, as claimed (pcie)
    assert _one(nvlink, "topology.gpu_pairs", "pass")["measured"] == "NV18"
    assert _results(pcie, "topology.gpu_pairs", "fail") == []
    # gpud-nvidia-smi-q-8x-h100-535.161.08-EDITED-clock-events-not-active.txt: no clock event active
    assert _results(nvlink, "gpu.throttle", "fail") == [] and _results(pcie, "gpu.throttle", "fail") == []
    view = cost_view([run["hosts"][host] for host in sorted(run["hosts"])])
    assert [row["hosts"] for row in view["rows"]] == [["hgx-h100-offer-nvlink"], ["h100-offer-pcie-only"],
                                                      ["della-h100-1gpu"]]
    ranked = {row["hosts"][0]: row for row in view["rows"]}
    seven = {host: ranked[host]["estimates"][0]["cost"] for host in ranked}
    seventy = {host: ranked[host]["estimates"][1] for host in ranked}
    assert seven["h100-offer-pcie-only"] < seven["hgx-h100-offer-nvlink"]
    assert seventy["hgx-h100-offer-nvlink"]["cost"] < seventy["h100-offer-pcie-only"]["cost"]
    # 70B does not fit in one node of 8 x 85.52 GB: costed on the fewest that hold it, across the claimed 8 x 400G
    assert seventy["hgx-h100-offer-nvlink"]["nodes"] == seventy["h100-offer-pcie-only"]["nodes"] > 1
    # level quick: no benchmark on either; the typical busbw of NVSwitch (NVLink 4) and of PCIe 5.0, assumed
    intra = {host: ranked[host]["inputs"]["intra_node_busbw_gbs"] for host in ranked}
    assert (intra["hgx-h100-offer-nvlink"]["value"], intra["hgx-h100-offer-nvlink"]["kind"]) == (470.0, "assumed")
    assert (intra["h100-offer-pcie-only"]["value"], intra["h100-offer-pcie-only"]["kind"]) == (40.0, "assumed")
    # measured: the GPUs (81,559 MiB each = 85.52 GB) and the NVLink domain (8 GPUs; 1 over PCIe)
    assert ranked["h100-offer-pcie-only"]["inputs"]["gpu_memory_gb"] == {
        "value": 85.52, "kind": "measured", "source": "gpu facts: 81559 MiB, the smallest GPU of the node"}
    assert [ranked[host]["inputs"]["nvlink_domain_gpus"]["value"] for host in ("hgx-h100-offer-nvlink",
                                                                               "h100-offer-pcie-only")] == [8, 1]
    # the one-GPU node cannot hold either model and claims no NIC: not costed, and says why
    assert all(not item["feasible"] for item in ranked["della-h100-1gpu"]["estimates"])
    not_accepted = sorted(host for host, (verdict, _failed) in EXPECTED.items() if verdict in (REJECT, INCOMPLETE))
    assert sorted(item["host"] for item in view["not_offers"]) == not_accepted


def test_the_readme_caption_of_the_demo_report_holds_the_demo_fleets_verdicts(run):
    """The README's screenshot caption says the demo fleet's verdicts: a change of them that leaves the caption (and
    so the screenshot) stale fails here."""
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as handle:
        readme = " ".join(handle.read().split())
    caption = re.search(r"The demo fleet's first screen \(its verdicts: (\d+) nodes, (\d+) acceptable; ([^)]*)\)", readme)
    assert caption, "README.md: no caption of the demo report's screenshot"
    counts = {name: int(count) for count, name in re.findall(r"(\d+) ([A-Z][A-Z ]*[A-Z])", caption.group(3))}
    fleet = run["fleet"]
    assert {name: count for name, count in fleet["counts"].items() if count} == counts
    assert int(caption.group(1)) == fleet["nodes"]
    assert int(caption.group(2)) == counts.get("ACCEPT", 0) + counts.get("ACCEPT WITH WARNINGS", 0)
