# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the kernel-log parser against recorded dmesg/journalctl outputs (expected values read by hand)."""

from __future__ import annotations

import pytest

from gpufleet.parsers.common import ParseError
from gpufleet.parsers.kernel_log import parse_kernel_log

DESKTOP = "misc/desktop-dmesg-xid-62-hexwords-then-xid-31-mmu-fault-chrome.txt"
XE9680 = "misc/gpud-dell-xe9680-dmesg-T-xid-119-gsp-rpc-timeout-stacktrace.txt"
DECODE = "misc/gpud-dmesg-decode-iso-xid-13-x629-xid-43-x7.txt"
ISO = "misc/gpud-dmesg-iso-xid-48-63-94-dbe-rowremap-plus-peermem-errors.txt"
JOURNAL = "misc/gpud-journalctl-short-iso-kernel-nvidia-peermem-invalid-context.txt"
OFF_BUS = "misc/nvsentinel-issue155-dmesg-fallen-off-bus-MULTILINE-no-xid-570-open.txt"


def test_desktop_xid_62_hex_words_and_xid_31_chrome(fixture_text):
    result = parse_kernel_log(fixture_text(DESKTOP))
    assert result["format"] == "dmesg"
    assert result["xid_counts"] == {"62": 1, "31": 1}
    assert len(result["events"]) == 2
    first, second = result["events"][0], result["events"][1]
    assert (first["line"], first["timestamp"], first["pci"], first["xid"]) == (2, "315905.140252", "0000:03:00", 62)
    assert first["pid"] is None and first["process"] is None
    assert first["message"].startswith("00000a9f 00000a85")
    assert (second["line"], second["pid"], second["process"]) == (3, 12083, "chrome")
    assert second["message"].startswith("Ch 00000010, intr 10000000. MMU Fault: ENGINE CE0")
    assert result["fallen_off_bus"] == []
    assert result["peermem_errors"] == 0


def test_xe9680_dmesg_T_five_xid_119_among_a_stack_trace(fixture_text):
    result = parse_kernel_log(fixture_text(XE9680))
    assert result["format"] == "dmesg-ctime"
    assert result["xid_counts"] == {"119": 5}
    assert [e["line"] for e in result["events"]] == [3, 38, 40, 42, 43]
    assert result["events"][0]["timestamp"] == "Sun Feb 23 16:24:18 2025"
    assert result["events"][0]["pci"] == "0000:9b:00"
    assert [e["process"] for e in result["events"]] == ["nvidia-smi", "nvidia-smi", "nvidia-smi", "cache_mgr_main", "gpud"]
    assert result["events"][3]["pid"] == 1263500
    assert result["line_count"] == 43


def test_decode_iso_629_xid_13_and_7_xid_43(fixture_text):
    result = parse_kernel_log(fixture_text(DECODE))
    assert result["decoded"] is True
    assert result["format"] == "iso"
    assert result["xid_counts"] == {"13": 629, "43": 7}
    assert len(result["events"]) == 636
    assert result["events"][0]["timestamp"] == "2025-01-21T02:21:33,498559+00:00"
    assert result["events"][0]["message"] == "Graphics SM Warp Exception on (GPC 8, TPC 5, SM 0): Out Of Range Address"
    xid43 = [e for e in result["events"] if e["xid"] == 43]
    assert xid43[0]["line"] == 16
    assert (xid43[0]["pid"], xid43[0]["process"]) == (2815167, "pt_main_thread")
    assert xid43[-1]["line"] == 636
    assert all(e["pci"] == "0000:38:00" for e in result["events"])


def test_iso_dbe_row_remap_contained_and_peermem_errors(fixture_text):
    result = parse_kernel_log(fixture_text(ISO))
    assert result["format"] == "iso"
    assert result["decoded"] is False
    assert result["xid_counts"] == {"48": 1, "63": 1, "94": 9}
    assert [e["xid"] for e in result["events"][:3]] == [48, 63, 94]
    assert result["events"][0]["line"] == 11
    assert result["events"][0]["pid"] is None  # pid='<unknown>'
    assert result["events"][0]["process"] is None  # name=<unknown>
    assert result["events"][3]["pid"] == 1248209
    assert result["events"][3]["process"] == "python3.10"
    assert result["events"][3]["message"] == "Ch 00000008"
    # 10 lines before the Xids, 20 after
    assert result["peermem_errors"] == 30
    assert result["peermem_first_line"] == 1


