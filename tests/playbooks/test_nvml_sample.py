# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvml_sample end to end: ansible-playbook on localhost (the node's Python: 3.8 where present) against the fake
libnvidia-ml.so (tests/fakenvml, built with gcc here), one play with every case (7 module runs and one
async_status wait): 6.6 s measured on the 2-core machine; 21-36 s only while other jobs loaded it (load 10-23).

Expected values are read by hand from the recordings the data files name (tests/fakenvml/*.data); the faults of
h100-535-8gpu-faults.data are SYNTHETIC.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "fakenvml"))
import fakenvml  # noqa: E402  pylint: disable=import-error,wrong-import-position


@pytest.fixture(name="libs", scope="session")
def libs_fixture(tmp_path_factory):
    return fakenvml.build_once(tmp_path_factory)


def test_nvml_sample_module(playbook, node_file, libs, tmp_path):
    full, old = libs["full"], libs["old"]
    h100_590 = {"FAKE_NVML_DATA": fakenvml.data_file("h100-590-1gpu.data")}
    h100_535 = {"FAKE_NVML_DATA": fakenvml.data_file("h100-535-8gpu-faults.data")}
    out_file = str(tmp_path / "run.jsonl")
    async_file = str(tmp_path / "async.jsonl")
    check_file = str(tmp_path / "check.jsonl")
    failed_file = str(tmp_path / "failed.jsonl")
    no_driver = tmp_path / "SYNTHETIC-driver-not-loaded.data"
    no_driver.write_text("# SYNTHETIC: nvmlInit fails as with no kernel module loaded\ninit_error 9\n")
    module = "gpufleet.acceptance.nvml_sample"
    tasks = [
        {"name": "Check mode: one tick returned, nothing written", module: {"library_path": full, "duration": 30, "output": check_file},
         "environment": h100_590, "check_mode": True, "register": "checked"},
        {"name": "A short run into a file", module: {"library_path": full, "interval": 0.1, "duration": 0.2, "output": out_file},
         "environment": h100_535, "register": "to_file"},
        {"name": "An old driver's library, capped", module: {"library_path": old, "interval": 0.01, "duration": 60, "max_samples": 10},
         "environment": h100_535, "register": "old_driver"},
        {"name": "No library", module: {"library_path": str(tmp_path / "none" / "libnvidia-ml.so.1")}, "register": "no_library",
         "ignore_errors": True},
        {"name": "No kernel driver", module: {"library_path": full, "output": failed_file},
         "environment": {"FAKE_NVML_DATA": str(no_driver)},
         "register": "no_driver", "ignore_errors": True},
        {"name": "In the background, the library found by the loader", module: {"interval": 0.1, "duration": 0.3, "output": async_file,
                                                                                "binding": "ctypes"},
         "environment": dict(h100_590, LD_LIBRARY_PATH=os.path.dirname(full)), "async": 60, "poll": 0, "register": "job"},
        {"name": "Wait for it", "ansible.builtin.async_status": {"jid": "{{ job.ansible_job_id }}"}, "register": "job_done",
         "until": "job_done.finished", "retries": 30, "delay": 1},
        {"name": "Keep what the test reads", "ansible.builtin.set_fact": {"dumped": {
            "checked": "{{ checked }}", "to_file": "{{ to_file }}", "old_driver": "{{ old_driver }}", "no_library": "{{ no_library }}",
            "no_driver": "{{ no_driver }}",
            "job_done": "{{ job_done }}"}}},
    ]
    run = playbook({"node": {"node_file": node_file("host-bare-no-tools.yml")}}, tasks)
    assert run.rc == 0, run.stdout + run.stderr
    got = run.results["node"]

    checked = got["checked"]
    assert checked["changed"] is False and checked["output"] is None and checked["binding"] == "ctypes"
    assert (checked["ticks"], checked["samples_count"], checked["reason"], checked["gpu_count"]) == (1, 1, "duration", 1)
    assert not os.path.exists(check_file)
    sample = checked["samples"][0]
    # exporter capture, H100 590.48.01: 59 C, SM 1980 MHz, 629.45 W average, counters 0, 18 links up.
    assert (sample["temperature_c"], sample["sm_clock_mhz"], sample["power_w"], sample["nvlink_active_links"]) == (59, 1980, 629.45, 18)
    assert sample["clock_event_ns"]["hw_thermal"] == 0 and sample["nvlink"]["crc_flit"] == 0
    assert checked["header"]["driver_version"] == "590.48.01" and checked["end"]["samples"] == 1
    assert checked["field_errors"] == {"0": {"clock_event_ns.hw_slowdown": "not_supported"}}

    to_file = got["to_file"]
    assert to_file["changed"] is True and to_file["samples"] == [] and to_file["output"] == out_file
    # ticks at 0, 0.1, 0.2 s; a machine too busy to keep the grid skips a slot, never more here
    ticks = to_file["ticks"]
    assert ticks in (2, 3) and to_file["samples_count"] == 8 * ticks
    with open(out_file) as handle:
        lines = [json.loads(line) for line in handle]
    assert [line["type"] for line in lines] == ["header"] + ["sample"] * 8 * ticks + ["end"]
    assert lines[-1]["samples"] == 8 * ticks and lines[-1]["reason"] == "duration"
    gpu2 = [line for line in lines if line.get("gpu") == 2 and line["type"] == "sample"]
    assert [s["clock_event_ns"]["sw_power_cap"] for s in gpu2] == [5000000000, 5250000000, 5500000000][:ticks]  # SYNTHETIC growth
    gpu5 = [line for line in lines if line.get("gpu") == 5 and line["type"] == "sample"]
    assert [s["errors"].get("*") for s in gpu5] == [None, "gpu_lost", "gpu_lost"][:ticks]  # SYNTHETIC: lost from tick 2
    assert to_file["field_errors"]["5"]["*"] == "gpu_lost" and to_file["field_errors"]["6"]["power_w"] == "not_supported"

    old_driver = got["old_driver"]
    assert old_driver["header"]["nvml_version"] is None
    assert old_driver["field_errors"]["0"]["nvlink.replay"] == "missing_symbol"
    assert old_driver["samples"][2]["clock_event_ns"]["sw_power_cap"] == 5000000000  # by nvmlDeviceGetViolationStatus
    # max_samples 10 with 8 GPUs: one tick, then the cap.
    assert (old_driver["ticks"], old_driver["samples_count"], old_driver["reason"], len(old_driver["samples"])) == (1, 8, "max_samples", 8)

    assert got["no_library"]["failed"] is True
    assert got["no_library"]["msg"] == "%s not found: is the NVIDIA driver installed?" % (tmp_path / "none" / "libnvidia-ml.so.1")

    assert got["no_driver"]["failed"] is True and got["no_driver"]["nvml_error"] == "NVML_ERROR_DRIVER_NOT_LOADED"
    assert got["no_driver"]["msg"] == "NVML did not start: NVML_ERROR_DRIVER_NOT_LOADED: the NVIDIA kernel driver is not loaded"
    # the file a run waits on says at once that no sample will come, and why
    with open(failed_file) as handle:
        [trailer] = [json.loads(line) for line in handle]
    assert (trailer["type"], trailer["samples"], trailer["reason"]) == ("end", 0, "failed")
    assert trailer["error"] == got["no_driver"]["msg"]

    done = got["job_done"]
    assert done["finished"] and done["reason"] == "duration" and done["ticks"] in (3, 4) and done["binding"] == "ctypes"
    with open(async_file) as handle:
        async_lines = [json.loads(line) for line in handle]
    assert async_lines[0]["gpus"][0]["pci_bus_id"] == "00000000:00:09.0" and async_lines[-1]["samples"] == done["ticks"]
    assert [line["temperature_c"] for line in async_lines[1:-1]] == [59] * done["ticks"]
