# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the ethtool / ethtool -i parsers against recorded outputs (expected values read by hand)."""

from __future__ import annotations

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.ethtool import parse_ethtool, parse_ethtool_driver
from gpufleet.parsers.registry import parse

LINKED = "ethtool/ovh-intel-e810-ice-25g-dac-linked.txt"
NO_LINK = "ethtool/ovh-intel-e810-ice-25g-NO-LINK-but-speed-25000.txt"
DRIVER = "ethtool/ovh-intel-e810-ethtool-i-driver-ice.txt"
NETLINK = "ethtool/node-exporter-eth0-1g-netlink-error-not-permitted.txt"
I40E = "ethtool/intel-i40e-unsupported-sfp-speed-unknown-link-no.txt"
QEMU = "ethtool/qemu-virtio-speed-unknown-link-yes.txt"
PARTNER = "ethtool/intel-ice-25g-dac-link-partner-fields.txt"
MIXED = "ethtool/spectrum-swp1-mixed-tab-space-indent-speed-unknown.txt"
GREP = "ethtool/spectrum-swp1-400g-8-lanes-grep-PARTIAL.txt"
SEGV = "ethtool/ethtool-6.10-lanes-segfault-PARTIAL.txt"

E810_SUPPORTED = ["1000baseT/Full", "10000baseT/Full", "25000baseCR/Full", "25000baseSR/Full", "1000baseX/Full", "10000baseSR/Full", "10000baseLR/Full"]


def test_e810_25g_dac_linked(fixture_text):
    result = parse_ethtool(fixture_text(LINKED))
    assert result["interface"] == "eth0"
    assert result["speed_mbps"] == 25000
    assert result["duplex"] == "Full"
    assert result["link_detected"] is True
    assert result["port"] == "Direct Attach Copper"
    assert result["auto_negotiation"] is False
    assert result["supported_ports"] == ["FIBRE"]
    assert result["supported_link_modes"] == E810_SUPPORTED
    assert result["advertised_link_modes"] == ["10000baseT/Full", "25000baseCR/Full"]
    assert result["supported_fec_modes"] == ["None", "RS", "BASER"]  # TAB-separated in the file
    assert result["advertised_fec_modes"] == ["None", "RS", "BASER"]
    assert result["supports_auto_negotiation"] is True
    assert result["phyad"] == 0
    assert result["transceiver"] == "internal"
    assert result["message_level"] == 7
    assert result["message_level_flags"] == ["drv", "probe", "link"]
    assert result["settings"]["wake_on"] == "d"
    assert result["settings"]["supports_wake_on"] == "g"
    assert result["lanes"] is None
    assert result["errors"] == []
    assert result["truncated"] is False


def test_e810_no_link_still_prints_speed(fixture_text):
    result = parse_ethtool(fixture_text(NO_LINK))
    assert result["interface"] == "eth1"
    assert result["speed_mbps"] == 25000
    assert result["duplex"] == "Full"
    assert result["link_detected"] is False
    assert result["supported_link_modes"] == E810_SUPPORTED
    assert result["truncated"] is False


def test_netlink_error_line_is_kept(fixture_text):
    result = parse_ethtool(fixture_text(NETLINK))  # line 1 "# ethtool eth0" is a comment
    assert result["interface"] == "eth0"
    assert result["errors"] == [{"line": 23, "text": "netlink error: Operation not permitted"}]
    assert result["speed_mbps"] == 1000
    assert result["link_detected"] is True
    assert result["supported_ports"] == ["TP", "MII"]
    assert result["supported_link_modes"] == ["10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Full", "10000baseT/Full"]
    assert result["advertised_link_modes"] == ["10baseT/Half", "10baseT/Full", "100baseT/Half", "100baseT/Full", "1000baseT/Full"]
    assert result["supported_fec_modes"] is None  # "Not reported"
    assert result["port"] == "Twisted Pair"
    assert result["phyad"] == 1
    assert result["settings"]["mdi_x"] == "off (auto)"
    assert result["message_level_flags"] == ["drv", "probe", "link"]
    assert result["truncated"] is False


