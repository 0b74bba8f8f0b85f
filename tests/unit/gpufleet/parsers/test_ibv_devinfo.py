# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the ibv_devinfo parser against recorded outputs (expected values read by hand)."""

from __future__ import annotations

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.ibv_devinfo import parse_ibv_devinfo
from gpufleet.parsers.registry import parse

AZURE = "ib/azure-nd-h200-v5-ibv_devinfo-8x-ndr-vf-plus-an0-ethernet.txt"
SPARK = "ib/dgx-spark-gb10-cx7-roce-ibv_devinfo-2up-2down.txt"
MLX4 = "ib/tensorflow-gdr-ibv_devinfo-mlx4-connectx3-dualport-roce.txt"


def test_azure_h200_eight_ndr_vfs_and_accelerated_networking(fixture_text):
    result = parse_ibv_devinfo(fixture_text(AZURE))
    names = [d["name"] for d in result["devices"]]
    assert names == ["mlx5_ib%d" % i for i in range(8)] + ["mlx5_an0"]
    ib0 = result["devices"][0]
    assert ib0["transport"] == "InfiniBand" and ib0["transport_code"] == 0
    assert ib0["fw_ver"] == "28.40.1702"
    assert ib0["node_guid"] == "0015:5dff:fe34:0033"
    assert ib0["sys_image_guid"] == "0427:2803:0126:770c"
    assert ib0["vendor_id"] == 0x02C9
    assert ib0["vendor_part_id"] == 4126
    assert ib0["hw_ver"] == 0
    assert ib0["board_id"] == "MSF0000000047"
    assert ib0["phys_port_cnt"] == 1
    port = ib0["ports"][0]
    assert (port["port"], port["state"], port["state_code"]) == (1, "PORT_ACTIVE", 4)
    assert (port["max_mtu"], port["active_mtu"]) == (4096, 4096)
    assert (port["sm_lid"], port["port_lid"], port["port_lmc"]) == (1, 1227, 0)
    assert port["link_layer"] == "InfiniBand"
    lids = [d["ports"][0]["port_lid"] for d in result["devices"][:8]]
    assert lids == [1227, 1304, 1266, 1366, 1426, 1476, 1466, 1554]
    an0 = result["devices"][8]
    assert an0["fw_ver"] == "16.30.5000"
    assert an0["vendor_part_id"] == 4122
    assert an0["hw_ver"] == 0x80
    assert an0["sys_image_guid"] == "0000:0000:0000:0000"
    assert an0["board_id"] == "MSF0000000041"
    assert an0["ports"][0]["active_mtu"] == 1024
    assert an0["ports"][0]["link_layer"] == "Ethernet"
    assert result["errors"] == []


def test_dgx_spark_roce_two_up_two_down(fixture_text):
    result = parse_ibv_devinfo(fixture_text(SPARK))
    states = {d["name"]: d["ports"][0]["state"] for d in result["devices"]}
    assert states == {"rocep1s0f0": "PORT_DOWN", "rocep1s0f1": "PORT_ACTIVE", "roceP2p1s0f0": "PORT_DOWN", "roceP2p1s0f1": "PORT_ACTIVE"}
    down = result["devices"][0]["ports"][0]
    assert (down["state_code"], down["active_mtu"], down["max_mtu"]) == (1, 1024, 4096)
    up = result["devices"][1]["ports"][0]
    assert (up["state_code"], up["active_mtu"]) == (4, 4096)
    for device in result["devices"]:
        assert device["vendor_part_id"] == 4129
        assert device["fw_ver"] == "28.45.4028"
        assert device["board_id"] == "NVD0000000087"
        assert device["sys_image_guid"] == "4cbb:4703:002d:1a16"
        assert device["ports"][0]["link_layer"] == "Ethernet"
        assert (device["ports"][0]["sm_lid"], device["ports"][0]["port_lid"]) == (0, 0)
    assert result["devices"][3]["node_guid"] == "4cbb:4703:002d:1a1b"


def test_old_mlx4_format_with_device_ports_line(fixture_text):
    result = parse_ibv_devinfo(fixture_text(MLX4))
    assert len(result["devices"]) == 1
    device = result["devices"][0]
    assert device["name"] == "mlx4_0"
    assert device["fw_ver"] == "2.40.7000"
    assert device["vendor_part_id"] == 4099
    assert device["hw_ver"] == 1
    assert device["board_id"] == "MT_1090110023"
    assert device["phys_port_cnt"] == 2
    assert [p["port"] for p in device["ports"]] == [1, 2]
    for port in device["ports"]:
        assert (port["state"], port["state_code"]) == ("PORT_ACTIVE", 4)
        assert (port["max_mtu"], port["active_mtu"]) == (4096, 1024)
        assert port["link_layer"] == "Ethernet"


