# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the ibstat parser against recorded outputs (expected values read by hand)."""

from __future__ import annotations

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.ibstat import parse_ibstat
from gpufleet.parsers.registry import parse

TABS = "ib/gpud-ibstat-h100-8xcx7-roce400-4xcx6dx-100g-all-active.txt"
DOWN = "ib/gpud-ibstat-h100-ndr-ib-3ports-down-disabled.txt"
SPACES = "ib/gpud-ibstat-h100-8x-ndr400-ib-plus-bf3-bond-roce200-SPACES.txt"
PANIC = "ib/gpud-ibstat-azure-a100-hdr-8xcx6vf-ibpanic-exit255.txt"
GREP = "ib/mlengineering-ibstat-grep-mlx5-8CA.txt"
DUAL = "ib/ibstat-mlx4-dualport-ib-polling-eth-disabled.txt"
FDR = "ib/ibstat-mlx4-connectx3-fdr56-active.txt"


def _by_name(result):
    return {d["name"]: d for d in result["devices"]}


def test_tab_indented_roce_all_active_lexical_order_no_trailing_newline(fixture_text):
    text = fixture_text(TABS)
    result = parse_ibstat(text)
    names = [d["name"] for d in result["devices"]]
    assert names == ["mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9"]
    devices = _by_name(result)
    cx7 = devices["mlx5_0"]
    assert cx7["ca_type"] == "MT4129"
    assert cx7["num_ports"] == 1
    assert cx7["firmware_version"] == "28.39.1002"
    assert cx7["hardware_version"] == "0"
    assert cx7["node_guid"] == "0xa088c20300e3142a"
    port = cx7["ports"][0]
    assert port["port"] == 1
    assert port["state"] == "Active"
    assert port["physical_state"] == "LinkUp"
    assert port["rate_gbps"] == 400 and isinstance(port["rate_gbps"], int)
    assert port["base_lid"] == 0 and port["sm_lid"] == 0 and port["lmc"] == 0
    assert port["capability_mask"] == "0x00010000"
    assert port["port_guid"] == "0xa288c2fffee3142a"
    assert port["link_layer"] == "Ethernet"
    cx6dx = devices["mlx5_1"]
    assert cx6dx["ca_type"] == "MT4125"
    assert cx6dx["firmware_version"] == "22.39.1002"
    assert cx6dx["ports"][0]["rate_gbps"] == 100
    assert cx6dx["ports"][0]["port_guid"] == "0x0000000000000000"
    assert sorted(n for n, d in devices.items() if d["ca_type"] == "MT4125") == ["mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"]
    # last line of the file, which has no trailing newline
    assert devices["mlx5_9"]["ports"][0]["link_layer"] == "Ethernet"
    assert devices["mlx5_9"]["node_guid"] == "0xa088c20300e313f2"
    assert result["errors"] == []


def test_ndr_three_ethernet_ports_down_disabled(fixture_text):
    devices = _by_name(parse_ibstat(fixture_text(DOWN)))
    assert len(devices) == 12
    down = sorted(n for n, d in devices.items() if d["ports"][0]["state"] == "Down")
    assert down == ["mlx5_2", "mlx5_7", "mlx5_8"]
    for name in down:
        port = devices[name]["ports"][0]
        assert port["physical_state"] == "Disabled"
        assert port["rate_gbps"] == 40  # printed as-is although the port is down
        assert port["link_layer"] == "Ethernet"
    ib = devices["mlx5_0"]["ports"][0]
    assert (ib["base_lid"], ib["sm_lid"], ib["link_layer"]) == (75, 334, "InfiniBand")
    assert ib["capability_mask"] == "0xa751e848"
    assert devices["mlx5_1"]["ports"][0]["state"] == "Active"
    assert devices["mlx5_1"]["firmware_version"] == "22.38.1002"
    assert devices["mlx5_9"]["ports"][0]["base_lid"] == 771


def test_space_indented_ndr_plus_bluefield3_bond(fixture_text):
    result = parse_ibstat(fixture_text(SPACES))
    names = [d["name"] for d in result["devices"]]
    assert names == ["mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9", "mlx5_bond_0"]
    devices = _by_name(result)
    assert devices["mlx5_0"]["ports"][0]["base_lid"] == 128
    assert devices["mlx5_9"]["ports"][0]["base_lid"] == 2015
    assert devices["mlx5_0"]["firmware_version"] == "28.41.1000"
    bond = devices["mlx5_bond_0"]
    assert bond["ca_type"] == "MT41692"
    assert bond["firmware_version"] == "32.38.3056"
    assert bond["hardware_version"] == "1"
    assert bond["ports"][0]["rate_gbps"] == 200
    assert bond["ports"][0]["link_layer"] == "Ethernet"
    assert bond["ports"][0]["port_guid"] == "0x201d97fffe0056cf"
    assert [d["ports"][0]["link_layer"] for d in result["devices"]].count("InfiniBand") == 8