def test_i40e_unsupported_sfp_unknown_speed(fixture_text):
    result = parse_ethtool(fixture_text(I40E))
    assert result["interface"] == "net03"
    assert result["speed_mbps"] is None
    assert result["duplex"] is None
    assert result["link_detected"] is False
    assert result["supported_ports"] == []
    assert result["supported_link_modes"] == ["10000baseSR/Full"]
    assert result["advertised_link_modes"] == ["10000baseSR/Full"]
    assert result["port"] == "Other"
    assert result["auto_negotiation"] is False
    assert result["settings"]["supported_pause_frame_use"] == "Symmetric Receive-only"
    assert result["message_level"] == 7


def test_qemu_virtio_unknown_speed_link_yes(fixture_text):
    result = parse_ethtool(fixture_text(QEMU))  # line 1 "linux$ sudo ethtool enp0s8"
    assert result["interface"] == "enp0s8"
    assert result["speed_mbps"] is None
    assert result["duplex"] is None
    assert result["link_detected"] is True
    assert result["supported_link_modes"] is None
    assert result["advertised_link_modes"] is None
    assert result["supports_auto_negotiation"] is False
    assert result["message_level"] is None
    assert result["truncated"] is False


def test_ice_link_partner_fields(fixture_text):
    result = parse_ethtool(fixture_text(PARTNER))
    assert result["interface"] == "ens6f0"
    assert result["speed_mbps"] == 25000
    assert result["auto_negotiation"] is True
    assert result["supported_fec_modes"] == ["None", "BaseR", "RS"]
    assert result["link_partner_advertised_link_modes"] is None
    assert result["settings"]["link_partner_advertised_pause_frame_use"] == "Symmetric"
    assert result["settings"]["link_partner_advertised_auto_negotiation"] == "Yes"
    assert result["settings"]["advertised_pause_frame_use"] == "Symmetric Receive-only"
    assert result["link_detected"] is True
    assert result["settings"]["wake_on"] == "g"


def test_spectrum_mixed_tab_space_continuations(fixture_text):
    result = parse_ethtool(fixture_text(MIXED))  # two prompt lines, header indented by 2 spaces
    assert result["interface"] == "swp1"
    assert result["supported_link_modes"] == [
        "1000baseKX/Full", "10000baseKR/Full", "40000baseCR4/Full", "40000baseSR4/Full", "40000baseLR4/Full",
        "25000baseCR/Full", "25000baseSR/Full", "50000baseCR2/Full", "100000baseSR4/Full", "100000baseCR4/Full",
    ]
    assert result["advertised_link_modes"] == ["40000baseCR4/Full", "40000baseSR4/Full", "40000baseLR4/Full", "100000baseSR4/Full", "100000baseCR4/Full"]
    assert result["speed_mbps"] is None
    assert result["duplex"] is None
    assert result["auto_negotiation"] is True
    assert result["link_detected"] is False
    assert result["port"] == "Direct Attach Copper"


def test_grep_fragment_with_lanes(fixture_text):
    result = parse_ethtool(fixture_text(GREP))
    assert result["interface"] is None
    assert result["speed_mbps"] == 400000
    assert result["lanes"] == 8
    assert result["duplex"] == "Full"
    assert result["auto_negotiation"] is True
    assert result["link_detected"] is None
    assert result["truncated"] is True


def test_segfault_partial(fixture_text):
    result = parse_ethtool(fixture_text(SEGV))
    assert result["speed_mbps"] == 400000
    assert result["errors"] == [{"line": 5, "text": "Segmentation fault (core dumped)"}]
    assert result["truncated"] is True
    assert result["link_detected"] is None
    assert result["interface"] is None
    assert result["lanes"] is None


