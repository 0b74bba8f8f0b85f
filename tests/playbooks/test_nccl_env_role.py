# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl_env role end to end: facts of replayed nodes -> derive once -> files written per host.

Hosts ib-a and ib-b replay tests/replay/nodes/nic-h100-ndr-ib.yml (ibstat
ib/gpud-ibstat-h100-8x-ndr400-ib-plus-bf3-bond-roce200-SPACES.txt: mlx5_0, 1, 4-9 Active 400
InfiniBand, mlx5_bond_0 Active 200 Ethernet; synthetic sysfs tree tests/fixtures/sysfs/h100-ndr-ib:
IPoIB ibp26s0 ... ibp220s0 up at 400000 Mb/s, enp1s0f0 up at 1000, enp1s0f1 down, no `ip`
recording). Expected values are read by hand from those files.

One converge of ib-a and ib-b, the second converge that changes nothing, and one --check --diff run are made once (a
module-scoped fixture) and read by the tests. ib-a (a site line in its nccl.conf already) and ib-b (no file yet) are
the first converge's two scenarios; the second converge and the check run need one converged node each, ib-a (each
host is ~2 CPU-s of module runs: a host that repeats another's scenario buys nothing). The check run holds a second
host, ib-fresh (the same node file), that has no files yet: check mode on a fresh node and on a converged one, in one
run. The refused override fails the run before any node is written: one host shows it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs"))

import render_tree  # noqa: E402  pylint: disable=import-error,wrong-import-position

sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "tools"))
from ansible_output import changed_tasks, recap  # noqa: E402  pylint: disable=import-error,wrong-import-position

H100_RAILS = "=mlx5_0:1,mlx5_1:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1,mlx5_8:1,mlx5_9:1"
EXPECTED_LINES = ["NCCL_IB_DISABLE=0", "NCCL_IB_HCA=" + H100_RAILS, "NCCL_SOCKET_IFNAME==ibp26s0"]


NODE_FILE = os.path.join(REPO_ROOT, "tests", "replay", "nodes", "nic-h100-ndr-ib.yml")
WRITES = ["Write | env file for the launcher (mpirun -x / srun --export)",
          "Write | managed block in the NCCL configuration file"]
DIRS = "Write | directories of the two files"


def _hosts(tmp_path, names=("ib-a", "ib-b")):
    root = render_tree.render(os.path.join(REPO_ROOT, "tests", "fixtures", "sysfs", "h100-ndr-ib"), str(tmp_path / "sysfs-h100"))
    return {name: {"node_file": NODE_FILE, "vars": {"replay_sysfs": root}} for name in names}


def _tasks(tmp_path, role_vars=None):
    role_vars = dict(role_vars or {})
    role_vars.setdefault("nccl_env_conf_path", str(tmp_path / "etc" / "{{ inventory_hostname }}" / "nccl.conf"))
    role_vars.setdefault("nccl_env_env_file", str(tmp_path / "etc" / "{{ inventory_hostname }}" / "gpufleet" / "nccl.env"))
    role_vars.setdefault("nccl_env_become", False)
    return [
        {"name": "Facts", "ansible.builtin.include_role": {"name": "gpufleet.acceptance.facts"},
         "vars": {"gpufleet_fact_groups": ["nic"], "gpufleet_sysfs_root": "{{ replay_sysfs }}", "gpufleet_ibstat_path": "{{ replay_bin }}/ibstat",
                  "gpufleet_ethtool_path": "{{ replay_bin }}/ethtool", "gpufleet_ibv_devinfo_path": "{{ replay_bin }}/ibv_devinfo",
                  "gpufleet_ip_path": "{{ replay_bin }}/ip"}},
        {"name": "NCCL env", "ansible.builtin.include_role": {"name": "gpufleet.acceptance.nccl_env"}, "vars": role_vars},
        {"name": "Keep what the test reads", "ansible.builtin.set_fact": {"dumped": {"env": "{{ gpufleet_nccl_env }}", "chosen": "{{ nccl_env_chosen }}"}}},
    ]


