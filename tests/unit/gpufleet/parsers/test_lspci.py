# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""lspci parser: expected values read by hand from the recordings in tests/fixtures/misc/."""

from __future__ import annotations

import re

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.lspci import nvidia_gpus, parse_lspci

AZURE_NN = "misc/gpud-lspci-nn-azure-nd-a100-v4-8gpu-6nvswitch-8cx6vf.txt"
GB200_PLAIN = "misc/gpud-lspci-gb200-4gpu-tray-no-names.txt"
HGX_VVV = "misc/gpud-lspci-vvv-hgx-h100-8gpu-4nvswitch-8cx7-2cx6dx-FULL.txt"


def test_azure_nn_counts_gpus_not_nvswitches(fixture_text):
    result = parse_lspci(fixture_text(AZURE_NN))
    # 31 lines, one function each (no trailing newline on the last).
    assert len(result["devices"]) == 31
    assert result["numeric_ids"] is True
    assert result["verbose"] is False
    first = result["devices"][0]
    # "0001:00:00.0 3D controller [0302]: NVIDIA Corporation GA100 [A100 SXM4 80GB] [10de:20b2] (rev a1)"
    assert first["slot"] == "0001:00:00.0"
    assert first["domain"] == 1
    assert first["class_name"] == "3D controller"
    assert first["class_code"] == "0302"
    assert (first["vendor_id"], first["device_id"]) == ("10de", "20b2")
    assert first["description"] == "NVIDIA Corporation GA100 [A100 SXM4 80GB]"
    assert first["revision"] == "a1"
    gpus = nvidia_gpus(result["devices"])
    assert [gpu["address"] for gpu in gpus] == [
        "0001:00:00.0",
        "0002:00:00.0",
        "0003:00:00.0",
        "0004:00:00.0",
        "000b:00:00.0",
        "000c:00:00.0",
        "000d:00:00.0",
        "000e:00:00.0",
    ]
    switches = [d for d in result["devices"] if d["class_code"] == "0680"]
    assert len(switches) == 6
    assert {d["device_id"] for d in switches} == {"1af1"}
    # "0101:00:00.0 Infiniband controller [0207]: ... [ConnectX-6 Virtual Function] [15b3:101c]" (no rev)
    vf = result["devices"][14]
    assert vf["slot"] == "0101:00:00.0"
    assert vf["description"] == "Mellanox Technologies MT28908 Family [ConnectX-6 Virtual Function]"
    assert (vf["vendor_id"], vf["device_id"], vf["revision"]) == ("15b3", "101c", None)
    # "c941:00:02.0 Ethernet controller [0200]: ... [15b3:1016] (rev 80)"
    eth = [d for d in result["devices"] if d["slot"] == "c941:00:02.0"][0]
    assert (eth["class_code"], eth["revision"], eth["address"]) == ("0200", "80", "c941:00:02.0")


def test_gb200_plain_names_only(fixture_text):
    result = parse_lspci(fixture_text(GB200_PLAIN))
    assert len(result["devices"]) == 87
    assert result["numeric_ids"] is False
    gpus = nvidia_gpus(result["devices"])
    # Four "3D controller: NVIDIA Corporation Device 2941 (rev a1)"; the NVIDIA PCI bridges
    # (Device 22b1/22b2/22b8) and the ASPEED VGA controller are not GPUs.
    assert [gpu["address"] for gpu in gpus] == ["0008:01:00.0", "0009:01:00.0", "0018:01:00.0", "0019:01:00.0"]
    assert gpus[0]["description"] == "NVIDIA Corporation Device 2941"
    assert gpus[0]["class_code"] == "0302"  # derived from the class name
    assert gpus[0]["vendor_id"] is None
    bridges = [d for d in result["devices"] if d["class_name"] == "PCI bridge" and d["description"].startswith("NVIDIA")]
    assert len(bridges) == 12
    vga = [d for d in result["devices"] if d["class_code"] == "0300"]
    assert [d["slot"] for d in vga] == ["0005:07:00.0"]


def test_hgx_h100_vvv_headers_only(fixture_text):
    result = parse_lspci(fixture_text(HGX_VVV))
    # 517 functions; the Dell XE9680's 8 H100 ("Device 2330") at 19,3b,4c,5d,9b,bb,cb,db and
    # 4 NVSwitch "Bridge: NVIDIA Corporation Device 22a3" at 83..86.
    assert len(result["devices"]) == 517
    assert result["verbose"] is True
    gpus = nvidia_gpus(result["devices"])
    assert [gpu["slot"] for gpu in gpus] == ["19:00.0", "3b:00.0", "4c:00.0", "5d:00.0", "9b:00.0", "bb:00.0", "cb:00.0", "db:00.0"]
    assert gpus[0]["address"] == "0000:19:00.0"
    assert gpus[0]["line"] == 1477
    switches = [d for d in result["devices"] if d["class_name"] == "Bridge"]
    assert [d["slot"] for d in switches] == ["83:00.0", "84:00.0", "85:00.0", "86:00.0"]
    matrox = [d for d in result["devices"] if d["slot"] == "03:00.0"][0]
    assert matrox["class_code"] == "0300" and matrox["prog_if"] == "00" and matrox["revision"] == "04"
    assert matrox not in gpus


