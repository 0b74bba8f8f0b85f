# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the lspci-acs parser against recorded lspci outputs (expected values read by hand with grep)."""

from __future__ import annotations

import os

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.lspci_acs import parse_lspci_acs

HGX = "misc/gpud-lspci-vvv-hgx-h100-8gpu-4nvswitch-8cx7-2cx6dx-FULL.txt"
AZURE_NN = "misc/gpud-lspci-nn-azure-nd-a100-v4-8gpu-6nvswitch-8cx6vf.txt"
GB200 = "misc/gpud-lspci-gb200-4gpu-tray-no-names.txt"
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures")


@pytest.fixture(name="hgx", scope="module")
def hgx_fixture():
    """The 927 KB recording, parsed once for the tests that only read it."""
    with open(os.path.join(FIXTURES, HGX), "r", encoding="utf-8", newline="") as handle:
        return parse_lspci_acs(handle.read())


def _device(result, address):
    return [d for d in result["devices"] if d["address"] == address][0]


def test_hgx_counts(hgx):
    # grep -c '^[0-9a-f]' -> 517 functions; grep -c ACSCtl -> 55; no '<access denied>'
    assert len(hgx["devices"]) == 517
    assert sum(1 for d in hgx["devices"] if d["acs_capable"]) == 55
    assert hgx["capabilities_visible"] is True
    assert hgx["access_denied"] == 0


def test_hgx_redirect_only_on_the_pmc_sierra_ports_above_the_nvswitches(hgx):
    # grep ACSCtl: 4 lines 'SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+', on 82:00.0 .. 82:03.0
    assert hgx["acs_enabled"] == ["0000:82:00.0", "0000:82:01.0", "0000:82:02.0", "0000:82:03.0"]
    port = _device(hgx, "0000:82:00.0")
    assert port["description"].startswith("PCI bridge: PMC-Sierra Inc. Device 4128")
    assert port["acs_ctl"] == {"SrcValid": True, "TransBlk": False, "ReqRedir": True, "CmpltRedir": True,
                               "UpstreamFwd": True, "EgressCtrl": False, "DirectTrans": False}
    assert port["acs_cap"]["EgressCtrl"] is True


def test_hgx_gpu_path_bridges(hgx):
    # GPU 19:00.0 sits under 15:01.0 (root port, ACSCtl all '-'), 16:00.0 (switch upstream port: no ACS
    # capability) and 17:01.0 (downstream port, ACSCtl all '-')
    root = _device(hgx, "0000:15:01.0")
    assert root["is_bridge"] is True
    assert root["acs_capable"] is True and root["acs_enabled"] is False
    assert root["acs_cap"]["ReqRedir"] is True and root["acs_ctl"]["ReqRedir"] is False
    upstream = _device(hgx, "0000:16:00.0")
    assert upstream["acs_capable"] is False and upstream["acs_enabled"] is False
    assert _device(hgx, "0000:17:01.0")["acs_enabled"] is False
    gpu = _device(hgx, "0000:19:00.0")
    assert gpu["class_name"] == "3D controller"
    assert gpu["description"] == "3D controller: NVIDIA Corporation Device 2330 (rev a1)"
    assert gpu["is_bridge"] is False


def test_hgx_root_ports_with_source_validation_only(hgx):
    # 00:0c.0 and 00:0e.0: 'SrcValid+ TransBlk- ReqRedir- CmpltRedir-' is not a redirect
    for address in ("0000:00:0c.0", "0000:00:0e.0"):
        device = _device(hgx, address)
        assert device["acs_ctl"]["SrcValid"] is True
        assert device["acs_enabled"] is False


def test_hgx_nvswitch_is_a_bridge_class_but_not_a_pci_bridge(hgx):
    nvswitch = _device(hgx, "0000:83:00.0")
    assert nvswitch["class_name"] == "Bridge"
    assert nvswitch["is_bridge"] is False


def test_capabilities_hidden_are_unknown_not_disabled(fixture_text):
    # synthetic: the first two functions of the recording as lspci -vvv prints them for a non-root user
    text = fixture_text(HGX)
    blocks = text.split("\n\n")
    hidden = []
    for block in blocks[:2]:
        lines = [line for line in block.splitlines() if not line.startswith("\t\t") and not line.startswith("\tCapabilities")]
        hidden.append("\n".join(lines + ["\tCapabilities: <access denied>"]))
    result = parse_lspci_acs("\n\n".join(hidden) + "\n")
    assert result["capabilities_visible"] is False
    assert result["access_denied"] == 2
    assert all(d["acs_enabled"] is None and d["acs_capable"] is None for d in result["devices"])
    assert result["acs_enabled"] == []


def test_azure_lspci_nn_domains_and_no_capabilities(fixture_text):
    # plain 'lspci -nn' (not -vvv): 8 GPUs in domains 0001..; no capability is printed at all
    result = parse_lspci_acs(fixture_text(AZURE_NN))
    assert result["devices"][0]["address"] == "0001:00:00.0"
    assert result["devices"][0]["class_name"] == "3D controller"
    assert sum(1 for d in result["devices"] if "[10de:20b2]" in d["description"]) == 8
    assert result["capabilities_visible"] is False
    assert all(d["acs_enabled"] is None for d in result["devices"])