def _recap(stdout):
    """``{host: {"changed": n, "failed": n}}`` from the PLAY RECAP."""
    return {host: {"changed": changed, "failed": failed} for host, (_ok, changed, failed) in recap(stdout).items()}


def _role_changes(stdout):
    """``[(task, host)]`` reported changed by the nccl_env role's tasks."""
    role = "gpufleet.acceptance.nccl_env : "
    return sorted({(task[len(role):], host) for task, host in changed_tasks(stdout) if task.startswith(role)})


def _diff_of(stdout, host):
    """The --diff text printed for ``host``: the lines before each of its ``changed:``/``ok:`` result lines, back to
    the task header or the previous result line (the default callback prints a host's diff just before its result)."""
    found, pending = [], []
    for line in stdout.splitlines():
        result = re.match(r"^(?:changed|ok|skipping|fatal): \[([^\]]+)\]", line)
        if result or line.startswith("TASK ["):
            if result and result.group(1) == host:
                found.extend(pending)
            pending = []
            continue
        pending.append(line)
    return "\n".join(found)


def _files(tmp_path, host):
    """(nccl.conf, nccl.env) of ``host`` as text."""
    folder = tmp_path / "etc" / host
    return (folder / "nccl.conf").read_text(), (folder / "gpufleet" / "nccl.env").read_text()


