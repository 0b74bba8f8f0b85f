# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu_compute benchmark end to end: validate_cluster.yml at level standard, with the shipped ansible.cfg, on
replayed nodes (no GPU here). ONE run (a module-scoped fixture) holds both nodes below: what is judged is per node,
and the run's length is the NVML sampler's, which runs beside gpubench for the run's expected length
(playbooks/benchmark_tasks/gpu_compute.yml: 7 x gpufleet_gpubench_seconds + the sustained phase + 15 s, waited for in
full; 25 s here: level standard's 10 s sustained phase, the stand-in's runs for a sliver of it), so the second node
costs no extra wall time.

- hgx-8x-h100: tests/replay/nodes/gpu-h100-8x-535-fabric-throttle.yml (8x NVIDIA H100 80GB HBM3, driver 535.183.01,
  one recording of `nvidia-smi -q`). gpubench is the CPU TEST DOUBLE tests/standin/gpubench_standin.py, installed where
  roles/gpu_bench installs it (<prefix>/gpubench-<version>/bin/gpubench, the prefix inside the node's built directory)
  and recorded in the install manifest gpu_bench.json as the role writes it; no gpufleet_gpubench_path. Its GPUs are
  named by GPUBENCH_STANDIN_GPUS (8x NVIDIA H100 80GB HBM3 with the recording's bus ids, by which the checks match
  each GPU's NVML samples; the replayed nvidia-smi has no recording of the --query-gpu line it asks first); its
  nominal figures are bf16 700, fp16 700, fp8 1400, tf32 350, fp32 50 TFLOP/s, HBM copy 3000 and triad 3100 GB/s,
  a steady sustained BF16 phase of 700 (gpubench -s 10 at level standard; -f 0: no fast FP8 accumulation), and
  GPUBENCH_STANDIN_SCALE=2:0.5 halves GPU 2's. NVML is the fake
  libnvidia-ml.so (tests/fakenvml, a TEST DOUBLE) serving h100-535-8gpu-faults.data, values of the same recording:
  GPU 0 SM clock 345 MHz, GPU 2 1980 MHz and its SW power cap counter growing 0.25 s a read (SYNTHETIC there).
  Expected (gpufleet/profiles/gpu_peaks.yml, H100 SXM: bf16 989.4, fp8 1978.9, tf32 494.7, fp32 66.9 TFLOP/s, HBM
  3350 GB/s; floors 60 % GEMM, 65 % HBM): GPU 2's 350 / 350 / 700 / 175 / 25 TFLOP/s and 1500 / 1550 GB/s are each
  below its floor (593.6, 593.6, 1187.3, 296.8, 40.1, 2177.5), the other GPUs' above; so benchmarks.gpu_compute fails
  GPU2 seven times, quoting the power cap NVML saw, and the node is REJECTED. GPU 2 is also 50 % below the median of
  the 8 GPUs (700 TFLOP/s bf16, and its sustained mean 350 of 700), more than the fleet-relative rule's 10 %.
- della-h100-1gpu (inventories/simulated/nodes/, its claim from inventories/simulated/host_vars/; ACCEPT on its facts):
  no gpubench in its install manifest: INCOMPLETE, naming the gpu_compute item and the fix. It is asked for gpu_compute
  alone (gpufleet_benchmarks): benchmarks.allreduce_single judges a missing all_reduce_perf a failure, which would
  reject the node before the missing gpubench could show.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fakenvml"))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "standin"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position
import fakenvml  # noqa: E402  pylint: disable=import-error,wrong-import-position
from gpubench_install import install_gpubench_double  # noqa: E402  pylint: disable=import-error,wrong-import-position

BIN = os.path.dirname(sys.executable)
EIGHT_GPUS = os.path.join(REPO_ROOT, "tests", "replay", "nodes", "gpu-h100-8x-535-fabric-throttle.yml")
DELLA = os.path.join(REPO_ROOT, "inventories", "simulated", "nodes", "della-h100-1gpu.yml")
H100 = "NVIDIA H100 80GB HBM3"
# the PCI bus ids of the recording behind the replayed node and the fake NVML data (h100-535-8gpu-faults.data)
BUSES = ["00000000:%s:00.0" % bus for bus in ("53", "64", "75", "86", "97", "A8", "B9", "CA")]
NOMINAL = {"bf16": 700.0, "fp16": 700.0, "fp8": 1400.0, "tf32": 350.0, "fp32": 50.0}
HALF = {"bf16": 350.0, "fp16": 350.0, "fp8": 700.0, "tf32": 175.0, "fp32": 25.0}


def _replayed(tmp_path, node_file, name):
    layout = build_fleet.build_node(node_file, str(tmp_path / "fleet"), name=name)
    host = build_fleet.local_host_vars(layout)
    missing = os.path.join(layout["dir"], "not-installed")
    host.update({
        "gpufleet_gpu_nvlink": False,
        # the node's install manifest, in its built directory (never this machine's /var/lib/gpufleet)
        "gpufleet_manifest_dir": os.path.join(layout["dir"], "var", "lib", "gpufleet", "installed.d"),
        # no all-reduce or nvbandwidth binary on these nodes (never this machine's /opt/gpufleet or PATH)
        "gpufleet_all_reduce_perf_path": os.path.join(missing, "all_reduce_perf"),
        "gpufleet_nvbandwidth_path": os.path.join(missing, "nvbandwidth"),
        # the shortest run the task file allows: the sampler's 15 s margin is its floor (7 x 0.1 + 15 s, cut to 15)
        "gpufleet_gpubench_seconds": 0.1,
        "gpufleet_gpubench_sample_interval": 0.2,
    })
    return layout, host


def _validate(tmp_path, hosts, env_extra):
    inventory = tmp_path / "inventory.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}, sort_keys=False))
    results = tmp_path / "results"
    env = {key: value for key, value in os.environ.items() if not key.startswith(("ANSIBLE_", "GPUBENCH_STANDIN_"))}
    env.update(
        {
            "ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"),
            "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
            "ANSIBLE_REMOTE_TEMP": str(tmp_path / "ansible-remote"),
        }
    )
    env.update(env_extra)
    extra = {"gpufleet_results_dir": str(results), "gpufleet_level": "standard", "gpufleet_fail_on_verdict": False}
    cmd = [
        os.path.join(BIN, "ansible-playbook"),
        "-i",
        str(inventory),
        os.path.join(REPO_ROOT, "playbooks", "validate_cluster.yml"),
        "-e",
        json.dumps(extra),
    ]
    proc = subprocess.run(cmd, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    return results


def _json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture(name="validated", scope="module")
def validated_fixture(tmp_path_factory):
    """The one validate_cluster.yml run of both nodes:
    ``(results directory, {host: built node directory}, gpubench path)``.

    hgx-8x-h100 has the gpubench double in its install manifest and the fake NVML library; della-h100-1gpu has an
    empty install manifest and is asked for gpu_compute alone. The environment (fake NVML data, the double's GPUs
    and scale) is read only by the fake library and the double, which only hgx-8x-h100 loads and runs.
    """
    tmp_path = tmp_path_factory.mktemp("gpu-compute")
    library = fakenvml.build_once(tmp_path_factory)["full"]
    hgx_layout, hgx = _replayed(tmp_path, EIGHT_GPUS, "hgx-8x-h100")
    binary = install_gpubench_double(hgx_layout["dir"], hgx["gpufleet_manifest_dir"])
    hgx["gpufleet_nvml_library_path"] = library
    della_layout, della = _replayed(tmp_path, DELLA, "della-h100-1gpu")
    with open(
        os.path.join(REPO_ROOT, "inventories", "simulated", "host_vars", "della-h100-1gpu.yml"), encoding="utf-8"
    ) as handle:
        della.update(yaml.safe_load(handle))
    os.makedirs(della["gpufleet_manifest_dir"])  # provisioned with nothing: an empty install manifest
    della["gpufleet_benchmarks"] = ["gpu_compute"]
    results = _validate(tmp_path, {"hgx-8x-h100": hgx, "della-h100-1gpu": della}, {
        "FAKE_NVML_DATA": fakenvml.data_file("h100-535-8gpu-faults.data"),
        # the recording's bus ids (the fake NVML data's), so each GPU's samples are its own
        "GPUBENCH_STANDIN_GPUS": ";".join("%s@%s" % (H100, bus) for bus in BUSES),
        "GPUBENCH_STANDIN_SCALE": "2:0.5",
    })
    return results, {"hgx-8x-h100": hgx_layout["dir"], "della-h100-1gpu": della_layout["dir"]}, binary


def test_a_slow_gpu_of_eight_is_rejected_by_name_with_what_nvml_saw(validated):
    results, _dirs, binary = validated
    record = _json(results / "hosts" / "hgx-8x-h100.json")

    [bench] = [item for item in record["benchmarks"] if item.get("kind") == "gpu_compute"]
    assert (bench["name"], bench["outcome"], bench["rc"]) == ("gpubench", "ok", 0), bench
    # the binary the install manifest names, with the task's arguments
    # level standard: a 10 s sustained phase; FP8 without fast accumulation
    assert bench["command"] == [binary, "-n", "8192", "-t", "0.1", "-g", "bf16,fp16,fp8,tf32,fp32", "-s", "10",
                                "-f", "0"]
    parsed = bench["parsed"]
    assert (parsed["tool"], parsed["version"], parsed["errors"]) == ("gpubench", "1.1+cpu.standin", [])
    assert [gpu["index"] for gpu in parsed["gpus"]] == list(range(8))
    for gpu in parsed["gpus"]:
        slow = gpu["index"] == 2
        assert (gpu["name"], gpu["bus_id"], gpu["fast_accum"]) == (H100, BUSES[gpu["index"]], {"fp8": 0})
        assert gpu["gemm_tflops"] == (HALF if slow else NOMINAL), gpu
        assert gpu["hbm_gbs"] == ({"copy": 1500.0, "triad": 1550.0} if slow else {"copy": 3000.0, "triad": 3100.0}), gpu
        steady = 350.0 if slow else 700.0
        assert gpu["sustained"] == {"dtype": "bf16", "tflops": steady, "first": steady, "last": steady, "min": steady,
                                    "seconds": 10.0, "windows": 10}, gpu
    assert (
        (results / bench["raw_output_path"]).read_text(encoding="utf-8").startswith("gpubench version=1.1+cpu.standin ")
    )

    # the NVML samples of the run, per GPU (fake NVML: the recording's values)
    samples = {item["index"]: item for item in bench["samples"]}
    assert sorted(samples) == list(range(8))
    assert (
        samples[2]["uuid"] == "GPU-973565ff-45cf-12ea-4e91-33386720f7bb"
        and samples[2]["pci_bus_id"] == "00000000:75:00.0"
    )
    assert samples[0]["sm_clock_median_mhz"] == 345 and samples[2]["sm_clock_median_mhz"] == 1980
    assert all(item["samples"] >= 2 for item in samples.values()), samples
    power_cap = "clock_event_ns.sw_power_cap"
    assert samples[2]["counters_end"][power_cap] > samples[2]["counters_start"][power_cap]
    assert samples[0]["counters_end"][power_cap] == samples[0]["counters_start"][power_cap] == 0
    # and the sampler's whole file next to the run's output
    nvml_file = results / "raw" / "hgx-8x-h100" / "benchmarks" / "gpu_compute.nvml.jsonl"
    # the sampler ended at the stop file the task creates once gpubench has ended, not at the expected duration
    assert json.loads(nvml_file.read_text().splitlines()[-1])["reason"] == "stopped"

    # rejected by benchmarks.gpu_compute, naming GPU 2 for each of its seven figures, and only GPU 2
    assert record["verdict"] == "REJECT" and "benchmarks.gpu_compute" in record["failed"]
    failed = [item for item in record["checks"] if item["id"] == "benchmarks.gpu_compute" and item["status"] == "fail"]
    assert sorted(item["gpu"]["figure"] for item in failed) == [
        "bf16",
        "fp16",
        "fp32",
        "fp8",
        "hbm.copy",
        "hbm.triad",
        "tf32",
    ]
    assert {item["subject"] for item in failed} == {"GPU2"}
    [bf16] = [item for item in failed if item["gpu"]["figure"] == "bf16"]
    assert bf16["message"].startswith(
        "GPU2 (H100 SXM, 00000000:75:00.0) bf16 350 TFLOP/s is 35% of the published peak 989.4 TFLOP/s, "
        "below the floor 593.6 TFLOP/s (60% of peak); NVML during the run: power-capped "
    ), bf16["message"]
    assert re.search(r"power-capped \d+% of the run \(sw_power_cap", bf16["message"]), bf16["message"]
    assert (bf16["measured"], bf16["expected"]) == (350.0, 593.6)
    relative = [
        item
        for item in record["checks"]
        if item["id"] == "benchmarks.gpu_compute_relative" and item["status"] == "fail"
    ]
    assert relative and {item["subject"] for item in relative} == {"GPU2"}
    assert "sustained.bf16" in {item["gpu"]["figure"] for item in relative}


def test_a_node_without_gpubench_is_incomplete_naming_gpu_compute(validated):
    results, dirs, _binary = validated
    record = _json(results / "hosts" / "della-h100-1gpu.json")
    [bench] = [item for item in record["benchmarks"] if item.get("kind") == "gpu_compute"]
    assert bench["outcome"] == "missing_binary"
    # the default install path of this gpubench version (benchmark_tasks/installed.yml, roles/gpu_bench 1.1)
    assert re.match(r"gpubench is not on this node \(/opt/gpufleet/gpubench-1\.1/bin/gpubench", bench["reason"]), (
        bench["reason"])
    assert record["verdict"] == "INCOMPLETE"
    incomplete = record["coverage"]["incomplete"]
    [item] = [reason for reason in incomplete if reason.startswith("benchmark per-GPU compute and memory throughput: ")]
    assert "gpu_compute missing binary: gpubench is not on this node" in item
    assert "role gpu_bench builds it" in item
    assert not os.path.exists(os.path.join(dirs["della-h100-1gpu"], "opt"))
