# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The demo fleet end to end: build inventories/simulated/, run playbooks/gather_facts.yml on it.

A wrapper playbook imports gather_facts.yml unchanged, then a second play dumps each host's
registered results (facts, failed, msg; not the raw tool output). Expected values are read by
hand from the recordings each node file names (paths in the comments). Each host's
``gpufleet_fact_groups`` (host_vars) lists the groups its recordings back; the others are not
gathered (their tasks skip), and a gathered group whose recording is a failure fails, naming why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIM = os.path.join(REPO_ROOT, "inventories", "simulated")
GROUPS = {"topology": "facts_topology_result", "gpu": "facts_gpu_result", "nic": "facts_nic_result", "host": "facts_host_result"}


@pytest.fixture(name="fleet", scope="module")
def fleet_fixture(tmp_path_factory, simulated_fleet):
    """``{host: {group: {failed, msg, facts}, "summary": line}}`` of one gather_facts.yml run on the whole fleet."""
    tmp = tmp_path_factory.mktemp("simulated")
    out = tmp / "fleet-out"
    dump = {group: {"failed": "{{ %s.failed | default(false) }}" % var, "msg": "{{ %s.msg | default('') }}" % var,
                    "skipped": "{{ %s.skipped | default(false) }}" % var,
                    "facts": "{{ (%s.ansible_facts | default({})).values() | first | default(None) }}" % var}
            for group, var in GROUPS.items()}
    play = [
        {"name": "The product's playbook, unchanged", "ansible.builtin.import_playbook": os.path.join(REPO_ROOT, "playbooks", "gather_facts.yml")},
        {"name": "Dump what the test reads", "hosts": "all", "gather_facts": False, "tasks": [{
            "name": "Write one JSON file per host",
            "ansible.builtin.copy": {"content": "{{ dumped | to_json }}", "dest": str(out) + "/{{ inventory_hostname }}.json", "mode": "0600"},
            "vars": {"dumped": dump},
        }]},
    ]
    out.mkdir()
    (tmp / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ)
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp / "ansible-local")})
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", simulated_fleet["inventory"], str(tmp / "play.yml")]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    results = {}
    for name in os.listdir(out):
        with open(out / name, encoding="utf-8") as handle:
            results[name[:-len(".json")]] = json.load(handle)
    for host, entry in results.items():
        lines = [line for line in proc.stdout.splitlines() if line.strip().startswith('"msg": "%s: ' % host)]
        entry["summary"] = lines[-1] if lines else None
    return results


def _ok(fleet, host, group):
    entry = fleet[host][group]
    assert entry["failed"] is False, (host, group, entry["msg"])
    return entry["facts"]


def _failed(fleet, host, group):
    entry = fleet[host][group]
    assert entry["failed"] is True, (host, group)
    return entry["msg"]


def _not_gathered(fleet, host, group):
    entry = fleet[host][group]
    assert (entry["skipped"], entry["failed"], entry["facts"]) == (True, False, None), (host, group, entry)


