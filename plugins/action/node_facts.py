# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.node_facts: one module run, then each group parsed as its own action would.

Each group's raw output goes through the ``build_facts`` of that group's action plugin
(gpu_topology_facts, gpu_facts, nic_facts, host_facts) with the same RawReader, so the facts and
the failure messages are the ones the four tasks would have produced. ``groups`` in the result
holds, per group, what that group's own task would have registered.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.acceptance.plugins.action.gpu_facts import ActionModule as GpuFacts
from ansible_collections.gpufleet.acceptance.plugins.action.gpu_topology_facts import ActionModule as TopologyFacts
from ansible_collections.gpufleet.acceptance.plugins.action.host_facts import ActionModule as HostFacts
from ansible_collections.gpufleet.acceptance.plugins.action.nic_facts import ActionModule as NicFacts
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.fact_action import FactError, RawReader

MODULE = "gpufleet.acceptance.node_facts"
# group -> the action plugin whose build_facts parses it, in the order the groups run.
BUILDERS = (("topology", TopologyFacts), ("gpu", GpuFacts), ("nic", NicFacts), ("host", HostFacts))
GROUPS = tuple(name for name, _action in BUILDERS)


def group_results(host, requested, module_result, build):
    """``{group: registered-result-like dict}`` from the module's result.

    ``build(action_class, reader)`` returns a group's facts (FactError when they cannot be
    established). A module run that failed as a whole (it crashed, bad arguments) fails every
    requested group with its message.
    """
    node = None if module_result.get("failed") else module_result.get("groups")
    out = {}
    for name, action in BUILDERS:
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
            facts = build(action, RawReader(host, raw))
        except FactError as exc:
            out[name] = {"changed": False, "failed": True, "msg": str(exc), "raw": raw}
            continue
        out[name] = {"changed": False, "raw": raw, "ansible_facts": facts}
    return out


class ActionModule(ActionBase):
    """Run gpufleet.acceptance.node_facts once; set each group's facts as its own action plugin would."""

    _supports_check_mode = True
    _supports_async = False

    def _build(self, action, reader):
        # build_facts uses nothing of its instance: call it with this one.
        return action.build_facts(self, reader)

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super().run(tmp, task_vars)
        del tmp
        requested = self._task.args.get("groups")
        if requested is None:
            requested = list(GROUPS)
        elif isinstance(requested, str):
            requested = [part.strip() for part in requested.split(",") if part.strip()]
        if not isinstance(requested, (list, tuple)) or any(name not in GROUPS for name in requested):
            return dict(result, failed=True, msg="groups must be a list of %s, got %r" % (", ".join(GROUPS), requested))
        module_result = self._execute_module(module_name=MODULE, module_args=self._task.args, task_vars=task_vars)
        host = task_vars.get("inventory_hostname", "node")
        groups = group_results(host, [str(name) for name in requested], module_result, self._build)
        facts = {}
        for outcome in groups.values():
            facts.update(outcome.get("ansible_facts") or {})
        failed = [name for name in requested if groups[name].get("failed")]
        result.update(changed=False, groups=groups)
        if facts:
            result["ansible_facts"] = facts
        if module_result.get("failed") and not module_result.get("groups"):
            # the run itself failed: keep what Ansible said (module_stderr, exception) for the user
            result.update((key, value) for key, value in module_result.items() if key not in ("groups", "changed"))
        if failed and len(failed) == len(requested):
            result["failed"] = True
            result["msg"] = "; ".join("%s: %s" % (name, groups[name]["msg"]) for name in failed)
        elif failed:
            result["msg"] = "gathered %s; failed %s" % (", ".join(name for name in requested if name not in failed), ", ".join(failed))
        return result
