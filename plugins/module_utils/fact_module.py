# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The main() of the four single-group fact modules (gpu_facts, nic_facts, host_facts, gpu_topology_facts): collect
the group's raw results on the node and return them; the action plugin of the same name builds the facts."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule


def run_fact_module(argument_spec, collect_raw):
    """Run a fact module: ``collect_raw(params)`` gives ``(raw, failure message or None)``; a failure fails the task
    with what was collected."""
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    raw, failure = collect_raw(module.params)
    if failure:
        module.fail_json(msg=failure, raw=raw)
    module.exit_json(changed=False, raw=raw)
