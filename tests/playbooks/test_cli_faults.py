# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gpufleet validate`` against faults of the controller side: Ansible's host-key policy kept (ansible-runner would
turn it off), and a playbook ended from outside told in words. ansible-playbook killed with SIGKILL mid-run, then the
printed command resuming the run, is run in tests/playbooks/test_cli_validate.py
(test_sigkill_of_ansible_playbook_says_what_happened_and_what_is_kept_then_resumes): its resume is the run that
file's Ctrl-C test interrupts in the Facts phase (one fleet, one results directory, three runs). An inventory host
named with a ``/`` is run there too, on the run its topology-only test makes (one run, two tests).
"""

from __future__ import annotations

from gpufleet.cli import validate


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


def test_playbook_outcome_in_words():
    assert validate.playbook_outcome(-9, "failed") == "ansible-playbook killed by signal 9 (SIGKILL), not stopped by gpufleet"
    assert validate.playbook_outcome(2, "failed") == "ansible-playbook failed, exit 2"
    assert validate.playbook_outcome(None, "failed") == "ansible-playbook failed with no exit status (ended by a signal that could not be told)"
