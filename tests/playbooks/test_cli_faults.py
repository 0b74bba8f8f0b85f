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

import configparser
import os

from gpufleet import collection
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


def test_the_collections_settings_apply_where_the_user_has_none(tmp_path, monkeypatch):
    """Run from a directory without an ansible.cfg (as after ``pip install``), ansible-playbook gets the collection's
    (forks, pipelining, the ssh keepalives, the exit-code callback), and the CLI says which file; the user's own
    wins."""
    monkeypatch.delenv("ANSIBLE_CONFIG", raising=False)
    monkeypatch.setattr(validate, "USER_CONFIGS", (str(tmp_path / "home" / ".ansible.cfg"),))
    monkeypatch.chdir(tmp_path)
    shipped = os.path.join(collection.collection_root(), "ansible.cfg")
    assert validate.ansible_settings() == (shipped, "%s (the collection's: no ansible.cfg of yours was found)" % shipped)
    assert validate.runner_env()["ANSIBLE_CONFIG"] == shipped
    config = configparser.ConfigParser(interpolation=None)
    config.read(shipped)
    assert config.get("defaults", "forks") == "25"
    assert "ServerAliveInterval=15" in config.get("ssh_connection", "ssh_args")
    # the user's own: in the current directory, then in their home
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".ansible.cfg").write_text("[defaults]\nforks = 5\n")
    assert validate.ansible_settings() == (None, "%s (yours)" % (tmp_path / "home" / ".ansible.cfg"))
    assert "ANSIBLE_CONFIG" not in validate.runner_env()
    (tmp_path / "ansible.cfg").write_text("[defaults]\nforks = 5\n")
    assert validate.ansible_settings()[0] == str(tmp_path / "ansible.cfg")


def test_playbook_outcome_in_words():
    assert validate.playbook_outcome(-9, "failed") == "ansible-playbook killed by signal 9 (SIGKILL), not stopped by gpufleet"
    assert validate.playbook_outcome(2, "failed") == "ansible-playbook failed, exit 2"
    assert validate.playbook_outcome(None, "failed") == "ansible-playbook failed with no exit status (ended by a signal that could not be told)"
