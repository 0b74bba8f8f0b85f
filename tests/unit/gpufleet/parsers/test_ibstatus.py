# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the ibstatus parser against recorded outputs (expected values read by hand)."""

from __future__ import annotations

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.ibstatus import parse_ibstatus
from gpufleet.parsers.registry import parse

AZURE = "ib/gpud-ibstatus-azure-a100-8x-hdr200.txt"


def test_azure_a100_eight_hdr_ports_and_one_ethernet(fixture_text):
    result = parse_ibstatus(fixture_text(AZURE))
    names = [d["name"] for d in result["devices"]]
    assert names == ["mlx5_%d" % i for i in range(9)]
    first = result["devices"][0]["ports"]
    assert len(first) == 1
    port = first[0]
    assert port["port"] == 1
    assert port["default_gid"] == "fe80:0000:0000:0000:0015:5dff:fd34:11eb"
    assert port["base_lid"] == 0x33BF == 13247
    assert port["sm_lid"] == 1
    assert (port["state"], port["state_code"]) == ("Active", 4)
    assert (port["physical_state"], port["physical_state_code"]) == ("LinkUp", 5)
    assert port["rate_gbps"] == 200 and isinstance(port["rate_gbps"], int)
    assert port["rate_text"] == "4X HDR"
    assert port["link_layer"] == "InfiniBand"
    hdr = [d for d in result["devices"] if d["ports"][0]["rate_text"] == "4X HDR"]
    assert len(hdr) == 8
    assert result["devices"][7]["ports"][0]["base_lid"] == 0x33F9
    eth = result["devices"][8]["ports"][0]
    assert eth["default_gid"] is None  # printed "unknown"
    assert (eth["base_lid"], eth["sm_lid"]) == (0, 0)
    assert (eth["rate_gbps"], eth["rate_text"]) == (40, "4X QDR")
    assert eth["link_layer"] == "Ethernet"
    assert result["errors"] == []


def test_registry_reaches_parser(fixture_text):
    assert parse("ibstatus", fixture_text(AZURE))["devices"][3]["ports"][0]["base_lid"] == 0x33DC


# --- synthetic variants, each built from the real fixture -----------------------------------


def test_tabs_crlf_ansi_prompt_read_the_same(fixture_text):
    text = fixture_text(AZURE)
    # synthetic: the script's own TAB layout, CRLF, coloured header, prompt line before
    variant = "$ ibstatus\r\n" + text.replace("        ", "\t").replace(":     ", ":\t ").replace("\n", "\r\n")
    variant = variant.replace("Infiniband device 'mlx5_4'", "\x1b[32mInfiniband device 'mlx5_4'\x1b[0m")
    assert parse_ibstatus(variant) == parse_ibstatus(text)


def test_srun_prefix(fixture_text):
    text = fixture_text(AZURE)
    # synthetic: srun -l prefix on every line
    variant = "\n".join("0: " + line for line in text.split("\n"))
    assert parse_ibstatus(variant) == parse_ibstatus(text)


def test_other_states_are_normalised_to_ibstat_words(fixture_text):
    text = fixture_text(AZURE)
    # synthetic: port mlx5_0 down and polling, fractional SDR rate
    variant = text.replace("4: ACTIVE", "1: DOWN", 1).replace("5: LinkUp", "2: Polling", 1).replace("200 Gb/sec (4X HDR)", "2.5 Gb/sec (1X SDR)", 1)
    port = parse_ibstatus(variant)["devices"][0]["ports"][0]
    assert (port["state"], port["state_code"]) == ("Down", 1)
    assert (port["physical_state"], port["physical_state_code"]) == ("Polling", 2)
    assert port["rate_gbps"] == 2.5 and port["rate_text"] == "1X SDR"


def test_truncated_block_names_its_last_line(fixture_text):
    text = fixture_text(AZURE)
    # synthetic: first 14 lines: mlx5_1's block stops after "state: 4: ACTIVE" (line 14)
    with pytest.raises(ParseError) as err:
        parse_ibstatus("\n".join(text.split("\n")[:14]))
    assert err.value.line == 14


def test_missing_link_layer_in_last_block_is_truncation(fixture_text):
    text = fixture_text(AZURE)
    # synthetic: file cut before line 80 (the last "link_layer: Ethernet")
    with pytest.raises(ParseError) as err:
        parse_ibstatus("\n".join(text.split("\n")[:79]))
    assert err.value.line == 79


