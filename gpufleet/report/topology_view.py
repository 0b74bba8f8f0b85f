# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's topology section: the nodes' ``nvidia-smi topo -m`` matrices grouped by fingerprint, identical
matrices shown once with their nodes, each cell coloured by its link class."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from gpufleet.report.common import NodeErrors, Record, View, cell_text, facts_group, note_error

# Link classes of `nvidia-smi topo -m` codes (gpufleet/facts/topology.py) and the colour class of each cell.
LINK_CSS = {
    "nvlink": "l-nv", "pcie_switch": "l-pix", "pcie_switches": "l-pxb", "host_bridge": "l-phb",
    "numa_node": "l-node", "cross_numa": "l-sys", "self": "l-self", "unknown": "l-unk",
}
LINK_LABEL = {
    "nvlink": "NV# NVLink", "pcie_switch": "PIX one PCIe bridge", "pcie_switches": "PXB several PCIe bridges",
    "host_bridge": "PHB PCIe host bridge", "numa_node": "NODE within a NUMA node",
    "cross_numa": "SYS across NUMA nodes", "self": "X self", "unknown": "other",
}
_PCIE_CODES = {"PIX": "pcie_switch", "PXB": "pcie_switches", "PHB": "host_bridge", "NODE": "numa_node",
               "SYS": "cross_numa", "SOC": "cross_numa"}
_NV_CODE = re.compile(r"^NV(\d+)$")


def link_class(code: Any) -> str:
    """The link class of a topology code (``NV12`` -> nvlink, ``SYS`` -> cross_numa, ``X`` -> self)."""
    code = str(code or "")
    if _NV_CODE.match(code):
        return "nvlink"
    if code == "X":
        return "self"
    return _PCIE_CODES.get(code, "unknown")


def topology_fingerprint(topology: dict[str, Any]) -> str:
    """A short digest of a node's matrix (device names and every cell): identical matrices share it."""
    names = [str(name) for name in topology.get("names") or []]
    links = topology.get("links") or {}
    cells = [[str((links.get(row) or {}).get(col, "")) for col in names] for row in names]
    digest = hashlib.sha256(json.dumps([names, cells], separators=(",", ":")).encode("utf-8")).hexdigest()
    return digest[:12]


def _topology_group(topology: dict[str, Any], fingerprint: str) -> View:
    names = [str(name) for name in topology["names"]]
    links = topology.get("links") or {}
    rows: list[dict[str, Any]] = []
    for row in names:
        cells = []
        for col in names:
            code = str((links.get(row) or {}).get(col, ""))
            cells.append({"code": code, "css": LINK_CSS[link_class(code)]})
        rows.append({"name": row, "cells": cells})
    summary = topology.get("summary") or {}
    return {
        "fingerprint": fingerprint, "hosts": [], "names": names, "rows": rows,
        "classes": sorted({link_class(cell["code"]) for row in rows for cell in row["cells"]} - {"self"}),
        "summary": "%s GPUs, %s NICs; GPU pairs: %s" % (
            cell_text(summary.get("gpu_count")), cell_text(summary.get("nic_count")),
            ", ".join("%s %s" % (count, name) for name, count in sorted((summary.get("link_classes") or {}).items()))),
    }


def topology_groups(records: list[Record], errors: NodeErrors | None = None) -> list[View]:
    """Matrices grouped by fingerprint, largest group first: ``[{fingerprint, hosts, names, rows, legend, majority}]``.
    A node whose matrix cannot be drawn is left out, the reason in ``errors`` (host -> [text])."""
    groups: dict[str, View] = {}
    for record in records:
        topology = facts_group(record, "topology")
        if not topology or not topology.get("names"):
            continue
        try:
            fingerprint = topology_fingerprint(topology)
            entry = groups.get(fingerprint) or _topology_group(topology, fingerprint)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # one node's matrix, not the section
            note_error(errors, record.get("host"), "its topology matrix", exc)
            continue
        groups[fingerprint] = entry
        entry["hosts"].append(str(record.get("host")))
    ordered = sorted(groups.values(), key=lambda entry: (-len(entry["hosts"]), entry["hosts"][0]))
    for position, entry in enumerate(ordered):
        # "most common" only when strictly larger than the next group (a tie has no majority)
        entry["majority"] = position == 0 and (len(ordered) == 1 or len(entry["hosts"]) > len(ordered[1]["hosts"]))
        entry["legend"] = [{"css": LINK_CSS[name], "label": LINK_LABEL[name]} for name in entry["classes"]]
    return ordered
