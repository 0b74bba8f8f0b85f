# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small results directory built by hand for the report tests.

Facts are made by the real parsers from real recordings (tests/fixtures/, see SOURCES.md there);
check results and verdicts are written by hand, so every expected value in the tests follows from
what is written here:

- ``bravo``: REJECT (one fail). GPU facts of smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt with GPU3's
  VBIOS edited to ``96.00.99.00.01`` (SYNTHETIC edit); topology topo/mlengineering-8x-h100-nv18-...;
  claim price 20.0; an all_reduce_perf record parsed from
  nccl/azure-nd-h200-v5-8gpu-single-size-8G-allreduce.txt (8 ranks, 476.72 GB/s at 8 GiB) and a
  check ``benchmark.allreduce_single_node`` expecting 480 (so its bar is below its floor).
- ``delta``: UNREACHABLE.
- ``charlie``: ACCEPT WITH WARNINGS; topology topo/dgx-a100-nic0-9-nic-legend-no-gpu-numa-id.txt; no GPU facts.
- ``alpha``: ACCEPT; the same GPU facts (unedited) and topology as bravo; price 23.5; the same
  all_reduce_perf record; profile hgx-h100-8 (floor 460 GB/s from gpufleet/profiles/hgx-h100-8.yml).

Fixture ``multi_run`` adds two multi-node all-reduce runs (record envelopes by hand, ``parsed`` by the real parser):
nccl/h100-2node-16rank-ndr-ib-allreduce-srun-prefix-validation0-issue290.txt (16 ranks, 155.57 GB/s at 8 GiB) over
alpha + bravo, held by both host records, with a hand-written ``benchmarks.allreduce_multi`` fail against 440 GB/s on
each; nccl/h100-2node-16rank-ndr-ib-allreduce-RING-PARTIAL-issue290.txt (16 ranks, 89.90 GB/s at 8 GiB) recorded as a
run over charlie + alpha + bravo (SYNTHETIC host list) that no check judged.

Fixture ``views_run`` adds SYNTHETIC nodes (written by hand here) that give every fleet-wide view something to read:
an INCOMPLETE priced node, a gpu_compute record with a fleet-relative finding and a burn-in record with a finding, and
a node whose record has the wrong shapes.

