# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""PCIe link checks: each GPU's and each RDMA NIC's link against its maximum.

- ``pcie.gpu_link``: a link WIDTH below the GPU's maximum fails (a lane fault, a bad riser or
  slot: it does not recover by itself). A GENERATION below the maximum is normal on an idle GPU
  (it trains down to save power and back up under load), so it passes when the GPU reports the
  Idle clock event reason and warns otherwise (judge it under load). A maximum below the
  profile's ``expect.gpu_pcie_gen``/``gpu_pcie_width`` fails (wrong slot, riser or board).
- ``pcie.nic_link``: NICs with an RDMA device (the GPUDirect data path): width or generation
  below the maximum fails ("mlx5_0 runs x8 Gen4, capable of x16 Gen5"), and a maximum below the
  profile's ``expect.nic_pcie_gen``/``nic_pcie_width``. Other NICs (management LOMs) are not
  judged; a degraded one is listed in a ``skip`` so it stays visible.

``pcie.gpu_link`` reads what ``nvidia-smi -q`` prints: when neither ``-q`` query could be read (the GPU facts hold
only ``nvlink -s``) it says "not measured", naming why (gpufleet/checks/gpu_rules.py ``queries_unread``).
"""

from __future__ import annotations

from typing import Any

from gpufleet.checks.registry import node_check
from gpufleet.checks.gpu import query_check
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.profiles import profile_value

GPU_LINK, NIC_LINK = "pcie.gpu_link", "pcie.nic_link"
OWN_MAX = "the device's own maximum (PCIe LnkCap)"


def _link(width: Any, gen: Any) -> str:
    return "x%s Gen%s" % (width, gen)


def _sku_width(node: NodeContext, prefix: str) -> tuple[Any, str | None]:
    """``(width, source)`` the SKU is built with (profile ``expect.<prefix>_pcie_width``); (None, None) unset.

    A VM size may give a device fewer lanes than the card has (a VF, a sliced host): judged
    against the SKU, a link at the SKU's width is whole even when the card could do more.
    """
    return profile_value(node.profile, "expect.%s_pcie_width" % prefix)


def _width_by_design(node: NodeContext, prefix: str, width: int, width_max: int) -> bool:
    expected, _source = _sku_width(node, prefix)
    return expected is not None and width < width_max and width >= expected


def _against_profile(check_id: str, node: NodeContext, subject: str, gen_max: Any, width_max: Any,
                     prefix: str) -> list[CheckResult]:
    """Fail when the device's maximum is below what the profile expects of it."""
    items = []
    for key, value, word in (("%s_pcie_gen" % prefix, gen_max, "Gen"), ("%s_pcie_width" % prefix, width_max, "x")):
        expected, source = profile_value(node.profile, "expect.%s" % key)
        if expected is not None and value is not None and value < expected:
            shown = ("Gen%s" % value, "Gen%s" % expected) if word == "Gen" else ("x%s" % value, "x%s" % expected)
            items.append(result(check_id, FAIL, "%s capable of %s only, expected %s" % (subject, shown[0], shown[1]),
                                measured=value, expected=expected, threshold_source=source, subject=subject))
    return items


