# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node whose SSH host key changed after its known_hosts line was written (an impostor, or a reinstalled
server) is UNREACHABLE with the host-key reason, through both entry points: ``ansible-playbook
playbooks/validate_cluster.yml`` and ``gpufleet validate`` (ansible-runner alone would turn host-key checking
off). A fleet of its own (2 hosts): host 1's sshd gets a new host key, host 2 is left as it is.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

from conftest import REPO_ROOT, fleet_id, fleet_sh, leftovers  # pylint: disable=import-error

GPUFLEET = os.path.join(os.path.dirname(sys.executable), "gpufleet")
# what ssh says of a host key that differs from the known_hosts line (StrictHostKeyChecking=yes)
SSH_SAYS = "Host key verification failed"
# how the results name it (gpufleet/results/store.py unreachable_reason), first in the reason
HOST_KEY_REASON = "SSH host key verification failed (the node's host key is not the one in known_hosts): "


def _env(tmp_path):
    env = dict(os.environ)
    for key in ("ANSIBLE_HOST_KEY_CHECKING", "ANSIBLE_COLLECTIONS_PATH"):
        env.pop(key, None)  # Ansible's default policy, as a user has it
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local")})
    return env


def _swap_host_key(state, host):
    """A new host key for host ``host``'s sshd (SIGHUP: sshd re-executes itself and reads its keys again)."""
    key = os.path.join(state, "h%d" % host, "ssh_host_ed25519_key")
    os.unlink(key)
    os.unlink(key + ".pub")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "impostor", "-f", key], check=True)
    with open(os.path.join(state, "h%d" % host, "sshd.pid"), encoding="utf-8") as handle:
        os.kill(int(handle.read().strip()), signal.SIGHUP)


def _record(run_dir, host):
    with open(os.path.join(run_dir, "hosts", host + ".json"), encoding="utf-8") as handle:
        return json.load(handle)


def test_changed_host_key_is_unreachable_through_both_entry_points(requirements, tmp_path, tmp_path_factory):  # pylint: disable=unused-argument
    # a short state path: ssh's ControlPath socket (state/cp/...) must fit the 108-byte limit of a unix socket, and
    # tmp_path under a pytest-xdist worker (popen-gwN/test_changed_host_key_...) does not
    state = str(tmp_path_factory.mktemp("hostkey") / "fleet")
    fleet_sh("up", "--hosts", "2", "--state", state)
    number = fleet_id(state)
    try:
        _swap_host_key(state, 1)
        impostor, honest = "gf%dh1" % number, "gf%dh2" % number
        inventory = os.path.join(state, "inventory.yml")

        playbook_run = str(tmp_path / "by-ansible-playbook")
        cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", inventory,
               os.path.join(REPO_ROOT, "playbooks", "validate_cluster.yml"),
               "-e", json.dumps({"gpufleet_results_dir": playbook_run, "gpufleet_level": "quick"})]
        proc = subprocess.run(cmd, cwd=str(tmp_path), env=_env(tmp_path), capture_output=True, text=True, timeout=600, check=False)
        assert SSH_SAYS in proc.stdout, proc.stdout + proc.stderr
        # the honest node is REJECT on its replayed recordings: 3 (a REJECT first), the same code as gpufleet's below
        assert proc.returncode == 3, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert _record(playbook_run, impostor)["verdict"] == "UNREACHABLE"
        assert _record(playbook_run, impostor)["unreachable"].startswith(HOST_KEY_REASON)
        assert _record(playbook_run, honest)["verdict"] not in ("UNREACHABLE", None)

        cli_run = str(tmp_path / "by-gpufleet")
        proc = subprocess.run([GPUFLEET, "validate", "-i", inventory, "--level", "quick", "--out", cli_run], cwd=str(tmp_path),
                              env=_env(tmp_path), capture_output=True, text=True, timeout=600, check=False)
        assert proc.returncode == 3, proc.stdout + proc.stderr
        row = [line for line in proc.stdout.splitlines() if line.startswith(impostor + " ")]
        assert len(row) == 1 and row[0].split()[1] == "UNREACHABLE" and HOST_KEY_REASON.strip() in row[0], proc.stdout
        assert _record(cli_run, impostor)["verdict"] == "UNREACHABLE"
        assert _record(cli_run, impostor)["unreachable"].startswith(HOST_KEY_REASON)
        assert _record(cli_run, honest)["verdict"] not in ("UNREACHABLE", None)
    finally:
        fleet_sh("down", "--state", state)
    assert leftovers(number, state) == []
