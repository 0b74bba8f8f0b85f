# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-side NVML sampler: one process, one NVML session, a record per GPU per tick (JSON Lines).

Standard library only, Python 3.8+. The records follow the shared contract ``gpufleet.nvml-samples/v1``
(docs/nvml-sampler.md): a header, one ``sample`` per GPU per tick, and an ``end`` trailer when the run
ends by its duration, its sample cap or SIGTERM/SIGINT.

NVML is reached through nvidia-ml-py (``import pynvml``) when it is importable and no library path is
given, else through the ctypes binding in :mod:`nvml`. Either way the calls go through the same small
backend interface and raise :class:`nvml.NVMLError`, so a failure is handled the same:

- ``NVML_ERROR_NOT_SUPPORTED`` (or any other error) on one field: that field is null and
  ``errors[field]`` names the error (``not_supported``, ``no_permission``, ...);
- a symbol the driver's library lacks (an old driver): that field is null, ``errors[field] = "missing_symbol"``;
- ``NVML_ERROR_GPU_IS_LOST`` from any call for a GPU: that GPU's line has every value null and
  ``errors = {"*": "gpu_lost"}``; the other GPUs go on, and the lost one is asked again next tick.

Clock-event (throttle) counters are the driver's cumulative nanosecond counters, read with
``nvmlDeviceGetFieldValues``; see :func:`clock_event_field_ids` for which field ids, and why they depend
on the driver version. ``nvmlDeviceGetViolationStatus`` is the fallback for the two counters it also
serves (SW power cap, sync boost).
"""

from __future__ import annotations

import json
import re
import signal
import time

from ansible_collections.gpufleet.acceptance.plugins.module_utils import nvml

try:  # nvidia-ml-py, preferred when the node has it; the product never requires it
    import pynvml  # pylint: disable=import-error
except ImportError:
    pynvml = None

SCHEMA = "gpufleet.nvml-samples/v1"
INLINE_MAX_SAMPLES = 1000

CLOCK_EVENT_KEYS = ("sw_power_cap", "sw_thermal", "hw_slowdown", "hw_thermal", "hw_power_brake", "sync_boost")
ECC_KEYS = (
    ("volatile_corrected", nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_VOLATILE_ECC),
    ("volatile_uncorrected", nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC),
    ("aggregate_corrected", nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, nvml.NVML_AGGREGATE_ECC),
    ("aggregate_uncorrected", nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_AGGREGATE_ECC),
)
NVLINK_KEYS = (
    ("replay", nvml.NVML_NVLINK_ERROR_DL_REPLAY),
    ("recovery", nvml.NVML_NVLINK_ERROR_DL_RECOVERY),
    ("crc_flit", nvml.NVML_NVLINK_ERROR_DL_CRC_FLIT),
    ("crc_data", nvml.NVML_NVLINK_ERROR_DL_CRC_DATA),
)

# Field ids (nvml.h). NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP and _SYNC_BOOST are aliases of
# NVML_FI_DEV_PERF_POLICY_POWER (74) and _SYNC_BOOST (76), stable since those fields exist.
FI_PERF_POLICY_POWER = 74
FI_PERF_POLICY_SYNC_BOOST = 76
# The three newer counters (SW thermal, HW thermal, HW power brake slowdown) moved between drivers:
# nvml.h of R575 and of 580.65 (nvidia-ml-py 12.575.51, 13.580.65) numbers them 251-253, where R570 had
# NVML_FI_PWR_SMOOTHING_ENABLED, PRIV_LVL and IMM_RAMP_DOWN_ENABLED; from 580.82 on (nvidia-ml-py 13.580.82
# to 13.615.71) power smoothing is back at 251 and the counters are 269-271. Asking the wrong id would read
# a power-smoothing setting (0 or 1) as a throttle time, so the ids follow the driver version, never the
# installed nvidia-ml-py's constants, and a driver in neither known range gets no reading.
CLOCK_EVENT_IDS_R575 = {"sw_thermal": 251, "hw_thermal": 252, "hw_power_brake": 253}
CLOCK_EVENT_IDS_R580_82 = {"sw_thermal": 269, "hw_thermal": 270, "hw_power_brake": 271}
# Counters NVML has no field (or violation policy) for: the parent "HW Slowdown" reason has only a flag.
NO_COUNTER = {"hw_slowdown": "not_supported"}
VIOLATION_FALLBACK = {"sw_power_cap": nvml.NVML_PERF_POLICY_POWER, "sync_boost": nvml.NVML_PERF_POLICY_SYNC_BOOST}

_VERSION_RE = re.compile(r"^\s*(\d+)\.(\d+)")


def driver_branch(driver_version):
    """``(major, minor)`` of a driver version string (``580.65.06`` -> (580, 65)), or None."""
    match = _VERSION_RE.match(driver_version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def clock_event_field_ids(driver_version):
    """{clock-event key: NVML field id, or the error its records carry when there is no id to ask}."""
    ids = {"sw_power_cap": FI_PERF_POLICY_POWER, "sync_boost": FI_PERF_POLICY_SYNC_BOOST}
    ids.update(NO_COUNTER)
    branch = driver_branch(driver_version)
    if branch is None:
        newer = dict.fromkeys(CLOCK_EVENT_IDS_R575, "field_id_unknown")
    elif branch < (575, 0):
        newer = dict.fromkeys(CLOCK_EVENT_IDS_R575, "not_supported")
    elif branch <= (580, 65):
        newer = dict(CLOCK_EVENT_IDS_R575)
    elif branch >= (580, 82):
        newer = dict(CLOCK_EVENT_IDS_R580_82)
    else:
        newer = dict.fromkeys(CLOCK_EVENT_IDS_R575, "field_id_unknown")
    ids.update(newer)
    return ids


class GpuLost(Exception):
    """A call for this GPU returned NVML_ERROR_GPU_IS_LOST."""


class PynvmlBackend:
    """The sampler's backend interface over nvidia-ml-py; errors become :class:`nvml.NVMLError`."""

    binding = "nvidia-ml-py"

    def __init__(self, module=None):
        self._p = module or pynvml

    def _call(self, name, *args):
        function = getattr(self._p, name, None)
        if function is None:  # an nvidia-ml-py older than the call
            raise nvml.NVMLError(nvml.NVML_ERROR_FUNCTION_NOT_FOUND, name, missing_symbol=True)
        try:
            return function(*args)
        except self._p.NVMLError as exc:
            code = exc.value
            raise nvml.NVMLError(code, name, missing_symbol=code == nvml.NVML_ERROR_FUNCTION_NOT_FOUND) from None

    def init(self):
        """nvmlInit (nvidia-ml-py calls nvmlInitWithFlags(0))."""
        try:
            self._call("nvmlInit")
        except nvml.NVMLError as exc:
            if exc.code == nvml.NVML_ERROR_LIBRARY_NOT_FOUND:
                raise nvml.LibraryNotFound(nvml.LIBRARY_NAME) from None
            raise

    def shutdown(self):
        """nvmlShutdown."""
        self._call("nvmlShutdown")

    def driver_version(self):
        """nvmlSystemGetDriverVersion."""
        return nvml.to_text(self._call("nvmlSystemGetDriverVersion"))

    def nvml_version(self):
        """nvmlSystemGetNVMLVersion."""
        return nvml.to_text(self._call("nvmlSystemGetNVMLVersion"))

    def device_count(self):
        """nvmlDeviceGetCount (_v2)."""
        return self._call("nvmlDeviceGetCount")

    def handle(self, index):
        """nvmlDeviceGetHandleByIndex (_v2)."""
        return self._call("nvmlDeviceGetHandleByIndex", index)

    def uuid(self, handle):
        """nvmlDeviceGetUUID."""
        return nvml.to_text(self._call("nvmlDeviceGetUUID", handle))

    def name(self, handle):
        """nvmlDeviceGetName."""
        return nvml.to_text(self._call("nvmlDeviceGetName", handle))

    def pci_bus_id(self, handle):
        """nvmlDeviceGetPciInfo (_v3) busId."""
        return nvml.to_text(self._call("nvmlDeviceGetPciInfo", handle).busId)

    def temperature(self, handle, sensor=nvml.NVML_TEMPERATURE_GPU):
        """nvmlDeviceGetTemperature."""
        return self._call("nvmlDeviceGetTemperature", handle, sensor)

    def clock(self, handle, clock_type=nvml.NVML_CLOCK_SM):
        """nvmlDeviceGetClockInfo."""
        return self._call("nvmlDeviceGetClockInfo", handle, clock_type)

    def power_usage(self, handle):
        """nvmlDeviceGetPowerUsage (mW)."""
        return self._call("nvmlDeviceGetPowerUsage", handle)

    def field_values(self, handle, field_ids):
        """nvmlDeviceGetFieldValues: [(nvmlReturn, value or None)]."""
        values = self._call("nvmlDeviceGetFieldValues", handle, list(field_ids))
        return [(slot.nvmlReturn, nvml.field_value(slot) if slot.nvmlReturn == nvml.NVML_SUCCESS else None) for slot in values]

    def violation_time_ns(self, handle, policy):
        """nvmlDeviceGetViolationStatus violationTime (ns)."""
        return self._call("nvmlDeviceGetViolationStatus", handle, policy).violationTime

    def total_ecc_errors(self, handle, error_type, counter_type):
        """nvmlDeviceGetTotalEccErrors."""
        return self._call("nvmlDeviceGetTotalEccErrors", handle, error_type, counter_type)

    def nvlink_state(self, handle, link):
        """nvmlDeviceGetNvLinkState: True when active."""
        return self._call("nvmlDeviceGetNvLinkState", handle, link) == nvml.NVML_FEATURE_ENABLED

    def nvlink_error_counter(self, handle, link, counter):
        """nvmlDeviceGetNvLinkErrorCounter."""
        return self._call("nvmlDeviceGetNvLinkErrorCounter", handle, link, counter)


