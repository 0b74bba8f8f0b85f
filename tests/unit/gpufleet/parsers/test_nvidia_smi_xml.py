# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the ``nvidia-smi -q -x`` parser against recorded outputs.

Expected values were read by hand from the fixture files, never produced by the parser.
"""

from __future__ import annotations

import json

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.nvidia_smi_xml import parse_query_xml
from gpufleet.parsers.registry import parse

V10 = "smi/telegraf-nvidia-smi-q-x-gtx1070ti-v10-minimal.xml.txt"
A10G = "smi/telegraf-nvidia-smi-q-x-a10g-515-v11.xml.txt"
A100_V12 = "smi/telegraf-nvidia-smi-q-x-a100-sxm4-80gb-mig-535-v12.xml.txt"
A100_MIG = "smi/netdata-nvidia-smi-q-x-1x-a100-sxm4-40gb-MIG-510.47.03-v11.xml.txt"
P100 = "smi/netdata-nvidia-smi-q-x-1x-tesla-p100-pcie-510.47.03-v11-TAB-indent.xml.txt"

ALL_FALSE_REASONS = {
    "idle": False,
    "applications_clocks_setting": False,
    "sw_power_cap": False,
    "hw_slowdown": False,
    "hw_thermal_slowdown": False,
    "hw_power_brake_slowdown": False,
    "sync_boost": False,
    "sw_thermal_slowdown": False,
    "display_clock_setting": False,
}


def test_v10_minimal(fixture_text):
    result = parse_query_xml(fixture_text(V10))
    assert result["driver_version"] is None  # no <driver_version> in this trimmed file
    assert result["attached_gpus"] is None
    assert result["timestamp"] is None
    assert result["dtd"] == "nvsmi_device_v10.dtd"
    assert len(result["gpus"]) == 1
    gpu = result["gpus"][0]
    assert gpu["index"] == 0
    assert gpu["pci_bus_id"] == "00000000:01:00.0"  # from <gpu id=...>, no <pci_bus_id>
    assert gpu["name"] == "GeForce GTX 1070 Ti"
    assert gpu["uuid"] == "GPU-f9ba66fc-a7f5-94c5-da19-019ef2f9c665"
    assert gpu["memory_total_mib"] == 4096
    assert gpu["memory_used_mib"] == 42
    assert gpu["temperature_c"] == 39
    assert gpu["power_draw_w"] is None  # <power_draw>N/A</power_draw>
    assert (gpu["clocks_graphics_mhz"], gpu["clocks_sm_mhz"], gpu["clocks_mem_mhz"]) == (135, 135, 405)
    assert gpu["pcie_link_gen_current"] == 1
    assert gpu["pcie_link_width_current"] == 16
    assert gpu["pcie_link_width_max"] is None
    assert gpu["clock_event_reasons"] is None
    assert gpu["ecc_mode_current"] is None
    assert gpu["processes"] is None
    assert gpu["raw"]["fan_speed"] == "100 %"
    assert gpu["raw"]["@id"] == "00000000:01:00.0"
    assert result["warnings"] == []


def test_a10g_v11(fixture_text):
    result = parse_query_xml(fixture_text(A10G))
    assert result["driver_version"] == "515.105.01"
    assert result["cuda_version"] == "11.7"
    assert result["attached_gpus"] == 1
    assert result["timestamp"] == "Mon Apr 24 16:11:51 2023"
    gpu = result["gpus"][0]
    assert gpu["pci_bus_id"] == "00000000:00:1E.0"
    assert gpu["name"] == "NVIDIA A10G"
    assert gpu["product_brand"] == "NVIDIA"
    assert gpu["product_architecture"] == "Ampere"
    assert gpu["serial"] == "0000000000000"
    assert gpu["minor_number"] == 0
    assert gpu["board_part_number"] is None
    assert gpu["vbios_version"] == "94.02.75.00.01"
    assert gpu["persistence_mode"] is False
    assert gpu["mig_mode_current"] is None
    assert gpu["mig_devices"] == []  # <mig_devices>None</mig_devices>
    assert (gpu["memory_total_mib"], gpu["memory_used_mib"]) == (23028, 22)
    assert gpu["ecc_mode_current"] is True
    assert gpu["ecc_errors_volatile_correctable"] == 0
    assert gpu["ecc_errors_aggregate_uncorrectable"] == 0
    assert gpu["retired_pages"] is None
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert (gpu["temperature_c"], gpu["temperature_slowdown_c"], gpu["temperature_shutdown_c"]) == (17, 95, 98)
    assert (gpu["power_draw_w"], gpu["power_limit_w"], gpu["power_max_limit_w"]) == (25.58, 300.0, 300.0)
    assert (gpu["clocks_graphics_mhz"], gpu["clocks_sm_mhz"], gpu["clocks_mem_mhz"]) == (210, 210, 405)
    assert (gpu["clocks_max_graphics_mhz"], gpu["clocks_max_sm_mhz"], gpu["clocks_max_mem_mhz"]) == (1710, 1710, 6251)
    assert gpu["clock_event_reasons"] == dict(ALL_FALSE_REASONS, idle=True)  # v11 <clocks_throttle_reasons>
    assert (gpu["pcie_link_gen_current"], gpu["pcie_link_gen_max"]) == (1, 4)
    assert (gpu["pcie_link_width_current"], gpu["pcie_link_width_max"]) == (8, 16)
    assert gpu["fabric"] is None
    assert gpu["processes"] == [{"pid": 725, "type": "G", "name": "/usr/lib/xorg/Xorg", "used_memory_mib": 22}]
    assert len(gpu["raw"]["supported_clocks"]["supported_mem_clock"]) == 2
    assert gpu["raw"]["supported_clocks"]["supported_mem_clock"][1]["value"] == "405 MHz"
    json.dumps(result)


def test_a100_v12_mig_attached_4_but_one_gpu(fixture_text):
    result = parse_query_xml(fixture_text(A100_V12))
    assert result["driver_version"] == "535.54.03"
    assert result["cuda_version"] == "12.2"
    assert result["attached_gpus"] == 4
    assert result["timestamp"] == "Fri Aug  4 11:44:30 2023"
    assert result["dtd"] == "nvsmi_device_v12.dtd"
    assert len(result["gpus"]) == 1
    assert len(result["warnings"]) == 1
    assert "attached_gpus is 4" in result["warnings"][0]
    gpu = result["gpus"][0]
    assert gpu["name"] == "NVIDIA A100-SXM4-80GB"
    assert gpu["uuid"] == "GPU-513536b6-7d19-9063-b049-1e69664bb298"
    assert gpu["serial"] == "1650522003820"
    assert gpu["minor_number"] == 1
    assert gpu["board_part_number"] == "692-2G506-0212-002"
    assert gpu["mig_mode_current"] == "Enabled"
    assert [dev["gpu_instance_id"] for dev in gpu["mig_devices"]] == [3, 4, 5, 6]
    assert all(dev["multiprocessor_count"] == 14 for dev in gpu["mig_devices"])
    assert gpu["mig_devices"][0]["memory_total_mib"] == 19968
    assert gpu["mig_devices"][0]["memory_used_mib"] == 12
    assert (gpu["memory_total_mib"], gpu["memory_used_mib"]) == (81920, 50)
    assert gpu["power_draw_w"] == 67.03  # <gpu_power_readings>, not <module_power_readings> (N/A)
    assert gpu["power_limit_w"] == 500.0  # <current_power_limit>
    assert gpu["power_max_limit_w"] == 500.0
    assert gpu["remapped_rows"] is None  # <remapped_rows>N/A</remapped_rows>
    assert gpu["retired_pages"] is None
    assert gpu["fabric"] is None  # state and status N/A
    assert gpu["clock_event_reasons"] == ALL_FALSE_REASONS  # v12 <clocks_event_reasons>
    assert (gpu["temperature_c"], gpu["temperature_slowdown_c"], gpu["temperature_shutdown_c"]) == (27, 89, 92)
    assert (gpu["clocks_graphics_mhz"], gpu["clocks_max_graphics_mhz"], gpu["clocks_max_mem_mhz"]) == (1275, 1410, 1593)
    assert gpu["ecc_errors_volatile_correctable"] == 0
    assert gpu["processes"] == []  # <processes />
    assert gpu["raw"]["utilization"]["gpu_util"] == "N/A"


def test_netdata_a100_mig_v11(fixture_text):
    result = parse_query_xml(fixture_text(A100_MIG))
    assert result["driver_version"] == "510.47.03"
    assert result["timestamp"] == "Fri Jan 27 11:32:31 2023"
    gpu = result["gpus"][0]
    assert gpu["pci_bus_id"] == "00000000:00:04.0"
    assert gpu["name"] == "NVIDIA A100-SXM4-40GB"
    assert gpu["serial"] == "1324321002473"
    assert gpu["mig_mode_current"] == "Enabled"
    assert [(dev["index"], dev["gpu_instance_id"], dev["multiprocessor_count"]) for dev in gpu["mig_devices"]] == [(0, 1, 42), (1, 2, 42)]
    assert gpu["mig_devices"][1]["memory_used_mib"] == 19
    assert (gpu["memory_total_mib"], gpu["memory_used_mib"]) == (40960, 38)
    assert gpu["ecc_errors_volatile_correctable"] is None  # all four volatile counters N/A
    assert gpu["ecc_errors_volatile_uncorrectable"] is None
    assert gpu["ecc_errors_aggregate_correctable"] == 0
    # "Not Active" followed by a line break and indentation inside the element
    assert gpu["clock_event_reasons"]["applications_clocks_setting"] is False
    assert (gpu["power_draw_w"], gpu["power_limit_w"]) == (66.92, 400.0)
    assert gpu["temperature_c"] == 36


def test_p100_tab_indent_old_ecc_layout(fixture_text):
    result = parse_query_xml(fixture_text(P100))
    assert result["timestamp"] == "Sat Sep 17 17:06:50 2022"
    gpu = result["gpus"][0]
    assert gpu["name"] == "Tesla P100-PCIE-16GB"
    assert gpu["product_brand"] == "Tesla"
    assert gpu["product_architecture"] == "Pascal"
    assert gpu["uuid"] == "GPU-d3da8716-eaab-75db-efc1-60e88e1cd55e"
    assert gpu["serial"] == "0324217145110"
    assert gpu["mig_mode_current"] is None
    # single_bit/double_bit layout: aggregate single_bit total 3 (device_memory 3)
    assert gpu["ecc_errors_aggregate_correctable"] == 3
    assert gpu["ecc_errors_aggregate_uncorrectable"] == 0
    assert gpu["ecc_errors_volatile_correctable"] == 0
    assert gpu["retired_pages"] == {"single_bit_ecc": 0, "double_bit_ecc": 0, "pending": False}
    assert gpu["remapped_rows"] is None
    assert (gpu["temperature_c"], gpu["temperature_slowdown_c"], gpu["temperature_shutdown_c"]) == (38, 82, 85)
    assert (gpu["power_draw_w"], gpu["power_limit_w"], gpu["power_max_limit_w"]) == (26.16, 250.0, 250.0)
    assert (gpu["clocks_max_graphics_mhz"], gpu["clocks_max_mem_mhz"]) == (1328, 715)
    assert gpu["clock_event_reasons"]["idle"] is True
    assert (gpu["pcie_link_gen_current"], gpu["pcie_link_width_max"]) == (3, 16)


def test_registry_kind(fixture_text):
    assert parse("nvidia-smi-xml", fixture_text(P100))["gpus"][0]["name"] == "Tesla P100-PCIE-16GB"


# ---------------------------------------------------------------- variants


def test_crlf_ansi_bom_and_prompt_line(fixture_text):
    # synthetic: the A10G file behind a BOM and a prompt line, CRLF endings, an ANSI colour code
    text = "\ufeffroot@node:~# nvidia-smi -q -x\n" + fixture_text(A10G)
    text = text.replace("<product_name>", "\x1b[32m<product_name>").replace("\n", "\r\n")
    result = parse_query_xml(text)
    assert result["gpus"][0]["name"] == "NVIDIA A10G"
    assert result["gpus"][0]["temperature_c"] == 17


def test_srun_prefix_single_rank(fixture_text):
    # synthetic: "srun -l nvidia-smi -q -x" on one task prefixes every line with "0: "
    text = "\n".join("0: " + line for line in fixture_text(V10).split("\n"))
    assert parse_query_xml(text)["gpus"][0]["memory_used_mib"] == 42


def test_hostile_markup_is_a_string(fixture_text):
    # synthetic: escaped markup in <product_name> comes back as text, nothing evaluated
    text = fixture_text(A10G).replace("<product_name>NVIDIA A10G", "<product_name>&lt;script&gt;{{ 7*7 }}&lt;/script&gt;")
    assert parse_query_xml(text)["gpus"][0]["name"] == "<script>{{ 7*7 }}</script>"


# ---------------------------------------------------------------- damaged / hostile -> ParseError(line)


def test_empty_raises():
    with pytest.raises(ParseError):
        parse_query_xml("")
    with pytest.raises(ParseError):
        parse_query_xml("$ nvidia-smi -q -x\n\n")


def test_error_text_instead_of_xml():
    with pytest.raises(ParseError) as info:
        parse_query_xml("$ nvidia-smi -q -x\nNVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n")
    assert info.value.line == 2
    assert "NVIDIA-SMI has failed" in str(info.value)


def test_truncated_mid_line_names_the_line(fixture_text):
    # synthetic: A10G file cut inside line 100
    lines = fixture_text(A10G).split("\n")
    with pytest.raises(ParseError) as info:
        parse_query_xml("\n".join(lines[:99]) + "\n" + lines[99][:20])
    assert info.value.line == 100


def test_entity_declaration_refused(fixture_text):
    # synthetic: a billion-laughs style internal subset replaces the DOCTYPE (lines 2-4)
    text = fixture_text(A10G).replace(
        '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v11.dtd">',
        '<!DOCTYPE nvidia_smi_log [\n<!ENTITY lol "lol">\n]>',
    )
    with pytest.raises(ParseError) as info:
        parse_query_xml(text)
    assert info.value.line == 3


def test_doctype_internal_subset_refused(fixture_text):
    text = fixture_text(A10G).replace('"nvsmi_device_v11.dtd">', '"nvsmi_device_v11.dtd" [ <!ELEMENT a ANY> ]>')
    with pytest.raises(ParseError) as info:
        parse_query_xml(text)
    assert info.value.line == 2


def test_undefined_entity_and_control_character(fixture_text):
    # synthetic: an external-entity reference, then a BEL character, in <product_name> (line 9)
    text = fixture_text(A10G)
    with pytest.raises(ParseError) as info:
        parse_query_xml(text.replace("<product_name>NVIDIA", "<product_name>&xxe;NVIDIA"))
    assert info.value.line == 9
    with pytest.raises(ParseError) as info:
        parse_query_xml(text.replace("<product_name>NVIDIA", "<product_name>\x07NVIDIA"))
    assert info.value.line == 9


def test_bad_number_names_its_line(fixture_text):
    # synthetic: <gpu_temp> on line 165 of the A10G file damaged; with a prompt line first -> 166
    text = fixture_text(A10G).replace("<gpu_temp>17 C", "<gpu_temp>17x C")
    with pytest.raises(ParseError) as info:
        parse_query_xml(text)
    assert info.value.line == 165
    with pytest.raises(ParseError) as info:
        parse_query_xml("$ nvidia-smi -q -x\n" + text)
    assert info.value.line == 166


def test_two_documents_refused(fixture_text):
    # synthetic: two runs concatenated; the 354-line file's second DOCTYPE lands on line 356
    text = fixture_text(A10G)
    with pytest.raises(ParseError) as info:
        parse_query_xml(text + text)
    assert info.value.line == 356


def test_wrong_root_and_no_gpu():
    with pytest.raises(ParseError) as info:
        parse_query_xml('<?xml version="1.0" ?>\n<foo><gpu/></foo>\n')
    assert info.value.line == 2
    with pytest.raises(ParseError) as info:
        parse_query_xml('<?xml version="1.0" ?>\n<nvidia_smi_log>\n<attached_gpus>0</attached_gpus>\n</nvidia_smi_log>\n')
    assert info.value.line == 2


def test_new_layout_ecc_and_power_and_fabric():
    # synthetic, R550+ element names (sram parity/secded parts, average_power_draw, cliqueId)
    text = """<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
  <attached_gpus>1</attached_gpus>
  <gpu id="00000000:18:00.0">
    <ecc_errors>
      <volatile>
        <sram_correctable>2</sram_correctable>
        <sram_uncorrectable_parity>1</sram_uncorrectable_parity>
        <sram_uncorrectable_secded>4</sram_uncorrectable_secded>
        <dram_correctable>5</dram_correctable>
        <dram_uncorrectable>N/A</dram_uncorrectable>
      </volatile>
    </ecc_errors>
    <gpu_power_readings>
      <average_power_draw>120.50 W</average_power_draw>
      <current_power_limit>700.00 W</current_power_limit>
    </gpu_power_readings>
    <fabric>
      <state>Completed</state>
      <status>Success</status>
      <cliqueId>32766</cliqueId>
      <clusterUuid>a1b2c3d4-0000-0000-0000-000000000001</clusterUuid>
    </fabric>
  </gpu>