Fixture ``hostile_run`` adds a SYNTHETIC hostile node: the recording smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt
with its first GPU's product name replaced (here, in the test) by markup and a script tag, parsed by the real
parser, under a hostname that carries markup too.
"""

from __future__ import annotations

import copy

import pytest

from gpufleet.facts.gpu import build_inventory
from gpufleet.parsers.registry import parse
from gpufleet.results.store import RunDir
from gpufleet.facts.topology import analyse_topology

H100_Q = "smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt"
H100_TOPO = "topo/mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt"
A100_TOPO = "topo/dgx-a100-nic0-9-nic-legend-no-gpu-numa-id.txt"
ALLREDUCE = "nccl/azure-nd-h200-v5-8gpu-single-size-8G-allreduce.txt"
EDITED_VBIOS = "96.00.99.00.01"
HOSTILE_GPU = '<script>alert("gpu")</script><img src=x onerror=alert(1)>*bold*|pipe'
HOSTILE_HOST = "node-<b>evil</b>&<script>alert('host')</script>"


def topology_facts(text):
    parsed = parse("topo", text)
    facts = dict(parsed)
    facts.update(analyse_topology(parsed))
    return facts


def gpu_facts(text):
    return build_inventory(text=parse("nvidia-smi-q", text))


def check(check_id, status, message, measured=None, expected=None, source=None, subject=None):
    return {"id": check_id, "status": status, "subject": subject, "measured": measured, "expected": expected,
            "threshold_source": source, "message": message}


def allreduce_record(text):
    return {"name": "all_reduce_perf", "command": ["all_reduce_perf", "-b", "8G", "-e", "8G", "-g", "8"], "environment": {"NCCL_ALGO": "Ring"},
            "message_size_bytes": 8589934592, "algorithm": "Ring", "raw_output_path": None, "parsed": parse("nccl", text),
            "started": "2026-01-31T12:00:00Z", "duration_s": 12.5}


def write_node(run, host, facts=None, checks=(), verdict="ACCEPT", claim=None, profile="hgx-h100-8", unreachable=None, benchmarks=()):
    record = run.new_host_record(host)
    record["facts"].update(facts or {})
    record.update({"claim": claim, "checks": list(checks), "failed": [item["id"] for item in checks if item["status"] == "fail"],
                   "verdict": verdict, "unreachable": unreachable, "profile": {"name": profile, "reason": "test"} if profile else None,
                   "benchmarks": list(benchmarks)})
    record["phases"] = {"facts": {"complete": unreachable is None, "finished": "2026-01-31T12:00:00Z"}}
    run.write_host(record)


def write_fleet(run, verdicts):
    counts = {name: 0 for name in ("ACCEPT", "ACCEPT WITH WARNINGS", "REJECT", "UNREACHABLE")}
    for verdict in verdicts.values():
        counts[verdict] += 1
    nodes = {host: {"verdict": verdict, "failed": [], "unreachable": None, "profile": None} for host, verdict in verdicts.items()}
    run.write_fleet({"fleet": {"verdict": "REJECT" if counts["REJECT"] else "ACCEPT", "counts": counts, "nodes": len(nodes)}, "nodes": nodes})


@pytest.fixture(name="small_run")
def small_run_fixture(tmp_path, fixture_text):
    """The path of the hand-built results directory described above."""
    run = RunDir.create(str(tmp_path / "run-small"), inventory=["hand-built"], playbook="test", hosts=["alpha", "bravo", "charlie", "delta"])
    h100 = gpu_facts(fixture_text(H100_Q))
    edited = copy.deepcopy(h100)
    edited["gpus"][3]["vbios_version"] = EDITED_VBIOS  # SYNTHETIC: one GPU's VBIOS changed by this test
    topo = topology_facts(fixture_text(H100_TOPO))
    bench = allreduce_record(fixture_text(ALLREDUCE))
    write_node(run, "alpha", facts={"gpu": h100, "topology": topo}, claim={"gpu_count": 8, "price_per_node_hour": 23.5},
               checks=[check("gpu.count", "pass", "8 GPUs, expected 8", 8, 8, "claim")], benchmarks=[bench])
    write_node(run, "bravo", facts={"gpu": edited, "topology": copy.deepcopy(topo)}, claim={"gpu_count": 8, "price_per_node_hour": 20.0},
               checks=[check("gpu.count", "pass", "8 GPUs, expected 8", 8, 8, "claim"),
                       check("benchmark.allreduce_single_node", "fail", "busbw 476.72 GB/s, expected >= 480", 476.72, 480.0, "claim"),
                       check("gpu.consistency", "warn", "GPU3 VBIOS differs", EDITED_VBIOS, "96.00.74.00.0D", "fleet majority", "GPU3")],
               verdict="REJECT", benchmarks=[bench])
    write_node(run, "charlie", facts={"topology": topology_facts(fixture_text(A100_TOPO))},
               checks=[check("host.memlock", "warn", "memlock 64 KiB, expected unlimited", 65536, "unlimited", "profile dgx-a100-8: x")],
               verdict="ACCEPT WITH WARNINGS", profile="dgx-a100-8")
    write_node(run, "delta", verdict="UNREACHABLE", unreachable="ssh: connect to host delta port 22: Connection refused", profile=None)
    write_fleet(run, {"alpha": "ACCEPT", "bravo": "REJECT", "charlie": "ACCEPT WITH WARNINGS", "delta": "UNREACHABLE"})
    return run.path


@pytest.fixture(name="hostile_run")
def hostile_run_fixture(small_run, fixture_text):
    """small_run plus the synthetic hostile node (REJECT, its GPU name in a check message, an ESC in another)."""
    text = fixture_text("smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt").replace("NVIDIA H100 80GB HBM3", HOSTILE_GPU, 1)
    facts = gpu_facts(text)
    assert facts["gpus"][0]["name"] == HOSTILE_GPU  # the parser kept the edited name as text
    run = RunDir.open(small_run)
    write_node(run, HOSTILE_HOST, facts={"gpu": facts}, verdict="REJECT", claim={"gpu_model": "NVIDIA H100 80GB HBM3"},
               checks=[check("gpu.model", "fail", "GPU0 is %s, expected NVIDIA H100 80GB HBM3" % HOSTILE_GPU, HOSTILE_GPU,
                             "NVIDIA H100 80GB HBM3", "claim", "GPU0"),
                       check("host.xid", "error", "kernel log line \x1b[31mred\x1b[0m \x00 broke the check"),
                       check("nvlink.errors", "skip", "not judged: <i>no</i> counters")])
    return small_run


MULTI_SRUN = "nccl/h100-2node-16rank-ndr-ib-allreduce-srun-prefix-validation0-issue290.txt"
MULTI_RING = "nccl/h100-2node-16rank-ndr-ib-allreduce-RING-PARTIAL-issue290.txt"


def multi_record(text, hosts, started):
    """A multi-node run as bench_run records it: the inventory hosts in ``hosts``, the recording's own in ``parsed``."""
    return {"name": "all_reduce_perf", "kind": "allreduce_multi", "hosts": list(hosts), "outcome": "ok",
            "message_size_bytes": None, "parsed": parse("nccl", text), "started": started, "repeat": 0}


