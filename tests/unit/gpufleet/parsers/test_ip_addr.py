# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the ``ip -j addr`` parser against a recorded output (expected values read by hand)."""

from __future__ import annotations

import json

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.ip_addr import parse_ip_addr
from gpufleet.parsers.registry import parse

DESKTOP = "ethtool/ip-j-addr-desktop-lo-enp8s0-docker-bridge-NO-CARRIER.json.txt"


def test_desktop_lo_enp8s0_and_two_bridges_without_carrier(fixture_text):
    result = parse_ip_addr(fixture_text(DESKTOP))
    interfaces = {i["ifname"]: i for i in result["interfaces"]}
    assert [i["ifname"] for i in result["interfaces"]] == ["lo", "enp8s0", "br-211476fe73de", "docker0"]
    assert [i["ifindex"] for i in result["interfaces"]] == [1, 2, 3, 4]
    lo = interfaces["lo"]
    assert lo["mtu"] == 65536
    assert lo["operstate"] == "UNKNOWN"
    assert lo["link_type"] == "loopback"
    assert lo["carrier"] is True
    assert [(a["family"], a["local"], a["prefixlen"], a["scope"]) for a in lo["addresses"]] == [("inet", "127.0.0.1", 8, "host"), ("inet6", "::1", 128, "host")]
    assert lo["addresses"][0]["valid_lft"] is None  # 4294967295 = forever
    nic = interfaces["enp8s0"]
    assert nic["flags"] == ["BROADCAST", "MULTICAST", "UP", "LOWER_UP"]
    assert nic["address"] == "70:85:c2:f9:9b:2a"
    assert nic["operstate"] == "UP"
    assert nic["carrier"] is True and nic["admin_up"] is True
    assert nic["qdisc"] == "fq_codel"
    v4, v6_global, v6_link = nic["addresses"]
    assert (v4["local"], v4["prefixlen"], v4["dynamic"], v4["broadcast"]) == ("192.168.0.6", 24, True, "192.168.0.255")
    assert v4["valid_lft"] == 598439 and v4["preferred_lft"] == 522839
    assert (v6_global["local"], v6_global["scope"], v6_global["dynamic"]) == ("fd00:a84e:3f17:bf12:3d36:34b6:ccc3:1e56", "global", True)
    assert (v6_link["local"], v6_link["scope"], v6_link["dynamic"]) == ("fe80::3d6e:4143:7f56:3bf9", "link", False)
    for name, mac, ip in [("br-211476fe73de", "02:42:ca:00:b8:1a", "172.18.0.1"), ("docker0", "02:42:29:bc:04:aa", "172.17.0.1")]:
        bridge = interfaces[name]
        assert bridge["carrier"] is False  # NO-CARRIER
        assert bridge["admin_up"] is True
        assert bridge["operstate"] == "DOWN"
        assert bridge["address"] == mac
        assert [(a["local"], a["prefixlen"]) for a in bridge["addresses"]] == [(ip, 16)]
        assert bridge["master"] is None


def test_registry_reaches_parser(fixture_text):
    assert parse("ip-addr", fixture_text(DESKTOP))["interfaces"][1]["mtu"] == 1500


# --- synthetic variants, each built from the real fixture -----------------------------------


def test_pretty_printed_crlf_with_prompt(fixture_text):
    text = fixture_text(DESKTOP)
    # synthetic: the same document pretty-printed (like ``ip -j -p addr``), CRLF, after a prompt line
    pretty = "$ ip -j -p addr\r\n" + json.dumps(json.loads(text), indent=4).replace("\n", "\r\n") + "\r\n"
    assert parse_ip_addr(pretty) == parse_ip_addr(text)


