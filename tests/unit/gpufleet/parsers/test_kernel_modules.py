# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the kernel-modules parser against recorded lsmod outputs (expected values read by hand)."""

from __future__ import annotations

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.kernel_modules import parse_kernel_modules

PR39 = "misc/gpud-pr39-h100-lsmod-peermem-ib_core-nvidia-3lines-FROM-YAML.txt"
ISSUE1737 = "misc/nccl-issue1737-h100-lsmod-grep-nvidia-peermem-gdrdrv-loaded.txt"
ISSUE988 = "misc/nccl-issue988-a100-lsmod-grep-peermem-EMPTY-not-loaded.txt"


def _by_name(result):
    return dict((m["name"], m) for m in result["modules"])


def test_pr39_three_lsmod_rows(fixture_text):
    result = parse_kernel_modules(fixture_text(PR39))
    assert result["format"] == "lsmod-fragment"
    assert [m["name"] for m in result["modules"]] == ["nvidia_peermem", "ib_core", "nvidia"]
    modules = _by_name(result)
    assert modules["nvidia_peermem"]["size"] == 16384
    assert modules["nvidia_peermem"]["refcount"] == 0
    assert modules["nvidia_peermem"]["used_by"] == []
    assert modules["ib_core"]["size"] == 434176
    assert modules["ib_core"]["refcount"] == 9
    assert modules["ib_core"]["used_by"] == ["rdma_cm", "ib_ipoib", "nvidia_peermem", "iw_cm", "ib_umad", "rdma_ucm", "ib_uverbs", "mlx5_ib", "ib_cm"]
    assert modules["nvidia"]["refcount"] == 550
    assert modules["nvidia"]["used_by"] == ["nvidia_uvm", "nvidia_peermem", "nvidia_modeset"]
    assert modules["nvidia"]["line"] == 3


def test_issue1737_grep_fragment_after_a_conda_prompt(fixture_text):
    result = parse_kernel_modules(fixture_text(ISSUE1737))
    assert result["commands"] == ["lsmod | grep nvidia"]
    assert len(result["modules"]) == 8
    modules = _by_name(result)
    assert "nvidia_peermem" in result["names"]
    assert modules["nvidia_peermem"]["line"] == 5
    assert modules["nvidia"]["size"] == 56598528
    assert modules["nvidia"]["refcount"] == 147
    assert "gdrdrv" in modules["nvidia"]["used_by"]
    # nouveau is not a row of its own here (grep nvidia), only a user of drm_kms_helper and drm
    assert "nouveau" not in result["names"]
    assert modules["drm"]["used_by"][-1] == "nouveau"
    assert modules["nvidia_modeset"]["used_by"] == ["nvidia_drm"]


def test_issue988_prompts_only_means_not_loaded(fixture_text):
    result = parse_kernel_modules(fixture_text(ISSUE988))
    assert result["format"] == "empty"
    assert result["modules"] == []
    assert result["commands"] == ["lsmod | grep nvidia_peermem", "lsmod | grep nv_peer_mem"]


def test_empty_output_is_no_module():
    assert parse_kernel_modules("")["modules"] == []


def test_full_lsmod_with_header(fixture_text):
    # synthetic: the PR39 rows under lsmod's own header
    text = "Module                  Size  Used by\n" + fixture_text(PR39)
    result = parse_kernel_modules(text)
    assert result["format"] == "lsmod"
    assert result["names"] == ["ib_core", "nvidia", "nvidia_peermem"]
    assert result["modules"][0]["line"] == 2


def test_proc_modules_layout():
    # synthetic: the PR39 values in the /proc/modules layout (trailing comma after users, state, address, taint)
    text = (
        "nvidia_peermem 16384 0 - Live 0x0000000000000000 (OE)\n"
        "ib_core 434176 9 rdma_cm,ib_ipoib,nvidia_peermem,iw_cm,ib_umad,rdma_ucm,ib_uverbs,mlx5_ib,ib_cm, Live 0x0000000000000000\n"
        "nvidia 56717312 550 nvidia_uvm,nvidia_peermem,nvidia_modeset, Live 0xffffffffc0a00000 (POE)\n"
    )
    result = parse_kernel_modules(text)
    assert result["format"] == "proc-modules"
    modules = _by_name(result)
    assert modules["nvidia_peermem"]["taint"] == "OE"
    assert modules["nvidia_peermem"]["state"] == "Live"
    assert modules["ib_core"]["used_by"][-1] == "ib_cm"
    assert modules["nvidia"]["taint"] == "POE"


