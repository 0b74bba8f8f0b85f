# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The optional phases of validate_cluster.yml run on exactly the hosts that ask for them.

validate_cluster.yml imports benchmark.yml and burn_in.yml with ``gpufleet_hosts`` set from the
``phase_hosts`` filter in the play's ``hosts`` (templated once per play, with ``hostvars``). This
runs the same two import stanzas, copied from validate_cluster.yml (and checked to be there), over
stand-in phase playbooks on five local hosts: each phase play must run on its hosts only, and a
phase no host asks for must run no task at all.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import yaml

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VALIDATE = os.path.join(REPO_ROOT, "playbooks", "validate_cluster.yml")

HOSTS = {
    "a": {"gpufleet_benchmarks": ["allreduce_single"], "gpufleet_burn_in": "true"},
    "b": {"gpufleet_benchmarks": []},
    "c": {"gpufleet_burn_in": True, "gpufleet_level": "quick"},
    "d": {"gpufleet_benchmarks": ["iperf3"], "gpufleet_burn_in": "false"},
    "e": {"gpufleet_level": "quick"},
}


def _imports():
    """The import_playbook entries of validate_cluster.yml, by the playbook they import."""
    with open(VALIDATE, encoding="utf-8") as handle:
        plays = yaml.safe_load(handle)
    return {play["ansible.builtin.import_playbook"]: play for play in plays if "ansible.builtin.import_playbook" in play}


def _run(tmp_path, hosts):
    imports = _imports()
    assert sorted(imports) == ["benchmark.yml", "burn_in.yml"]
    for phase in ("benchmark", "burn_in"):
        (tmp_path / (phase + ".yml")).write_text(yaml.safe_dump([{
            "name": "Stand-in %s" % phase, "hosts": "{{ gpufleet_hosts | default('all') }}", "gather_facts": False,
            "tasks": [{"name": "Phase %s ran" % phase, "ansible.builtin.debug": {"msg": "%s on {{ inventory_hostname }}" % phase}}]}]))
    playbook = [{"name": "First", "hosts": "all", "gather_facts": False, "tasks": [{"name": "First", "ansible.builtin.debug": {"msg": "first"}}]}]
    playbook += [imports["benchmark.yml"], imports["burn_in.yml"]]
    (tmp_path / "site.yml").write_text(yaml.safe_dump(playbook))
    inventory = {"all": {"hosts": {name: dict(values, ansible_connection="local", ansible_python_interpreter=sys.executable)
                                   for name, values in hosts.items()}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    env = {key: value for key, value in os.environ.items() if not key.startswith("ANSIBLE_")}
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": os.path.join(REPO_ROOT, "collections"),
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-local")})
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(tmp_path / "hosts.yml"),
                           str(tmp_path / "site.yml")], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    ran = {}
    for phase in ("benchmark", "burn_in"):
        ran[phase] = sorted(re.findall(r'"msg": "%s on (\w+)"' % phase, proc.stdout))
    return ran, proc.stdout


def test_each_phase_runs_on_the_hosts_that_ask(tmp_path):
    ran, _stdout = _run(tmp_path, HOSTS)
    # benchmarks: a non-empty gpufleet_benchmarks (a, d); burn-in: gpufleet_burn_in true as `bool` reads it (a, c)
    assert ran == {"benchmark": ["a", "d"], "burn_in": ["a", "c"]}


def test_a_phase_nobody_asks_for_runs_no_task(tmp_path):
    ran, stdout = _run(tmp_path, {name: {"gpufleet_level": "quick"} for name in ("a", "b", "c")})
    assert ran == {"benchmark": [], "burn_in": []}
    assert "TASK [Phase benchmark ran]" not in stdout and "TASK [Phase burn_in ran]" not in stdout
    assert re.search(r"^a\s+: ok=1 ", stdout, re.M), stdout


def test_the_default_level_runs_the_benchmarks_and_full_the_burn_in(tmp_path):
    # no gpufleet_level: standard, the benchmarks on every host; full adds the burn-in; quick runs neither
    ran, _stdout = _run(tmp_path, {"a": {}, "b": {"gpufleet_level": "full"}, "c": {"gpufleet_level": "quick"}})
    assert ran == {"benchmark": ["a", "b"], "burn_in": ["b"]}