def test_ethtool_i_driver(fixture_text):
    result = parse_ethtool_driver(fixture_text(DRIVER))
    assert result["driver"] == "ice"
    assert result["version"] == "6.1.51-mod-std"
    assert result["firmware_version"] == "4.20 0x8001b91f 1.3346.0"
    assert result["expansion_rom_version"] is None  # printed empty
    assert result["bus_info"] == "0000:0a:00.0"
    assert result["supports_statistics"] is True
    assert result["supports_priv_flags"] is True
    assert result["errors"] == []


def test_registry_reaches_both(fixture_text):
    assert parse("ethtool", fixture_text(LINKED))["speed_mbps"] == 25000
    assert parse("ethtool-driver", fixture_text(DRIVER))["driver"] == "ice"


# --- synthetic variants, each built from a real fixture -------------------------------------


def test_crlf_ansi_and_rank_prefix_read_the_same(fixture_text):
    text = fixture_text(NETLINK)
    # synthetic: CRLF, bold header, srun -l prefix on every line
    variant = text.replace("Settings for eth0:", "\x1b[1mSettings for eth0:\x1b[0m")
    variant = "\r\n".join("0: " + line for line in variant.split("\n"))
    assert parse_ethtool(variant) == parse_ethtool(text)


@pytest.mark.parametrize("lines,last", [(20, 20), (27, 27), (9, 9)])
def test_truncated_after_whole_line_names_it(fixture_text, lines, last):
    text = fixture_text(LINKED)
    # synthetic: only the first N lines (no "Link detected" line any more)
    with pytest.raises(ParseError) as err:
        parse_ethtool("\n".join(text.split("\n")[:lines]))
    assert err.value.line == last


@pytest.mark.parametrize("marker,line", [("Speed: 25000Mb/s", 18), ("25000baseCR/Full", 5), ("Link detected: yes", 28)])
def test_truncated_inside_a_line_names_it(fixture_text, marker, line):
    text = fixture_text(LINKED)
    # synthetic: cut 3 characters before the end of the marked text
    cut = text[: text.index(marker) + len(marker) - 3]
    with pytest.raises(ParseError) as err:
        parse_ethtool(cut)
    assert err.value.line == line


def test_damaged_values_raise(fixture_text):
    text = fixture_text(LINKED)
    # synthetic: each replacement damages one line
    for old, new, line in [("Link detected: yes", "Link detected: maybe", 28), ("25000Mb/s", "25 000Mb/s", 18), ("PHYAD: 0", "PHYAD: x", 22)]:
        with pytest.raises(ParseError) as err:
            parse_ethtool(text.replace(old, new))
        assert err.value.line == line


def test_two_captures_concatenated_raise(fixture_text):
    text = fixture_text(LINKED)
    # synthetic: the eth0 capture followed by the eth1 capture (its header is line 29)
    with pytest.raises(ParseError) as err:
        parse_ethtool(text + fixture_text(NO_LINK))
    assert err.value.line == 29


def test_stray_line_after_single_value_key_raises(fixture_text):
    lines = fixture_text(LINKED).split("\n")
    # synthetic: an indented word without colon after "Transceiver: internal" (becomes line 24)
    lines.insert(23, "\tinterna")
    with pytest.raises(ParseError) as err:
        parse_ethtool("\n".join(lines))
    assert err.value.line == 24


def test_no_such_device_raises_quoting_it(fixture_text):
    assert fixture_text(LINKED)  # the recording exists; the failure output below is synthetic
    text = "Settings for eth9:\nCannot get device settings: No such device\nCannot get wake-on-lan settings: No such device\nNo data available\n"
    with pytest.raises(ParseError) as err:
        parse_ethtool(text)
    assert err.value.line == 2
    assert "No such device" in str(err.value)
    with pytest.raises(ParseError):
        parse_ethtool("")


