# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gpufleet validate`` against faults of the controller side, on replayed nodes of the simulated fleet:
ansible-playbook killed with SIGKILL mid-run, and Ansible's host-key policy kept (ansible-runner would turn it off).
An inventory host named with a ``/`` is run in tests/playbooks/test_cli_validate.py, on the run its topology-only
test makes of the same node (one run, two tests).

Expected verdicts, by hand from the recordings (see tests/playbooks/test_cli_validate.py), at --level quick on the
topology family: hgx-h100-nv18 has NV18 between all 28 GPU pairs, as its NVSwitch claim says, but the claim also
names the GPU model, count and memory, which that family never judges: INCOMPLETE (exit 3);
sold-8x-nvlink-rtx4090-pcie has all 28 pairs SYS while its claim says NVSwitch: REJECT.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time

import pytest
import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SIM_NODES = os.path.join(REPO_ROOT, "inventories", "simulated", "nodes")
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position

from gpufleet.cli import validate  # noqa: E402  pylint: disable=wrong-import-position

GPUFLEET = os.path.join(os.path.dirname(sys.executable), "gpufleet")
H100_CLAIM = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "gpu_memory_gb": 80, "interconnect": "nvswitch", "nvlinks_per_pair": 18}
SOLD_CLAIM = {"gpu_model": "NVIDIA GeForce RTX 4090", "gpu_count": 8, "gpu_memory_gb": 24, "interconnect": "nvswitch"}

pytestmark = pytest.mark.skipif(not os.path.isdir(SIM_NODES) or not os.path.exists(GPUFLEET), reason="simulated nodes or the gpufleet script missing")


def _replayed(tmp_path, node, claim):
    layout = build_fleet.build_node(os.path.join(SIM_NODES, node + ".yml"), str(tmp_path / "fleet"))
    tools = ("nvidia-smi", "lspci", "ethtool", "ibstat", "ibv_devinfo", "ip", "journalctl", "dmesg", "ofed_info", "mpirun", "ldconfig")
    host = {"gpufleet_%s_path" % tool.replace("-", "_"): os.path.join(layout["bin_dir"], tool) for tool in tools}
    host.update({"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                 "gpufleet_sysfs_root": layout["sysfs_root"], "gpufleet_procfs_root": layout["procfs_root"],
                 "gpufleet_gpu_query_formats": ["text"], "gpufleet_fact_groups": ["topology", "gpu"], "gpufleet_claim": claim})
    return host


def _inventory(tmp_path, name, hosts):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"all": {"vars": {"gpufleet_check_families": ["topology"]}, "hosts": hosts}}, sort_keys=False))
    return str(path)


def _env(tmp_path):
    env = dict(os.environ)
    for key in ("ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH"):
        env.pop(key, None)
    env.update({"ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local"),
                "ANSIBLE_REMOTE_TEMP": str(tmp_path / "ansible-remote")})
    return env


def _gpufleet(tmp_path, *args):
    return subprocess.run([GPUFLEET] + list(args), cwd=str(tmp_path), env=_env(tmp_path), capture_output=True, text=True,
                          timeout=300, check=False)


def _rows(stdout):
    lines = stdout.split("\n\n", 1)[0].splitlines()[1:]
    return [tuple(part.strip() for part in line.split("  ") if part.strip())[:2] for line in lines]


