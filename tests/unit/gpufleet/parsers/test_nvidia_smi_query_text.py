# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the ``nvidia-smi -q`` text parser (KIND nvidia-smi-q) and its fragment readers.

Every expected value below was read by hand from the fixture file named in the test.
"""

from __future__ import annotations

import json
import re

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers import registry
from gpufleet.parsers.nvidia_smi_query_text import parse_clock_event_fragment, parse_fabric_fragment, parse_query_text

A10 = "smi/gpud-nvidia-smi-q-1x-a10-535.129.03.txt"
TITANV = "smi/gpud-nvidia-smi-q-1x-titanv-560.35.03.txt"
H100_161 = "smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt"
RTX4090 = "smi/gpud-nvidia-smi-q-8x-rtx4090-535.154.05.txt"
H100_183 = "smi/gpud-nvidia-smi-q-text-8x-h100-535.183.01-fabric-completed-power-brake-swthermal-ACTIVE.txt"
TRUNCATED = "smi/gpud-nvidia-smi-q-text-8x-h100-535.183.01-TRUNCATED-PARTIAL-1-of-8-gpus-INVALID-EDITED.txt"
H100_590 = "smi/exporter-capture-nvidia-smi-q-text-1x-h100-590-fabric-completed-under-load.txt"
H200_MIG = "smi/exporter-capture-nvidia-smi-q-text-1x-h200-MIG-590-fabric-completed.txt"
PRINCETON = "smi/princeton-della-h100-nvidia-smi-a-text-545.txt"
AZURE_CLEAN = "smi/azure-nvsmi-q-retired-pages-8gpu-clean.txt"
AZURE_BAD = "smi/azure-nvsmi-q-retired-pages-8gpu-bad-EDITED.txt"
FABRIC_IN_PROGRESS = "smi/fabric-grep-A2-IN-PROGRESS-NA-gpu-operator-driver-ctr.txt"
FABRIC_NARROW = "smi/fabric-grep-A2-completed-success-550-narrow-column-blog.txt"
FABRIC_WIDE = "smi/fabric-grep-A2-completed-success-wide-column-gpu-operator-driver-ctr.txt"
FABRIC_AZURE = "smi/azure-fabric-completed-INSUFFICIENT-RESOURCES-cliqueid0-zero-clusteruuid-PR506.txt"
RTX4090_SWCAP = "misc/gpud-nvidia-smi-q-text-8x-rtx4090-535.154.05-sw-power-cap-ACTIVE-2gpus.txt"
L4RZ = "misc/l4rz-dell-c4130-v100-sxm2-32gb-hw-power-brake-slowdown-ACTIVE-382MHz-PARTIAL.txt"

GPU_KEYS = {
    "index", "pci_bus_id", "name", "product_brand", "product_architecture", "uuid", "serial", "minor_number",
    "board_part_number", "vbios_version", "persistence_mode", "mig_mode_current", "memory_total_mib", "memory_used_mib",
    "ecc_mode_current", "ecc_mode_pending", "ecc_errors_volatile_correctable", "ecc_errors_volatile_uncorrectable",
    "ecc_errors_aggregate_correctable", "ecc_errors_aggregate_uncorrectable", "retired_pages", "remapped_rows",
    "temperature_c", "temperature_slowdown_c", "temperature_shutdown_c", "power_draw_w", "power_limit_w",
    "power_max_limit_w", "clocks_graphics_mhz", "clocks_sm_mhz", "clocks_mem_mhz", "clocks_max_graphics_mhz",
    "clocks_max_sm_mhz", "clocks_max_mem_mhz", "clock_event_reasons", "pcie_link_gen_current", "pcie_link_gen_max",
    "pcie_link_width_current", "pcie_link_width_max", "fabric", "processes", "replays_since_reset", "raw",
}


def _raises(text, parser=parse_query_text):
    with pytest.raises(ParseError) as info:
        parser(text)
    return info.value


# --------------------------------------------------------------------------------------
# Full nvidia-smi -q recordings


def test_a10_535_single_gpu(fixture_text):
    result = parse_query_text(fixture_text(A10))
    assert result["timestamp"] == "Wed Sep 25 10:40:24 2024"
    assert result["driver_version"] == "535.129.03"
    assert result["cuda_version"] == "12.2"
    assert result["attached_gpus"] == 1
    assert result["warnings"] == []
    assert len(result["gpus"]) == 1
    gpu = result["gpus"][0]
    assert GPU_KEYS <= set(gpu)
    assert gpu["index"] == 0
    assert gpu["pci_bus_id"] == "00000000:07:00.0"
    assert gpu["name"] == "NVIDIA A10"
    assert gpu["product_architecture"] == "Ampere"
    assert gpu["uuid"] == "GPU-73d12ef7-f589-f867-4259-c7090ab44736"
    assert gpu["serial"] == "1324521052681"
    assert gpu["vbios_version"] == "94.02.5C.00.04"
    assert gpu["board_part_number"] == "900-2G133-0020-100"
    assert gpu["persistence_mode"] is True
    assert gpu["mig_mode_current"] is None  # "Current : N/A"
    assert gpu["memory_total_mib"] == 23028
    assert gpu["memory_used_mib"] == 4
    assert gpu["ecc_mode_current"] is True
    assert gpu["ecc_errors_volatile_uncorrectable"] == 0
    assert gpu["retired_pages"] is None  # all three rows N/A
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 4, "pending": True, "failure": False}
    assert gpu["temperature_c"] == 33
    assert gpu["temperature_slowdown_c"] == 98
    assert gpu["temperature_shutdown_c"] == 101
    assert gpu["power_draw_w"] == 43.89
    assert gpu["power_limit_w"] == 150.0
    assert gpu["clocks_graphics_mhz"] == 225 and gpu["clocks_mem_mhz"] == 405
    assert gpu["clocks_max_mem_mhz"] == 6251
    assert gpu["pcie_link_gen_current"] == 4 and gpu["pcie_link_width_max"] == 16
    assert gpu["clock_event_reasons"]["idle"] is True
    assert gpu["clock_event_reasons"]["hw_slowdown"] is False
    assert gpu["fabric"] is None  # State/Status N/A: no NVSwitch fabric
    assert gpu["raw"]["Fabric"] == {"State": "N/A", "Status": "N/A"}
    assert gpu["processes"] == []
    assert gpu["raw"]["Inforom Version"]["Image Version"] == "G133.0215.00.06"
    assert gpu["raw"]["Voltage"]["Graphics"] == "662.500 mV"


def test_titanv_560_old_ecc_layout_and_processes(fixture_text):
    result = parse_query_text(fixture_text(TITANV))
    assert result["driver_version"] == "560.35.03"
    assert result["cuda_version"] == "12.6"
    gpu = result["gpus"][0]
    assert gpu["pci_bus_id"] == "00000000:01:00.0"
    assert gpu["name"] == "NVIDIA TITAN V"
    assert gpu["product_brand"] == "Titan"
    assert gpu["persistence_mode"] is False
    assert gpu["ecc_mode_current"] is None
    # Volatile/Aggregate -> Single Bit / Double Bit -> ... all N/A: None, never 0.
    assert gpu["ecc_errors_volatile_correctable"] is None
    assert gpu["ecc_errors_aggregate_uncorrectable"] is None
    assert gpu["remapped_rows"] is None  # "Remapped Rows : N/A"
    assert gpu["temperature_c"] == 44
    assert gpu["temperature_slowdown_c"] == 97
    assert gpu["temperature_shutdown_c"] == 100
    assert gpu["power_draw_w"] == 29.02
    assert gpu["power_limit_w"] == 250.0
    assert gpu["power_max_limit_w"] == 300.0
    assert gpu["pcie_link_gen_current"] == 1
    assert gpu["pcie_link_gen_max"] == 3
    assert gpu["pcie_link_gen_device_max"] == 3
    assert gpu["clocks_max_graphics_mhz"] == 1912
    assert gpu["fabric"] is None  # State, Status, CliqueId, ClusterUUID all N/A
    assert [p["pid"] for p in gpu["processes"]] == [100607, 100838, 101815]
    assert gpu["processes"][0]["name"] == "/usr/lib/xorg/Xorg"
    assert gpu["processes"][0]["type"] == "G"
    assert gpu["processes"][0]["used_memory_mib"] == 142
    assert gpu["processes"][2]["name"] == "/opt/test"
    assert gpu["processes"][2]["used_memory_mib"] == 111
    assert gpu["raw"]["Fan Speed"] == "30 %"
    assert gpu["raw"]["Capabilities"]["EGM"] == "disabled"
    assert gpu["raw"]["Processes"]["Process ID"][1] == {
        "_value": "100838", "Type": "G", "Name": "/usr/bin/gnome-shell", "Used GPU Memory": "33 MiB"}
    assert gpu["raw"]["ECC Errors"]["Volatile"]["Single Bit"]["Total"] == "N/A"


def test_h100_535_161_eight_gpus_power_brake(fixture_text):
    result = parse_query_text(fixture_text(H100_161))
    assert result["timestamp"] == "Wed Jul 31 11:22:39 2024"
    assert result["attached_gpus"] == 8
    assert result["warnings"] == []
    gpus = result["gpus"]
    assert [g["pci_bus_id"][9:11] for g in gpus] == ["19", "3B", "4C", "5D", "9B", "BB", "CB", "DB"]
    assert [g["index"] for g in gpus] == list(range(8))
    assert [g["minor_number"] for g in gpus] == list(range(8))
    assert [g["replays_since_reset"] for g in gpus] == [67, 63, 52, 43, 49, 53, 82, 67]
    # every GPU: HW Slowdown Active with HW Power Brake Slowdown Active, not idle
    assert all(g["clock_event_reasons"]["hw_slowdown"] is True for g in gpus)
    assert all(g["clock_event_reasons"]["hw_power_brake_slowdown"] is True for g in gpus)
    assert all(g["clock_event_reasons"]["hw_thermal_slowdown"] is False for g in gpus)
    first, last = gpus[0], gpus[7]
    assert first["serial"] == "1650124031592"
    assert first["uuid"] == "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa"
    assert last["serial"] == "1650124007084"
    assert last["uuid"] == "GPU-b0fe4996-1f7c-91f6-0ccd-08ae3b7e23c5"
    assert first["mig_mode_current"] == "Disabled"
    assert first["memory_total_mib"] == 81559
    assert first["power_draw_w"] == 67.74
    assert first["power_limit_w"] == 700.0
    assert first["temperature_c"] == 29
    # only relative "T.Limit" rows are printed: absolute slowdown/shutdown are unknown
    assert first["temperature_slowdown_c"] is None
    assert first["raw"]["Temperature"]["GPU Shutdown T.Limit Temp"] == "-8 C"
    assert first["raw"]["Temperature"]["Memory Max Operating T.Limit Temp"] == "0 C"
    assert first["ecc_errors_aggregate_correctable"] == 0
    assert first["ecc_errors_aggregate_uncorrectable"] == 0
    assert first["clocks_graphics_mhz"] == 86
    assert first["fabric"] == {"state": "Completed", "status": "Success", "clique_id": None, "cluster_uuid": None}
    json.dumps(result)


def test_rtx4090_535_154_consumer_na_fields(fixture_text):
    result = parse_query_text(fixture_text(RTX4090))
    assert result["timestamp"] == "Thu Nov 14 05:34:15 2024"
    assert result["attached_gpus"] == 8
    assert len(result["gpus"]) == 8
    assert result["gpus"][7]["pci_bus_id"] == "00000000:E1:00.0"
    gpu = result["gpus"][0]
    assert gpu["pci_bus_id"] == "00000000:01:00.0"
    assert gpu["name"] == "NVIDIA GeForce RTX 4090"
    assert gpu["product_architecture"] == "Ada Lovelace"
    assert gpu["minor_number"] == 2
    assert gpu["serial"] is None  # "Serial Number : N/A"
    assert gpu["board_part_number"] is None
    assert gpu["ecc_mode_current"] is False
    assert gpu["ecc_errors_volatile_correctable"] is None  # all N/A, not 0
    assert gpu["ecc_errors_volatile_uncorrectable"] is None
    assert gpu["memory_used_mib"] == 6730
    assert gpu["pcie_link_gen_current"] == 1
    assert gpu["pcie_link_gen_max"] == 4  # Max 4 (Device Max 4, Host Max 5)
    assert gpu["fabric"] is None
    assert gpu["clocks_max_mem_mhz"] == 10501
    assert gpu["power_draw_w"] == 17.11
    assert gpu["processes"] == [{"pid": 2010222, "type": "C", "name": "/usr/bin/python", "used_memory_mib": 6724,
                                 "gpu_instance_id": None, "compute_instance_id": None}]
    assert gpu["raw"]["Fan Speed"] == "72 %"


def test_h100_535_183_fabric_and_active_reasons(fixture_text):
    result = parse_query_text(fixture_text(H100_183))
    assert result["driver_version"] == "535.183.01"
    assert result["timestamp"] == "Fri Jun 21 02:03:08 2024"
    gpus = result["gpus"]
    assert [g["pci_bus_id"][9:11] for g in gpus] == ["53", "64", "75", "86", "97", "A8", "B9", "CA"]
    assert all(g["fabric"]["state"] == "Completed" and g["fabric"]["status"] == "Success" for g in gpus)
    odd = gpus[2]  # GPU 00000000:75:00.0
    reasons = odd["clock_event_reasons"]
    assert reasons["sw_power_cap"] is True
    assert reasons["hw_slowdown"] is False
    assert reasons["hw_power_brake_slowdown"] is True
    assert reasons["sw_thermal_slowdown"] is True
    assert reasons["idle"] is False
    assert odd["replays_since_reset"] == 58
    assert odd["processes"][0]["pid"] == 1002127
    assert odd["processes"][0]["used_memory_mib"] == 9212
    assert gpus[0]["replays_since_reset"] == 120
    assert gpus[0]["clock_event_reasons"]["idle"] is True
    assert sum(1 for g in gpus if g["clock_event_reasons"]["idle"]) == 7


def test_truncated_edited_fixture_raises_at_first_edited_line(fixture_text):
    # Line 86 'Invalid HW Slowdown' has its ':' at column 51 where its siblings (lines 83-85)
    # have it at column 43: the first line that real nvidia-smi cannot have printed.
    error = _raises(fixture_text(TRUNCATED))
    assert error.line == 86
    assert "Invalid HW Slowdown" in str(error)


def test_truncated_fixture_with_names_repaired_still_raises_at_its_last_line(fixture_text):
    # Synthetic: the three hand-edited lines 86-88 replaced by the real lines; what is left
    # is an output that stops after line 91 inside GPU 1 of 8: the cut must be named.
    lines = fixture_text(TRUNCATED).split("\n")
    lines[85] = "        HW Slowdown                       : Not Active"
    lines[86] = "            HW Thermal Slowdown           : Not Active"
    lines[87] = "            HW Power Brake Slowdown       : Not Active"
    error = _raises("\n".join(lines))
    assert error.line == 91
    assert "truncated" in str(error)


def test_h100_590_under_load_wide_column(fixture_text):
    result = parse_query_text(fixture_text(H100_590))
    assert result["timestamp"] == "Tue Jul 14 08:12:53 2026"
    assert result["driver_version"] == "590.48.01"
    assert result["cuda_version"] == "13.1"
    gpu = result["gpus"][0]
    assert gpu["pci_bus_id"] == "00000000:00:09.0"
    assert gpu["vbios_version"] == "96.00.A5.00.01"
    assert gpu["memory_used_mib"] == 19818
    assert gpu["power_draw_w"] == 629.45  # "Average Power Draw"
    assert gpu["power_limit_w"] == 700.0
    assert gpu["temperature_c"] == 59
    assert gpu["replays_since_reset"] == 9
    assert gpu["clocks_sm_mhz"] == 1980
    assert not any(gpu["clock_event_reasons"].values())  # all Not Active under load
    assert gpu["fabric"] == {"state": "Completed", "status": "Success", "clique_id": 0,
                             "cluster_uuid": "00000000-0000-0000-0000-000000000000"}
    assert [(p["pid"], p["name"], p["used_memory_mib"]) for p in gpu["processes"]] == [
        (11327, "/root/tools/memhog", 2566), (11328, "/root/tools/memhog", 1542), (11345, "./gpu_burn", 15690)]
    assert gpu["raw"]["Utilization"]["GPU"] == "100 %"
    assert gpu["raw"]["Display Mode"] == "Requested functionality has been deprecated"
    assert gpu["raw"]["Fabric"]["Health"]["Route Unhealthy"] == "N/A"
    assert gpu["raw"]["GPU Memory Power Readings"]["Average Power Draw"] == "85.83 W"
    assert gpu["raw"]["PCI"]["Atomic Caps Outbound"] == "FETCHADD_32 FETCHADD_64 SWAP_32 SWAP_64 CAS_32 CAS_64"


def test_h200_mig_590(fixture_text):
    result = parse_query_text(fixture_text(H200_MIG))
    assert result["timestamp"] == "Fri Jul  3 22:22:26 2026"
    gpu = result["gpus"][0]
    assert gpu["pci_bus_id"] == "00000000:83:00.0"
    assert gpu["name"] == "NVIDIA H200"
    assert gpu["mig_mode_current"] == "Enabled"
    assert gpu["board_part_number"] == "695-2G520-0280-001"
    assert gpu["memory_total_mib"] == 143771
    assert gpu["memory_used_mib"] == 16959
    assert gpu["remapped_rows"] is None  # "Remapped Rows : N/A" under MIG
    assert gpu["power_draw_w"] == 294.94
    assert gpu["clocks_max_mem_mhz"] == 3201
    assert gpu["fabric"]["state"] == "Completed" and gpu["fabric"]["clique_id"] == 0
    mig = gpu["raw"]["MIG Device"]
    assert [m["Index"] for m in mig] == ["0", "1", "2", "3", "4"]
    assert [m["GPU Instance ID"] for m in mig] == ["2", "2", "3", "9", "10"]
    assert mig[2]["Shared FB Memory Usage"]["Total"] == "33280 MiB"
    assert mig[0]["Device Attributes"]["Shared"]["Multiprocessor count"] == "16"
    assert [p["pid"] for p in gpu["processes"]] == [12249, 12250, 12267]
    assert gpu["processes"][0]["gpu_instance_id"] == 2
    assert gpu["processes"][0]["compute_instance_id"] == 1
    assert gpu["processes"][2]["used_memory_mib"] == 13526


def test_princeton_545_no_blank_after_banner(fixture_text):
    result = parse_query_text(fixture_text(PRINCETON))
    assert result["timestamp"] == "Fri Feb 23 11:51:29 2024"
    assert result["driver_version"] == "545.23.08"
    assert result["cuda_version"] == "12.3"
    assert result["attached_gpus"] == 1
    gpu = result["gpus"][0]
    assert gpu["pci_bus_id"] == "00000000:19:00.0"
    assert gpu["serial"] == "1654123038646"
    assert gpu["uuid"] == "GPU-10f35015-e921-bfab-2eb8-4e9b6664d5f1"
    assert gpu["memory_used_mib"] == 2
    assert gpu["power_draw_w"] == 72.02
    assert gpu["clocks_graphics_mhz"] == 345
    assert gpu["pcie_link_gen_max"] == 5 and gpu["pcie_link_width_current"] == 16
    assert gpu["ecc_errors_volatile_uncorrectable"] == 0
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert gpu["fabric"] == {"state": "Completed", "status": "Success", "clique_id": None, "cluster_uuid": None}
    assert gpu["clock_event_reasons"]["idle"] is True
    # header printed with a trailing space ("GPU Memory Power Readings ")
    assert gpu["raw"]["GPU Memory Power Readings"]["Power Draw"] == "47.78 W"
    assert gpu["raw"]["Inforom BBX Object Flush"]["Latest Timestamp"] == "2024/02/22 13:09:29.459"


def test_azure_page_retirement_subset_clean(fixture_text):
    # SOURCES.md says only 7 GPU sections are present; the file actually has 8
    # (00000001..00000008), matching 'Attached GPUs : 8', so no warning is expected.
    result = parse_query_text(fixture_text(AZURE_CLEAN))
    assert result["driver_version"] == "535.86.10"
    assert result["attached_gpus"] == 8
    assert [g["pci_bus_id"] for g in result["gpus"]] == ["0000000%d:00:00.0" % i for i in range(1, 9)]
    assert all(g["retired_pages"] == {"single_bit_ecc": 0, "double_bit_ecc": 0, "pending": False}
               for g in result["gpus"])
    assert result["gpus"][0]["name"] is None  # not part of a -d PAGE_RETIREMENT subset
    assert result["gpus"][0]["processes"] is None
    assert result["warnings"] == []


def test_azure_page_retirement_subset_bad_values(fixture_text):
    result = parse_query_text(fixture_text(AZURE_BAD))
    assert result["timestamp"] == "Thu Mar 14 20:46:07 2024"
    pages = [g["retired_pages"] for g in result["gpus"]]
    assert pages[0] == {"single_bit_ecc": 60, "double_bit_ecc": 5, "pending": False}
    assert pages[1] == {"single_bit_ecc": 2, "double_bit_ecc": 61, "pending": True}
    assert pages[2] == {"single_bit_ecc": 0, "double_bit_ecc": 0, "pending": False}
    assert pages[3] == {"single_bit_ecc": 6, "double_bit_ecc": 0, "pending": True}
    assert pages[5] == {"single_bit_ecc": 20, "double_bit_ecc": 45, "pending": True}
    assert pages[7] == {"single_bit_ecc": 8, "double_bit_ecc": 56, "pending": True}


def test_rtx4090_sw_power_cap_two_gpus(fixture_text):
    result = parse_query_text(fixture_text(RTX4090_SWCAP))
    assert result["timestamp"] == "Mon Jul  8 08:11:21 2024"
    gpus = result["gpus"]
    capped = [g["pci_bus_id"] for g in gpus if g["clock_event_reasons"]["sw_power_cap"]]
    assert capped == ["00000000:23:00.0", "00000000:81:00.0"]
    idle = [g["pci_bus_id"][9:11] for g in gpus if g["clock_event_reasons"]["idle"]]
    assert idle == ["01", "41", "61", "A1", "C1", "E1"]
    assert gpus[1]["power_draw_w"] == 445.38
    assert gpus[1]["clocks_graphics_mhz"] == 2640
    assert gpus[1]["processes"][0]["pid"] == 1285135
    assert gpus[1]["processes"][0]["used_memory_mib"] == 21602
    assert gpus[1]["raw"]["Fan Speed"] == "86 %"
    assert gpus[4]["power_draw_w"] == 446.36
    assert gpus[4]["clocks_sm_mhz"] == 2520
    assert gpus[4]["processes"][0]["used_memory_mib"] == 23632
    assert gpus[0]["processes"] == []  # "Processes : None"
    assert gpus[0]["fabric"] is None  # "State : N/A" (no NVSwitch)


def test_registry_dispatches_kind(fixture_text):
    result = registry.parse("nvidia-smi-q", fixture_text(A10))
    assert result["gpus"][0]["name"] == "NVIDIA A10"
    with pytest.raises(ParseError) as info:
        registry.parse("nvidia-smi-q", fixture_text(TRUNCATED))
    assert info.value.kind == "nvidia-smi-q" and info.value.line == 86


# --------------------------------------------------------------------------------------
# Fragments


def test_fabric_fragment_in_progress_over_indented(fixture_text):
    text = fixture_text(FABRIC_IN_PROGRESS)
    assert parse_fabric_fragment(text) == {
        "fabric": [{"state": "In Progress", "status": None, "clique_id": None, "cluster_uuid": None}],
        "ignored_lines": [{"line": 1, "text": "/run/nvidia/driver/bin/nvidia-smi -q -i 0 | grep -i -A 2 Fabric",
                           "why": "echoed command"}]}
    error = _raises(text)  # the main parser points at the fragment reader
    assert "give the whole output of nvidia-smi -q" in str(error)


def test_fabric_fragment_narrow_column(fixture_text):
    assert parse_fabric_fragment(fixture_text(FABRIC_NARROW)) == {
        "fabric": [{"state": "Completed", "status": "Success", "clique_id": None, "cluster_uuid": None}],
        "ignored_lines": [{"line": 1, "text": "$ nvidia-smi -q -i 0 | grep -i -A 2 Fabric", "why": "shell prompt"}]}


def test_fabric_fragment_wide_column(fixture_text):
    assert parse_fabric_fragment(fixture_text(FABRIC_WIDE)) == {
        "fabric": [{"state": "Completed", "status": "Success", "clique_id": None, "cluster_uuid": None}],
        "ignored_lines": [{"line": 1, "text": "/run/nvidia/driver/bin/nvidia-smi -q -i 0 | grep -i -A 2 Fabric",
                           "why": "echoed command"}]}


def test_fabric_fragment_azure_insufficient_resources(fixture_text):
    fabric = parse_fabric_fragment(fixture_text(FABRIC_AZURE))["fabric"]
    assert fabric == [{"state": "Completed", "status": "Insufficient Resources", "clique_id": 0,
                       "cluster_uuid": "00000000-0000-0000-0000-000000000000"}]


def test_fabric_fragment_several_gpus_with_grep_separators(fixture_text):
    # Synthetic: the narrow-column block repeated as grep -A2 prints it for 3 GPUs ('--').
    text = fixture_text(FABRIC_NARROW)
    head, block = text.split("\n", 1)
    third = block.replace("Success", "N/A")
    fabric = parse_fabric_fragment(head + "\n" + block + "--\n" + block + "--\n" + third)["fabric"]
    assert [f["status"] for f in fabric] == ["Success", "Success", None]


def test_fabric_fragment_damaged_or_empty(fixture_text):
    assert _raises("", parse_fabric_fragment).line is None
    # Synthetic: the command line only, the block lost.
    assert _raises(fixture_text(FABRIC_NARROW).split("\n")[0], parse_fabric_fragment).line is None
    # Synthetic: the NVML error nvidia-smi prints instead of the block.
    error = _raises("$ nvidia-smi -q | grep -A2 Fabric\nFailed to initialize NVML: Driver/library version mismatch\n", parse_fabric_fragment)
    assert error.line == 2 and "version mismatch" in str(error)
    # Synthetic: CliqueId value damaged.
    damaged = fixture_text(FABRIC_AZURE).replace("CliqueId                          : 0", "CliqueId                          : 0?")
    error = _raises(damaged, parse_fabric_fragment)
    assert error.line == 4


def test_clock_event_fragment_l4rz_power_brake(fixture_text):
    result = parse_clock_event_fragment(fixture_text(L4RZ))
    reasons = result["clock_event_reasons"]
    assert result["reasons_block"] == "Clocks Throttle Reasons"
    assert reasons["hw_slowdown"] is True
    assert reasons["hw_power_brake_slowdown"] is True
    assert reasons["hw_thermal_slowdown"] is False
    assert reasons["idle"] is False
    assert reasons["sync_boost"] is None  # omitted by the author
    assert result["clocks_sm_mhz"] == 382
    assert result["clocks_graphics_mhz"] == 382
    assert result["clocks_mem_mhz"] == 877
    assert result["clocks_max_sm_mhz"] is None


def test_clock_event_fragment_damage(fixture_text):
    text = fixture_text(L4RZ)
    # Synthetic: value cut mid-word on line 7.
    error = _raises(text.replace("Power Brake Slowdown       : Active", "Power Brake Slowdown       : Act"),
                    parse_clock_event_fragment)
    assert error.line == 7
    # Synthetic: SM clock without its unit (cut) on line 11.
    error = _raises(text.replace("382 MHz\n    Memory", "382\n    Memory"), parse_clock_event_fragment)
    assert error.line == 11
    # Synthetic: two GPUs' blocks in one paste.
    error = _raises(text + text, parse_clock_event_fragment)
    assert error.line == 14
    # Synthetic: only the Clocks block.
    assert _raises(text.split("\n\n")[1], parse_clock_event_fragment).line is None


# --------------------------------------------------------------------------------------
# Synthetic variants built from the real recordings


def test_crlf_and_ansi_and_tabs_read_the_same(fixture_text):
    text = fixture_text(A10)
    crlf = text.replace("\n", "\r\n")  # synthetic: CRLF line ends
    ansi = text.replace("GPU 00000000:07:00.0", "\x1b[4mGPU 00000000:07:00.0\x1b[0m").replace(
        "    FB Memory Usage", "    \x1b[1mFB Memory Usage\x1b[0m")  # synthetic: ANSI underline/bold headers
    # synthetic: indentation re-written with one TAB per 4 spaces, key padding collapsed
    tabs = "\n".join(re.sub(r"^((?:    )+)", lambda m: "\t" * (len(m.group(1)) // 4), line) for line in text.split("\n"))
    squeezed = re.sub(r"(\S) {2,}: ", r"\1 : ", text)  # synthetic: "Key : value" re-spaced
    for variant in (crlf, ansi, tabs, squeezed):
        gpu = parse_query_text(variant)["gpus"][0]
        assert gpu["pci_bus_id"] == "00000000:07:00.0"
        assert gpu["memory_total_mib"] == 23028
        assert gpu["remapped_rows"]["uncorrectable"] == 4
        assert gpu["clock_event_reasons"]["idle"] is True


def test_prompt_and_rank_prefixes(fixture_text):
    text = fixture_text(A10)
    prompted = "root@gpu-node-7:~# nvidia-smi -q\n" + text + "root@gpu-node-7:~# \n"  # synthetic
    assert parse_query_text(prompted)["gpus"][0]["memory_used_mib"] == 4
    srun = "$ srun -l nvidia-smi -q\n" + "".join("0: " + line + "\n" for line in text.split("\n"))  # synthetic
    assert parse_query_text(srun)["gpus"][0]["serial"] == "1324521052681"
    mpi = "".join("[1,0]<stdout>:" + line + "\n" for line in text.split("\n"))  # synthetic
    assert parse_query_text(mpi)["gpus"][0]["uuid"] == "GPU-73d12ef7-f589-f867-4259-c7090ab44736"
    # synthetic: rank 1's line slipped in at line 12 of rank 0's output
    lines = ["0: " + line for line in text.split("\n")]
    lines[11] = "1: " + text.split("\n")[11]
    assert _raises("\n".join(lines)).line == 12
    # synthetic: a damaged value after a prompt line is named by its line in the text as given
    damaged = prompted.replace("Used                              : 4 MiB", "Used                              : 4 Mi")
    assert _raises(damaged).line == 96  # line 95 of the recording, after the prompt line


@pytest.mark.parametrize("cut", [50, 92, 100, 150, 211])
def test_cut_at_line_n_names_n(fixture_text, cut):
    # Synthetic: the 8-GPU H100 output cut after line `cut` (inside GPU 0, which ends at 212).
    lines = fixture_text(H100_161).split("\n")
    error = _raises("\n".join(lines[:cut]) + "\n")
    assert error.line == cut


def test_cut_mid_line_names_that_line(fixture_text):
    lines = fixture_text(H100_161).split("\n")
    # Synthetic: cut inside line 95 "        Total                             : 81559 MiB".
    assert lines[94].endswith("81559 MiB")
    assert _raises("\n".join(lines[:94] + [lines[94][:-2]])).line == 95
    # Synthetic: cut inside the key of line 120.
    assert _raises("\n".join(lines[:119] + [lines[119][:9]])).line == 120


def test_cut_between_gpu_sections_is_reported_not_hidden(fixture_text):
    # Synthetic: the output stops right after GPU 3's "Processes : None" (line 827). This is
    # indistinguishable from `nvidia-smi -q -i 0,1,2,3` (which also prints 'Attached GPUs : 8'),
    # so it parses, with the mismatch in warnings.
    lines = fixture_text(H100_161).split("\n")
    result = parse_query_text("\n".join(lines[:827]) + "\n")
    assert len(result["gpus"]) == 4
    assert result["attached_gpus"] == 8
    assert any("'Attached GPUs : 8' but 4" in w for w in result["warnings"])


def test_last_section_missing_the_trailer_the_others_have(fixture_text):
    # Synthetic: the 590 H100 section duplicated under another bus id, the copy cut before its
    # final "Capabilities" block (so it ends with Processes, like a complete R535 section).
    text = fixture_text(H100_590).rstrip("\n")
    start = text.index("GPU 00000000:00:09.0")
    second = text[start:].replace("GPU 00000000:00:09.0", "GPU 00000000:00:0A.0")
    second = second[: second.index("    Capabilities")].rstrip("\n")
    combined = text + "\n\n" + second + "\n"
    error = _raises(combined)
    assert error.line == len(combined.split("\n")) - 1
    assert "truncated" in str(error)


def test_damaged_values_raise_with_their_line(fixture_text):
    text = fixture_text(A10)
    cases = [
        ("Idle                              : Active", "Idle                              : Activ", 83),
        ("Persistence Mode                      : Enabled", "Persistence Mode                      : Enabld", 14),
        ("Power Draw                        : 43.89 W", "Power Draw                        : 43.89 mW", 160),
        ("Max                       : 16x", "Max                       : sixteen", 69),
        ("GPU 00000000:07:00.0", "GPU 00000000:07", 8),
        ("        Used                              : 4 MiB", "      Used                              : 4 MiB", 95),
        ("Attached GPUs                             : 1", "Attached GPUs                             : one", 7),
    ]
    for old, new, line in cases:
        assert text.count(old) == 1, old
        assert _raises(text.replace(old, new)).line == line, new


def test_na_is_none_not_zero(fixture_text):
    # Synthetic: every A10 ECC counter and the FB "Used" printed as N/A.
    text = fixture_text(A10).replace("Correctable              : 0", "Correctable              : N/A")
    text = text.replace("Uncorrectable            : 0", "Uncorrectable            : [N/A]")
    text = text.replace("Used                              : 4 MiB", "Used                              : N/A")
    gpu = parse_query_text(text)["gpus"][0]
    assert gpu["ecc_errors_volatile_correctable"] is None
    assert gpu["ecc_errors_aggregate_uncorrectable"] is None
    assert gpu["memory_used_mib"] is None


def test_error_text_instead_of_data():
    assert _raises("").line is None
    assert _raises("   \n\n").line is None
    error = _raises("$ nvidia-smi -q\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")
    assert error.line == 2 and "couldn't communicate" in str(error)
    assert _raises("No devices were found\n").line == 1
    assert _raises("hello world\n").line is None


def test_error_inside_a_gpu_section_is_data(fixture_text):
    # Synthetic: the A10 output with a second GPU whose section is only NVML's error line.
    text = fixture_text(A10).replace("Attached GPUs                             : 1",
                                     "Attached GPUs                             : 2")
    text += "\nGPU 00000000:08:00.0\n    Unable to determine the device handle for GPU 0000:08:00.0: Unknown Error\n"
    result = parse_query_text(text)
    lost = result["gpus"][1]
    assert lost["pci_bus_id"] == "00000000:08:00.0"
    assert lost["errors"] == ["line 204: Unable to determine the device handle for GPU 0000:08:00.0: Unknown Error"]
    assert lost["name"] is None and lost["memory_total_mib"] is None
    assert any("Unable to determine" in w for w in result["warnings"])


def test_two_outputs_pasted_together(fixture_text):
    text = fixture_text(A10)
    error = _raises(text + text)  # synthetic
    assert error.line == 202  # the recording has 201 lines; the second banner is line 202


def test_hostile_strings_stay_strings(fixture_text):
    # Synthetic: markup, shell syntax and a control character in printed strings.
    text = fixture_text(TITANV).replace("/opt/test", "<script>alert(1)</script> $(reboot) : x")
    text = text.replace("NVIDIA TITAN V", "NVIDIA TITAN V\x07{{ lookup('pipe','id') }}")
    gpu = parse_query_text(text)["gpus"][0]
    assert gpu["processes"][2]["name"] == "<script>alert(1)</script> $(reboot) : x"
    assert gpu["name"] == "NVIDIA TITAN V\x07{{ lookup('pipe','id') }}"


def test_unknown_reason_is_a_warning_not_a_number(fixture_text):
    # Synthetic: a reason a newer driver might add, printed with the normal alignment.
    text = fixture_text(A10).replace(
        "        Display Clock Setting             : Not Active",
        "        Display Clock Setting             : Not Active\n        HW Future Slowdown                : Active")
    result = parse_query_text(text)
    assert result["gpus"][0]["clock_event_reasons"]["display_clock_setting"] is False
    assert any("HW Future Slowdown" in w for w in result["warnings"])


def test_older_driver_names(fixture_text):
    # Synthetic: the A10 output re-labelled with pre-R535 names ("Clocks Throttle Reasons",
    # "Power Readings" / "Enforced Power Limit") and a GPU whose Device Max differs from Max
    # (a Gen5 GPU in a Gen4 slot: Max is what GPU and host allow together).
    text = fixture_text(A10).replace("Clocks Event Reasons", "Clocks Throttle Reasons")
    text = text.replace("    GPU Power Readings", "    Power Readings")
    text = text.replace("Current Power Limit               : 150.00 W", "Enforced Power Limit              : 149.00 W")
    text = text.replace("Device Max                : 4", "Device Max                : 5")
    gpu = parse_query_text(text)["gpus"][0]
    assert gpu["clock_event_reasons"]["idle"] is True
    assert gpu["clock_event_reasons"]["sw_power_cap"] is False
    assert gpu["power_draw_w"] == 43.89
    assert gpu["power_limit_w"] == 149.0
    assert gpu["pcie_link_gen_max"] == 4
    assert gpu["pcie_link_gen_device_max"] == 5


def test_subset_cut_inside_last_section(fixture_text):
    # Synthetic: the clean PAGE_RETIREMENT subset cut after line 54 (inside the 8th section,
    # before its "Pending Page Blacklist" row): the last section is a prefix of the others.
    lines = fixture_text(AZURE_CLEAN).split("\n")
    assert lines[53].strip() == "Double Bit ECC                    : 0"
    assert _raises("\n".join(lines[:54]) + "\n").line == 54
    # ... and cut on the 8th section's header (line 51): nothing under it.
    assert _raises("\n".join(lines[:51]) + "\n").line == 51


def test_header_only_output_is_truncated(fixture_text):
    # Synthetic: the H100 output cut after "Attached GPUs : 8" (line 8).
    lines = fixture_text(H100_161).split("\n")
    assert lines[7].startswith("Attached GPUs")
    assert _raises("\n".join(lines[:8]) + "\n").line == 8


def test_idle_last_gpu_after_busy_ones_is_not_a_cut(fixture_text):
    # Synthetic: the RTX 4090 capture (every GPU with a process) with its last GPU's process
    # list replaced by "Processes : None": a complete output, no error.
    text = fixture_text(RTX4090)
    tail = text.rindex("    Processes\n")
    text = text[:tail] + "    Processes                             : None\n"
    result = parse_query_text(text)
    assert result["gpus"][7]["processes"] == []
    assert result["gpus"][6]["processes"][0]["pid"] == 1535847
    assert result["gpus"][6]["processes"][0]["used_memory_mib"] == 2058


def test_yes_no_words_are_per_field(fixture_text):
    # Synthetic: words valid for another field are damage here.
    text = fixture_text(A10)
    assert _raises(text.replace("Persistence Mode                      : Enabled",
                                "Persistence Mode                      : Yes")).line == 14
    assert _raises(text.replace("Pending                           : Yes",
                                "Pending                           : Active")).line == 142
    # Synthetic: a byte-order mark before the banner changes nothing.
    assert parse_query_text("\ufeff" + text)["gpus"][0]["name"] == "NVIDIA A10"


def test_fabric_fragment_key_colon_without_space(fixture_text):
    # Synthetic: the Azure block re-typed as "Key: value".
    text = re.sub(r" +: ", ": ", fixture_text(FABRIC_AZURE))
    assert "Status: Insufficient Resources" in text
    assert parse_fabric_fragment(text)["fabric"][0]["status"] == "Insufficient Resources"
    assert parse_fabric_fragment(text)["fabric"][0]["clique_id"] == 0


# --------------------------------------------------------------------------------------
# Foreign lines: what a collecting script or a person put around and inside the output


def test_foreign_lines_in_a_recording_are_listed_and_change_no_value(fixture_text):
    # EDITED: the 8x H100 recording with lines put in: a venv prompt and bash -x's echo first, a banner before
    # GPU 0's header, a note inside its PCI block, a rule between GPU 0 and GPU 1, an elision inside GPU 2, a
    # prompt with no command after the end.
    text = fixture_text(H100_161)
    edited = insert_lines(text, {
        1: "(venv) ubuntu@gpu-node-3:~$ nvidia-smi -q",
        2: "+ nvidia-smi -q",
        11: "===== node-07 : GPU 0 =====",
        78: "        <-- 67 replays on this one",
        218: "-----",
        426: "    ...",
        1654: "root@gpu-node-3:~# ",
    })
    result = parse_query_text(edited)
    assert result.pop("ignored_lines") == [
        {"line": 1, "text": "(venv) ubuntu@gpu-node-3:~$ nvidia-smi -q", "why": "shell prompt"},
        {"line": 2, "text": "+ nvidia-smi -q", "why": "echoed command"},
        {"line": 11, "text": "===== node-07 : GPU 0 =====", "why": "banner"},
        {"line": 78, "text": "<-- 67 replays on this one", "why": "note"},
        {"line": 218, "text": "-----", "why": "separator"},
        {"line": 426, "text": "...", "why": "elision"},
        {"line": 1654, "text": "root@gpu-node-3:~#", "why": "shell prompt"},
    ]
    assert result == parse_query_text(text)
    # the recording: 8 GPUs, GPU 0 at 19:00.0 with 67 replays, GPU 1 at 3B:00.0
    assert [gpu["pci_bus_id"] for gpu in result["gpus"][:2]] == ["00000000:19:00.0", "00000000:3B:00.0"]
    assert len(result["gpus"]) == 8 and result["gpus"][0]["replays_since_reset"] == 67
    assert "ignored_lines" not in parse_query_text(text)


def test_damage_beside_foreign_lines_is_still_refused_at_its_line(fixture_text):
    text = fixture_text(H100_161)
    # EDITED: a banner first, and GPU 0's "Total : 81559 MiB" (line 95, 96 with the banner) cut to "815".
    cut = insert_lines(text, {1: "===== node-07 ====="}).replace(
        "        Total                             : 81559 MiB", "        Total                             : 815", 1)
    error = _raises(cut)
    assert error.line == 96 and "MiB" in str(error)
    # EDITED: a key-value line whose colon is out of line with its siblings is damage, not a foreign line.
    shifted = text.replace("Reserved                          : 551", "Reserved                        : 551", 1)
    assert _raises(shifted).line == 96


def test_a_placeholder_is_never_a_value(fixture_text):
    text = fixture_text(H100_161)
    # EDITED: GPU 0's serial number masked, as people paste it: read as absent.
    masked = text.replace("Serial Number                         : 1650124031592",
                          "Serial Number                         : <masked>", 1)
    gpus = parse_query_text(masked)["gpus"]
    assert gpus[0]["serial"] is None and gpus[1]["serial"] == "1650124008135"
    # EDITED: GPU 0's memory total elided: a number cannot be read from "...", the line is named.
    elided = text.replace("Total                             : 81559 MiB", "Total                             : ...", 1)
    assert _raises(elided).line == 95
