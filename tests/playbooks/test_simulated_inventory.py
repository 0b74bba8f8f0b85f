# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The demo fleet end to end: the facts of inventories/simulated/, and playbooks/gather_facts.yml on it.

Every host's facts are read from the shared validate_cluster.yml run of the whole fleet (``simulated_validate_run``):
its hosts/<host>.json records hold each fact group's facts (null when not gathered), its error (``fact_errors``)
and the index of the tools it ran (``raw``: only the groups that ran). Its stdout has one verdict line per host.
playbooks/gather_facts.yml runs on two of the hosts (a failed group, a gathered one; the others skipped): a wrapper
imports it unchanged, then a second play prints each host's registered results (facts, failed, msg, skipped) for the
test to compare with the records. Expected values are read by hand from the recordings each node file names (paths
in the comments). Each host's ``gpufleet_fact_groups`` (host_vars) lists the groups its recordings back; the others
are not gathered (their tasks skip), and a gathered group whose recording is a failure fails, naming why.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import pytest
import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIM = os.path.join(REPO_ROOT, "inventories", "simulated")
GROUPS = {"topology": "facts_topology_result", "gpu": "facts_gpu_result", "nic": "facts_nic_result", "host": "facts_host_result"}
# gather_facts.yml's own run: one host whose nic group fails (the others skip), one with topology alone gathered
GATHER_HOSTS = ("azure-a100-nvlink-inactive", "dgx-a100-nv12")
# the prefix of the line the dump play prints per host: "<prefix><host> <JSON of its groups>"
DUMP_PREFIX = "gpufleet-test-dump "


def _summary_line(stdout, host):
    """The last line a run printed for ``host``: a ``"msg": "<host>: ..."`` line (gather_facts.yml's fact summary, a
    task per host), or the host's ``"<host>: ..."`` entry in the list validate_cluster.yml's verdict lines print in."""
    starts = ('"msg": "%s: ' % host, '"%s: ' % host)
    lines = [line.strip() for line in stdout.splitlines() if line.strip().startswith(starts)]
    return lines[-1] if lines else None


def _worker_neutral(value):
    """``value`` as JSON, with the xdist worker's fleet directory (tests/output/workers/<worker>/) made one: the
    shared run may have run in another worker than this file, and a tool's error message names its path."""
    return re.sub(r"tests/output/workers/[^/]+/", "tests/output/workers/WORKER/", json.dumps(value, sort_keys=True))


def _groups_of(record):
    """A host record's fact groups in the shape of the registered results: ``{group: {failed, msg, skipped, facts}}``.

    A group that ran has its tools in the record's raw index; one that failed has its message in ``fact_errors``."""
    errors = record["fact_errors"]
    return {group: {"failed": group in errors, "msg": errors.get(group, ""), "skipped": group not in record["raw"],
                    "facts": record["facts"][group]} for group in GROUPS}


@pytest.fixture(name="fleet", scope="module")
def fleet_fixture(simulated_validate_run):
    """``{host: {group: {failed, msg, skipped, facts}, "summary": line}}`` of the shared validate_cluster.yml run."""
    # every node of the demo fleet is REJECT or INCOMPLETE: the run fails after writing the verdicts (exit 3: a REJECT)
    run = simulated_validate_run
    assert run["rc"] == 3, run["stdout"][-4000:] + run["stderr"][-4000:]
    results = {}
    for path in glob.glob(os.path.join(run["results_dir"], "hosts", "*.json")):
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
        results[record["host"]] = dict(_groups_of(record), summary=_summary_line(run["stdout"], record["host"]))
    return results


@pytest.fixture(name="gathered", scope="module")
def gathered_fixture(tmp_path_factory, simulated_fleet):
    """``{host: {group: {failed, msg, skipped, facts}, "summary": line}}`` of gather_facts.yml on GATHER_HOSTS."""
    tmp = tmp_path_factory.mktemp("simulated")
    dump = {group: {"failed": "{{ %s.failed | default(false) }}" % var, "msg": "{{ %s.msg | default('') }}" % var,
                    "skipped": "{{ %s.skipped | default(false) }}" % var,
                    "facts": "{{ (%s.ansible_facts | default({})).values() | first | default(None) }}" % var}
            for group, var in GROUPS.items()}
    play = [
        {"name": "The product's playbook, unchanged",
         "ansible.builtin.import_playbook": os.path.join(REPO_ROOT, "playbooks", "gather_facts.yml")},
        # debug runs on the controller: no module run per host for the dump
        {"name": "Print what the test reads", "hosts": "all", "gather_facts": False, "tasks": [{
            "name": "One line per host",
            "ansible.builtin.debug": {"msg": DUMP_PREFIX + "{{ inventory_hostname }} {{ dumped | to_json }}"},
            "vars": {"dumped": dump},
        }]},
    ]
    (tmp / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", simulated_fleet["inventory"],
           "--limit", ",".join(GATHER_HOSTS), str(tmp / "play.yml")]
    env = dict(os.environ)
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"),
                "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp / "ansible-local")})
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    results = {}
    for line in proc.stdout.splitlines():
        if line.strip().startswith('"msg": "' + DUMP_PREFIX):
            host, dumped = json.loads("{%s}" % line.strip())["msg"][len(DUMP_PREFIX):].split(" ", 1)
            results[host] = dict(json.loads(dumped), summary=_summary_line(proc.stdout, host))
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


def test_every_host_ran_and_printed_a_summary(fleet, gathered):
    hosts = yaml.safe_load(open(os.path.join(SIM, "hosts.yml"), encoding="utf-8"))["all"]["children"]["simulated"]["hosts"]
    assert len(hosts) >= 8
    assert sorted(fleet) == sorted(hosts)
    for host in hosts:
        # validate_cluster.yml's verdict line
        assert fleet[host].get("summary"), host
    # gather_facts.yml's fact summary: topo/gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt has NV12 in all 28 GPU pairs;
    # azure-a100-nvlink-inactive's only group, nic, failed (ibstat exited 255)
    assert gathered["dgx-a100-nv12"]["summary"] == '"msg": "dgx-a100-nv12: topology: all 28 pairs NV12"'
    assert gathered["azure-a100-nvlink-inactive"]["summary"].startswith('"msg": "azure-a100-nvlink-inactive: FAILED nic: ')
    assert "exited 255" in gathered["azure-a100-nvlink-inactive"]["summary"]


def test_gather_facts_playbook_registers_what_the_records_hold(fleet, gathered):
    """gather_facts.yml (role facts, main entry: one result per group) gives each group what validate_cluster.yml
    recorded, so the tests below read the records for every host."""
    assert sorted(gathered) == sorted(GATHER_HOSTS)
    for host in GATHER_HOSTS:
        for group in GROUPS:
            assert _worker_neutral(gathered[host][group]) == _worker_neutral(fleet[host][group]), (host, group)


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