def test_runner_keeps_ansibles_host_key_policy_and_fact_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("ANSIBLE_HOST_KEY_CHECKING", raising=False)
    monkeypatch.delenv("ANSIBLE_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    # no ansible.cfg here: Ansible's default, host keys checked (ansible-runner alone would pass False)
    assert validate.runner_env()["ANSIBLE_HOST_KEY_CHECKING"] == "True"
    # an ansible.cfg that turns it off is obeyed, as ansible-playbook obeys it
    (tmp_path / "ansible.cfg").write_text("[defaults]\nhost_key_checking = False\n")
    assert validate.runner_env()["ANSIBLE_HOST_KEY_CHECKING"] == "False"
    (tmp_path / "ansible.cfg").write_text("[defaults]\nhost_key_checking = True\n")
    assert validate.runner_env()["ANSIBLE_HOST_KEY_CHECKING"] == "True"
    # the user's environment is left to ansible-runner, which keeps it
    monkeypatch.setenv("ANSIBLE_HOST_KEY_CHECKING", "False")
    assert "ANSIBLE_HOST_KEY_CHECKING" not in validate.runner_env()
    kwargs = validate.runner_kwargs(str(tmp_path / "private"), ["inv.yml"], str(tmp_path / "run"))
    assert kwargs["fact_cache_type"] != "jsonfile"


def _held_nvidia_smi(tmp_path, host, flag):
    """``host`` with an nvidia-smi that, while ``flag`` exists, marks ``flag``.started and waits (at most 120 s)."""
    wrapper = tmp_path / "held-nvidia-smi"
    wrapper.write_text('#!/bin/sh\nif [ -e "%s" ]; then : > "%s.started"; n=0; while [ -e "%s" ] && [ $n -lt 600 ]; do sleep 0.2; n=$((n+1)); done; fi\n'
                       'exec "%s" "$@"\n' % (flag, flag, flag, host["gpufleet_nvidia_smi_path"]))
    wrapper.chmod(0o755)
    return dict(host, gpufleet_nvidia_smi_path=str(wrapper))


def _ansible_playbook_main(text):
    """The pid of the ansible-playbook process (not one of its forked workers) whose command line holds ``text``."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                argv = handle.read().decode("utf-8", "replace").split("\0")
            with open("/proc/%s/stat" % pid, encoding="utf-8") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if any(os.path.basename(arg) == "ansible-playbook" for arg in argv[:2]) and any(text in arg for arg in argv):
            found[int(pid)] = ppid
    mains = [pid for pid, ppid in found.items() if ppid not in found]
    return mains[0] if len(mains) == 1 else None


def test_sigkill_of_ansible_playbook_says_what_happened_and_what_is_kept_then_resumes(tmp_path):
    flag = tmp_path / "hold"
    flag.write_text("")
    inventory = _inventory(tmp_path, "inv.yml", {
        "h100-a": _held_nvidia_smi(tmp_path, _replayed(tmp_path, "hgx-h100-nv18", H100_CLAIM), flag),
        "pcie-sold": _replayed(tmp_path, "sold-8x-nvlink-rtx4090-pcie", SOLD_CLAIM)})
    run_dir = tmp_path / "run"
    proc = subprocess.Popen([GPUFLEET, "validate", "-i", inventory, "--level", "quick", "--out", "run"], cwd=str(tmp_path),
                            env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sold_record = run_dir / "hosts" / "pcie-sold.json"
    deadline = time.monotonic() + 240
    # held where h100-a's facts are being gathered, pcie-sold's already recorded (each host is recorded as it answers)
    while not ((tmp_path / "hold.started").exists() and sold_record.exists()) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    main = _ansible_playbook_main(inventory)
    if main is None or proc.poll() is not None:
        proc.kill()
        raise AssertionError("the run was not held where it is killed:\n" + "".join(proc.communicate(timeout=60)))
    os.kill(main, signal.SIGKILL)
    flag.unlink()  # the orphaned worker finishes its module
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stdout + stderr
    assert stdout == ""
    assert ("gpufleet validate: the run failed (ansible-playbook killed by signal 9 (SIGKILL), not stopped by gpufleet); "
            "nothing was judged") in stderr
    assert ("  on disk in %s: run.json (status running), host records of 1 of 2 host(s): pcie-sold, no fleet.json (nothing judged)"
            % run_dir) in stderr
    assert "exit None" not in stderr and "fatal:" not in stderr
    resume = [line for line in stderr.splitlines() if line.startswith("  resume with: ")]
    assert len(resume) == 1, stderr
    # nothing was lost: the printed command finishes the run with the verdicts of an uninterrupted one
    resumed = _gpufleet(tmp_path, *shlex.split(resume[0][len("  resume with: "):])[1:])
    assert resumed.returncode == 2, resumed.stdout + resumed.stderr
    assert dict(_rows(resumed.stdout)) == {"pcie-sold": "REJECT", "h100-a": "INCOMPLETE"}


def test_playbook_outcome_in_words():
    assert validate.playbook_outcome(-9, "failed") == "ansible-playbook killed by signal 9 (SIGKILL), not stopped by gpufleet"
    assert validate.playbook_outcome(2, "failed") == "ansible-playbook failed, exit 2"
    assert validate.playbook_outcome(None, "failed") == "ansible-playbook failed with no exit status (ended by a signal that could not be told)"
