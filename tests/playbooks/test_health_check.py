# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/health_check.yml on localhost into one SQLite history of three runs (no GPU here): the runs are made
once (a module-scoped fixture) and every test reads them. The first and third are ansible-playbook runs; the second,
the first one's node and data again, is the first run's results directory appended and judged in-process by the
Python the health_history and fleet_verdict actions run (gpufleet.history.store.append_run,
gpufleet.results.verdicts.judge_run): what it adds is the history logic (a second point at the same clock flags
nothing), and the two playbook runs around it prove the actions wired in (the third one's drift flag is read from
the SQLite history the three runs share).

The node is the replayed one-H100 node tests/replay/nodes/gpu-h100-590-1gpu.yml (its nvidia-smi -q and
nvlink -s are recordings of one capture); NVML is the fake libnvidia-ml.so (tests/fakenvml/fake_nvml.c,
a TEST DOUBLE compiled here) serving tests/fakenvml/h100-590-1gpu.data, values from the same capture:
SM clock 1980 MHz, 59 C, 629.45 W, every counter 0. The third run serves a SYNTHETIC copy of that data
file (written here) whose SM clock is 1500 MHz: 24% below the 1980 MHz median of the two runs before,
more than the history's 5% drift share, so that run flags that GPU's clock (burn_in.drift, warn).

The first run has no textfile-collector directory and does not ask for one: no file, and the run says
so. The third asks for it (gpufleet_textfile_create_dir) and the .prom file lands there.

Before the third run, provisioning "installs" gpubench (the CPU TEST DOUBLE tests/standin/gpubench_standin.py,
recorded in the node's install manifest as roles/gpu_bench does, tests/standin/gpubench_install.py): that run also
runs the short gpubench, whose figures become the throughput gauges of its .prom file. The first two runs find an
empty install manifest and run none. The gpubench run's length is the NVML sampler's beside it (7 x
gpufleet_health_gpubench_seconds + 15 s, playbooks/benchmark_tasks/gpu_compute.yml, waited for in full): 15 s here.

The recording has no NIC (its sysfs tree has no class/net), so the fact groups are gpu and host, and the
verdict is limited to the burn_in family (the capture was taken under gpu_burn load, which gpu.processes
would rightly fail): what is judged here is the history and its drift flag.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
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

from gpufleet.checks.verdict import Judge  # noqa: E402
from gpufleet.history.store import append_run  # noqa: E402
from gpufleet.results.store import RunDir  # noqa: E402
from gpufleet.results.verdicts import judge_run  # noqa: E402

BIN = os.path.dirname(sys.executable)
NODE = os.path.join(REPO_ROOT, "tests", "replay", "nodes", "gpu-h100-590-1gpu.yml")
UUID = "GPU-00000000-0000-0000-0000-000000000000"


def _inventory(tmp_path, library):
    layout = build_fleet.build_node(NODE, str(tmp_path / "fleet"))
    host = build_fleet.local_host_vars(layout)
    host.update({
        "gpufleet_gpu_nvlink": False,
        "gpufleet_nvml_library_path": library,
        "gpufleet_health_sample_seconds": 1,
        "gpufleet_health_sample_interval": 1,
        "gpufleet_history_db": str(tmp_path / "history" / "health.sqlite"),
        "gpufleet_textfile_dir": str(tmp_path / "node-exporter"),
        "gpufleet_health_fact_groups": ["gpu", "host"],
        "gpufleet_check_families": ["burn_in"],
        # the node's install manifest, in its built directory (never this machine's /var/lib/gpufleet)
        "gpufleet_manifest_dir": os.path.join(layout["dir"], "var", "lib", "gpufleet", "installed.d"),
        # the short gpubench of the third run: the shortest the task file allows, sampled every 0.5 s
        "gpufleet_health_gpubench_seconds": 0.1,
        "gpufleet_gpubench_sample_interval": 0.5,
    })
    os.makedirs(host["gpufleet_manifest_dir"])  # provisioned with nothing yet: an empty install manifest
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": {"gpu-node": host}}}, sort_keys=False))
    return str(path), layout["dir"], host["gpufleet_manifest_dir"]


def _run(tmp_path, inventory, results, data, env_extra=None, **extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO_ROOT, "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"), ANSIBLE_REMOTE_TEMP=str(tmp_path / "ansible-remote"),
               FAKE_NVML_DATA=data, **(env_extra or {}))
    extra_vars = dict({"gpufleet_results_dir": str(results)}, **extra)
    cmd = [os.path.join(BIN, "ansible-playbook"), "-i", inventory, os.path.join(REPO_ROOT, "playbooks", "health_check.yml"), "-e", json.dumps(extra_vars)]
    return subprocess.run(cmd, cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)