def test_link_status_error_instead_of_link_line(fixture_text):
    text = fixture_text(LINKED)
    # synthetic: the last line (28) replaced by the message ethtool prints when it cannot read it
    text = text.replace("\tLink detected: yes", "Cannot get link status: Operation not permitted")
    result = parse_ethtool(text)
    assert result["link_detected"] is None
    assert result["errors"] == [{"line": 28, "text": "Cannot get link status: Operation not permitted"}]
    assert result["speed_mbps"] == 25000


def test_hostile_interface_name_is_a_string(fixture_text):
    text = fixture_text(QEMU)
    # synthetic: markup in the interface name
    result = parse_ethtool(text.replace("Settings for enp0s8:", "Settings for <img src=x onerror=alert(1)>:"))
    assert result["interface"] == "<img src=x onerror=alert(1)>"


def test_ethtool_i_variants_and_damage(fixture_text):
    text = fixture_text(DRIVER)
    # synthetic: CRLF + prompt line
    assert parse_ethtool_driver("$ ethtool -i eth0\r\n" + text.replace("\n", "\r\n")) == parse_ethtool_driver(text)
    # synthetic: the colon of line 2 lost
    with pytest.raises(ParseError) as err:
        parse_ethtool_driver(text.replace("version: 6.1", "version 6.1"))
    assert err.value.line == 2
    # synthetic: the driver line missing
    with pytest.raises(ParseError):
        parse_ethtool_driver(text.replace("driver: ice\n", ""))
    # synthetic: what ethtool -i prints for a missing device
    with pytest.raises(ParseError) as err:
        parse_ethtool_driver("Cannot get driver information: No such device\n")
    assert err.value.line == 1
    assert "No such device" in str(err.value)


# --- lines the templates (templates/ethtool.textfsm, ethtool_driver.textfsm) reject ----------


def test_template_rejects_bare_line_after_a_setting_that_is_not_a_list(fixture_text):
    lines = fixture_text(LINKED).split("\n")
    # synthetic: a link-mode continuation line inserted as line 3, after "Supported ports: [ FIBRE ]"
    lines.insert(2, "\t                        1000baseT/Full")
    with pytest.raises(ParseError) as err:
        parse_ethtool("\n".join(lines))
    assert err.value.line == 3
    assert err.value.message == "unrecognised ethtool line"


def test_template_rejects_second_header(fixture_text):
    lines = fixture_text(LINKED).split("\n")
    # synthetic: a second interface header inserted as line 4
    lines.insert(3, "Settings for eth1:")
    with pytest.raises(ParseError) as err:
        parse_ethtool("\n".join(lines))
    assert err.value.line == 4
    assert err.value.message == "a second 'Settings for' header or a header after settings: one interface per parse"


def test_driver_template_rejects_line_without_key(fixture_text):
    lines = fixture_text(DRIVER).split("\n")
    # synthetic: a line that is neither "key: value" nor a message, inserted as line 2
    lines.insert(1, "ice driver loaded")
    with pytest.raises(ParseError) as err:
        parse_ethtool_driver("\n".join(lines))
    assert err.value.line == 2
    assert err.value.message == "unrecognised ethtool -i line"
    assert err.value.kind == "ethtool-driver"


# --- foreign lines: what a collecting script or a person put around the output ----------------


def _linked_with_foreign_lines(fixture_text):
    # edited: a script's banner as line 1, a note inside the "Supported link modes" list (line 5, between
    # 1000baseT/Full and 10000baseT/Full), an echoed command before "Speed:" (line 20) and a rule after the
    # last line "Link detected: yes" (line 32)
    return insert_lines(fixture_text(LINKED), {
        1: "===== node-07 : eth0 =====",
        5: "<-- the DAC was reseated here",
        20: "+ ethtool eth0",
        32: "----------------------------------------",
    })


