# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the parsers treat as a foreign line (prompts, banners, notes) and as a placeholder."""

from __future__ import annotations

import pytest

from gpufleet.parsers.common import foreign_line, ignore_line, is_placeholder, skip_foreign, with_ignored


@pytest.mark.parametrize("line, why", [
    ("(venv) ubuntu@gpu-node-3:~$ nvidia-smi -q", "shell prompt"),
    ("[root@h100-07 ~]# ibstat", "shell prompt"),
    ("$ ethtool eth0", "shell prompt"),
    ("xyz@debian:~$", "shell prompt"),
    ("[root@h100-07 ~]# ", "shell prompt"),
    ("+ nvidia-smi topo -m", "echoed command"),
    ("++ hostname", "echoed command"),
    ("----------------------------------------", "separator"),
    ("   ====   ", "separator"),
    ("===== node-07 : GPU 3 =====", "banner"),
    ("### ibstat ###", "banner"),
    ("==> /sys/class/net/eth0/speed <==", "file header"),
    ("<-- this is where it hung", "note"),
    ("// rebooted here", "note"),
    ("[snip]", "note"),
    ("...", "elision"),
    ("... (200 lines cut)", "elision"),
])
def test_foreign_lines_are_named(line, why):
    assert foreign_line(line) == why


@pytest.mark.parametrize("line", [
    "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)",
    "\tSpeed: 100000Mb/s",
    "CA 'mlx5_0'",
    "mlx5_0 port 1 ==> ib0 (Up)",
    "#bytes #iterations    BW peak[MB/sec]",
    "-1",
    "    Link 0: 26.562 GB/s",
    "+5V",
])
def test_tool_lines_are_not_foreign(line):
    assert foreign_line(line) is None


def test_skip_foreign_lists_what_it_skipped_and_leaves_the_rest():
    ignored = []
    assert skip_foreign(ignored, 4, "  ===== GPU 1 =====  ")
    assert not skip_foreign(ignored, 5, "Speed: fast")
    assert ignored == [{"line": 4, "text": "===== GPU 1 =====", "why": "banner"}]
    assert with_ignored({"a": 1}, ignored) == {"a": 1, "ignored_lines": [
        {"line": 4, "text": "===== GPU 1 =====", "why": "banner"}]}
    assert with_ignored({"a": 1}, []) == {"a": 1}


@pytest.mark.parametrize("value, expected", [("...", True), ("<masked>", True), (" <REDACTED> ", True), ("xxx", True),
                                             ("0", False), ("N/A", False), (None, False), ("H100", False)])
def test_placeholders(value, expected):
    assert is_placeholder(value) is expected


def test_ignore_line_records_a_parser_s_own_reason_beside_skip_foreign():
    # a parser's own rule (nvidia-smi's bare command line) names its line as skip_foreign does
    ignored = []
    ignore_line(ignored, 1, "  nvidia-smi nvlink -s  ", "echoed command")
    assert skip_foreign(ignored, 2, "-----")
    assert ignored == [{"line": 1, "text": "nvidia-smi nvlink -s", "why": "echoed command"},
                       {"line": 2, "text": "-----", "why": "separator"}]