def test_ibpanic_after_partial_output_is_kept_as_error(fixture_text):
    result = parse_ibstat(fixture_text(PANIC))
    assert [d["name"] for d in result["devices"]] == ["mlx5_%d" % i for i in range(8)]
    assert result["errors"] == [{"line": 137, "text": "ibpanic: [1400444] main: stat of IB device 'mlx5_8' failed: No such file or directory"}]
    devices = _by_name(result)
    assert all(d["ca_type"] == "MT4124" and d["firmware_version"] == "20.41.1000" for d in devices.values())
    assert all(d["ports"][0]["rate_gbps"] == 200 for d in devices.values())
    assert devices["mlx5_0"]["node_guid"] == "0x00155dfffe3411eb"
    assert devices["mlx5_0"]["system_image_guid"] == "0xb83fd203006e2704"
    assert devices["mlx5_0"]["ports"][0]["base_lid"] == 13247
    assert devices["mlx5_7"]["ports"][0]["base_lid"] == 13305
    assert devices["mlx5_2"]["ports"][0]["port_guid"] == "0x00155dfffd3411ed"


def test_grep_fragment_gives_devices_without_details(fixture_text):
    result = parse_ibstat(fixture_text(GREP))  # first line "$ ibstat | grep mlx5" is the command
    assert [d["name"] for d in result["devices"]] == ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"]
    for device in result["devices"]:
        assert device["details"] is False
        assert device["ports"] == []
        assert device["ca_type"] is None and device["num_ports"] is None
    assert result["errors"] == []


def test_mlx4_dual_port_ib_polling_and_eth_disabled(fixture_text):
    result = parse_ibstat(fixture_text(DUAL))  # first line "# ibstat"
    assert len(result["devices"]) == 1
    device = result["devices"][0]
    assert device["name"] == "mlx4_0"
    assert device["ca_type"] == "MT4099"
    assert device["num_ports"] == 2
    assert device["node_guid"] == "0xe41d2d03007b4080"
    assert device["system_image_guid"] == "0xe41d2d03007b4083"
    ib, eth = device["ports"]
    assert (ib["port"], ib["state"], ib["physical_state"], ib["rate_gbps"], ib["link_layer"]) == (1, "Down", "Polling", 10, "InfiniBand")
    assert ib["capability_mask"] == "0x02594868"
    assert (eth["port"], eth["state"], eth["physical_state"], eth["rate_gbps"], eth["link_layer"]) == (2, "Down", "Disabled", 40, "Ethernet")
    assert eth["port_guid"] == "0xe61d2dfffe7b4082"


def test_connectx3_fdr_rate_56(fixture_text):
    result = parse_ibstat(fixture_text(FDR))
    device = result["devices"][0]
    assert device["name"] == "mlx4_0"
    assert device["firmware_version"] == "2.42.5000"
    assert device["hardware_version"] == "1"
    port = device["ports"][0]
    assert port["rate_gbps"] == 56
    assert (port["state"], port["physical_state"]) == ("Active", "LinkUp")
    assert (port["base_lid"], port["lmc"], port["sm_lid"]) == (1, 0, 1)
    assert port["capability_mask"] == "0x0251486a"
    assert port["port_guid"] == "0x98039b0300dccab1"


def test_registry_reaches_parser(fixture_text):
    assert parse("ibstat", fixture_text(FDR))["devices"][0]["ports"][0]["rate_gbps"] == 56


# --- synthetic variants, each built from a real fixture -------------------------------------


def test_crlf_ansi_and_trailing_space_read_the_same(fixture_text):
    text = fixture_text(TABS)
    # synthetic: CRLF line ends, trailing blanks and a bold CA header
    variant = text.replace("\n", "  \r\n").replace("CA 'mlx5_0'", "\x1b[1mCA 'mlx5_0'\x1b[0m")
    assert parse_ibstat(variant) == parse_ibstat(text)


