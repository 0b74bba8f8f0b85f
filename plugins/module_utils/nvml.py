# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small ctypes binding to NVML (the driver's ``libnvidia-ml.so.1``): only the calls the sampler needs.

Standard library only, Python 3.8+. Every call raises :class:`NVMLError` (with the NVML error code and
its name, e.g. ``NVML_ERROR_NOT_SUPPORTED``) when NVML does not return ``NVML_SUCCESS``; a symbol the
loaded library lacks (an older driver) raises :class:`NVMLError` with ``NVML_ERROR_FUNCTION_NOT_FOUND``
and ``missing_symbol`` set, never ``AttributeError``.

The structures follow ``nvml.h`` and are checked, size and field offsets, against nvidia-ml-py's
(``pynvml``) classes in the tests.
"""

from __future__ import annotations

import ctypes

LIBRARY_NAME = "libnvidia-ml.so.1"

NVML_SUCCESS = 0
# nvmlReturn_t (nvml.h), name by code.
ERROR_NAMES = {
    0: "NVML_SUCCESS",
    1: "NVML_ERROR_UNINITIALIZED",
    2: "NVML_ERROR_INVALID_ARGUMENT",
    3: "NVML_ERROR_NOT_SUPPORTED",
    4: "NVML_ERROR_NO_PERMISSION",
    5: "NVML_ERROR_ALREADY_INITIALIZED",
    6: "NVML_ERROR_NOT_FOUND",
    7: "NVML_ERROR_INSUFFICIENT_SIZE",
    8: "NVML_ERROR_INSUFFICIENT_POWER",
    9: "NVML_ERROR_DRIVER_NOT_LOADED",
    10: "NVML_ERROR_TIMEOUT",
    11: "NVML_ERROR_IRQ_ISSUE",
    12: "NVML_ERROR_LIBRARY_NOT_FOUND",
    13: "NVML_ERROR_FUNCTION_NOT_FOUND",
    14: "NVML_ERROR_CORRUPTED_INFOROM",
    15: "NVML_ERROR_GPU_IS_LOST",
    16: "NVML_ERROR_RESET_REQUIRED",
    17: "NVML_ERROR_OPERATING_SYSTEM",
    18: "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
    19: "NVML_ERROR_IN_USE",
    20: "NVML_ERROR_MEMORY",
    21: "NVML_ERROR_NO_DATA",
    22: "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED",
    23: "NVML_ERROR_INSUFFICIENT_RESOURCES",
    24: "NVML_ERROR_FREQ_NOT_SUPPORTED",
    25: "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
    26: "NVML_ERROR_DEPRECATED",
    27: "NVML_ERROR_NOT_READY",
    28: "NVML_ERROR_GPU_NOT_FOUND",
    29: "NVML_ERROR_INVALID_STATE",
    30: "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED",
    999: "NVML_ERROR_UNKNOWN",
}
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_GPU_IS_LOST = 15

# Enumerations used by the sampler (nvml.h).
NVML_TEMPERATURE_GPU = 0
NVML_CLOCK_SM = 1
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0
NVML_AGGREGATE_ECC = 1
NVML_FEATURE_DISABLED = 0
NVML_FEATURE_ENABLED = 1
NVML_NVLINK_ERROR_DL_REPLAY = 0
NVML_NVLINK_ERROR_DL_RECOVERY = 1
NVML_NVLINK_ERROR_DL_CRC_FLIT = 2
NVML_NVLINK_ERROR_DL_CRC_DATA = 3
# 36 in the CUDA 13 headers (18 before, 12 before that); links past a GPU's own count answer
# NVML_ERROR_INVALID_ARGUMENT, which is where a scan stops.
NVML_NVLINK_MAX_LINKS = 36
NVML_PERF_POLICY_POWER = 0
NVML_PERF_POLICY_THERMAL = 1
NVML_PERF_POLICY_SYNC_BOOST = 2

# nvmlValueType_t
NVML_VALUE_TYPE_DOUBLE = 0
NVML_VALUE_TYPE_UNSIGNED_INT = 1
NVML_VALUE_TYPE_UNSIGNED_LONG = 2
NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3
NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4
NVML_VALUE_TYPE_SIGNED_INT = 5
NVML_VALUE_TYPE_UNSIGNED_SHORT = 6

# Buffer sizes (nvml.h: NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE, NVML_DEVICE_UUID_V2_BUFFER_SIZE, ...).
SYSTEM_VERSION_BUFFER_SIZE = 80
DEVICE_UUID_BUFFER_SIZE = 96
DEVICE_NAME_BUFFER_SIZE = 96
DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32
DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16


class NVMLError(Exception):
    """An NVML call did not return NVML_SUCCESS (or its symbol is missing from the library)."""

    def __init__(self, code, function=None, missing_symbol=False):
        self.code = code
        self.name = ERROR_NAMES.get(code, "NVML_ERROR_%d" % code)
        self.function = function
        self.missing_symbol = missing_symbol
        where = " (%s)" % function if function else ""
        text = "%s is not in the NVML library" % function if missing_symbol else self.name
        super().__init__(text + ("" if missing_symbol else where))

    @property
    def short(self):
        """The error as the sample records write it: ``not_supported``, ``gpu_lost``, ``missing_symbol``, or the
        NVML name in lower case without ``NVML_ERROR_`` (``no_permission``, ``unknown``)."""
        if self.missing_symbol:
            return "missing_symbol"
        if self.code == NVML_ERROR_GPU_IS_LOST:
            return "gpu_lost"
        name = self.name
        if name.startswith("NVML_ERROR_"):
            name = name[len("NVML_ERROR_"):]
        return name.lower()


class LibraryNotFound(Exception):
    """The NVML shared library could not be loaded."""


# --- structures (nvml.h) ---------------------------------------------------------------------------

class Value(ctypes.Union):  # nvmlValue_t
    """nvmlValue_t."""

    _fields_ = [
        ("dVal", ctypes.c_double),
        ("uiVal", ctypes.c_uint),
        ("ulVal", ctypes.c_ulong),
        ("ullVal", ctypes.c_ulonglong),
        ("sllVal", ctypes.c_longlong),
        ("siVal", ctypes.c_int),
        ("usVal", ctypes.c_ushort),
    ]


class FieldValue(ctypes.Structure):  # nvmlFieldValue_t
    """nvmlFieldValue_t: in fieldId/scopeId, out the rest; nvmlReturn is the per-field status."""

    _fields_ = [
        ("fieldId", ctypes.c_uint32),
        ("scopeId", ctypes.c_uint32),
        ("timestamp", ctypes.c_int64),
        ("latencyUsec", ctypes.c_int64),
        ("valueType", ctypes.c_int),  # nvmlValueType_t (an enum: int-sized)
        ("nvmlReturn", ctypes.c_int),  # nvmlReturn_t
        ("value", Value),
    ]


class ViolationTime(ctypes.Structure):  # nvmlViolationTime_t
    """nvmlViolationTime_t: both in nanoseconds."""

    _fields_ = [
        ("referenceTime", ctypes.c_ulonglong),
        ("violationTime", ctypes.c_ulonglong),
    ]


class PciInfo(ctypes.Structure):  # nvmlPciInfo_t (the one nvmlDeviceGetPciInfo_v3 fills)
    """nvmlPciInfo_t."""

    _fields_ = [
        ("busIdLegacy", ctypes.c_char * DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE),
        ("domain", ctypes.c_uint),
        ("bus", ctypes.c_uint),
        ("device", ctypes.c_uint),
        ("pciDeviceId", ctypes.c_uint),
        ("pciSubSystemId", ctypes.c_uint),
        ("busId", ctypes.c_char * DEVICE_PCI_BUS_ID_BUFFER_SIZE),
    ]


def field_value(field):
    """The value of a filled nvmlFieldValue_t as a Python number, read by its valueType."""
    kind = field.valueType
    if kind == NVML_VALUE_TYPE_DOUBLE:
        return field.value.dVal
    if kind == NVML_VALUE_TYPE_UNSIGNED_INT:
        return field.value.uiVal
    if kind == NVML_VALUE_TYPE_UNSIGNED_LONG:
        return field.value.ulVal
    if kind == NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        return field.value.sllVal
    if kind == NVML_VALUE_TYPE_SIGNED_INT:
        return field.value.siVal
    if kind == NVML_VALUE_TYPE_UNSIGNED_SHORT:
        return field.value.usVal
    return field.value.ullVal


def to_text(raw):
    """bytes (NVML strings) to str, replacing undecodable bytes; str unchanged."""
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw


class NVML:
    """A loaded NVML library. ``NVML(path)`` loads it (``libnvidia-ml.so.1`` from the loader's path when
    ``path`` is None) or raises :class:`LibraryNotFound`; ``init()`` before any other call."""

    binding = "ctypes"

    def __init__(self, path=None):
        self.path = path or LIBRARY_NAME
        try:
            self._lib = ctypes.CDLL(self.path)
        except OSError as exc:
            raise LibraryNotFound("%s: %s" % (self.path, exc)) from exc
        self._functions = {}

    # -- plumbing --

    def _function(self, name):
        if name not in self._functions:
            try:
                function = getattr(self._lib, name)
            except AttributeError:
                function = None
            else:
                function.restype = ctypes.c_int
            self._functions[name] = function
        function = self._functions[name]
        if function is None:
            raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND, name, missing_symbol=True)
        return function

    def has(self, name):
        """Whether the loaded library exports ``name``."""
        try:
            self._function(name)
        except NVMLError:
            return False
        return True

    def _call(self, name, *args):
        ret = self._function(name)(*args)
        if ret != NVML_SUCCESS:
            raise NVMLError(ret, name)

    # -- library --

    def init(self):
        """nvmlInit_v2 (nvmlInit on a library that predates it)."""
        self._call("nvmlInit_v2" if self.has("nvmlInit_v2") else "nvmlInit")

    def shutdown(self):
        """nvmlShutdown."""
        self._call("nvmlShutdown")

    def _string(self, name, size, *args):
        buf = ctypes.create_string_buffer(size)
        self._call(name, *(args + (buf, ctypes.c_uint(size))))
        return to_text(buf.value)

    def driver_version(self):
        """nvmlSystemGetDriverVersion, e.g. ``590.48.01``."""
        return self._string("nvmlSystemGetDriverVersion", SYSTEM_VERSION_BUFFER_SIZE)

    def nvml_version(self):
        """nvmlSystemGetNVMLVersion, e.g. ``13.590.48.01``."""
        return self._string("nvmlSystemGetNVMLVersion", SYSTEM_VERSION_BUFFER_SIZE)

    # -- devices --

    def device_count(self):
        """nvmlDeviceGetCount_v2 (nvmlDeviceGetCount on an older library)."""
        count = ctypes.c_uint()
        self._call("nvmlDeviceGetCount_v2" if self.has("nvmlDeviceGetCount_v2") else "nvmlDeviceGetCount", ctypes.byref(count))
        return count.value

    def handle(self, index):
        """nvmlDeviceGetHandleByIndex_v2: an opaque device handle."""
        handle = ctypes.c_void_p()
        name = "nvmlDeviceGetHandleByIndex_v2" if self.has("nvmlDeviceGetHandleByIndex_v2") else "nvmlDeviceGetHandleByIndex"
        self._call(name, ctypes.c_uint(index), ctypes.byref(handle))
        return handle

    def uuid(self, handle):
        """nvmlDeviceGetUUID."""
        return self._string("nvmlDeviceGetUUID", DEVICE_UUID_BUFFER_SIZE, handle)

    def name(self, handle):
        """nvmlDeviceGetName."""
        return self._string("nvmlDeviceGetName", DEVICE_NAME_BUFFER_SIZE, handle)

    def pci_bus_id(self, handle):
        """nvmlDeviceGetPciInfo_v3's busId, e.g. ``00000000:53:00.0``."""
        info = PciInfo()
        self._call("nvmlDeviceGetPciInfo_v3", handle, ctypes.byref(info))
        return to_text(info.busId)

    def temperature(self, handle, sensor=NVML_TEMPERATURE_GPU):
        """nvmlDeviceGetTemperature, degrees C."""
        value = ctypes.c_uint()
        self._call("nvmlDeviceGetTemperature", handle, ctypes.c_int(sensor), ctypes.byref(value))
        return value.value

    def clock(self, handle, clock_type=NVML_CLOCK_SM):
        """nvmlDeviceGetClockInfo, MHz."""
        value = ctypes.c_uint()
        self._call("nvmlDeviceGetClockInfo", handle, ctypes.c_int(clock_type), ctypes.byref(value))
        return value.value

    def power_usage(self, handle):
        """nvmlDeviceGetPowerUsage, milliwatts."""
        value = ctypes.c_uint()
        self._call("nvmlDeviceGetPowerUsage", handle, ctypes.byref(value))
        return value.value

    def field_values(self, handle, field_ids):
        """nvmlDeviceGetFieldValues: a list of ``(nvmlReturn, value)`` per requested id, in order
        (value None where nvmlReturn is not NVML_SUCCESS)."""
        values = (FieldValue * len(field_ids))()
        for slot, field_id in zip(values, field_ids):
            slot.fieldId = field_id
            slot.scopeId = 0
        self._call("nvmlDeviceGetFieldValues", handle, ctypes.c_int(len(field_ids)), values)
        return [(slot.nvmlReturn, field_value(slot) if slot.nvmlReturn == NVML_SUCCESS else None) for slot in values]

    def violation_time_ns(self, handle, policy):
        """nvmlDeviceGetViolationStatus: the cumulative violation time (ns) of a perf policy."""
        value = ViolationTime()
        self._call("nvmlDeviceGetViolationStatus", handle, ctypes.c_int(policy), ctypes.byref(value))
        return value.violationTime

    def total_ecc_errors(self, handle, error_type, counter_type):
        """nvmlDeviceGetTotalEccErrors."""
        value = ctypes.c_ulonglong()
        self._call("nvmlDeviceGetTotalEccErrors", handle, ctypes.c_int(error_type), ctypes.c_int(counter_type), ctypes.byref(value))
        return value.value

    def nvlink_state(self, handle, link):
        """nvmlDeviceGetNvLinkState: True when the link is active."""
        value = ctypes.c_int()
        self._call("nvmlDeviceGetNvLinkState", handle, ctypes.c_uint(link), ctypes.byref(value))
        return value.value == NVML_FEATURE_ENABLED

    def nvlink_error_counter(self, handle, link, counter):
        """nvmlDeviceGetNvLinkErrorCounter."""
        value = ctypes.c_ulonglong()
        self._call("nvmlDeviceGetNvLinkErrorCounter", handle, ctypes.c_uint(link), ctypes.c_int(counter), ctypes.byref(value))
        return value.value
