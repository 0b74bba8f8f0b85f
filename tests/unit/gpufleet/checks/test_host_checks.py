# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host checks on REAL host facts: the gpufleet.facts.host derivations run on the recordings.

Facts are built group by group as the host_facts action builds them. Inputs marked SYNTHETIC
(the kernel release, the driver banner of the proprietary module, IOMMU trees, getrlimit values)
have no recording; they are the ones tests/unit/gpufleet/facts/test_host.py uses.
"""

from __future__ import annotations

from gpufleet.facts import host as inv
from gpufleet.checks import engine
from gpufleet.checks import host
from gpufleet.checks.model import FAIL, INCOMPLETE, PASS, REJECT, SKIP, WARN, NodeContext
from gpufleet.facts.nic import build_nic_facts
from gpufleet.parsers.registry import parse

HGX_LSPCI = "misc/gpud-lspci-vvv-hgx-h100-8gpu-4nvswitch-8cx7-2cx6dx-FULL.txt"
PEERMEM_LSMOD = "misc/gpud-pr39-h100-lsmod-peermem-ib_core-nvidia-3lines-FROM-YAML.txt"
NO_PEERMEM_LSMOD = "misc/nccl-issue988-a100-lsmod-grep-peermem-EMPTY-not-loaded.txt"
XID_LOG = "misc/gpud-dmesg-iso-xid-48-63-94-dbe-rowremap-plus-peermem-errors.txt"
PEERMEM_JOURNAL = "misc/gpud-journalctl-short-iso-kernel-nvidia-peermem-invalid-context.txt"
# SYNTHETIC banner: the proprietary module's layout (as in tests/unit/gpufleet/facts/test_host.py)
CLOSED_NVRM = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.154.05  Thu Dec 28 15:37:48 UTC 2023\n"
# Paths from the Bus: lines of the HGX lspci recording (see tests/unit/gpufleet/facts/test_host.py): GPU 19:00.0 and CX-7 1a:00.0.
GPU_19 = {"kind": "gpu", "name": "0000:19:00.0", "address": "0000:19:00.0", "bridges": ["0000:15:01.0", "0000:16:00.0", "0000:17:01.0"]}
NIC_1A = {"kind": "rdma", "name": "mlx5_0", "address": "0000:1a:00.0", "bridges": ["0000:15:01.0", "0000:16:00.0", "0000:17:02.0"]}
# NVSwitch 83:00.0 below the PMC-Sierra port 82:00.0 whose ACSCtl has ReqRedir+ CmpltRedir+ (a path through a redirecting bridge).
BEHIND_82 = {"kind": "gpu", "name": "0000:83:00.0", "address": "0000:83:00.0", "bridges": ["0000:80:01.0", "0000:81:00.0", "0000:82:00.0"]}
IB_CLAIM = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "nics": [{"role": "compute", "type": "ib", "count": 8, "gbps": 400}]}
ETH_CLAIM = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "nics": [{"role": "frontend", "type": "ethernet", "count": 1, "gbps": 100}]}


def host_facts(fixture_text, lsmod=PEERMEM_LSMOD, nvrm=CLOSED_NVRM, kernel="5.15.0-112-generic", endpoints=(GPU_19, NIC_1A), lspci=HGX_LSPCI,
               limits=None, rlimit=None, log=PEERMEM_JOURNAL, log_source="journalctl", log_reason=None, iommu=("ro iommu=pt", ["dmar0"], {"identity": 3}, 3)):
    """gpufleet_host as the action builds it; ``rlimit`` None = getrlimit said unlimited (SYNTHETIC)."""
    kernel_info = inv.kernel_info(kernel, None)
    driver = inv.driver_info(nvrm)
    modules = parse("kernel-modules", fixture_text(lsmod)) if lsmod else None
    lspci_parsed = parse("lspci-acs", fixture_text(lspci)) if lspci else None
    limits_parsed = parse("limits", fixture_text(limits)) if limits else None
    parsed_log = parse("kernel-log", fixture_text(log)) if log else None
    facts = {
        "kernel": kernel_info,
        "driver": driver,
        "gpudirect_rdma": inv.gpudirect_rdma(modules, kernel_info, driver, None if lsmod else "/proc/modules not found"),
        "acs": inv.acs_state(list(endpoints), lspci_parsed, None if lspci else "lspci not found"),
        "iommu": inv.iommu_info(*iommu),
        "memlock": inv.memlock_info(limits_parsed, rlimit or {"soft": None, "hard": None, "error": None}),
        "versions": {"ofed": None, "mpi": None, "nccl": None},
        "xid": inv.xid_summary(parsed_log, log_source if log else None, log_reason),
        "endpoints": list(endpoints),
    }
    facts["summary"] = inv.summary(facts)
    return facts


def ctx(facts, claim=None, profile=None, nic=None, name="n1"):
    return NodeContext(name, facts={"host": facts, "nic": nic}, claim=claim, profile=profile)


def statuses(results):
    return [(item["status"], item["subject"]) for item in results]


def test_healthy_host(fixture_text):
    node = ctx(host_facts(fixture_text), claim=IB_CLAIM)
    for check in (host.check_gpudirect, host.check_acs, host.check_iommu, host.check_memlock, host.check_xid, host.check_fallen_off_bus):
        results = check(node)
        assert [item["status"] for item in results] == [PASS], results
    assert host.check_gpudirect(node)[0]["message"] == "GPUDirect RDMA available: nvidia-peermem (nvidia_peermem) loaded"
    # journalctl recording: no Xid, but 14 nvidia-peermem "invalid context" errors.
    assert host.check_xid(node)[0]["message"] == "no Xid in the kernel log (journalctl)"
    peermem = host.check_peermem_errors(node)
    assert [(item["status"], item["measured"], item["expected"]) for item in peermem] == [(WARN, 14, 0)]


def test_gpudirect_missing_fails_with_rdma_rails_warns_without(fixture_text):
    # NVIDIA/nccl#988: lsmod | grep peermem printed nothing; kernel 5.4 (SYNTHETIC) and the proprietary module: no dma-buf either.
    facts = host_facts(fixture_text, lsmod=NO_PEERMEM_LSMOD, kernel="5.4.0-150-generic")
    failed = host.check_gpudirect(ctx(facts, claim=IB_CLAIM))
    assert [(item["status"], item["threshold_source"]) for item in failed] == [(FAIL, "claim")]
    assert failed[0]["measured"] == {"peermem_loaded": False, "dmabuf_possible": False}
    assert "nvidia_peermem (or nv_peer_mem) is not loaded" in failed[0]["message"]
    assert [item["status"] for item in host.check_gpudirect(ctx(facts, claim=ETH_CLAIM))] == [WARN]
    assert [item["status"] for item in host.check_gpudirect(ctx(facts))] == [WARN]
    # No claim: the profile requiring GPUDirect makes it a failure, citing the profile.
    profile = {"name": "hgx-h100-8gpu", "host": {"gpudirect_required": True}, "sources": {"host.gpudirect_required": "docs/baselines.md 4 (GDR floors)"}}
    from_profile = host.check_gpudirect(ctx(facts, profile=profile))
    assert [(item["status"], item["threshold_source"]) for item in from_profile] == [(FAIL, "profile hgx-h100-8gpu: docs/baselines.md 4 (GDR floors)")]
    unknown = host.check_gpudirect(ctx(host_facts(fixture_text, lsmod=None, nvrm=None), claim=IB_CLAIM))
    assert unknown[0]["status"] == WARN and unknown[0]["message"].startswith("could not verify GPUDirect RDMA: loaded modules unknown")


def test_acs_redirect_on_a_path_fails_naming_the_bridge(fixture_text):
    results = host.check_acs(ctx(host_facts(fixture_text, endpoints=(GPU_19, BEHIND_82))))
    assert statuses(results) == [(FAIL, "0000:82:00.0")]
    assert results[0]["measured"] == ["CmpltRedir", "ReqRedir", "SrcValid", "UpstreamFwd"]
    assert results[0]["message"].startswith("ACS redirect on (CmpltRedir, ReqRedir, SrcValid, UpstreamFwd) at bridge 0000:82:00.0")
    assert "above 0000:83:00.0" in results[0]["message"]


def test_acs_unknown_warns_with_the_reason(fixture_text):
    # Plain lspci (no -vvv, not root) shows no capabilities.
    results = host.check_acs(ctx(host_facts(fixture_text, lspci="misc/gpud-lspci-gb200-4gpu-tray-no-names.txt")))
    assert results[0]["status"] == WARN
    assert results[0]["message"] == ("could not verify ACS on the GPU/NIC paths: lspci printed no PCI capabilities "
                                     "(it needs root: run the task with become: true)")
    assert host.check_acs(ctx(host_facts(fixture_text, lspci=None)))[0]["message"] == "could not verify ACS on the GPU/NIC paths: lspci not found"


def test_iommu_translated_warns_unknown_skips(fixture_text):
    # SYNTHETIC IOMMU trees (no recording exists): 40 DMA-FQ groups; groups of unreadable type.
    translated = host.check_iommu(ctx(host_facts(fixture_text, iommu=("ro amd_iommu=on", ["ivhd0"], {"DMA-FQ": 40}, 40))))
    assert [(item["status"], item["measured"]) for item in translated] == [(WARN, "translated")]
    assert "DMA-FQ x40" in translated[0]["message"]
    assert host.check_iommu(ctx(host_facts(fixture_text, iommu=("ro", ["dmar0"], {}, 5))))[0]["status"] == SKIP


def test_memlock_65536_fails_with_rdma_warns_without(fixture_text):
    # misc/trinityx-issue188-slurmd-proc-limits-grep-locked-65536.txt: Max locked memory 65536 65536 bytes.
    facts = host_facts(fixture_text, limits="misc/trinityx-issue188-slurmd-proc-limits-grep-locked-65536.txt")
    failed = host.check_memlock(ctx(facts, claim=IB_CLAIM))
    assert [(item["status"], item["measured"], item["expected"]) for item in failed] == [(FAIL, 65536, "unlimited")]
    assert failed[0]["message"].endswith("expected unlimited: RDMA compute rails claimed")
    assert [item["status"] for item in host.check_memlock(ctx(facts, claim=ETH_CLAIM))] == [WARN]
    # No claim, but the node has an Active RDMA port (ibstat recording of a ConnectX-3 FDR port).
    nic = build_nic_facts({"net": [], "infiniband": []}, ibstat=parse("ibstat", fixture_text("ib/ibstat-mlx4-connectx3-fdr56-active.txt")))
    with_rdma = host.check_memlock(ctx(facts, nic=nic))
    assert with_rdma[0]["status"] == FAIL and with_rdma[0]["message"].endswith("Active RDMA ports mlx4_0/1")
    # Limits unreadable and getrlimit failed: could not verify.
    unknown = host_facts(fixture_text)
    unknown["memlock"] = inv.memlock_info(None, None)
    assert host.check_memlock(ctx(unknown, claim=IB_CLAIM))[0]["status"] == WARN


def test_critical_xids_fail_with_counts(fixture_text):
    # Xid 48 x1, 63 x1, 94 x9 on PCI:0000:19:00 and 30 nvidia-peermem errors.
    node = ctx(host_facts(fixture_text, log=XID_LOG, log_source="dmesg"))
    results = host.check_xid(node)
    assert [(item["status"], item["subject"], item["measured"], item["expected"]) for item in results] == [
        (FAIL, "Xid 48", 1, 0), (FAIL, "Xid 63", 1, 0), (FAIL, "Xid 94", 9, 0)]
    assert results[2]["message"] == "Xid 94 (contained ECC error) x9 in the kernel log (dmesg)"
    assert host.check_peermem_errors(node)[0]["measured"] == 30
    # A profile may downgrade critical Xids to warnings.
    profile = {"name": "lab", "host": {"xid_critical_fail": False}, "sources": {"host.xid_critical_fail": "lab policy"}}
    assert {item["status"] for item in host.check_xid(ctx(node.group("host"), profile=profile))} == {WARN}


def test_application_xids_warn(fixture_text):
    # misc/gpud-dmesg-decode-iso-xid-13-x629-xid-43-x7.txt: Xid 13 x629, 43 x7 (not critical).
    results = host.check_xid(ctx(host_facts(fixture_text, log="misc/gpud-dmesg-decode-iso-xid-13-x629-xid-43-x7.txt", log_source="dmesg")))
    assert [(item["status"], item["measured"]) for item in results] == [(WARN, {"13": 629, "43": 7})]


def test_fallen_off_the_bus_fails(fixture_text):
    # misc/nvsentinel-issue155-...: "GPU at PCI:0000:b3:00 has fallen off the bus" (3-line message, no Xid).
    node = ctx(host_facts(fixture_text, log="misc/nvsentinel-issue155-dmesg-fallen-off-bus-MULTILINE-no-xid-570-open.txt", log_source="dmesg"))
    results = host.check_fallen_off_bus(node)
    assert [(item["status"], item["subject"]) for item in results] == [(FAIL, "0000:b3:00.0")]
    assert [item["status"] for item in host.check_xid(node)] == [PASS]


def test_unreadable_kernel_log_warns(fixture_text):
    reason = "journalctl not found; `dmesg --time-format iso` exited 1: dmesg: read kernel buffer failed: Operation not permitted"
    node = ctx(host_facts(fixture_text, log=None, log_reason=reason))
    results = host.check_xid(node)
    assert [item["status"] for item in results] == [WARN]
    assert results[0]["message"] == "could not verify Xids: kernel log unreadable (%s)" % reason
    assert host.check_fallen_off_bus(node)[0]["status"] == WARN


def test_engine_verdicts(fixture_text):
    healthy = ctx(host_facts(fixture_text), claim=IB_CLAIM, name="healthy")
    xid = ctx(host_facts(fixture_text, log=XID_LOG, log_source="dmesg"), claim=IB_CLAIM, name="xid")
    report = engine.run_checks([healthy, xid], families=["host"])
    # the 14 peermem errors of the journal recording warn; only the host family ran, so the claimed GPUs and
    # NICs (IB_CLAIM) were never measured: INCOMPLETE, never ACCEPT (WITH WARNINGS) on host checks alone
    assert report["nodes"]["healthy"]["verdict"] == INCOMPLETE
    assert "GPU count: no result from gpu.count: not run or not recorded" in report["nodes"]["healthy"]["coverage"]["incomplete"]
    assert [item["id"] for item in report["nodes"]["healthy"]["checks"] if item["status"] == WARN] == ["host.peermem_errors"]
    assert report["nodes"]["xid"]["verdict"] == REJECT
    assert report["nodes"]["xid"]["failed"] == ["host.xid", "host.xid", "host.xid"]


# Xid by NVIDIA's catalog bucket; each recording below passed (or only warned) before the catalog.
XID_110 = "misc/gpud-dmesg-decode-iso-xid-13-x628-xid-110-x1-xid-43-x7-EDITED.txt"
XID_154 = "misc/gpud-dmesg-decode-iso-xid-13-x628-xid-154-gpu-reset-required-x1-xid-43-x7-EDITED.txt"
SXID_ONLY = "misc/gpud-sxid-readme-dmesg-sxid-20034-fatal-only-EDITED.txt"
SXID_AND_XID_79 = "misc/gpud-sxid-readme-dmesg-xid-79-then-sxid-20034-fatal-3-nvswitches.txt"


def test_reset_gpu_bucket_xid_fails_application_ones_stay_noted(fixture_text):
    # Xid 110 (security fault, RESET_GPU) x1 was a mere warning before; 13 (RESTART_APP) and 43 (IGNORE) stay noted.
    results = host.check_xid(ctx(host_facts(fixture_text, log=XID_110, log_source="dmesg")))
    assert [(item["status"], item["subject"], item["measured"]) for item in results] == [
        (FAIL, "Xid 110", 1), (WARN, "Xid 13,43", {"13": 628, "43": 7})]
    assert results[0]["message"] == "Xid 110 (security fault) x1 in the kernel log (dmesg)"
    assert results[0]["threshold_source"].startswith("NVIDIA Xid catalog, Resolution Bucket (Immediate Action)")


def test_xid_154_asking_for_a_reset_fails_naming_the_action(fixture_text):
    results = host.check_xid(ctx(host_facts(fixture_text, log=XID_154, log_source="dmesg")))
    assert [(item["status"], item["subject"]) for item in results] == [(FAIL, "Xid 154"), (WARN, "Xid 13,43")]
    assert results[0]["message"] == ("Xid 154 (GPU recovery action changed) x1 in the kernel log (dmesg): "
                                     "GPU 0000:38:00 asks for GPU Reset Required")


def test_fatal_sxid_fails_per_number(fixture_text):
    # No NVRM Xid line: host.xid passes, as it did before; the 4 Fatal SXid 20034 headlines fail host.sxid.
    node = ctx(host_facts(fixture_text, log=SXID_ONLY, log_source="dmesg"))
    assert [item["status"] for item in host.check_xid(node)] == [PASS]
    [sxid] = host.check_sxid(node)
    assert (sxid["status"], sxid["subject"], sxid["measured"], sxid["expected"]) == (FAIL, "SXid 20034", 4, 0)
    assert sxid["message"] == ("fatal NVSwitch SXid 20034 x4 in the kernel log (dmesg) on nvswitch1 (0000:06:00.0), "
                               "nvswitch0 (0000:05:00.0), nvswitch2 (0000:07:00.0): Link 48 LTSSM Fault Up")
    both = ctx(host_facts(fixture_text, log=SXID_AND_XID_79, log_source="dmesg"))
    assert [(item["status"], item["subject"]) for item in host.check_xid(both)] == [(FAIL, "Xid 79")]
    # a kernel log without SXid lines passes
    assert [item["status"] for item in host.check_sxid(ctx(host_facts(fixture_text)))] == [PASS]


SXID_DETAILS_ONLY = "misc/gpud-sxid-readme-dmesg-sxid-20034-detail-lines-only-EDITED.txt"


def test_sxid_seen_only_in_its_detail_lines_still_counts(fixture_text):
    """The log holds SXid 20034's Severity/Data lines of nvswitch2 and nvswitch0 but none of its headlines (EDITED):
    before, nothing was counted and host.sxid passed. Now one event per switch, of unknown severity: a warning that
    says why. The full log (the healthy reading) keeps its four Fatal headlines and nothing of unknown severity."""
    node = ctx(host_facts(fixture_text, log=SXID_DETAILS_ONLY, log_source="dmesg"))
    sxid = node.group("host")["xid"]["sxid"]
    assert (sxid["counts"], sxid["fatal"], sxid["severity_unknown"]) == ({"20034": 2}, [], [20034])
    assert [(event["line"], event["switch"], event["pci"], event["fatal"]) for event in sxid["events"]] == [
        (6, "nvswitch2", "0000:07:00.0", None), (7, "nvswitch0", "0000:05:00.0", None)]
    [result] = host.check_sxid(node)
    assert (result["status"], result["subject"], result["measured"]) == (WARN, "SXid 20034", {"20034": 2})
    assert result["message"] == ("NVSwitch SXids in the kernel log (dmesg) of unknown severity: 20034 x2: only their "
                                 "detail lines (Severity, Data) are in the log, not the headline that says Fatal or "
                                 "Non-fatal; read the switch's full log")
    full = ctx(host_facts(fixture_text, log=SXID_AND_XID_79, log_source="dmesg")).group("host")["xid"]["sxid"]
    assert (full["counts"], full["severity_unknown"], full["fatal"][0]["count"]) == ({"20034": 4}, [], 4)