def test_truncated_inside_rate_names_that_line(fixture_text):
    text = fixture_text(AZURE)
    # synthetic: cut inside line 7 "rate: 200 Gb/sec (4X HDR)" -> "rate:            200 Gb/s"
    cut = text[: text.index("Gb/sec") + 4]
    with pytest.raises(ParseError) as err:
        parse_ibstatus(cut)
    assert err.value.line == 7


def test_damaged_state_and_lid_raise(fixture_text):
    text = fixture_text(AZURE)
    # synthetic: state without code (line 5) / LID not hex (line 3)
    with pytest.raises(ParseError) as err:
        parse_ibstatus(text.replace("4: ACTIVE", "ACTIVE", 1))
    assert err.value.line == 5
    with pytest.raises(ParseError) as err:
        parse_ibstatus(text.replace("0x33bf", "33bf", 1))
    assert err.value.line == 3


def test_duplicate_block_raises(fixture_text):
    text = fixture_text(AZURE)
    # synthetic: the first block (lines 1-9) printed twice; the copy starts on line 10
    lines = text.split("\n")
    with pytest.raises(ParseError) as err:
        parse_ibstatus("\n".join(lines[:9] + lines))
    assert err.value.line == 10


def test_empty_and_message_only(fixture_text):
    assert fixture_text(AZURE)  # the recording exists
    with pytest.raises(ParseError):
        parse_ibstatus("")
    # synthetic: what the script prints on a host without the sysfs class
    with pytest.raises(ParseError) as err:
        parse_ibstatus("ls: cannot access '/sys/class/infiniband': No such file or directory\n")
    assert err.value.line == 1
    assert "cannot access" in str(err.value)


# --- foreign lines: what a collecting script or a person put around the output ----------------


def _azure_with_foreign_lines(fixture_text):
    # edited: a script's banner as line 1, a note inside mlx5_0's block (line 9, after "rate:"), an echoed
    # command before mlx5_1's header (line 12) and a rule before mlx5_2's header (line 22)
    return insert_lines(fixture_text(AZURE), {
        1: "===== node-07 : ibstatus =====",
        9: "<-- HDR, as ordered",
        12: "+ ibstatus mlx5_1",
        22: "-----",
    })


def test_foreign_lines_are_skipped_and_listed(fixture_text):
    result = parse_ibstatus(_azure_with_foreign_lines(fixture_text))
    assert [d["name"] for d in result["devices"]] == ["mlx5_%d" % i for i in range(9)]
    first = result["devices"][0]["ports"][0]
    assert (first["rate_gbps"], first["rate_text"], first["link_layer"]) == (200, "4X HDR", "InfiniBand")
    assert result["devices"][1]["ports"][0]["base_lid"] == 0x33BE
    assert result["devices"][8]["ports"][0]["link_layer"] == "Ethernet"
    assert result["errors"] == []
    assert result["ignored_lines"] == [
        {"line": 1, "text": "===== node-07 : ibstatus =====", "why": "banner"},
        {"line": 9, "text": "<-- HDR, as ordered", "why": "note"},
        {"line": 12, "text": "+ ibstatus mlx5_1", "why": "echoed command"},
        {"line": 22, "text": "-----", "why": "separator"},
    ]
    without = parse_ibstatus(fixture_text(AZURE))
    assert "ignored_lines" not in without
    assert {k: v for k, v in result.items() if k != "ignored_lines"} == without


def test_damage_among_foreign_lines_still_names_its_line(fixture_text):
    lines = _azure_with_foreign_lines(fixture_text).split("\n")
    # edited: mlx5_1's rate (line 19 once the lines are in) cut after its number
    assert lines[18] == "        rate:            200 Gb/sec (4X HDR)"
    lines[18] = "        rate:            200"
    with pytest.raises(ParseError) as err:
        parse_ibstatus("\n".join(lines))
    assert err.value.line == 19


def test_placeholders_are_refused(fixture_text):
    text = fixture_text(AZURE)
    # edited: a masked GID (line 2) and an elided device name (line 1): every value here is required
    with pytest.raises(ParseError) as err:
        parse_ibstatus(text.replace("fe80:0000:0000:0000:0015:5dff:fd34:11eb", "<masked>"))
    assert err.value.line == 2
    with pytest.raises(ParseError) as err:
        parse_ibstatus(text.replace("'mlx5_0'", "'...'"))
    assert err.value.line == 1
