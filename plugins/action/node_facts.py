# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller half of gpufleet.acceptance.node_facts: one module run, then each group parsed as its own action would.

Each group's raw output goes through the ``build_facts`` of that group's action plugin
(gpu_topology_facts, gpu_facts, nic_facts, host_facts) with the same RawReader, so the facts and
the failure messages are the ones the four tasks would have produced. ``groups`` in the result
holds, per group, what that group's own task would have registered.

Two options are the controller's and never reach the node:

- ``collector: separate`` runs the four fact modules one by one (four round trips) instead of
  node_facts once; the groups come out the same (tests/playbooks/test_node_facts.py).
- ``record`` writes the host's record and raw outputs into the results directory here, the moment
  they are parsed (results_store.record_host_facts, as results_record does), and the raw outputs are then left
  out of the task's result. At fleet scale that matters: every byte of a result is pickled to
  Ansible's main process, walked and copied there, and templated again by any task that passes it
  on (docs/performance.md). A node that cannot be reached is recorded unreachable before the
  connection error goes on to Ansible.
"""

from __future__ import annotations

from ansible.errors import AnsibleConnectionFailure
from ansible.module_utils.common.text.converters import to_text
from ansible.plugins.action import ActionBase

from ansible_collections.gpufleet.acceptance.plugins.action.gpu_facts import ActionModule as GpuFacts
from ansible_collections.gpufleet.acceptance.plugins.action.gpu_topology_facts import ActionModule as TopologyFacts
from ansible_collections.gpufleet.acceptance.plugins.action.host_facts import ActionModule as HostFacts
from ansible_collections.gpufleet.acceptance.plugins.action.nic_facts import ActionModule as NicFacts
from ansible_collections.gpufleet.acceptance.plugins.module_utils import gpu_collect, host_collect, nic_collect, topology_collect
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.fact_action import FactError, RawReader
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.results_store import ResultsError, record_host_facts, to_plain

MODULE = "gpufleet.acceptance.node_facts"
# group -> the action plugin whose build_facts parses it, in the order the groups run.
BUILDERS = (("topology", TopologyFacts), ("gpu", GpuFacts), ("nic", NicFacts), ("host", HostFacts))
GROUPS = tuple(name for name, _action in BUILDERS)
# group -> the options its own module takes (collector: separate passes each module only its own)
MODULE_OPTIONS = {"topology": topology_collect.ARGUMENT_SPEC, "gpu": gpu_collect.ARGUMENT_SPEC, "nic": nic_collect.ARGUMENT_SPEC,
                  "host": host_collect.ARGUMENT_SPEC}
COLLECTORS = ("combined", "separate")
RECORD_KEYS = ("run_dir", "claim", "profile", "profile_overrides", "settings")
# options of the action alone: never sent to the node
CONTROLLER_OPTIONS = ("collector", "record")


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


def separate_results(host, requested, args, execute, build):
    """``{group: registered-result-like dict}`` from the four fact modules run one by one.

    ``execute(module, module_args)`` runs a module on the node; ``build`` as in group_results.
    Mirrors the four tasks of a playbook: each module gets only its own options, a group's failure
    does not stop the next, and once the node drops its connection the groups after it are skipped
    (when it answered nothing at all, the connection error is raised as Ansible would report it).
    """
    out, answered, lost = {}, False, False
    for name, action in BUILDERS:
        if name not in requested:
            out[name] = {"changed": False, "skipped": True, "skip_reason": "%s is not in groups" % name}
            continue
        if lost:
            out[name] = {"changed": False, "skipped": True, "skip_reason": "the host became unreachable"}
            continue
        module_args = dict((key, value) for key, value in args.items() if key in MODULE_OPTIONS[name])
        try:
            module_result = execute(action.MODULE, module_args)
        except AnsibleConnectionFailure as exc:
            if not answered:
                raise
            out[name], lost = {"changed": False, "unreachable": True, "msg": to_text(exc)}, True
            continue
        answered = True
        outcome = dict((key, value) for key, value in module_result.items() if key in ("changed", "failed", "msg", "raw"))
        outcome["changed"] = False
        if not module_result.get("failed"):
            try:
                outcome["ansible_facts"] = build(action, RawReader(host, module_result.get("raw") or {}))
            except FactError as exc:
                outcome.update(failed=True, msg=str(exc))
        out[name] = outcome
    return out


def check_record(record):
    """``record`` as a plain dict, or a message saying what is wrong with it."""
    record = to_plain(record)
    if not isinstance(record, dict):
        return None, "record must be a mapping with run_dir (the results directory), got %r" % type(record).__name__
    unknown = sorted(set(record) - set(RECORD_KEYS))
    if unknown:
        return None, "record has unknown key(s) %s; known: %s" % (", ".join(unknown), ", ".join(RECORD_KEYS))
    if not isinstance(record.get("run_dir"), str) or not record["run_dir"]:
        return None, "record.run_dir is required: the results directory of this run"
    return record, None


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
        args = dict((key, value) for key, value in self._task.args.items() if key not in CONTROLLER_OPTIONS)
        requested = args.get("groups")
        if requested is None:
            requested = list(GROUPS)
        elif isinstance(requested, str):
            requested = [part.strip() for part in requested.split(",") if part.strip()]
        if not isinstance(requested, (list, tuple)) or any(name not in GROUPS for name in requested):
            return dict(result, failed=True, msg="groups must be a list of %s, got %r" % (", ".join(GROUPS), requested))
        requested = [str(name) for name in requested]
        collector = self._task.args.get("collector") or "combined"
        if collector not in COLLECTORS:
            return dict(result, failed=True, msg="collector must be one of %s, got %r" % (", ".join(COLLECTORS), collector))
        record = self._task.args.get("record")
        if record is not None:
            record, problem = check_record(record)
            if problem:
                return dict(result, failed=True, msg=problem)
        host = task_vars.get("inventory_hostname", "node")

        def execute(module, module_args):
            return self._execute_module(module_name=module, module_args=module_args, task_vars=task_vars)

        try:
            if collector == "separate":
                module_result = {}
                groups = separate_results(host, requested, args, execute, self._build)
            else:
                module_result = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
                groups = group_results(host, requested, module_result, self._build)
        except AnsibleConnectionFailure as exc:
            if record is not None:
                # the verdict then says UNREACHABLE with this message (Ansible reports the host the same way)
                lost = {"changed": False, "unreachable": True, "msg": to_text(exc)}
                try:
                    record_host_facts(host, dict((name, lost) for name in requested), record)
                except (ResultsError, OSError):
                    pass  # fleet_verdict judges a host that left the play without a record UNREACHABLE too
            raise
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
        if record is not None:
            self._record(host, groups, record, result)
        return result

    @staticmethod
    def _record(host, groups, record, result):
        """Write the host's record; leave the raw outputs (now on disk) out of the result."""
        try:
            run, written = record_host_facts(host, groups, record)
        except (ResultsError, OSError) as exc:
            result["failed"] = True
            result["msg"] = "facts gathered but not recorded: results directory %s: %s" % (record["run_dir"], exc)
            return
        for outcome in groups.values():
            outcome.pop("raw", None)
        result["record"] = run.host_file(host)
        result["raw_files"] = sum(len(index) for index in written["raw"].values())