def _fact_groups(host):
    with open(os.path.join(SIM, "host_vars", host + ".yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["gpufleet_fact_groups"]


def _by_name(items, key, name):
    found = [item for item in items if item[key] == name]
    assert len(found) == 1, (name, [item[key] for item in items])
    return found[0]


def test_every_host_ran_and_printed_a_summary(fleet):
    hosts = yaml.safe_load(open(os.path.join(SIM, "hosts.yml"), encoding="utf-8"))["all"]["children"]["simulated"]["hosts"]
    assert len(hosts) >= 8
    assert sorted(fleet) == sorted(hosts)
    for host in hosts:
        assert fleet[host].get("summary"), host


def test_only_the_recorded_groups_are_gathered(fleet):
    for host in fleet:
        wanted = _fact_groups(host)
        assert wanted and set(wanted) <= set(GROUPS), host
        for group in GROUPS:
            if group in wanted:
                assert fleet[host][group]["skipped"] is False, (host, group)
            else:
                _not_gathered(fleet, host, group)


def test_dgx_a100_nv12(fleet):
    topo = _ok(fleet, "dgx-a100-nv12", "topology")["summary"]
    # topo/gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt: 8 GPUs, NV12 in every cell, 12 mlx5 columns
    assert (topo["gpu_count"], topo["pair_count"], topo["nvlink_pairs"], topo["min_nvlinks"], topo["max_nvlinks"]) == (8, 28, 28, 12, 12)
    assert topo["nic_count"] == 12 and topo["all_pairs_nvlink"] is True
    # no `nvidia-smi -q` recording (gpu_facts needs it) and no sysfs tree: gpu and nic are not gathered
    _not_gathered(fleet, "dgx-a100-nv12", "gpu")
    _not_gathered(fleet, "dgx-a100-nv12", "nic")


def test_hgx_h100_nv18_fabric(fleet):
    topo = _ok(fleet, "hgx-h100-nv18", "topology")["summary"]
    # topo/mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt: NV18 everywhere, NUMA 0 and 1, no NIC columns
    assert (topo["gpu_count"], topo["nvlink_pairs"], topo["min_nvlinks"], topo["max_nvlinks"], topo["nic_count"]) == (8, 28, 18, 18, 0)
    nic = _ok(fleet, "hgx-h100-nv18", "nic")
    # ibstat + sysfs h100-ndr-ib: mlx5_0,1,4..9 NDR 400 IB and mlx5_bond_0 200G Ethernet, all Active
    assert nic["summary"]["rdma_port_count"] == 9 and len(nic["summary"]["rdma_active_ports"]) == 9
    assert nic["summary"]["rdma_inactive_ports"] == [] and nic["summary"]["fastest_mbps"] == 400000
    port = _by_name(nic["rdma"], "device", "mlx5_0")["ports"][0]
    assert (port["state"], port["rate_gbps"], port["link_layer"]) == ("Active", 400, "InfiniBand")


def test_sold_as_nvlink_but_pcie_only(fleet):
    topo = _ok(fleet, "sold-8x-nvlink-rtx4090-pcie", "topology")["summary"]
    # topo/8x-rtx4090-pcie-all-SYS-2nic-no-legend.txt: every GPU pair SYS, no NV#
    assert (topo["gpu_count"], topo["nvlink_pairs"], topo["all_pairs_nvlink"]) == (8, 0, False)
    assert len(topo["non_nvlink_pairs"]) == 28 and all(pair.endswith(":SYS") for pair in topo["non_nvlink_pairs"])
    claim = yaml.safe_load(open(os.path.join(SIM, "host_vars", "sold-8x-nvlink-rtx4090-pcie.yml"), encoding="utf-8"))["gpufleet_claim"]
    assert claim["interconnect"] == "nvswitch"


def test_nvlink_bridge_pairs(fleet):
    topo = _ok(fleet, "a100-pcie-nvlink-bridge-pairs", "topology")["summary"]
    # GPU0-GPU1 NV12, GPU2-GPU3 NV12, SYS between the pairs; NUMA 0..3
    assert (topo["gpu_count"], topo["pair_count"], topo["nvlink_pairs"], topo["min_nvlinks"]) == (4, 6, 2, 12)
    assert sorted(topo["non_nvlink_pairs"]) == ["GPU0-GPU2:SYS", "GPU0-GPU3:SYS", "GPU1-GPU2:SYS", "GPU1-GPU3:SYS"]
    assert topo["numa_nodes"] == ["0", "1", "2", "3"]


def test_azure_nvlink_inactive_and_ibstat_panic(fleet):
    # no topo -m recording: topology is not gathered
    _not_gathered(fleet, "azure-a100-nvlink-inactive", "topology")
    # ibstat printed mlx5_0..7, then ibpanic on mlx5_8 and exit 255: the failure names the panic
    msg = _failed(fleet, "azure-a100-nvlink-inactive", "nic")
    assert "exited 255" in msg and "mlx5_8" in msg


def test_h100_rdma_ports_down(fleet):
    nic = _ok(fleet, "hgx-h100-rdma-down", "nic")
    # ib/gpud-ibstat-h100-ndr-ib-3ports-down-disabled.txt: mlx5_2, mlx5_7, mlx5_8 State Down / Disabled, 9 Active
    assert nic["summary"]["rdma_port_count"] == 12
    assert sorted(nic["summary"]["rdma_inactive_ports"]) == ["mlx5_2/1", "mlx5_7/1", "mlx5_8/1"]
    down = _by_name(nic["rdma"], "device", "mlx5_7")["ports"][0]
    assert (down["state"], down["physical_state"], down["rate_gbps"], down["link_layer"]) == ("Down", "Disabled", 40, "Ethernet")
    assert _by_name(nic["rdma"], "device", "mlx5_0")["ports"][0]["sm_lid"] == 334
    topo = _ok(fleet, "hgx-h100-rdma-down", "topology")["summary"]
    # aihub0007: NV18 everywhere, 12 NICs, numa=off
    assert (topo["nvlink_pairs"], topo["min_nvlinks"], topo["nic_count"], topo["numa_nodes"]) == (28, 18, 12, ["0"])


def test_nic_at_1g_and_speed_unknown(fleet):
    eth0 = _by_name(_ok(fleet, "frontend-1g-copper", "nic")["interfaces"], "name", "eth0")
    # node-exporter eth0: supports 10000baseT/Full, linked at 1000Mb/s, Link detected: yes
    assert (eth0["speed_mbps"], eth0["ethtool"]["speed_mbps"], eth0["ethtool"]["link_detected"]) == (1000, 1000, True)
    assert "10000baseT/Full" in eth0["ethtool"]["supported_link_modes"]
    net03 = _by_name(_ok(fleet, "i40e-sfp-speed-unknown", "nic")["interfaces"], "name", "net03")
    # i40e unsupported SFP: Speed: Unknown!, Link detected: no
    assert (net03["ethtool"]["speed_mbps"], net03["ethtool"]["link_detected"], net03["driver"]) == (None, False, "i40e")
    # no nvidia-smi recorded at all on these nodes: the GPU groups are not gathered
    _not_gathered(fleet, "frontend-1g-copper", "gpu")
    _not_gathered(fleet, "i40e-sfp-speed-unknown", "topology")


def test_dgx_spark_roce_two_ports_down(fleet):
    summary = _ok(fleet, "dgx-spark-roce-2-down", "nic")["summary"]
    # ibv_devinfo: 4 RoCE devices, 2 PORT_ACTIVE and 2 PORT_DOWN
    assert (summary["rdma_port_count"], len(summary["rdma_active_ports"]), len(summary["rdma_inactive_ports"])) == (4, 2, 2)


def test_xid_node_host_facts(fleet):
    host = _ok(fleet, "hgx-h100-xid-peermem", "host")
    # synthetic tree host-hgx-h100-xe9680: osrelease 5.15.0-112-generic, open module 570.158.01
    assert host["kernel"]["release"] == "5.15.0-112-generic"
    assert host["driver"]["version"] == "570.158.01"
    # dmesg recording: Xid 48, 63 and 94 on PCI:0000:19:00
    assert any("48" in finding and "94" in finding for finding in host["summary"] if finding.startswith("xid")), host["summary"]


def test_gpu_facts_of_text_only_nodes(fleet):
    """GPU facts of nodes whose `nvidia-smi -q` text was recorded (no -q -x)."""
    gpu = _ok(fleet, "hgx-h100-nv18", "gpu")
    # smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt: 8x NVIDIA H100 80GB HBM3
    assert gpu["gpu_count"] == 8
    gpu = _ok(fleet, "sold-8x-nvlink-rtx4090-pcie", "gpu")
    assert gpu["gpu_count"] == 8
    gpu = _ok(fleet, "azure-a100-retired-pages-synthetic", "gpu")
    # the EDITED recording: 8 GPU sections, GPU 00000002:00:00.0 and 00000004:00:00.0 'Pending Page Blacklist : Yes'
    assert gpu["gpu_count"] == 8
