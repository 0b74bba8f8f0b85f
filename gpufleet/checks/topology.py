# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Topology checks: every GPU pair's link in ``nvidia-smi topo -m`` against the claim/profile.

- ``nvswitch``: every pair must be NVLink with at least N links (``NV12``, ``NV18``); a pair
  below fails naming it (``"GPU0-GPU4: SYS, expected NV12"``). A half-NVLink box (NV6) and a
  bridged-pairs box sold as full NVLink fail here.
- ``nvlink_bridge_pairs``: every GPU has exactly one NVLink partner with at least N links.
- ``pcie``: nothing expected of NVLink.

A ``nvidia-smi topo -mp`` matrix (PCIe paths only) is never used to judge NVLink: sold with NVLink,
the check says NVLink was not verified (skip), neither pass nor fail on its PCIe cells.

N is the claim's ``nvlinks_per_pair``, else the profile's ``expect.gpu_pair_link``, else 1
(any NVLink). NUMA placement is judged elsewhere.
"""

from __future__ import annotations

import re
from typing import Any

from gpufleet.checks.registry import node_check
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.profiles import expectation, profile_value

CHECK = "topology.gpu_pairs"
_NV_RE = re.compile(r"^NV(\d+)$")


def _min_nvlinks(node: NodeContext, interconnect_source: str | None) -> tuple[int, str | None]:
    """``(N, source)``: the claim's nvlinks_per_pair, else the profile's gpu_pair_link, else (1, source of the
    interconnect)."""
    claim = node.claim or {}
    if claim.get("nvlinks_per_pair"):
        return int(claim["nvlinks_per_pair"]), "claim"
    code, source = profile_value(node.profile, "expect.gpu_pair_link")
    if code:
        match = _NV_RE.match(code)
        if match is None:  # a validated profile holds only NV<n> here (gpufleet/checks/profile_schema.py _nv)
            raise ValueError("expect.gpu_pair_link %r is not an NVLink code like NV12" % (code,))
        return int(match.group(1)), source
    return 1, interconnect_source


def _code(pair: dict[str, Any]) -> str:
    code = pair["code"]
    return "SYS" if code == "SOC" else code


def _nvswitch(pairs: list[dict[str, Any]], needed: int, source: str | None) -> list[CheckResult]:
    expected = "NV%d" % needed if needed > 1 else "NVLink"
    bad = []
    for pair in pairs:
        count = pair.get("nvlinks")
        if count is None or count < needed:
            subject = "%s-%s" % (pair["a"], pair["b"])
            bad.append(result(CHECK, FAIL, "%s: %s, expected %s" % (subject, _code(pair), expected),
                              measured=_code(pair), expected=expected, threshold_source=source, subject=subject))
    if bad:
        return bad
    lowest = min(pair["nvlinks"] for pair in pairs)
    return [result(CHECK, PASS, "all %d GPU pairs NVLink, at least NV%d (expected %s)" % (len(pairs), lowest, expected),
                   measured="NV%d" % lowest, expected=expected, threshold_source=source)]


def _bridge_pairs(gpus: list[str], pairs: list[dict[str, Any]], needed: int, source: str | None) -> list[CheckResult]:
    expected = "NV%d" % needed
    partners: dict[str, list[dict[str, Any]]] = {gpu: [] for gpu in gpus}
    for pair in pairs:
        if pair.get("nvlinks") is not None:
            partners[pair["a"]].append(pair)
            partners[pair["b"]].append(pair)
    items = []
    for pair in pairs:
        count = pair.get("nvlinks")
        if count is not None and count < needed:
            subject = "%s-%s" % (pair["a"], pair["b"])
            items.append(result(CHECK, FAIL, "%s: %s, expected %s (bridged pair)" % (subject, _code(pair), expected),
                                measured=_code(pair), expected=expected, threshold_source=source, subject=subject))
    for gpu in gpus:
        mine = partners[gpu]
        if not mine:
            codes = sorted({_code(p) for p in pairs if gpu in (p["a"], p["b"])})
            items.append(result(CHECK, FAIL, "%s has no NVLink partner (every link %s), expected one %s bridge partner"
                                % (gpu, "/".join(codes) or "unknown", expected),
                                measured=0, expected=1, threshold_source=source, subject=gpu))
        elif len(mine) > 1:
            names = sorted(p["b"] if p["a"] == gpu else p["a"] for p in mine)
            items.append(result(CHECK, WARN, "%s has %d NVLink partners (%s), expected exactly one: not the "
                                "bridged-pairs box described" % (gpu, len(mine), ", ".join(names)),
                                measured=len(mine), expected=1,
                                threshold_source=source, subject=gpu))
    if items:
        return items
    bridged = sorted("%s-%s" % (p["a"], p["b"]) for p in pairs if p.get("nvlinks") is not None)
    return [result(CHECK, PASS, "%d bridged pairs (%s), each at least %s"
                   % (len(bridged), ", ".join(bridged), expected), measured=bridged, expected=expected,
                   threshold_source=source)]


@node_check(CHECK, requires=("topology",))
def gpu_pairs(node: NodeContext) -> list[CheckResult]:
    """Every GPU pair's link class against the interconnect sold."""
    topology = node.group("topology")
    pairs = topology.get("gpu_pairs") or []
    gpus = [gpu["name"] for gpu in topology.get("gpus") or []]
    interconnect, source = expectation(node, "interconnect", "expect.interconnect")
    if interconnect is None:
        return [result(CHECK, SKIP, "not judged: no claim and profile %s sets no expect.interconnect"
                       % (node.profile or {}).get("name"))]
    if not pairs:
        return [result(CHECK, SKIP, "not judged: topo -m shows %d GPU(s), no GPU pair" % len(gpus))]
    if interconnect == "pcie":
        classes = sorted({_code(p) for p in pairs})
        return [result(CHECK, PASS, "sold as PCIe: no NVLink expected (%d pairs: %s)"
                       % (len(pairs), ", ".join(classes)),
                       measured=classes, expected="pcie", threshold_source=source)]
    if topology.get("format") == "mp":
        # topo -mp prints PCIe paths only: an NVLink pair reads as its PCIe path (NODE, SYS), so the
        # matrix can neither show nor refute NVLink; failing on its PCIe cells would blame good boxes.
        return [result(CHECK, SKIP, "NVLink not verified: the matrix is `nvidia-smi topo -mp` (PCIe paths only, "
                       "no NV# cells); %s was sold, gather `nvidia-smi topo -m`" % interconnect,
                       measured="topo -mp", expected=interconnect, threshold_source=source)]
    needed, needed_source = _min_nvlinks(node, source)
    if interconnect == "nvswitch":
        return _nvswitch(pairs, needed, needed_source)
    return _bridge_pairs(gpus, pairs, needed, needed_source)
