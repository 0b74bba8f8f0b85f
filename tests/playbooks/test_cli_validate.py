# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The `gpufleet` console script for real: validate (on ansible-runner), --retest-failed, report,
bundle and demo, on replayed nodes of the simulated fleet (inventories/simulated/nodes/).

Expected values, read by hand from the recordings the node files name:
- della-h100-1gpu with its claim (inventories/simulated/host_vars): `nvidia-smi -q` =
  tests/fixtures/smi/princeton-della-h100-nvidia-smi-a-text-545.txt, one NVIDIA H100 80GB HBM3 with 81559 MiB, and
  `topo -m` of one GPU: every item its claim requires (GPU model, count, memory; one PCIe GPU has no pair, no
  NVLink, and it is sold with no NIC) is measured by the topology and gpu checks, so at level quick (facts only) it
  is ACCEPTed: the healthy node of these tests.
- hgx-h100-nv18: topo = tests/fixtures/topo/mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt, NV18
  between all 28 pairs of 8 GPUs: with the topology checks only (gpufleet_check_families) its topology passes, but
  its NV18 NVSwitch claim also names the GPU model, count and memory, which the topology family never judges:
  INCOMPLETE (an ACCEPT means every required item was measured), exit status 3.
- sold-8x-nvlink-rtx4090-pcie: topo = tests/fixtures/topo/8x-rtx4090-pcie-all-SYS-2nic-no-legend.txt,
  every one of the 28 GPU pairs SYS while the claim says NVSwitch: REJECT, 28 x topology.gpu_pairs.
- gone: SSH to 127.0.0.1 port 1 (nothing listens): UNREACHABLE.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time

import pytest
import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIM_NODES = os.path.join(REPO_ROOT, "inventories", "simulated", "nodes")
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position

GPUFLEET = os.path.join(os.path.dirname(sys.executable), "gpufleet")
SOLD_TOPO = os.path.join(REPO_ROOT, "tests", "fixtures", "topo", "8x-rtx4090-pcie-all-SYS-2nic-no-legend.txt")
H100_CLAIM = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "gpu_memory_gb": 80, "interconnect": "nvswitch", "nvlinks_per_pair": 18}
SOLD_CLAIM = {"gpu_model": "NVIDIA GeForce RTX 4090", "gpu_count": 8, "gpu_memory_gb": 24, "interconnect": "nvswitch"}
with open(os.path.join(REPO_ROOT, "inventories", "simulated", "host_vars", "della-h100-1gpu.yml"), encoding="utf-8") as _handle:
    DELLA_CLAIM = yaml.safe_load(_handle)["gpufleet_claim"]
# The healthy runs: facts only (level quick, no benchmark: the replayed nodes have no binary) judged by the topology
# and gpu checks, which measure every item della-h100-1gpu's claim requires.
MEASURED = {"families": ["topology", "gpu"], "level": "quick"}
PAIRS = ["GPU%d-GPU%d" % (a, b) for a in range(8) for b in range(a + 1, 8)]

pytestmark = pytest.mark.skipif(not os.path.isdir(SIM_NODES) or not os.path.exists(GPUFLEET), reason="simulated nodes or the gpufleet script missing")


def _replayed(tmp_path, node, claim, fact_groups=("topology", "gpu")):
    layout = build_fleet.build_node(os.path.join(SIM_NODES, node + ".yml"), str(tmp_path / "fleet"))
    tools = ("nvidia-smi", "lspci", "ethtool", "ibstat", "ibv_devinfo", "ip", "journalctl", "dmesg", "ofed_info", "mpirun", "ldconfig")
    host = {"gpufleet_%s_path" % tool.replace("-", "_"): os.path.join(layout["bin_dir"], tool) for tool in tools}
    host.update({"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                 "gpufleet_sysfs_root": layout["sysfs_root"], "gpufleet_procfs_root": layout["procfs_root"],
                 "gpufleet_gpu_query_formats": ["text"], "gpufleet_fact_groups": list(fact_groups), "gpufleet_claim": claim})
    return host


