# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_facts' node-side collect(), run against replayed nodes (tests/replay/nodes/gpu-*.yml)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpufleet.acceptance.plugins.modules import gpu_facts

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position


def _read(relative):
    with open(os.path.join(REPO_ROOT, relative), "r", encoding="utf-8", newline="") as handle:
        return handle.read()


@pytest.fixture(name="node_bin")
def node_bin_fixture(tmp_path):
    def _bin(node):
        layout = build_fleet.build_node(os.path.join(REPO_ROOT, "tests", "replay", "nodes", node), str(tmp_path))
        return layout["bin_dir"]

    return _bin


def test_collects_everything_in_one_call(node_bin):
    bin_dir = node_bin("gpu-a100-sxm4-80gb-composite.yml")
    raw = gpu_facts.collect(os.path.join(bin_dir, "nvidia-smi"), os.path.join(bin_dir, "lspci"), 30)
    assert list(raw) == ["lspci", "query_xml", "query_text", "nvlink_status", "nvlink_errors"]
    assert raw["lspci"]["cmd"] == [os.path.join(bin_dir, "lspci"), "-nn"]
    assert raw["query_xml"]["cmd"][1:] == ["-q", "-x"]
    assert raw["nvlink_errors"]["cmd"][1:] == ["nvlink", "-e"]
    # Byte for byte what the recordings hold, with rc 0.
    assert raw["query_xml"]["rc"] == 0
    assert raw["query_xml"]["stdout"] == _read("tests/fixtures/smi/telegraf-nvidia-smi-q-x-a100-sxm4-80gb-mig-535-v12.xml.txt")
    assert raw["lspci"]["stdout"] == _read("tests/fixtures/misc/gpud-lspci-nn-azure-nd-a100-v4-8gpu-6nvswitch-8cx6vf.txt")
    assert raw["nvlink_status"]["stdout"].startswith("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-5269b708-678a-b1a8-60f0-c90406537486)")
    # This node has no -q text and no nvlink -e recording: the replay answers 127 and says so.
    assert raw["query_text"]["rc"] == 127
    assert "nvidia-smi: no output for `nvidia-smi -q`" in raw["query_text"]["stderr"]
    assert raw["nvlink_errors"]["rc"] == 127
    for entry in raw.values():
        assert entry["error"] is None
        assert entry["duration_s"] >= 0


def test_options_select_the_queries(node_bin):
    bin_dir = node_bin("gpu-h100-8x-535-fabric-throttle.yml")
    raw = gpu_facts.collect(os.path.join(bin_dir, "nvidia-smi"), os.path.join(bin_dir, "lspci"), 30, query_formats=["text"], nvlink=False)
    assert list(raw) == ["lspci", "query_text"]
    assert raw["query_text"]["rc"] == 0
    assert "Attached GPUs                             : 8" in raw["query_text"]["stdout"]
    # No lspci on this node: not found, nothing run.
    assert raw["lspci"]["error"] == "not_found"
    assert raw["lspci"]["rc"] is None


def test_missing_nvidia_smi_stops_after_the_first_query(node_bin):
    bin_dir = node_bin("gpu-a100-no-driver.yml")
    raw = gpu_facts.collect(os.path.join(bin_dir, "nvidia-smi"), os.path.join(bin_dir, "lspci"), 30)
    assert list(raw) == ["lspci", "query_xml"]
    assert raw["query_xml"]["error"] == "not_found"
    assert raw["lspci"]["rc"] == 0
    assert raw["lspci"]["stdout"].count("[10de:20b2]") == 8


def test_timeout_is_reported_not_raised(tmp_path):
    slow = tmp_path / "nvidia-smi"
    slow.write_text("#!/bin/sh\nsleep 5\n")
    slow.chmod(0o755)
    raw = gpu_facts.collect(str(slow), str(tmp_path / "lspci"), 1, query_formats=["xml"], nvlink=False)
    assert raw["query_xml"]["error"] == "timeout"
    assert raw["query_xml"]["rc"] is None


def test_module_runs_under_python_3_8_syntax():
    """The node side must stay 3.8-compatible: compile it with the oldest interpreter present."""
    candidates = sorted(glob.glob("/root/.pyenv/versions/3.8*/bin/python3.8")) + [shutil.which("python3.8") or ""]
    candidates = [path for path in candidates if path and os.path.exists(path)]
    if not candidates:
        pytest.skip("no Python 3.8 here")
    path = os.path.join(REPO_ROOT, "plugins", "modules", "gpu_facts.py")
    check = "import ast,sys; ast.parse(open(sys.argv[1]).read(), feature_version=(3, 8))"
    proc = subprocess.run([candidates[0], "-c", check, path], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
