# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the ``nvidia-smi --query-gpu=... --format=csv`` parser against recorded outputs.

Expected values were read by hand from the fixture files, never produced by the parser.
Each fixture: line 1 = the command copied by the capture tool, line 2 = header, line 3 = row.
"""

from __future__ import annotations

import json

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.nvidia_smi_csv import parse_query_gpu_csv
from gpufleet.parsers.registry import parse

H100 = "smi/exporter-capture-query-gpu-csv-allfields-h100-590.txt"
H200 = "smi/exporter-capture-query-gpu-csv-allfields-h200-MIG-590.txt"
L40S = "smi/exporter-capture-query-gpu-csv-allfields-l40s-595.80.txt"

SMALL = (
    "index, name, pci.bus_id, memory.total [MiB], memory.used [MiB], temperature.gpu, power.draw [W]\n"
    "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 81559 MiB, 3 MiB, 33, 70.52 W\n"
    "1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0, 81559 MiB, 3 MiB, 35, [N/A]\n"
)


def test_h100_fixture(fixture_text):
    result = parse_query_gpu_csv(fixture_text(H100))
    assert result["driver_version"] == "590.48.01"
    assert result["cuda_version"] is None
    assert result["attached_gpus"] == 1
    assert result["timestamp"] == "2026/07/14 08:12:38.696"
    assert len(result["fields"]) == 212
    assert result["fields"][0] == "timestamp"
    assert result["fields"][-1] == "hostname"
    assert result["units"]["memory.total"] == "MiB"
    assert result["units"]["fan.speed"] == "%"
    assert result["units"]["clocks_event_reasons_counters.sw_power_cap"] == "us"
    assert result["units"]["name"] is None
    assert result["warnings"] == []
    row = result["rows"][0]
    assert row["display_mode"] == "[Requested functionality has been deprecated]"
    assert row["platform.chassis_serial_number"] == ""
    assert row["clocks_event_reasons.supported"] == "0x00000000000001FF"
    gpu = result["gpus"][0]
    assert gpu["index"] == 0
    assert gpu["pci_bus_id"] == "00000000:00:09.0"
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["uuid"] == "GPU-00000000-0000-0000-0000-000000000000"
    assert gpu["serial"] == "0000000000000"
    assert gpu["vbios_version"] == "96.00.A5.00.01"
    assert gpu["persistence_mode"] is True
    assert gpu["mig_mode_current"] == "Disabled"
    assert gpu["memory_total_mib"] == 81559
    assert gpu["memory_used_mib"] == 0
    assert gpu["ecc_mode_current"] is True
    assert gpu["ecc_mode_pending"] is True
    assert gpu["ecc_errors_volatile_correctable"] == 0
    assert gpu["ecc_errors_aggregate_uncorrectable"] == 0
    assert gpu["retired_pages"] is None  # all three retired_pages.* are [N/A]
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert gpu["temperature_c"] == 41
    assert gpu["temperature_slowdown_c"] is None
    assert gpu["power_draw_w"] == 69.85
    assert gpu["power_limit_w"] == 700.0
    assert gpu["power_max_limit_w"] == 700.0
    assert (gpu["clocks_graphics_mhz"], gpu["clocks_sm_mhz"], gpu["clocks_mem_mhz"]) == (345, 345, 2619)
    assert (gpu["clocks_max_graphics_mhz"], gpu["clocks_max_sm_mhz"], gpu["clocks_max_mem_mhz"]) == (1980, 1980, 2619)
    reasons = gpu["clock_event_reasons"]
    assert reasons["idle"] is True
    assert reasons["sw_power_cap"] is False
    assert reasons["hw_slowdown"] is False
    # no display_clock_setting column: read from active 0x...01 with supported 0x...1FF (bit 0x100 clear)
    assert reasons["display_clock_setting"] is False
    assert (gpu["pcie_link_gen_current"], gpu["pcie_link_gen_max"]) == (5, 5)
    assert (gpu["pcie_link_width_current"], gpu["pcie_link_width_max"]) == (16, 16)
    assert gpu["fabric"] == {
        "state": "Completed",
        "status": "Success",
        "clique_id": 0,
        "cluster_uuid": "00000000-0000-0000-0000-000000000000",
    }
    assert gpu["processes"] is None
    assert gpu["mig_devices"] is None
    assert gpu["raw"]["inforom.img"] == "G520.0200.00.05"
    json.dumps(result)


def test_h200_mig_fixture(fixture_text):
    result = parse_query_gpu_csv(fixture_text(H200))
    assert result["timestamp"] == "2026/07/03 22:22:01.444"
    assert result["driver_version"] == "590.48.01"
    assert len(result["fields"]) == 212
    gpu = result["gpus"][0]
    assert gpu["name"] == "NVIDIA H200"
    assert gpu["pci_bus_id"] == "00000000:83:00.0"
    assert gpu["vbios_version"] == "96.00.A5.00.03"
    assert gpu["mig_mode_current"] == "Enabled"
    assert gpu["memory_total_mib"] == 143771
    assert gpu["memory_used_mib"] == 55
    assert gpu["remapped_rows"] is None  # remapped_rows.* all [N/A] under MIG
    assert gpu["temperature_c"] == 28
    assert gpu["power_draw_w"] == 78.28
    assert gpu["clocks_mem_mhz"] == 3201
    assert gpu["fabric"]["state"] == "Completed"
    assert result["rows"][0]["utilization.gpu"] == "[N/A]"


def test_l40s_fixture(fixture_text):
    result = parse_query_gpu_csv(fixture_text(L40S))
    assert result["driver_version"] == "595.80"
    assert result["timestamp"] == "2026/07/03 08:33:38.737"
    assert len(result["fields"]) == 202
    assert result["fields"][2] == "kmd_version"
    row = result["rows"][0]
    assert row["kmd_version"] == "595.80"
    assert row["clocks_event_reasons_counters.sw_power_cap"] == "200740215 us"
    assert row["temperature.memory"] == "N/A"
    gpu = result["gpus"][0]
    assert gpu["name"] == "NVIDIA L40S"
    assert gpu["pci_bus_id"] == "00000000:01:00.0"
    assert gpu["persistence_mode"] is False
    assert gpu["mig_mode_current"] is None  # [N/A]
    assert gpu["memory_total_mib"] == 46068
    assert gpu["temperature_c"] == 63
    assert gpu["power_draw_w"] == 144.97
    assert gpu["power_limit_w"] == 350.0
    assert (gpu["clocks_graphics_mhz"], gpu["clocks_mem_mhz"], gpu["clocks_max_mem_mhz"]) == (2520, 9001, 9001)
    assert gpu["pcie_link_gen_current"] == 4
    assert gpu["clock_event_reasons"]["idle"] is False  # "Not Active", active mask 0x0
    assert gpu["fabric"] is None  # fabric.* all N/A
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}


def test_registry_kind(fixture_text):
    result = parse("query-gpu", fixture_text(L40S))
    assert result["gpus"][0]["name"] == "NVIDIA L40S"


# ---------------------------------------------------------------- variants


def test_small_two_rows_and_na_power():
    result = parse_query_gpu_csv(SMALL)
    assert [gpu["index"] for gpu in result["gpus"]] == [0, 1]
    assert result["gpus"][1]["pci_bus_id"] == "00000000:2A:00.0"
    assert result["gpus"][0]["power_draw_w"] == 70.52
    assert result["gpus"][1]["power_draw_w"] is None
    assert result["gpus"][1]["temperature_c"] == 35
    assert result["attached_gpus"] is None  # count not queried


def test_noheader_nounits_with_fields_argument():
    text = "0, NVIDIA H100 80GB HBM3, 81559, 3\n1, NVIDIA H100 80GB HBM3, 81559, 5\n"
    result = parse_query_gpu_csv(text, fields="index,name,memory.total,memory.used")
    assert result["fields"] == ["index", "name", "memory.total", "memory.used"]
    assert result["units"] == {"index": None, "name": None, "memory.total": None, "memory.used": None}
    assert result["gpus"][1]["memory_used_mib"] == 5
    assert result["gpus"][0]["memory_total_mib"] == 81559


def test_noheader_fields_from_command_line():
    text = "$ nvidia-smi --query-gpu=index,uuid,temperature.gpu --format=csv,noheader,nounits\n0, GPU-abc, 44\n"
    result = parse_query_gpu_csv(text)
    assert result["gpus"][0]["uuid"] == "GPU-abc"
    assert result["gpus"][0]["temperature_c"] == 44


def test_noheader_without_fields_raises():
    with pytest.raises(ParseError) as info:
        parse_query_gpu_csv("0, NVIDIA H100 80GB HBM3, 81559, 3\n")
    assert info.value.line == 1


def test_header_matches_fields_argument():
    result = parse_query_gpu_csv(SMALL, fields=["index", "name", "pci.bus_id", "memory.total", "memory.used", "temperature.gpu", "power.draw"])
    assert result["gpus"][0]["memory_total_mib"] == 81559
    with pytest.raises(ParseError) as info:
        parse_query_gpu_csv(SMALL, fields=["index", "name"])
    assert info.value.line == 1


def test_crlf_ansi_prompt_and_srun_prefix(fixture_text):
    # synthetic: the L40S capture with CRLF, an underlined header (R590 style) and srun -l prefixes
    lines = fixture_text(L40S).split("\n")
    lines[1] = "\x1b[4m" + lines[1] + "\x1b[0m"
    text = "\r\n".join("0: " + line for line in lines if line)
    result = parse_query_gpu_csv(text)
    assert result["gpus"][0]["name"] == "NVIDIA L40S"
    assert result["gpus"][0]["memory_total_mib"] == 46068
    assert result["fields"][0] == "timestamp"


def test_root_prompt_line():
    result = parse_query_gpu_csv("root@gpu-node-7:~# nvidia-smi --query-gpu=index,name --format=csv\nindex, name\n0, NVIDIA A100-SXM4-80GB\n")
    assert result["gpus"][0]["name"] == "NVIDIA A100-SXM4-80GB"


def test_hostile_markup_stays_string():
    text = SMALL.replace("0, NVIDIA H100 80GB HBM3", "0, <img src=x onerror=alert(1)>{{ lookup('pipe' 'id') }}")
    result = parse_query_gpu_csv(text)
    assert result["gpus"][0]["name"] == "<img src=x onerror=alert(1)>{{ lookup('pipe' 'id') }}"


def test_gpu_is_lost_is_none_with_warning():
    text = SMALL.replace("35, [N/A]", "[GPU is lost], [GPU is lost]")
    result = parse_query_gpu_csv(text)
    assert result["gpus"][1]["temperature_c"] is None
    assert result["gpus"][1]["power_draw_w"] is None
    assert result["warnings"] == ["GPU 1 printed [GPU is lost] for some fields"]


def test_clock_reasons_from_bitmask_only():
    text = "index, clocks_event_reasons.supported, clocks_event_reasons.active\n0, 0x00000000000001FF, 0x0000000000000084\n"
    reasons = parse_query_gpu_csv(text)["gpus"][0]["clock_event_reasons"]
    assert reasons["sw_power_cap"] is True  # 0x4
    assert reasons["hw_power_brake_slowdown"] is True  # 0x80
    assert reasons["idle"] is False
    assert reasons["hw_thermal_slowdown"] is False


def test_old_throttle_reason_names():
    text = "index, clocks_throttle_reasons.hw_slowdown, clocks_throttle_reasons.sw_thermal_slowdown\n0, Active, Not Active\n"
    reasons = parse_query_gpu_csv(text)["gpus"][0]["clock_event_reasons"]
    assert reasons["hw_slowdown"] is True
    assert reasons["sw_thermal_slowdown"] is False
    assert reasons["display_clock_setting"] is None


# ---------------------------------------------------------------- damaged input -> ParseError(line)


def test_empty_raises():
    with pytest.raises(ParseError):
        parse_query_gpu_csv("")
    with pytest.raises(ParseError):
        parse_query_gpu_csv("$ nvidia-smi --query-gpu=index --format=csv\n")


def test_error_text_raises_quoting_it():
    with pytest.raises(ParseError) as info:
        parse_query_gpu_csv("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")
    assert info.value.line == 1
    assert "NVIDIA-SMI has failed" in str(info.value)


def test_error_text_after_header_raises():
    text = "$ nvidia-smi --query-gpu=index,name --format=csv\nindex, name\nNo devices were found\n"
    with pytest.raises(ParseError) as info:
        parse_query_gpu_csv(text)
    assert info.value.line == 3


def test_header_without_rows_raises():
    with pytest.raises(ParseError) as info:
        parse_query_gpu_csv("index, name\n")
    assert info.value.line == 1


def test_truncated_row_raises_with_line(fixture_text):
    # synthetic: the H100 capture cut in the middle of its data row (line 3)
    text = fixture_text(H100)
    cut = text.index("69.85 W")
    with pytest.raises(ParseError) as info:
        parse_query_gpu_csv(text[:cut])
    assert info.value.line == 3


def test_cut_unit_cell_raises():
    # synthetic: the last cell lost its unit ("70.52 W" -> "70.5")
    text = SMALL.split("\n")
    text = "\n".join([text[0], text[1].replace("70.52 W", "70.5")])
    with pytest.raises(ParseError) as info:
        parse_query_gpu_csv(text)
    assert info.value.line == 2


def test_extra_comma_raises():
    # synthetic: a value containing a comma (nvidia-smi never quotes) shifts the columns
    text = SMALL.replace("NVIDIA H100 80GB HBM3, 00000000:2A", "NVIDIA H100, 80GB HBM3, 00000000:2A")
    with pytest.raises(ParseError) as info:
        parse_query_gpu_csv(text)
    assert info.value.line == 3


def test_non_number_in_numeric_field_raises():
    text = SMALL.replace(" 33, ", " 3x3, ")
    with pytest.raises(ParseError) as info:
        parse_query_gpu_csv(text)
    assert info.value.line == 2


def test_two_ranks_raise():
    text = "0: index, name\n1: index, name\n0: 0, A\n1: 0, B\n"
    with pytest.raises(ParseError):
        parse_query_gpu_csv(text)


# Foreign lines: what a collecting script or a person put around and between the rows


def test_foreign_lines_are_listed_and_change_no_value(fixture_text):
    # EDITED: the H100 capture (its command line, the header, one row) with a banner first, a note between the
    # header and the row, and a prompt after it
    text = fixture_text(H100)
    edited = insert_lines(text, {1: "===== node-07 : GPU 0 =====", 4: "<-- the only GPU", 6: "root@node-07:~# exit"})
    result = parse_query_gpu_csv(edited)
    ignored = result.pop("ignored_lines")
    # the capture tool's "# $ nvidia-smi --query-gpu=..." line (6137 characters, kept to 200) was skipped before too
    assert [(entry["line"], entry["why"]) for entry in ignored] == [
        (1, "banner"), (2, "shell prompt"), (4, "note"), (6, "shell prompt")]
    assert ignored[1]["text"].startswith("# $ nvidia-smi --query-gpu=timestamp,driver_version,")
    assert len(ignored[1]["text"]) == 200
    assert [ignored[i]["text"] for i in (0, 2, 3)] == [
        "===== node-07 : GPU 0 =====", "<-- the only GPU", "root@node-07:~# exit"]
    unedited = parse_query_gpu_csv(text)
    assert [entry["line"] for entry in unedited.pop("ignored_lines")] == [1]  # the command line alone
    assert result == unedited
    assert result["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3" and result["driver_version"] == "590.48.01"


def test_a_row_cut_short_beside_foreign_lines_is_still_refused_at_its_line(fixture_text):
    # EDITED: a banner first, and the row (line 3, 4 with the banner) cut after its 100th cell
    lines = fixture_text(H100).split("\n")
    lines[2] = ",".join(lines[2].split(",")[:100])
    with pytest.raises(ParseError) as info:
        parse_query_gpu_csv(insert_lines("\n".join(lines), {1: "===== node-07 ====="}))
    assert info.value.line == 4 and "row has 100 cells, the header 212" in str(info.value)


def test_a_placeholder_is_never_a_value():
    # EDITED: SMALL with a masked bus id (read as absent) and an elided memory total (refused at its line)
    masked = SMALL.replace("00000000:18:00.0", "<masked>")
    assert parse_query_gpu_csv(masked)["gpus"][0]["pci_bus_id"] is None
    with pytest.raises(ParseError) as info:
        parse_query_gpu_csv(SMALL.replace("0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 81559 MiB",
                                          "0, NVIDIA H100 80GB HBM3, 00000000:18:00.0, ..."))
    assert info.value.line == 2 and "memory.total" in str(info.value)
