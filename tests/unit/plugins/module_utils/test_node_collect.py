# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_tool and the sysfs readers: argv without a shell, LC_ALL=C, timeouts, missing tools."""

from __future__ import annotations

import os
import stat
import threading
import time
import tracemalloc

from ansible_collections.gpufleet.acceptance.plugins.module_utils import gpu_collect, host_collect, nic_collect, node_collect
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


def _bounded(seconds, function, *args, **kwargs):
    """``function(*args)`` in a thread: a call that never returns fails the test instead of hanging it."""
    box = {}
    worker = threading.Thread(target=lambda: box.update(value=function(*args, **kwargs)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "%s did not return within %ss" % (function.__name__, seconds)
    return box["value"]


def _unblock_fifo(path):
    # a reader stuck in open() on the FIFO (the code before the fix) is released by a writer appearing
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


def test_a_fifo_where_a_sysfs_file_should_be_is_an_error_not_a_wait(tmp_path):
    fifo = str(tmp_path / "speed")
    os.mkfifo(fifo)
    (tmp_path / "mtu").write_text("9000\n")
    errors = {}
    try:
        assert _bounded(10, node_collect.read_text, fifo, errors=errors) is None
    finally:
        _unblock_fifo(fifo)
    assert errors == {"speed": "unreadable: a FIFO where a regular file was expected"}
    assert node_collect.read_text(str(tmp_path / "mtu"), errors=errors) == "9000"
    # a character device in a file's place (reading it could never end) is refused the same way
    assert node_collect.read_text("/dev/zero", errors=errors) is None
    assert errors["zero"] == "unreadable: a character device where a regular file was expected"


def test_a_fifo_in_sysfs_fails_that_entry_and_the_others_are_collected(tmp_path):
    """A tmp sysfs tree: eth0's ``speed`` is a FIFO (no writer), eth1 is whole; the procfs ``cmdline`` is a FIFO too."""
    net = tmp_path / "sys" / "class" / "net"
    for name in ("eth0", "eth1"):
        (net / name).mkdir(parents=True)
        (net / name / "mtu").write_text("1500\n")
        (net / name / "operstate").write_text("up\n")
    (net / "eth1" / "speed").write_text("25000\n")
    os.mkfifo(str(net / "eth0" / "speed"))
    procfs = tmp_path / "proc"
    procfs.mkdir()
    os.mkfifo(str(procfs / "cmdline"))
    try:
        entries = _bounded(20, nic_collect.read_net, str(tmp_path / "sys"))
        entry = _bounded(20, host_collect.read_entry, str(procfs / "cmdline"))
    finally:
        _unblock_fifo(str(net / "eth0" / "speed"))
        _unblock_fifo(str(procfs / "cmdline"))
    by_name = {item["name"]: item for item in entries}
    assert by_name["eth0"]["attrs"]["speed"] is None and by_name["eth0"]["attrs"]["mtu"] == "1500"
    assert by_name["eth0"]["read_errors"] == {"speed": "unreadable: a FIFO where a regular file was expected"}
    assert by_name["eth1"]["attrs"]["speed"] == "25000" and "read_errors" not in by_name["eth1"]
    assert entry["error"] == "unreadable: a FIFO where a regular file was expected" and entry["rc"] is None


# A tool that starts a child in its own process group (it would outlive a kill of the tool alone), writes the
# child's pid, prints a line and hangs.
HANGING_TOOL = """#!/bin/sh
sleep 300 &
echo $! > "%s"
echo started
exec sleep 300
"""


def _gone(pid):
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            return handle.read().split(b") ", 1)[1][:1] == b"Z"
    except OSError:
        return True


def test_a_hung_tool_is_killed_with_its_children_and_not_run_again(tmp_path):
    node_collect.reset_timeouts()
    pid_file = tmp_path / "child.pid"
    tool = _script(tmp_path, "nvidia-smi", HANGING_TOOL.split("\n", 1)[1] % pid_file)
    started = time.monotonic()
    try:
        first = _bounded(30, node_collect.run_tool, [tool, "-q", "-x"], timeout=1)
        child = int(pid_file.read_text())
        assert first["error"] == "timeout" and first["rc"] is None
        assert first["stdout"] == "started\n"
        deadline = time.monotonic() + 5
        while not _gone(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(child), "the tool's child survived its timeout"
        # the next query of the same tool on this node is not run: no second timeout
        second = node_collect.run_tool([tool, "-q"], timeout=1)
        assert second["error"] == "skipped: nvidia-smi timed out after 1 s at `%s -q -x`; not run again" % tool
        assert second["rc"] is None and second["duration_s"] == 0.0
        # another tool still runs
        assert node_collect.run_tool([_script(tmp_path, "lspci", "echo ok\n")], timeout=5)["stdout"] == "ok\n"
    finally:
        node_collect.reset_timeouts()
    assert time.monotonic() - started < 10


def test_a_hung_nvidia_smi_costs_one_timeout_per_node_not_four(tmp_path):
    node_collect.reset_timeouts()
    tool = _script(tmp_path, "nvidia-smi", "exec sleep 300\n")
    lspci = _script(tmp_path, "lspci", "echo 'lspci output'\n")
    started = time.monotonic()
    try:
        raw, failure = _bounded(60, gpu_collect.run, {"nvidia_smi_path": tool, "lspci_path": lspci, "timeout": 2,
                                                      "query_formats": ["xml", "text"], "nvlink": True})
    finally:
        node_collect.reset_timeouts()
    elapsed = time.monotonic() - started
    assert raw["lspci"]["rc"] == 0
    assert raw["query_xml"]["error"] == "timeout"
    reason = "skipped: nvidia-smi timed out after 2 s at `%s -q -x`; not run again" % tool
    assert [raw[key]["error"] for key in ("query_text", "nvlink_status", "nvlink_errors")] == [reason] * 3
    # a timeout fails nothing on the node: the controller names it (gpufleet/facts/raw.py) and builds what it can
    assert failure is None and raw["query_xml"]["timeout_s"] == 2
    # one timeout (2 s) and the kill, not four
    assert elapsed < 2 + 4, elapsed


def test_a_200_mb_output_is_capped_while_it_is_read(tmp_path):
    """The tool prints 200 MB; the runner keeps the first MAX_OUTPUT_BYTES (8 MiB) and counts the rest."""
    node_collect.reset_timeouts()
    size = 200 * 1000 * 1000
    tool = _script(tmp_path, "journalctl", "yes x | head -c %d\n" % size)
    tracemalloc.start()
    try:
        out = _bounded(120, node_collect.run_tool, [tool], timeout=100)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out["error"] is None and out["rc"] == 0
    assert out["truncated"] is True
    assert (out["stdout_bytes"], out["stderr_bytes"]) == (size, 0)
    assert out["stdout"] == "x\n" * (node_collect.MAX_OUTPUT_BYTES // 2)
    # what the runner held: the capped output and its text, not the 200 MB
    assert peak < 4 * node_collect.MAX_OUTPUT_BYTES, peak


def test_output_within_the_cap_is_not_marked_truncated(tmp_path):
    out = node_collect.run_tool([_script(tmp_path, "tool", "echo hello\n")], timeout=10)
    assert out["stdout"] == "hello\n" and "truncated" not in out