def test_permanent_module_marker():
    # synthetic: a module that cannot be unloaded, as /proc/modules prints it
    result = parse_kernel_modules("ib_core 434176 9 mlx5_ib,[permanent], Live 0x0000000000000000\n")
    assert result["modules"][0]["used_by"] == ["mlx5_ib"]
    assert result["modules"][0]["permanent"] is True


def test_row_cut_short_names_its_line(fixture_text):
    # synthetic: the recording cut in the middle of line 3
    text = fixture_text(PR39)
    cut = text[: text.index("56717312") + 4]
    with pytest.raises(ParseError) as info:
        parse_kernel_modules(cut)
    assert info.value.line == 3


def test_module_listed_twice_is_rejected(fixture_text):
    # synthetic: the same capture pasted twice after a blank line (3 lines + newline, blank line 4)
    text = fixture_text(PR39)
    with pytest.raises(ParseError) as info:
        parse_kernel_modules(text + "\n" + text)
    assert info.value.line == 5


# --- foreign lines: what a collecting script or a person put around the output ----------------


def _issue1737_with_foreign_lines(fixture_text):
    # edited: a script's banner as line 1, an echoed command after the prompt (line 3), a note after the
    # nvidia_peermem row (line 8) and a rule after the last row (line 13)
    return insert_lines(fixture_text(ISSUE1737), {
        1: "===== node-07 : lsmod =====",
        3: "+ lsmod",
        8: "<-- loaded, so GPUDirect RDMA can work",
        13: "-----",
    })


def test_foreign_lines_are_skipped_and_listed(fixture_text):
    result = parse_kernel_modules(_issue1737_with_foreign_lines(fixture_text))
    assert result["commands"] == ["lsmod | grep nvidia"]
    assert result["format"] == "lsmod-fragment"
    assert len(result["modules"]) == 8
    modules = _by_name(result)
    assert modules["nvidia_peermem"]["line"] == 7
    assert (modules["nvidia"]["size"], modules["nvidia"]["refcount"]) == (56598528, 147)
    assert modules["drm"]["used_by"][-1] == "nouveau"
    assert result["ignored_lines"] == [
        {"line": 1, "text": "===== node-07 : lsmod =====", "why": "banner"},
        {"line": 3, "text": "+ lsmod", "why": "echoed command"},
        {"line": 8, "text": "<-- loaded, so GPUDirect RDMA can work", "why": "note"},
        {"line": 13, "text": "-----", "why": "separator"},
    ]


def test_damage_among_foreign_lines_still_names_its_line(fixture_text):
    text = _issue1737_with_foreign_lines(fixture_text)
    # edited: the nvidia_drm row (line 5 once the lines are in) loses its refcount cell
    with pytest.raises(ParseError) as info:
        parse_kernel_modules(text.replace("nvidia_drm             73728  0", "nvidia_drm             73728"))
    assert info.value.line == 5


def test_placeholders_are_no_module_names_or_sizes(fixture_text):
    text = fixture_text(PR39)
    # edited: the last user of nvidia (line 3) elided: it is no module name
    result = parse_kernel_modules(text.replace("nvidia_peermem,nvidia_modeset", "nvidia_peermem,..."))
    assert _by_name(result)["nvidia"]["used_by"] == ["nvidia_uvm", "nvidia_peermem"]
    # edited: nvidia's size masked on line 3: the row cannot be read
    with pytest.raises(ParseError) as info:
        parse_kernel_modules(text.replace("56717312", "<masked>"))
    assert info.value.line == 3
