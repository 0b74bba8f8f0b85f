# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fact modules through ansible-playbook: node_facts (one module run, every group) against the four fact modules.

This file is the playbook-level proof for all five fact modules (gpu_topology_facts, gpu_facts, nic_facts,
host_facts, node_facts): module arguments templated from host variables, the facts each sets on the host,
the failures the play sees (host-named messages, no traceback), check mode. What each module collects and
builds from a node's outputs is proven in-process, without Ansible, by
tests/unit/plugins/module_utils/test_{topology,gpu,nic,host}_collect_replayed.py.

One play on four nodes of inventories/simulated/nodes/ runs the four fact modules one by one and
then gpufleet.acceptance.node_facts with the same options. Per group the combined result must
equal what that group's own task registered: facts, failure and message, raw output (less the
measured durations); so must node_facts with collector=separate, which runs in check mode (the four
modules, run by its action, must gather in check mode what they gather in normal mode). A third run
records each host into a results directory (option record) and must return no raw output. The nodes
cover success and failure of every group: a missing recording (exit 127), a tool that panics (ibstat),
a node without /sys. The figures asserted by hand come from the recordings each node file names.

~15-20 s (up to ~50 s on a loaded machine): ten module runs on each of four replayed hosts (the four modules
as their own tasks and again by collector=separate, node_facts combined and recording).
"""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
NODES = os.path.join(REPO_ROOT, "inventories", "simulated", "nodes")
HOSTS = ("hgx-h100-nv18", "della-h100-1gpu", "hgx-h100-xid-peermem", "azure-a100-nvlink-inactive")
GROUPS = ("topology", "gpu", "nic", "host")
# the fact each group's module sets, in GROUPS' order
FACT_NAMES = ("gpufleet_topology", "gpufleet_gpu", "gpufleet_nic", "gpufleet_host")

TOOLS = {
    "nvidia_smi_path": "{{ replay_bin }}/nvidia-smi",
    "lspci_path": "{{ replay_bin }}/lspci",
    "query_formats": ["text"],
    "sysfs_root": "{{ replay_sysfs }}",
    "ethtool_path": "{{ replay_bin }}/ethtool",
    "ibstat_path": "{{ replay_bin }}/ibstat",
    "ibv_devinfo_path": "{{ replay_bin }}/ibv_devinfo",
    "ip_path": "{{ replay_bin }}/ip",
    "procfs_root": "{{ replay_sysfs | dirname }}/procfs",
    "journalctl_path": "{{ replay_bin }}/journalctl",
    "dmesg_path": "{{ replay_bin }}/dmesg",
    "ofed_info_path": "{{ replay_bin }}/ofed_info",
    "mpirun_path": "{{ replay_bin }}/mpirun",
    "ldconfig_path": "{{ replay_bin }}/ldconfig",
    "nccl_include_dirs": ["{{ replay_bin | dirname }}/include"],
}
MODULES = {
    "topology": ("gpu_topology_facts", ("nvidia_smi_path",)),
    "gpu": ("gpu_facts", ("nvidia_smi_path", "lspci_path", "query_formats")),
    "nic": ("nic_facts", ("sysfs_root", "ethtool_path", "ibstat_path", "ibv_devinfo_path", "ip_path")),
    "host": ("host_facts", ("sysfs_root", "procfs_root", "lspci_path", "journalctl_path", "dmesg_path", "ofed_info_path", "mpirun_path",
                            "ldconfig_path", "nccl_include_dirs")),
}


def _tasks(run_dir):
    tasks = []
    for group in GROUPS:
        module, options = MODULES[group]
        tasks.append({"name": "Separate | %s" % module, "gpufleet.acceptance.%s" % module: {key: TOOLS[key] for key in options},
                      "register": "separate_%s" % group, "ignore_errors": True})
    # what the four modules set on the host, before node_facts sets the same names again
    tasks.append({"name": "Facts the four modules set", "ansible.builtin.set_fact": {"single_facts_set": {
        name: "{{ %s | default(None) }}" % name for name in FACT_NAMES}}})
    tasks.append({"name": "Combined | node_facts", "gpufleet.acceptance.node_facts": dict(TOOLS), "register": "combined",
                  "ignore_errors": True})
    # the same four modules run by node_facts' action (collector: separate), and a run that records the host
    # in check mode: the action runs each module with check mode on, and each must gather all the same
    tasks.append({"name": "Separate | node_facts collector=separate", "gpufleet.acceptance.node_facts": dict(TOOLS, collector="separate"),
                  "register": "separate_action", "ignore_errors": True, "check_mode": True})
    tasks.append({"name": "Results directory", "gpufleet.acceptance.results_record": {"phase": "start", "run_dir": run_dir},
                  "run_once": True, "delegate_to": "localhost"})
    tasks.append({"name": "Recorded | node_facts record=", "gpufleet.acceptance.node_facts": dict(TOOLS, record={
        "run_dir": run_dir, "claim": {"gpu_model": "H100"}, "profile": "h100-sxm", "settings": {"gpufleet_nccl_env": {"NCCL_IB_DISABLE": "1"}}}),
        "register": "recorded", "ignore_errors": True})
    tasks.append({"name": "Keep what the test reads", "ansible.builtin.set_fact": {"dumped": {
        "separate": {group: "{{ separate_%s }}" % group for group in GROUPS},
        "separate_action": "{{ separate_action }}",
        "recorded": "{{ recorded }}",
        "combined": "{{ combined }}",
        "single_facts_set": "{{ single_facts_set }}",
        "host_facts_set": {name: "{{ %s | default(None) }}" % name for name in FACT_NAMES},
    }}})
    return tasks


def _without_durations(value):
    if isinstance(value, dict):
        return {key: _without_durations(item) for key, item in value.items() if key != "duration_s"}
    if isinstance(value, list):
        return [_without_durations(item) for item in value]
    return value


@pytest.fixture(name="gathered", scope="module")
def gathered_fixture(tmp_path_factory):
    # this folder's conftest.run_playbook, for a module-scoped run (the `playbook` fixture is per test)
    spec = importlib.util.spec_from_file_location("gpufleet_playbooks_conftest", os.path.join(os.path.dirname(__file__), "conftest.py"))
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    tmp = tmp_path_factory.mktemp("node_facts")
    hosts = {host: {"node_file": os.path.join(NODES, host + ".yml")} for host in HOSTS}
    run_dir = str(tmp / "results")
    run = conftest.run_playbook(tmp, hosts, _tasks(run_dir))
    assert run.rc == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert sorted(run.results) == sorted(HOSTS)
    return dict(run.results, run_dir=run_dir, stdout=run.stdout)


def _assert_groups_equal_the_four_tasks(gathered, host, groups):
    """Each group of ``groups`` (a node_facts result's) equals what that group's own module task registered."""
    separate = gathered[host]["separate"]
    for group in GROUPS:
        alone, together = separate[group], groups[group]
        assert bool(alone.get("failed")) == bool(together.get("failed")), (host, group, alone.get("msg"), together.get("msg"))
        assert alone.get("msg") == together.get("msg"), (host, group)
        assert alone.get("ansible_facts") == together.get("ansible_facts"), (host, group)
        assert _without_durations(alone.get("raw")) == _without_durations(together.get("raw")), (host, group)


@pytest.mark.parametrize("host", HOSTS)
def test_each_group_equals_its_own_module(gathered, host):
    _assert_groups_equal_the_four_tasks(gathered, host, gathered[host]["combined"]["groups"])


def test_facts_set_on_the_host_are_the_groups_that_succeeded(gathered):
    for host in HOSTS:
        combined = gathered[host]["combined"]
        for group, name in zip(GROUPS, FACT_NAMES):
            entry = combined["groups"][group]
            expected = None if entry.get("failed") else entry["ansible_facts"][name]
            assert gathered[host]["host_facts_set"][name] == expected, (host, name)
        # the task fails only when every group failed; here each node has at least one that worked
        assert not combined.get("failed"), host


def test_each_module_sets_its_facts_on_the_host(gathered):
    for host in HOSTS:
        for group, name in zip(GROUPS, FACT_NAMES):
            entry = gathered[host]["separate"][group]
            expected = None if entry.get("failed") else entry["ansible_facts"][name]
            assert gathered[host]["single_facts_set"][name] == expected, (host, name)
    # a fact the module set is the one built from this host's own outputs: 8 GPUs on the NV18 node, 1 on della
    assert gathered["hgx-h100-nv18"]["single_facts_set"]["gpufleet_gpu"]["gpu_count"] == 8
    assert gathered["della-h100-1gpu"]["single_facts_set"]["gpufleet_gpu"]["gpu_count"] == 1


def test_failures_the_play_sees_name_the_host_and_are_no_traceback(gathered):
    # the action's failures (output that cannot be read) are named after the inventory host
    topology = gathered["hgx-h100-xid-peermem"]["separate"]["topology"]
    assert (topology["failed"] and topology["msg"].startswith("hgx-h100-xid-peermem: `")
            and "exited 127" in topology["msg"])
    ibstat = gathered["azure-a100-nvlink-inactive"]["separate"]["nic"]
    assert (ibstat["failed"] and ibstat["msg"].startswith("azure-a100-nvlink-inactive: `")
            and "ibstat` exited 255: " in ibstat["msg"])
    # the module's own failure (fail_json) carries its message and what it collected (nothing, without /sys)
    nic = gathered["della-h100-1gpu"]["separate"]["nic"]
    assert nic["failed"] and nic["msg"].endswith("is sysfs mounted there?") and nic["raw"] == {}
    assert "Traceback" not in gathered["stdout"]


def test_check_mode_gathers_the_same(gathered):
    # collector=separate ran in check mode (test_collector_separate_equals_the_four_tasks: all of it equals the
    # normal-mode tasks); figures of each module's check-mode run, read by hand from the recordings
    nv18 = gathered["hgx-h100-nv18"]["separate_action"]["groups"]
    assert nv18["topology"]["ansible_facts"]["gpufleet_topology"]["summary"]["min_nvlinks"] == 18  # NV18 in every cell
    assert nv18["gpu"]["ansible_facts"]["gpufleet_gpu"]["gpu_count"] == 8  # "Attached GPUs : 8"
    # ibstat: mlx5_0, mlx5_1, mlx5_4..mlx5_9 and mlx5_bond_0
    assert nv18["nic"]["ansible_facts"]["gpufleet_nic"]["summary"]["rdma_device_count"] == 9
    # dmesg: Xid 94 x9; lspci -vvv: no ACS redirect on a GPU or NIC path
    host = gathered["hgx-h100-xid-peermem"]["separate_action"]["groups"]["host"]["ansible_facts"]["gpufleet_host"]
    assert host["xid"]["counts"]["94"] == 9
    assert host["acs"]["state"] == "disabled"


def test_figures_read_by_hand(gathered):
    groups = {host: gathered[host]["combined"]["groups"] for host in HOSTS}
    # hgx-h100-nv18: topo/mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt is NV18 between all 8 GPUs
    topology = groups["hgx-h100-nv18"]["topology"]["ansible_facts"]["gpufleet_topology"]["summary"]
    assert (topology["gpu_count"], topology["all_pairs_nvlink"], topology["min_nvlinks"]) == (8, True, 18)
    # smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt lists 8 GPUs, driver 535.161.08
    gpu = groups["hgx-h100-nv18"]["gpu"]["ansible_facts"]["gpufleet_gpu"]
    assert (gpu["gpu_count"], gpu["driver_version"]) == (8, "535.161.08")
    # della-h100-1gpu: one H100 in the Slurm allocation, driver 545.23.08; no /sys recorded (empty directory)
    della = groups["della-h100-1gpu"]
    assert della["gpu"]["ansible_facts"]["gpufleet_gpu"]["gpu_count"] == 1
    assert della["gpu"]["ansible_facts"]["gpufleet_gpu"]["driver_version"] == "545.23.08"
    assert della["nic"]["failed"] and della["nic"]["msg"].startswith("no class/net under ") and della["nic"]["msg"].endswith("is sysfs mounted there?")
    # hgx-h100-xid-peermem: no `topo -m` recording (the replay exits 127); dmesg shows Xid 48 x1, 63 x1, 94 x9
    xid = groups["hgx-h100-xid-peermem"]
    assert xid["topology"]["failed"] and "exited 127" in xid["topology"]["msg"]
    assert xid["host"]["ansible_facts"]["gpufleet_host"]["xid"]["counts"] == {"48": 1, "63": 1, "94": 9}
    # azure-a100-nvlink-inactive: ibstat prints 8 CAs, then panics on mlx5_8 and exits 255
    azure = groups["azure-a100-nvlink-inactive"]["nic"]
    assert azure["failed"] and "exited 255" in azure["msg"] and "stat of IB device 'mlx5_8' failed" in azure["msg"]


@pytest.mark.parametrize("host", HOSTS)
def test_collector_separate_equals_the_four_tasks(gathered, host):
    _assert_groups_equal_the_four_tasks(gathered, host, gathered[host]["separate_action"]["groups"])


def _record(gathered, host):
    with open(os.path.join(gathered["run_dir"], "hosts", host + ".json"), encoding="utf-8") as handle:
        return json.load(handle)


@pytest.mark.parametrize("host", HOSTS)
def test_record_writes_the_host_and_returns_no_raw_output(gathered, host):
    recorded, combined = gathered[host]["recorded"], gathered[host]["combined"]["groups"]
    assert recorded["record"] == os.path.join(gathered["run_dir"], "hosts", host + ".json")
    record = _record(gathered, host)
    files = [entry["path"] for index in record["raw"].values() for entry in index.values() if entry.get("path")]
    assert recorded["raw_files"] == sum(len(index) for index in record["raw"].values()) > 0
    for path in files:
        assert os.path.isfile(os.path.join(gathered["run_dir"], path)), path
    for group, name in zip(GROUPS, FACT_NAMES):
        # the result keeps the failures, not the raw outputs nor a second copy of the facts (they are in the results
        # directory, and the facts in the result's own ansible_facts)
        assert "raw" not in recorded["groups"][group] and "ansible_facts" not in recorded["groups"][group], (host, group)
        assert recorded["groups"][group].get("failed") == combined[group].get("failed"), (host, group)
        assert recorded["groups"][group].get("msg") == combined[group].get("msg"), (host, group)
        if not combined[group].get("failed"):
            assert recorded["ansible_facts"][name] == combined[group]["ansible_facts"][name], (host, group)
        expected = None if combined[group].get("failed") else combined[group]["ansible_facts"][name]
        assert record["facts"][group] == expected, (host, group)
        assert (group in record["fact_errors"]) == bool(combined[group].get("failed")), (host, group)
    assert record["claim"] == {"gpu_model": "H100"} and record["settings"] == {"gpufleet_nccl_env": {"NCCL_IB_DISABLE": "1"}}
    assert record["profile_request"] == {"profile": "h100-sxm", "overrides": None}
    assert record["unreachable"] is None


def test_record_figures_read_by_hand(gathered):
    # hgx-h100-nv18: NV18 between all 8 GPUs (topo/mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt), every group gathered
    nv18 = _record(gathered, "hgx-h100-nv18")
    assert nv18["facts"]["topology"]["summary"]["gpu_count"] == 8 and nv18["phases"]["facts"]["complete"] is True
    # its topo -m output is kept verbatim (the recording starts with its shell prompt line): a header row names GPU0..GPU7
    topo = nv18["raw"]["topology"]["topo_m"]
    with open(os.path.join(gathered["run_dir"], topo["path"]), encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    assert lines[0].split() == ["$", "nvidia-smi", "topo", "-m"]
    assert [line.split()[:8] for line in lines].count(["GPU%d" % index for index in range(8)]) == 1
    assert topo["cmd"][1:] == ["topo", "-m"] and topo["rc"] == 0
    # hgx-h100-xid-peermem: no topo -m recording (exit 127) -> a fact error, the other groups recorded
    xid = _record(gathered, "hgx-h100-xid-peermem")
    assert "exited 127" in xid["fact_errors"]["topology"] and xid["facts"]["topology"] is None
    assert xid["facts"]["host"]["xid"]["counts"] == {"48": 1, "63": 1, "94": 9}
