# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action gpufleet.acceptance.nccl_env_derive: NCCL networking for every host of the play, at once.

Runs once, on the controller. Reads each host's ``gpufleet_nic``, ``gpufleet_host`` (the NCCL
version), ``gpufleet_claim`` and ``gpufleet_topology`` (the parsed ``nvidia-smi topo -m``, absent
when it was not gathered) from hostvars and hands them to the pure derivation in
``gpufleet/plan/nccl_env.py``; fails, naming the host, when an override matches nothing usable or
when no setting can be derived, so nothing is written and no benchmark starts.
"""

from __future__ import annotations

from gpufleet.adapter.action import LibraryAction
from gpufleet.adapter.spec import documented_spec
from gpufleet.plan.nccl_env import derive, summary_lines
from gpufleet.results.store import to_plain


def fleet_nodes(hostvars, hosts):
    """``{host: {nic, nccl_version, claim, topology}}`` from the inventory and the facts already gathered."""
    nodes = {}
    for host in hosts:
        view = hostvars[host] if hostvars is not None and host in hostvars else {}
        nic = to_plain(view["gpufleet_nic"]) if "gpufleet_nic" in view else None
        host_facts = to_plain(view["gpufleet_host"]) if "gpufleet_host" in view else None
        nccl = ((host_facts or {}).get("versions") or {}).get("nccl") or {}
        nodes[host] = {"nic": nic, "nccl_version": nccl.get("version"),
                       "claim": to_plain(view["gpufleet_claim"]) if "gpufleet_claim" in view else None,
                       "topology": to_plain(view["gpufleet_topology"]) if "gpufleet_topology" in view else None}
    return nodes


class ActionModule(LibraryAction):
    """Derive NCCL_SOCKET_IFNAME, NCCL_IB_DISABLE, NCCL_IB_HCA and NCCL_IB_GID_INDEX per host."""

    ARGUMENT_SPEC = documented_spec(__file__)

    def act(self, args, task_vars, result):
        hosts = [str(host) for host in (args["hosts"] or task_vars.get("ansible_play_hosts") or [])]
        host_overrides = args["host_overrides"] or {}
        stray = sorted(set(host_overrides) - set(hosts))
        if stray:
            result.update(failed=True, msg="host_overrides: no such host in this play: %s" % ", ".join(stray))
            return result
        derived = derive(fleet_nodes(task_vars.get("hostvars"), hosts), cluster_cidr=args.get("cluster_cidr") or None,
                         overrides=args.get("overrides"), host_overrides=host_overrides)
        result.update(changed=False, hosts=derived["hosts"], fleet=derived["fleet"], problems=derived["problems"],
                      lines={host: summary_lines(host, chosen) for host, chosen in derived["hosts"].items()})
        if derived["problems"]:
            result["failed"] = True
            result["msg"] = "NCCL settings refused before any benchmark: " + "; ".join(derived["problems"])
            return result
        result["msg"] = "NCCL settings derived for %d host(s): fabric %s" % (
            len(hosts), ", ".join(sorted({chosen["fabric"] or "unknown" for chosen in derived["hosts"].values()})) or "none")
        return result
