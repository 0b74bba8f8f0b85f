"""Verdicts as Slurm drains (opt-in: ``gpufleet_slurm_drain``, ``gpufleet validate --slurm-drain``).

A REJECT node is drained with the reason ``gpufleet: <its first reason>``, so that the scheduler gives it no job; a
node gpufleet drained earlier that now passes is resumed. The rules are LBNL NHC's (its node-mark-offline and
node-mark-online helpers): our reasons carry our prefix, we resume only a node whose reason carries it, and a node an
administrator drained (any other reason) is left as it is, drained or not, whatever our verdict. An INCOMPLETE or
UNREACHABLE node is not touched: nothing was measured against it, and a drain we set earlier stays until a passing
retest.

The plan is made here from the verdicts and the nodes' states as ``sinfo`` prints them (``SINFO_ARGV``: one line per
node, ``NAME|STATE|REASON``, the reason last so a ``|`` in it is kept); the action plugin
gpufleet.acceptance.slurm_drain runs the commands and the node-side health check program
(roles/slurm_gate/files/gpufleet_slurm_health.py) applies the same rules from the verdict file where the controller
reaches no ``scontrol``.

Reasons are cut to :data:`REASON_MAX` characters: Slurm 22.05 stored a 5,000-character reason here, but ``sinfo`` and
``scontrol show node`` print it whole on every line of the node, and an administrator reads it at a glance.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpufleet.checks.model import ACCEPTED, REJECT
from gpufleet.results.shapes import SlurmAction

PREFIX = "gpufleet: "
# What the controller did, in the results directory (the report names each command)
SLURM_FILE = "slurm.json"
REASON_MAX = 200
SINFO_ARGV = ("sinfo", "--noheader", "--Node", "--Format=NodeList:0|,StateLong:0|,Reason:0")


@dataclass(frozen=True)
class NodeState:
    """One Slurm node as sinfo prints it: ``state`` lower case (``idle``, ``drained``, ``draining``, ``down``...)."""

    name: str
    state: str
    reason: str | None

    @property
    def drained(self) -> bool:
        # drained (no job left), draining (jobs still running), or drain combined with another state
        return "drain" in self.state

    @property
    def ours(self) -> bool:
        return bool(self.reason) and str(self.reason).startswith(PREFIX)


@dataclass(frozen=True)
class DrainAction:
    """What happens to one host's node: ``drain``, ``resume``, ``keep`` (left as it is, with why) or ``absent``."""

    host: str
    node: str
    action: str
    why: str
    reason: str | None = None

    def argv(self, scontrol: str = "scontrol") -> list[str] | None:
        """The scontrol command of a drain or a resume; None for the others."""
        if self.action == "drain":
            return [scontrol, "update", "NodeName=" + self.node, "State=DRAIN", "Reason=" + str(self.reason)]
        if self.action == "resume":
            return [scontrol, "update", "NodeName=" + self.node, "State=RESUME"]
        return None


def parse_sinfo(text: str) -> tuple[dict[str, NodeState], list[str]]:
    """``({node: NodeState}, lines not understood)`` of the output of :data:`SINFO_ARGV`. A node listed once per
    partition is kept once; ``none`` (sinfo's word for no reason) is None."""
    nodes: dict[str, NodeState] = {}
    foreign = []
    for line in text.splitlines():
        if not line.strip():
            continue
        parts = line.split("|", 2)
        if len(parts) != 3 or not parts[0].strip() or not parts[1].strip():
            foreign.append(line)
            continue
        name, state, reason = parts[0].strip(), parts[1].strip().lower(), parts[2].strip()
        nodes[name] = NodeState(name, state, None if reason in ("", "none") else reason)
    return nodes, foreign


def drain_reason(first_reason: str | None) -> str:
    """``gpufleet: <first reason>`` on one line, cut to :data:`REASON_MAX` characters."""
    words = " ".join(str(first_reason or "rejected by gpufleet").split())
    text = PREFIX + words
    return text if len(text) <= REASON_MAX else text[:REASON_MAX - 3].rstrip() + "..."


def _action(host: str, verdict: str, first_reason: str | None, node: str,
            state: NodeState | None) -> DrainAction:
    if state is None:
        return DrainAction(host, node, "absent", "not a node of this Slurm (sinfo -N lists no %s)" % node)
    if state.reason and not state.ours:
        return DrainAction(host, node, "keep", "an administrator's reason (%s): left as it is" % state.reason)
    if verdict == REJECT:
        reason = drain_reason(first_reason)
        if state.drained and state.reason == reason:
            return DrainAction(host, node, "keep", "REJECT: already drained with this reason", reason)
        return DrainAction(host, node, "drain", "REJECT", reason)
    if verdict in ACCEPTED and state.drained and state.ours:
        return DrainAction(host, node, "resume", "%s after gpufleet drained it (%s)" % (verdict, state.reason))
    if state.drained and state.ours:
        return DrainAction(host, node, "keep", "%s: gpufleet's drain stays until a passing retest" % verdict)
    return DrainAction(host, node, "keep", "%s: nothing to change" % verdict)


def plan_drains(verdicts: Mapping[str, tuple[str, str | None]], states: Mapping[str, NodeState],
                node_names: Mapping[str, str] | None = None) -> list[DrainAction]:
    """One action per host of ``verdicts`` (``{host: (verdict, first reason)}``), in host order. ``node_names``: the
    Slurm node of a host where it is not the host's name (``gpufleet_slurm_node``)."""
    names = dict(node_names or {})
    return [_action(host, verdict, reason, names.get(host) or host, states.get(names.get(host) or host))
            for host, (verdict, reason) in sorted(verdicts.items())]


def first_fail(record: Mapping) -> str | None:
    """The first failed check's message of a host record (a REJECT's first reason), or None."""
    for check in record.get("checks") or []:
        if isinstance(check, dict) and check.get("status") == "fail":
            return str(check.get("message") or check.get("id"))
    return None


def run_verdicts(fleet: Mapping, records: Mapping[str, Mapping]) -> dict[str, tuple[str, str | None]]:
    """``{host: (verdict, first reason)}`` of a judged run: fleet.json's verdicts, the reasons from the host records."""
    out = {}
    for host, entry in (fleet.get("node_verdicts") or {}).items():
        verdict = str((entry or {}).get("verdict") or "")
        out[str(host)] = (verdict, first_fail(records.get(host) or {}))
    return out


def action_record(action: DrainAction, scontrol: str, rc: int | None, output: str) -> SlurmAction:
    """What slurm.json keeps of one action: the command as run, its exit status and its words."""
    argv = action.argv(scontrol)
    return {"host": action.host, "node": action.node, "action": action.action, "why": action.why,
            "reason": action.reason, "command": argv, "rc": rc, "output": output[-2000:] if output else ""}


VERDICT_FILE_SCHEMA = "gpufleet.slurm-verdict/v1"


def verdict_file(verdict: str, first_reason: str | None, run_id: str | None, written: str) -> dict[str, object]:
    """The verdict file a node keeps for the health check program (roles/slurm_gate): what to do and with which
    reason, so that the program reads nothing else and decides as :func:`plan_drains` does."""
    drain = verdict == REJECT
    return {"schema": VERDICT_FILE_SCHEMA, "verdict": verdict, "drain": drain,
            "resume": verdict in ACCEPTED, "reason": drain_reason(first_reason) if drain else None,
            "prefix": PREFIX, "run_id": run_id, "written": written}
