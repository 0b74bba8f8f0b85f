# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the network benchmarks: ``network_plan`` (iperf3 runs), ``rail_hcas``, ``perftest_has_cuda``, ``perftest_plan``."""

from __future__ import annotations

DOCUMENTATION = r"""
name: network_plan
short_description: iperf3 runs (pairs, rounds, ports, argv lists) for a list of hosts
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
description:
  - C(alone) runs the directed ring h0 -> h1 -> ... -> h0 (in the order of the input) in rounds where no host is in two runs, so every host
    (three or more) is measured with two partners; the runs of a round run at once.
  - C(concurrent) pairs the i-th host of each rack with the i-th host of every other rack and runs all those cross-rack pairs at once,
    one round per rack pair and direction; the rack label is C(gpufleet_claim.rack), else C(gpufleet_rack).
  - Every run is recorded under the host that runs its client (C(record_host)). Argv lists are built from inventory values only and are
    never run through a shell.
  - The same file holds the filters C(rail_hcas), C(perftest_has_cuda) and C(perftest_plan) (see their functions; only this one is
    documented as a plugin entry).
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
  forks:
    description:
      - C(ansible_forks). C(alone) rounds are cut to at most I(forks) // 2 runs, so that every server and its client get a worker
        at the same time. C(concurrent) rounds are not cut (that would not be concurrent); the playbook skips them when too large.
    type: int
"""

EXAMPLES = r"""
- name: Plan the alone iperf3 runs
  ansible.builtin.set_fact:
    bench_iperf3_runs: "{{ ansible_play_hosts | gpufleet.acceptance.network_plan(mode='alone', hostvars=hostvars, seconds=60) }}"
"""

RETURN = r"""
_value:
  description:
    - One dict per run C({client, server, record_host, hosts, mode, round, group, port, address, server_argv, client_argv, parallel,
      processes, ports, server_args, client_args}).
    - >-
      C(parallel) is V(streams) (one client with C(-P streams)) when both hosts' C(gpufleet_iperf3_version) (the registered
      C(iperf3 --version)) say 3.16 or later (or a host's version is unknown), else V(processes) - C(streams) one-stream clients
      against as many servers on C(ports), whose argument lists (after the program) are C(server_args) and C(client_args),
      because iperf3 before 3.16 runs every stream of one process on one core.
    - Runs with the same C(round) run at the same time and share no host.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

try:
    from gpufleet.plan import network as _network
except ImportError as exc:  # the filters say so when used, not when Ansible loads them (ansible-doc, other filters)
    _network = None
    _LIBRARY_ERROR = exc
else:
    _LIBRARY_ERROR = None


def _plan():
    """The library's network planning (gpufleet.plan.network); a filter error naming the fix when it is missing."""
    if _network is None:
        raise AnsibleFilterError("the gpufleet Python library is missing on the controller (%s): install it as the "
                                 "collection's requirements.txt says (docs/install.md)" % _LIBRARY_ERROR)
    return _network


def rail_hcas(nic, nccl_ib_hca=None):
    """The compute-rail HCAs of a node's ``gpufleet_nic`` (Active RDMA ports; ``NCCL_IB_HCA`` syntax restricts)."""
    plan = _plan()
    return plan.rail_hcas(nic or {}, nccl_ib_hca or None)


def perftest_has_cuda(help_text):
    """True when ``ib_write_bw --help`` printed ``--use_cuda``: the build can do GPUDirect RDMA."""
    plan = _plan()
    return plan.perftest_has_cuda(help_text)


def perftest_plan(hosts, info, tool="ib_write_bw", path=None, port=None, size=None, iterations=None, forks=None):
    """``{runs, skipped}`` of ``tool`` over ``hosts`` from each host's ``info`` (gpufleet.plan.network.perftest_plan)."""
    plan = _plan()
    port = plan.PERFTEST_PORT if port is None else port
    iterations = plan.PERFTEST_LAT_ITERS if iterations is None else iterations
    try:
        return plan.perftest_plan([str(host) for host in hosts or []], {str(key): value for key, value in (info or {}).items()}, tool=tool,
                                  port_base=int(port), path=path or None, size=None if size in (None, "") else int(size),
                                  iterations=int(iterations), max_runs=_max_runs(forks))
    except plan.PlanError as exc:
        raise AnsibleFilterError("perftest_plan: %s" % exc) from None


