# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests of the host_facts derivations (pure); expected values read by hand from the recordings."""

from __future__ import annotations

import os

import pytest

from gpufleet.facts import host as inv
from gpufleet.facts.raw import RawReader
from gpufleet.parsers.kernel_log import parse_kernel_log
from gpufleet.parsers.kernel_modules import parse_kernel_modules
from gpufleet.parsers.lspci_acs import parse_lspci_acs
from gpufleet.parsers.resource_limits import parse_limits

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures")
HGX_LSPCI = "misc/gpud-lspci-vvv-hgx-h100-8gpu-4nvswitch-8cx7-2cx6dx-FULL.txt"
# the driver banner of misc/nvsentinel-issue155-...-570-open.txt after "loading "
OPEN_NVRM = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build  (dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025\n"
# synthetic: the proprietary module's layout, with the driver version of the RTX 4090 nvidia-smi -q recording
CLOSED_NVRM = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.154.05  Thu Dec 28 15:37:48 UTC 2023\nGCC version:  gcc version 12.3.0\n"


@pytest.fixture(name="hgx_lspci", scope="module")
def hgx_lspci_fixture():
    with open(os.path.join(FIXTURES, HGX_LSPCI), "r", encoding="utf-8") as handle:
        return parse_lspci_acs(handle.read())


# --- kernel, driver, GPUDirect RDMA ----------------------------------------------------------


def test_kernel_from_osrelease_else_uname():
    kernel = inv.kernel_info("5.15.0-112-generic\n", {"release": "6.8.0-1-generic", "machine": "x86_64"})
    assert (kernel["release"], kernel["major"], kernel["minor"], kernel["machine"]) == ("5.15.0-112-generic", 5, 15, "x86_64")
    assert inv.kernel_info(None, {"release": "6.8.0-1-generic"})["minor"] == 8
    assert inv.kernel_info(None, None)["major"] is None


def test_driver_open_and_proprietary():
    driver = inv.driver_info(OPEN_NVRM)
    assert driver["version"] == "570.158.01"
    assert driver["open_kernel_module"] is True
    closed = inv.driver_info(CLOSED_NVRM)
    assert closed["version"] == "535.154.05"
    assert closed["open_kernel_module"] is False
    missing = inv.driver_info(None)
    assert missing["version"] is None and missing["open_kernel_module"] is None
    assert "not readable" in missing["reason"]


def test_peermem_loaded_from_the_pr39_lsmod(fixture_text):
    modules = parse_kernel_modules(fixture_text("misc/gpud-pr39-h100-lsmod-peermem-ib_core-nvidia-3lines-FROM-YAML.txt"))
    gdr = inv.gpudirect_rdma(modules, inv.kernel_info("5.15.0-112-generic", None), inv.driver_info(CLOSED_NVRM))
    assert gdr["peermem_loaded"] is True
    assert gdr["peermem_module"] == "nvidia_peermem"
    assert gdr["dmabuf_possible"] is False
    assert gdr["ok"] is True
    assert gdr["reasons"] == ["proprietary NVIDIA kernel module: dma-buf GPUDirect RDMA needs the open kernel module"]


def test_issue988_not_loaded_old_kernel_closed_driver(fixture_text):
    modules = parse_kernel_modules(fixture_text("misc/nccl-issue988-a100-lsmod-grep-peermem-EMPTY-not-loaded.txt"))
    gdr = inv.gpudirect_rdma(modules, inv.kernel_info("5.4.0-150-generic", None), inv.driver_info(CLOSED_NVRM))
    assert gdr["peermem_loaded"] is False
    assert gdr["dmabuf_possible"] is False
    assert gdr["ok"] is False
    assert len(gdr["reasons"]) == 3
    assert gdr["reasons"][0] == "nvidia_peermem (or nv_peer_mem) is not loaded"
    assert gdr["reasons"][1].startswith("kernel 5.4.0-150-generic is older than 5.12")


def test_dmabuf_alone_is_enough(fixture_text):
    modules = parse_kernel_modules(fixture_text("misc/nccl-issue988-a100-lsmod-grep-peermem-EMPTY-not-loaded.txt"))
    gdr = inv.gpudirect_rdma(modules, inv.kernel_info("5.15.0-112-generic", None), inv.driver_info(OPEN_NVRM))
    assert (gdr["peermem_loaded"], gdr["dmabuf_possible"], gdr["ok"]) == (False, True, True)


def test_unknowns_stay_unknown():
    gdr = inv.gpudirect_rdma(None, inv.kernel_info(None, None), inv.driver_info(None), "/proc/modules not found")
    assert gdr["peermem_loaded"] is None
    assert gdr["dmabuf_possible"] is None
    assert gdr["ok"] is None
    assert gdr["reasons"][0] == "loaded modules unknown: /proc/modules not found"


# --- ACS on GPU <-> NIC paths -------------------------------------------------------------------

# Paths from the Bus: primary/secondary lines of the lspci recording: GPU 19:00.0 under 17:01.0, CX-7 1a:00.0
# under 17:02.0, both below switch upstream port 16:00.0 and root port 15:01.0.
GPU_19 = {"kind": "gpu", "name": "0000:19:00.0", "address": "0000:19:00.0", "bridges": ["0000:15:01.0", "0000:16:00.0", "0000:17:01.0"]}
NIC_1A = {"kind": "rdma", "name": "mlx5_0", "address": "0000:1a:00.0", "bridges": ["0000:15:01.0", "0000:16:00.0", "0000:17:02.0"]}
# NVSwitch 83:00.0 under PMC-Sierra port 82:00.0 (ACSCtl ReqRedir+ CmpltRedir+), 81:00.0 and root port 80:01.0
NVSWITCH_83 = {"kind": "gpu", "name": "0000:83:00.0", "address": "0000:83:00.0", "bridges": ["0000:80:01.0", "0000:81:00.0", "0000:82:00.0"]}


def test_acs_disabled_on_the_hgx_gpu_and_nic_paths(hgx_lspci):
    acs = inv.acs_state([GPU_19, NIC_1A], hgx_lspci)
    assert acs["state"] == "disabled"
    assert acs["bridges_on_path"] == ["0000:15:01.0", "0000:16:00.0", "0000:17:01.0", "0000:17:02.0"]
    assert acs["bridges_with_acs_on_path"] == []
    assert acs["unknown_bridges"] == []


def test_acs_enabled_when_a_path_crosses_the_pmc_sierra_port(hgx_lspci):
    acs = inv.acs_state([GPU_19, NVSWITCH_83], hgx_lspci)
    assert acs["state"] == "enabled_on_path"
    flagged = acs["bridges_with_acs_on_path"]
    assert [b["address"] for b in flagged] == ["0000:82:00.0"]
    assert flagged[0]["enabled"] == ["CmpltRedir", "ReqRedir", "SrcValid", "UpstreamFwd"]
    assert flagged[0]["devices"] == ["0000:83:00.0"]


def test_acs_unknown_without_lspci_or_capabilities(fixture_text):
    assert inv.acs_state([GPU_19], None, "lspci not found")["reason"] == "lspci not found"
    # plain lspci output shows no capabilities: unknown, never disabled
    plain = parse_lspci_acs(fixture_text("misc/gpud-lspci-gb200-4gpu-tray-no-names.txt"))
    acs = inv.acs_state([GPU_19], plain)
    assert acs["state"] == "unknown"
    assert "become" in str(acs["reason"])


def test_acs_unknown_for_a_bridge_lspci_did_not_print(hgx_lspci):
    ghost = dict(GPU_19, bridges=["0000:15:01.0", "0000:ee:00.0"])
    acs = inv.acs_state([ghost], hgx_lspci)
    assert acs["state"] == "unknown"
    assert acs["unknown_bridges"] == ["0000:ee:00.0"]


def test_acs_no_device_and_flat_bus(hgx_lspci):
    assert inv.acs_state([], hgx_lspci)["state"] == "unknown"
    flat = inv.acs_state([dict(GPU_19, bridges=[])], hgx_lspci)
    assert flat["state"] == "disabled"
    assert "no PCI bridge" in str(flat["reason"])


# --- IOMMU, memlock, versions -------------------------------------------------------------------


def test_iommu_modes():
    passthrough = inv.iommu_info("ro intel_iommu=on iommu=pt", ["dmar0", "dmar1"], {"identity": 3}, 3)
    assert passthrough["mode"] == "passthrough"
    assert passthrough["cmdline_flags"] == {"intel_iommu": "on", "iommu": "pt"}
    assert inv.iommu_info("ro amd_iommu=on", ["ivhd0"], {"DMA-FQ": 40}, 40)["mode"] == "translated"
    assert inv.iommu_info("ro", [], {}, 0)["mode"] == "off"
    assert inv.iommu_info("ro iommu=pt", ["dmar0"], {}, 5)["mode"] == "passthrough"
    unknown = inv.iommu_info("ro", ["dmar0"], {}, 5)
    assert unknown["mode"] == "unknown" and unknown["reason"]


def test_memlock_from_the_trinityx_limits(fixture_text):
    limits = parse_limits(fixture_text("misc/trinityx-issue188-slurmd-proc-limits-grep-locked-65536.txt"))
    memlock = inv.memlock_info(limits, {"soft": None, "hard": None, "error": None})
    assert (memlock["soft"], memlock["hard"], memlock["unlimited"], memlock["ok"], memlock["source"]) == (65536, 65536, False, False, "limits")


def test_memlock_from_getrlimit_when_the_file_is_unreadable():
    memlock = inv.memlock_info(None, {"soft": None, "hard": None, "error": None})
    assert (memlock["unlimited"], memlock["ok"], memlock["source"]) == (True, True, "getrlimit")
    assert inv.memlock_info(None, {"soft": 8388608, "hard": 8388608, "error": None})["ok"] is False
    assert inv.memlock_info(None, None)["ok"] is None


def test_versions():
    # synthetic tool lines; the OFED release is the one named in tests/fixtures/ib/SOURCES.md (Azure ND H200 v5)
    assert inv.ofed_version("MLNX_OFED_LINUX-23.10-1.1.9.0:\n") == "MLNX_OFED_LINUX-23.10-1.1.9.0"
    assert inv.ofed_version("") is None
    assert inv.mpi_version("mpirun (Open MPI) 4.1.5\n\nReport bugs to https://www.open-mpi.org/community/help/\n")["version"] == "4.1.5"
    assert inv.mpi_version("HYDRA build details:\n    Version:                                 4.1.2\n")["version"] == "4.1.2"
    assert inv.nccl_version([{"path": "/usr/lib/x86_64-linux-gnu/libnccl.so.2", "target": "libnccl.so.2.18.3"}], [])["version"] == "2.18.3"
    header = {"path": "/usr/include/nccl.h", "defines": "#define NCCL_MAJOR 2\n#define NCCL_MINOR 21\n#define NCCL_PATCH 5\n#define NCCL_VERSION_CODE 22105"}
    assert inv.nccl_version([{"path": "/x/libnccl.so.2", "target": "libnccl.so.2"}], [header]) == {"version": "2.21.5", "source": "/usr/include/nccl.h"}
    assert inv.nccl_version([], []) is None


# --- uptime: the time base of the GPUs' cumulative counters ---------------------------------


def test_uptime_is_the_first_field_of_proc_uptime():
    # "350735.47 234388.90": the `cat /proc/uptime` example of Wikipedia's "Uptime" article (up, then idle seconds)
    assert inv.uptime_seconds("350735.47 234388.90\n") == 350735.47
    assert inv.uptime_seconds("600.00 1100.00") == 600.0
    for unknown in (None, "", "\n", "up 4 days", "nan 1.0", "-3.00 1.00"):
        assert inv.uptime_seconds(unknown) is None, unknown


def _uptime_entry(**fields):
    entry = {"cmd": ["/proc/uptime"], "rc": None, "stdout": "", "stderr": "", "duration_s": 0.0, "error": None}
    entry.update(fields)
    return entry


def test_uptime_fact_from_the_collected_file():
    read = {"files": {"uptime": _uptime_entry(rc=0, stdout="350735.47 234388.90\n")}}
    assert inv.build_facts(RawReader("h1", read))["gpufleet_host"]["uptime_s"] == 350735.47
    # a missing file (a replayed node's tree without one) is uptime unknown, not a failure of the group
    missing = {"files": {"uptime": _uptime_entry(error="not_found")}}
    assert inv.build_facts(RawReader("h1", missing))["gpufleet_host"]["uptime_s"] is None
    # a collector from before the uptime was read
    assert inv.build_facts(RawReader("h1", {"files": {}}))["gpufleet_host"]["uptime_s"] is None


# --- Xid --------------------------------------------------------------------------------------


def test_xid_critical_from_the_dbe_row_remap_recording(fixture_text):
    log = parse_kernel_log(fixture_text("misc/gpud-dmesg-iso-xid-48-63-94-dbe-rowremap-plus-peermem-errors.txt"))
    xid = inv.xid_summary(log, "dmesg", keep=2)
    assert xid["state"] == "read"
    assert [(c["xid"], c["count"]) for c in xid["critical"]] == [(48, 1), (63, 1), (94, 9)]
    assert xid["events_total"] == 11
    assert [e["line"] for e in xid["events"]] == [20, 21]
    assert xid["peermem_errors"] == 30


def test_xid_13_and_43_are_not_critical(fixture_text):
    log = parse_kernel_log(fixture_text("misc/gpud-dmesg-decode-iso-xid-13-x629-xid-43-x7.txt"))
    xid = inv.xid_summary(log, "dmesg")
    assert xid["critical"] == []
    assert xid["counts"] == {"13": 629, "43": 7}
    assert len(xid["events"]) == inv.EVENTS_KEPT


def test_unreadable_log_is_not_no_xids():
    xid = inv.xid_summary(None, None, "journalctl not found; `dmesg --time-format iso` exited 1: dmesg: read kernel buffer failed: Operation not permitted")
    assert xid["state"] == "unreadable"
    assert xid["counts"] == {}
    assert xid["events_total"] is None
    facts = {
        "gpudirect_rdma": {"ok": True, "reasons": []},
        "acs": {"state": "disabled"},
        "iommu": {"mode": "passthrough"},
        "memlock": {"ok": True},
        "xid": xid,
        "driver": {"version": "570.158.01"},
    }
    assert inv.summary(facts) == ["kernel_log: unreadable (%s)" % xid["reason"]]
