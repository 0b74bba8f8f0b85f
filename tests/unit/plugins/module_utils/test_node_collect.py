# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_tool and the sysfs readers: argv without a shell, LC_ALL=C, timeouts, missing tools."""

from __future__ import annotations

import os
import stat

from ansible_collections.gpufleet.acceptance.plugins.module_utils import node_collect
from ansible_collections.gpufleet.acceptance.plugins.modules import gpu_topology_facts


def _script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_argv_reaches_the_tool_verbatim_with_lc_all_c(tmp_path):
    tool = _script(tmp_path, "tool", 'printf "%s|" "$LC_ALL" "$@"; echo err >&2; exit 3\n')
    hostile = "GPU0; rm -rf / $(reboot) `id`"
    out = node_collect.run_tool([tool, "topo", hostile], timeout=10)
    assert out["rc"] == 3
    assert out["stdout"] == "C|topo|%s|" % hostile
    assert out["stderr"] == "err\n"
    assert out["error"] is None
    assert out["cmd"] == [tool, "topo", hostile]


def test_missing_tool_and_timeout_are_reported_not_raised(tmp_path):
    assert node_collect.run_tool(["/nonexistent/nvidia-smi", "-q"], timeout=5)["error"] == "not_found"
    assert node_collect.run_tool(["no-such-tool-gpufleet"], timeout=5)["error"] == "not_found"
    slow = _script(tmp_path, "slow", "echo started; exec sleep 30\n")
    out = node_collect.run_tool([slow], timeout=1)
    assert out["error"] == "timeout" and out["rc"] is None
    assert out["duration_s"] < 10


def test_output_is_capped(tmp_path, monkeypatch):
    monkeypatch.setattr(node_collect, "MAX_OUTPUT_BYTES", 100)
    chatty = _script(tmp_path, "chatty", "head -c 1000 /dev/zero | tr '\\\\0' x\n")
    assert len(node_collect.run_tool([chatty], timeout=10)["stdout"]) == 100


def test_sysfs_readers(tmp_path):
    (tmp_path / "speed").write_text("25000\n")
    os.symlink("../../devices/pci0000:00/0000:00:01.0", str(tmp_path / "device"))
    assert node_collect.read_text(str(tmp_path / "speed")) == "25000"
    assert node_collect.read_text(str(tmp_path / "absent")) is None
    assert node_collect.list_dir(str(tmp_path)) == ["device", "speed"]
    assert node_collect.list_dir(str(tmp_path / "absent")) == []
    assert node_collect.link_target(str(tmp_path / "device")) == "0000:00:01.0"
    assert node_collect.link_target(str(tmp_path / "speed")) is None


def test_topology_collector_runs_topo_m_once(tmp_path, fixture_text):
    recording = "topo/gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt"
    (tmp_path / "rec.txt").write_text(fixture_text(recording))
    tool = _script(tmp_path, "nvidia-smi", 'test "$*" = "topo -m" || exit 9; cat "%s"\n' % (tmp_path / "rec.txt"))
    raw = gpu_topology_facts.collect(tool, 10)
    assert list(raw) == ["topo_m"]
    assert raw["topo_m"]["rc"] == 0
    assert raw["topo_m"]["stdout"] == fixture_text(recording)