def test_registry_reaches_parser(fixture_text):
    assert parse("ibv-devinfo", fixture_text(MLX4))["devices"][0]["node_guid"] == "248a:0703:00f6:3370"


# --- synthetic variants, each built from a real fixture -------------------------------------


def test_crlf_spaces_ansi_prompt_and_rank_prefix(fixture_text):
    text = fixture_text(SPARK)
    # synthetic: TABs re-spaced, CRLF, ANSI around a hca_id, a prompt, mpirun tag on every line
    variant = "$ ibv_devinfo\n" + text.replace("\t", "    ").replace("hca_id:    rocep1s0f1", "\x1b[1mhca_id:    rocep1s0f1\x1b[0m")
    variant = "\r\n".join("[1,0]<stdout>:" + line for line in variant.split("\n"))
    assert parse_ibv_devinfo(variant) == parse_ibv_devinfo(text)


def test_verbose_attributes_and_flag_continuations(fixture_text):
    text = fixture_text(MLX4)
    # synthetic: a few ``ibv_devinfo -v`` lines added after phys_port_cnt and after port 2's link_layer
    text = text.replace(
        "\tphys_port_cnt:\t\t\t2\n",
        "\tphys_port_cnt:\t\t\t2\n\tmax_qp:\t\t\t\t65408\n\tdevice_cap_flags:\t\t0x057e9c76\n\t\t\t\t\tBAD_PKEY_CNTR\n\t\t\t\t\tBAD_QKEY_CNTR\n",
    )
    text = text.rstrip("\n") + "\n\t\t\tactive_width:\t\t4X (2)\n\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:268a:07ff:fef6:3370\n"
    device = parse_ibv_devinfo(text)["devices"][0]
    assert device["attributes"]["max_qp"] == "65408"
    assert device["attributes"]["device_cap_flags"] == "0x057e9c76 BAD_PKEY_CNTR BAD_QKEY_CNTR"
    assert device["ports"][1]["attributes"] == {"active_width": "4X (2)", "gid_0": "fe80:0000:0000:0000:268a:07ff:fef6:3370"}


def test_truncated_between_ports_names_last_line(fixture_text):
    text = fixture_text(MLX4)
    # synthetic: cut after line 19 (port 1's link_layer), port 2 missing
    with pytest.raises(ParseError) as err:
        parse_ibv_devinfo("\n".join(text.split("\n")[:19]))
    assert err.value.line == 19


def test_truncated_inside_a_port_names_last_line(fixture_text):
    text = fixture_text(AZURE)
    # synthetic: first 166 lines: mlx5_an0's port stops after "active_mtu" (line 166)
    with pytest.raises(ParseError) as err:
        parse_ibv_devinfo("\n".join(text.split("\n")[:166]))
    assert err.value.line == 166


def test_truncated_inside_state_value(fixture_text):
    text = fixture_text(SPARK)
    # synthetic: cut inside line 12 "state: PORT_DOWN (1)" -> "state:\t\t\tPORT_DO"
    cut = text[: text.index("PORT_DOWN") + 7]
    with pytest.raises(ParseError) as err:
        parse_ibv_devinfo(cut)
    assert err.value.line == 12


def test_damaged_guid_and_mtu(fixture_text):
    text = fixture_text(SPARK)
    # synthetic: a node_guid with a missing group (line 4) / an MTU without its code (line 13)
    with pytest.raises(ParseError) as err:
        parse_ibv_devinfo(text.replace("4cbb:4703:002d:1a16", "4cbb:4703:1a16", 1))
    assert err.value.line == 4
    with pytest.raises(ParseError) as err:
        parse_ibv_devinfo(text.replace("4096 (5)", "4096", 1))
    assert err.value.line == 13


def test_error_message_between_devices_is_kept(fixture_text):
    text = fixture_text(SPARK)
    # synthetic: a libibverbs message inserted as line 20, before the second hca_id
    lines = text.split("\n")
    lines.insert(19, "Failed to query port 1 props")
    result = parse_ibv_devinfo("\n".join(lines))
    assert result["errors"] == [{"line": 20, "text": "Failed to query port 1 props"}]
    assert len(result["devices"]) == 4


def test_no_devices_message_raises(fixture_text):
    assert fixture_text(SPARK)  # the recording exists
    with pytest.raises(ParseError) as err:
        parse_ibv_devinfo("No IB devices found\n")
    assert err.value.line == 1
    assert "No IB devices found" in str(err.value)
    with pytest.raises(ParseError):
        parse_ibv_devinfo("   \n")


