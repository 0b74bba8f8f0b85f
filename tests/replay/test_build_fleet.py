# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""build_fleet.py and replay_tool.py: the replayed nodes are built from recordings or refused."""

from __future__ import annotations

import glob
import gzip
import os
import subprocess
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position

SIM = os.path.join(REPO_ROOT, "inventories", "simulated")


def _write(path, data):
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def test_missing_recording_is_rejected_naming_file_and_recording(tmp_path):
    node = _write(tmp_path / "bad.yml", {"description": "x", "commands": {
        "nvidia-smi topo -m": {"stdout": "tests/fixtures/topo/gengwg-dgx-a100-nv12-12xmlx5-tabs-numa.txt", "rc": 0},
        "ibstat": {"stdout": "tests/fixtures/ib/no-such-recording.txt", "rc": 0},
    }})
    with pytest.raises(build_fleet.FleetError) as err:
        build_fleet.build_node(node, str(tmp_path / "out"))
    assert node in str(err.value) and "tests/fixtures/ib/no-such-recording.txt" in str(err.value)
    assert not (tmp_path / "out" / "bad").exists()
    # the command line says the same and exits 1
    proc = subprocess.run([sys.executable, os.path.join(HERE, "build_fleet.py"), str(tmp_path / "out"), node],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1 and "no-such-recording.txt" in proc.stderr and "bad.yml" in proc.stderr


def test_missing_tree_is_rejected(tmp_path):
    node = _write(tmp_path / "t.yml", {"commands": {}, "sysfs_tree": "tests/fixtures/sysfs/no-such-tree"})
    with pytest.raises(build_fleet.FleetError, match="no-such-tree"):
        build_fleet.build_node(node, str(tmp_path / "out"))


def test_unknown_command_exits_127_naming_the_command_as_a_node_would(tmp_path):
    layout = build_fleet.build_node(os.path.join(SIM, "nodes", "dgx-a100-nv12.yml"), str(tmp_path))
    assert layout["tools"] == ["nvidia-smi"]
    # only tools with a recording get a wrapper: lspci is "not found" on this node
    assert sorted(os.listdir(layout["bin_dir"])) == ["nvidia-smi"]
    smi = os.path.join(layout["bin_dir"], "nvidia-smi")
    proc = subprocess.run([smi, "-q", "-x"], capture_output=True, text=True, check=False)
    assert proc.returncode == 127 and proc.stdout == ""
    # what an operator reads of a real tool that printed nothing; the simulation's file names stay out of reasons
    assert proc.stderr == "nvidia-smi: no output for `nvidia-smi -q -x`\n" and "dgx-a100-nv12.yml" not in proc.stderr
    proc = subprocess.run([smi, "topo", "-m"], capture_output=True, text=True, check=False)
    # the recording, byte for byte: GPU0 row of the gengwg DGX A100 matrix
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[1].startswith("GPU0\t X \tNV12\tNV12")


def test_recorded_exit_code_is_replayed(tmp_path):
    layout = build_fleet.build_node(os.path.join(SIM, "nodes", "azure-a100-nvlink-inactive.yml"), str(tmp_path))
    proc = subprocess.run([os.path.join(layout["bin_dir"], "ibstat")], capture_output=True, text=True, check=False)
    assert proc.returncode == 255 and "ibpanic" in proc.stdout and "CA 'mlx5_7'" in proc.stdout


def test_sysfs_tree_renders_and_empty_roots_otherwise(tmp_path):
    spark = build_fleet.build_node(os.path.join(SIM, "nodes", "dgx-spark-roce-2-down.yml"), str(tmp_path))
    assert spark["sysfs_root"] == os.path.join(str(tmp_path), "dgx-spark-roce-2-down", "sysfs")
    # tree.txt: rocep1s0f0 is the RDMA device of PCI 0000:01:00.0, driver mlx5_core
    device = os.path.join(spark["sysfs_root"], "devices", "pci0000:00", "0000:01:00.0")
    assert os.path.isdir(os.path.join(device, "infiniband", "rocep1s0f0"))
    assert os.path.basename(os.readlink(os.path.join(device, "driver"))) == "mlx5_core"
    assert os.listdir(spark["procfs_root"]) == []
    plain = build_fleet.build_node(os.path.join(SIM, "nodes", "dgx-a100-nv12.yml"), str(tmp_path))
    assert os.listdir(plain["sysfs_root"]) == [] and os.listdir(plain["procfs_root"]) == []


def test_host_tree_subdirs_become_sysfs_and_procfs(tmp_path):
    layout = build_fleet.build_node(os.path.join(SIM, "nodes", "hgx-h100-xid-peermem.yml"), str(tmp_path))
    # host-hgx-h100-xe9680/README.md: proc/sys/kernel/osrelease is 5.15.0-112-generic; GPU 19:00.0 has vendor 0x10de
    with open(os.path.join(layout["procfs_root"], "sys", "kernel", "osrelease"), encoding="utf-8") as handle:
        assert handle.read() == "5.15.0-112-generic\n"
    with open(os.path.join(layout["sysfs_root"], "bus", "pci", "devices", "0000:19:00.0", "vendor"), encoding="utf-8") as handle:
        assert handle.read() == "0x10de\n"
    assert not os.path.exists(os.path.join(layout["dir"], "sysfs.render"))


def test_rebuild_drops_stale_wrappers_and_refuses_foreign_dirs(tmp_path):
    node = _write(tmp_path / "n.yml", {"commands": {"ibstat": {"stdout": "tests/fixtures/ib/ibstat-mlx4-connectx3-fdr56-active.txt"}}})
    layout = build_fleet.build_node(node, str(tmp_path / "out"))
    assert os.listdir(layout["bin_dir"]) == ["ibstat"]
    _write(tmp_path / "n.yml", {"commands": {}})
    layout = build_fleet.build_node(node, str(tmp_path / "out"))
    assert os.listdir(layout["bin_dir"]) == []
    foreign = tmp_path / "out2" / "n"
    foreign.mkdir(parents=True)
    (foreign / "keep.txt").write_text("mine")
    with pytest.raises(build_fleet.FleetError, match="not built by build_fleet"):
        build_fleet.build_node(node, str(tmp_path / "out2"))
    assert (foreign / "keep.txt").read_text() == "mine"


def test_inventory_mode_builds_exactly_the_hosts_naming_a_node(tmp_path):
    inv_dir = tmp_path / "inv"
    (inv_dir / "host_vars").mkdir(parents=True)
    node = os.path.join(SIM, "nodes", "frontend-1g-copper.yml")
    _write(inv_dir / "hosts.yml", {"all": {
        "vars": {"ansible_connection": "local"},
        "hosts": {"plain": {"ansible_host": "198.18.0.9"}, "direct": {"gpufleet_sim_node": node}},
        "children": {"g": {"hosts": {"via-hostvars": None}}},
    }})
    _write(inv_dir / "host_vars" / "via-hostvars.yml", {"gpufleet_sim_node": "../n.yml"})
    _write(tmp_path / "n.yml", {"commands": {}})
    out = tmp_path / "out"
    (out / "stale").mkdir(parents=True)
    (out / "stale" / build_fleet.MARKER).write_text("old")
    (out / "not-ours").mkdir()
    proc = subprocess.run([sys.executable, os.path.join(HERE, "build_fleet.py"), "--inventory", str(inv_dir / "hosts.yml"), "--out", str(out)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(out)) == ["direct", "not-ours", "via-hostvars"]
    assert os.listdir(out / "direct" / "bin") == ["ethtool"]
    assert [line.split()[0] for line in proc.stdout.splitlines()] == ["direct", "via-hostvars"]


def test_simulated_inventory_builds_every_host():
    hosts = build_fleet.inventory_hosts(os.path.join(SIM, "hosts.yml"))
    assert len(hosts) >= 8
    for host, node_file in hosts.items():
        assert os.path.isfile(node_file), host
        node = build_fleet.check_node(node_file)
        assert node["description"].strip(), host
        # a node combining machines says so in both places
        assert node["composite"] == ("COMPOSITE" in node["description"]), host
        with open(os.path.join(SIM, "host_vars", host + ".yml"), encoding="utf-8") as handle:
            claim = yaml.safe_load(handle)["gpufleet_claim"]
        assert set(claim) == {"gpu_model", "gpu_count", "gpu_memory_gb", "interconnect", "nvlinks_per_pair", "nics", "price_per_node_hour"}
        assert claim["interconnect"] in ("nvswitch", "nvlink_bridge_pairs", "pcie"), host
        assert isinstance(claim["gpu_count"], int) and isinstance(claim["gpu_memory_gb"], int)
        for nic in claim["nics"]:
            assert set(nic) == {"role", "type", "count", "gbps"} and nic["role"] in ("compute", "storage", "frontend")
            assert nic["type"] in ("ib", "roce", "ethernet")


def test_bin_placeholder_and_present_tools(tmp_path):
    """A launcher's recorded command names the benchmark binary by its built path ({bin}); a tool only that launcher
    started on the node is present (the product's preflight finds it) but answers nothing on its own."""
    recording = "tests/fixtures/nccl/h100-2node-16rank-ndr-ib-allreduce-srun-prefix-validation0-issue290.txt"
    node = _write(tmp_path / "launcher.yml", {"commands": {
        "srun -l {bin}/all_reduce_perf -b 8M -g 1": {"stdout": recording, "rc": 0}}, "present": ["all_reduce_perf"]})
    layout = build_fleet.build_node(node, str(tmp_path / "out"))
    assert layout["tools"] == ["all_reduce_perf", "srun"]
    srun = os.path.join(layout["bin_dir"], "srun")
    binary = os.path.join(layout["bin_dir"], "all_reduce_perf")
    proc = subprocess.run([srun, "-l", binary, "-b", "8M", "-g", "1"], capture_output=True, text=True, check=False)
    # the recording's first line, as recorded (srun -l prefix ' 0: ')
    assert proc.returncode == 0 and proc.stdout.startswith(" 0: # nThread 1 nGpus 1 minBytes 8388608 maxBytes 8589934592")
    # the placeholder stands for this node's bin/ only, and literally nowhere else
    for argv in ([srun, "-l", "/elsewhere/all_reduce_perf", "-b", "8M", "-g", "1"], [srun, "-l", "{bin}/all_reduce_perf", "-b", "8M", "-g", "1"]):
        proc = subprocess.run(argv, capture_output=True, text=True, check=False)
        assert proc.returncode == 127 and proc.stdout == "" and "srun: no output for `srun -l " in proc.stderr
    proc = subprocess.run([binary, "-b", "8M", "-g", "1"], capture_output=True, text=True, check=False)
    assert proc.returncode == 127 and "`all_reduce_perf -b 8M -g 1`" in proc.stderr
    bad = _write(tmp_path / "bad.yml", {"commands": {}, "present": ["bin/srun"]})
    with pytest.raises(build_fleet.FleetError, match="present"):
        build_fleet.build_node(bad, str(tmp_path / "out"))


def _recorded(relative):
    path = build_fleet.recording_path(relative)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as handle:
        return handle.read()


NODE_FILES = sorted(glob.glob(os.path.join(SIM, "nodes", "*.yml")) + glob.glob(os.path.join(HERE, "nodes", "*.yml")))


@pytest.mark.parametrize("node_file", NODE_FILES, ids=lambda path: os.path.basename(path)[:-4])
def test_every_wrapper_answers_each_recorded_command_line_with_its_recording(tmp_path, node_file):
    # the shell fast path and replay_tool.py alike: stdout and stderr byte for byte from the recording files, the rc
    # the node file records, and a command line it lacks the 127 line
    layout = build_fleet.build_node(node_file, str(tmp_path))
    for command, entry in layout["node"]["commands"].items():
        argv = command.replace("{bin}", layout["bin_dir"]).split(" ")
        proc = subprocess.run([os.path.join(layout["bin_dir"], argv[0])] + argv[1:], capture_output=True, check=False)
        assert proc.returncode == int(entry.get("rc", 0)), command
        assert proc.stdout == (_recorded(entry["stdout"]) if entry.get("stdout") else b""), command
        assert proc.stderr == (_recorded(entry["stderr"]) if entry.get("stderr") else b""), command
    for tool in layout["tools"]:
        proc = subprocess.run([os.path.join(layout["bin_dir"], tool), "--no-such", "option"], capture_output=True,
                              check=False)
        assert (proc.returncode, proc.stdout) == (127, b""), tool
        assert proc.stderr.decode() == "%s: no output for `%s --no-such option`\n" % (tool, tool)


def test_a_plain_recording_is_answered_without_python_and_later_answers_by_replay_tool(tmp_path):
    node = _write(tmp_path / "n.yml", {"commands": {
        "ibstat": {"stdout": "tests/fixtures/ib/ibstat-mlx4-connectx3-fdr56-active.txt", "rc": 3},
        "ibstat -l": {"stderr": "tests/fixtures/ib/ibstat-mlx4-connectx3-fdr56-active.txt", "rc": 1},
        "nvidia-smi -q": {"stdout": "tests/fixtures/ib/ibstat-mlx4-connectx3-fdr56-active.txt",
                          "then": [{"rc": 5}]},
    }})
    layout = build_fleet.build_node(node, str(tmp_path / "out"))
    # no Python on PATH and none named: the shell answers ibstat's two command lines and its unknown ones
    env = {"PATH": "/usr/bin:/bin"}
    ibstat = os.path.join(layout["bin_dir"], "ibstat")
    with open(ibstat, "r", encoding="utf-8") as handle:
        assert "replay_tool.py" not in handle.read()
    proc = subprocess.run([ibstat], capture_output=True, check=False, env=env)
    assert proc.returncode == 3 and proc.stdout.startswith(b"CA 'mlx4_0'")
    proc = subprocess.run([ibstat, "-l"], capture_output=True, check=False, env=env)
    assert proc.returncode == 1 and proc.stdout == b"" and proc.stderr.startswith(b"CA 'mlx4_0'")
    # one empty argument is the command line "ibstat " (replay_tool.py's join), which the node file lacks
    proc = subprocess.run([ibstat, ""], capture_output=True, check=False, env=env)
    assert proc.returncode == 127 and proc.stderr == b"ibstat: no output for `ibstat `\n"
    # a command line with later answers is counted by replay_tool.py: the first call the entry, the second its then:
    smi = os.path.join(layout["bin_dir"], "nvidia-smi")
    first = subprocess.run([smi, "-q"], capture_output=True, check=False)
    second = subprocess.run([smi, "-q"], capture_output=True, check=False)
    assert (first.returncode, first.stdout[:12], second.returncode, second.stdout) == (0, b"CA 'mlx4_0'\n", 5, b"")
