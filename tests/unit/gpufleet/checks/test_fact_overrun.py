# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node whose fact phase overran: INCOMPLETE naming the tools, never REJECTed for it, its other facts kept.

The raw results are the node side's entries (plugins/module_utils/node_collect.py run_tool) as a node whose phase
ran out returns them: a timed-out ``nvidia-smi -q -x``, NVLink queries and ``ip -j addr`` skipped for the spent
budget; the one tool output is a recording (smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt, 8 H100s). The checks are
this module's own (a synthetic family), so only the facts and the engine's handling of them are under test.
"""

from __future__ import annotations

import pytest

from gpufleet.checks import engine
from gpufleet.checks.model import ACCEPT, FAIL, INCOMPLETE, PASS, REJECT, SKIP, NodeContext, result
from gpufleet.checks.verdict import verdict_lines
from gpufleet.facts import node as fact_node
from gpufleet.facts.raw import TASK_TIMED_OUT, is_overrun, overruns

FAMILY = __name__
SPENT = "the fact phase's budget of 150 s was spent (nvidia-smi ran 148.2 s of it in 3 runs)"


@engine.node_check("overrun_demo.gpu_count", requires=("gpu",))
def _gpu_count(node):
    count = node.group("gpu")["gpu_count"]
    return [result("overrun_demo.gpu_count", PASS if count == 8 else FAIL, "%d GPUs" % count)]


@engine.node_check("overrun_demo.nic", requires=("nic",))
def _nic(node):
    return [result("overrun_demo.nic", PASS, "NIC facts read")]


def _run(cmd, stdout="", rc=0, error=None, **extra):
    entry = {"cmd": cmd, "rc": None if error else rc, "stdout": stdout, "stderr": "", "duration_s": 0.0, "error": error}
    entry.update(extra)
    return entry


def _gpu_raw(smi_q):
    return {
        "lspci": _run(["lspci", "-nn"], error="not_found"),
        "query_xml": _run(["nvidia-smi", "-q", "-x"], error="timeout", timeout_s=30, duration_s=30.2),
        "query_text": _run(["nvidia-smi", "-q"], smi_q),
        "nvlink_status": _run(["nvidia-smi", "nvlink", "-s"], error="skipped: " + SPENT),
        "nvlink_errors": _run(["nvidia-smi", "nvlink", "-e"], error="skipped: " + SPENT),
    }


def _nic_raw():
    return {
        "sysfs": {"root": "/sys", "net": [], "infiniband": []},
        "ethtool": {}, "ethtool_driver": {}, "skipped_names": [],
        "ibstat": _run(["ibstat"], error="not_found"),
        "ibv_devinfo": _run(["ibv_devinfo"], error="not_found"),
        "ip_addr": _run(["ip", "-j", "addr"], error="skipped: " + SPENT),
    }


@pytest.fixture(name="groups")
def groups_fixture(fixture_text):
    smi_q = fixture_text("smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt")
    module_result = {"changed": False, "groups": {
        "gpu": {"raw": _gpu_raw(smi_q), "failed": False, "msg": None},
        "nic": {"raw": _nic_raw(), "failed": False, "msg": None},
    }}
    return fact_node.group_results("h1", ["gpu", "nic"], module_result)


def test_the_facts_that_could_be_built_are_kept_with_the_tools_that_overran(groups):
    gpu = groups["gpu"]["ansible_facts"]["gpufleet_gpu"]
    # -q -x timed out: the 8 GPUs come from -q ("Attached GPUs : 8" in the recording)
    assert gpu["gpu_count"] == 8
    assert gpu["overran"] == [
        "`nvidia-smi -q -x` timed out after 30 s",
        "`nvidia-smi nvlink -s`, `nvidia-smi nvlink -e` skipped: " + SPENT,
    ]
    assert gpu["query_failures"] == ["h1: `nvidia-smi -q -x` timed out after 30 s"]
    assert groups["gpu"]["raw"]["query_xml"]["timeout_s"] == 30
    # ip -j addr skipped: the NIC facts cannot be built; the group fails naming the tool, its raw output kept
    assert groups["nic"]["failed"] and groups["nic"]["msg"] == "h1: `ip -j addr` skipped: " + SPENT
    assert groups["nic"]["raw"]["ip_addr"]["error"] == "skipped: " + SPENT
    assert groups["topology"]["skipped"] and groups["host"]["skipped"]


def test_a_run_stopped_by_the_phase_and_many_skips_read_short():
    raw = {"ethtool": {"eth%d" % index: _run(["/usr/sbin/ethtool", "eth%d" % index], error="skipped: " + SPENT)
                       for index in range(5)},
           "ibstat": _run(["/usr/sbin/ibstat"], error="timeout", timeout_s=1.75, phase_budget_s=150)}
    assert overruns(raw) == [
        "`ibstat` timed out after 1.8 s (the fact phase's budget of 150 s ran out)",
        "`ethtool eth0`, `ethtool eth1`, `ethtool eth2` and 2 more skipped: " + SPENT,
    ]
    assert overruns({"lspci": _run(["lspci", "-nn"], "00:00.0 Host bridge")}) == []


def test_which_fact_errors_are_overruns():
    assert is_overrun("h1: `nvidia-smi -q -x` timed out after 30 s")
    assert is_overrun("h1: `ip -j addr` skipped: " + SPENT)
    assert is_overrun("h1: `nvidia-smi -q` skipped: nvidia-smi timed out after 60 s at `nvidia-smi -q -x`; "
                      "not run again")
    assert is_overrun(TASK_TIMED_OUT % 210)
    assert not is_overrun("h1: `ibstat` exited 255: ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed")
    assert not is_overrun("nvidia-smi not found: is the NVIDIA driver installed?")


def _judged(groups):
    gpu = groups["gpu"]["ansible_facts"]["gpufleet_gpu"]
    clean_gpu = {key: value for key, value in gpu.items() if key != "overran"}
    nodes = [
        NodeContext("clean", facts={"gpu": clean_gpu, "nic": {"interfaces": []}}),
        # h1 as gathered above: gpu facts built with tools that overran, nic failed for a skipped tool
        NodeContext("h1", facts={"gpu": gpu}, fact_errors={"nic": groups["nic"]["msg"]}),
        # gpu alone asked for, and the fact task ran past Ansible's timeout: nothing came back
        NodeContext("lost", fact_errors={"gpu": TASK_TIMED_OUT % 210}),
        # a tool that answered and said something is wrong: still a failure
        NodeContext("broken", facts={"gpu": clean_gpu},
                    fact_errors={"nic": "broken: `ibstat` exited 255: ibpanic: stat of IB device 'mlx5_8' failed"}),
    ]
    return engine.run_checks(nodes, families=[FAMILY])


def test_a_node_whose_facts_overran_is_incomplete_naming_the_tools_not_rejected(groups):
    report = _judged(groups)
    nodes = report["nodes"]
    assert nodes["clean"]["verdict"] == ACCEPT
    h1 = nodes["h1"]
    assert h1["verdict"] == INCOMPLETE and h1["failed"] == []
    assert h1["coverage"]["incomplete"][0] == (
        "facts: `nvidia-smi -q -x` timed out after 30 s; `nvidia-smi nvlink -s`, `nvidia-smi nvlink -e` skipped: %s; "
        "`ip -j addr` skipped: %s" % (SPENT, SPENT))
    # the nic group is not judged (it says why); the gpu facts that were built are judged
    by_id = {item["id"]: item for item in h1["checks"]}
    assert by_id["facts.nic"]["status"] == SKIP
    assert by_id["facts.nic"]["message"] == "not gathered: h1: `ip -j addr` skipped: " + SPENT
    assert by_id["overrun_demo.gpu_count"]["status"] == PASS
    assert by_id["overrun_demo.nic"]["status"] == SKIP
    lost = nodes["lost"]
    assert lost["verdict"] == INCOMPLETE and lost["failed"] == []
    assert lost["coverage"]["incomplete"][0] == "facts: " + TASK_TIMED_OUT % 210
    assert nodes["broken"]["verdict"] == REJECT and nodes["broken"]["failed"] == ["facts.nic"]


def test_the_verdict_line_names_the_phase_and_the_tool_and_no_group_not_asked_for(groups):
    lines = verdict_lines(_judged(groups), {})
    assert lines["h1"].startswith(
        "h1: INCOMPLETE (profile None; judged against no claim) - not verified: facts: `nvidia-smi -q -x` timed out "
        "after 30 s; ")
    assert lines["lost"] == ("lost: INCOMPLETE (profile None; judged against no claim) - not verified: facts: %s; "
                             "not verified: nothing was judged: no check found evidence on this node"
                             % (TASK_TIMED_OUT % 210))
    for host in ("h1", "lost"):
        assert "could not gather" not in lines[host]
    assert "topology" not in lines["lost"] and "host facts" not in lines["lost"] and "nic" not in lines["lost"]
    assert "could not gather nic facts" in lines["broken"]
