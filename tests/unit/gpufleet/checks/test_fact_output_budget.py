# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node whose outputs the fact phase's output budget cut: INCOMPLETE naming the tools and the budget, not REJECT.

The raw entries are the node side's (plugins/module_utils/node_collect.py run_tool) as a node whose output budget was
spent returns them: ``truncated``, the bytes each stream printed, ``truncated_reason``, and what was kept (nothing, or
the head of the run the budget ran out in: never parsed). The one whole output is a recording
(smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt, 8 H100s). The checks are this module's own (a synthetic family), so
only the facts and the engine's handling of them are under test.
"""

from __future__ import annotations

import pytest

from gpufleet.checks import engine
from gpufleet.checks.model import FAIL, INCOMPLETE, PASS, REJECT, SKIP, NodeContext, result
from gpufleet.facts import node as fact_node
from gpufleet.facts.raw import is_overrun, overruns

FAMILY = __name__
SPENT = "the fact phase's output budget of 64 MiB was spent"


@engine.node_check("output_budget_demo.gpu_count", requires=("gpu",))
def _gpu_count(node):
    count = node.group("gpu")["gpu_count"]
    return [result("output_budget_demo.gpu_count", PASS if count == 8 else FAIL, "%d GPUs" % count)]


@engine.node_check("output_budget_demo.topology", requires=("topology",))
def _topology(node):
    return [result("output_budget_demo.topology", PASS, "topology read")]


def _run(cmd, stdout="", rc=0, error=None, **extra):
    entry = {"cmd": cmd, "rc": None if error else rc, "stdout": stdout, "stderr": "", "duration_s": 0.0, "error": error}
    entry.update(extra)
    return entry


def _cut(cmd, printed, kept=""):
    """A run the spent output budget cut: it printed ``printed`` bytes on stdout and ``kept`` is what was kept."""
    return _run(cmd, kept, truncated=True, stdout_bytes=printed, stderr_bytes=0, truncated_reason=SPENT)


@pytest.fixture(name="groups")
def groups_fixture(fixture_text):
    smi_q = fixture_text("smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt")
    gpu_raw = {
        "lspci": _run(["lspci", "-nn"], error="not_found"),
        "query_xml": _cut(["nvidia-smi", "-q", "-x"], 1048576),
        "query_text": _run(["nvidia-smi", "-q"], smi_q),
        "nvlink_status": _cut(["nvidia-smi", "nvlink", "-s"], 5000),
        "nvlink_errors": _cut(["nvidia-smi", "nvlink", "-e"], 5000),
    }
    # the budget ran out inside topo -m: its first line was kept, the rest dropped
    topology_raw = {"topo_m": _cut(["nvidia-smi", "topo", "-m"], 2000, "\tGPU0\tGPU1\n")}
    module_result = {"changed": False, "groups": {
        "topology": {"raw": topology_raw, "failed": False, "msg": None},
        "gpu": {"raw": gpu_raw, "failed": False, "msg": None},
    }}
    return fact_node.group_results("h1", ["topology", "gpu"], module_result)


def test_a_cut_output_is_never_parsed_and_its_group_names_the_tool_and_the_budget(groups):
    # the required topo -m was cut: no topology facts, and the message says which tool and why, not "cannot read"
    assert groups["topology"]["failed"]
    assert groups["topology"]["msg"] == "h1: `nvidia-smi topo -m` truncated: " + SPENT
    assert is_overrun(groups["topology"]["msg"])
    # the record keeps what the node sent: the head it kept, its byte counts and the reason
    assert groups["topology"]["raw"]["topo_m"] == _cut(["nvidia-smi", "topo", "-m"], 2000, "\tGPU0\tGPU1\n")
    # -q -x and the NVLink queries cut: read as skipped ones, the 8 GPUs come from -q ("Attached GPUs : 8" in the
    # recording), the NVLink state is unknown, and the cut runs are listed
    gpu = groups["gpu"]["ansible_facts"]["gpufleet_gpu"]
    assert gpu["gpu_count"] == 8
    assert gpu["overran"] == ["`nvidia-smi -q -x`, `nvidia-smi nvlink -s`, `nvidia-smi nvlink -e` truncated: " + SPENT]
    assert gpu["query_failures"] == ["h1: `nvidia-smi -q -x` truncated: " + SPENT]


def test_many_cut_runs_read_short_and_a_run_cut_by_its_own_cap_is_not_an_overrun():
    raw = {"ethtool": {"eth%d" % index: _cut(["/usr/sbin/ethtool", "eth%d" % index], 1048576) for index in range(5)}}
    assert overruns(raw) == ["`ethtool eth0`, `ethtool eth1`, `ethtool eth2` and 2 more truncated: " + SPENT]
    # the per-call cap (8 MiB of one stream) keeps the head and parses it: no truncated_reason, not an overrun
    capped = {"topo_m": _run(["nvidia-smi", "topo", "-m"], "x", truncated=True, stdout_bytes=200000000, stderr_bytes=0)}
    assert overruns(capped) == []
    assert not is_overrun("h1: cannot read `nvidia-smi topo -m` output: line 1: no header "
                          "(output truncated on the node: it printed 200000000 bytes, the first 1 were kept)")


def test_a_node_whose_outputs_the_budget_cut_is_incomplete_not_rejected(groups):
    gpu = groups["gpu"]["ansible_facts"]["gpufleet_gpu"]
    clean_gpu = {key: value for key, value in gpu.items() if key != "overran"}
    capped = ("capped: cannot read `nvidia-smi topo -m` output: line 1: no header "
              "(output truncated on the node: it printed 200000000 bytes, the first 1 were kept)")
    nodes = [
        NodeContext("h1", facts={"gpu": gpu}, fact_errors={"topology": groups["topology"]["msg"]}),
        # a topo -m cut by its own per-call cap that could not be read: still a failure, as before
        NodeContext("capped", facts={"gpu": clean_gpu}, fact_errors={"topology": capped}),
    ]
    report = engine.run_checks(nodes, families=[FAMILY])["nodes"]
    h1 = report["h1"]
    assert h1["verdict"] == INCOMPLETE and h1["failed"] == []
    assert h1["coverage"]["incomplete"][0] == (
        "facts: `nvidia-smi -q -x`, `nvidia-smi nvlink -s`, `nvidia-smi nvlink -e` truncated: %s; "
        "`nvidia-smi topo -m` truncated: %s" % (SPENT, SPENT))
    by_id = {item["id"]: item for item in h1["checks"]}
    assert by_id["facts.topology"]["status"] == SKIP
    assert by_id["facts.topology"]["message"] == "not gathered: " + groups["topology"]["msg"]
    # the gpu facts that were built are judged
    assert by_id["output_budget_demo.gpu_count"]["status"] == PASS
    assert by_id["output_budget_demo.topology"]["status"] == SKIP
    assert report["capped"]["verdict"] == REJECT and report["capped"]["failed"] == ["facts.topology"]


def test_a_cut_ethtool_marks_only_its_interface_as_a_skipped_one_does(fixture_text):
    linked = fixture_text("ethtool/ovh-intel-e810-ice-25g-dac-linked.txt")
    net = [{"name": name, "attrs": {"operstate": "up"}, "device": True, "pci_address": "0000:01:00.%d" % index,
            "pci": {}} for index, name in enumerate(("eth0", "eth1"))]
    raw = {
        "sysfs": {"root": "/sys", "net": net, "infiniband": []},
        "ethtool": {"eth0": _run(["ethtool", "eth0"], linked), "eth1": _cut(["ethtool", "eth1"], 1048576)},
        "ethtool_driver": {}, "skipped_names": [],
        "ibstat": _run(["ibstat"], error="not_found"),
        "ibv_devinfo": _run(["ibv_devinfo"], error="not_found"),
        "ip_addr": _run(["ip", "-j", "addr"], error="not_found"),
    }
    groups = fact_node.group_results("h1", ["nic"], {"groups": {"nic": {"raw": raw, "failed": False, "msg": None}}})
    nic = groups["nic"]["ansible_facts"]["gpufleet_nic"]
    assert nic["overran"] == ["`ethtool eth1` truncated: " + SPENT]
    assert nic["summary"]["ethtool_failed"] == ["eth1"]
    ifaces = {iface["name"]: iface for iface in nic["interfaces"]}
    assert (ifaces["eth1"]["ethtool"], ifaces["eth1"]["ethtool_error"]) == (None, "`ethtool eth1` truncated: " + SPENT)
    # eth0's whole output is read as before: the recording's "Speed: 25000Mb/s"
    assert ifaces["eth0"]["ethtool_error"] is None and ifaces["eth0"]["ethtool"]["speed_mbps"] == 25000
