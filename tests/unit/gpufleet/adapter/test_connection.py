# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A lost ssh connection (gpufleet/adapter/connection.py): which losses get one reconnect, and how they are named.

The messages are Ansible 2.19's ssh plugin's, with ssh's own words after them as OpenSSH 9.2 prints them: the empty
one is what this machine's ansible-playbook said when the test killed the controller's connection master mid-module
on the SSH test fleet (tests/sshfleet/test_reconnect.py does it for real); the keepalive one is what
tests/sshfleet/test_network_loss.py's cut node gets.
"""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleConnectionFailure

from gpufleet.adapter.connection import describe_loss, node_went_silent, ssh_words, with_one_reconnect

KILLED_MASTER = 'Data could not be sent to remote host "198.18.1.1". Make sure this host can be reached over ssh: '
KEEPALIVES_RAN_OUT = ('Data could not be sent to remote host "198.18.1.4". Make sure this host can be reached over '
                      'ssh: Timeout, server 198.18.1.4 not responding.\r\n')
CONNECT_TIMED_OUT = ("Failed to connect to the host via ssh: ssh: connect to host 198.18.1.4 port 22: "
                     "Connection timed out")
BANNER_TIMED_OUT = ("Failed to connect to the host via ssh: Connection timed out during banner exchange\r\n"
                    "Connection to 198.18.1.3 port 22 timed out")
REFUSED = "Failed to connect to the host via ssh: ssh: connect to host 198.18.1.2 port 22: Connection refused"


def test_ssh_words_are_what_ssh_said_after_ansibles_prefix():
    assert ssh_words(KILLED_MASTER) == ""
    assert ssh_words(KEEPALIVES_RAN_OUT) == "Timeout, server 198.18.1.4 not responding."
    assert ssh_words(BANNER_TIMED_OUT) == "Connection to 198.18.1.3 port 22 timed out"
    assert ssh_words("x" * 400) == "x" * 300


@pytest.mark.parametrize("message, silent", [
    (KILLED_MASTER, False),
    (REFUSED, False),
    (KEEPALIVES_RAN_OUT, True),
    (CONNECT_TIMED_OUT, True),
    (BANNER_TIMED_OUT, True),
])
def test_only_a_node_that_stopped_answering_is_silent(message, silent):
    assert node_went_silent(message) is silent


def test_the_loss_is_named():
    assert describe_loss(KILLED_MASTER) == (
        "the controller's ssh connection to the node ended mid-task (ssh exited 255 without a word: the shared "
        "connection master ended, killed or after the node stopped answering its keepalives)")
    assert describe_loss(REFUSED) == ("the controller's ssh connection to the node ended mid-task (ssh: ssh: connect "
                                      "to host 198.18.1.2 port 22: Connection refused)")


def _runner(failures):
    """A module run that raises the given connection failures in turn, then returns 'ran'; and its calls."""
    calls = []

    def run(retry):
        calls.append(retry)
        if len(calls) <= len(failures):
            raise AnsibleConnectionFailure(failures[len(calls) - 1])
        return "ran"
    return run, calls


def test_one_reconnect_after_a_broken_connection():
    run, calls = _runner([KILLED_MASTER])
    assert with_one_reconnect(run) == ("ran", describe_loss(KILLED_MASTER))
    assert calls == [False, True]


def test_no_reconnect_after_a_silent_node():
    run, calls = _runner([KEEPALIVES_RAN_OUT])
    with pytest.raises(AnsibleConnectionFailure, match="not responding"):
        with_one_reconnect(run)
    assert calls == [False]


def test_a_second_loss_is_raised_naming_both():
    run, calls = _runner([KILLED_MASTER, REFUSED])
    with pytest.raises(AnsibleConnectionFailure) as raised:
        with_one_reconnect(run)
    assert calls == [False, True]
    assert str(raised.value) == (REFUSED + "; one reconnect was tried after " + describe_loss(KILLED_MASTER))


def test_no_loss_runs_once():
    run, calls = _runner([])
    assert with_one_reconnect(run) == ("ran", None)
    assert calls == [False]
