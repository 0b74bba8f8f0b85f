# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fact phase's budget: one deadline per module run, shared by every tool of every group.

A tool that answers just under its own timeout never times out, so skipping a tool after its first timeout does not
bound it: called once per interface it could hold a node for (timeout x calls). The phase budget does: each tool
gets what is left of it, and once it is spent every later call is skipped naming the budget and the tool that took
it. The fake tools sleep 0.5 s under a 5 s timeout in a 2 s phase (room for a loaded machine: a 0.2 s sleep under a
0.5 s timeout in a 1 s phase left none); the figures asserted are counts and reasons, the only clock figure a
generous upper bound.
"""

from __future__ import annotations

import os
import re
import stat
import time

import pytest

from ansible_collections.gpufleet.acceptance.plugins.module_utils import gpu_collect, nic_collect, node_collect
from ansible_collections.gpufleet.acceptance.plugins.modules import node_facts

INTERFACES = 16
SPENT = re.compile(r"^skipped: the fact phase's budget of 2 s was spent "
                   r"\((?P<tool>\S+) ran [0-9.]+ s of it in (?P<runs>\d+) runs?\)$")


@pytest.fixture(autouse=True)
def _fresh_node():
    node_collect.reset_timeouts()
    yield
    node_collect.reset_timeouts()


def _script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _slow(tmp_path, name):
    """A tool that answers well within its 5 s timeout, every time."""
    return _script(tmp_path, name, "sleep 0.5\necho ok\n")


def _sysfs(tmp_path, count=INTERFACES):
    """A sysfs tree (SYNTHETIC, written here) with ``count`` interfaces that have a device: one ethtool -i and one
    ethtool per interface."""
    root = tmp_path / "sys"
    device = root / "devices" / "pci0000:00" / "0000:01:00.0"
    device.mkdir(parents=True)
    for index in range(count):
        net = root / "class" / "net" / ("eth%d" % index)
        net.mkdir(parents=True)
        (net / "operstate").write_text("up\n")
        os.symlink(str(device), str(net / "device"))
    return str(root)


def _nic_params(tmp_path, ethtool, **overrides):
    missing = str(tmp_path / "no-such-tool")
    params = {"sysfs_root": _sysfs(tmp_path), "procfs_root": str(tmp_path), "ethtool_path": ethtool,
              "ibstat_path": missing,
              "ibv_devinfo_path": missing, "ip_path": missing, "timeout": 5, "phase_timeout": 2}
    params.update(overrides)
    return params


def _spent_by(run):
    """The tool a run skipped for the spent budget names, else None."""
    match = SPENT.match(run["error"] or "")
    return match.group("tool") if match else None


def _ethtool_runs(raw):
    """Every ethtool run in the order they ran (interfaces in sysfs order, ``ethtool IF`` then ``ethtool -i IF``)."""
    return [raw[kind][name] for name in raw["ethtool"] for kind in ("ethtool", "ethtool_driver") if name in raw[kind]]


def test_a_tool_answering_just_under_its_timeout_ends_at_the_phase_budget(tmp_path):
    ethtool = _slow(tmp_path, "ethtool")
    started = time.monotonic()
    raw, failure = nic_collect.run(_nic_params(tmp_path, ethtool, ip_path=_slow(tmp_path, "ip")))
    elapsed = time.monotonic() - started
    assert failure is None
    runs = _ethtool_runs(raw)
    assert len(runs) == 2 * INTERFACES
    answered = [run for run in runs if run["error"] is None]
    skipped = [run for run in runs if (run["error"] or "").startswith("skipped: ")]
    # each answered (0.5 s of the 2 s budget), the one running at the deadline was stopped, every later one skipped
    assert answered and all(run["rc"] == 0 and run["stdout"] == "ok\n" for run in answered)
    assert len(answered) < 2 * INTERFACES // 2
    assert runs[:len(answered)] == answered
    assert len(skipped) >= 2 * INTERFACES - len(answered) - 1
    for run in skipped:
        match = SPENT.match(run["error"])
        assert match, run["error"]
        assert match.group("tool") == "ethtool" and int(match.group("runs")) >= len(answered)
        assert run["rc"] is None and run["duration_s"] == 0.0
    # the tools after ethtool are skipped too, naming the same tool (one not installed is said not found)
    assert _spent_by(raw["ip_addr"]) == "ethtool"
    assert raw["ibstat"]["error"] == "not_found"
    # 32 runs of 0.5 s would take 16 s: the phase ended at its 2 s budget (the bound is generous)
    assert elapsed < 8, elapsed


def test_a_run_stopped_by_the_budget_says_so(tmp_path):
    # a hung tool with a 5 s timeout in a 0.2 s phase: the budget stops it first, and the runs after it are
    # skipped for the budget (it did not run past its own timeout)
    hung = _script(tmp_path, "ethtool", "exec sleep 30\n")
    raw, _failure = nic_collect.run(_nic_params(tmp_path, hung, phase_timeout=0.2))
    runs = _ethtool_runs(raw)
    assert runs[0]["error"] == "timeout" and runs[0]["phase_budget_s"] == 0.2
    assert 0 < runs[0]["timeout_s"] <= 0.2
    reason = "skipped: the fact phase's budget of 0.2 s was spent (ethtool ran "
    assert all(run["error"].startswith(reason) and run["error"].endswith(" of it in 1 run)") for run in runs[1:])


def test_one_budget_for_every_group_of_a_node_facts_run(tmp_path):
    # nvidia-smi answers under its timeout in the topology and gpu groups; the nic group after them gets what is left
    nvidia_smi = _slow(tmp_path, "nvidia-smi")
    lspci = _script(tmp_path, "lspci", "echo '01:00.0 3D controller [0302]: NVIDIA Corporation Device [10de:2330]'\n")
    params = {key: option.get("default") for key, option in node_facts.argument_spec().items()}
    params.update(_nic_params(tmp_path, _slow(tmp_path, "ethtool"), phase_timeout=2),
                  groups=["topology", "gpu", "nic"], nvidia_smi_path=nvidia_smi, lspci_path=lspci)
    started = time.monotonic()
    out = node_facts.collect(params)
    elapsed = time.monotonic() - started
    # topo -m, lspci, -q -x, -q, nvlink -s, nvlink -e: 2 s of budget for five runs of 0.5 s
    gpu = out["gpu"]["raw"]
    assert out["topology"]["raw"]["topo_m"]["rc"] == 0 and gpu["lspci"]["rc"] == 0
    assert not out["gpu"]["failed"] and not out["topology"]["failed"]
    nic_runs = _ethtool_runs(out["nic"]["raw"])
    # the budget went to nvidia-smi: every nic run is skipped, naming it
    assert nic_runs and [_spent_by(run) for run in nic_runs] == ["nvidia-smi"] * len(nic_runs), nic_runs
    assert elapsed < 8, elapsed


def test_without_a_budget_option_the_phase_gets_twice_the_longest_timeout_and_a_margin():
    assert node_collect.PHASE_MARGIN_S == 30
    assert node_collect.phase_budget([60, 60, 30, 60]) == 150
    assert node_collect.phase_budget([30]) == 90
    assert node_collect.phase_budget([60, 30], phase_timeout=45) == 45
    # node_facts: the longest timeout of the groups asked for (each group's own default without timeout)
    base = {key: option.get("default") for key, option in node_facts.argument_spec().items()}
    assert "default" not in node_facts.argument_spec()["phase_timeout"]
    assert node_facts.phase_budget_of(base) == 150
    assert node_facts.phase_budget_of(dict(base, groups=["nic"])) == 90
    assert node_facts.phase_budget_of(dict(base, timeout=10)) == 50
    assert node_facts.phase_budget_of(dict(base, phase_timeout=400)) == 400


def test_a_budget_of_no_time_is_refused():
    params = {key: option.get("default") for key, option in node_facts.argument_spec().items()}
    params.update(groups=["gpu", "nic"], phase_timeout=0)
    refused = "phase_timeout must be more than 0 seconds"
    refusals = {group: {"raw": {}, "failed": True, "msg": refused} for group in ("gpu", "nic")}
    assert node_facts.collect(params) == refusals
    assert gpu_collect.run(dict(params, phase_timeout=-1)) == ({}, refused)


def test_a_tool_that_timed_out_is_skipped_in_every_later_group(tmp_path):
    # lspci runs in the gpu group and again in the host group: after its timeout in gpu, host's run is skipped
    hung = _script(tmp_path, "lspci", "exec sleep 30\n")
    missing = str(tmp_path / "no-such-tool")
    params = {key: option.get("default") for key, option in node_facts.argument_spec().items()}
    params.update(groups=["gpu", "host"], timeout=1, nvidia_smi_path=missing, lspci_path=hung, sysfs_root=str(tmp_path),
                  procfs_root=str(tmp_path), journalctl_path=missing, dmesg_path=missing, ofed_info_path=missing,
                  mpirun_path=missing, ldconfig_path=missing, nccl_include_dirs=[])
    out = node_facts.collect(params)
    assert out["gpu"]["raw"]["lspci"]["error"] == "timeout" and out["gpu"]["raw"]["lspci"]["timeout_s"] == 1
    reason = "skipped: lspci timed out after 1 s at `%s -nn`; not run again" % hung
    assert out["host"]["raw"]["lspci"]["error"] == reason


def test_every_nic_tool_after_a_timeout_is_skipped(tmp_path):
    # ethtool hangs on its first interface: the 31 runs after it cost nothing
    hung = _script(tmp_path, "ethtool", "exec sleep 30\n")
    started = time.monotonic()
    raw, _failure = nic_collect.run(_nic_params(tmp_path, hung, timeout=0.5, phase_timeout=60))
    runs = _ethtool_runs(raw)
    assert runs[0]["error"] == "timeout"
    reason = "skipped: ethtool timed out after 0.5 s at `%s eth0`; not run again" % hung
    assert [run["error"] for run in runs[1:]] == [reason] * (2 * INTERFACES - 1)
    assert time.monotonic() - started < 10
