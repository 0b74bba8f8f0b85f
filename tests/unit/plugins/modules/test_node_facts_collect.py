# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_facts' node side: the groups asked for, each with its own module's options and failures."""

from __future__ import annotations

from ansible_collections.gpufleet.acceptance.plugins.module_utils import host_collect, nic_collect
from ansible_collections.gpufleet.acceptance.plugins.modules import node_facts


def _params(tmp_path, **overrides):
    params = {key: option.get("default") for key, option in node_facts.argument_spec().items()}
    params.update(overrides)
    params.setdefault("sysfs_root", str(tmp_path))
    return params


def test_options_are_the_four_modules_options():
    spec = node_facts.argument_spec()
    assert spec["groups"]["default"] == ["topology", "gpu", "nic", "host"]
    assert "default" not in spec["timeout"]
    # the fact phase's budget has no default either: without it, it follows the timeouts of the groups asked for
    assert spec["phase_timeout"] == {"type": "int"}
    # nor the output budget: without it, node_collect.DEFAULT_PHASE_OUTPUT_BYTES
    assert spec["phase_output_budget"] == {"type": "bytes"}
    # every option of every group's module is there, with that module's default
    for key, option in list(nic_collect.ARGUMENT_SPEC.items()) + list(host_collect.ARGUMENT_SPEC.items()):
        if key not in ("timeout", "phase_timeout", "phase_output_budget"):
            assert spec[key]["default"] == option["default"], key


def test_each_group_keeps_its_own_timeout_unless_one_is_given():
    # Ansible hands the module every option of its spec: nic_facts' procfs_root (bond members) among them
    nic_params = {"sysfs_root": "/s", "procfs_root": "/pr", "ethtool_path": "e", "ibstat_path": "i",
                  "ibv_devinfo_path": "v", "ip_path": "p", "phase_timeout": None,
                  "phase_output_budget": None}
    assert node_facts.group_params(dict(nic_params, timeout=None), nic_collect)["timeout"] == 30
    assert node_facts.group_params(dict(nic_params, timeout=7), nic_collect)["timeout"] == 7
    assert node_facts.group_params(dict(nic_params, timeout=7), nic_collect)["procfs_root"] == "/pr"


def test_only_the_groups_asked_for_each_failing_on_its_own(tmp_path):
    params = _params(tmp_path, groups=["topology", "nic"], nvidia_smi_path=str(tmp_path / "no-such-nvidia-smi"), sysfs_root=str(tmp_path / "nosys"))
    out = node_facts.collect(params)
    assert sorted(out) == ["nic", "topology"]
    assert out["topology"]["failed"] and out["topology"]["msg"] == "%s not found: is the NVIDIA driver installed?" % params["nvidia_smi_path"]
    assert out["topology"]["raw"]["topo_m"]["error"] == "not_found"
    assert out["nic"] == {"raw": {}, "failed": True, "msg": "no class/net under %s: is sysfs mounted there?" % params["sysfs_root"]}


def test_a_group_that_crashes_does_not_lose_the_others(tmp_path, monkeypatch):
    def boom(_params):
        raise ValueError("bad sysfs")

    monkeypatch.setattr(nic_collect, "run", boom)
    missing = str(tmp_path / "missing-tool")
    params = _params(tmp_path, groups=["nic", "host"], timeout=5, procfs_root=str(tmp_path), lspci_path=missing, journalctl_path=missing,
                     dmesg_path=missing, ofed_info_path=missing, mpirun_path=missing, ldconfig_path=missing, nccl_include_dirs=[])
    out = node_facts.collect(params)
    assert out["nic"] == {"raw": {}, "failed": True, "msg": "nic collector failed: ValueError: bad sysfs"}
    assert out["host"]["failed"] is False and out["host"]["raw"]["lspci"]["error"] == "not_found"