def _gone():
    return {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_user": "nobody", "ansible_timeout": 5,
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes", "gpufleet_claim": H100_CLAIM}


def _inventory(tmp_path, name, hosts, families=("topology",), level=None):
    path = tmp_path / name
    # the topology family alone by default: the replayed nodes' other evidence is partial (see inventories/simulated/README.md)
    group_vars = {"gpufleet_check_families": list(families)}
    if level is not None:
        group_vars["gpufleet_level"] = level
    path.write_text(yaml.safe_dump({"all": {"vars": group_vars, "hosts": hosts}}, sort_keys=False))
    return str(path)


def _gpufleet(tmp_path, *args):
    env = dict(os.environ)
    for key in ("ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH"):
        env.pop(key, None)
    env.update({"ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
                "ANSIBLE_REMOTE_TEMP": str(tmp_path / "ansible-remote")})
    return subprocess.run([GPUFLEET] + list(args), cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)


def _json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _table(stdout):
    """{node: (verdict, reasons)} from the summary table, in its order."""
    lines = stdout.split("\n\n", 1)[0].splitlines()
    assert lines[0].split() == ["NODE", "VERDICT", "FIRST", "REASONS"]
    rows = []
    for line in lines[1:]:
        parts = line.split("  ")
        parts = [part.strip() for part in parts if part.strip()]
        rows.append((parts[0], parts[1], parts[2] if len(parts) > 2 else ""))
    return rows


def test_healthy_subset_exits_0_with_progress_per_phase(tmp_path):
    inventory = _inventory(tmp_path, "inv.yml", {"della-a": _replayed(tmp_path, "della-h100-1gpu", DELLA_CLAIM),
                                                 "della-b": _replayed(tmp_path, "della-h100-1gpu", DELLA_CLAIM),
                                                 "pcie-sold": _replayed(tmp_path, "sold-8x-nvlink-rtx4090-pcie", SOLD_CLAIM)}, **MEASURED)
    proc = _gpufleet(tmp_path, "validate", "-i", inventory, "--limit", "della-a,della-b", "--out", "healthy")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert _table(proc.stdout) == [("della-a", "ACCEPT", ""), ("della-b", "ACCEPT", "")]
    # level quick (MEASURED): an accepted fleet judged on facts alone is labelled so
    assert "\nfleet ACCEPT (static checks only): 2 ACCEPT\n" in proc.stdout
    results = tmp_path / "healthy"
    assert "results: %s\n" % results in proc.stdout
    assert sorted(_json(results / "run.json")["hosts"]) == ["della-a", "della-b"]
    progress = [line for line in proc.stderr.splitlines() if line.startswith("gpufleet validate: ")]
    # the fact task records each host itself: there is no separate Results phase
    for phase, task in (("Preflight", "create or reopen the results directory"), ("Facts", "every fact group, one module run per node"),
                        ("Verdict", "judge the whole fleet and write the verdicts")):
        assert "gpufleet validate: %s 2/2 hosts done: %s" % (phase, task) in progress, proc.stderr
    phases = [line.split()[2] for line in progress]
    assert phases.index("Preflight") < phases.index("Facts") < phases.index("Verdict") < phases.index("Report")


def test_a_node_judged_on_topology_only_is_incomplete_and_exits_3(tmp_path):
    # hgx-h100-nv18: its topology passes (NV18 on all 28 pairs), but its claim's GPU model, count and memory are never
    # judged by the topology family: not measured, so not ACCEPT; INCOMPLETE alone exits 3 (gpufleet/cli/common.py)
    inventory = _inventory(tmp_path, "inv.yml", {"h100-a": _replayed(tmp_path, "hgx-h100-nv18", H100_CLAIM)}, level="quick")
    proc = _gpufleet(tmp_path, "validate", "-i", inventory, "--out", "topology-only")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    (node, verdict, reasons), = _table(proc.stdout)
    assert (node, verdict) == ("h100-a", "INCOMPLETE")
    assert reasons.startswith("not verified: GPU model: no result from gpu.model: not run or not recorded"), reasons
    assert "\nfleet INCOMPLETE: 1 INCOMPLETE\n" in proc.stdout


def test_rejected_and_unreachable_exit_2_then_retest_report_and_bundle(tmp_path):
    # the healthy node is della-h100-1gpu (ACCEPTed: every item of its claim measured); pcie-sold is judged on its
    # topology alone (its gpu facts are not gathered, so the gpu checks skip and its failures are its 28 GPU pairs)
    healthy = _replayed(tmp_path, "della-h100-1gpu", DELLA_CLAIM)
    sold = _replayed(tmp_path, "sold-8x-nvlink-rtx4090-pcie", SOLD_CLAIM, fact_groups=["topology"])
    inventory = _inventory(tmp_path, "inv1.yml", {"della-a": healthy, "pcie-sold": sold, "gone": _gone()}, **MEASURED)
    first = _gpufleet(tmp_path, "validate", "-i", inventory, "--out", "first", "--forks", "3")
    # REJECT and UNREACHABLE exit 2 (gpufleet/cli/common.py exit_code_for)
    assert first.returncode == 2, first.stdout + first.stderr
    rows = _table(first.stdout)
    assert [row[:2] for row in rows] == [("pcie-sold", "REJECT"), ("gone", "UNREACHABLE"), ("della-a", "ACCEPT")]
    assert rows[0][2] == "GPU0-GPU1: SYS, expected NVLink; GPU0-GPU2: SYS, expected NVLink; and 26 more"
    assert "port 1" in rows[1][2]
    assert "fleet REJECT: 1 ACCEPT, 1 REJECT, 1 UNREACHABLE" in first.stdout

    # the seller fixed the network of "gone" (now reachable, a healthy node); pcie-sold is unchanged
    inventory = _inventory(tmp_path, "inv2.yml", {"della-a": healthy, "pcie-sold": sold, "gone": healthy}, **MEASURED)
    second = _gpufleet(tmp_path, "validate", "-i", inventory, "--retest-failed", "first", "--out", "second")
    assert second.returncode == 2, second.stdout + second.stderr
    assert "retesting 2 node(s) that failed in %s: gone, pcie-sold" % (tmp_path / "first") in second.stderr
    assert sorted(_json(tmp_path / "second" / "run.json")["hosts"]) == ["gone", "pcie-sold"]  # della-a was not run again
    assert [row[:2] for row in _table(second.stdout)] == [("pcie-sold", "REJECT"), ("gone", "ACCEPT")]
    assert "retest against first: 1 fixed, 1 still failing, 0 newly failing" in second.stdout
    diff = _json(tmp_path / "second" / "retest.json")
    assert (diff["fixed"], diff["still_failing"], diff["newly_failing"]) == (["gone"], ["pcie-sold"], [])
    assert diff["previous"] == {"path": str(tmp_path / "first"), "run_id": "first"}
    assert diff["nodes"]["gone"]["fixed_checks"][0]["id"] == "unreachable"
    still = diff["nodes"]["pcie-sold"]["still_failing_checks"]
    assert {item["id"] for item in still} == {"topology.gpu_pairs"} and sorted(item["subject"] for item in still) == PAIRS

    # report: render again from the directory alone
    os.unlink(tmp_path / "second" / "report.html")
    again = _gpufleet(tmp_path, "report", "second")
    assert again.returncode == 0, again.stdout + again.stderr
    assert again.stdout.endswith("report: %s\n" % (tmp_path / "second" / "report.html"))
    assert os.path.getsize(tmp_path / "second" / "report.html") > 0

    # bundle: the rejected node's evidence from the first run
    bundle = _gpufleet(tmp_path, "bundle", "first", "pcie-sold", "--out", "sold.tar.gz")
    assert bundle.returncode == 0, bundle.stdout + bundle.stderr
    with tarfile.open(tmp_path / "sold.tar.gz") as tar:
        names = tar.getnames()
        topo = tar.extractfile("gpufleet-dispute-first/pcie-sold/raw/topology/topo_m.txt").read().decode("utf-8")
        readme = tar.extractfile("gpufleet-dispute-first/README.txt").read().decode("utf-8")
    assert names[:5] == ["gpufleet-dispute-first/README.txt", "gpufleet-dispute-first/run.json", "gpufleet-dispute-first/pcie-sold/host.json",
                         "gpufleet-dispute-first/pcie-sold/failing_checks.json", "gpufleet-dispute-first/pcie-sold/commands.txt"]
    with open(SOLD_TOPO, encoding="utf-8") as handle:
        assert topo == handle.read()
    assert "Node pcie-sold: REJECT" in readme and "Why it fails acceptance (28 failing checks):" in readme
    assert "     check topology.gpu_pairs on GPU0-GPU1: measured SYS, expected NVLink\n" in readme
    refused = _gpufleet(tmp_path, "bundle", "first", "not-a-node")
    assert refused.returncode == 1 and "refused: not in run first: not-a-node" in refused.stderr


def test_the_run_itself_failing_exits_1(tmp_path):
    missing = _gpufleet(tmp_path, "validate", "-i", "nope.yml")
    assert missing.returncode == 1 and missing.stderr == "gpufleet validate: inventory nope.yml: no such file or directory\n"
    bad = _inventory(tmp_path, "bad.yml", {"h100-a": _replayed(tmp_path, "hgx-h100-nv18", dict(H100_CLAIM, gpu_count="eight"))})
    proc = _gpufleet(tmp_path, "validate", "-i", bad, "--out", "refused")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "the run failed" in proc.stderr
    assert "h100-a: gpufleet_claim.gpu_count: must be a whole number >= 0, got 'eight'" in proc.stderr
    assert proc.stdout == "" and not (tmp_path / "refused" / "fleet.json").exists()


def test_demo_runs_from_the_checkout(tmp_path):
    proc = _gpufleet(tmp_path, "demo", "--limit", "hgx-h100-nv18,frontend-1g-copper", "--out", "demo")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gpufleet demo: building the replayed fleet in %s" % os.path.join(REPO_ROOT, "tests", "output", "simulated") in proc.stderr
    rows = _table(proc.stdout)
    assert {row[0] for row in rows} == {"hgx-h100-nv18", "frontend-1g-copper"}
    # frontend-1g-copper: eth0 linked at 1000Mb/s (ethtool recording) on a port claimed 10G, no nvidia-smi recorded
    assert dict((row[0], row[1]) for row in rows)["frontend-1g-copper"] == "REJECT"
    assert "report: %s" % (tmp_path / "demo" / "report.html") in proc.stdout


# -- interrupted runs: Ctrl-C, then the printed resume command --------------------------------------------
# The run is held where the test interrupts it: in the Facts phase by a replayed nvidia-smi that waits while a
# flag file exists (its output is the recording's, unchanged), after the verdict by a test-only callback
# (pause_callback/pause_at_task.py) that holds ansible-playbook at the start of the task after the verdict.
# Expected verdicts, those of an uninterrupted run, judged on the topology family alone (-e gpufleet_check_families):
# pcie-sold REJECT (its 28 GPU pairs SYS, see the top of this file); h100-a INCOMPLETE: its topology passes (NV18
# on all 28 pairs) but its claim also names the GPU model, count and memory, which the topology family never judges.
EXPECTED = {"pcie-sold": "REJECT", "h100-a": "INCOMPLETE"}
PAUSE_CALLBACK_DIR = os.path.join(os.path.dirname(__file__), "pause_callback")
TOPOLOGY_ONLY = '{"gpufleet_check_families": ["topology"]}'


def _held_tool(tmp_path, host, path_var, flag):
    """``host`` with the tool of ``path_var`` wrapped: while ``flag`` exists, the wrapper creates ``flag``.started and
    waits 5 s before running the replayed tool (whose output is the recording's, unchanged)."""
    wrapper = tmp_path / ("held-" + os.path.basename(host[path_var]))
    wrapper.write_text('#!/bin/sh\nif [ -e "%s" ]; then : > "%s.started"; sleep 5; fi\nexec "%s" "$@"\n'
                       % (flag, flag, host[path_var]))
    wrapper.chmod(0o755)
    return dict(host, **{path_var: str(wrapper)})


def _held_nvidia_smi(tmp_path, host, flag):
    """``host`` with an nvidia-smi held while ``flag`` exists (``_held_tool``)."""
    return _held_tool(tmp_path, host, "gpufleet_nvidia_smi_path", flag)


def _interrupt_when(tmp_path, ready, args, env_extra=None):
    """Start ``gpufleet`` with ``args``, send it SIGINT (as Ctrl-C does: ansible-playbook runs in a session of
    its own) once ``ready()``, and return the finished process with its output."""
    env = dict(os.environ)
    for key in ("ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH"):
        env.pop(key, None)
    env.update({"ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
                "ANSIBLE_REMOTE_TEMP": str(tmp_path / "ansible-remote")}, **(env_extra or {}))
    proc = subprocess.Popen([GPUFLEET] + list(args), cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 240
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if proc.poll() is not None or not ready():
        proc.kill()
        stdout, stderr = proc.communicate(timeout=60)
        raise AssertionError("the run was not held where it is interrupted:\n" + stdout + stderr)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    return proc.returncode, stdout, stderr


def _ansible_playbooks_naming(text):
    """Running ansible-playbook processes whose command line holds ``text`` (none may outlive the CLI)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                argv = handle.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if any(os.path.basename(arg) == "ansible-playbook" for arg in argv[:2]) and any(text in arg for arg in argv):
            found.append(pid)
    return found


def _resume_line(stderr):
    lines = [line for line in stderr.splitlines() if line.startswith("gpufleet validate: resume with: ")]
    assert len(lines) == 1, stderr
    return shlex.split(lines[0][len("gpufleet validate: resume with: "):])


def test_ctrl_c_in_the_facts_phase_prints_the_command_that_resumes_it(tmp_path):
    flag = tmp_path / "hold-facts"
    flag.write_text("")
    inventory = _inventory(tmp_path, "inv.yml", {
        "h100-a": _held_nvidia_smi(tmp_path, _replayed(tmp_path, "hgx-h100-nv18", H100_CLAIM), flag),
        "pcie-sold": _replayed(tmp_path, "sold-8x-nvlink-rtx4090-pcie", SOLD_CLAIM)})
    # the check families come by -e alone (the inventory's own choice is taken out): no check of another family may show
    with open(inventory, encoding="utf-8") as handle:
        without_families = yaml.safe_load(handle)
    del without_families["all"]["vars"]
    with open(inventory, "w", encoding="utf-8") as handle:
        yaml.safe_dump(without_families, handle)
    args = ["validate", "-i", inventory, "--limit", "h100-a,pcie-sold", "--level", "quick", "-e", TOPOLOGY_ONLY,
            "--out", "run"]
    rc, stdout, stderr = _interrupt_when(tmp_path, (tmp_path / "hold-facts.started").exists, args)
    assert rc == 130, stdout + stderr
    assert stdout == ""
    assert "gpufleet validate: SIGINT: stopping ansible-playbook (waiting up to 30s for it to end)" in stderr
    assert ("gpufleet validate: interrupted (SIGINT) in the Facts phase, before the verdict: nothing was judged; "
            "what was gathered is kept in %s" % (tmp_path / "run")) in stderr
    resume = _resume_line(stderr)
    assert os.path.realpath(shutil.which(resume[0]) or resume[0]) == os.path.realpath(GPUFLEET)
    assert resume[1:] == ["validate", "-i", inventory, "--limit", "h100-a,pcie-sold", "--level", "quick",
                          "-e", TOPOLOGY_ONLY, "--out", str(tmp_path / "run")]
    assert not (tmp_path / "run" / "fleet.json").exists()
    assert _ansible_playbooks_naming(inventory) == []  # the CLI waited for ansible-playbook to end
    assert "it was killed" not in stderr  # it ended on the forwarded signal, within the grace time

    flag.unlink()
    resumed = _gpufleet(tmp_path, *resume[1:])
    assert resumed.returncode == 2, resumed.stdout + resumed.stderr
    assert "%s holds an earlier run: resuming it" % (tmp_path / "run") in resumed.stderr
    assert {row[0]: row[1] for row in _table(resumed.stdout)} == EXPECTED
    assert len(_json(tmp_path / "run" / "run.json")["resumed"]) == 1
    for host in EXPECTED:
        checks = _json(tmp_path / "run" / "hosts" / (host + ".json"))["checks"]
        assert checks and {item["id"].split(".")[0] for item in checks} == {"topology"}


def test_ctrl_c_after_the_verdict_reports_the_finished_run(tmp_path):
    marker = tmp_path / "held-after-verdict"
    inventory = _inventory(tmp_path, "inv.yml", {
        "h100-a": _replayed(tmp_path, "hgx-h100-nv18", H100_CLAIM),
        "pcie-sold": _replayed(tmp_path, "sold-8x-nvlink-rtx4090-pcie", SOLD_CLAIM)})
    hold = {"ANSIBLE_CALLBACK_PLUGINS": PAUSE_CALLBACK_DIR, "ANSIBLE_CALLBACKS_ENABLED": "pause_at_task",
            "GPUFLEET_TEST_PAUSE_TASK": "Verdict | one line per node", "GPUFLEET_TEST_PAUSE_MARKER": str(marker)}
    args = ["validate", "-i", inventory, "--level", "quick", "--out", "run"]
    rc, stdout, stderr = _interrupt_when(tmp_path, marker.exists, args, hold)
    assert rc == 2, stdout + stderr
    assert "gpufleet validate: interrupted (SIGINT) after the verdict was written: the run is complete" in stderr
    assert "nothing was judged" not in stderr and "resume with" not in stderr
    assert {row[0]: row[1] for row in _table(stdout)} == EXPECTED
    assert _json(tmp_path / "run" / "run.json")["status"] == "finished"
    # the playbook was stopped before its report (no "Report" progress line): the CLI rendered it
    assert "gpufleet validate: Report " not in stderr
    assert "report: %s\n" % (tmp_path / "run" / "report.html") in stdout
    assert os.path.getsize(tmp_path / "run" / "report.html") > 0
    assert _ansible_playbooks_naming(inventory) == [] and "it was killed" not in stderr


# -- Ctrl-C in the other phases, then the printed resume command: the verdicts and benchmark records of an
# uninterrupted run. hgx-h100-rdma-down (its claim, fact groups and single-node sweep from
# inventories/simulated/host_vars) runs its recorded single-node all-reduce (gpufleet_benchmarks: allreduce_single
# alone, one repeat); pcie-sold gathers its topology only and runs no benchmark. Judged by the topology, gpu,
# network and benchmarks families. Expected, read by hand (inventories/simulated/README.md):
# - h100-down REJECT: network.nic_speed (mlx5_2/1, mlx5_7/1, mlx5_8/1 Down at 40 on ports claimed 100 Gb/s),
#   gpu.throttle (GPU2 power-braked and thermally slowed), gpu.processes (GPU2 runs /usr/bin/python); one
#   allreduce_single record, outcome ok: `all_reduce_perf -b 128M -e 4G -f 2 -n 2 -g 8` answered by
#   nccl/h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt, busbw 473.60 GB/s at 4 GiB, above the floor 460.
# - pcie-sold REJECT: topology.gpu_pairs (its 28 GPU pairs SYS, sold as NVSwitch); no benchmark record.
RDMA_DOWN_HOST_VARS = os.path.join(REPO_ROOT, "inventories", "simulated", "host_vars", "hgx-h100-rdma-down.yml")
with open(RDMA_DOWN_HOST_VARS, encoding="utf-8") as _handle:
    RDMA_DOWN_VARS = yaml.safe_load(_handle)
# {host: (verdict, failing check ids, [(benchmark kind, outcome)] in record order)}
BENCH_EXPECTED = {
    "h100-down": ("REJECT", {"network.nic_speed", "gpu.throttle", "gpu.processes"}, [("allreduce_single", "ok")]),
    "pcie-sold": ("REJECT", {"topology.gpu_pairs"}, []),
}


def _benchmark_fleet(tmp_path, flag):
    """The inventory of h100-down (its all_reduce_perf held while ``flag`` exists) and pcie-sold."""
    down = _replayed(tmp_path, "hgx-h100-rdma-down", RDMA_DOWN_VARS["gpufleet_claim"],
                     fact_groups=RDMA_DOWN_VARS["gpufleet_fact_groups"])
    bin_dir = os.path.dirname(down["gpufleet_nvidia_smi_path"])
    down.update({"gpufleet_benchmarks": ["allreduce_single"], "gpufleet_benchmark_repeats": 1,
                 "gpufleet_allreduce_env": {}, "gpufleet_allreduce_sweep": RDMA_DOWN_VARS["gpufleet_allreduce_sweep"],
                 "gpufleet_all_reduce_perf_path": os.path.join(bin_dir, "all_reduce_perf"),
                 # no install manifest: the tool paths above are all there is
                 "gpufleet_manifest_dir": str(tmp_path / "no-manifest")})
    hosts = {"h100-down": _held_tool(tmp_path, down, "gpufleet_all_reduce_perf_path", flag),
             "pcie-sold": _replayed(tmp_path, "sold-8x-nvlink-rtx4090-pcie", SOLD_CLAIM, fact_groups=["topology"])}
    return _inventory(tmp_path, "inv.yml", hosts, families=("topology", "gpu", "network", "benchmarks"), level="quick")


@pytest.mark.parametrize("phase, held_at", [
    # held by the pause callback at the start of the task named, or (None) inside the running all_reduce_perf
    pytest.param("Preflight", "Preflight | create or reopen the results directory", id="preflight"),
    pytest.param("Benchmarks", None, id="benchmark-running"),
    pytest.param("Benchmarks", "Single node | no process of the runs survives", id="benchmark-recorded"),
    pytest.param("Report", "Report | render the fleet acceptance report", id="report"),
])
def test_ctrl_c_in_each_phase_then_resuming_gives_the_uninterrupted_verdicts(tmp_path, phase, held_at):
    flag, marker = tmp_path / "hold-benchmark", tmp_path / "held-at-task"
    inventory = _benchmark_fleet(tmp_path, flag)
    if held_at is None:
        flag.write_text("")
        ready, hold = (tmp_path / "hold-benchmark.started").exists, None
    else:
        ready = marker.exists
        hold = {"ANSIBLE_CALLBACK_PLUGINS": PAUSE_CALLBACK_DIR, "ANSIBLE_CALLBACKS_ENABLED": "pause_at_task",
                "GPUFLEET_TEST_PAUSE_TASK": held_at, "GPUFLEET_TEST_PAUSE_MARKER": str(marker)}
    args = ["validate", "-i", inventory, "--out", "run"]
    rc, stdout, stderr = _interrupt_when(tmp_path, ready, args, hold)
    assert _ansible_playbooks_naming(inventory) == [] and "it was killed" not in stderr
    if phase == "Report":
        # the verdicts were written: the run is finished, nothing to resume (the CLI renders the report)
        assert rc == 2, stdout + stderr
        assert "gpufleet validate: interrupted (SIGINT) after the verdict was written: the run is complete" in stderr
        assert "resume with" not in stderr
        final = stdout
    else:
        assert rc == 130 and stdout == "", stdout + stderr
        assert ("gpufleet validate: interrupted (SIGINT) in the %s phase, before the verdict: nothing was judged"
                % phase) in stderr
        assert not (tmp_path / "run" / "fleet.json").exists()
        resume = _resume_line(stderr)
        assert resume[1:] == ["validate", "-i", inventory, "--out", str(tmp_path / "run")]
        if flag.exists():
            flag.unlink()
        resumed = _gpufleet(tmp_path, *resume[1:])
        assert resumed.returncode == 2, resumed.stdout + resumed.stderr
        final = resumed.stdout
    assert {row[0]: row[1] for row in _table(final)} == {host: expected[0] for host, expected in BENCH_EXPECTED.items()}
    assert _json(tmp_path / "run" / "run.json")["status"] == "finished"
    for host, (verdict, failing, benchmarks) in BENCH_EXPECTED.items():
        record = _json(tmp_path / "run" / "hosts" / (host + ".json"))
        assert record["verdict"] == verdict
        assert {item["id"] for item in record["checks"] if item["status"] == "fail"} == failing
        # no benchmark run twice or lost: each recorded once, as in an uninterrupted run
        assert [(bench["kind"], bench["outcome"]) for bench in record["benchmarks"]] == benchmarks, record["benchmarks"]
    single, = [item for item in _json(tmp_path / "run" / "hosts" / "h100-down.json")["checks"] if item["id"] == "benchmarks.allreduce_single"]
    assert (single["status"], single["measured"], single["expected"]) == ("pass", 473.6, 460)
    assert os.path.getsize(tmp_path / "run" / "report.html") > 0