def test_gb200_plain_lspci_bridges(fixture_text):
    result = parse_lspci_acs(fixture_text(GB200))
    first = result["devices"][0]
    assert (first["address"], first["description"], first["is_bridge"]) == ("0000:00:00.0", "PCI bridge: NVIDIA Corporation Device 22b2", True)
    # lines 47, 49, 85, 87: '3D controller: NVIDIA Corporation Device 2941 (rev a1)' in domains 0008, 0009, 0018, 0019
    gpus = [d["address"] for d in result["devices"] if d["description"] == "3D controller: NVIDIA Corporation Device 2941 (rev a1)"]
    assert gpus == ["0008:01:00.0", "0009:01:00.0", "0018:01:00.0", "0019:01:00.0"]
    assert result["capabilities_visible"] is False


def test_damaged_acs_flag_names_the_line(fixture_text):
    # synthetic: line 177 (the first ACSCtl line) with its ReqRedir flag mangled
    text = fixture_text(HGX)
    lines = text.split("\n")
    assert lines[176].startswith("\t\tACSCtl:")
    lines[176] = lines[176].replace("ReqRedir-", "ReqRedir?")
    with pytest.raises(ParseError) as info:
        parse_lspci_acs("\n".join(lines))
    assert info.value.line == 177


def test_unindented_garbage_and_empty(fixture_text):
    # synthetic: a device header fused with the previous line by a paste
    text = fixture_text(HGX)
    lines = text.split("\n")
    lines[19] = "FUSED" + lines[19]
    with pytest.raises(ParseError) as info:
        parse_lspci_acs("\n".join(lines))
    assert info.value.line == 20
    with pytest.raises(ParseError):
        parse_lspci_acs("")


def test_domain_printed_with_D_and_a_prompt(fixture_text):
    # synthetic: 'lspci -vvv -D' prints the domain; a prompt line precedes the capture
    head = fixture_text(HGX).split("\n\n")[0]
    result = parse_lspci_acs("root@node:~# lspci -vvv -D\n0000:" + head + "\n")
    assert result["devices"][0]["address"] == "0000:00:00.0"
    assert result["devices"][0]["line"] == 2


# --- foreign lines: what a collecting script or a person put around the output ----------------


def _hgx_with_foreign_lines(fixture_text):
    # edited: a script's banner as line 1, a note as line 103 before the header of 00:0c.0 (line 102 in the
    # recording) and the prompt of a second lspci run as line 8626 before the header of 82:00.0 (line 8624)
    return insert_lines(fixture_text(HGX), {
        1: "===== hgx-07 : lspci -vvv =====",
        103: "<-- the first root port with ACS",
        8626: "(venv) root@hgx-07:~# lspci -s 82:00.0 -vvv",
    })


def test_foreign_lines_are_skipped_and_listed(fixture_text):
    result = parse_lspci_acs(_hgx_with_foreign_lines(fixture_text))
    assert len(result["devices"]) == 517
    assert sum(1 for d in result["devices"] if d["acs_capable"]) == 55
    assert result["acs_enabled"] == ["0000:82:00.0", "0000:82:01.0", "0000:82:02.0", "0000:82:03.0"]
    assert _device(result, "0000:00:0c.0")["line"] == 104
    assert _device(result, "0000:00:0c.0")["acs_ctl"]["SrcValid"] is True
    assert _device(result, "0000:82:00.0")["line"] == 8627
    assert result["ignored_lines"] == [
        {"line": 1, "text": "===== hgx-07 : lspci -vvv =====", "why": "banner"},
        {"line": 103, "text": "<-- the first root port with ACS", "why": "note"},
        {"line": 8626, "text": "(venv) root@hgx-07:~# lspci -s 82:00.0 -vvv", "why": "shell prompt"},
    ]


def test_damage_among_foreign_lines_still_names_its_line(fixture_text):
    lines = _hgx_with_foreign_lines(fixture_text).split("\n")
    # edited: 00:0c.0's ACSCtl line (179 once the lines are in, 177 in the recording) with a flag mangled
    assert lines[178].startswith("\t\tACSCtl:")
    lines[178] = lines[178].replace("ReqRedir-", "ReqRedir?")
    with pytest.raises(ParseError) as info:
        parse_lspci_acs("\n".join(lines))
    assert info.value.line == 179


def test_masked_acs_flags_are_refused(fixture_text):
    lines = fixture_text(HGX).split("\n")
    # edited: the flags of line 177 (the first ACSCtl line) masked: whether redirect is on cannot be read
    lines[176] = "\t\tACSCtl:\t<masked>"
    with pytest.raises(ParseError) as info:
        parse_lspci_acs("\n".join(lines))
    assert info.value.line == 177
