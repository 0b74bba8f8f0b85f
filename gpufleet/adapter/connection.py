"""A lost ssh connection to a node: named, and one reconnect before the node is declared lost.

Ansible reports any ssh failure of a module run (ssh exit 255) as the node UNREACHABLE, and leaves it out of the rest
of the play. A connection can end while the node is fine: the controller's connection-sharing master (ControlPersist)
killed or crashed, a reset on the way. Ansible's own reconnect (the ssh plugin's ``reconnection_retries``, 0 as shipped)
would run the module again blindly: a benchmark twice at once on the node. So the actions that hold a connection for
long (``node_facts``, ``bench_run``) reconnect once themselves, the benchmark after ending what its first attempt left
on the node, and say so in the record.

The reconnect is bounded: it waits at most RECONNECT_TIMEOUT_S for the node (ssh's ConnectTimeout, which covers the
TCP connect and ssh's handshake; Ansible's 10 s is for a first connect). Behind a shared connection master, ssh cannot
tell a node that stopped answering from a killed master: the master gives up on a frozen or cut-off node after its
keepalives (ssh_args' ServerAliveInterval x (ServerAliveCountMax + 1), 75 s as shipped) and its clients only see it
gone, with no words. So such a node gets the reconnect too, and adds its keepalive wait plus RECONNECT_TIMEOUT_S.
Where ssh does say the node stopped answering (``Timeout, server ... not responding``, a connect or its handshake
timed out: an ssh of its own, no master), that wait was the bound already and there is no reconnect.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple, TypeVar

from ansible.errors import AnsibleConnectionFailure

T = TypeVar("T")

# What ssh (or Ansible's ssh plugin on its behalf) says when the node itself went silent: no reconnect after these.
SILENT_NODE_WORDS = ("not responding", "timed out")
# The most seconds the one reconnect waits for the node to answer.
RECONNECT_TIMEOUT_S = 5
# Ansible's ssh plugin's words for an ssh that exited 255 while the module's input went to it (pipelining), before
# ssh's own stderr; a killed connection master leaves that stderr empty.
ANSIBLE_PREFIXES = ("Data could not be sent to remote host", "Failed to connect to the host via ssh:")


def ssh_words(message: str) -> str:
    """What ssh itself said in Ansible's connection failure ``message``: its last non-empty line after Ansible's
    prefix, at most 300 characters; empty when ssh said nothing."""
    text = str(message or "")
    for prefix in ANSIBLE_PREFIXES:
        at = text.find(prefix)
        if at >= 0:
            rest = text[at + len(prefix):]
            # "... Make sure this host can be reached over ssh: <stderr>"
            text = rest.split("over ssh:", 1)[1] if "over ssh:" in rest else rest
            break
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def node_went_silent(message: str) -> bool:
    """True when the connection failure ``message`` says the node stopped answering (no reconnect then)."""
    words = ssh_words(message).lower()
    return any(marker in words for marker in SILENT_NODE_WORDS)


def describe_loss(message: str) -> str:
    """One line naming a lost connection for the record."""
    words = ssh_words(message)
    said = "ssh: %s" % words if words else (
        "ssh exited 255 without a word: the shared connection master ended, killed or after the node stopped "
        "answering its keepalives")
    return "the controller's ssh connection to the node ended mid-task (%s)" % said


def shorten_connect_timeout(connection: Any) -> None:
    """Bound the reconnect of an Ansible ``connection`` (the task's own) to RECONNECT_TIMEOUT_S; a connection without
    a ``timeout`` option is left as it is."""
    try:
        current = float(connection.get_option("timeout"))
    except (KeyError, AttributeError, TypeError, ValueError):
        return
    connection.set_option("timeout", int(min(current, RECONNECT_TIMEOUT_S)))


def with_one_reconnect(run: Callable[[bool], T], connection: Any = None) -> Tuple[T, Optional[str]]:
    """``(run(False), None)``; after a connection failure that is not a silent node, ``(run(True), the first loss in
    words)``. ``run(retry)`` is the module run, ``retry`` True on the second attempt, which ``connection`` (the task's
    Ansible connection, when given) makes within RECONNECT_TIMEOUT_S. A failure of the second attempt, or a silent
    node, raises AnsibleConnectionFailure; the second's message names the first loss too."""
    try:
        return run(False), None
    except AnsibleConnectionFailure as exc:
        if node_went_silent(str(exc)):
            raise
        first = describe_loss(str(exc))
    if connection is not None:
        shorten_connect_timeout(connection)
    try:
        return run(True), first
    except AnsibleConnectionFailure as exc:
        raise AnsibleConnectionFailure("%s; one reconnect was tried after %s" % (str(exc).rstrip(), first)) from None
