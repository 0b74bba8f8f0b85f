"""The quick gate a Slurm prolog runs (roles/slurm_gate/files/gpufleet_prolog_gate.py) against real tool outputs and
sysfs trees, and the baseline it compares with (gpufleet/results/gate_baseline.py).

Recordings (tests/fixtures/*/SOURCES.md): the all-fields `--query-gpu` CSV of a 1x H100 (bus 00000000:00:09.0, 0
uncorrectable), `nvlink -s` of an H100 (18 links at 26.562 GB/s), dmesg with Xid 79 then SXid 20034 (timestamps
6781741.5 and 6781753.4 s), the sysfs trees of a DGX Spark (RoCE port rocep1s0f0 DOWN, rocep1s0f1 ACTIVE) and an HGX
H100 (mlx5_0 port 1 ACTIVE at 400 Gb/sec) rendered by tests/fixtures/sysfs/render_tree.py.
"""

import importlib.machinery
import importlib.util
import json
import os
import sys

import pytest

from gpufleet.results.gate_baseline import SCHEMA, gate_baseline

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FIXTURES = os.path.join(REPO, "tests", "fixtures")
sys.path.insert(0, os.path.join(FIXTURES, "sysfs"))
import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position


def _gate():
    path = os.path.join(REPO, "roles", "slurm_gate", "files", "gpufleet_prolog_gate.py")
    loader = importlib.machinery.SourceFileLoader("gpufleet_prolog_gate", path)
    spec = importlib.util.spec_from_loader("gpufleet_prolog_gate", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


GATE = _gate()


def _read(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding="utf-8") as handle:
        return handle.read()


def test_gpus_read_by_the_csv_header_and_links_counted():
    gpus = GATE.parse_gpus(_read("smi", "exporter-capture-query-gpu-csv-allfields-h100-590.txt"))
    assert gpus == {"00000000:00:09.0": 0}
    assert GATE.parse_active_links(_read("smi", "exporter-capture-nvlink-s-h100-590-18links.txt")) == [18]
    inactive = GATE.parse_active_links(_read("smi", "azure-nvlink-status-a100-sxm4-80gb-all-inactive.txt"))
    assert inactive and set(inactive) == {0}
    with pytest.raises(GATE.GateError, match="no pci.bus_id header"):
        GATE.parse_gpus("No devices were found\n")


def test_xids_after_the_validation_only():
    text = _read("misc", "gpud-sxid-readme-dmesg-xid-79-then-sxid-20034-fatal-3-nvswitches.txt")
    assert GATE.xid_lines(text, 6781760.0) == []
    after_xid = GATE.xid_lines(text, 6781745.0)
    assert after_xid[0] == "SXid 20034 (PCI:0000:06:00.0)"
    assert not [line for line in after_xid if line.startswith("Xid")]
    assert GATE.xid_lines(text, 0.0)[0] == "Xid 79 (PCI:0000:91:00)"


def test_network_against_the_baseline(tmp_path):
    spark = render_tree.render(os.path.join(FIXTURES, "sysfs", "dgx-spark-roce"), str(tmp_path / "spark"))
    baseline = {"rdma_ports": [{"device": "rocep1s0f0", "port": 1, "rate_gbps": 200},
                               {"device": "rocep1s0f1", "port": 1, "rate_gbps": None}]}
    assert GATE.network_problems(baseline, {"sysfs_root": spark}) == ["rocep1s0f0/1 is DOWN"]
    hgx = render_tree.render(os.path.join(FIXTURES, "sysfs", "h100-ndr-ib"), str(tmp_path / "hgx"))
    assert GATE.network_problems({"rdma_ports": [{"device": "mlx5_0", "port": 1, "rate_gbps": 400}]},
                                 {"sysfs_root": hgx}) == []
    assert GATE.network_problems({"rdma_ports": [{"device": "mlx5_0", "port": 1, "rate_gbps": 800}]},
                                 {"sysfs_root": hgx}) == ["mlx5_0/1 at 400 Gb/s (was 800)"]
    copper = render_tree.render(os.path.join(FIXTURES, "sysfs", "node-exporter-1g-copper"), str(tmp_path / "cu"))
    assert GATE.network_problems({"interfaces": [{"name": "eth0", "speed_mbps": 10000}, {"name": "eth9"}]},
                                 {"sysfs_root": copper}) == ["eth0 at 1000 Mb/s (was 10000)", "eth9 is gone"]


def _tool(tmp_path, name, fixture, rc=0):
    """A stand-in for a node tool: prints a recording, as the replayed nodes do (tests/replay)."""
    path = tmp_path / name
    path.write_text("#!/bin/sh\ncat %s\nexit %d\n" % (os.path.join(FIXTURES, *fixture), rc))
    path.chmod(0o755)
    return str(path)


def test_the_program_passes_a_matching_node_and_drains_a_changed_one(tmp_path):
    record = {"host": "n1", "facts": {
        "gpu": {"gpus": [{"pci_bus_id": "00000000:00:09.0", "ecc_errors_volatile_uncorrectable": 0,
                          "nvlink": {"links": [{"link": i, "active": True} for i in range(18)]}}]},
        "host": {"uptime_s": 6781760.0}, "nic": None}}
    baseline = gate_baseline(record, "r1", "2026-12-06T00:00:00Z")
    assert baseline["schema"] == SCHEMA and baseline["gpus"][0]["nvlinks_active"] == 18
    assert baseline["interfaces"] is None and baseline["rdma_ports"] is None
    (tmp_path / "baseline.json").write_text(json.dumps(baseline))
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "uptime").write_text("6781800.00 100.00\n")
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\nif [ \"$1\" = nvlink ]; then cat %s; else cat %s; fi\n" % (
        os.path.join(FIXTURES, "smi", "exporter-capture-nvlink-s-h100-590-18links.txt"),
        os.path.join(FIXTURES, "smi", "exporter-capture-query-gpu-csv-allfields-h100-590.txt")))
    smi.chmod(0o755)
    scontrol = tmp_path / "scontrol"
    scontrol.write_text("#!/bin/sh\necho \"$@\" > %s\n" % (tmp_path / "drained"))
    scontrol.chmod(0o755)
    settings = {"nvidia_smi": str(smi), "scontrol": str(scontrol), "procfs_root": str(tmp_path / "proc"),
                "dmesg": _tool(tmp_path, "dmesg",
                               ("misc", "gpud-sxid-readme-dmesg-xid-79-then-sxid-20034-fatal-3-nvswitches.txt"))}
    (tmp_path / "gate.json").write_text(json.dumps(settings))
    argv = ["--baseline", str(tmp_path / "baseline.json"), "--settings", str(tmp_path / "gate.json")]
    assert GATE.main(argv) == 0 and not (tmp_path / "drained").exists()
    # the node rebooted (uptime now below the baseline's): the log's Xid 79 and SXids are new; one GPU more expected
    (tmp_path / "proc" / "uptime").write_text("120.00 100.00\n")
    baseline["gpus"].append({"bus_id": "00000000:00:0A.0", "nvlinks_active": None, "ecc_volatile_uncorrectable": 0})
    (tmp_path / "baseline.json").write_text(json.dumps(baseline))
    assert GATE.main(argv) == 1
    drained = (tmp_path / "drained").read_text()
    assert drained.startswith("update NodeName=")
    assert " State=DRAIN Reason=gpufleet: gate: GPU 00000000:00:0A.0 gone; " in drained
    assert "SXid 20034 (PCI:0000:05:00.0)" in drained and "Xid 79 (PCI:0000:91:00)" in drained


def test_a_group_the_validation_did_not_measure_is_not_checked(tmp_path):
    # a node judged on its NICs alone (no gpu, no host facts): no nvidia-smi and no dmesg is run
    baseline = {"gpus": None, "interfaces": [], "rdma_ports": None, "uptime_s": None}
    settings = {"nvidia_smi": str(tmp_path / "absent"), "dmesg": str(tmp_path / "absent")}
    assert GATE.check(baseline, settings) == []
    assert GATE.check(dict(baseline, uptime_s=10.0), settings)[0].startswith("`%s`: " % (tmp_path / "absent"))
