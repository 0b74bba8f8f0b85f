# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The compute rails of a node (pure): the Active RDMA ports ``NCCL_IB_HCA`` names, and why every other port is
left out.

A node's candidate ports are its Active ports that are no bond and no management device (:func:`port_groups`).
Its rails are those at the rail rate and link layer (:func:`rail_key_for`: the claim's compute NICs, else the
fleet's majority, else the node's), kept only when on a GPU's PCIe path in ``nvidia-smi topo -m``
(:func:`on_gpu_paths`, so storage/front-end HCAs at the compute rate stay out). RoCE rails may need a GID index
(:func:`gid_index`).
"""

from __future__ import annotations

import collections
import re
from typing import Any

from gpufleet.facts.topology import PCIE_PATH_ORDER, normalise_code
from gpufleet.plan.nccl_facts import SAFE_VALUE_RE, RailKey, natural_key, rate_text, rdma_ports

CLAIM_LINK_LAYER = {"ib": "InfiniBand", "roce": "Ethernet"}
# RDMA devices that are not compute rails whatever their state: bonds (front-end/storage) and
# management devices such as Azure's Accelerated Networking VF ``mlx5_an0``.
BOND_RE = re.compile(r"_bond(_\d+)?$")
MANAGEMENT_RE = re.compile(r"_an\d+$")
# nvidia-smi topo -m paths that keep a NIC on a GPU's own PCIe branch (one or several PCIe switches, no
# host bridge): GPUDirect RDMA runs best there. PHB, NODE and SYS cross the CPU: a NIC at the compute rate
# that is only that close to every GPU is a storage or front-end card.
GPU_LOCAL_PATHS = ("PIX", "PXB")

# an RDMA device, one of its ports, and the port's rail key
Rail = tuple[dict[str, Any], dict[str, Any], RailKey]


def claim_rail(claim: Any) -> RailKey | None:
    """``(link_layer, gbps)`` of the claim's compute NICs, ``("none", None)`` for Ethernet-only, None when silent."""
    nics = (claim or {}).get("nics")
    if not isinstance(nics, list):
        return None
    compute = [nic for nic in nics if isinstance(nic, dict) and nic.get("role") == "compute"]
    rdma = [nic for nic in compute if nic.get("type") in CLAIM_LINK_LAYER]
    if rdma:
        return CLAIM_LINK_LAYER[rdma[0]["type"]], rdma[0].get("gbps")
    if compute:
        return "none", None
    return None


def port_groups(nic: dict[str, Any]) -> tuple[list[Rail], dict[str, str]]:
    """``(candidates, excluded)``: Active non-bond, non-management ports, and why the rest are out."""
    candidates, excluded = [], {}
    for dev, port in rdma_ports(nic):
        name = dev.get("device") or ""
        label = "%s:%s" % (name, port.get("port"))
        if BOND_RE.search(name):
            excluded[label] = "a bond (front-end/storage), never a compute rail"
        elif MANAGEMENT_RE.search(name):
            excluded[label] = "a management/accelerated-networking device (%s), not a compute rail" % name
        elif not SAFE_VALUE_RE.match(name):
            excluded[label] = "device name cannot be written safely"
        elif port.get("state") != "Active":
            excluded[label] = "%s%s" % (port.get("state") or "state unknown",
                                        " / %s" % port["physical_state"] if port.get("physical_state") else "")
        else:
            candidates.append((dev, port, (port.get("link_layer"), port.get("rate_gbps"))))
    return candidates, excluded


def nic_gpu_paths(topology: Any) -> dict[str, tuple[str, str]]:
    """``{rdma_device: (code, gpus)}``: each NIC's nearest path to any GPU in a parsed ``nvidia-smi topo -m``.

    ``topology`` is ``gpufleet_topology`` (the ``topo`` parser's result): NIC rows are named as the
    matrix names them (``NIC0``) and mapped to RDMA devices (``mlx5_0``) through the parser's
    ``device`` (its NIC Legend, or the row name when the header already uses device names); a row
    without a device is left out. SOC is read as SYS. ``gpus`` says which GPUs are at that distance
    (``"every GPU"`` or ``"GPU0, GPU3"``). Empty when the matrix is unknown or has no GPU.
    """
    if not isinstance(topology, dict):
        return {}
    links = topology.get("links") or {}
    gpus = [gpu["name"] for gpu in topology.get("gpus") or [] if isinstance(gpu, dict) and gpu.get("name")]
    out = {}
    for nic in topology.get("nics") or []:
        if not isinstance(nic, dict) or not nic.get("device"):
            continue
        row = links.get(nic.get("name")) or {}
        codes = {gpu: normalise_code(row[gpu]) for gpu in gpus if row.get(gpu)}
        if not codes:
            continue
        nearest = min(codes.values(), key=_path_rank)
        at_nearest = [gpu for gpu in gpus if codes.get(gpu) == nearest]
        out[nic["device"]] = (nearest, "every GPU" if len(at_nearest) == len(gpus) else ", ".join(at_nearest))
    return out


def _path_rank(code: str) -> int:
    return PCIE_PATH_ORDER.index(code) if code in PCIE_PATH_ORDER else len(PCIE_PATH_ORDER)