def _second_check_in_process(tmp_path, db):
    """run2: the first run's results directory again (same node, same data), appended to the history ``db`` and
    judged (burn_in family) as the playbook's health_history and fleet_verdict tasks do, without their verdict."""
    run2 = tmp_path / "run2"
    shutil.copytree(tmp_path / "run1", run2)
    run = RunDir.open(str(run2))
    run.update_run(run_id="run2")
    record = run.read_host("gpu-node")
    for judged in ("verdict", "checks", "failed"):  # judged again below, from run2's own history
        record.pop(judged, None)
    run.write_host(record)
    appended = append_run(run, db)
    assert (appended["run_id"], appended["rows"], appended["hosts"]) == ("run2", 1, ["gpu-node"])
    choices = {"gpu-node": {"claim": None, "profile": None, "overrides": None, "settings": {}}}
    judge_run(run, ["gpu-node"], {"gpu-node"}, choices, Judge(), families=["burn_in"])


def _json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture(name="history", scope="module")
def history_fixture(tmp_path_factory):
    """The three health checks into one history (the history needs three runs to show a trend; the second one
    in-process), gpubench installed before the third: ``{"root", "first", "textfile", "textfile_after_first",
    "binary"}``."""
    tmp_path = tmp_path_factory.mktemp("health-check")
    library = fakenvml.build_once(tmp_path_factory)["full"]  # one build per session, shared with the other modules
    inventory, node_dir, manifest_dir = _inventory(tmp_path, library)
    recorded = fakenvml.data_file("h100-590-1gpu.data")
    slower = tmp_path / "h100-590-1gpu-SYNTHETIC-sm-clock-1500.data"
    with open(recorded, encoding="utf-8") as handle:
        text = handle.read()
    assert "gpu 0 sm_clock 1980 " in text
    slower.write_text("# SYNTHETIC: h100-590-1gpu.data with its SM clock lowered to 1500 MHz (tests/playbooks/test_health_check.py)\n"
                      + text.replace("gpu 0 sm_clock 1980 ", "gpu 0 sm_clock 1500 "))
    textfile = tmp_path / "node-exporter" / "gpufleet.prom"

    first = _run(tmp_path, inventory, tmp_path / "run1", recorded)
    assert first.returncode == 0, first.stdout + first.stderr
    textfile_after_first = os.path.exists(textfile)
    _second_check_in_process(tmp_path, str(tmp_path / "history" / "health.sqlite"))
    binary = install_gpubench_double(node_dir, manifest_dir)  # provisioning installs gpubench between two checks
    third = _run(tmp_path, inventory, tmp_path / "run3", str(slower),
                 {"GPUBENCH_STANDIN_GPUS": "NVIDIA H100 80GB HBM3"}, gpufleet_textfile_create_dir=True)
    assert third.returncode == 0, third.stdout[-6000:] + third.stderr[-2000:]
    return {"root": tmp_path, "first": first, "textfile": textfile, "textfile_after_first": textfile_after_first,
            "binary": binary}


