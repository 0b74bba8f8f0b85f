# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fact phase's output budget: one cap on what every collector of a module run keeps, tools and files together.

The per-call cap (MAX_OUTPUT_BYTES per stream) bounds one tool run, not a tool run once per interface: 20 interfaces,
two ethtool runs each, two streams of 8 MiB, is 640 MiB. The phase's output budget does: once it is spent each later
tool still runs, its output read and dropped, and its entry says ``truncated`` with the reason. The fake tools print
exactly 1 MiB (SYNTHETIC: ``x`` repeated, written here); every figure asserted is a byte count or a reason.
"""

from __future__ import annotations

import os
import stat
import sys
import tracemalloc

import pytest
import yaml

from ansible_collections.gpufleet.acceptance.plugins.module_utils import host_collect, nic_collect, node_collect
from ansible_collections.gpufleet.acceptance.plugins.modules import node_facts

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MIB = 1024 * 1024
SPENT_16 = "the fact phase's output budget of 16 MiB was spent"


@pytest.fixture(autouse=True)
def _fresh_node():
    node_collect.reset_timeouts()
    yield
    node_collect.reset_timeouts()


def _mib_tool(tmp_path, name):
    """A tool that prints exactly 1 MiB of ``x`` on stdout, nothing on stderr, and exits 0."""
    path = tmp_path / name
    path.write_text("#!%s\nimport sys\nsys.stdout.buffer.write(b'x' * %d)\n" % (sys.executable, MIB))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _sysfs(tmp_path, count):
    """A sysfs tree (SYNTHETIC, written here): ``count`` interfaces with a device, each with ``operstate`` "up\\n"
    (3 bytes) and no other attribute file."""
    root = tmp_path / "sys"
    device = root / "devices" / "pci0000:00" / "0000:01:00.0"
    device.mkdir(parents=True)
    for index in range(count):
        net = root / "class" / "net" / ("eth%02d" % index)
        net.mkdir(parents=True)
        (net / "operstate").write_text("up\n")
        os.symlink(str(device), str(net / "device"))
    return str(root)


def _kept(entry):
    return len(entry["stdout"].encode()) + len(entry["stderr"].encode())


def test_forty_calls_of_1_mib_keep_16_mib_and_the_rest_say_why(tmp_path):
    tool = _mib_tool(tmp_path, "chatty")
    with node_collect.fact_phase(600, 16 * MIB):
        runs = [node_collect.run_tool([tool, str(index)], timeout=60) for index in range(40)]
    assert [run["error"] for run in runs] == [None] * 40 and [run["rc"] for run in runs] == [0] * 40
    # the first 16 fill the budget whole, each as it printed it
    for run in runs[:16]:
        assert run["stdout"] == "x" * MIB and "truncated" not in run and "truncated_reason" not in run
    # every later one ran, printed its 1 MiB, and kept nothing of it
    for run in runs[16:]:
        assert (run["stdout"], run["stderr"]) == ("", "")
        assert run["truncated"] is True and (run["stdout_bytes"], run["stderr_bytes"]) == (MIB, 0)
        assert run["truncated_reason"] == SPENT_16
    assert sum(_kept(run) for run in runs) == 16 * MIB


def test_the_collector_holds_no_more_than_the_budget_and_one_calls_cap(tmp_path):
    tool = _mib_tool(tmp_path, "chatty")
    tracemalloc.start()
    try:
        with node_collect.fact_phase(600, 16 * MIB):
            runs = [node_collect.run_tool([tool], timeout=60) for _index in range(40)]
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sum(_kept(run) for run in runs) == 16 * MIB
    # 40 MiB printed; held: the 16 MiB kept and at most one call's stream in flight, not the 40 MiB
    assert peak < 16 * MIB + node_collect.MAX_OUTPUT_BYTES, peak


def test_one_budget_for_every_interface_of_a_nic_run_sysfs_reads_included(tmp_path):
    # 20 interfaces: 60 bytes of operstate read first, then ethtool and ethtool -i per interface (1 MiB each)
    missing = str(tmp_path / "no-such-tool")
    params = {"sysfs_root": _sysfs(tmp_path, 20), "procfs_root": str(tmp_path),
              "ethtool_path": _mib_tool(tmp_path, "ethtool"), "ibstat_path": missing, "ibv_devinfo_path": missing,
              "ip_path": missing, "timeout": 60, "phase_timeout": 600, "phase_output_budget": 16 * MIB}
    raw, failure = nic_collect.run(params)
    assert failure is None
    assert [entry["attrs"]["operstate"] for entry in raw["sysfs"]["net"]] == ["up"] * 20
    runs = [raw[kind]["eth%02d" % index] for index in range(20) for kind in ("ethtool", "ethtool_driver")]
    # 15 runs whole (15 MiB), the 16th gets what the 60 bytes of sysfs left of the 16th MiB, the other 24 nothing
    assert all(run["stdout"] == "x" * MIB and "truncated" not in run for run in runs[:15])
    assert runs[15]["stdout"] == "x" * (MIB - 60) and runs[15]["truncated_reason"] == SPENT_16
    assert runs[15]["cmd"][1:] == ["-i", "eth07"] and runs[15]["stdout_bytes"] == MIB
    assert all(run["stdout"] == "" and run["truncated_reason"] == SPENT_16 for run in runs[16:])
    assert 60 + sum(_kept(run) for run in runs) == 16 * MIB


def test_one_budget_for_every_group_of_a_node_facts_run(tmp_path):
    # topology's `nvidia-smi topo -m` takes 1 MiB of 2; the nic group after it gets the other MiB
    params = {key: option.get("default") for key, option in node_facts.argument_spec().items()}
    missing = str(tmp_path / "no-such-tool")
    params.update(groups=["topology", "nic"], nvidia_smi_path=_mib_tool(tmp_path, "nvidia-smi"),
                  sysfs_root=_sysfs(tmp_path, 2), procfs_root=str(tmp_path),
                  ethtool_path=_mib_tool(tmp_path, "ethtool"),
                  ibstat_path=missing, ibv_devinfo_path=missing, ip_path=missing, phase_output_budget=2 * MIB)
    out = node_facts.collect(params)
    assert out["topology"]["raw"]["topo_m"]["stdout"] == "x" * MIB
    nic = out["nic"]["raw"]
    spent = "the fact phase's output budget of 2 MiB was spent"
    # 6 bytes of operstate, then ethtool eth00 gets the rest of the second MiB
    assert nic["ethtool"]["eth00"]["stdout"] == "x" * (MIB - 6) and nic["ethtool"]["eth00"]["truncated_reason"] == spent
    assert [nic[kind][name]["truncated_reason"] for kind, name in
            (("ethtool_driver", "eth00"), ("ethtool", "eth01"), ("ethtool_driver", "eth01"))] == [spent] * 3
    assert not out["nic"]["failed"] and not out["topology"]["failed"]


def test_files_read_count_and_one_that_does_not_fit_is_kept_empty(tmp_path):
    for name in ("first", "second", "third"):
        (tmp_path / name).write_text("12345\n")
    errors = {}
    with node_collect.fact_phase(60, 10):
        assert node_collect.read_text(str(tmp_path / "first"), errors=errors) == "12345"
        # 6 bytes do not fit in the 4 left: none of them are kept (a value cut short would read as another value)
        assert node_collect.read_text(str(tmp_path / "second"), errors=errors) is None
        entry = host_collect.read_entry(str(tmp_path / "third"))
    assert errors == {"second": "unreadable: the fact phase's output budget of 10 bytes was spent"}
    assert entry == {"cmd": [str(tmp_path / "third")], "rc": 0, "stdout": "", "stderr": "", "duration_s": 0.0,
                     "error": None, "truncated": True, "stdout_bytes": 6, "stderr_bytes": 0,
                     "truncated_reason": "the fact phase's output budget of 10 bytes was spent"}


def test_the_default_budget_and_how_it_is_worded():
    assert node_collect.DEFAULT_PHASE_OUTPUT_BYTES == 64 * MIB
    assert node_collect.phase_output_budget({}) == 64 * MIB
    assert node_collect.phase_output_budget({"phase_output_budget": None}) == 64 * MIB
    assert node_collect.phase_output_budget({"phase_output_budget": 1024}) == 1024
    assert [node_collect.bytes_text(size) for size in (64 * MIB, 1536, 100, 3 * 1024 * MIB)] == [
        "64 MiB", "1.5 KiB", "100 bytes", "3 GiB"]
    # an option without a default, as phase_timeout: Ansible reads "64M" or a number of bytes
    assert node_facts.argument_spec()["phase_output_budget"] == {"type": "bytes"}
    assert nic_collect.ARGUMENT_SPEC["phase_output_budget"] == {"type": "bytes"}


def test_a_budget_of_no_bytes_is_refused():
    params = {key: option.get("default") for key, option in node_facts.argument_spec().items()}
    params.update(groups=["nic"], phase_output_budget=0)
    refused = "phase_output_budget must be more than 0 bytes"
    assert node_facts.collect(params) == {"nic": {"raw": {}, "failed": True, "msg": refused}}
    assert host_collect.run(dict(params, timeout=60)) == ({}, refused)


def test_outside_a_fact_phase_only_the_per_call_cap_applies(tmp_path):
    tool = _mib_tool(tmp_path, "chatty")
    runs = [node_collect.run_tool([tool], timeout=60) for _index in range(3)]
    assert [run["stdout"] for run in runs] == ["x" * MIB] * 3 and not any("truncated" in run for run in runs)


def _yaml(relative_path):
    with open(os.path.join(REPO_ROOT, relative_path), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def test_the_role_declares_its_variable_once_and_both_fact_tasks_pass_it():
    options = _yaml("roles/facts/meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert options["gpufleet_fact_phase_output_budget"]["type"] == "bytes"
    for relative_path in ("roles/facts/tasks/gather.yml", "roles/facts/tasks/after_stress.yml"):
        task = next(task for task in _yaml(relative_path) if "gpufleet.acceptance.node_facts" in task)
        option = task["gpufleet.acceptance.node_facts"]["phase_output_budget"]
        assert option == "{{ gpufleet_fact_phase_output_budget | default(omit) }}", relative_path