def on_gpu_paths(rails: list[Rail], topology: Any) -> tuple[list[Rail], dict[str, str], str | None]:
    """``(kept, left_out, note)``: the compute-rate ports on a GPU's PCIe path, the others with why, and a note.

    A port is kept when its device is PIX or PXB to at least one GPU in ``nvidia-smi topo -m``. Without
    a matrix naming the NICs every port is kept and the note says the path was not checked. When no port
    at all is PIX/PXB (a VM whose PCIe tree is virtualised, a server without PCIe switches) the matrix
    cannot tell rails from storage: every port is kept and the note says so. A device the matrix does
    not show is kept, named in the note.
    """
    if not rails:
        return rails, {}, None
    if not isinstance(topology, dict):
        return rails, {}, "PCIe path to the GPUs not checked: no nvidia-smi topo -m facts (gpufleet_topology)"
    paths = nic_gpu_paths(topology)
    if not paths:
        return rails, {}, ("PCIe path to the GPUs not checked: nvidia-smi topo -m names no NIC as an RDMA device "
                           "next to a GPU")
    devices = sorted({dev["device"] for dev, _port, _key in rails}, key=natural_key)
    unseen = [device for device in devices if device not in paths]
    unseen_text = "; not in the nvidia-smi topo -m matrix, kept unchecked: %s" % ", ".join(unseen) if unseen else ""
    if not any(paths[device][0] in GPU_LOCAL_PATHS for device in devices if device in paths):
        nearest = sorted({paths[device][0] for device in devices if device in paths}, key=_path_rank)
        return rails, {}, ("PCIe path to the GPUs not told apart: nvidia-smi topo -m shows none of these ports PIX/PXB "
                           "to a GPU (nearest: %s), as on a VM whose PCIe tree is virtualised or a server without PCIe "
                           "switches; all kept%s" % (", ".join(nearest), unseen_text))
    kept, left_out = [], {}
    for dev, port, key in rails:
        path = paths.get(dev["device"])
        if path is None or path[0] in GPU_LOCAL_PATHS:
            kept.append((dev, port, key))
            continue
        left_out["%s:%s" % (dev["device"], port["port"])] = (
            "%s at the compute rate, but not on a GPU's PCIe path: %s at best (to %s) in nvidia-smi topo -m, "
            "the rails are PIX/PXB to a GPU: storage/front-end" % (rate_text(key), path[0], path[1]))
    return kept, left_out, "PCIe path checked with nvidia-smi topo -m: each rail is PIX/PXB to a GPU%s" % unseen_text


def majority_key(keys: list[RailKey]) -> RailKey | None:
    """The most common rail key; ties: the faster, then InfiniBand. None for no key."""
    counts = collections.Counter(keys)
    if not counts:
        return None
    return sorted(counts.items(), key=lambda item: (-item[1], -(item[0][1] or 0), item[0][0] != "InfiniBand"))[0][0]


def rail_key_for(claim: Any, candidates: list[Rail], fleet_key: RailKey | None) -> tuple[RailKey | None, str]:
    """The (link_layer, rate) of this node's compute rails and where that came from."""
    claimed = claim_rail(claim)
    if claimed is not None:
        return claimed, "the claim's compute NICs"
    keys = [key for _dev, _port, key in candidates]
    if fleet_key is not None and fleet_key in keys:
        return fleet_key, "the fleet's majority of Active RDMA ports"
    return majority_key(keys), "this node's majority of Active RDMA ports"


def on_rail(key: RailKey, rail: RailKey) -> bool:
    """A port's key is on the rail: the same link layer, and the same rate where both are known."""
    link_layer, rate = key
    if link_layer != rail[0]:
        return False
    return rail[1] is None or rate is None or float(rate) == float(rail[1])


def node_rails(candidates: list[Rail], excluded: dict[str, str], key: RailKey | None,
               topology: Any) -> tuple[list[Rail], str | None]:
    """``(rails, pcie note)``: the candidate ports on the rail ``key`` and a GPU's PCIe path, in natural order; every
    other candidate goes into ``excluded`` with why. ``key`` is None only for a node without a candidate port."""
    rails: list[Rail] = []
    if key is not None and key[0] == "none":
        for dev, port, _pkey in candidates:
            excluded["%s:%s" % (dev["device"], port["port"])] = "the claim's compute network is Ethernet"
    elif key is not None:
        rails = [(dev, port, pkey) for dev, port, pkey in candidates if on_rail(pkey, key)]
        rails.sort(key=lambda rail: (natural_key(rail[0]["device"]), rail[1].get("port") or 0))
        for dev, port, pkey in candidates:
            if not any(port is rail_port for _d, rail_port, _k in rails):
                excluded["%s:%s" % (dev["device"], port["port"])] = ("%s, the compute rails are %s: storage/front-end"
                                                                     % (rate_text(pkey), rate_text(key)))
    rails, off_path, pcie_note = on_gpu_paths(rails, topology)
    excluded.update(off_path)
    return rails, pcie_note


def _ipv4_mapped(gid: Any) -> bool:
    return (gid or "").lower().startswith("0000:0000:0000:0000:0000:ffff:")


def gid_index(rails: list[Rail]) -> Any:
    """Lowest GID index that is RoCE v2 with an IPv4-mapped GID on every rail port; None when none/unknown."""
    common: set[Any] | None = None
    for _dev, port, _key in rails:
        indices = {gid.get("index") for gid in port.get("gids") or []
                   if gid.get("index") is not None and "v2" in (gid.get("type") or "").lower()
                   and _ipv4_mapped(gid.get("gid"))}
        common = indices if common is None else common & indices
    return min(common) if common else None