def test_journalctl_short_iso_peermem_burst_no_xid(fixture_text):
    result = parse_kernel_log(fixture_text(JOURNAL))
    assert result["format"] == "journal-short-iso"
    assert result["events"] == []
    assert result["xid_counts"] == {}
    assert result["peermem_errors"] == 14
    assert result["peermem_first_line"] == 34
    assert result["line_count"] == 47


def test_fallen_off_bus_multiline_message_without_xid(fixture_text):
    result = parse_kernel_log(fixture_text(OFF_BUS))
    assert result["fallen_off_bus"] == ["0000:b3:00.0"]
    assert result["events"] == []
    # the two indented continuation lines belong to the first message
    assert result["line_count"] == 5


def test_fallen_off_bus_logged_line_by_line(fixture_text):
    # synthetic: the recorded message as syslog/journal stores it, each line with its own prefix
    lines = [line.strip() for line in fixture_text(OFF_BUS).splitlines()[:3]]
    text = "\n".join("2025-06-02T13:13:04+0000 node kernel: " + line.split("] ", 1)[-1] for line in lines) + "\n"
    result = parse_kernel_log(text)
    assert result["format"] == "journal-short-iso"
    assert result["fallen_off_bus"] == ["0000:b3:00.0"]


def test_xid_79_counts_as_fallen_off_bus(fixture_text):
    # synthetic: the desktop recording's Xid 62 line renumbered 79
    text = fixture_text(DESKTOP).replace("): 62, ", "): 79, ")
    result = parse_kernel_log(text)
    assert result["fallen_off_bus"] == ["0000:03:00"]
    assert result["xid_counts"]["79"] == 1


def test_journal_no_entries_marker():
    result = parse_kernel_log("-- No entries --\n")
    assert result["no_entries"] is True
    assert result["line_count"] == 0
    assert parse_kernel_log("")["line_count"] == 0


def test_truncated_xid_line_names_its_line(fixture_text):
    # synthetic: the recording cut inside the address of its first Xid line (line 11)
    text = fixture_text(ISO)
    cut = text[: text.index("NVRM: Xid (PCI:0000:19") + len("NVRM: Xid (PCI:0000:19")]
    with pytest.raises(ParseError) as info:
        parse_kernel_log(cut)
    assert info.value.line == 11


def test_crlf_and_ansi(fixture_text):
    # synthetic: CRLF line ends and a coloured timestamp
    text = fixture_text(DESKTOP).replace("\n", "\r\n").replace("[315911.559820]", "\x1b[32m[315911.559820]\x1b[0m")
    result = parse_kernel_log(text)
    assert result["xid_counts"] == {"62": 1, "31": 1}
    assert result["events"][1]["process"] == "chrome"


SXID_LOG = "misc/gpud-sxid-readme-dmesg-xid-79-then-sxid-20034-fatal-3-nvswitches.txt"
XID_154 = "misc/gpud-dmesg-decode-iso-xid-13-x628-xid-154-gpu-reset-required-x1-xid-43-x7-EDITED.txt"


def test_sxid_headlines_are_events_and_their_detail_lines_are_not(fixture_text):
    # 4 "Fatal" headlines of SXid 20034 (lines 6, 7, 10, 11); the "Severity 1" / "Data {...}" lines are details.
    result = parse_kernel_log(fixture_text(SXID_LOG))
    assert result["sxid_counts"] == {"20034": 4}
    assert [(e["line"], e["switch"], e["pci"], e["sxid"], e["fatal"]) for e in result["sxid_events"]] == [
        (6, "nvswitch1", "0000:06:00.0", 20034, True), (7, "nvswitch0", "0000:05:00.0", 20034, True),
        (10, "nvswitch2", "0000:07:00.0", 20034, True), (11, "nvswitch0", "0000:05:00.0", 20034, True)]
    assert result["sxid_events"][0]["message"] == "Link 48 LTSSM Fault Up"
    # the GPU's own Xid 79 is still read
    assert result["xid_counts"] == {"79": 1}


def test_xid_154_carries_the_recovery_action(fixture_text):
    result = parse_kernel_log(fixture_text(XID_154))
    assert result["xid_counts"] == {"154": 1, "13": 628, "43": 7}
    assert result["events"][0]["recovery_action"] == "GPU Reset Required"
    assert result["recovery_actions"] == {"0000:38:00": "GPU Reset Required"}
    # a log without Xid 154 or SXid lines has none
    plain = parse_kernel_log(fixture_text(DECODE))
    assert plain["recovery_actions"] == {} and plain["sxid_events"] == [] and plain["sxid_counts"] == {}
