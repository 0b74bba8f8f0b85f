# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_facts' collection and fact building, in-process, against replayed nodes (tests/replay/nodes/gpu-*.yml).

Each test does what one gpu_facts task does, without Ansible: the module's ``run(params)``
(plugins/module_utils/gpu_collect.py, the module's argument defaults applied) on the node's replay
wrappers, then what the action plugin does with it (gpufleet/adapter/action.py: a module failure is the
result; otherwise ``gpufleet.facts.gpu.build_facts`` on a RawReader named after the host, a FactError
becoming ``failed`` with its message). tests/playbooks/test_node_facts.py runs the module through
ansible-playbook (arguments, facts in hostvars, check mode, failures as the play sees them).

Expected values are read by hand from the recordings named in each node file (tests/replay/nodes/gpu-*.yml
says which recordings, and whether the node is composite).
"""

from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.gpufleet.acceptance.plugins.module_utils import gpu_collect
from gpufleet.facts import gpu

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "unit", "doubles"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position
from fact_task import fact_task  # noqa: E402  pylint: disable=import-error,wrong-import-position

TEXT_ONLY = {"query_formats": ["text"], "nvlink": False}


@pytest.fixture(name="gathered")
def gathered_fixture(tmp_path):
    """``gathered(host, node file, **module args)``: the gpu_facts result on that replayed node (its tools)."""

    def _gather(host, node, **args):
        layout = build_fleet.build_node(os.path.join(REPO_ROOT, "tests", "replay", "nodes", node), str(tmp_path))
        module_args = {"nvidia_smi_path": os.path.join(layout["bin_dir"], "nvidia-smi"),
                       "lspci_path": os.path.join(layout["bin_dir"], "lspci")}
        module_args.update(args)
        return fact_task(host, gpu_collect, gpu.build_facts, module_args)

    return _gather


def test_h100_590_text_and_nvlink_from_one_machine(gathered):
    result = gathered("h100", "gpu-h100-590-1gpu.yml", query_formats=["text"])
    assert not result.get("failed"), result.get("msg")
    fact = result["ansible_facts"]["gpufleet_gpu"]
    # Header of the -q recording: Driver 590.48.01, CUDA 13.1, Attached GPUs 1.
    assert fact["driver_version"] == "590.48.01"
    assert fact["cuda_version"] == "13.1"
    assert fact["gpu_count"] == 1
    assert fact["sources"] == {"xml": False, "text": True, "nvlink_status": True, "nvlink_errors": False,
                               "lspci": False}
    gpu_0 = fact["gpus"][0]
    assert gpu_0["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu_0["pci_bus_id"] == "00000000:00:09.0"
    assert gpu_0["vbios_version"] == "96.00.A5.00.01"
    assert gpu_0["board_part_number"] == "692-2G520-0200-000"
    assert gpu_0["memory_total_mib"] == 81559
    assert gpu_0["persistence_mode"] is True
    assert gpu_0["ecc_mode_current"] is True
    assert gpu_0["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert gpu_0["temperature_c"] == 59
    assert gpu_0["power_limit_w"] == 700.0
    assert gpu_0["clocks_sm_mhz"] == 1980
    assert (gpu_0["pcie_link_gen_current"], gpu_0["pcie_link_width_current"]) == (5, 16)
    assert gpu_0["fabric"]["state"] == "Completed" and gpu_0["fabric"]["status"] == "Success"
    # Three compute processes under load: two memhog, one gpu_burn (15690 MiB).
    assert [p["pid"] for p in gpu_0["processes"]] == [11327, 11328, 11345]
    # nvlink -s of the same capture: 18 links at 26.562 GB/s.
    nvlink = gpu_0["nvlink"]
    assert nvlink["supported"] is True
    assert len(nvlink["links"]) == 18
    assert {link["speed_gbs"] for link in nvlink["links"]} == {26.562}
    # nvlink -e was never recorded: the replay exits 127 and that is carried, not invented.
    assert "exited 127" in nvlink["errors_message"]
    assert any("nvlink -e` exited 127" in warning for warning in fact["warnings"])
    summary = fact["summary"]
    assert summary["nvlink_active_links"] == 18
    assert summary["nvlink_inactive_links"] == []
    assert summary["nvlink_speeds_gbs"] == [26.562]
    assert summary["throttled_gpus"] == []  # every Clocks Event Reason "Not Active" under load
    assert summary["fabric_states"] == ["Completed"]
    assert summary["fabric_not_ready_gpus"] == []
    assert summary["compute_processes"] == 3
    # No lspci on this node: the count is unknown, and a warning says so.
    assert fact["lspci_gpu_count"] is None and fact["missing_from_nvml"] is None
    assert any("lspci not found" in warning for warning in fact["warnings"])
    assert result["raw"]["query_text"]["rc"] == 0


def test_hgx_h100_throttle_reasons_fabric_and_counts(gathered):
    result = gathered("hgx", "gpu-h100-8x-535-fabric-throttle.yml", **TEXT_ONLY)
    assert not result.get("failed"), result.get("msg")
    fact = result["ansible_facts"]["gpufleet_gpu"]
    summary = fact["summary"]
    assert fact["gpu_count"] == 8
    assert fact["driver_version"] == "535.183.01"
    assert [gpu_n["pci_bus_id"][-7:] for gpu_n in fact["gpus"]] == [
        "53:00.0", "64:00.0", "75:00.0", "86:00.0", "97:00.0", "A8:00.0", "B9:00.0", "CA:00.0"]
    assert summary["names"] == ["NVIDIA H100 80GB HBM3"]
    assert summary["memory_total_mib"] == [81559]
    assert summary["vbios_versions"] == ["96.00.74.00.01"]
    assert summary["persistence_mode_all"] is True
    assert summary["ecc_enabled_all"] is True
    # GPU 2 (bus 75): SW Power Cap, HW Power Brake Slowdown and SW Thermal Slowdown Active;
    # the other seven only "Idle : Active", which is not throttling.
    assert summary["throttled_gpus"] == [2]
    assert fact["gpus"][2]["active_clock_event_reasons"] == [
        "sw_power_cap", "hw_power_brake_slowdown", "sw_thermal_slowdown"]
    assert summary["clock_event_reasons_active"]["idle"] == [0, 1, 3, 4, 5, 6, 7]
    assert summary["clock_event_reasons_active"]["hw_power_brake_slowdown"] == [2]
    assert "hw_slowdown" not in summary["clock_event_reasons_active"]  # parent printed Not Active
    assert summary["fabric_states"] == ["Completed"]
    assert summary["fabric_statuses"] == ["Success"]
    assert summary["remapped_rows_pending_any"] is False
    assert summary["remapped_rows_failure_any"] is False
    assert summary["temperature_max_c"] == 39
    assert summary["gpus_with_processes"] == [2]  # PID 1002127 /usr/bin/python on bus 75
    assert fact["gpus"][0]["replays_since_reset"] == 120
    assert summary["nvlink_collected"] is False
    assert fact["gpus"][0]["nvlink"] is None
    assert "nvlink_status" not in result["raw"]


def test_rtx4090_sw_power_cap_and_no_ecc(gathered):
    result = gathered("rtx", "gpu-rtx4090-8x-sw-power-cap.yml", **TEXT_ONLY)
    assert not result.get("failed"), result.get("msg")
    fact = result["ansible_facts"]["gpufleet_gpu"]
    summary = fact["summary"]
    assert fact["gpu_count"] == 8
    assert summary["names"] == ["NVIDIA GeForce RTX 4090"]
    assert summary["memory_total_mib"] == [24564]
    # Bus 23 (index 1) and 81 (index 4): "SW Power Cap : Active"; the rest Idle.
    assert summary["throttled_gpus"] == [1, 4]
    assert summary["clock_event_reasons_active"]["sw_power_cap"] == [1, 4]
    assert summary["ecc_enabled_all"] is False  # ECC Mode Current: Disabled on consumer cards
    assert summary["temperature_max_c"] == 76
    assert summary["gpus_with_processes"] == [1, 4]
    assert summary["fabric_states"] == []  # Fabric State N/A: no NVSwitch
    # Idle GPU 0 trains down to PCIe gen 1 of 4 (normal when idle); loaded GPU 1 is at 4.
    assert 0 in summary["pcie_gen_below_max_gpus"] and 1 not in summary["pcie_gen_below_max_gpus"]
    assert summary["pcie_width_degraded_gpus"] == []


def test_a100_composite_nvlink_count_disagreement_fails(gathered):
    result = gathered("a100", "gpu-a100-sxm4-80gb-composite.yml", query_formats=["xml"])
    assert result["failed"] is True
    # nvlink -s recording: GPU 0..7; -q -x recording: one <gpu> element.
    assert result["msg"].startswith("a100: `nvidia-smi nvlink -s` lists 8 GPU(s) (0-7) but nvidia-smi -q lists 1 (0)")
    # a FactError's one-line message, not a traceback (anything else a builder raised would fail this test)
    assert "Traceback" not in result["msg"]


def test_a100_composite_lspci_sees_gpus_nvml_does_not(gathered):
    result = gathered("a100", "gpu-a100-sxm4-80gb-composite.yml", query_formats=["xml"], nvlink=False)
    assert not result.get("failed"), result.get("msg")
    fact = result["ansible_facts"]["gpufleet_gpu"]
    # lspci -nn: eight "3D controller [0302] ... [10de:20b2]", six "Bridge [0680] ... [10de:1af1]" NVSwitches.
    assert fact["lspci_gpu_count"] == 8
    assert fact["gpu_count"] == 1
    assert fact["attached_gpus"] == 4  # as the trimmed XML says; one <gpu> element
    assert fact["missing_from_nvml"] == 7
    assert fact["lspci_gpus"][0] == "0001:00:00.0" and fact["lspci_gpus"][-1] == "000e:00:00.0"
    assert "000b:00:00.0" in fact["lspci_only_bus_ids"]
    assert fact["nvml_only_bus_ids"] == ["0000:01:00.0"]
    assert any("0000:01:00.0" in warning for warning in fact["warnings"])
    assert any(warning.startswith("nvidia-smi -q -x: attached_gpus is 4") for warning in fact["warnings"])
    gpu_0 = fact["gpus"][0]
    assert gpu_0["name"] == "NVIDIA A100-SXM4-80GB"
    assert gpu_0["serial"] == "1650522003820"
    assert gpu_0["mig_mode_current"] == "Enabled"
    assert len(gpu_0["mig_devices"]) == 4
    assert fact["summary"]["mig_enabled_gpus"] == [0]
    assert fact["summary"]["remapped_rows_pending_any"] is None  # <remapped_rows>N/A</remapped_rows>
    assert fact["driver_version"] == "535.54.03"


def test_a100_40gb_composite_nvlink_status_and_errors_merge(gathered):
    result = gathered("vm", "gpu-a100-sxm4-40gb-composite.yml", query_formats=["xml"])
    assert not result.get("failed"), result.get("msg")
    fact = result["ansible_facts"]["gpufleet_gpu"]
    assert fact["gpu_count"] == 1
    nvlink = fact["gpus"][0]["nvlink"]
    # -s -i 0: Link 0..11 at 25 GB/s; -e: Replay/Recovery/CRC Errors 0 on every link.
    assert [link["link"] for link in nvlink["links"]] == list(range(12))
    assert all(link["active"] is True and link["speed_gbs"] == 25.0 for link in nvlink["links"])
    assert nvlink["links"][11]["crc_errors"] == 0
    assert fact["summary"]["nvlink_error_totals"] == {"replay_errors": 0, "recovery_errors": 0, "crc_errors": 0}
    assert fact["summary"]["nvlink_gpus_with_errors"] == []
    # Two machines: the nvlink outputs' UUID (fde0a018...) is not the XML's (27b94a00...).
    assert any("GPU-fde0a018" in warning and "GPU-27b94a00" in warning for warning in fact["warnings"])


def test_xml_and_text_listing_different_gpus_fails(gathered):
    result = gathered("a10", "gpu-a10-family-xml-text-mismatch-composite.yml", nvlink=False)
    assert result["failed"] is True
    # XML <gpu id="00000000:00:1E.0"> (A10G) vs text "GPU 00000000:07:00.0" (A10).
    assert "list different GPUs" in result["msg"]
    assert "0000:00:1e.0" in result["msg"] and "0000:07:00.0" in result["msg"]


def test_damaged_query_text_fails_naming_the_line(gathered):
    result = gathered("hgx", "gpu-h100-8x-truncated-damaged.yml", **TEXT_ONLY)
    assert result["failed"] is True
    # Line 86 is the first hand-edited field: "        Invalid HW Slowdown                       : Not Active".
    assert result["msg"].startswith("hgx: cannot read `")
    assert "nvidia-smi -q` output: line 86:" in result["msg"]
    assert "Traceback" not in result["msg"]


def test_nvidia_smi_missing_fails_with_the_driver_hint(gathered):
    result = gathered("bare", "gpu-a100-no-driver.yml")
    assert result["failed"] is True
    assert result["msg"].endswith("/nvidia-smi not found: is the NVIDIA driver installed?")
    # lspci ran first, so what the bus shows travels with the failure.
    assert result["raw"]["lspci"]["rc"] == 0
    assert result["raw"]["lspci"]["stdout"].count("3D controller [0302]") == 8
