# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The work of gpufleet.acceptance.node_facts on the node: every fact group asked for, in one fact phase.

Stdlib only, and no import of Ansible: the action plugin (plugins/action/node_facts.py) runs :func:`collect` in one
Python process fed on stdin, without Ansible's module wrapper, whose import of ansible.module_utils.basic alone is most
of a module run's CPU on the node (docs/performance.md); the module (plugins/modules/node_facts.py) runs the same
function under AnsibleModule where the action cannot (pipelining off, Mitogen).
"""

from __future__ import annotations

import os

from ansible_collections.gpufleet.acceptance.plugins.module_utils import gpu_collect, host_collect, nic_collect, topology_collect
from ansible_collections.gpufleet.acceptance.plugins.module_utils.node_collect import (
    fact_phase,
    phase_budget,
    phase_output_budget,
    phase_problem,
)

# group -> its collector, in the order the groups run (the order of the four modules in roles/facts).
COLLECTORS = (("topology", topology_collect), ("gpu", gpu_collect), ("nic", nic_collect), ("host", host_collect))
GROUPS = [name for name, _collector in COLLECTORS]


def argument_spec():
    """The union of the four modules' options (they agree on the shared ones), ``groups`` and a
    ``timeout`` without a default (each group then keeps its own); ``phase_timeout`` and ``phase_output_budget`` have
    none either (phase_budget, phase_output_budget)."""
    spec = {"groups": {"type": "list", "elements": "str", "choices": GROUPS, "default": list(GROUPS)}, "timeout": {"type": "int"},
            # the action plugin's own options (it never sends them): declared so that the interface is one
            "collector": {"type": "str", "choices": ["combined", "separate"], "default": "combined"},
            "record": {"type": "dict", "options": {
                "run_dir": {"type": "path", "required": True}, "claim": {"type": "dict"}, "profile": {"type": "str"},
                "profile_overrides": {"type": "dict"}, "settings": {"type": "dict"},
                "after": {"type": "str", "choices": ["benchmarks", "burn_in"]}}}}
    for _name, collector in COLLECTORS:
        for key, option in collector.ARGUMENT_SPEC.items():
            if key != "timeout":
                spec.setdefault(key, dict(option))
    return spec


def group_params(params, collector):
    """One group's parameters, as its own module would have received them."""
    own = dict((key, params[key]) for key in collector.ARGUMENT_SPEC if key != "timeout")
    own["timeout"] = collector.ARGUMENT_SPEC["timeout"]["default"] if params["timeout"] is None else params["timeout"]
    return own


def phase_budget_of(params):
    """The fact phase's budget of the run: ``phase_timeout``, else 2 x the longest tool timeout of the groups asked
    for + the margin (150 s with the default timeouts)."""
    asked = [collector for name, collector in COLLECTORS if name in params["groups"]]
    timeouts = [group_params(params, collector)["timeout"] for collector in asked]
    return phase_budget(timeouts or [0], params.get("phase_timeout"))


def collect(params):
    """``{group: {"raw", "failed", "msg"}}`` for each group asked for; one group's failure does not stop the next.

    Every group runs inside one fact phase: its budgets bound the whole run's time and kept output, whatever each
    tool does.
    """
    problem = phase_problem(params)
    if problem:
        return dict((name, {"raw": {}, "failed": True, "msg": problem}) for name in GROUPS if name in params["groups"])
    out = {}
    with fact_phase(phase_budget_of(params), phase_output_budget(params)):
        for name, collector in COLLECTORS:
            if name not in params["groups"]:
                continue
            # one group's crash must not lose the others
            try:
                raw, failure = collector.run(group_params(params, collector))
            except Exception as exc:  # pylint: disable=broad-exception-caught
                raw, failure = {}, "%s collector failed: %s: %s" % (name, type(exc).__name__, exc)
            out[name] = {"raw": raw, "failed": failure is not None, "msg": failure}
    return out


def expand_paths(params):
    """``params`` with each ``path`` option expanded as AnsibleModule expands it (``~``, ``$VAR``), here on the node:
    the action plugin checks the options on the controller, where the node's home and environment are not known."""
    spec = argument_spec()
    return dict((key, os.path.expanduser(os.path.expandvars(value))
                 if spec.get(key, {}).get("type") == "path" and isinstance(value, str) else value)
                for key, value in params.items())