@pytest.fixture(name="multi_run")
def multi_run_fixture(small_run, fixture_text):
    """small_run plus the two multi-node runs described above."""
    run = RunDir.open(small_run)
    records = run.host_records()
    judged = multi_record(fixture_text(MULTI_SRUN), ["alpha", "bravo"], "2026-01-31T12:10:00Z")
    unjudged = multi_record(fixture_text(MULTI_RING), ["charlie", "alpha", "bravo"], "2026-01-31T12:20:00Z")
    for host, runs in (("alpha", [judged, unjudged]), ("bravo", [judged])):
        record = records[host]
        record["benchmarks"] = list(record.get("benchmarks") or []) + copy.deepcopy(runs)
        message = "all_reduce_perf over alpha, bravo: busbw 155.57 GB/s at 8 GiB, below the two-node floor 440 GB/s"
        record["checks"].append(check("benchmarks.allreduce_multi", "fail", message, 155.57, 440.0,
                                      "docs/baselines.md 3b: two nodes 440 GB/s", "all_reduce_perf"))
        run.write_host(record)
    return small_run


def _compute_record(slow_gpu):
    """A gpu_compute record in the gpubench parser's shape: 2 GPUs, ``slow_gpu`` at 500 bf16 TFLOP/s, the other 700."""
    gpus = [{"index": index, "name": "NVIDIA H100 80GB HBM3", "bus_id": "00000000:%02X:00.0" % index,
             "gemm_tflops": {"bf16": 500.0 if index == slow_gpu else 700.0}, "hbm_gbs": {"copy": 2900.0}}
            for index in range(2)]
    return {"name": "gpubench", "kind": "gpu_compute", "parsed": {"tool": "gpubench", "gpus": gpus, "errors": []}}


def _add_node(run, host, **fields):
    record = run.new_host_record(host)
    record.update(fields)
    run.write_host(record)


@pytest.fixture(name="views_run")
def views_run_fixture(small_run):
    run = RunDir.open(small_run)
    claim = {"price_per_node_hour": 12.0, "gpu_count": 8}
    _add_node(run, "echo", verdict="INCOMPLETE", claim=claim,
              checks=[{"id": "gpu.count", "status": "pass", "message": "8 GPUs"},
                      {"id": "nvlink.errors", "status": "error", "message": "nvlink counters unreadable"}],
              coverage={"incomplete": ["benchmarks.allreduce_single: not run"], "items": [], "label": "x"})
    _add_node(run, "foxtrot", verdict="ACCEPT WITH WARNINGS", claim=claim, benchmarks=[_compute_record(1)],
              checks=[{"id": "benchmarks.gpu_compute.fleet", "status": "warn", "subject": "GPU1",
                      "message": "GPU1 bf16 500 TFLOP/s, 29 % under the fleet's median"},
                      {"id": "burn_in.temperature", "status": "fail", "gpu": {"index": 0}, "message": "GPU0 at 91 C"}],
              burn_in=[{"name": "burn-in", "samples_path": None, "load": {"tool": "gpubench"},
                        "gpus": [{"index": 0, "uuid": "GPU-0", "name": "NVIDIA H100 80GB HBM3"}]}])
    _add_node(run, "golf", verdict="REJECT", facts={"gpu": "not a mapping", "topology": ["a list"], "nic": None},
              checks=["a bare string", {"id": "host.xid", "status": "fail", "message": "Xid 79"}], coverage="broken")
    return small_run
