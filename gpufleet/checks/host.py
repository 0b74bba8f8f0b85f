# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host checks (pure): GPUDirect RDMA, ACS on GPU<->NIC paths, IOMMU, memlock, Xids in the kernel log.

Reads ``gpufleet_host`` (see docs/facts/host_facts.md). Whether RDMA matters on a node comes from
the claim's InfiniBand/RoCE NICs or the profile's compute rail (``network.rdma_rails``), and for
memlock also from Active RDMA ports in ``gpufleet_nic``. What the facts could not establish is a
warning that says why ("could not verify"), never a pass.
"""

from __future__ import annotations

from typing import Any

from gpufleet.checks.registry import node_check
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.network import active_rdma_ports, rdma_rails
from gpufleet.checks.profiles import profile_value
from gpufleet.facts import xid_catalog

GDR_SOURCE = "NVIDIA GPUDirect RDMA docs: nvidia-peermem, or dma-buf (kernel >= 5.12, open kernel module)"
ACS_SOURCE = "NCCL troubleshooting docs, PCI Access Control Services: ACS redirect must be off on GPU/NIC paths"
IOMMU_SOURCE = "NCCL troubleshooting docs, IOMMU: translated DMA slows GPUDirect P2P/RDMA (iommu=pt)"
MEMLOCK_SOURCE = "RDMA memory registration pins pages: memlock must be unlimited (host_facts docs)"
XID_SOURCE = "NVIDIA Xid catalog, Resolution Bucket (Immediate Action): docs.nvidia.com/deploy/xid-errors"
SXID_SOURCE = ("NVIDIA Fabric Manager user guide, SXid errors: the NVSwitch driver prints Fatal or Non-fatal on each "
               "SXid headline (docs/baselines.md 8)")


def rdma_expected(node: NodeContext) -> tuple[bool, str | None]:
    """``(expected, source)``: does the claim or profile promise RDMA compute rails (or require GPUDirect)?"""
    rails = rdma_rails(node)
    if rails:
        return True, rails[0]["source"]
    required, source = profile_value(node.profile, "host.gpudirect_required")
    if required:
        return True, source
    return False, "claim" if rails is not None else None


@node_check("host.gpudirect", requires=("host",))
def check_gpudirect(node: NodeContext) -> list[CheckResult]:
    """GPUDirect RDMA possible: nvidia-peermem loaded, or dma-buf possible."""
    check_id = "host.gpudirect"
    gdr = node.group("host").get("gpudirect_rdma") or {}
    expected, source = rdma_expected(node)
    reasons = "; ".join(gdr.get("reasons") or []) or "no reason recorded"
    measured = {"peermem_loaded": gdr.get("peermem_loaded"), "dmabuf_possible": gdr.get("dmabuf_possible")}
    if gdr.get("ok"):
        how = ("nvidia-peermem (%s) loaded" % gdr.get("peermem_module") if gdr.get("peermem_loaded")
               else "dma-buf possible (kernel and open kernel module)")
        return [result(check_id, PASS, "GPUDirect RDMA available: %s" % how, measured=measured,
                       expected="peermem or dma-buf", threshold_source=GDR_SOURCE)]
    if gdr.get("ok") is None:
        return [result(check_id, WARN, "could not verify GPUDirect RDMA: %s" % reasons, measured=measured,
                       expected="peermem or dma-buf", threshold_source=GDR_SOURCE)]
    if expected:
        return [result(check_id, FAIL, "GPUDirect RDMA unavailable on a node sold with RDMA compute rails: %s"
                       % reasons, measured=measured, expected="peermem or dma-buf", threshold_source=source)]
    return [result(check_id, WARN, "GPUDirect RDMA unavailable (no RDMA rail claimed, so not rejected): %s" % reasons,
                   measured=measured, expected="peermem or dma-buf", threshold_source=GDR_SOURCE)]


@node_check("host.acs", requires=("host",))
def check_acs(node: NodeContext) -> list[CheckResult]:
    """ACS redirect off on every PCIe bridge between GPUs and RDMA NICs."""
    check_id = "host.acs"
    acs = node.group("host").get("acs") or {}
    state = acs.get("state")
    if state == "enabled_on_path":
        return [_acs_redirect(check_id, bridge) for bridge in acs.get("bridges_with_acs_on_path") or []]
    if state == "disabled":
        bridges = acs.get("bridges_on_path") or []
        why = acs.get("reason") or "%d bridge(s) on the GPU/NIC paths, none redirecting" % len(bridges)
        return [result(check_id, PASS, "ACS redirect off on the GPU/NIC paths: %s" % why, measured="disabled",
                       expected="disabled", threshold_source=ACS_SOURCE)]
    return [result(check_id, WARN, "could not verify ACS on the GPU/NIC paths: %s"
                   % (acs.get("reason") or "state unknown"), measured=state, expected="disabled",
                   threshold_source=ACS_SOURCE)]


def _acs_redirect(check_id: str, bridge: dict[str, Any]) -> CheckResult:
    """The failure of one bridge on a GPU/NIC path with ACS redirect on."""
    description = " (%s)" % bridge["description"] if bridge.get("description") else ""
    return result(
        check_id, FAIL,
        "ACS redirect on (%s) at bridge %s%s above %s: GPU peer-to-peer and GPUDirect RDMA traffic is forced up to "
        "the root complex" % (", ".join(bridge.get("enabled") or []), bridge["address"], description,
                              ", ".join(bridge.get("devices") or [])),
        measured=bridge.get("enabled"), expected="ReqRedir- CmpltRedir-", threshold_source=ACS_SOURCE,
        subject=bridge["address"])


@node_check("host.iommu", requires=("host",))
def check_iommu(node: NodeContext) -> list[CheckResult]:
    """IOMMU off or in passthrough; translated DMA mode warns."""
    check_id = "host.iommu"
    iommu = node.group("host").get("iommu") or {}
    mode = iommu.get("mode")
    if mode in ("off", "passthrough"):
        return [result(check_id, PASS, "IOMMU %s" % mode, measured=mode, expected="off or passthrough",
                       threshold_source=IOMMU_SOURCE)]
    if mode == "translated":
        types = ", ".join("%s x%s" % (name, count) for name, count in sorted((iommu.get("group_types") or {}).items()))
        return [result(check_id, WARN, "IOMMU in translated DMA mode (groups %s): every GPU/NIC DMA is remapped; set "
                       "iommu=pt" % (types or "DMA"), measured=mode, expected="off or passthrough",
                       threshold_source=IOMMU_SOURCE)]
    return [result(check_id, SKIP, "not judged: IOMMU mode unknown (%s)"
                   % (iommu.get("reason") or "no reason recorded"), measured=mode)]


@node_check("host.memlock", requires=("host",))
def check_memlock(node: NodeContext) -> list[CheckResult]:
    """The locked-memory limit is unlimited (RDMA pins memory)."""
    check_id = "host.memlock"
    required, memlock_source = profile_value(node.profile, "host.memlock_unlimited")
    if required is False:
        return [result(check_id, SKIP, "not judged: the profile does not require an unlimited memlock limit",
                       threshold_source=memlock_source)]
    memlock = node.group("host").get("memlock") or {}
    source = memlock_source if required else MEMLOCK_SOURCE
    if memlock.get("ok"):
        return [result(check_id, PASS, "memlock soft limit unlimited", measured="unlimited", expected="unlimited",
                       threshold_source=source)]
    if memlock.get("ok") is None:
        return [result(check_id, WARN, "could not verify the memlock limit (neither /proc/self/limits nor getrlimit "
                       "was read)", measured=None, expected="unlimited", threshold_source=source)]
    expected, why = rdma_expected(node)
    active = active_rdma_ports(node.group("nic"))
    limit = ("memlock soft limit %s bytes (of the Ansible session; jobs inherit their daemon's limit), expected "
             "unlimited" % memlock.get("soft"))
    if expected or active:
        reason = "RDMA compute rails claimed" if expected else "Active RDMA ports %s" % ", ".join(active)
        return [result(check_id, FAIL, "%s: %s" % (limit, reason), measured=memlock.get("soft"), expected="unlimited",
                       threshold_source=why if expected else source)]
    return [result(check_id, WARN, "%s (no RDMA on this node, so not rejected)" % limit, measured=memlock.get("soft"),
                   expected="unlimited", threshold_source=source)]


def _xid_status(node: NodeContext) -> tuple[str, str | None]:
    critical_fail, source = profile_value(node.profile, "host.xid_critical_fail")
    if critical_fail is False:
        return WARN, source
    if critical_fail:
        return FAIL, source
    return FAIL, XID_SOURCE


def _kernel_log_unread(check_id: str, what: str, xid: dict[str, Any], source: str) -> CheckResult:
    """The warning of a check whose kernel log could not be read (``xid``: the host facts' kernel-log group)."""
    why = xid.get("reason") or "no reason recorded"
    return result(check_id, WARN, "could not verify %s: kernel log unreadable (%s)" % (what, why), expected=0,
                  threshold_source=source)


@node_check("host.xid", requires=("host",))
def check_xid(node: NodeContext) -> list[CheckResult]:
    """Xids in this boot's kernel log judged by NVIDIA's catalog bucket: a repair fails (one result per Xid, with
    its count); application-level ones and Xids the catalog does not list are noted together as one warning."""
    check_id = "host.xid"
    xid = node.group("host").get("xid") or {}
    if xid.get("state") != "read":
        return [_kernel_log_unread(check_id, "Xids", xid, XID_SOURCE)]
    fail_status, profile_source = _xid_status(node)
    catalog = xid_catalog.catalog()
    recovery = xid.get("recovery_actions") or {}
    out, noted = [], []
    for key, count in sorted(((int(key), count) for key, count in (xid.get("counts") or {}).items())):
        if xid_catalog.xid_status(key, recovery) != xid_catalog.FAIL:
            noted.append((key, count))  # application-level, unlisted, or every Xid 154 back to None
            continue
        entry = catalog[key]
        message = "Xid %d (%s) x%d in the kernel log (%s)" % (key, entry["meaning"], count, xid.get("source"))
        if entry["status"] == xid_catalog.RECOVERY_ACTION:
            message += ": " + "; ".join("GPU %s asks for %s" % (pci, action or "an action the line does not name")
                                        for pci, action in xid_catalog.recovery_failures(recovery))
        source = profile_source if profile_source != XID_SOURCE else entry["source"]
        out.append(result(check_id, fail_status, message, measured=count, expected=0, threshold_source=source,
                          subject="Xid %d" % key))
    if noted:
        out.append(result(check_id, WARN, "non-critical Xids in the kernel log (application faults, e.g. a previous "
                          "tenant's job): %s" % ", ".join("%d x%d" % pair for pair in noted),
                          measured=dict((str(key), count) for key, count in noted), expected=0,
                          threshold_source=XID_SOURCE,
                          subject="Xid %s" % ",".join(str(key) for key, _count in noted)))
    if out:
        return out
    return [result(check_id, PASS, "no Xid in the kernel log (%s)" % xid.get("source"), measured=0, expected=0,
                   threshold_source=XID_SOURCE)]


@node_check("host.sxid", requires=("host",))
def check_sxid(node: NodeContext) -> list[CheckResult]:
    """NVSwitch SXids in this boot's kernel log: a Fatal one fails (one result per SXid number); Non-fatal ones warn."""
    check_id = "host.sxid"
    xid = node.group("host").get("xid") or {}
    if xid.get("state") != "read":
        return [_kernel_log_unread(check_id, "NVSwitch SXids", xid, SXID_SOURCE)]
    fail_status, profile_source = _xid_status(node)
    source = profile_source if profile_source != XID_SOURCE else SXID_SOURCE
    out = _fatal_sxids(check_id, xid, fail_status, source) + _other_sxids(check_id, xid)
    return out or [result(check_id, PASS, "no NVSwitch SXid in the kernel log (%s)" % xid.get("source"), measured=0,
                          expected=0, threshold_source=SXID_SOURCE)]


def _fatal_sxids(check_id: str, xid: dict[str, Any], status: str, source: str | None) -> list[CheckResult]:
    """One result per Fatal SXid number of the kernel-log facts ``xid``."""
    out = []
    for item in (xid.get("sxid") or {}).get("fatal") or []:
        message = "fatal NVSwitch SXid %d x%d in the kernel log (%s) on %s: %s" % (
            item["sxid"], item["count"], xid.get("source"), ", ".join(item["switches"]), item["first_message"])
        out.append(result(check_id, status, message, measured=item["count"], expected=0, threshold_source=source,
                          subject="SXid %d" % item["sxid"]))
    return out


def _other_sxids(check_id: str, xid: dict[str, Any]) -> list[CheckResult]:
    """The warnings of the SXids that are not Fatal: those of unknown severity, then the Non-fatal ones."""
    sxid = xid.get("sxid") or {}
    fatal = {str(item["sxid"]) for item in sxid.get("fatal") or []}
    unknown = {str(number) for number in sxid.get("severity_unknown") or []}
    counts = sxid.get("counts") or {}
    out = []
    if unknown:
        out.append(_sxid_severity_unknown(check_id, xid.get("source"),
                                          sorted((int(key), counts.get(key, 0)) for key in unknown)))
    others = sorted((int(key), count) for key, count in counts.items() if key not in fatal and key not in unknown)
    if others:
        out.append(result(check_id, WARN, "non-fatal NVSwitch SXids in the kernel log: %s" % _counted(others),
                          measured=dict((str(key), count) for key, count in others), expected=0,
                          threshold_source=SXID_SOURCE,
                          subject="SXid %s" % ",".join(str(key) for key, _count in others)))
    return out


def _counted(pairs: list[tuple[int, Any]]) -> str:
    """``12 x3, 20 x1``: (number, count) pairs as a message lists them."""
    return ", ".join("%d x%d" % pair for pair in pairs)


def _sxid_severity_unknown(check_id: str, log_source: Any, pairs: list[tuple[int, Any]]) -> CheckResult:
    """The warning naming the SXids whose headline (Fatal or Non-fatal) is not in the log: ``pairs`` (number, count)."""
    return result(check_id, WARN, "NVSwitch SXids in the kernel log (%s) of unknown severity: %s: only their "
                  "detail lines (Severity, Data) are in the log, not the headline that says Fatal or "
                  "Non-fatal; read the switch's full log" % (log_source, _counted(pairs)),
                  measured=dict((str(key), count) for key, count in pairs), expected=0,
                  threshold_source=SXID_SOURCE, subject="SXid %s" % ",".join(str(pair[0]) for pair in pairs))


@node_check("host.fallen_off_bus", requires=("host",))
def check_fallen_off_bus(node: NodeContext) -> list[CheckResult]:
    """A GPU that fell off the bus in this boot fails, naming its PCI address."""
    check_id = "host.fallen_off_bus"
    xid = node.group("host").get("xid") or {}
    if xid.get("state") != "read":
        return [result(check_id, WARN, "could not verify: kernel log unreadable (%s)"
                       % (xid.get("reason") or "no reason recorded"), threshold_source=XID_SOURCE)]
    out = [result(check_id, FAIL, "GPU %s has fallen off the bus (kernel log, %s)" % (pci, xid.get("source")),
                  measured="fallen off the bus", expected="on the bus", threshold_source=XID_SOURCE, subject=pci)
           for pci in xid.get("fallen_off_bus") or []]
    return out or [result(check_id, PASS, "no GPU fell off the bus in this boot's kernel log",
                          threshold_source=XID_SOURCE)]


@node_check("host.peermem_errors", requires=("host",))
def check_peermem_errors(node: NodeContext) -> list[CheckResult]:
    """nvidia-peermem errors in the kernel log warn (GPUDirect RDMA registrations failing)."""
    check_id = "host.peermem_errors"
    xid = node.group("host").get("xid") or {}
    if xid.get("state") != "read":
        return [result(check_id, SKIP, "not judged: kernel log unreadable")]
    count = xid.get("peermem_errors") or 0
    if count:
        return [result(check_id, WARN, "%d nvidia-peermem error line(s) in the kernel log: GPUDirect RDMA "
                       "registrations failed" % count, measured=count, expected=0, threshold_source=GDR_SOURCE)]
    return [result(check_id, PASS, "no nvidia-peermem error in the kernel log", measured=0, expected=0,
                   threshold_source=GDR_SOURCE)]
