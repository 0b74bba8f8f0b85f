# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufleet.facts.gpu.gather: the NVLink state is read even when another GPU query fails.

Raw collector results built from recordings (tests/fixtures/smi/, see SOURCES.md); a failing query
is a raw entry with a non-zero exit or an error, as plugins/module_utils/node_collect.run_tool records it."""

from __future__ import annotations

import pytest

from gpufleet.facts.gpu import gather
from gpufleet.facts.raw import FactError, RawReader

H100_Q = "smi/exporter-capture-nvidia-smi-q-text-1x-h100-590-fabric-completed-under-load.txt"  # 1x H100, GPU 0
H100_NVLINK = "smi/exporter-capture-nvlink-s-h100-590-18links.txt"  # GPU 0: 18 links x 26.562 GB/s


def _ok(args, stdout):
    return {"cmd": ["nvidia-smi"] + args, "rc": 0, "stdout": stdout, "stderr": "", "error": None}


def _raw(fixture_text, xml_entry):
    return {
        "query_xml": xml_entry,
        "query_text": _ok(["-q"], fixture_text(H100_Q)),
        "nvlink_status": _ok(["nvlink", "-s"], fixture_text(H100_NVLINK)),
    }


def test_a_failing_xml_query_keeps_the_nvlink_state(fixture_text):
    failing = {
        "cmd": ["nvidia-smi", "-q", "-x"],
        "rc": 15,
        "stdout": "",
        "stderr": "Unable to determine the device handle for GPU0",
        "error": None,
    }
    # Before: the failing -q -x raised FactError and the NVLink facts were lost with the rest.
    fact = gather(RawReader("n1", _raw(fixture_text, failing)))
    [gpu] = fact["gpus"]
    assert [link["speed_gbs"] for link in gpu["nvlink"]["links"]] == [26.562] * 18
    assert fact["summary"]["nvlink_active_links"] == 18
    assert fact["sources"]["xml"] is False and fact["sources"]["text"] is True
    assert fact["warnings"][0].startswith(
        "n1: `nvidia-smi -q -x` exited 15: Unable to determine the device handle for GPU0"
    )


def test_a_timed_out_nvlink_query_keeps_the_other_gpu_facts(fixture_text):
    raw = _raw(fixture_text, None)
    del raw["query_xml"]
    raw["nvlink_errors"] = {
        "cmd": ["nvidia-smi", "nvlink", "-e"],
        "rc": None,
        "stdout": "",
        "stderr": "",
        "error": "timeout",
    }
    fact = gather(RawReader("n1", raw))
    assert fact["gpu_count"] == 1 and fact["summary"]["nvlink_active_links"] == 18
    assert fact["gpus"][0]["nvlink"]["errors_message"] == "`nvidia-smi nvlink -e` timeout"


def _failing(args, rc=9, said="NVIDIA-SMI has failed"):
    return {"cmd": ["nvidia-smi"] + args, "rc": rc, "stdout": "", "stderr": said, "error": None}


def test_both_queries_failing_keep_the_nvlink_state_of_nvlink_s(fixture_text):
    raw = _raw(fixture_text, _failing(["-q", "-x"]))
    raw["query_text"] = _failing(["-q"])
    # Before: the first query's failure was raised and the NVLink state was lost with the rest.
    fact = gather(RawReader("n1", raw))
    assert fact["query_failures"] == ["n1: `nvidia-smi -q -x` exited 9: NVIDIA-SMI has failed",
                                      "n1: `nvidia-smi -q` exited 9: NVIDIA-SMI has failed"]
    only = "; the GPU facts hold only what `nvidia-smi nvlink -s` printed"
    assert fact["warnings"][:2] == ["n1: `nvidia-smi -q -x` exited 9: NVIDIA-SMI has failed" + only,
                                    "n1: `nvidia-smi -q` exited 9: NVIDIA-SMI has failed" + only]
    assert fact["sources"] == {"xml": False, "text": False, "nvlink_status": True, "nvlink_errors": False,
                               "lspci": False}
    # the recording's GPU line: "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)", then 18 links x 26.562 GB/s
    [gpu] = fact["gpus"]
    assert (gpu["index"], gpu["name"]) == (0, "NVIDIA H100 80GB HBM3")
    assert [link["speed_gbs"] for link in gpu["nvlink"]["links"]] == [26.562] * 18
    assert fact["gpu_count"] == 1 and fact["summary"]["nvlink_active_links"] == 18
    # what only -q prints is unknown, never guessed
    assert (gpu["memory_total_mib"], gpu["ecc_mode_current"], gpu["replays_since_reset"], gpu["pci_bus_id"]) == (
        None, None, None, None)
    assert fact["driver_version"] is None


def test_both_queries_failing_without_nvlink_s_still_fail(fixture_text):
    raw = _raw(fixture_text, _failing(["-q", "-x"]))
    raw["query_text"] = _failing(["-q"])
    del raw["nvlink_status"]
    with pytest.raises(FactError) as err:
        gather(RawReader("n1", raw))
    assert str(err.value) == "n1: `nvidia-smi -q -x` exited 9: NVIDIA-SMI has failed"
    # an nvlink -s that exited non-zero with nothing readable is no NVLink state either
    raw["nvlink_status"] = _failing(["nvlink", "-s"], rc=3,
                                    said="Failed to initialize NVML: Driver/library version mismatch")
    with pytest.raises(FactError) as err:
        gather(RawReader("n1", raw))
    assert str(err.value) == "n1: `nvidia-smi -q -x` exited 9: NVIDIA-SMI has failed"
