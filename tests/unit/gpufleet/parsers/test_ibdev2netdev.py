# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the ibdev2netdev parser against recorded outputs (expected values read by hand)."""

from __future__ import annotations

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.ibdev2netdev import parse_ibdev2netdev
from gpufleet.parsers.registry import parse

SPARK = "ib/dgx-spark-gb10-ibdev2netdev-2up-2down.txt"


def test_dgx_spark_two_up_two_down(fixture_text):
    result = parse_ibdev2netdev(fixture_text(SPARK))
    simple = [(m["device"], m["port"], m["netdev"], m["state"]) for m in result["mappings"]]
    assert simple == [
        ("rocep1s0f0", 1, "enp1s0f0np0", "Down"),
        ("rocep1s0f1", 1, "enp1s0f1np1", "Up"),
        ("roceP2p1s0f0", 1, "enP2p1s0f0np0", "Down"),
        ("roceP2p1s0f1", 1, "enP2p1s0f1np1", "Up"),
    ]
    assert all(m["pci_address"] is None and m["fw_version"] is None and m["tags"] == [] for m in result["mappings"])
    assert result["errors"] == []


def test_registry_reaches_parser(fixture_text):
    assert parse("ibdev2netdev", fixture_text(SPARK))["mappings"][1]["state"] == "Up"


# --- synthetic variants ---------------------------------------------------------------------


def test_crlf_ansi_prompt_and_srun_prefix(fixture_text):
    text = fixture_text(SPARK)
    # synthetic: prompt line, CRLF, coloured state, srun -l prefix
    variant = "user@spark:~$ ibdev2netdev\n" + text.replace("(Up)", "(\x1b[32mUp\x1b[0m)")
    variant = "\r\n".join("0: " + line for line in variant.split("\n"))
    assert parse_ibdev2netdev(variant) == parse_ibdev2netdev(text)


def test_verbose_form(fixture_text):
    assert fixture_text(SPARK)  # the plain recording exists; the -v lines below are synthetic
    # synthetic: lines in the shape of published ``ibdev2netdev -v`` output (ConnectX-6 HDR,
    # a VF with part "NA" and padded "(DOWN  )", a Lustre "(o2ib)" tag)
    text = (
        "0000:01:00.0 mlx5_0 (MT4123 - MCX653105A-HDAT) ConnectX-6 VPI adapter card, HDR IB (200Gb/s) and 200GbE, "
        "single-port QSFP56 fw 20.28.1002 port 1 (ACTIVE) ==> ib0 (Up)\n"
        "0000:02:00.5 mlx5_2 (MT4116 - NA)  fw 12.23.1020 port 1 (DOWN  ) ==> ib2 (Down)\n"
        "0000:b8:00.1 mlx5_13 (MT4123 - MCX653106A-ECAT) ConnectX-6 VPI adapter card, 100Gb/s (HDR100, EDR IB and 100GbE), "
        "dual-port QSFP56 fw 20.26.4012 port 1 (ACTIVE) ==> ib4 (Up) (o2ib)\n"
    )
    mappings = parse_ibdev2netdev(text)["mappings"]
    assert len(mappings) == 3
    first, vf, lustre = mappings[0], mappings[1], mappings[2]
    assert first["pci_address"] == "0000:01:00.0"
    assert (first["device"], first["port"], first["netdev"], first["state"]) == ("mlx5_0", 1, "ib0", "Up")
    assert (first["ca_type"], first["part_number"], first["fw_version"], first["port_state"]) == ("MT4123", "MCX653105A-HDAT", "20.28.1002", "ACTIVE")
    assert first["description"].startswith("ConnectX-6 VPI adapter card")
    assert (vf["part_number"], vf["port_state"], vf["state"], vf["description"]) == (None, "DOWN", "Down", None)
    assert lustre["tags"] == ["o2ib"] and lustre["device"] == "mlx5_13"


def test_truncated_line_names_it(fixture_text):
    text = fixture_text(SPARK)
    # synthetic: cut inside line 3 "roceP2p1s0f0 port 1 ==> enP2p1s0f0np0 (Down)" before "(Down)"
    cut = text[: text.index("(Down)", text.index("roceP2p1s0f0"))]
    with pytest.raises(ParseError) as err:
        parse_ibdev2netdev(cut)
    assert err.value.line == 3


