# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_facts on the controller: every fact group of one node from one module run (or four).

Each group's raw output goes through that group's library builder (``gpufleet.facts.topology``,
``gpu``, ``nic``, ``host``: ``build_facts(reader)``) with the same RawReader, so the facts and the
failure messages are the ones the four single-group fact tasks produce. ``group_results`` gives, per
group, what that group's own task would have registered. Running the four modules one by one is Ansible's part
(gpufleet/adapter/node_facts.py).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from gpufleet.facts import gpu, host, nic, topology
from gpufleet.facts.raw import FactError, RawReader

MODULE = "gpufleet.acceptance.node_facts"
# a group's library builder: the facts of the group (``{"gpufleet_<group>": ...}``) from the node's raw results
Builder = Callable[[RawReader], Any]
# group -> (its own module, the library function that builds its facts), in the order the groups run.
BUILDERS: tuple[tuple[str, tuple[str, Builder]], ...] = (
    ("topology", ("gpufleet.acceptance.gpu_topology_facts", topology.build_facts)),
    ("gpu", ("gpufleet.acceptance.gpu_facts", gpu.build_facts)),
    ("nic", ("gpufleet.acceptance.nic_facts", nic.build_facts)),
    ("host", ("gpufleet.acceptance.host_facts", host.build_facts)),
)
GROUPS = tuple(name for name, _builder in BUILDERS)
COLLECTORS = ("combined", "separate")
# options of the action alone: never sent to the node
CONTROLLER_OPTIONS = ("collector", "record")


def group_results(host: str, requested: Iterable[str], module_result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{group: registered-result-like dict}`` from the module's result.

    Each group's facts come from its library builder (FactError when they cannot be
    established). A module run that failed as a whole (it crashed, bad arguments) fails every
    requested group with its message.
    """
    node = None if module_result.get("failed") else module_result.get("groups")
    out: dict[str, dict[str, Any]] = {}
    for name, (_module, build) in BUILDERS:
        if name not in requested:
            out[name] = {"changed": False, "skipped": True, "skip_reason": "%s is not in groups" % name}
            continue
        entry = (node or {}).get(name)
        if not isinstance(entry, dict):
            why = module_result.get("msg") or "the collector returned nothing for this group"
            out[name] = {"changed": False, "failed": True, "msg": why}
            continue
        raw = entry.get("raw") or {}
        if entry.get("failed"):
            out[name] = {"changed": False, "failed": True, "msg": entry.get("msg") or "%s failed without a message" % name, "raw": raw}
            continue
        try:
            facts = build_group(host, name, build, raw)
        except FactError as exc:
            out[name] = {"changed": False, "failed": True, "msg": str(exc), "raw": raw}
            continue
        out[name] = {"changed": False, "raw": raw, "ansible_facts": facts}
    return out


def build_group(host: str, name: str, build: Builder, raw: dict[str, Any]) -> dict[str, Any]:
    """``build(RawReader(host, raw))``; any exception of a builder or parser becomes a FactError for this group alone.

    Parsers refuse what they cannot read with ParseError (a FactError by then); anything else one raises
    (a RecursionError, a bug meeting odd node output) must still not lose the other groups' facts. The lines
    the parsers skipped as foreign go into the group's fact dict as ``ignored_lines`` (each with its
    command), only when there is one; the tools that overran the fact phase as ``overran``, only when one did.
    """
    reader = RawReader(host, raw)
    try:
        facts = build(reader)
    except FactError:
        raise
    except Exception as exc:  # pylint: disable=broad-exception-caught  # one group's failure must not lose the others
        raise FactError("%s: %s facts could not be built: %s: %s" % (host, name, type(exc).__name__, str(exc)[:300])) from None
    return reader.attach_notes(facts)
