# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVML sampler (module_utils/nvml_sampler.py) against the fake libnvidia-ml.so, through both bindings.

Expected values are written by hand from the recordings the data files name (tests/fakenvml/*.data); the
faults of h100-535-8gpu-faults.data are SYNTHETIC and its comments say which.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ansible_collections.gpufleet.acceptance.plugins.module_utils import nvml, nvml_sampler
from ansible_collections.gpufleet.acceptance.plugins.module_utils.nvml_sampler import Sampler, clock_event_field_ids

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "fakenvml"))
import fakenvml  # noqa: E402  pylint: disable=import-error,wrong-import-position

H100_590 = fakenvml.data_file("h100-590-1gpu.data")
H100_535 = fakenvml.data_file("h100-535-8gpu-faults.data")
NO_HW_SLOWDOWN = {"clock_event_ns.hw_slowdown": "not_supported"}
R535_CLOCK_ERRORS = dict(NO_HW_SLOWDOWN, **{"clock_event_ns.%s" % key: "not_supported" for key in ("sw_thermal", "hw_thermal", "hw_power_brake")})


@pytest.fixture(name="libs", scope="session")
def libs_fixture(tmp_path_factory):
    return fakenvml.build_once(tmp_path_factory)


class FakeClock:
    """A clock the sampler sleeps on: sleeping advances it (SYNTHETIC timing)."""

    def __init__(self, tick_cost=0.0):
        self.now = 1000.0
        self.tick_cost = tick_cost
        self.sleeps = []

    def time(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(round(seconds, 6))
        self.now += seconds


def run(backend, interval=0.01, duration=0.0, **kwargs):
    """Start, run and close a sampler on a clock that only sleeping moves (so a slow machine cannot skip
    ticks); (records, sampler)."""
    clock = FakeClock()
    sampler = Sampler(backend, interval=interval, duration=duration, clock=clock.time, monotonic=clock.time, sleep=clock.sleep, **kwargs)
    sampler.start()
    records = []
    try:
        sampler.run(records.append, handle_signals=False)
    finally:
        sampler.close()
    return records, sampler


def samples_by_tick(records, gpus):
    samples = [r for r in records if r["type"] == "sample"]
    return [samples[i:i + gpus] for i in range(0, len(samples), gpus)]


def test_one_tick_of_the_recorded_h100_590(libs, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_DATA", H100_590)
    records, sampler = run(nvml.NVML(libs["full"]))
    header, sample, end = records
    assert header["schema"] == "gpufleet.nvml-samples/v1" and header["binding"] == "ctypes"
    assert (header["driver_version"], header["nvml_version"]) == ("590.48.01", "13.590.48.01")
    assert header["gpus"] == [{"index": 0, "uuid": "GPU-00000000-0000-0000-0000-000000000000", "name": "NVIDIA H100 80GB HBM3",
                               "pci_bus_id": "00000000:00:09.0"}]
    assert sample["type"] == "sample" and sample["gpu"] == 0 and sample["uuid"] == "GPU-00000000-0000-0000-0000-000000000000"
    # -q: GPU Current Temp 59 C, SM 1980 MHz, Average Power Draw 629.45 W; counters 0 us; ECC 0; 18 links up.
    assert (sample["temperature_c"], sample["sm_clock_mhz"], sample["power_w"]) == (59, 1980, 629.45)
    assert sample["clock_event_ns"] == {"sw_power_cap": 0, "sw_thermal": 0, "hw_slowdown": None, "hw_thermal": 0, "hw_power_brake": 0, "sync_boost": 0}
    assert sample["ecc"] == {"volatile_corrected": 0, "volatile_uncorrected": 0, "aggregate_corrected": 0, "aggregate_uncorrected": 0}
    assert sample["nvlink"] == {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}
    assert sample["nvlink_active_links"] == 18
    assert sample["errors"] == NO_HW_SLOWDOWN
    assert end == {"type": "end", "t": end["t"], "samples": 1, "reason": "duration"}
    assert sampler.ticks == 1
    assert header["host_time_start"] <= sample["t"] <= end["t"]


def test_faults_on_8_gpus_over_three_ticks(libs, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_DATA", H100_535)
    records, sampler = run(nvml.NVML(libs["full"]), interval=0.02, duration=0.04)
    assert sampler.ticks == 3 and records[-1]["samples"] == 24
    ticks = samples_by_tick(records, 8)
    assert [[s["gpu"] for s in tick] for tick in ticks] == [list(range(8))] * 3
    first = ticks[0]
    # Recorded: temperatures 36 37 39 39 38 36 37 35 C, power 71.97 ... W, SM 345 MHz except GPU 2 at 1980.
    assert [s["temperature_c"] for s in first] == [36, 37, 39, 39, 38, 36, 37, 35]
    assert [s["power_w"] for s in first] == [71.97, 68.88, 118.01, 72.91, 71.68, 71.69, None, 74.76]
    assert [s["sm_clock_mhz"] for s in first] == [345, 345, 1980, 345, 345, 345, 345, 345]
    # Driver 535: no field ids for the three newer clock-event counters.
    assert first[0]["errors"] == R535_CLOCK_ERRORS
    assert first[0]["clock_event_ns"] == {"sw_power_cap": 0, "sw_thermal": None, "hw_slowdown": None, "hw_thermal": None, "hw_power_brake": None,
                                          "sync_boost": 0}
    # SYNTHETIC GPU 2 SW power capping: 5 s + 0.25 s a read -> deltas of 0.25 s a tick.
    assert [tick[2]["clock_event_ns"]["sw_power_cap"] for tick in ticks] == [5000000000, 5250000000, 5500000000]
    # SYNTHETIC GPU 1: link 3 down -> 17 active links, sums over those.
    assert first[1]["nvlink_active_links"] == 17 and first[1]["nvlink"]["replay"] == 0
    # SYNTHETIC GPU 3: CRC_DATA not supported -> that sum null, the others summed.
    assert first[3]["nvlink"] == {"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": None}
    assert first[3]["errors"] == dict(R535_CLOCK_ERRORS, **{"nvlink.crc_data": "not_supported"})
    # SYNTHETIC GPU 4: link 7 replays 10, 13, 16; 1 CRC flit error on each of 18 links.
    assert [tick[4]["nvlink"]["replay"] for tick in ticks] == [10, 13, 16]
    assert [tick[4]["nvlink"]["crc_flit"] for tick in ticks] == [18, 18, 18]
    # SYNTHETIC GPU 5: sampled on tick 1, lost from tick 2: all null, errors {"*": "gpu_lost"}; the others go on.
    assert first[5]["temperature_c"] == 36
    for tick in ticks[1:]:
        lost = tick[5]
        assert lost["errors"] == {"*": "gpu_lost"}
        assert lost["uuid"] == "GPU-06db64f6-6181-5a90-cf95-5ce52a58c4e5"
        assert (lost["temperature_c"], lost["sm_clock_mhz"], lost["power_w"], lost["nvlink_active_links"]) == (None, None, None, None)
        assert set(lost["clock_event_ns"].values()) == {None} and set(lost["ecc"].values()) == {None} and set(lost["nvlink"].values()) == {None}
        assert tick[6]["temperature_c"] == 37 and tick[4]["temperature_c"] == 38
    # SYNTHETIC GPU 6: power NOT_SUPPORTED.
    assert first[6]["power_w"] is None and first[6]["errors"]["power_w"] == "not_supported"
    # SYNTHETIC GPU 7: volatile corrected ECC grows by 2 a read.
    assert [tick[7]["ecc"]["volatile_corrected"] for tick in ticks] == [0, 2, 4]


def test_old_driver_library_missing_symbols(libs, monkeypatch):
    """Without nvmlDeviceGetFieldValues the two counters that have a violation policy come from
    nvmlDeviceGetViolationStatus; without nvmlDeviceGetNvLinkErrorCounter the NVLink sums are null."""
    monkeypatch.setenv("FAKE_NVML_DATA", H100_535)
    records = run(nvml.NVML(libs["old"]), interval=0.02, duration=0.02)[0]
    header = records[0]
    assert header["nvml_version"] is None and header["driver_version"] == "535.183.01"
    ticks = samples_by_tick(records, 8)
    assert [tick[2]["clock_event_ns"]["sw_power_cap"] for tick in ticks] == [5000000000, 5250000000]
    assert ticks[0][0]["clock_event_ns"]["sync_boost"] == 0
    gpu0 = ticks[0][0]
    assert gpu0["nvlink"] == {"replay": None, "recovery": None, "crc_flit": None, "crc_data": None}
    assert gpu0["nvlink_active_links"] == 18
    assert gpu0["errors"] == dict(R535_CLOCK_ERRORS, **{"nvlink.%s" % key: "missing_symbol" for key in ("replay", "recovery", "crc_flit", "crc_data")})
    assert gpu0["temperature_c"] == 36


def test_missing_symbol_without_fallback_names_the_field(libs, monkeypatch, tmp_path):
    """A 590 driver's library without nvmlDeviceGetFieldValues: the three counters with no violation policy
    become null with missing_symbol; the violation policies are not served here either (SYNTHETIC data)."""
    data = tmp_path / "SYNTHETIC-590-no-violation.data"
    data.write_text("# SYNTHETIC: a 590 driver whose library lacks nvmlDeviceGetFieldValues (the 'old' build)\n"
                    "driver 590.48.01\ngpus 1\ngpu 0 uuid GPU-x\ngpu 0 temperature 40\n")
    monkeypatch.setenv("FAKE_NVML_DATA", str(data))
    records = run(nvml.NVML(libs["old"]))[0]
    sample = records[1]
    for key in ("sw_thermal", "hw_thermal", "hw_power_brake"):
        assert sample["errors"]["clock_event_ns." + key] == "missing_symbol"
    # sw_power_cap: field path missing, then the violation fallback answers NOT_SUPPORTED: the last error is kept.
    assert sample["errors"]["clock_event_ns.sw_power_cap"] == "not_supported"
    assert sample["errors"]["nvlink"] == "not_supported" and sample["nvlink_active_links"] is None
    assert sample["errors"]["ecc.volatile_corrected"] == "not_supported"
    assert sample["temperature_c"] == 40 and sample["sm_clock_mhz"] is None and sample["errors"]["sm_clock_mhz"] == "not_supported"


def test_gpu_lost_at_start_still_gets_lines(libs, monkeypatch, tmp_path):
    data = tmp_path / "SYNTHETIC-lost-at-start.data"
    data.write_text("# SYNTHETIC: GPU 1 is lost before the run starts\n"
                    "driver 590.48.01\ngpus 2\ngpu 0 uuid GPU-a\ngpu 0 temperature 50\ngpu 1 uuid GPU-b\ngpu 1 lost\n")
    monkeypatch.setenv("FAKE_NVML_DATA", str(data))
    records = run(nvml.NVML(libs["full"]))[0]
    assert records[0]["gpus"][1] == {"index": 1, "uuid": None, "name": None, "pci_bus_id": None}
    assert records[1]["temperature_c"] == 50
    assert records[2]["gpu"] == 1 and records[2]["errors"] == {"*": "gpu_lost"} and records[2]["temperature_c"] is None


@pytest.mark.parametrize("driver,expected", [
    ("535.183.01", {"sw_thermal": "not_supported", "hw_thermal": "not_supported", "hw_power_brake": "not_supported"}),
    ("570.172.08", {"sw_thermal": "not_supported", "hw_thermal": "not_supported", "hw_power_brake": "not_supported"}),
    ("575.57.08", {"sw_thermal": 251, "hw_thermal": 252, "hw_power_brake": 253}),
    ("580.65.06", {"sw_thermal": 251, "hw_thermal": 252, "hw_power_brake": 253}),
    ("580.76.05", {"sw_thermal": "field_id_unknown", "hw_thermal": "field_id_unknown", "hw_power_brake": "field_id_unknown"}),
    ("580.82.07", {"sw_thermal": 269, "hw_thermal": 270, "hw_power_brake": 271}),
    ("590.48.01", {"sw_thermal": 269, "hw_thermal": 270, "hw_power_brake": 271}),
    (None, {"sw_thermal": "field_id_unknown", "hw_thermal": "field_id_unknown", "hw_power_brake": "field_id_unknown"}),
])
def test_clock_event_field_ids_follow_the_driver(driver, expected):
    ids = clock_event_field_ids(driver)
    assert ids == dict(expected, sw_power_cap=74, sync_boost=76, hw_slowdown="not_supported")


def test_clock_event_field_ids_agree_with_the_installed_nvidia_ml_py():
    """nvidia-ml-py 13.<driver> carries nvml.h of that driver: our ids for that driver must be its ids."""
    pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")
    from importlib.metadata import version  # pylint: disable=import-outside-toplevel

    driver = version("nvidia-ml-py").split(".", 1)[1]  # 13.615.71 -> 615.71
    ids = clock_event_field_ids(driver)
    assert ids["sw_thermal"] == pynvml.NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN
    assert ids["hw_thermal"] == pynvml.NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN
    assert ids["hw_power_brake"] == pynvml.NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN


@pytest.fixture(name="pynvml_on_fake")
def pynvml_on_fake_fixture(libs):
    """nvidia-ml-py pointed at the full fake (test-only poking of its module globals), restored after."""
    pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py is not installed")
    saved = (pynvml.nvmlLib, dict(pynvml._nvmlGetFunctionPointer_cache))  # pylint: disable=protected-access
    pynvml.nvmlLib = ctypes.CDLL(libs["full"])
    pynvml._nvmlGetFunctionPointer_cache.clear()  # pylint: disable=protected-access
    yield pynvml
    pynvml.nvmlLib = saved[0]
    pynvml._nvmlGetFunctionPointer_cache.clear()  # pylint: disable=protected-access
    pynvml._nvmlGetFunctionPointer_cache.update(saved[1])  # pylint: disable=protected-access


def test_nvidia_ml_py_backend_gives_the_same_records(pynvml_on_fake, libs, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_DATA", H100_535)
    via_pynvml = run(nvml_sampler.PynvmlBackend(pynvml_on_fake), interval=0.02, duration=0.02)[0]
    via_ctypes = run(nvml.NVML(libs["full"]), interval=0.02, duration=0.02)[0]
    assert via_pynvml[0]["binding"] == "nvidia-ml-py"

    def strip(records):
        out = []
        for record in records:
            record = {k: v for k, v in record.items() if k not in ("t", "host_time_start", "binding")}
            out.append(record)
        return out

    assert strip(via_pynvml) == strip(via_ctypes)
    assert [s["errors"] for s in via_pynvml if s["type"] == "sample" and s["gpu"] == 5][1] == {"*": "gpu_lost"}


def test_nvidia_ml_py_without_a_wrapper_is_a_missing_symbol():
    class Stub:  # an nvidia-ml-py too old for nvmlDeviceGetFieldValues (SYNTHETIC)
        class NVMLError(Exception):
            value = 0

    backend = nvml_sampler.PynvmlBackend(Stub)
    with pytest.raises(nvml.NVMLError) as err:
        backend.field_values(None, [74])
    assert err.value.short == "missing_symbol"


def test_open_backend_choices(monkeypatch, libs):
    monkeypatch.setattr(nvml_sampler, "pynvml", object())
    assert isinstance(nvml_sampler.open_backend("auto"), nvml_sampler.PynvmlBackend)
    assert isinstance(nvml_sampler.open_backend("auto", libs["full"]), nvml.NVML)
    assert isinstance(nvml_sampler.open_backend("ctypes", libs["full"]), nvml.NVML)
    with pytest.raises(ValueError):
        nvml_sampler.open_backend("nvidia-ml-py", libs["full"])
    monkeypatch.setattr(nvml_sampler, "pynvml", None)
    with pytest.raises(ValueError):
        nvml_sampler.open_backend("nvidia-ml-py")
    with pytest.raises(nvml.LibraryNotFound):
        nvml_sampler.open_backend("auto", "/nonexistent/libnvidia-ml.so.1")


def test_ticks_stay_on_the_interval_grid_and_end_at_duration(libs, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_DATA", H100_590)
    clock = FakeClock()
    sampler = Sampler(nvml.NVML(libs["full"]), interval=5, duration=20, clock=clock.time, monotonic=clock.time, sleep=clock.sleep)
    sampler.start()
    records = []
    sampler.run(records.append, handle_signals=False)
    sampler.close()
    # ticks at 0, 5, 10, 15, 20 s
    assert [r["t"] for r in records if r["type"] == "sample"] == [1000.0, 1005.0, 1010.0, 1015.0, 1020.0]
    assert clock.sleeps == [5.0] * 4
    assert records[-1]["reason"] == "duration" and records[-1]["samples"] == 5


def test_a_stop_request_ends_the_run_before_the_next_tick(libs, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_DATA", H100_590)
    clock = FakeClock()
    # SYNTHETIC: the sampled run ends 7 s in (the playbook creates the stop file then)
    sampler = Sampler(nvml.NVML(libs["full"]), interval=5, duration=60, clock=clock.time, monotonic=clock.time,
                      sleep=clock.sleep, stop_when=lambda: clock.now >= 1007.0)
    sampler.start()
    records = []
    sampler.run(records.append, handle_signals=False)
    sampler.close()
    # ticks at 0 and 5 s, then the first tick after the stop (10 s, the counters at the end of the run), and no more:
    # three ticks of a 60 s duration, not thirteen
    assert [r["t"] for r in records if r["type"] == "sample"] == [1000.0, 1005.0, 1010.0]
    assert records[-1]["reason"] == "stopped" and records[-1]["samples"] == 3
    assert clock.sleeps == [5.0, 5.0]


def test_a_stop_already_requested_ends_after_the_first_tick(libs, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_DATA", H100_590)
    records, _sampler = run(nvml.NVML(libs["full"]), interval=5, duration=60, stop_when=lambda: True)
    assert [r["type"] for r in records] == ["header", "sample", "end"] and records[-1]["reason"] == "stopped"


def test_a_slow_tick_skips_the_slots_it_overran(libs, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_DATA", H100_590)
    clock = FakeClock()
    backend = nvml.NVML(libs["full"])
    real_temperature = backend.temperature

    def slow_temperature(handle, sensor=nvml.NVML_TEMPERATURE_GPU):
        clock.now += 7  # SYNTHETIC: a read that takes 7 s
        return real_temperature(handle, sensor)

    backend.temperature = slow_temperature
    sampler = Sampler(backend, interval=5, duration=20, clock=clock.time, monotonic=clock.time, sleep=clock.sleep)
    sampler.start()
    records = []
    sampler.run(records.append, handle_signals=False)
    sampler.close()
    # tick 1 starts at 0 and ends at 7: slot 5 is missed, next is 10; tick 2 ends at 17, next is 20, ends 27.
    assert [r["t"] for r in records if r["type"] == "sample"] == [1000.0, 1010.0, 1020.0]
    assert clock.sleeps == [3.0, 3.0]


def test_max_samples_ends_before_a_tick_that_would_pass_it(libs, monkeypatch):
    monkeypatch.setenv("FAKE_NVML_DATA", H100_535)
    records, sampler = run(nvml.NVML(libs["full"]), interval=0.001, duration=60, max_samples=20)
    assert sampler.ticks == 2 and sampler.samples == 16
    assert records[-1] == {"type": "end", "t": records[-1]["t"], "samples": 16, "reason": "max_samples"}


SIGNAL_SCRIPT = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpufleet.acceptance.plugins.module_utils import nvml, nvml_sampler
sampler = nvml_sampler.Sampler(nvml.NVML(sys.argv[2]), interval=float(sys.argv[4]), duration=600)
sampler.start()
with open(sys.argv[3], "w") as handle:
    writer = nvml_sampler.JsonLinesWriter(handle)
    trailer = sampler.run(writer.emit, writer.flush)
sampler.close()
print(json.dumps(trailer))
"""


@pytest.mark.parametrize("signum,interval,ticks", [(signal.SIGTERM, 0.05, 3), (signal.SIGINT, 0.05, 3), (signal.SIGTERM, 300, 1)])
def test_signal_ends_the_run_with_a_trailer(libs, tmp_path, signum, interval, ticks):
    """One process sampling for 600 s is stopped by a signal: the file ends with the trailer, NVML is shut down.
    Between ticks the stop is at once, not at the next tick (300 s away in the last case)."""
    collections = [p for p in sys.path if os.path.isdir(os.path.join(p, "ansible_collections", "gpufleet"))][0]
    out = tmp_path / "samples.jsonl"
    log = tmp_path / "nvml.log"
    env = dict(os.environ, FAKE_NVML_DATA=H100_590, FAKE_NVML_LOG=str(log))
    proc = subprocess.Popen([sys.executable, "-c", SIGNAL_SCRIPT, collections, libs["full"], str(out), str(interval)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 20
    while time.time() < deadline:  # wait for three ticks on disk: the writer flushes every tick
        if out.exists() and out.read_text().count('"type":"sample"') >= ticks:
            break
        time.sleep(0.02)
    signalled = time.time()
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=20)
    assert time.time() - signalled < 10
    assert proc.returncode == 0, stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[0]["type"] == "header"
    assert lines[-1]["type"] == "end" and lines[-1]["reason"] == "signal"
    assert lines[-1]["samples"] == len(lines) - 2 >= ticks
    assert json.loads(stdout)["reason"] == "signal"
    assert log.read_text().split() == ["init", "shutdown"]


def test_writer_flushes_each_tick(libs, monkeypatch, tmp_path):
    monkeypatch.setenv("FAKE_NVML_DATA", H100_590)
    path = tmp_path / "s.jsonl"
    seen = []
    with open(path, "w") as handle:
        writer = nvml_sampler.JsonLinesWriter(handle)
        clock = FakeClock()
        sampler = Sampler(nvml.NVML(libs["full"]), interval=0.01, duration=0.02, clock=clock.time, monotonic=clock.time, sleep=clock.sleep)
        sampler.start()

        def flush():
            writer.flush()
            seen.append(len(path.read_text().splitlines()))

        sampler.run(writer.emit, flush, handle_signals=False)
        sampler.close()
    # after the header, after each of 3 ticks, after the trailer
    assert seen == [1, 2, 3, 4, 5]