@pytest.fixture(name="converged", scope="module")
def converged_fixture(tmp_path_factory):
    """ib-a and ib-b converged, ib-a converged again, then --check --diff of ib-a with another override beside
    ib-fresh: ``{"tmp", "first", "second", "check", "before", "after"}`` (the two hosts' files before and after the
    check)."""
    # this folder's conftest.run_playbook, for a module-scoped run (the `playbook` fixture is per test)
    spec = importlib.util.spec_from_file_location("gpufleet_playbooks_conftest_nccl_env",
                                                  os.path.join(os.path.dirname(__file__), "conftest.py"))
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    tmp_path = tmp_path_factory.mktemp("nccl-env")
    hosts = _hosts(tmp_path)
    conf_a = tmp_path / "etc" / "ib-a" / "nccl.conf"
    conf_a.parent.mkdir(parents=True)
    conf_a.write_text("NCCL_DEBUG=WARN\n")  # the site's own line stays, outside the managed block

    # both converges in one directory: the runner's dump of the second is then unchanged too
    first = conftest.run_playbook(tmp_path / "converge", hosts, _tasks(tmp_path))
    assert first.rc == 0, first.stdout + first.stderr
    before = {host: _files(tmp_path, host) for host in ("ib-a", "ib-b")}
    converged_a = {"ib-a": hosts["ib-a"]}
    second = conftest.run_playbook(tmp_path / "converge", converged_a, _tasks(tmp_path))
    assert second.rc == 0, second.stdout + second.stderr
    # --check --diff with a different (valid) override, ib-fresh beside converged ib-a
    check = conftest.run_playbook(tmp_path / "check", dict(converged_a, **{"ib-fresh": hosts["ib-a"]}),
                                  _tasks(tmp_path, {"nccl_env_overrides": {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_4:1"}}),
                                  extra_args=("--check", "--diff"))
    after = {host: _files(tmp_path, host) for host in ("ib-a", "ib-b")}
    return {"tmp": tmp_path, "first": first, "second": second, "check": check, "before": before, "after": after}


def _block(text):
    lines = text.splitlines()
    start, end = lines.index("# BEGIN gpufleet nccl_env"), lines.index("# END gpufleet nccl_env")
    return lines[start + 1:end]


def test_writes_files_then_idempotent(converged):
    first, second = converged["first"], converged["second"]
    for host in ("ib-a", "ib-b"):
        assert first.results[host]["env"] == {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": H100_RAILS, "NCCL_SOCKET_IFNAME": "=ibp26s0"}
        chosen = first.results[host]["chosen"]
        assert chosen["fabric"] == "ib"
        assert chosen["excluded"] == {"mlx5_bond_0:1": "a bond (front-end/storage), never a compute rail"}
        assert chosen["rails"] == ["mlx5_0:1", "mlx5_1:1", "mlx5_4:1", "mlx5_5:1", "mlx5_6:1", "mlx5_7:1", "mlx5_8:1", "mlx5_9:1"]
        conf, env = converged["before"][host]
        assert _block(conf) == EXPECTED_LINES
        assert [line for line in env.splitlines() if not line.startswith("#")] == EXPECTED_LINES
    assert converged["before"]["ib-a"][0].startswith("NCCL_DEBUG=WARN\n")
    # What it chose and why is printed per host.
    assert "NCCL_IB_HCA=" + H100_RAILS + " - " + H100_RAILS + ": the Active 400 Gb/s InfiniBand ports" in first.stdout
    assert "mlx5_bond_0:1 (a bond (front-end/storage), never a compute rail)" in first.stdout
    assert _role_changes(first.stdout) == sorted([(DIRS, "ib-a")] + [(DIRS, "ib-b")]
                                                 + [(task, host) for task in WRITES for host in ("ib-a", "ib-b")])

    # the second converge (ib-a, its site line kept): nothing changes
    assert _recap(second.stdout) == {"ib-a": {"changed": 0, "failed": 0}}
    assert _role_changes(second.stdout) == []


def test_check_diff_shows_the_change_and_writes_nothing(converged):
    """--check --diff with a different (valid) override: the diff shows the change, nothing is written, on the
    converged node and on the fresh one."""
    check = converged["check"]
    assert check.rc == 0, check.stdout + check.stderr
    diff = _diff_of(check.stdout, "ib-a")
    assert "-NCCL_IB_HCA=" + H100_RAILS in diff and "+NCCL_IB_HCA==mlx5_0:1,mlx5_4:1" in diff
    # the converged node would rewrite its two files; ib-fresh would also make their directories
    assert _role_changes(check.stdout) == sorted(
        [(DIRS, "ib-fresh")] + [(task, host) for task in WRITES for host in ("ib-a", "ib-fresh")])
    assert converged["after"] == converged["before"]


def test_check_mode_on_a_fresh_node_writes_nothing(converged):
    tmp_path, check = converged["tmp"], converged["check"]
    # the settings are derived as in a real run (the fact the launcher reads), and shown, not written
    assert check.results["ib-fresh"]["env"] == {"NCCL_IB_DISABLE": "0", "NCCL_IB_HCA": "=mlx5_0:1,mlx5_4:1",
                                                "NCCL_SOCKET_IFNAME": "=ibp26s0"}
    assert "+NCCL_IB_HCA==mlx5_0:1,mlx5_4:1" in _diff_of(check.stdout, "ib-fresh")
    assert not (tmp_path / "etc" / "ib-fresh").exists()


def test_wrong_override_fails_before_anything_is_written(playbook, tmp_path):
    # mlx5_10 does not exist on this node; as a prefix it would match nothing either ("mlx5_1" would
    # match mlx5_1 only here, but the "=" makes the whole list exact).
    run = playbook(_hosts(tmp_path, names=("ib-a",)),
                   _tasks(tmp_path, {"nccl_env_overrides": {"NCCL_IB_HCA": "=mlx5_10:1"}}))
    assert run.rc != 0
    assert ("NCCL settings refused before any benchmark: ib-a: override NCCL_IB_HCA==mlx5_10:1 matches no RDMA device/port on the node "
            "(NCCL matching rules; ports: mlx5_0:1, mlx5_1:1, mlx5_4:1, mlx5_5:1, mlx5_6:1, mlx5_7:1, mlx5_8:1, mlx5_9:1, mlx5_bond_0:1)") in run.stdout
    assert "TASK [gpufleet.acceptance.nccl_env : Write" not in run.stdout
    assert not (tmp_path / "etc").exists()
    assert _recap(run.stdout)["ib-a"]["failed"] == 1
