# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ctypes structures of module_utils/nvml.py against nvidia-ml-py's (pynvml), an independent reference.

nvidia-ml-py is a test dependency only (pyproject's [test] extra); the product never imports it for this.
Sizes and every field's offset must agree; so must the enumeration values and the error codes the sampler
relies on.
"""

from __future__ import annotations

import ctypes

import pytest

from ansible_collections.gpufleet.acceptance.plugins.module_utils import nvml

pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py (the reference) is not installed: pip install nvidia-ml-py")

PAIRS = [
    (nvml.FieldValue, pynvml.c_nvmlFieldValue_t),
    (nvml.Value, pynvml.c_nvmlValue_t),
    (nvml.ViolationTime, pynvml.c_nvmlViolationTime_t),
    (nvml.PciInfo, pynvml.nvmlPciInfo_t),
]


@pytest.mark.parametrize("ours,theirs", PAIRS, ids=[pair[1].__name__ for pair in PAIRS])
def test_size_and_offsets_match_nvidia_ml_py(ours, theirs):
    assert ctypes.sizeof(ours) == ctypes.sizeof(theirs)
    assert ctypes.alignment(ours) == ctypes.alignment(theirs)
    our_names = [field[0] for field in ours._fields_]
    assert our_names == [field[0] for field in theirs._fields_]
    for name in our_names:
        ours_field, theirs_field = getattr(ours, name), getattr(theirs, name)
        assert (name, ours_field.offset, ours_field.size) == (name, theirs_field.offset, theirs_field.size)


def test_field_value_layout_by_hand():
    """nvml.h's nvmlFieldValue_t on LP64: u32, u32, s64, s64, enum, enum, 8-byte union = 40 bytes."""
    offsets = {name: getattr(nvml.FieldValue, name).offset for name, unused_type in nvml.FieldValue._fields_}
    assert offsets == {"fieldId": 0, "scopeId": 4, "timestamp": 8, "latencyUsec": 16, "valueType": 24, "nvmlReturn": 28, "value": 32}
    assert ctypes.sizeof(nvml.FieldValue) == 40
    assert ctypes.sizeof(nvml.PciInfo) == 68 and nvml.PciInfo.busId.offset == 36


def test_constants_match_nvidia_ml_py():
    for ours, theirs in [
        (nvml.NVML_TEMPERATURE_GPU, pynvml.NVML_TEMPERATURE_GPU),
        (nvml.NVML_CLOCK_SM, pynvml.NVML_CLOCK_SM),
        (nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, pynvml.NVML_MEMORY_ERROR_TYPE_CORRECTED),
        (nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED),
        (nvml.NVML_VOLATILE_ECC, pynvml.NVML_VOLATILE_ECC),
        (nvml.NVML_AGGREGATE_ECC, pynvml.NVML_AGGREGATE_ECC),
        (nvml.NVML_NVLINK_ERROR_DL_REPLAY, pynvml.NVML_NVLINK_ERROR_DL_REPLAY),
        (nvml.NVML_NVLINK_ERROR_DL_RECOVERY, pynvml.NVML_NVLINK_ERROR_DL_RECOVERY),
        (nvml.NVML_NVLINK_ERROR_DL_CRC_FLIT, pynvml.NVML_NVLINK_ERROR_DL_CRC_FLIT),
        (nvml.NVML_NVLINK_ERROR_DL_CRC_DATA, pynvml.NVML_NVLINK_ERROR_DL_CRC_DATA),
        (nvml.NVML_NVLINK_MAX_LINKS, pynvml.NVML_NVLINK_MAX_LINKS),
        (nvml.NVML_PERF_POLICY_POWER, pynvml.NVML_PERF_POLICY_POWER),
        (nvml.NVML_PERF_POLICY_SYNC_BOOST, pynvml.NVML_PERF_POLICY_SYNC_BOOST),
        (nvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, pynvml.NVML_VALUE_TYPE_UNSIGNED_LONG_LONG),
        (nvml.NVML_VALUE_TYPE_DOUBLE, pynvml.NVML_VALUE_TYPE_DOUBLE),
        (nvml.NVML_VALUE_TYPE_UNSIGNED_SHORT, pynvml.NVML_VALUE_TYPE_UNSIGNED_SHORT),
    ]:
        assert ours == theirs
    for code, name in nvml.ERROR_NAMES.items():
        assert getattr(pynvml, name) == code, name
    # The two stable clock-event field ids are aliases of the perf-policy fields in every nvidia-ml-py.
    assert pynvml.NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP == pynvml.NVML_FI_DEV_PERF_POLICY_POWER == 74
    assert pynvml.NVML_FI_DEV_CLOCKS_EVENT_REASON_SYNC_BOOST == pynvml.NVML_FI_DEV_PERF_POLICY_SYNC_BOOST == 76