</nvidia_smi_log>
"""
    gpu = parse_query_xml(text)["gpus"][0]
    assert gpu["ecc_errors_volatile_correctable"] == 7
    assert gpu["ecc_errors_volatile_uncorrectable"] == 5
    assert gpu["ecc_errors_aggregate_correctable"] is None
    assert gpu["power_draw_w"] == 120.5
    assert gpu["power_limit_w"] == 700.0
    assert gpu["fabric"] == {"state": "Completed", "status": "Success", "clique_id": 32766, "cluster_uuid": "a1b2c3d4-0000-0000-0000-000000000001"}


def test_deep_nesting_is_refused_with_its_line_not_a_recursion_error():
    """1,100 nested elements (about 7.8 KB, synthetic, written here): refused where the nesting passes 64 deep."""
    depth = 1100
    lines = ["<?xml version=\"1.0\" ?>", "<nvidia_smi_log>", "<gpu id=\"00000000:07:00.0\">"]
    lines += ["<a>"] * depth + ["</a>"] * depth + ["</gpu>", "</nvidia_smi_log>"]
    text = "\n".join(lines) + "\n"
    assert 7000 < len(text.replace("\n", "")) < 8000
    with pytest.raises(ParseError) as caught:
        parse_query_xml(text)
    # <nvidia_smi_log> (line 2) and <gpu> (line 3) are depths 1 and 2: the 65th element opens on line 2 + 64
    assert caught.value.line == 66
    assert "nested more than 64 deep" in caught.value.message


# ---------------------------------------------------------------- foreign lines around the document


def test_foreign_lines_around_the_document_are_listed_and_change_no_value(fixture_text):
    # EDITED: the A10G recording (355 lines) behind a prompt and a banner, with a rule and a prompt after it
    text = fixture_text(A10G)
    edited = insert_lines(text, {
        1: "(venv) ubuntu@node-07:~$ nvidia-smi -q -x",
        2: "===== node-07 : nvidia-smi -q -x =====",
        358: "-----",
        359: "[root@node-07 ~]# exit",
    })
    result = parse_query_xml(edited)
    assert result.pop("ignored_lines") == [
        {"line": 1, "text": "(venv) ubuntu@node-07:~$ nvidia-smi -q -x", "why": "shell prompt"},
        {"line": 2, "text": "===== node-07 : nvidia-smi -q -x =====", "why": "banner"},
        {"line": 358, "text": "-----", "why": "separator"},
        {"line": 359, "text": "[root@node-07 ~]# exit", "why": "shell prompt"},
    ]
    assert result == parse_query_xml(text)
    assert result["gpus"][0]["name"] == "NVIDIA A10G" and result["gpus"][0]["memory_total_mib"] == 23028
    assert "ignored_lines" not in parse_query_xml(text)


def _raises(text):
    with pytest.raises(ParseError) as info:
        parse_query_xml(text)
    return info.value


def test_text_inside_or_after_the_document_that_is_not_foreign_is_still_refused(fixture_text):
    text = fixture_text(A10G)
    # EDITED: a note inside the document is damaged XML (line 10 of the edited text)
    error = _raises(insert_lines(text, {1: "$ nvidia-smi -q -x", 10: "<-- this GPU"}))
    assert error.line == 10 and "malformed XML" in str(error)
    # EDITED: a word after the document that no rule names foreign: junk after the document (line 356)
    error = _raises(insert_lines(text, {356: "Done."}))
    assert error.line == 356 and "malformed XML" in str(error)
    # EDITED: a placeholder where a number belongs is refused at its line (9 <product_name>, 94 <total>)
    elided = text.replace("<total>23028 MiB</total>", "<total>...</total>", 1)
    assert _raises(elided).line == 94
    masked = parse_query_xml(text.replace("<serial>0000000000000</serial>", "<serial>...</serial>", 1))
    assert masked["gpus"][0]["serial"] is None