@query_check(GPU_LINK)
def gpu_link(node: NodeContext) -> list[CheckResult]:
    """Each GPU's PCIe generation and width, current against maximum."""
    gpus = node.group("gpu").get("gpus") or []
    items, judged, idle_low, by_design = [], 0, [], []
    for gpu in gpus:
        subject = "GPU%s" % gpu.get("index")
        gen, gen_max = gpu.get("pcie_link_gen_current"), gpu.get("pcie_link_gen_max")
        width, width_max = gpu.get("pcie_link_width_current"), gpu.get("pcie_link_width_max")
        if None in (gen, gen_max, width, width_max):
            continue
        judged += 1
        items.extend(_against_profile(GPU_LINK, node, subject, gen_max, width_max, "gpu"))
        message = "%s runs %s, capable of %s" % (subject, _link(width, gen), _link(width_max, gen_max))
        current, maximum = {"width": width, "gen": gen}, {"width": width_max, "gen": gen_max}
        design = _width_by_design(node, "gpu", width, width_max)
        if design:
            by_design.append("%s x%s (the SKU's width)" % (subject, width))
        if width < width_max and not design:
            items.append(result(GPU_LINK, FAIL, message + ": lanes missing (riser, slot or GPU fault)",
                                measured=current, expected=maximum, threshold_source=OWN_MAX, subject=subject))
        elif gen < gen_max:
            if (gpu.get("clock_event_reasons") or {}).get("idle") is True:
                idle_low.append(subject)
            else:
                items.append(result(GPU_LINK, WARN, message + " while not idle: check it under load",
                                    measured=current, expected=maximum, threshold_source=OWN_MAX, subject=subject))
    if not judged:
        return [result(GPU_LINK, SKIP, "not judged: nvidia-smi printed no PCIe link generation/width")]
    if items:
        return items
    note = "; %s below max Gen at idle (power saving, normal)" % ", ".join(idle_low) if idle_low else ""
    if by_design:
        note += "; below the card's maximum by design: %s" % ", ".join(by_design)
        return [result(GPU_LINK, PASS, "%d GPU(s) at the SKU's PCIe width%s" % (judged, note),
                       threshold_source=_sku_width(node, "gpu")[1])]
    return [result(GPU_LINK, PASS, "%d GPU(s) at full PCIe width%s" % (judged, note), threshold_source=OWN_MAX)]


def _nic_name(iface: dict[str, Any]) -> Any:
    return iface.get("rdma_device") or iface.get("name")


def _nic_pcie(iface: dict[str, Any]) -> tuple[Any, Any, Any, Any] | None:
    """``(gen, gen_max, width, width_max)`` of a NIC's PCIe link, None when one of them is unknown."""
    pcie = iface.get("pcie") or {}
    figures = (pcie.get("gen_current"), pcie.get("gen_max"), pcie.get("width_current"), pcie.get("width_max"))
    return None if None in figures else figures


@node_check(NIC_LINK, requires=("nic",))
def nic_link(node: NodeContext) -> list[CheckResult]:
    """Each RDMA NIC's PCIe generation and width, current against maximum."""
    interfaces = node.group("nic").get("interfaces") or []
    items, judged, seen, unjudged = [], 0, set(), []
    for iface in interfaces:
        figures = _nic_pcie(iface)
        if iface.get("virtual") or figures is None:
            continue
        gen, gen_max, width, width_max = figures
        subject = _nic_name(iface)
        key = iface.get("pci_address") or subject
        if key in seen:
            continue
        seen.add(key)
        message = "%s runs %s, capable of %s" % (subject, _link(width, gen), _link(width_max, gen_max))
        degraded = (width < width_max and not _width_by_design(node, "nic", width, width_max)) or gen < gen_max
        if not iface.get("rdma_device"):
            if degraded:
                unjudged.append(message)
            continue
        judged += 1
        items.extend(_against_profile(NIC_LINK, node, subject, gen_max, width_max, "nic"))
        if degraded:
            items.append(result(NIC_LINK, FAIL, message, measured={"width": width, "gen": gen},
                                expected={"width": width_max, "gen": gen_max}, threshold_source=OWN_MAX,
                                subject=subject))
    skipped = [result(NIC_LINK, SKIP, "not judged (no RDMA device, not on the GPU data path): %s"
                      % "; ".join(unjudged))] if unjudged else []
    if not judged:
        return skipped or [result(NIC_LINK, SKIP, "not judged: no RDMA NIC with a PCIe link reading")]
    if items:
        return items + skipped
    return [result(NIC_LINK, PASS, "%d RDMA NIC(s) at their maximum PCIe width and generation" % judged,
                   threshold_source=OWN_MAX)] + skipped
