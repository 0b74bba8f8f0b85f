# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter ``fact_summary``: one line per host from the four fact groups' registered results."""

from __future__ import annotations

DOCUMENTATION = r"""
name: fact_summary
short_description: One-line summary of a host's gpufleet facts
version_added: 0.1.0
author:
  - gpufleet engineers (@gpufleet)
description:
  - Turns the registered results of M(gpufleet.acceptance.gpu_topology_facts), M(gpufleet.acceptance.gpu_facts),
    M(gpufleet.acceptance.nic_facts) and M(gpufleet.acceptance.host_facts) into one line a person reads first.
  - A fact group that failed on the host appears as C(FAILED <group>) followed by its message; a group that was not run is left out.
options:
  _input:
    description: Mapping of group name (C(topology), C(gpu), C(nic), C(host)) to that task's registered result.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: One line per host
  ansible.builtin.debug:
    msg: "{{ {'topology': topo_result, 'gpu': gpu_result, 'nic': nic_result, 'host': host_result} | gpufleet.acceptance.fact_summary }}"
"""

RETURN = r"""
_value:
  description: The summary line, parts separated by C( | ).
  type: str
"""

from ansible.errors import AnsibleFilterError

FACT_NAMES = {
    "topology": "gpufleet_topology",
    "gpu": "gpufleet_gpu",
    "nic": "gpufleet_nic",
    "host": "gpufleet_host",
}


def _facts(result, group):
    return ((result or {}).get("ansible_facts") or {}).get(FACT_NAMES[group])


def _one_line(text):
    return " ".join(str(text).split())[:240]


def _gpu_part(gpu):
    summary = gpu.get("summary") or {}
    names = summary.get("names") or []
    text = "%dx %s" % (gpu.get("gpu_count") or 0, "/".join(str(name) for name in names) or "GPU")
    missing = gpu.get("missing_from_nvml")
    if missing:
        text += ", %d on PCIe but not in NVML" % missing
    for key, label in (
        ("throttled_gpus", "throttled"),
        ("retired_pages_pending_gpus", "retired pages pending"),
        ("remapped_rows_pending_gpus", "row remap pending"),
        ("fabric_not_ready_gpus", "fabric not ready"),
    ):
        if summary.get(key):
            text += ", %s: GPU %s" % (label, ",".join(str(i) for i in summary[key]))
    inactive = summary.get("nvlink_inactive_links")
    if inactive:
        text += ", %s NVLink links inactive" % (len(inactive) if isinstance(inactive, list) else inactive)
    return text


def _topology_part(topology):
    summary = topology.get("summary") or {}
    if not summary.get("pair_count"):
        return "topology: %d GPU" % summary.get("gpu_count", 0)
    if summary.get("all_pairs_nvlink"):
        low, high = summary.get("min_nvlinks"), summary.get("max_nvlinks")
        span = "NV%s" % low if low == high else "NV%s-NV%s" % (low, high)
        return "topology: all %d pairs %s" % (summary["pair_count"], span)
    return "topology: %d of %d pairs NVLink, others %s" % (
        summary.get("nvlink_pairs", 0),
        summary["pair_count"],
        ",".join(sorted({pair.rsplit(":", 1)[-1] for pair in summary.get("non_nvlink_pairs", [])})),
    )


def _nic_part(nic):
    summary = nic.get("summary") or {}
    text = "NICs: %d up" % len(summary.get("physical_up") or [])
    if summary.get("fastest_mbps"):
        text += " (fastest %s Gb/s)" % (summary["fastest_mbps"] / 1000.0)
    if summary.get("rdma_port_count"):
        text += ", RDMA %d/%d ports Active" % (len(summary.get("rdma_active_ports") or []), summary["rdma_port_count"])
    return text


def _host_part(host):
    findings = host.get("summary") or []
    return "host: %s" % ("; ".join(findings) if findings else "no precondition findings")


PARTS = (("gpu", _gpu_part), ("topology", _topology_part), ("nic", _nic_part), ("host", _host_part))


def fact_summary(results):
    """The one-line summary; see DOCUMENTATION."""
    if not isinstance(results, dict):
        raise AnsibleFilterError("fact_summary expects a mapping of group name to registered result")
    parts = []
    for group, render in PARTS:
        result = results.get(group)
        if not result:
            continue
        if result.get("failed"):
            parts.append("FAILED %s: %s" % (group, _one_line(result.get("msg", "no message"))))
            continue
        facts = _facts(result, group)
        if facts is not None:
            parts.append(render(facts))
    return " | ".join(parts) if parts else "no facts gathered"


class FilterModule:
    """gpufleet fact filters."""

    def filters(self):
        return {"fact_summary": fact_summary}