def test_bad_state_and_duplicate(fixture_text):
    text = fixture_text(SPARK)
    # synthetic: a state word other than Up/Down on line 2 / line 1 repeated as line 5
    with pytest.raises(ParseError) as err:
        parse_ibdev2netdev(text.replace("(Up)", "(Upp)", 1))
    assert err.value.line == 2
    with pytest.raises(ParseError) as err:
        parse_ibdev2netdev(text + text.split("\n")[0])
    assert err.value.line == 5


def test_messages_and_empty(fixture_text):
    text = fixture_text(SPARK)
    # synthetic: a sysfs read error as line 3
    lines = text.split("\n")
    lines.insert(2, "cat: /sys/class/net/enP2p1s0f0np0/operstate: No such file or directory")
    result = parse_ibdev2netdev("\n".join(lines))
    assert result["errors"] == [{"line": 3, "text": "cat: /sys/class/net/enP2p1s0f0np0/operstate: No such file or directory"}]
    assert len(result["mappings"]) == 4
    with pytest.raises(ParseError):
        parse_ibdev2netdev("")
    with pytest.raises(ParseError) as err:
        parse_ibdev2netdev("bash: ibdev2netdev: command not found\n")
    assert err.value.line == 1


# --- foreign lines: what a collecting script or a person put around the output ----------------


def _spark_with_foreign_lines(fixture_text):
    # edited: a script's banner as line 1, a note as line 3 and an echoed command as line 5 (after the
    # first and the second mapping), an elision after the last mapping (line 8)
    return insert_lines(fixture_text(SPARK), {
        1: "===== node-07 : ibdev2netdev =====",
        3: "<-- only this port is cabled",
        5: "+ ibdev2netdev",
        8: "...",
    })


def test_foreign_lines_are_skipped_and_listed(fixture_text):
    result = parse_ibdev2netdev(_spark_with_foreign_lines(fixture_text))
    assert [(m["device"], m["port"], m["netdev"], m["state"]) for m in result["mappings"]] == [
        ("rocep1s0f0", 1, "enp1s0f0np0", "Down"),
        ("rocep1s0f1", 1, "enp1s0f1np1", "Up"),
        ("roceP2p1s0f0", 1, "enP2p1s0f0np0", "Down"),
        ("roceP2p1s0f1", 1, "enP2p1s0f1np1", "Up"),
    ]
    assert result["errors"] == []
    assert result["ignored_lines"] == [
        {"line": 1, "text": "===== node-07 : ibdev2netdev =====", "why": "banner"},
        {"line": 3, "text": "<-- only this port is cabled", "why": "note"},
        {"line": 5, "text": "+ ibdev2netdev", "why": "echoed command"},
        {"line": 8, "text": "...", "why": "elision"},
    ]


def test_damage_among_foreign_lines_still_names_its_line(fixture_text):
    text = _spark_with_foreign_lines(fixture_text)
    # edited: the third mapping (line 6 once the lines are in) loses its state cell
    with pytest.raises(ParseError) as err:
        parse_ibdev2netdev(text.replace("enP2p1s0f0np0 (Down)", "enP2p1s0f0np0"))
    assert err.value.line == 6


def test_placeholders_are_no_names(fixture_text):
    text = fixture_text(SPARK)
    # edited: a masked netdev name on line 2 cannot be read
    with pytest.raises(ParseError) as err:
        parse_ibdev2netdev(text.replace("enp1s0f1np1", "<masked>"))
    assert err.value.line == 2
    # synthetic, in the -v shape of test_verbose_form: a masked part number and an elided firmware read as not printed
    mapping = parse_ibdev2netdev("0000:01:00.0 mlx5_0 (MT4123 - <masked>) ConnectX-6 VPI adapter card fw ... "
                                 "port 1 (ACTIVE) ==> ib0 (Up)\n")["mappings"][0]
    assert (mapping["ca_type"], mapping["part_number"], mapping["fw_version"]) == ("MT4123", None, None)
    assert mapping["description"] == "ConnectX-6 VPI adapter card"
