# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet-wide software versions on REAL gpu facts (``build_inventory`` on recorded ``nvidia-smi -q``).

Driver/CUDA versions are those the recordings print. No ``ldconfig -p``/``ofed_info``/``mpirun``
output was recorded: host versions are built by gpufleet.facts.host from SYNTHETIC tool lines, labelled.
"""

from __future__ import annotations

from gpufleet.facts import host as inv
from gpufleet.checks import engine
from gpufleet.checks import software
from gpufleet.checks.model import PASS, SKIP, WARN, NodeContext
from gpufleet.facts.gpu import build_inventory
from gpufleet.parsers.registry import parse

H100_161 = "smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt"  # driver 535.161.08, CUDA 12.2
H100_183 = "smi/gpud-nvidia-smi-q-text-8x-h100-535.183.01-fabric-completed-power-brake-swthermal-ACTIVE.txt"  # 535.183.01, CUDA 12.2
H100_545 = "smi/princeton-della-h100-nvidia-smi-a-text-545.txt"  # 545.23.08, CUDA 12.3


def gpu(fixture_text, path):
    return build_inventory(text=parse("nvidia-smi-q", fixture_text(path)))


def host_versions(nccl=None, ofed=None, mpi=None):
    """gpufleet_host with only ``versions`` (SYNTHETIC tool lines, the formats tests/unit/gpufleet/facts/test_host.py reads)."""
    libraries = [{"path": "/usr/lib/x86_64-linux-gnu/libnccl.so.2", "target": "libnccl.so.%s" % nccl}] if nccl else []
    return {"versions": {"nccl": inv.nccl_version(libraries, []), "ofed": inv.ofed_version(ofed), "mpi": inv.mpi_version(mpi)}}


def node(name, gpu_facts=None, host_facts=None, profile=None):
    return NodeContext(name, facts={"gpu": gpu_facts, "host": host_facts}, profile=profile or {"name": "hgx-h100-8gpu"})


def test_minority_driver_and_cuda_are_named_with_the_majority(fixture_text):
    nodes = [node("a", gpu(fixture_text, H100_161)), node("b", gpu(fixture_text, H100_161)), node("c", gpu(fixture_text, H100_545))]
    driver = software.judge_versions("software.driver", nodes)
    assert [(item["status"], item["measured"], item["expected"]) for item in driver["c"]] == [(WARN, "545.23.08", "535.161.08")]
    assert driver["c"][0]["message"] == "NVIDIA driver 545.23.08, fleet majority 535.161.08 (2 of 3 nodes of profile hgx-h100-8gpu)"
    assert [item["status"] for item in driver["a"] + driver["b"]] == [PASS, PASS]
    cuda = software.judge_versions("software.cuda", nodes)
    assert [(item["status"], item["measured"], item["expected"]) for item in cuda["c"]] == [(WARN, "12.3", "12.2")]


def test_missing_package_on_one_node_and_absent_everywhere():
    # SYNTHETIC versions: NCCL 2.18.3 on two nodes, none found on the third; MPI on none.
    nodes = [node("a", host_facts=host_versions(nccl="2.18.3")), node("b", host_facts=host_versions(nccl="2.18.3")),
             node("c", host_facts=host_versions())]
    nccl = software.judge_versions("software.nccl", nodes)
    assert [(item["status"], item["measured"], item["expected"]) for item in nccl["c"]] == [(WARN, None, "2.18.3")]
    assert nccl["c"][0]["message"].startswith("NCCL not found on this node; fleet majority 2.18.3")
    mpi = software.judge_versions("software.mpi", nodes)
    assert {item["status"] for name in "abc" for item in mpi[name]} == {SKIP}


def test_split_fleet_and_single_node(fixture_text):
    nodes = [node("a", gpu(fixture_text, H100_161)), node("b", gpu(fixture_text, H100_183))]
    driver = software.judge_versions("software.driver", nodes)
    assert [(item["status"], item["expected"]) for item in driver["a"]] == [(WARN, ["535.161.08", "535.183.01"])]
    alone = software.judge_versions("software.driver", [node("a", gpu(fixture_text, H100_161))])
    assert [(item["status"], item["measured"]) for item in alone["a"]] == [(SKIP, "535.161.08")]


def test_cohorts_keep_different_systems_apart(fixture_text):
    # An RTX 4090 box held against another profile is not compared with the H100s.
    rtx = node("rtx", gpu(fixture_text, "smi/gpud-nvidia-smi-q-8x-rtx4090-535.154.05.txt"), profile={"name": "rtx4090-8gpu"})
    nodes = [node("a", gpu(fixture_text, H100_161)), node("b", gpu(fixture_text, H100_161)), rtx]
    driver = software.judge_versions("software.driver", nodes)
    assert [item["status"] for item in driver["rtx"]] == [SKIP]
    assert [item["status"] for item in driver["a"]] == [PASS]


def test_engine_runs_the_software_family(fixture_text):
    ofed = "MLNX_OFED_LINUX-23.10-1.1.9.0:\n"  # SYNTHETIC line; the release named in tests/fixtures/ib/SOURCES.md
    nodes = [node("a", gpu(fixture_text, H100_161), host_versions(ofed=ofed)), node("b", gpu(fixture_text, H100_161), host_versions(ofed=ofed)),
             node("c", gpu(fixture_text, H100_183), host_versions(ofed="MLNX_OFED_LINUX-5.8-1.0.1.1:\n"))]
    report = engine.run_checks(nodes, families=["software"])
    warned = [(item["id"], item["measured"]) for item in report["nodes"]["c"]["checks"] if item["status"] == WARN]
    assert warned == [("software.driver", "535.183.01"), ("software.ofed", "MLNX_OFED_LINUX-5.8-1.0.1.1")]
    assert not [item for item in report["nodes"]["a"]["checks"] if item["status"] in (WARN, "fail")]