def test_invalid_json_names_json_line(fixture_text):
    text = fixture_text(DESKTOP)
    # synthetic: pretty-printed, then the document cut after its 30th line
    pretty = json.dumps(json.loads(text), indent=4).split("\n")
    with pytest.raises(ParseError) as err:
        parse_ip_addr("\n".join(pretty[:30]))
    assert err.value.line == 30
    # synthetic: the single-line recording truncated in the middle
    with pytest.raises(ParseError) as err:
        parse_ip_addr(text[:1000])
    assert err.value.line == 1
    # synthetic: a prompt line, then the single-line document cut: the error is on line 2
    with pytest.raises(ParseError) as err:
        parse_ip_addr("$ ip -j addr\n" + text[:1000])
    assert err.value.line == 2


def test_wrong_types_raise(fixture_text):
    text = fixture_text(DESKTOP)
    # synthetic: mtu as a string / a document that is an object instead of a list
    with pytest.raises(ParseError) as err:
        parse_ip_addr(text.replace('"mtu":1500', '"mtu":"1500"', 1))
    assert err.value.line == 1
    with pytest.raises(ParseError):
        parse_ip_addr(json.dumps({"interfaces": json.loads(text)}))


def test_empty_addr_info_entries_and_hostile_name(fixture_text):
    document = json.loads(fixture_text(DESKTOP))
    # synthetic: iproute2's empty {} addr_info entries and markup in an interface name
    document[3]["addr_info"].append({})
    document[3]["ifname"] = "<script>{{ 7*7 }}</script>"
    result = parse_ip_addr(json.dumps(document))
    assert result["interfaces"][3]["ifname"] == "<script>{{ 7*7 }}</script>"
    assert len(result["interfaces"][3]["addresses"]) == 1


def test_error_text_and_empty_raise():
    with pytest.raises(ParseError) as err:
        parse_ip_addr('Device "ib9" does not exist.\n')
    assert err.value.line == 1
    assert "does not exist" in str(err.value)
    with pytest.raises(ParseError):
        parse_ip_addr("")


# --- foreign lines: what a collecting script or a person put around the output ----------------


def _desktop_with_foreign_lines(document):
    # edited: a script's banner as line 1, the prompt as line 2 (a prompt is never listed), the one-line
    # recording as line 3 and a note after it as line 4
    return insert_lines(document, {
        1: "===== node-07 : ip -j addr =====",
        2: "$ ip -j addr",
        4: "<-- docker0: NO-CARRIER, as expected",
    })


def test_foreign_lines_are_skipped_and_listed(fixture_text):
    document = fixture_text(DESKTOP).strip()
    result = parse_ip_addr(_desktop_with_foreign_lines(document))
    assert [i["ifname"] for i in result["interfaces"]] == ["lo", "enp8s0", "br-211476fe73de", "docker0"]
    assert result["interfaces"][1]["addresses"][0]["local"] == "192.168.0.6"
    assert result["interfaces"][3]["carrier"] is False
    assert result["ignored_lines"] == [
        {"line": 1, "text": "===== node-07 : ip -j addr =====", "why": "banner"},
        {"line": 4, "text": "<-- docker0: NO-CARRIER, as expected", "why": "note"},
    ]


def test_damage_among_foreign_lines_still_names_its_line(fixture_text):
    document = fixture_text(DESKTOP).strip()
    # edited: the document (line 3) cut after 1000 characters
    with pytest.raises(ParseError) as err:
        parse_ip_addr(_desktop_with_foreign_lines(document[:1000]))
    assert err.value.line == 3
    # edited: a crash message after the document (line 5): not a foreign line, not JSON
    with pytest.raises(ParseError) as err:
        parse_ip_addr(insert_lines(_desktop_with_foreign_lines(document), {5: "Segmentation fault"}))
    assert err.value.line == 5


def test_placeholders_are_no_values(fixture_text):
    text = fixture_text(DESKTOP)
    # edited: enp8s0's MAC masked: no address; its name elided: refused (a name is required)
    result = parse_ip_addr(text.replace('"70:85:c2:f9:9b:2a"', '"<masked>"'))
    assert result["interfaces"][1]["address"] is None
    with pytest.raises(ParseError) as err:
        parse_ip_addr(text.replace('"ifname":"enp8s0"', '"ifname":"..."'))
    assert err.value.line == 1
