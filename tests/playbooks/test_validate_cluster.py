# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""validate_cluster.yml end to end on replayed nodes: results directory, unreachable nodes, failed
fact groups, resuming, preflight refusals, and the installed collection run by its FQCN.

Nodes are the simulated fleet's node files (inventories/simulated/nodes/); expected values are read
by hand from the recordings they name:
- hgx-h100-nv18: topo = tests/fixtures/topo/mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt (NV18
  between all 28 pairs of 8 GPUs), -q = gpud 8x H100 driver 535.161.08; every fact group gathers.
- frontend-1g-copper: only `ethtool eth0` recorded (1000Mb/s); no nvidia-smi, so the GPU and topology
  groups fail ("nvidia-smi not found") and the node is rejected with facts.gpu and facts.topology.
- gone: SSH to 127.0.0.1 port 1 (nothing listens): UNREACHABLE.
- della-h100-1gpu (exit status tests): the claim and fact groups of inventories/simulated/host_vars/, at level quick;
  one H100 80GB HBM3 (gpud recording), PCIe as sold: ACCEPT (tests/playbooks/test_simulated_verdicts.py). Its run
  alone is tests/conftest.py's della_quick_validate_run, read by tests/playbooks/test_levels.py too.
"""

from __future__ import annotations

import glob
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest
import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIM_NODES = os.path.join(REPO_ROOT, "inventories", "simulated", "nodes")
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position

BIN = os.path.dirname(sys.executable)
TOPO_RECORDING = os.path.join(REPO_ROOT, "tests", "fixtures", "topo", "mlengineering-8x-h100-nv18-2numa-ht-no-legend.txt")
H100_CLAIM = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "gpu_memory_gb": 80, "interconnect": "nvswitch", "nvlinks_per_pair": 18,
              "nics": [{"role": "compute", "type": "ib", "count": 8, "gbps": 400}], "price_per_node_hour": 23.5, "rack": "rack-a"}

pytestmark = pytest.mark.skipif(not os.path.isdir(SIM_NODES), reason="inventories/simulated/nodes/ not present")


def _replayed(tmp_path, node):
    """Host vars of a replayed node: the tool paths and roots into its built wrappers and trees."""
    layout = build_fleet.build_node(os.path.join(SIM_NODES, node + ".yml"), str(tmp_path / "fleet"))
    tools = ("nvidia-smi", "lspci", "ethtool", "ibstat", "ibv_devinfo", "ip", "journalctl", "dmesg", "ofed_info", "mpirun", "ldconfig")
    host = {"gpufleet_%s_path" % tool.replace("-", "_"): os.path.join(layout["bin_dir"], tool) for tool in tools}
    host.update({
        "ansible_connection": "local",
        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
        "gpufleet_sysfs_root": layout["sysfs_root"],
        "gpufleet_procfs_root": layout["procfs_root"],
        "gpufleet_nccl_include_dirs": [os.path.join(layout["dir"], "include")],
        "gpufleet_gpu_query_formats": ["text"],
    })
    return host


def _unreachable():
    return {"ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1, "ansible_user": "nobody", "ansible_timeout": 5,
            "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes"}


def _inventory(tmp_path, hosts):
    path = tmp_path / "inventory.yml"
    path.write_text(yaml.safe_dump({"all": {"hosts": hosts}}, sort_keys=False))
    return str(path)


def _env(tmp_path, collections_path=None, config=None):
    env = dict(os.environ)
    env["ANSIBLE_CONFIG"] = config or os.path.join(REPO_ROOT, "ansible.cfg")
    env["ANSIBLE_COLLECTIONS_PATH"] = collections_path or os.path.join(REPO_ROOT, "collections")
    env["ANSIBLE_NOCOLOR"] = "1"
    env["ANSIBLE_HOST_KEY_CHECKING"] = "False"
    env["ANSIBLE_LOCAL_TEMP"] = str(tmp_path / "ansible-local")
    env["ANSIBLE_REMOTE_TEMP"] = str(tmp_path / "ansible-remote")
    return env


def _playbook(tmp_path, inventory, results_dir, playbook=None, env=None, extra=None):
    # level quick: these tests are about the facts phase, the results directory and the verdict; at the default level
    # (standard) the benchmarks would run too, on nodes that have none (tests/playbooks/test_levels.py covers that)
    extra_vars = {"gpufleet_results_dir": str(results_dir), "gpufleet_level": "quick"}
    extra_vars.update(extra or {})
    cmd = [os.path.join(BIN, "ansible-playbook"), "-i", inventory, playbook or os.path.join(REPO_ROOT, "playbooks", "validate_cluster.yml"),
           "-e", json.dumps(extra_vars)]
    return subprocess.run(cmd, cwd=str(tmp_path), env=env or _env(tmp_path), capture_output=True, text=True, timeout=300, check=False)


def _json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _three_hosts(tmp_path):
    return _inventory(tmp_path, {
        "hgx-h100-nv18": dict(_replayed(tmp_path, "hgx-h100-nv18"), gpufleet_claim=H100_CLAIM),
        "frontend-1g-copper": dict(_replayed(tmp_path, "frontend-1g-copper"),
                                   gpufleet_claim={"nics": [{"role": "frontend", "type": "ethernet", "count": 1, "gbps": 10}]}),
        "gone": dict(_unreachable(), gpufleet_claim=H100_CLAIM),
    })


def _assert_results(results):
    """What the schema says a finished run holds, with the values read from the recordings."""
    run = _json(results / "run.json")
    assert run["schema"] == "gpufleet.results/v1" and run["status"] == "finished" and run["finished"]
    assert run["hosts"] == ["hgx-h100-nv18", "frontend-1g-copper", "gone"]
    assert run["gpufleet_version"] == "0.1.0"
    assert sorted(run["profile_choices"]["selected"]) == ["frontend-1g-copper", "gone", "hgx-h100-nv18"]
    assert sorted(os.listdir(results / "hosts")) == ["frontend-1g-copper.json", "gone.json", "hgx-h100-nv18.json"]

    gone = _json(results / "hosts" / "gone.json")
    assert gone["schema"] == "gpufleet.results/v1" and gone["verdict"] == "UNREACHABLE"
    assert "port 1" in gone["unreachable"] and gone["checks"] == [] and gone["raw"] == {}
    assert gone["unreachable"].startswith("lost during facts (node_facts): "), gone["unreachable"]
    assert not os.path.exists(results / "raw" / "gone")

    front = _json(results / "hosts" / "frontend-1g-copper.json")
    assert front["verdict"] == "REJECT" and front["unreachable"] is None
    assert sorted(front["fact_errors"]) == ["gpu", "topology"]
    assert front["fact_errors"]["gpu"].endswith("nvidia-smi not found: is the NVIDIA driver installed?")
    assert {"facts.gpu", "facts.topology"} <= set(front["failed"])
    by_id = {item["id"]: item for item in front["checks"]}
    assert by_id["facts.gpu"]["status"] == "fail" and by_id["facts.gpu"]["subject"] == "gpu"
    assert "nvidia-smi not found" in by_id["facts.gpu"]["message"]
    # the NIC group still gathered: eth0 linked at 1000Mb/s (ethtool recording)
    eth0 = [item for item in front["facts"]["nic"]["interfaces"] if item["name"] == "eth0"][0]
    assert eth0["ethtool"]["link_detected"] is True
    assert front["raw"]["topology"]["topo_m"]["error"] == "not_found" and front["raw"]["topology"]["topo_m"]["path"] is None
    assert front["raw"]["nic"]["ethtool.eth0"]["cmd"][1:] == ["eth0"]

    healthy = _json(results / "hosts" / "hgx-h100-nv18.json")
    assert healthy["fact_errors"] == {} and not [name for name in healthy["failed"] if name.startswith("facts.")]
    assert healthy["verdict"] in ("ACCEPT", "ACCEPT WITH WARNINGS", "REJECT")
    assert healthy["phases"]["facts"]["complete"] is True and healthy["phases"]["checks"]["complete"] is True
    summary = healthy["facts"]["topology"]["summary"]
    assert (summary["gpu_count"], summary["pair_count"], summary["min_nvlinks"], summary["all_pairs_nvlink"]) == (8, 28, 18, True)
    assert healthy["facts"]["gpu"]["gpu_count"] == 8 and healthy["facts"]["gpu"]["driver_version"] == "535.161.08"
    assert healthy["claim"] == H100_CLAIM
    topo = healthy["raw"]["topology"]["topo_m"]
    assert topo["cmd"][1:] == ["topo", "-m"] and topo["rc"] == 0 and topo["error"] is None and topo["duration_s"] >= 0
    with open(TOPO_RECORDING, encoding="utf-8") as handle:
        assert (results / topo["path"]).read_text(encoding="utf-8") == handle.read()
    for group in ("topology", "gpu", "nic", "host"):
        for entry in healthy["raw"][group].values():
            for key in ("path", "stderr_path"):
                assert entry[key] is None or os.path.isfile(results / entry[key])

    fleet = _json(results / "fleet.json")
    assert fleet["schema"] == "gpufleet.results/v1" and fleet["verdict"] == "REJECT" and fleet["nodes"] == 3
    assert fleet["counts"]["UNREACHABLE"] == 1 and fleet["counts"]["REJECT"] >= 1
    assert fleet["node_verdicts"]["gone"]["verdict"] == "UNREACHABLE"
    assert fleet["node_verdicts"]["frontend-1g-copper"]["verdict"] == "REJECT"
    assert fleet["node_verdicts"]["hgx-h100-nv18"]["verdict"] == healthy["verdict"]


def _recap(stdout, host):
    """The PLAY RECAP counts of one host."""
    counts = r"\s+: ok=(\d+)\s+changed=\d+\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=\d+\s+rescued=\d+\s+ignored=(\d+)"
    found = re.search("^" + re.escape(host) + counts, stdout, re.M)
    assert found, stdout[-3000:]
    return dict(zip(("ok", "unreachable", "failed", "ignored"), (int(count) for count in found.groups())))


def test_unreachable_and_failed_groups_do_not_stop_the_fleet(tmp_path):
    results = tmp_path / "results" / "first"
    proc = _playbook(tmp_path, _three_hosts(tmp_path), results)
    # judged and reported, then the run fails: a node was unreachable and one rejected: 3, a REJECT first
    assert proc.returncode == 3, proc.stdout[-4000:] + proc.stderr[-4000:]
    _assert_results(results)
    assert os.path.isfile(results / "report.html") and os.path.isfile(results / "junit.xml")
    # the unreachable node is counted unreachable, not "ignored"; the rejected one failed by the last task
    assert _recap(proc.stdout, "gone")["unreachable"] == 1 and _recap(proc.stdout, "gone")["ignored"] == 0
    assert _recap(proc.stdout, "frontend-1g-copper")["failed"] == 1
    assert "not accepted: frontend-1g-copper: REJECT (profile " in proc.stdout
    assert "gone: UNREACHABLE - " in proc.stdout
    assert "frontend-1g-copper: REJECT (profile " in proc.stdout
    assert "fleet REJECT" in proc.stdout

    # a rerun on the same directory resumes: the two complete hosts are not gathered again, the unreachable one is retried
    before = _json(results / "hosts" / "hgx-h100-nv18.json")["phases"]["facts"]["finished"]
    again = _playbook(tmp_path, _three_hosts(tmp_path), results)
    assert again.returncode == 3, again.stdout[-4000:] + again.stderr[-4000:]
    assert "2 host(s) already complete, not gathered again" in again.stdout
    assert "skipping: [hgx-h100-nv18]" in again.stdout and "skipping: [frontend-1g-copper]" in again.stdout
    assert "fatal: [gone]: UNREACHABLE!" in again.stdout
    assert _json(results / "hosts" / "hgx-h100-nv18.json")["phases"]["facts"]["finished"] == before
    run = _json(results / "run.json")
    assert len(run["resumed"]) == 1 and run["status"] == "finished"
    _assert_results(results)


def test_every_node_unreachable_is_still_judged_and_reported(tmp_path):
    # Ansible ends a playbook after a play in which every host became unreachable: the controller in the fact and
    # judge plays keeps it going, so the only node is judged UNREACHABLE and the report is written
    results = tmp_path / "results" / "all-gone"
    proc = _playbook(tmp_path, _inventory(tmp_path, {"gone": dict(_unreachable(), gpufleet_claim=H100_CLAIM)}), results)
    assert proc.returncode == 4, proc.stdout[-4000:] + proc.stderr[-4000:]
    fleet = _json(results / "fleet.json")
    assert fleet["verdict"] == "UNREACHABLE" and fleet["nodes"] == 1 and fleet["counts"]["UNREACHABLE"] == 1
    assert fleet["node_verdicts"]["gone"]["verdict"] == "UNREACHABLE"
    assert _json(results / "hosts" / "gone.json")["verdict"] == "UNREACHABLE"
    for name in ("report.html", "report.md", "results.json", "junit.xml"):
        assert os.path.isfile(results / name), name
    assert "gone: UNREACHABLE - " in proc.stdout and "fleet UNREACHABLE" in proc.stdout
    assert _recap(proc.stdout, "gone")["unreachable"] == 1 and _recap(proc.stdout, "gone")["ignored"] == 0
    # the controller judged, it is no node of the fleet
    assert sorted(fleet["node_verdicts"]) == ["gone"] and _json(results / "run.json")["hosts"] == ["gone"]


@pytest.fixture(name="accepted_quick")
def accepted_quick_fixture(della_quick_validate_run):
    """One run of della-h100-1gpu alone at level quick (ACCEPT), shared by the tests that read it here and in
    tests/playbooks/test_levels.py (tests/conftest.py runs it once): its results directory and the finished run."""
    return pathlib.Path(della_quick_validate_run["results_dir"]), subprocess.CompletedProcess(
        [], della_quick_validate_run["rc"], della_quick_validate_run["stdout"], della_quick_validate_run["stderr"])


def test_level_quick_accept_is_labelled_static_checks_only(accepted_quick):
    results, proc = accepted_quick
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    node = _json(results / "fleet.json")["node_verdicts"]["della-h100-1gpu"]
    assert node["verdict"] == "ACCEPT" and node["coverage"]["level"] == "quick" and node["coverage"]["label"] == "static checks only"
    assert _json(results / "fleet.json")["label"] == "static checks only"
    assert "della-h100-1gpu: ACCEPT (profile " in proc.stdout and "; static checks only)" in proc.stdout
    assert "fleet ACCEPT (static checks only): 1 of 1 node acceptable; 1 ACCEPT" in proc.stdout
    assert "static checks only" in (results / "report.md").read_text(encoding="utf-8")
    assert 'id="fleet-label">static checks only<' in (results / "report.html").read_text(encoding="utf-8")
    assert _json(results / "results.json")["fleet"]["label"] == "static checks only"


def test_invalid_claim_or_profile_stops_before_anything_runs(tmp_path):
    inventory = _inventory(tmp_path, {
        "node-a": dict(_replayed(tmp_path, "hgx-h100-nv18"), gpufleet_claim=dict(H100_CLAIM, gpu_count="eight")),
        "node-b": dict(_replayed(tmp_path, "hgx-h100-nv18"), gpufleet_profile="hgx-h100-9"),
    })
    results = tmp_path / "results" / "refused"
    proc = _playbook(tmp_path, inventory, results)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert "node-a: gpufleet_claim.gpu_count: must be a whole number >= 0, got 'eight'" in output
    assert "node-b: gpufleet_profile: no profile named 'hgx-h100-9'" in output
    # nothing ran: no results directory, no fact task
    assert not results.exists()
    assert "Facts | GPU topology" not in proc.stdout


def test_installed_collection_runs_by_fqcn(tmp_path):
    """ansible-galaxy collection build + install elsewhere, then `ansible-playbook gpufleet.acceptance.validate_cluster`."""
    install_path = tmp_path / "installed"
    config = tmp_path / "ansible.cfg"
    # only the tmp install: neither this checkout's collections/ link nor the venv's sys.path may serve the collection
    config.write_text("[defaults]\ncollections_scan_sys_path = False\nretry_files_enabled = False\n")
    env = _env(tmp_path, collections_path=str(install_path), config=str(config))
    build = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "build", REPO_ROOT, "--output-path", str(tmp_path / "dist")],
                           cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert build.returncode == 0, build.stdout + build.stderr
    tarball = glob.glob(str(tmp_path / "dist" / "gpufleet-acceptance-*.tar.gz"))
    assert len(tarball) == 1
    install = subprocess.run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", tarball[0], "-p", str(install_path)],
                             cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=300, check=False)
    assert install.returncode == 0, install.stdout + install.stderr
    installed = install_path / "ansible_collections" / "gpufleet" / "acceptance"
    assert (installed / "playbooks" / "validate_cluster.yml").is_file()

    # the topology group alone (what is read of the node): the wiring of the installed copy, not every group again
    healthy_host = dict(_replayed(tmp_path, "hgx-h100-nv18"), gpufleet_claim=H100_CLAIM, gpufleet_fact_groups=["topology"])
    inventory = _inventory(tmp_path, {"hgx-h100-nv18": healthy_host, "gone": _unreachable()})
    results = tmp_path / "results" / "installed"
    proc = _playbook(tmp_path, inventory, results, playbook="gpufleet.acceptance.validate_cluster", env=env)
    assert proc.returncode == 4, proc.stdout[-4000:] + proc.stderr[-4000:]  # "gone" is unreachable
    run = _json(results / "run.json")
    # the playbook and the plugins that judged came from the installed copy, not from this checkout
    assert run["playbook"] == str(installed / "playbooks" / "validate_cluster.yml")
    assert run["gpufleet_path"] == str(installed) and run["gpufleet_version"] == "0.1.0"
    healthy = _json(results / "hosts" / "hgx-h100-nv18.json")
    assert healthy["fact_errors"] == {} and healthy["facts"]["topology"]["summary"]["min_nvlinks"] == 18
    assert _json(results / "hosts" / "gone.json")["verdict"] == "UNREACHABLE"
    assert _json(results / "fleet.json")["node_verdicts"]["gone"]["verdict"] == "UNREACHABLE"


def _simulated(tmp_path, node):
    """A replayed node with its claim and fact groups of inventories/simulated/host_vars/, at level quick (facts)."""
    with open(os.path.join(REPO_ROOT, "inventories", "simulated", "host_vars", node + ".yml"), encoding="utf-8") as handle:
        host_vars = yaml.safe_load(handle)
    return dict(_replayed(tmp_path, node), gpufleet_level="quick", **host_vars)


def test_exit_status_0_for_an_accepted_fleet(accepted_quick):
    results, proc = accepted_quick
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert _json(results / "fleet.json")["node_verdicts"]["della-h100-1gpu"]["verdict"] == "ACCEPT"
    assert _recap(proc.stdout, "della-h100-1gpu")["failed"] == 0
    assert "skipping: [della-h100-1gpu]" in proc.stdout.split("Verdict | fail the run for a node that is not accepted")[-1]


def test_a_rejected_node_fails_the_run_after_the_report_unless_switched_off(tmp_path):
    hosts = {"della-h100-1gpu": _simulated(tmp_path, "della-h100-1gpu"),
             "frontend-1g-copper": _simulated(tmp_path, "frontend-1g-copper")}
    results = tmp_path / "results" / "rejected"
    proc = _playbook(tmp_path, _inventory(tmp_path, hosts), results)
    assert proc.returncode == 3, proc.stdout[-4000:] + proc.stderr[-4000:]  # a REJECT (gpufleet/results/exit_codes.py)
    verdicts = _json(results / "fleet.json")["node_verdicts"]
    assert (verdicts["della-h100-1gpu"]["verdict"], verdicts["frontend-1g-copper"]["verdict"]) == ("ACCEPT", "REJECT")
    # the report was written before the run failed: the failing task comes after the report's
    assert os.path.isfile(results / "report.html") and os.path.isfile(results / "junit.xml")
    report_task = proc.stdout.index("Report | render the fleet acceptance report")
    assert report_task < proc.stdout.index("not accepted: frontend-1g-copper: REJECT")
    assert _recap(proc.stdout, "frontend-1g-copper")["failed"] == 1 and _recap(proc.stdout, "della-h100-1gpu")["failed"] == 0

    # switched off (a report-only run), with an unreachable node too: exit 0, the recap still counts it unreachable
    # (della-h100-1gpu left out: nothing of this run reads the accepted node)
    report_only_hosts = {"frontend-1g-copper": hosts["frontend-1g-copper"],
                         "gone": dict(_unreachable(), gpufleet_claim=H100_CLAIM)}
    report_only = tmp_path / "results" / "report-only"
    off = _playbook(tmp_path, _inventory(tmp_path, report_only_hosts), report_only,
                    extra={"gpufleet_fail_on_verdict": False})
    assert off.returncode == 0, off.stdout[-4000:] + off.stderr[-4000:]
    assert _json(report_only / "fleet.json")["node_verdicts"]["gone"]["verdict"] == "UNREACHABLE"
    assert os.path.isfile(report_only / "report.html")
    assert "not accepted:" not in off.stdout and "gone: UNREACHABLE - " in off.stdout
    gone = _recap(off.stdout, "gone")
    assert (gone["unreachable"], gone["failed"], gone["ignored"]) == (1, 0, 0)
    assert _recap(off.stdout, "frontend-1g-copper")["failed"] == 0


def test_the_last_task_fails_every_verdict_but_accept():
    """INCOMPLETE (or any verdict to come) fails the run as REJECT and UNREACHABLE do: the gate names what passes,
    ACCEPT and ACCEPT WITH WARNINGS, and comes last in the playbooks that judge, after their report. In burn_in.yml and
    health_check.yml it is a task of the judging play, followed only by the report-only switch; validate_cluster.yml
    runs it in a play of its own on the nodes not accepted (none for the others: no task per node to skip), after the
    judging play, which ends with the switch."""
    for name in ("validate_cluster.yml", "health_check.yml", "burn_in.yml"):
        with open(os.path.join(REPO_ROOT, "playbooks", name), encoding="utf-8") as handle:
            plays = yaml.safe_load(handle)
        tasks = plays[-1]["tasks"]
        tasks = tasks[-1]["block"] if "block" in tasks[-1] else tasks
        if name == "validate_cluster.yml":
            (gate,) = tasks
            assert gate["when"] == "gpufleet_fail_on_verdict | default(true) | bool"
            assert "rejectattr('value.verdict', 'in', ['ACCEPT', 'ACCEPT WITH WARNINGS'])" in plays[-1]["hosts"]
            tasks = plays[-3]["tasks"]
            switch = tasks[-1]
            tasks = tasks + [gate]  # the judging play's tasks, then the gate (for the report-before check below)
        else:
            gate, switch = tasks[-2], tasks[-1]
            assert gate["when"][0] == "gpufleet_fail_on_verdict | default(true) | bool"
            assert gate["when"][1].endswith(".nodes[inventory_hostname].verdict not in ['ACCEPT', 'ACCEPT WITH WARNINGS']"), name
        assert gate["name"] == "Verdict | fail the run for a node that is not accepted (gpufleet_fail_on_verdict)", name
        assert "ansible.builtin.fail" in gate
        assert switch["ansible.builtin.meta"] == "clear_host_errors"
        assert switch["when"] == "not (gpufleet_fail_on_verdict | default(true) | bool)"
        assert any("gpufleet.acceptance.report" in str(task) for task in tasks[:-2]), name


def test_an_unknown_gpufleet_variable_stops_before_any_fact(tmp_path):
    inventory = _inventory(tmp_path, {
        "node-a": dict(_replayed(tmp_path, "hgx-h100-nv18"), gpufleet_clam=H100_CLAIM),
        "node-b": dict(_replayed(tmp_path, "hgx-h100-nv18"), gpufleet_claim=H100_CLAIM, gpufleet_profle="hgx-h100"),
    })
    results = tmp_path / "results" / "refused"
    proc = _playbook(tmp_path, inventory, results)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert "node-a: gpufleet_clam is not a gpufleet variable: did you mean gpufleet_claim?" in output
    assert "node-b: gpufleet_profle is not a gpufleet variable: did you mean gpufleet_profile?" in output
    assert not results.exists()
    assert "Facts |" not in proc.stdout