@pytest.mark.parametrize("prefix", ["0: ", "[1,0]<stdout>:", "  3: "])
def test_rank_prefixes_are_removed(fixture_text, prefix):
    text = fixture_text(DUAL)
    # synthetic: every line prefixed as srun -l / mpirun --tag-output would
    variant = "\n".join(prefix + line for line in text.split("\n"))
    assert parse_ibstat(variant) == parse_ibstat(text)


def test_mixed_ranks_raise_at_first_foreign_line(fixture_text):
    lines = fixture_text(FDR).split("\n")
    # synthetic: rank 0 prefix, except line 5 which comes from rank 1
    variant = "\n".join(("1: " if i == 4 else "0: ") + line for i, line in enumerate(lines))
    with pytest.raises(ParseError) as err:
        parse_ibstat(variant)
    assert err.value.line == 5


def test_prompt_line_is_skipped(fixture_text):
    text = fixture_text(FDR)
    # synthetic: a shell prompt with the command before the output
    result = parse_ibstat("root@gpu-node-7:~# ibstat\n" + text)
    assert result["devices"][0]["ports"][0]["rate_gbps"] == 56


def test_truncated_after_whole_line_names_that_line(fixture_text):
    text = fixture_text(FDR)
    # synthetic: only the first 12 lines (ends with "Base lid: 1")
    with pytest.raises(ParseError) as err:
        parse_ibstat("\n".join(text.split("\n")[:12]))
    assert err.value.line == 12


def test_truncated_inside_last_value_names_that_line(fixture_text):
    text = fixture_text(FDR)
    # synthetic: cut in the middle of line 17 "Link layer: InfiniBand"
    cut = text[: text.index("InfiniBand") + 5]
    with pytest.raises(ParseError) as err:
        parse_ibstat(cut)
    assert err.value.line == 17


def test_truncated_between_ports_names_last_line(fixture_text):
    text = fixture_text(DUAL)
    # synthetic: the 2-port output cut after port 1 (line 18)
    with pytest.raises(ParseError) as err:
        parse_ibstat("\n".join(text.split("\n")[:18]))
    assert err.value.line == 18
    assert "2 port" in err.value.message


def test_bare_ca_line_among_detailed_devices(fixture_text):
    text = fixture_text(TABS)
    # synthetic: cut right after line 188 "CA 'mlx5_9'"
    with pytest.raises(ParseError) as err:
        parse_ibstat("\n".join(text.split("\n")[:188]))
    assert err.value.line == 188


def test_damaged_number_raises(fixture_text):
    text = fixture_text(FDR)
    # synthetic: letter O instead of zero in "Rate: 56" -> "Rate: 5O" on line 11
    with pytest.raises(ParseError) as err:
        parse_ibstat(text.replace("Rate: 56", "Rate: 5O"))
    assert err.value.line == 11


def test_damaged_guid_and_unknown_state(fixture_text):
    text = fixture_text(FDR)
    # synthetic: a GUID cut short (line 16) / a state word that ibstat never prints (line 9)
    with pytest.raises(ParseError) as err:
        parse_ibstat(text.replace("0x98039b0300dccab1", "0x98039b03"))
    assert err.value.line == 16
    with pytest.raises(ParseError) as err:
        parse_ibstat(text.replace("State: Active", "State: Acti"))
    assert err.value.line == 9


def test_garbage_line_raises(fixture_text):
    lines = fixture_text(FDR).split("\n")
    # synthetic: a stray unindented line without "prog: message" form inserted as line 8
    lines.insert(7, "garbage")
    with pytest.raises(ParseError) as err:
        parse_ibstat("\n".join(lines))
    assert err.value.line == 8


def test_hostile_markup_stays_a_string(fixture_text):
    text = fixture_text(FDR)
    # synthetic: markup and a template expression as CA name
    result = parse_ibstat(text.replace("mlx4_0", "<b>{{ lookup('pipe','id') }}</b>"))
    assert result["devices"][0]["name"] == "<b>{{ lookup('pipe','id') }}</b>"


def test_empty_and_error_only_inputs_raise(fixture_text):
    with pytest.raises(ParseError) as err:
        parse_ibstat("")
    assert err.value.line is None
    with pytest.raises(ParseError) as err:
        parse_ibstat("\n\n")
    # synthetic: only the ibpanic line of the recording
    panic = fixture_text(PANIC).split("\n")[136]
    with pytest.raises(ParseError) as err:
        parse_ibstat(panic)
    assert err.value.line == 1
    assert "mlx5_8" in str(err.value)