def test_foreign_lines_are_skipped_and_listed(fixture_text):
    result = parse_ethtool(_linked_with_foreign_lines(fixture_text))
    assert result["interface"] == "eth0"
    assert result["supported_link_modes"] == E810_SUPPORTED
    assert result["settings"]["supported_link_modes"] == " ".join(E810_SUPPORTED)
    assert result["advertised_link_modes"] == ["10000baseT/Full", "25000baseCR/Full"]
    assert result["speed_mbps"] == 25000
    assert result["message_level_flags"] == ["drv", "probe", "link"]
    assert result["link_detected"] is True
    assert result["errors"] == []
    assert result["truncated"] is False
    assert result["ignored_lines"] == [
        {"line": 1, "text": "===== node-07 : eth0 =====", "why": "banner"},
        {"line": 5, "text": "<-- the DAC was reseated here", "why": "note"},
        {"line": 20, "text": "+ ethtool eth0", "why": "echoed command"},
        {"line": 32, "text": "----------------------------------------", "why": "separator"},
    ]
    without = parse_ethtool(fixture_text(LINKED))
    assert "ignored_lines" not in without
    assert {k: v for k, v in result.items() if k != "ignored_lines"} == without


def test_damage_among_foreign_lines_still_names_its_line(fixture_text):
    text = _linked_with_foreign_lines(fixture_text)
    # edited: "Speed: 25000Mb/s" (line 21 once the lines are in) cut to "Speed: 250"; a link mode cut short in the list
    with pytest.raises(ParseError) as err:
        parse_ethtool(text.replace("Speed: 25000Mb/s", "Speed: 250"))
    assert err.value.line == 21
    with pytest.raises(ParseError) as err:
        parse_ethtool(text.replace("25000baseSR/Full", "25000baseSR/Fu"))
    assert (err.value.line, err.value.message) == (8, "not a link mode: '25000baseSR/Fu'")


def test_placeholders_are_no_values(fixture_text):
    text = fixture_text(LINKED)
    # edited: a masked port and an elided transceiver read as not printed; a masked speed cannot be read (line 18)
    edited = text.replace("Port: Direct Attach Copper", "Port: <masked>")
    result = parse_ethtool(edited.replace("Transceiver: internal", "Transceiver: ..."))
    assert result["port"] is None
    assert result["transceiver"] is None
    assert result["speed_mbps"] == 25000
    with pytest.raises(ParseError) as err:
        parse_ethtool(text.replace("Speed: 25000Mb/s", "Speed: <masked>"))
    assert err.value.line == 18


def test_ethtool_i_foreign_lines_damage_and_placeholders(fixture_text):
    # edited: a banner as line 1 and an echoed command as line 4 (before "firmware-version:")
    text = insert_lines(fixture_text(DRIVER), {1: "### ethtool -i eth0 ###", 4: "+ ethtool -i eth0"})
    result = parse_ethtool_driver(text)
    assert result["driver"] == "ice"
    assert result["version"] == "6.1.51-mod-std"
    assert result["firmware_version"] == "4.20 0x8001b91f 1.3346.0"
    assert result["bus_info"] == "0000:0a:00.0"
    assert result["supports_priv_flags"] is True
    assert result["ignored_lines"] == [{"line": 1, "text": "### ethtool -i eth0 ###", "why": "banner"},
                                       {"line": 4, "text": "+ ethtool -i eth0", "why": "echoed command"}]
    # edited: "supports-test: yes" (line 9 with the lines in) cut to "supports-test: ye"
    with pytest.raises(ParseError) as err:
        parse_ethtool_driver(text.replace("supports-test: yes", "supports-test: ye"))
    assert err.value.line == 9
    # edited: a masked firmware version reads as None; a masked driver name cannot be read (line 2)
    assert parse_ethtool_driver(text.replace("4.20 0x8001b91f 1.3346.0", "<masked>"))["firmware_version"] is None
    with pytest.raises(ParseError) as err:
        parse_ethtool_driver(text.replace("driver: ice", "driver: ..."))
    assert err.value.line == 2