def test_three_health_checks_into_one_history(history):
    tmp_path, textfile = history["root"], history["textfile"]
    first = history["first"]
    assert "gpu-node: no Prometheus file written: %s does not exist" % (tmp_path / "node-exporter") in first.stdout
    assert not history["textfile_after_first"]

    # the same clock twice: nothing drifted, nothing flagged
    for name in ("run1", "run2"):
        assert _json(tmp_path / name / "history.json")["flags"] == []
        assert _json(tmp_path / name / "hosts" / "gpu-node.json")["verdict"] == "ACCEPT"

    run3 = tmp_path / "run3"
    history = _json(run3 / "history.json")
    assert history["runs"] == 3
    [series] = history["series"]["gpu-node"] if isinstance(history["series"]["gpu-node"], list) else [history["series"]["gpu-node"][UUID]]
    assert series["uuid"] == UUID
    assert [point["run_id"] for point in series["points"]] == ["run1", "run2", "run3"]
    assert [point["sm_clock_median_mhz"] for point in series["points"]] == [1980, 1980, 1500]
    [flag] = history["flags"]
    assert (flag["host"], flag["uuid"], flag["status"]) == ("gpu-node", UUID, "warn")

    record = _json(run3 / "hosts" / "gpu-node.json")
    [health] = record["burn_in"]
    assert health["kind"] == "health_check" and health["load"] is None and health["sampler"]["ticks"] == 2
    drift = [item for item in record["checks"] if item["id"] == "burn_in.drift"]
    assert len(drift) == 1 and drift[0]["status"] == "warn" and drift[0]["gpu"]["uuid"] == UUID
    assert record["verdict"] == "ACCEPT WITH WARNINGS" and record["failed"] == []
    # the report draws the GPU's trend over the three runs
    report = (run3 / "report.html").read_text(encoding="utf-8")
    assert 'aria-label="gpu-node: SM clock median (MHz), one point per run"' in report

    # the .prom file: the third run's figures, world-readable, for node_exporter
    assert stat.S_IMODE(os.stat(textfile).st_mode) == 0o644
    prom = textfile.read_text(encoding="utf-8")
    assert 'gpufleet_gpu_sm_clock_hertz{gpu="0",uuid="%s",name="NVIDIA H100 80GB HBM3"} 1500000000\n' % UUID in prom
    assert 'gpufleet_gpu_temperature_celsius{gpu="0",uuid="%s",name="NVIDIA H100 80GB HBM3"} 59\n' % UUID in prom


def test_the_health_check_runs_a_short_gpubench_and_its_figures_become_gauges(history):
    """gpubench (the CPU TEST DOUBLE, installed before the third run) on the one-H100 node: its nominal figures,
    bf16 700, fp16 700, fp8 1400, tf32 350, fp32 50 TFLOP/s, HBM copy 3000 and triad 3100 GB/s, become the throughput
    gauges in FLOP/s and bytes/s. The health check runs it for gpufleet_health_gpubench_seconds (0.1 s a test here);
    the NVML samples beside it are the third run's SYNTHETIC data (SM clock 1500 MHz)."""
    record = _json(history["root"] / "run3" / "hosts" / "gpu-node.json")
    [bench] = [item for item in record["benchmarks"] if item.get("kind") == "gpu_compute"]
    assert bench["outcome"] == "ok" and bench["command"][:5] == [history["binary"], "-n", "8192", "-t", "0.1"]
    assert bench["parsed"]["gpus"][0]["gemm_tflops"] == {"bf16": 700.0, "fp16": 700.0, "fp8": 1400.0, "tf32": 350.0, "fp32": 50.0}
    [summary] = bench["samples"]
    assert (summary["uuid"], summary["sm_clock_median_mhz"]) == (UUID, 1500)

    prom = history["textfile"].read_text(encoding="utf-8")
    labels = 'gpu="0",uuid="%s",name="NVIDIA H100 80GB HBM3"' % UUID
    for dtype, value in (("bf16", "700000000000000"), ("fp16", "700000000000000"), ("fp8", "1400000000000000.0"),
                         ("tf32", "350000000000000"), ("fp32", "50000000000000")):
        assert 'gpufleet_gpu_gemm_flops_per_second{%s,dtype="%s"} %s\n' % (labels, dtype, value) in prom, prom
    assert 'gpufleet_gpu_memory_bandwidth_bytes_per_second{%s,kernel="copy"} 3000000000000\n' % labels in prom
    assert 'gpufleet_gpu_memory_bandwidth_bytes_per_second{%s,kernel="triad"} 3100000000000\n' % labels in prom
