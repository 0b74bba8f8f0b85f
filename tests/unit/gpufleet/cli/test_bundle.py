# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`gpufleet bundle`: the dispute bundle of a hand-built results directory (SYNTHETIC values): tar
listing, README text, unaltered copies, refused nodes, hostile node names."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tarfile

from gpufleet.cli import main as cli

_SPEC = importlib.util.spec_from_file_location("cli_results", os.path.join(os.path.dirname(__file__), "cli_results.py"))
cli_results = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(cli_results)
check, host_record, write_run = cli_results.check, cli_results.host_record, cli_results.write_run

TOPO = "\tGPU0\tGPU1\nGPU0\t X \tSYS\nGPU1\tSYS\t X \n"
GPU_FACTS = {"gpu_count": 2, "driver_version": "535.161.08", "cuda_version": "12.2", "gpus": [
    {"index": 0, "name": "NVIDIA H100 80GB HBM3", "serial": "1650124031592", "vbios_version": "96.00.74.00.0D", "uuid": "GPU-aaa",
     "pci_bus_id": "00000000:19:00.0"},
    {"index": 1, "name": "NVIDIA H100 80GB HBM3", "serial": "", "vbios_version": "96.00.74.00.0D", "uuid": "GPU-bbb", "pci_bus_id": "00000000:3B:00.0"}]}
HOST_FACTS = {"kernel": {"release": "5.15.0-105-generic"}, "versions": {"mpi": None, "nccl": "2.18.3", "ofed": "MLNX_OFED_LINUX-23.10-1.1.9.0"}}
RAW = {"topology": {"topo_m": {"path": "raw/bad-node/topology/topo_m.txt", "stderr_path": None, "cmd": ["/usr/bin/nvidia-smi", "topo", "-m"],
                               "rc": 0, "duration_s": 0.41, "error": None}},
       "nic": {"ibstat": {"path": None, "stderr_path": None, "cmd": ["/usr/sbin/ibstat"], "rc": None, "duration_s": 0.0, "error": "not_found"}}}
PAIR = check("topology.gpu_pairs", "fail", "GPU0-GPU1", "SYS", "NV18", "claim", "GPU0-GPU1: SYS, expected NV18")
XID = check("host.xid", "fail", None, {"48": 1}, 0, "NVIDIA Xid catalog, Resolution Bucket", "Xid 48 (double-bit ECC error (DBE)) x1 in the kernel log (dmesg)")
WARN = check("host.acs", "warn", None, "unknown", "disabled", "NCCL docs", "could not verify ACS")
HOSTILE = "evil/../../x\x1b[2J"
# docs/results-schema.md: outside [A-Za-z0-9._-] -> "_", then 8 hex digits of the name's SHA-1
HOSTILE_FILE = "evil_.._.._x__2J-" + hashlib.sha1(HOSTILE.encode("utf-8")).hexdigest()[:8]


def _run_dir(tmp_path):
    records = [
        host_record("bad-node", "REJECT", [check("gpu.count", "pass"), PAIR, WARN, XID], raw=RAW,
                    facts={"topology": None, "gpu": GPU_FACTS, "nic": None, "host": HOST_FACTS}, claim={"gpu_count": 2, "nvlinks_per_pair": 18}),
        host_record("good-node", "ACCEPT", [check("gpu.count", "pass")]),
        host_record("gone", "UNREACHABLE", unreachable="ssh: connect to host 10.9.9.9 port 22: Connection refused"),
        host_record(HOSTILE, "REJECT", [PAIR]),
    ]
    directory = write_run(tmp_path / "run1", records, file_names={HOSTILE: HOSTILE_FILE})
    raw = os.path.join(directory, "raw", "bad-node", "topology")
    os.makedirs(raw)
    with open(os.path.join(raw, "topo_m.txt"), "w", encoding="utf-8") as handle:
        handle.write(TOPO)
    os.symlink("/etc/passwd", os.path.join(raw, "passwd"))
    return directory


def _bundle(tmp_path, capsys, *nodes):
    out = str(tmp_path / "dispute.tar.gz")
    code = cli.main(["bundle", _run_dir(tmp_path)] + list(nodes) + ["--out", out])
    return code, out, capsys.readouterr()


