# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``network_plan``: the iperf3 runs (pairs, rounds, ports, argv) of one mode for a list of hosts."""

from __future__ import annotations

DOCUMENTATION = r"""
name: network_plan
short_description: iperf3 runs (pairs, rounds, ports, argv lists) for a list of hosts
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
description:
  - C(alone) pairs the hosts into disjoint pairs (inventory order) and runs each pair in both directions; the pairs of a round run at once.
  - C(concurrent) pairs the i-th host of each rack with the i-th host of every other rack and runs all those cross-rack pairs at once,
    one round per rack pair and direction; the rack label is C(gpufleet_claim.rack), else C(gpufleet_rack).
  - Every run is recorded under its receiving host (the iperf3 server). Argv lists are built from inventory values only and are never
    run through a shell.
options:
  _input:
    description: Inventory names of the hosts to pair.
    type: list
    elements: str
    required: true
  mode:
    description: C(alone) or C(concurrent).
    type: str
    default: alone
  hostvars:
    description: C(hostvars), for rack labels and addresses (C(gpufleet_iperf3_address), else C(ansible_host), else the name).
    type: dict
    required: true
  streams:
    description: Parallel streams per client (C(-P)).
    type: int
    default: 8
  seconds:
    description: Test length (C(-t)).
    type: int
    default: 60
  omit:
    description: Warm-up seconds omitted (C(-O)).
    type: int
    default: 3
  port:
    description: First server port; the n-th pair of a round uses I(port) + n.
    type: int
    default: 5201
  iperf3:
    description: Path of iperf3 on the nodes.
    type: str
    default: iperf3
"""

EXAMPLES = r"""
- name: Plan the alone iperf3 runs
  ansible.builtin.set_fact:
    bench_iperf3_runs: "{{ ansible_play_hosts | gpufleet.acceptance.network_plan(mode='alone', hostvars=hostvars, seconds=60) }}"
"""

RETURN = r"""
_value:
  description:
    - One dict per run C({client, server, record_host, hosts, mode, round, group, port, address, server_argv, client_argv}).
    - Runs with the same C(round) run at the same time and share no host.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.bench import network_plan as plan


def _address(hostvars, host):
    values = hostvars.get(host) or {}
    return str(values.get("gpufleet_iperf3_address") or values.get("ansible_host") or host)


def network_plan(hosts, mode="alone", hostvars=None, streams=plan.IPERF3_STREAMS, seconds=plan.IPERF3_SECONDS,
                 omit=plan.IPERF3_OMIT, port=plan.IPERF3_PORT, iperf3="iperf3"):
    """The runs of ``mode`` with their argv lists."""
    hostvars = {str(name): dict(values) for name, values in (hostvars or {}).items()} if hostvars is not None else {}
    hosts = [str(host) for host in hosts or []]
    try:
        if mode == "alone":
            runs = plan.iperf3_alone(hosts, port_base=int(port))
        elif mode == "concurrent":
            runs = plan.iperf3_concurrent(hosts, hostvars, port_base=int(port))
        else:
            raise AnsibleFilterError("network_plan: mode must be alone or concurrent, got %r" % (mode,))
        for run in runs:
            run["address"] = _address(hostvars, run["server"])
            run["server_argv"] = plan.iperf3_server_argv(run["port"], iperf3=iperf3)
            run["client_argv"] = plan.iperf3_client_argv(run["address"], run["port"], streams, seconds, omit, iperf3=iperf3)
    except plan.PlanError as exc:
        raise AnsibleFilterError("network_plan: %s" % exc) from None
    return runs


class FilterModule:
    """gpufleet benchmark planning filters."""

    def filters(self):
        return {"network_plan": network_plan}