# --- lines the template (templates/ibv_devinfo.textfsm) rejects in their context -------------


def test_template_rejects_flag_line_not_after_an_attribute(fixture_text):
    lines = fixture_text(MLX4).split("\n")
    # synthetic: a bare flag name inserted as line 11, after "phys_port_cnt: 2" (a core key)
    lines.insert(10, "\t\t\t\t\tBAD_PKEY_CNTR")
    with pytest.raises(ParseError) as err:
        parse_ibv_devinfo("\n".join(lines))
    assert err.value.line == 11
    assert err.value.message == "unrecognised ibv_devinfo line"


def test_template_rejects_device_key_inside_port_block(fixture_text):
    lines = fixture_text(MLX4).split("\n")
    # synthetic: "fw_ver" inserted as line 15, inside "port: 1" (after "max_mtu")
    lines.insert(14, "\t\t\tfw_ver:\t\t\t2.40.7000")
    with pytest.raises(ParseError) as err:
        parse_ibv_devinfo("\n".join(lines))
    assert err.value.line == 15
    assert err.value.message == "device key or port number out of place"


# --- foreign lines: what a collecting script or a person put around the output ----------------


def _mlx4_with_foreign_lines(fixture_text):
    # edited: a script's banner as line 1, a note after "board_id:" (line 11), an echoed command before
    # "port: 2" (line 23) and a rule after the last line, port 2's "link_layer:" (line 32)
    return insert_lines(fixture_text(MLX4), {
        1: "===== node-07 : mlx4_0 =====",
        11: "<-- ConnectX-3 Pro, two 40G ports",
        23: "+ ibv_devinfo -d mlx4_0",
        32: "----------------------------------------",
    })


def test_foreign_lines_are_skipped_and_listed(fixture_text):
    result = parse_ibv_devinfo(_mlx4_with_foreign_lines(fixture_text))
    device = result["devices"][0]
    assert device["name"] == "mlx4_0"
    assert device["board_id"] == "MT_1090110023"
    assert device["phys_port_cnt"] == 2
    assert [(p["port"], p["state"], p["active_mtu"], p["link_layer"]) for p in device["ports"]] == [
        (1, "PORT_ACTIVE", 1024, "Ethernet"), (2, "PORT_ACTIVE", 1024, "Ethernet")]
    assert result["errors"] == []
    assert result["ignored_lines"] == [
        {"line": 1, "text": "===== node-07 : mlx4_0 =====", "why": "banner"},
        {"line": 11, "text": "<-- ConnectX-3 Pro, two 40G ports", "why": "note"},
        {"line": 23, "text": "+ ibv_devinfo -d mlx4_0", "why": "echoed command"},
        {"line": 32, "text": "----------------------------------------", "why": "separator"},
    ]
    without = parse_ibv_devinfo(fixture_text(MLX4))
    assert "ignored_lines" not in without
    assert {k: v for k, v in result.items() if k != "ignored_lines"} == without


def test_damage_among_foreign_lines_still_names_its_line(fixture_text):
    lines = _mlx4_with_foreign_lines(fixture_text).split("\n")
    # edited: port 2's "active_mtu:" (line 27 once the lines are in) cut inside its code
    assert lines[26] == "\t\t\tactive_mtu:\t\t1024 (3)"
    lines[26] = "\t\t\tactive_mtu:\t\t1024 (3"
    with pytest.raises(ParseError) as err:
        parse_ibv_devinfo("\n".join(lines))
    assert err.value.line == 27


def test_placeholders_are_no_values(fixture_text):
    text = fixture_text(MLX4)
    # edited: a masked firmware version and an elided board id read as not printed
    device = parse_ibv_devinfo(text.replace("2.40.7000", "<masked>").replace("MT_1090110023", "..."))["devices"][0]
    assert (device["fw_ver"], device["board_id"]) == (None, None)
    assert device["node_guid"] == "248a:0703:00f6:3370"
    # edited: a masked node GUID (line 4) and an elided hca_id (line 1) cannot be read
    with pytest.raises(ParseError) as err:
        parse_ibv_devinfo(text.replace("node_guid:\t\t\t248a:0703:00f6:3370", "node_guid:\t\t\t<masked>"))
    assert err.value.line == 4
    with pytest.raises(ParseError) as err:
        parse_ibv_devinfo(text.replace("hca_id:\tmlx4_0", "hca_id:\t..."))
    assert err.value.line == 1