# --- lines the template (templates/ibstat.textfsm) rejects in their context ------------------


def test_template_rejects_device_key_inside_port_block(fixture_text):
    lines = fixture_text(FDR).split("\n")
    # synthetic: a device key inserted as line 10, inside "Port 1:" (after "State: Active")
    lines.insert(9, "\tFirmware version: 2.42.5000")
    with pytest.raises(ParseError) as err:
        parse_ibstat("\n".join(lines))
    assert err.value.line == 10
    assert err.value.message == "device key after a port block"
    assert err.value.kind == "ibstat"


def test_template_rejects_port_key_before_port_line(fixture_text):
    lines = fixture_text(FDR).split("\n")
    # synthetic: "Rate: 56" inserted as line 3, among the device keys
    lines.insert(2, "\tRate: 56")
    with pytest.raises(ParseError) as err:
        parse_ibstat("\n".join(lines))
    assert err.value.line == 3
    assert err.value.message == "port key outside a 'Port N:' block"


# --- foreign lines: what a collecting script or a person put around the output ----------------


def _dual_with_foreign_lines(fixture_text):
    # edited: a script's banner as line 1, a note inside port 1's block (line 14, after "Rate: 10"), an
    # echoed command before "Port 2:" (line 21) and a rule after the last line "Link layer: Ethernet" (line 32)
    return insert_lines(fixture_text(DUAL), {
        1: "===== node-07 : mlx4_0 =====",
        14: "<-- polling: no cable on port 1",
        21: "+ ibstat mlx4_0 2",
        32: "----------------------------------------",
    })


def test_foreign_lines_are_skipped_and_listed(fixture_text):
    result = parse_ibstat(_dual_with_foreign_lines(fixture_text))
    device = result["devices"][0]
    assert [d["name"] for d in result["devices"]] == ["mlx4_0"]
    assert device["num_ports"] == 2
    assert device["firmware_version"] == "2.42.5000"
    assert [(p["port"], p["state"], p["physical_state"], p["rate_gbps"], p["link_layer"]) for p in device["ports"]] == [
        (1, "Down", "Polling", 10, "InfiniBand"), (2, "Down", "Disabled", 40, "Ethernet")]
    assert device["ports"][1]["port_guid"] == "0xe61d2dfffe7b4082"
    assert result["errors"] == []
    assert result["ignored_lines"] == [
        {"line": 1, "text": "===== node-07 : mlx4_0 =====", "why": "banner"},
        {"line": 14, "text": "<-- polling: no cable on port 1", "why": "note"},
        {"line": 21, "text": "+ ibstat mlx4_0 2", "why": "echoed command"},
        {"line": 32, "text": "----------------------------------------", "why": "separator"},
    ]
    without = parse_ibstat(fixture_text(DUAL))
    assert "ignored_lines" not in without
    assert {k: v for k, v in result.items() if k != "ignored_lines"} == without


def test_damage_among_foreign_lines_still_names_its_line(fixture_text):
    text = _dual_with_foreign_lines(fixture_text)
    # edited: port 2's GUID (line 30 once the lines are in) cut short; "Rate: 40" (line 25) cut to "Rate: 4."
    with pytest.raises(ParseError) as err:
        parse_ibstat(text.replace("0xe61d2dfffe7b4082", "0xe61d2dff"))
    assert err.value.line == 30
    with pytest.raises(ParseError) as err:
        parse_ibstat(text.replace("Rate: 40", "Rate: 4."))
    assert err.value.line == 25


def test_placeholders_are_no_values(fixture_text):
    text = fixture_text(FDR)
    # edited: a masked firmware and an elided hardware version read as not printed
    result = parse_ibstat(text.replace("2.42.5000", "<masked>").replace("Hardware version: 1", "Hardware version: ..."))
    assert result["devices"][0]["firmware_version"] is None
    assert result["devices"][0]["hardware_version"] is None
    assert result["devices"][0]["ports"][0]["rate_gbps"] == 56
    # edited: a masked rate (line 11) and an elided CA name (line 1) cannot be read
    with pytest.raises(ParseError) as err:
        parse_ibstat(text.replace("Rate: 56", "Rate: <masked>"))
    assert err.value.line == 11
    with pytest.raises(ParseError) as err:
        parse_ibstat(text.replace("CA 'mlx4_0'", "CA '...'"))
    assert err.value.line == 1
