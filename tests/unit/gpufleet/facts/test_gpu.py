# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pure merge and derivations behind gpu_facts.

Inputs are the parsers' results on recordings (expected values read by hand from the files
named) or, where a test says SYNTHETIC, a recording's parse with named fields changed.
"""

from __future__ import annotations

import copy

import pytest

from gpufleet.facts.gpu import (
    InventoryMismatch,
    build_inventory,
    lspci_crosscheck,
    merge_nvlink,
    merge_queries,
    normalise_bus_id,
    summarise,
)
from gpufleet.parsers.lspci import parse_lspci
from gpufleet.parsers.registry import parse


@pytest.fixture(name="parsed")
def parsed_fixture(fixture_text):
    def _parsed(kind, relative):
        return parse(kind, fixture_text(relative))

    return _parsed


def _gpus(count, names="NVIDIA RTX A6000"):
    """Minimal per-GPU dicts for the nvlink merge (index, name, uuid None)."""
    return [{"index": i, "name": names, "uuid": None, "pci_bus_id": "00000000:%02X:00.0" % (i + 1)} for i in range(count)]


@pytest.mark.parametrize(
    "given, expected",
    [
        ("00000000:1B:00.0", "0000:1b:00.0"),
        ("00000001:00:00.0", "0001:00:00.0"),
        ("0001:00:00.0", "0001:00:00.0"),
        ("19:00.0", "0000:19:00.0"),
        ("000e:00:00.0", "000e:00:00.0"),
        ("GPU-123", None),
        (None, None),
    ],
)
def test_normalise_bus_id(given, expected):
    assert normalise_bus_id(given) == expected


def test_xml_and_text_of_different_machines_disagree_on_bus_id(parsed):
    xml = parsed("nvidia-smi-xml", "smi/telegraf-nvidia-smi-q-x-a10g-515-v11.xml.txt")  # <gpu id="00000000:00:1E.0">
    text = parsed("nvidia-smi-q", "smi/gpud-nvidia-smi-q-1x-a10-535.129.03.txt")  # GPU 00000000:07:00.0
    with pytest.raises(InventoryMismatch) as err:
        merge_queries(xml, text)
    assert "0000:00:1e.0" in str(err.value) and "0000:07:00.0" in str(err.value)


def test_xml_and_text_disagree_on_gpu_count(parsed):
    xml = parsed("nvidia-smi-xml", "smi/telegraf-nvidia-smi-q-x-a100-sxm4-80gb-mig-535-v12.xml.txt")  # one <gpu>
    text = parsed("nvidia-smi-q", "smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt")  # 8 GPU sections
    with pytest.raises(InventoryMismatch) as err:
        merge_queries(xml, text)
    assert str(err.value).startswith("`nvidia-smi -q -x` lists 1 GPU(s) but `nvidia-smi -q` lists 8")


def test_text_fills_what_the_xml_lacks_and_xml_wins(parsed):
    text = parsed("nvidia-smi-q", "smi/princeton-della-h100-nvidia-smi-a-text-545.txt")
    # SYNTHETIC "XML": the same GPU's parse with the Fabric block and the Idle reason missing
    # (as an older XML would lack them) and a different VBIOS string, to show who wins.
    xml = copy.deepcopy(text)
    xml["gpus"][0]["fabric"] = None
    xml["gpus"][0]["clock_event_reasons"]["idle"] = None
    xml["gpus"][0]["vbios_version"] = "from-xml"
    xml["driver_version"] = None
    top, gpus, warnings = merge_queries(xml, text)
    gpu = gpus[0]
    # della: "Fabric / State : Completed / Status : Success", "Idle : Active", driver 545.23.08.
    assert gpu["fabric"]["state"] == "Completed"
    assert gpu["clock_event_reasons"]["idle"] is True
    assert gpu["vbios_version"] == "from-xml"
    assert set(gpu["filled_from_text"]) == {"fabric", "clock_event_reasons.idle"}
    assert top["driver_version"] == "545.23.08"
    assert warnings == []


def test_text_alone_is_enough(parsed):
    top, gpus, _warnings = merge_queries(text=parsed("nvidia-smi-q", "smi/princeton-della-h100-nvidia-smi-a-text-545.txt"))
    assert top["cuda_version"] == "12.3"
    assert gpus[0]["uuid"] == "GPU-10f35015-e921-bfab-2eb8-4e9b6664d5f1"
    assert gpus[0]["serial"] == "1654123038646"
    assert "raw" not in gpus[0]
    assert "filled_from_text" not in gpus[0]


def test_nvlink_a6000_bridged_pair_and_unbridged_gpu(parsed):
    status = parsed("nvlink-status", "smi/siboehm-3x-rtx-a6000-nvlink-s-4links-and-inActive.txt")
    gpus = _gpus(3)
    warnings = merge_nvlink(gpus, status)
    assert warnings == []
    # GPU 0 and 1: Link 0..3 at 14.062 GB/s; GPU 2: "NVML: Unable to retrieve NVLink information as all links are inActive".
    assert [link["speed_gbs"] for link in gpus[0]["nvlink"]["links"]] == [14.062] * 4
    assert gpus[2]["nvlink"]["links"] == []
    assert gpus[2]["nvlink"]["message"].endswith("all links are inActive")
    assert gpus[0]["nvlink"]["errors_message"] is None
    summary = summarise(gpus)
    assert summary["nvlink_active_links"] == 8
    assert summary["nvlink_no_active_link_gpus"] == [2]
    assert summary["nvlink_unsupported_gpus"] == []
    assert summary["nvlink_speeds_gbs"] == [14.062]


def test_nvlink_mig_is_unsupported_not_a_failure(parsed):
    status = parsed("nvlink-status", "smi/exporter-capture-nvlink-s-h100-MIG-not-supported.txt")
    gpus = _gpus(1, names="NVIDIA H100 80GB HBM3")
    merge_nvlink(gpus, status)
    assert gpus[0]["nvlink"]["supported"] is False
    assert gpus[0]["nvlink"]["message"] == "Nvlink queries are not supported for Devices in MIG mode"
    assert summarise(gpus)["nvlink_unsupported_gpus"] == [0]


def test_nvlink_listing_a_gpu_nvml_does_not_is_a_mismatch(parsed):
    # Azure all-inactive recording prints only "GPU 6: ..."; the node here has GPUs 0 and 1.
    status = parsed("nvlink-status", "smi/azure-nvlink-status-a100-sxm4-80gb-all-inactive.txt")
    with pytest.raises(InventoryMismatch) as err:
        merge_nvlink(_gpus(2, names="NVIDIA A100-SXM4-80GB"), status)
    assert "lists 1 GPU(s) (6) but nvidia-smi -q lists 2 (0, 1)" in str(err.value)


def test_nvlink_missing_gpus_are_a_mismatch_unless_elided(parsed):
    status = parsed("nvlink-status", "smi/gpud-nvlink-status-8x-a100-sxm4-80gb.txt")  # GPU 0..7
    with pytest.raises(InventoryMismatch) as err:
        merge_nvlink(_gpus(9, names="NVIDIA A100-SXM4-80GB"), status)
    assert "lists 8 GPU(s) (0-7) but nvidia-smi -q lists 9 (0-8)" in str(err.value)


def test_nvlink_elided_status_and_errors_merge_by_link(parsed):
    status = parsed("nvlink-status", "smi/mlengineering-h100-nvlink-status-PARTIAL-elided.txt")  # Link 0, [...], Link 17
    errors = parsed("nvlink-errors", "smi/mlengineering-h100-nvlink-e-PARTIAL-elided.txt")  # Link 0, 1, [...], 17
    gpus = _gpus(1, names="NVIDIA H100 80GB HBM3")
    merge_nvlink(gpus, status, errors)
    nvlink = gpus[0]["nvlink"]
    assert nvlink["elided"] is True
    assert [link["link"] for link in nvlink["links"]] == [0, 1, 17]
    assert nvlink["links"][0] == {"link": 0, "active": True, "speed_gbs": 26.562, "replay_errors": 0, "recovery_errors": 0, "crc_errors": 0}
    # Link 1 is only in the -e paste: its state is unknown, not invented.
    assert nvlink["links"][1]["active"] is None and nvlink["links"][1]["crc_errors"] == 0
    summary = summarise(gpus)
    assert summary["nvlink_error_totals"] == {"replay_errors": 0, "recovery_errors": 0, "crc_errors": 0}
    assert summary["nvlink_active_links"] == 2


def test_nvlink_uuid_and_name_differences_are_warnings(parsed):
    status = parsed("nvlink-status", "smi/azure-nvlink-status-a100-sxm4-80gb-good-1gpu.txt")  # GPU 7, UUID GPU-c7e253b0-...
    gpus = _gpus(8, names="NVIDIA A100-SXM4-40GB")
    gpus[7]["uuid"] = "GPU-00000000-0000-0000-0000-000000000007"
    status["elided"] = True  # SYNTHETIC: treat the one-GPU paste as a cut of an 8-GPU output
    warnings = merge_nvlink(gpus, status)
    assert any("GPU 7 UUID GPU-c7e253b0-c227-6f10-e860-7482c85e7ce8 differs" in w for w in warnings)
    assert any("GPU 7 is named 'NVIDIA A100-SXM4-80GB'" in w for w in warnings)
    assert len(gpus[7]["nvlink"]["links"]) == 12
    assert gpus[0]["nvlink"]["message"] == "not in the (elided) nvlink -s output"


def test_nvlink_tool_failure_is_carried_as_the_message():
    gpus = _gpus(2)
    merge_nvlink(gpus, None, None, status_failure="`nvidia-smi nvlink -s` exited 3: boom", errors_failure=None)
    assert gpus[1]["nvlink"] == {"supported": None, "message": "`nvidia-smi nvlink -s` exited 3: boom", "links": [], "elided": False, "errors_message": None}


def test_nvlink_not_collected():
    gpus = _gpus(2)
    assert merge_nvlink(gpus, collected=False) == []
    assert gpus[0]["nvlink"] is None
    summary = summarise(gpus)
    assert summary["nvlink_collected"] is False
    assert summary["nvlink_inactive_links"] is None


def test_nvlink_inactive_link_lines_are_listed():
    # SYNTHETIC nvlink -s text in the recorded layout with Link 3 printed "<inactive>".
    status = parse("nvlink-status", "GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-x)\n\t Link 2: 25 GB/s\n\t Link 3: <inactive>\n")
    gpus = _gpus(1, names="NVIDIA A100-SXM4-80GB")
    merge_nvlink(gpus, status)
    assert summarise(gpus)["nvlink_inactive_links"] == [{"gpu": 0, "link": 3}]


def test_lspci_sees_the_same_eight_h100(parsed, fixture_text):
    # gpud 8x H100 -q (bus 19,3B,4C,5D,9B,BB,CB,DB) against the HGX H100 lspci -vvv (same bus ids).
    _top, gpus, _w = merge_queries(text=parsed("nvidia-smi-q", "smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt"))
    lspci = parse_lspci(fixture_text("misc/gpud-lspci-vvv-hgx-h100-8gpu-4nvswitch-8cx7-2cx6dx-FULL.txt"))
    view = lspci_crosscheck(gpus, lspci)
    assert view["lspci_gpu_count"] == 8
    assert view["missing_from_nvml"] == 0
    assert view["lspci_only_bus_ids"] == [] and view["nvml_only_bus_ids"] == []
    # SYNTHETIC: the GPU at DB:00.0 fell off the bus, so nvidia-smi no longer lists it.
    view = lspci_crosscheck(gpus[:7], lspci)
    assert view["missing_from_nvml"] == 1
    assert view["lspci_only_bus_ids"] == ["0000:db:00.0"]


def test_lspci_absent():
    assert lspci_crosscheck(_gpus(1), None)["lspci_gpu_count"] is None


def test_retired_pages_pending_from_the_edited_azure_output(parsed):
    _top, gpus, _w = merge_queries(text=parsed("nvidia-smi-q", "smi/azure-nvsmi-q-retired-pages-8gpu-bad-EDITED.txt"))
    summary = summarise(gpus)
    # "Pending Page Blacklist : Yes" on GPUs 00000002/4/6/8 (indexes 1, 3, 5, 7).
    assert summary["retired_pages_pending_any"] is True
    assert summary["retired_pages_pending_gpus"] == [1, 3, 5, 7]
    assert summary["retired_pages_single_bit_total"] == 60 + 2 + 6 + 20 + 8
    assert summary["retired_pages_double_bit_total"] == 5 + 61 + 45 + 56
    clean = summarise(merge_queries(text=parsed("nvidia-smi-q", "smi/azure-nvsmi-q-retired-pages-8gpu-clean.txt"))[1])
    assert clean["retired_pages_pending_any"] is False
    assert clean["retired_pages_double_bit_total"] == 0


def test_summary_of_the_hgx_h100_throttle_recording(parsed):
    text = parsed("nvidia-smi-q", "smi/gpud-nvidia-smi-q-text-8x-h100-535.183.01-fabric-completed-power-brake-swthermal-ACTIVE.txt")
    _top, gpus, _w = merge_queries(text=text)
    summary = summarise(gpus)
    assert summary["throttled_gpus"] == [2]  # bus 75: SW Power Cap + HW Power Brake + SW Thermal
    assert summary["fabric_not_ready_gpus"] == []
    assert summary["ecc_enabled_all"] is True
    assert summary["remapped_rows_failure_gpus"] == []


def test_fabric_in_progress_is_not_ready():
    # SYNTHETIC GPU dicts: one fabric "In Progress", one "Completed" with "Insufficient Resources"
    # (as in smi/azure-fabric-completed-INSUFFICIENT-RESOURCES-...), one Completed/Success, one N/A.
    gpus = [
        {"index": 0, "fabric": {"state": "In Progress", "status": None}},
        {"index": 1, "fabric": {"state": "Completed", "status": "Insufficient Resources"}},
        {"index": 2, "fabric": {"state": "Completed", "status": "Success"}},
        {"index": 3, "fabric": {"state": None, "status": None}},
    ]
    summary = summarise(gpus)
    assert summary["fabric_not_ready_gpus"] == [0, 1]
    assert summary["fabric_states"] == ["Completed", "In Progress"]


def test_tristate_ecc_and_remap():
    # SYNTHETIC: ECC unknown (N/A) on one GPU and enabled on the other -> unknown, not True.
    gpus = [{"index": 0, "ecc_mode_current": True, "remapped_rows": None}, {"index": 1, "ecc_mode_current": None, "remapped_rows": None}]
    summary = summarise(gpus)
    assert summary["ecc_enabled_all"] is None
    assert summary["remapped_rows_pending_any"] is None
    gpus[1]["ecc_mode_current"] = False
    assert summarise(gpus)["ecc_enabled_all"] is False


def test_build_inventory_end_to_end_without_ansible(parsed, fixture_text):
    xml = parsed("nvidia-smi-xml", "smi/telegraf-nvidia-smi-q-x-a100-sxm4-80gb-mig-535-v12.xml.txt")
    lspci = parse_lspci(fixture_text("misc/gpud-lspci-nn-azure-nd-a100-v4-8gpu-6nvswitch-8cx6vf.txt"))
    fact = build_inventory(xml=xml, lspci=lspci, failures={"nvlink_errors": "`nvidia-smi nvlink -e` exited 9: x"}, nvlink_collected=False)
    assert fact["gpu_count"] == 1 and fact["attached_gpus"] == 4
    assert fact["lspci_gpu_count"] == 8 and fact["missing_from_nvml"] == 7
    assert fact["sources"] == {"xml": True, "text": False, "nvlink_status": False, "nvlink_errors": False, "lspci": True}
    assert fact["gpus"][0]["memory_total_mib"] == 81920  # <fb_memory_usage><total>81920 MiB
    assert fact["gpus"][0]["power_limit_w"] == 500.0
    assert fact["summary"]["memory_total_mib"] == [81920]
    assert "`nvidia-smi nvlink -e` exited 9: x" in fact["warnings"]
    assert fact["gpus"][0]["active_clock_event_reasons"] == []


def test_a_gpu_of_the_fact_has_the_keys_its_type_declares_in_that_order():
    # the keys come from the parsers' field table; the TypedDict is written by hand: a new field in the table that
    # the type does not declare (or the other way round) fails here
    from gpufleet.facts.gpu import GPU_KEYS
    from gpufleet.facts.shapes import GpuQueryFields

    assert list(GPU_KEYS) == list(GpuQueryFields.__annotations__)
    assert "raw" not in GPU_KEYS and "pcie_link_gen_device_max" not in GPU_KEYS
    assert GPU_KEYS[0] == "index" and GPU_KEYS[-1] == "errors"