def test_numeric_n_form(fixture_text):
    # SYNTHETIC: the Azure -nn recording rewritten to what `lspci -n` prints for it
    # ("SLOT CLASS: VENDOR:DEVICE (rev XX)"): names dropped, codes kept.
    text = re.sub(
        r"^(\S+) [^\[\n]*?\[([0-9a-f]{4})\]: .*\[([0-9a-f]{4}:[0-9a-f]{4})\]",
        r"\1 \2: \3",
        fixture_text(AZURE_NN),
        flags=re.M,
    )
    assert text.splitlines()[0] == "0001:00:00.0 0302: 10de:20b2 (rev a1)"
    result = parse_lspci(text)
    assert len(result["devices"]) == 31
    assert result["devices"][0]["class_name"] is None
    assert result["devices"][0]["description"] is None
    assert len(nvidia_gpus(result["devices"])) == 8


def test_prompt_crlf_ansi_and_tool_messages(fixture_text):
    # SYNTHETIC: prompt line + an lspci warning line added, CRLF endings, a colour escape.
    body = fixture_text(GB200_PLAIN).replace("3D controller", "\x1b[1m3D controller\x1b[0m", 1)
    text = "root@tray:~# lspci\r\n" + "pcilib: Cannot open /proc/bus/pci\r\n" + body.replace("\n", "\r\n")
    result = parse_lspci(text)
    assert len(result["devices"]) == 87
    assert result["warnings"] == ["line 2: pcilib: Cannot open /proc/bus/pci"]
    assert len(nvidia_gpus(result["devices"])) == 4


def test_damaged_line_names_its_line(fixture_text):
    # SYNTHETIC: line 3's address cut to "0003:00:00" (function lost in a paste).
    lines = fixture_text(AZURE_NN).split("\n")
    lines[2] = lines[2].replace("0003:00:00.0", "0003:00:00", 1)
    with pytest.raises(ParseError) as err:
        parse_lspci("\n".join(lines))
    assert err.value.line == 3


def test_duplicate_device_raises_on_the_second(fixture_text):
    # SYNTHETIC: the first line pasted twice.
    text = fixture_text(AZURE_NN)
    first = text.split("\n")[0]
    with pytest.raises(ParseError) as err:
        parse_lspci(first + "\n" + text)
    assert err.value.line == 2
    assert "listed twice" in err.value.message


@pytest.mark.parametrize(
    "text, line",
    [
        ("", None),
        ("   \n\n", None),
        ("\tSubsystem: NVIDIA Corporation Device 16c1\n", 1),
        ('00:00.0 "Host bridge" "Intel Corporation" "Device 09a2" -r20 "Dell" "Device 0b73"\n', 1),
        ("19:00.0 3D controller NVIDIA Corporation Device 2330\n", 1),
        ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", 1),
    ],
)
def test_unreadable_inputs_raise(text, line):
    with pytest.raises(ParseError) as err:
        parse_lspci(text)
    assert err.value.line == line


# --- foreign lines: what a collecting script or a person put around the output ----------------


def _azure_with_foreign_lines(fixture_text):
    # EDITED: a script's banner as line 1, a note after the fourth GPU (line 6), a prompt of another command
    # after the eighth GPU (line 17) and an echoed command after the last line (line 35)
    return insert_lines(fixture_text(AZURE_NN), {
        1: "===== nd-a100-07 : lspci -nn =====",
        6: "<-- the four GPUs of the first board",
        17: "(venv) azureuser@nd-a100-07:~$ nvidia-smi -L",
        35: "+ lspci -nn -s c941:00:02.0",
    })


def test_foreign_lines_are_skipped_and_listed(fixture_text):
    result = parse_lspci(_azure_with_foreign_lines(fixture_text))
    assert len(result["devices"]) == 31
    assert [gpu["address"] for gpu in nvidia_gpus(result["devices"])] == [
        "0001:00:00.0", "0002:00:00.0", "0003:00:00.0", "0004:00:00.0",
        "000b:00:00.0", "000c:00:00.0", "000d:00:00.0", "000e:00:00.0"]
    assert result["devices"][0]["description"] == "NVIDIA Corporation GA100 [A100 SXM4 80GB]"
    assert result["devices"][4]["line"] == 7  # 0005:00:00.0, the first NVSwitch
    assert result["warnings"] == []
    assert result["ignored_lines"] == [
        {"line": 1, "text": "===== nd-a100-07 : lspci -nn =====", "why": "banner"},
        {"line": 6, "text": "<-- the four GPUs of the first board", "why": "note"},
        {"line": 17, "text": "(venv) azureuser@nd-a100-07:~$ nvidia-smi -L", "why": "shell prompt"},
        {"line": 35, "text": "+ lspci -nn -s c941:00:02.0", "why": "echoed command"},
    ]


def test_damage_among_foreign_lines_still_names_its_line(fixture_text):
    text = _azure_with_foreign_lines(fixture_text)
    # EDITED: the third GPU's address (line 4 once the lines are in) loses its function number
    with pytest.raises(ParseError) as err:
        parse_lspci(text.replace("0003:00:00.0", "0003:00:00", 1))
    assert err.value.line == 4


def test_placeholders_are_no_names_or_addresses(fixture_text):
    text = fixture_text(AZURE_NN)
    # EDITED: the Ethernet VF's names (line 29) masked: no description, the codes still read
    names = "Mellanox Technologies MT27710 Family [ConnectX-4 Lx Virtual Function]"
    eth = parse_lspci(text.replace(names, "<masked>"))["devices"][28]
    assert (eth["slot"], eth["description"]) == ("c941:00:02.0", None)
    assert (eth["vendor_id"], eth["device_id"]) == ("15b3", "1016")
    # EDITED: the first GPU's address (line 1) masked: no device line
    with pytest.raises(ParseError) as err:
        parse_lspci(text.replace("0001:00:00.0", "<masked>", 1))
    assert err.value.line == 1