def test_bundle_lists_every_piece_of_evidence(tmp_path, capsys):
    code, out, (stdout, _err) = _bundle(tmp_path, capsys, "bad-node", "gone")
    assert code == 0 and stdout.startswith("bundle: %s (9 files, 2 node(s): bad-node, gone)" % out)
    with tarfile.open(out) as tar:
        names = tar.getnames()
        assert names == [
            "gpufleet-dispute-run1/README.txt",
            "gpufleet-dispute-run1/run.json",
            "gpufleet-dispute-run1/bad-node/host.json",
            "gpufleet-dispute-run1/bad-node/failing_checks.json",
            "gpufleet-dispute-run1/bad-node/commands.txt",
            "gpufleet-dispute-run1/bad-node/raw/topology/topo_m.txt",  # the symlink beside it is not followed
            "gpufleet-dispute-run1/gone/host.json",
            "gpufleet-dispute-run1/gone/failing_checks.json",
            "gpufleet-dispute-run1/gone/commands.txt",
        ]
        assert all(member.isfile() for member in tar.getmembers())

        def read(name):
            return tar.extractfile("gpufleet-dispute-run1/" + name).read().decode("utf-8")

        assert read("bad-node/raw/topology/topo_m.txt") == TOPO
        with open(os.path.join(tmp_path, "run1", "hosts", "bad-node.json"), encoding="utf-8") as handle:
            assert read("bad-node/host.json") == handle.read()
        assert json.loads(read("run.json"))["gpufleet_version"] == "0.1.0"
        failing = json.loads(read("bad-node/failing_checks.json"))
        assert [(item["id"], item["measured"], item["expected"], item["threshold_source"]) for item in failing] == [
            ("topology.gpu_pairs", "SYS", "NV18", "claim"), ("host.xid", {"48": 1}, 0, "NVIDIA Xid catalog, Resolution Bucket")]
        commands = read("bad-node/commands.txt")
        assert ("[topology] topo_m\n  command:  /usr/bin/nvidia-smi topo -m\n  exit:     0\n  duration: 0.41 s\n"
                "  output:   raw/topology/topo_m.txt\n") in commands
        assert "[nic] ibstat\n  command:  /usr/sbin/ibstat\n  exit:     none (did not run: not_found)\n" in commands
        readme = read("README.txt")
    assert "Acceptance run run1: started 2026-01-31T12:00:00Z, finished 2026-01-31T12:00:09Z." in readme
    assert "Judged by gpufleet 0.1.0 (ansible-core 2.19.14)." in readme
    assert "Node bad-node: REJECT\n---------------------\n" in readme
    assert "GPUs: 2 x NVIDIA H100 80GB HBM3, driver 535.161.08, CUDA 12.2\n" in readme
    assert "  GPU0 serial 1650124031592, VBIOS 96.00.74.00.0D, UUID GPU-aaa, PCI 00000000:19:00.0\n" in readme
    assert "  GPU1 serial not reported, VBIOS 96.00.74.00.0D" in readme
    assert "Kernel 5.15.0-105-generic; mpi not found, nccl 2.18.3, ofed MLNX_OFED_LINUX-23.10-1.1.9.0\n" in readme
    assert ("Why it fails acceptance (2 failing checks):\n"
            "  1. GPU0-GPU1: SYS, expected NV18\n"
            "     check topology.gpu_pairs on GPU0-GPU1: measured SYS, expected NV18\n"
            "     threshold source: claim\n"
            "  2. Xid 48 (double-bit ECC error (DBE)) x1 in the kernel log (dmesg)\n"
            "     check host.xid: measured {\"48\": 1}, expected 0\n"
            "     threshold source: NVIDIA Xid catalog, Resolution Bucket\n") in readme
    assert "Also noted: 1 warning(s)" in readme
    assert "  commands.txt         the 2 command(s) and file(s) read on the node, with exit code and duration\n" in readme
    assert "Node gone: UNREACHABLE\n" in readme
    assert "The node could not be reached: ssh: connect to host 10.9.9.9 port 22: Connection refused\n" in readme
    assert "good-node" not in readme


def test_a_node_not_in_the_run_is_refused(tmp_path, capsys):
    code, out, (stdout, err) = _bundle(tmp_path, capsys, "bad-node", "nobody")
    assert code == 1 and stdout == "" and not os.path.exists(out)
    assert err.startswith("gpufleet bundle: refused: not in run run1: nobody (its nodes: ")


def test_node_names_cannot_leave_the_bundle_or_reach_the_terminal(tmp_path, capsys):
    code, out, (stdout, _err) = _bundle(tmp_path, capsys, HOSTILE)
    assert code == 0 and "\x1b" not in stdout
    with tarfile.open(out) as tar:
        names = tar.getnames()
        readme = tar.extractfile("gpufleet-dispute-run1/README.txt").read().decode("utf-8")
    assert names[2:] == ["gpufleet-dispute-run1/%s/%s" % (HOSTILE_FILE, name) for name in ("host.json", "failing_checks.json", "commands.txt")]
    assert all(".." not in name.split("/") for name in names)
    assert "\x1b" not in readme and "Node evil/../../x\\x1b[2J: REJECT" in readme