def open_backend(binding="auto", library_path=None):
    """The backend to sample with: nvidia-ml-py when importable and no library path is given (or when asked
    for), else the ctypes binding. Raises :class:`nvml.LibraryNotFound` or ValueError."""
    if binding == "nvidia-ml-py":
        if pynvml is None:
            raise ValueError("binding nvidia-ml-py: pynvml is not importable on the node")
        if library_path:
            raise ValueError("library_path works with the ctypes binding only")
        return PynvmlBackend()
    if binding == "auto" and pynvml is not None and not library_path:
        return PynvmlBackend()
    return nvml.NVML(library_path)


class Sampler:
    """Sample every GPU each ``interval`` seconds for ``duration`` seconds (0: one tick) and hand each record
    (header, samples, trailer) to ``emit``; ``tick_done`` is called after each tick (flush there)."""

    def __init__(self, backend, interval=5.0, duration=0.0, max_samples=None, clock=time.time, monotonic=time.monotonic, sleep=time.sleep,
                 stop_when=None):
        self.backend = backend
        # checked after each tick: True ends the run there (reason "stopped"), e.g. the sampled run has ended
        self._stop_when = stop_when
        self.interval = float(interval)
        self.duration = float(duration)
        self.max_samples = max_samples
        self._clock = clock
        self._monotonic = monotonic
        self._sleep = sleep
        self._stop = None
        self._sleeping = False
        self.header = None
        self.gpus = []  # [{"index", "uuid", "handle"}]
        self.clock_event_ids = {}
        self.samples = 0
        self.ticks = 0

    # -- start --

    def start(self):
        """nvmlInit and the header record. Raises nvml.NVMLError when NVML cannot start."""
        self.backend.init()
        driver = self._optional(self.backend.driver_version)
        self.clock_event_ids = clock_event_field_ids(driver)
        gpus = []
        for index in range(self.backend.device_count()):
            entry = {"index": index, "uuid": None, "name": None, "pci_bus_id": None}
            handle = self._handle(index)
            if handle is not None:
                entry["uuid"] = self._optional(self.backend.uuid, handle)
                entry["name"] = self._optional(self.backend.name, handle)
                entry["pci_bus_id"] = self._optional(self.backend.pci_bus_id, handle)
            self.gpus.append({"index": index, "uuid": entry["uuid"], "handle": handle})
            gpus.append(entry)
        self.header = {
            "type": "header",
            "schema": SCHEMA,
            "host_time_start": self._clock(),
            "interval_s": self.interval,
            "driver_version": driver,
            "nvml_version": self._optional(self.backend.nvml_version),
            "binding": self.backend.binding,
            "gpus": gpus,
        }
        return self.header

    def _handle(self, index):
        try:
            return self.backend.handle(index)
        except nvml.NVMLError:
            return None

    @staticmethod
    def _optional(function, *args):
        try:
            return function(*args)
        except nvml.NVMLError:
            return None

    # -- one GPU --

    def _read(self, errors, key, function, *args):
        try:
            return function(*args)
        except nvml.NVMLError as exc:
            if exc.code == nvml.NVML_ERROR_GPU_IS_LOST:
                raise GpuLost() from None
            errors[key] = exc.short
            return None

    def sample_gpu(self, gpu):
        """One sample record for ``gpu`` (an entry of ``self.gpus``)."""
        record = {"type": "sample", "t": self._clock(), "gpu": gpu["index"], "uuid": gpu["uuid"]}
        errors = {}
        try:
            if gpu["handle"] is None:
                try:
                    gpu["handle"] = self.backend.handle(gpu["index"])
                except nvml.NVMLError as exc:
                    return self._empty(record, {"*": exc.short})
            handle = gpu["handle"]
            if gpu["uuid"] is None:  # not readable at start (a GPU lost then): ask again
                gpu["uuid"] = record["uuid"] = self._optional(self.backend.uuid, handle)
            temperature = self._read(errors, "temperature_c", self.backend.temperature, handle, nvml.NVML_TEMPERATURE_GPU)
            sm_clock = self._read(errors, "sm_clock_mhz", self.backend.clock, handle, nvml.NVML_CLOCK_SM)
            power_mw = self._read(errors, "power_w", self.backend.power_usage, handle)
            clock_events = self._clock_events(handle, errors)
            ecc = {}
            for key, error_type, counter_type in ECC_KEYS:
                ecc[key] = self._read(errors, "ecc." + key, self.backend.total_ecc_errors, handle, error_type, counter_type)
            active_links, nvlink_counts = self._nvlink(handle, errors)
        except GpuLost:
            return self._empty(record, {"*": "gpu_lost"})
        record.update({
            "temperature_c": temperature,
            "sm_clock_mhz": sm_clock,
            "power_w": None if power_mw is None else round(power_mw / 1000.0, 3),
            "clock_event_ns": clock_events,
            "ecc": ecc,
            "nvlink": nvlink_counts,
            "nvlink_active_links": active_links,
            "errors": errors,
        })
        return record

    @staticmethod
    def _empty(record, errors):
        record.update({
            "temperature_c": None,
            "sm_clock_mhz": None,
            "power_w": None,
            "clock_event_ns": dict.fromkeys(CLOCK_EVENT_KEYS),
            "ecc": dict.fromkeys(entry[0] for entry in ECC_KEYS),
            "nvlink": dict.fromkeys(entry[0] for entry in NVLINK_KEYS),
            "nvlink_active_links": None,
            "errors": errors,
        })
        return record

    def _clock_events(self, handle, errors):
        values = dict.fromkeys(CLOCK_EVENT_KEYS)
        asked = [(key, field_id) for key, field_id in self.clock_event_ids.items() if isinstance(field_id, int)]
        for key, field_id in self.clock_event_ids.items():
            if not isinstance(field_id, int):
                errors["clock_event_ns." + key] = field_id
        try:
            results = self.backend.field_values(handle, [entry[1] for entry in asked])
        except nvml.NVMLError as exc:
            if exc.code == nvml.NVML_ERROR_GPU_IS_LOST:
                raise GpuLost() from None
            results = [(exc, None)] * len(asked)
        for (key, unused_id), (ret, value) in zip(asked, results):
            if ret == nvml.NVML_SUCCESS:
                values[key] = int(value)
                continue
            error = ret if isinstance(ret, nvml.NVMLError) else nvml.NVMLError(ret, "nvmlDeviceGetFieldValues")
            if error.code == nvml.NVML_ERROR_GPU_IS_LOST:
                raise GpuLost()
            errors["clock_event_ns." + key] = error.short
            if key in VIOLATION_FALLBACK:
                values[key] = self._read(errors, "clock_event_ns." + key, self.backend.violation_time_ns, handle, VIOLATION_FALLBACK[key])
                if values[key] is not None:
                    del errors["clock_event_ns." + key]
        return values

    def _nvlink(self, handle, errors):
        """(active link count or None, {counter: sum over active links or None})."""
        sums = dict.fromkeys(entry[0] for entry in NVLINK_KEYS)
        failed = {}
        active = 0
        for link in range(nvml.NVML_NVLINK_MAX_LINKS):
            try:
                up = self.backend.nvlink_state(handle, link)
            except nvml.NVMLError as exc:
                if exc.code == nvml.NVML_ERROR_GPU_IS_LOST:
                    raise GpuLost() from None
                if link > 0 and exc.code in (nvml.NVML_ERROR_INVALID_ARGUMENT, nvml.NVML_ERROR_NOT_SUPPORTED):
                    break  # past this GPU's last link
                if exc.code in (nvml.NVML_ERROR_NOT_SUPPORTED, nvml.NVML_ERROR_INVALID_ARGUMENT) and link == 0:
                    if exc.code == nvml.NVML_ERROR_NOT_SUPPORTED:
                        errors["nvlink"] = exc.short
                    return None, sums  # no NVLink on this GPU
                errors["nvlink"] = exc.short
                return None, sums
            if not up:
                continue
            active += 1
            for key, counter in NVLINK_KEYS:
                if key in failed:
                    continue
                try:
                    count = self.backend.nvlink_error_counter(handle, link, counter)
                except nvml.NVMLError as exc:
                    if exc.code == nvml.NVML_ERROR_GPU_IS_LOST:
                        raise GpuLost() from None
                    failed[key] = exc.short
                    continue
                sums[key] = (sums[key] or 0) + count
        for key in failed:
            if key in sums:
                sums[key] = None
                errors["nvlink." + key] = failed[key]
        return active, sums

    # -- the run --

    def request_stop(self, signum, _frame=None):
        """Signal handler: end after the current tick (at once when sleeping between ticks)."""
        self._stop = signum
        if self._sleeping:
            raise _Interrupted()

    def _wait_until(self, deadline):
        """Sleep until ``deadline`` (monotonic); False when a stop was requested."""
        try:
            self._sleeping = True
            while self._stop is None:
                left = deadline - self._monotonic()
                if left <= 0:
                    break
                self._sleep(left)
        except _Interrupted:
            pass
        finally:
            self._sleeping = False
        return self._stop is None

    def run(self, emit, tick_done=None, handle_signals=True):
        """Emit the header, the samples and the trailer; returns the trailer. ``start()`` first."""
        previous = {}
        if handle_signals:
            for signum in (signal.SIGTERM, signal.SIGINT):
                previous[signum] = signal.signal(signum, self.request_stop)
        try:
            emit(self.header)
            if tick_done:
                tick_done()
            reason = self._loop(emit, tick_done)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        trailer = {"type": "end", "t": self._clock(), "samples": self.samples, "reason": reason}
        emit(trailer)
        if tick_done:
            tick_done()
        return trailer

    def _loop(self, emit, tick_done):
        begin = self._monotonic()
        count = len(self.gpus)
        while True:
            if self._stop is not None:
                return "signal"
            if self.max_samples is not None and self.ticks > 0 and self.samples + count > self.max_samples:
                return "max_samples"
            for gpu in self.gpus:
                emit(self.sample_gpu(gpu))
                self.samples += 1
            self.ticks += 1
            if tick_done:
                tick_done()
            # the tick after the sampled run ended read its counters at the end: that one is the last
            if self._stop_when is not None and self._stop_when():
                return "stopped"
            if self.duration <= 0 or self.interval <= 0:
                return "duration"
            elapsed = self._monotonic() - begin
            # the next slot on the grid begin + k * interval (slots a slow tick overran are skipped)
            slot = max(self.ticks, int(elapsed // self.interval) + 1)
            if slot * self.interval > self.duration + 1e-9:
                return "duration"
            if not self._wait_until(begin + slot * self.interval):
                return "signal"

    def close(self):
        """nvmlShutdown (errors ignored: the samples are already out)."""
        self._optional(self.backend.shutdown)


class _Interrupted(Exception):
    """Raised by the signal handler to cut a sleep short."""


class JsonLinesWriter:
    """Write records as JSON Lines to an open text file, flushing on ``flush()`` (once per tick)."""

    def __init__(self, handle):
        self.handle = handle
        self.lines = 0

    def emit(self, record):
        """Write one record."""
        self.handle.write(json.dumps(record, separators=(",", ":")) + "\n")
        self.lines += 1

    def flush(self):
        """Flush to the file."""
        self.handle.flush()