# The host variables the iperf3 plan reads (only these are templated, and only for the hosts planned).
PLAN_VARS = ("gpufleet_claim", "gpufleet_rack", "gpufleet_iperf3_address", "ansible_host", "gpufleet_iperf3_version")


def _plan_vars(hostvars, hosts):
    """``{host: {var: value}}`` of PLAN_VARS that each host defines."""
    out = {}
    for host in hosts:
        try:
            values = hostvars[host] if hostvars is not None and host in hostvars else {}
        except KeyError:
            values = {}
        out[host] = {name: values[name] for name in PLAN_VARS if name in values}
    return out


def nvbandwidth_argv(testcases=None, tool="nvbandwidth"):
    """``[tool, -t, testcase...]`` (testcase names checked; default H2D, D2H and D2D copy-engine cases)."""
    plan = _plan()
    try:
        return plan.nvbandwidth_argv(list(testcases) if testcases else plan.NVBANDWIDTH_TESTCASES, tool=str(tool or "nvbandwidth"))
    except plan.PlanError as exc:
        raise AnsibleFilterError("nvbandwidth_argv: %s" % exc) from None


def _max_runs(forks):
    """Runs a round may hold: each needs two workers (its server and client run at the same time)."""
    if forks in (None, ""):
        return None
    return max(int(forks) // 2, 1)


def rack_groups(hosts, hostvars):
    """``{rack: [host, ...]}`` of the labelled hosts (``gpufleet_claim.rack``, else ``gpufleet_rack``)."""
    plan = _plan()
    hosts = [str(host) for host in hosts or []]
    return plan.group_by_rack(hosts, _plan_vars(hostvars, hosts))


def _address(hostvars, host):
    values = hostvars.get(host) or {}
    return str(values.get("gpufleet_iperf3_address") or values.get("ansible_host") or host)


def network_plan(hosts, mode="alone", hostvars=None, streams=None, seconds=None, omit=None, port=None, iperf3="iperf3",
                 forks=None):
    """The runs of ``mode`` with their argv lists."""
    plan = _plan()
    streams = plan.IPERF3_STREAMS if streams is None else streams
    seconds = plan.IPERF3_SECONDS if seconds is None else seconds
    omit = plan.IPERF3_OMIT if omit is None else omit
    port = plan.IPERF3_PORT if port is None else port
    hosts = [str(host) for host in hosts or []]
    hostvars = _plan_vars(hostvars, hosts)
    try:
        if mode == "alone":
            runs = plan.iperf3_alone(hosts, port_base=int(port), max_runs=_max_runs(forks))
        elif mode == "concurrent":
            runs = plan.iperf3_concurrent(hosts, hostvars, port_base=int(port))
        else:
            raise AnsibleFilterError("network_plan: mode must be alone or concurrent, got %r" % (mode,))
        # each host's `iperf3 --version` (registered as gpufleet_iperf3_version) decides -P streams or processes
        versions = {host: plan.iperf3_version((hostvars[host].get("gpufleet_iperf3_version") or {}).get("stdout"))
                    for host in hosts}
        for run in runs:
            run["address"] = _address(hostvars, run["server"])
            round_size = sum(1 for other in runs if other["round"] == run["round"])
            run.update(plan.iperf3_commands(run, streams, seconds, omit, iperf3=iperf3, versions=versions,
                                            round_size=round_size))
    except plan.PlanError as exc:
        raise AnsibleFilterError("network_plan: %s" % exc) from None
    return runs


class FilterModule:
    """gpufleet benchmark planning filters."""

    def filters(self):
        return {"network_plan": network_plan, "rail_hcas": rail_hcas, "perftest_has_cuda": perftest_has_cuda, "perftest_plan": perftest_plan,
                "rack_groups": rack_groups, "nvbandwidth_argv": nvbandwidth_argv}
