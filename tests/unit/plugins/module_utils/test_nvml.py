# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ctypes NVML binding (module_utils/nvml.py) against the fake libnvidia-ml.so (tests/fakenvml/fake_nvml.c).

Expected values are read by hand from the recordings the data files name:
tests/fakenvml/h100-590-1gpu.data (exporter-capture ... h100-590 under load) and
tests/fakenvml/h100-535-8gpu-faults.data (gpud 8x H100 535.183.01; its faults are SYNTHETIC).
"""

from __future__ import annotations

import ctypes
import os
import sys

import pytest

from ansible_collections.gpufleet.acceptance.plugins.module_utils import nvml

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "fakenvml"))
import fakenvml  # noqa: E402  pylint: disable=import-error,wrong-import-position


@pytest.fixture(name="libs", scope="session")
def libs_fixture(tmp_path_factory):
    return fakenvml.build_once(tmp_path_factory)


@pytest.fixture(name="lib")
def lib_fixture(libs, monkeypatch):
    """The full fake, initialised on the recorded 1x H100 (590) data; shut down after the test."""
    monkeypatch.setenv("FAKE_NVML_DATA", fakenvml.data_file("h100-590-1gpu.data"))
    binding = nvml.NVML(libs["full"])
    binding.init()
    yield binding
    binding.shutdown()


def test_recorded_h100_590_values(lib):
    assert lib.driver_version() == "590.48.01"
    assert lib.nvml_version() == "13.590.48.01"
    assert lib.device_count() == 1
    handle = lib.handle(0)
    assert lib.uuid(handle) == "GPU-00000000-0000-0000-0000-000000000000"
    assert lib.name(handle) == "NVIDIA H100 80GB HBM3"
    assert lib.pci_bus_id(handle) == "00000000:00:09.0"
    assert lib.temperature(handle) == 59
    assert lib.clock(handle, nvml.NVML_CLOCK_SM) == 1980
    assert lib.power_usage(handle) == 629450
    # "Clocks Event Reasons Counters" all 0 us; the 590 field ids 74, 76, 269, 270, 271. Field 75 is not served.
    assert lib.field_values(handle, [74, 76, 269, 270, 271, 75]) == [(0, 0)] * 5 + [(nvml.NVML_ERROR_NOT_SUPPORTED, None)]
    assert lib.violation_time_ns(handle, nvml.NVML_PERF_POLICY_POWER) == 0
    assert lib.total_ecc_errors(handle, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_AGGREGATE_ECC) == 0
    # nvlink -s: 18 links, all up; link 18 is past the GPU's links.
    assert all(lib.nvlink_state(handle, link) for link in range(18))
    with pytest.raises(nvml.NVMLError) as err:
        lib.nvlink_state(handle, 18)
    assert err.value.name == "NVML_ERROR_INVALID_ARGUMENT" and err.value.short == "invalid_argument"
    assert lib.nvlink_error_counter(handle, 17, nvml.NVML_NVLINK_ERROR_DL_CRC_DATA) == 0


def test_counters_and_errors_of_the_8gpu_faults(libs, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_DATA", fakenvml.data_file("h100-535-8gpu-faults.data"))
    lib = nvml.NVML(libs["full"])
    lib.init()
    try:
        assert lib.device_count() == 8
        gpu2, gpu4, gpu5, gpu6 = (lib.handle(i) for i in (2, 4, 5, 6))
        assert lib.pci_bus_id(gpu2) == "00000000:75:00.0"
        assert lib.temperature(gpu2) == 39 and lib.power_usage(gpu2) == 118010 and lib.clock(gpu2) == 1980
        # SYNTHETIC SW power capping on GPU 2: 5 s, then +0.25 s a read, by field and by violation policy alike.
        assert lib.field_values(gpu2, [74]) == [(0, 5000000000)]
        assert lib.field_values(gpu2, [74]) == [(0, 5250000000)]
        assert lib.violation_time_ns(gpu2, nvml.NVML_PERF_POLICY_POWER) == 5000000000
        # SYNTHETIC replays on GPU 4 link 7: 10, then 13.
        assert lib.nvlink_error_counter(gpu4, 7, nvml.NVML_NVLINK_ERROR_DL_REPLAY) == 10
        assert lib.nvlink_error_counter(gpu4, 7, nvml.NVML_NVLINK_ERROR_DL_REPLAY) == 13
        # SYNTHETIC: power NOT_SUPPORTED on GPU 6.
        with pytest.raises(nvml.NVMLError) as err:
            lib.power_usage(gpu6)
        assert (err.value.code, err.value.short, err.value.function) == (3, "not_supported", "nvmlDeviceGetPowerUsage")
        # SYNTHETIC: GPU 5 answers one temperature read, then is lost for every call.
        assert lib.temperature(gpu5) == 36
        for call in (lambda: lib.temperature(gpu5), lambda: lib.uuid(gpu5), lambda: lib.field_values(gpu5, [74])):
            with pytest.raises(nvml.NVMLError) as err:
                call()
            assert err.value.name == "NVML_ERROR_GPU_IS_LOST" and err.value.short == "gpu_lost"
    finally:
        lib.shutdown()


def test_missing_symbol_is_an_nvml_error_not_an_attribute_error(libs, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_DATA", fakenvml.data_file("h100-535-8gpu-faults.data"))
    old = nvml.NVML(libs["old"])
    old.init()
    try:
        assert not old.has("nvmlDeviceGetFieldValues") and old.has("nvmlDeviceGetViolationStatus")
        handle = old.handle(0)
        with pytest.raises(nvml.NVMLError) as err:
            old.field_values(handle, [74])
        assert err.value.missing_symbol and err.value.short == "missing_symbol"
        assert err.value.name == "NVML_ERROR_FUNCTION_NOT_FOUND"
        assert "nvmlDeviceGetFieldValues" in str(err.value)
        with pytest.raises(nvml.NVMLError) as err:
            old.nvml_version()
        assert err.value.short == "missing_symbol"
        assert old.violation_time_ns(handle, nvml.NVML_PERF_POLICY_SYNC_BOOST) == 0
    finally:
        old.shutdown()


def test_calls_before_init_are_uninitialized(libs):
    lib = nvml.NVML(libs["full"])
    with pytest.raises(nvml.NVMLError) as err:
        lib.device_count()
    assert err.value.name == "NVML_ERROR_UNINITIALIZED"


def test_init_error_names_the_nvml_error(libs, monkeypatch, tmp_path):
    data = tmp_path / "SYNTHETIC-driver-not-loaded.data"
    data.write_text("# SYNTHETIC: nvmlInit fails as with no kernel module loaded\ninit_error 9\n")
    monkeypatch.setenv("FAKE_NVML_DATA", str(data))
    with pytest.raises(nvml.NVMLError) as err:
        nvml.NVML(libs["full"]).init()
    assert err.value.name == "NVML_ERROR_DRIVER_NOT_LOADED" and err.value.function == "nvmlInit_v2"


def test_library_not_found(tmp_path):
    with pytest.raises(nvml.LibraryNotFound):
        nvml.NVML(str(tmp_path / "libnvidia-ml.so.1"))


def test_error_names_cover_every_code_with_a_fallback():
    assert nvml.NVMLError(15).short == "gpu_lost"
    assert nvml.NVMLError(999).short == "unknown"
    assert nvml.NVMLError(4).short == "no_permission"
    assert nvml.NVMLError(13).name == "NVML_ERROR_FUNCTION_NOT_FOUND"
    assert nvml.NVMLError(77).name == "NVML_ERROR_77"


def test_field_value_reads_the_member_its_value_type_names():
    slot = nvml.FieldValue()
    slot.valueType = nvml.NVML_VALUE_TYPE_DOUBLE
    slot.value.dVal = 1.5
    assert nvml.field_value(slot) == 1.5
    slot.valueType = nvml.NVML_VALUE_TYPE_SIGNED_INT
    slot.value.siVal = -7
    assert nvml.field_value(slot) == -7
    slot.valueType = nvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG
    slot.value.ullVal = 2 ** 63 + 5
    assert nvml.field_value(slot) == 2 ** 63 + 5
    slot.valueType = nvml.NVML_VALUE_TYPE_UNSIGNED_SHORT
    slot.value.ullVal = 0
    slot.value.usVal = 65535
    assert nvml.field_value(slot) == 65535
    assert ctypes.sizeof(slot) == 40
