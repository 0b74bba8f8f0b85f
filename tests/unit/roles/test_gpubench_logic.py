# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpubench's GPU-free logic (roles/gpu_bench/files/gpubench_logic.h), checked with a plain C++17 compiler.

gpubench_logic_test.cpp (beside this file) runs one function of the header on its arguments and prints the result;
the expected values here are worked out by hand. Each defect of gpubench 1.0 that needs no GPU to show has a case
that 1.0 fails: the bus id in CUDA's form instead of NVML's, a grid sized for 2048 threads per SM, -m below 4 x L2
measured as HBM, three launches of warm-up. The driver is built with -Wall -Wextra -Werror; no C++ compiler: skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
HEADER_DIR = os.path.join(REPO, "roles", "gpu_bench", "files")
DRIVER = os.path.join(HERE, "gpubench_logic_test.cpp")

H100_L2 = 50 * 2**20  # bytes
A100_L2 = 40 * 2**20


@pytest.fixture(name="logic", scope="module")
def logic_fixture(tmp_path_factory):
    """run(command, *args) -> the driver's stdout, stripped."""
    compiler = shutil.which("g++") or shutil.which("c++")
    if not compiler:
        pytest.skip("no C++ compiler: neither g++ nor c++ is on PATH")
    binary = str(tmp_path_factory.mktemp("gpubench_logic") / "gpubench_logic_test")
    proc = subprocess.run([compiler, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-pthread", "-I" + HEADER_DIR,
                           "-o", binary, DRIVER], capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]

    def run(command, *args):
        done = subprocess.run([binary, command] + [str(arg) for arg in args], capture_output=True, text=True,
                              check=False, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    return run


def fields(line):
    """'a=1 b=2' -> {'a': '1', 'b': '2'}; msg= takes the rest of the line."""
    out = {}
    rest = line
    while rest:
        key, _equals, rest = rest.partition("=")
        if key == "msg":
            out[key] = rest
            break
        value, _space, rest = rest.partition(" ")
        out[key] = value
    return out


# ---- 4: the bus id in NVML's form ----------------------------------------------------------------------------------

@pytest.mark.parametrize("cuda, nvml", [
    ("0000:18:00.0", "00000000:18:00.0"),  # 1.0 printed CUDA's form as it came
    ("0000:3b:00.0", "00000000:3B:00.0"),  # nvidia-smi's capitals
    ("0000:3B:00.0", "00000000:3B:00.0"),
    ("0001:c1:1f.7", "00000001:C1:1F.7"),
    ("10000:01:00.0", "00010000:01:00.0"),  # a VMD domain has 5 digits
])
def test_bus_id_is_nvidia_smis_form(logic, cuda, nvml):
    assert logic("bus", cuda) == nvml


@pytest.mark.parametrize("bad", ["18:00.0", "0000:18:00", "0x00:18:00.0", "0000:18:00.0x", "0000:118:00.0",
                                 "000000000:18:00.0", "0000: 18:00.0", "nonsense"])
def test_bus_id_that_is_not_one_gives_nothing(logic, bad):
    assert logic("bus", bad) == ""


# ---- 6: HBM grid, unrolled loop, L2 rule ------------------------------------------------------------------------

@pytest.mark.parametrize("blocks_per_sm, sms, grid", [
    (6, 84, 504),     # sm_86 (RTX A6000): 1536 threads per SM, 6 blocks of 256; 1.0 launched 8 per SM (672)
    (6, 58, 348),     # sm_89 (L40S)
    (8, 132, 1056),   # sm_90 (H100 SXM): 2048 threads per SM
    (8, 108, 864),    # sm_80 (A100)
    (0, 132, 0),      # nothing fits: gpubench says so instead of launching
    (8, 0, 0),
])
def test_hbm_grid_is_one_wave_of_resident_blocks(logic, blocks_per_sm, sms, grid):
    assert logic("grid", blocks_per_sm, sms) == str(grid)


@pytest.mark.parametrize("count, stride, end", [
    (1000, 7, 980),           # 980 = 35 x (4 x 7); 20 left for the remainder loop
    (5, 64, 0),               # fewer elements than threads: all in the remainder loop
    (4096, 256, 4096),        # a whole number of unrolled steps: no remainder
    (4097, 256, 4096),
    (100003, 1056, 97152),    # H100's grid x 1 thread: 23 steps of 4224
])
def test_hbm_unrolled_and_remainder_loops_cover_each_element_once(logic, count, stride, end):
    assert logic("cover", count, stride) == "end=%d wrong=0" % end


def test_hbm_refuses_arrays_that_fit_in_l2(logic):
    # 1.0 took -m 16 down to 16 MiB and reported L2 bandwidth as HBM's
    result = fields(logic("l2", 16, H100_L2))
    assert (result["min"], result["ok"]) == ("200", "0")
    assert result["msg"] == ("-m 16 MiB arrays would be served from the 50 MiB L2, not HBM: -m must be at least 200 "
                             "(4 x L2) on this part")


@pytest.mark.parametrize("hbm_mib, l2_bytes, minimum, accepted", [
    (199, H100_L2, 200, "0"),
    (200, H100_L2, 200, "1"),
    (1024, H100_L2, 200, "1"),
    (159, A100_L2, 160, "0"),
    (160, A100_L2, 160, "1"),
    (506, 126 * 2**20 + 2**19, 506, "1"),  # 126.5 MiB (B200): 506 MiB exactly
    (6, 1536 * 1024, 6, "1"),              # 1.5 MiB: rounded up to whole MiB
    (5, 1536 * 1024, 6, "0"),
])
def test_hbm_minimum_is_four_times_l2(logic, hbm_mib, l2_bytes, minimum, accepted):
    result = fields(logic("l2", hbm_mib, l2_bytes))
    assert (result["min"], result["ok"]) == (str(minimum), accepted)
    assert (result["msg"] == "") == (accepted == "1")


# ---- 2: warm-up for a time, calibration, deadline --------------------------------------------------------------

@pytest.mark.parametrize("timed, warmup", [(3, "1.50"), (1, "1.00"), (0.5, "1.00"), (2, "1.00"), (10, "5.00")])
def test_warmup_is_a_time_of_at_least_one_second(logic, timed, warmup):
    assert logic("warmup", timed) == warmup


@pytest.mark.parametrize("per_iter, target, iters", [
    (0.025, 3, 120),       # 8192 bf16 on H100: 25 ms a launch
    (0.0015, 3, 2000),
    (0.0007, 0.25, 357),   # a calibration batch: floor, never more than the target
    (10, 3, 1),            # one launch longer than the window: still one
    (1e-9, 3, 1000000),    # bounded above: a near-zero measure cannot ask for a billion launches
    (0, 3, 0),             # nothing measured: no figure can be sized from it
    (-1, 3, 0),
    ("nan", 3, 0),
    ("inf", 3, 0),
])
def test_calibration_sizes_the_window_within_bounds(logic, per_iter, target, iters):
    assert logic("calibrate", per_iter, target) == str(iters)


@pytest.mark.parametrize("warmup, calibration, timed, deadline", [
    (1.5, 0.25, 3, "19.0"),    # -t 3: 4 x 4.75 s
    (1.0, 0.25, 1, "10.0"),    # -t 1 (the health check): 9 s, raised to the 10 s floor
    (5.0, 0.25, 10, "61.0"),
    (0, 0.25, 30, "121.0"),    # -s 30: the sustained phase
])
def test_test_deadline_is_its_budget_times_four_at_least_ten_seconds(logic, warmup, calibration, timed, deadline):
    assert logic("deadline", warmup, calibration, timed) == deadline


def test_tflops_counts_two_flops_per_multiply_add(logic):
    # 2 x 8192^3 x 120 / 3.012 s = 43.8 TFLOP/s
    assert logic("tflops", 8192, 120, 3.012) == "43.8"
    assert logic("tflops", 4096, 1000, 1) == "137.4"


# ---- 1: normally distributed GEMM inputs ----------------------------------------------------------------------

def test_gemm_inputs_are_standard_normal_and_fit_fp8(logic):
    result = {key: float(value) for key, value in fields(logic("normal", 1, 1000000)).items()}
    assert abs(result["mean"]) < 0.005  # standard error 0.001
    assert abs(result["std"] - 1) < 0.005
    # Box-Muller on 24-bit uniforms: |value| <= sqrt(2 ln 2^24) = 5.77, far below FP8 E4M3's largest, 448
    assert 4.5 < result["maxabs"] <= 5.77


def test_gemm_inputs_differ_between_a_and_b(logic):
    first_a = fields(logic("normal", 1, 1000))["first"]
    first_b = fields(logic("normal", 2, 1000))["first"]
    assert first_a != first_b
    assert logic("normal", 1, 1000) == logic("normal", 1, 1000)  # counter-based: the same on every run and GPU


# ---- 8: the sustained summary and the barrier ------------------------------------------------------------------

def test_sustained_summary_is_mean_first_last_and_min(logic):
    assert logic("summary", 712, 700, 698.1, 695.3, 699) == "mean=700.88 first=712.00 last=699.00 min=695.30"
    assert logic("summary", 700) == "mean=700.00 first=700.00 last=700.00 min=700.00"
    assert logic("summary") == "mean=0.00 first=0.00 last=0.00 min=0.00"


@pytest.mark.parametrize("members, leaver, rounds, passed", [
    (4, 2, 5, 16),   # the leaver passes 1 barrier, the 3 others all 5
    (3, 0, 3, 7),    # the first thread stops at once
    (8, 7, 50, 351),
    (1, 0, 4, 1),    # alone, and it leaves after its first test
    (2, 5, 3, 6),    # nobody leaves early (slot 5 does not exist)
])
def test_barrier_does_not_wait_for_a_gpu_that_left(logic, members, leaver, rounds, passed):
    # a deadlock never prints: the driver's 30 s timeout fails the test
    assert logic("barrier", members, leaver, rounds) == "passed=%d" % passed


@pytest.mark.parametrize("args, plan", [
    ([], "bf16,fp16,fp8,tf32,fp32,copy,triad"),
    (["-s", "30"], "bf16,fp16,fp8,tf32,fp32,copy,triad,sustained"),
    (["-s", "0", "-g", "fp8,bf16"], "fp8,bf16,copy,triad"),
])
def test_every_gpu_runs_the_same_tests(logic, args, plan):
    assert logic("plan", *args) == plan


# ---- arguments ---------------------------------------------------------------------------------------------------

def test_defaults(logic):
    assert fields(logic("parse")) == {
        "devices": "", "size": "8192", "seconds": "3", "hbm_mib": "1024", "dtypes": "bf16,fp16,fp8,tf32,fp32",
        "sustained": "0", "fast_accum": "0", "version": "0"}


def test_every_option(logic):
    line = logic("parse", "-d", "0,3", "-n", "4096", "-t", "1.5", "-m", "2048", "-g", "fp8,bf16", "-s", "30",
                 "-f", "1", "-V")
    assert fields(line) == {
        "devices": "0,3", "size": "4096", "seconds": "1.5", "hbm_mib": "2048", "dtypes": "fp8,bf16",
        "sustained": "30", "fast_accum": "1", "version": "1"}


@pytest.mark.parametrize("args, error", [
    (["-n", "100"], "-n 100: SIZE must be a multiple of 16 from 256 to 32768"),
    (["-n", "8200"], "-n 8200: SIZE must be a multiple of 16 from 256 to 32768"),
    (["-n", "65536"], "-n 65536: SIZE must be a multiple of 16 from 256 to 32768"),
    (["-n", "8k"], "-n 8k: SIZE must be a multiple of 16 from 256 to 32768"),
    (["-t", "0"], "-t 0: SECONDS must be a number above 0, at most 3600"),
    (["-t", "-3"], "-t -3: SECONDS must be a number above 0, at most 3600"),
    (["-t", "3s"], "-t 3s: SECONDS must be a number above 0, at most 3600"),
    (["-m", "0"], "-m 0: HBM_MIB must be a whole number of MiB from 1 to 1048576"),
    (["-m", "1.5"], "-m 1.5: HBM_MIB must be a whole number of MiB from 1 to 1048576"),
    (["-g", "bf16,int8"], "-g bf16,int8: int8 is not one of bf16,fp16,fp8,tf32,fp32"),
    (["-g", "bf16,bf16"], "-g bf16,bf16: bf16 is listed twice"),
    (["-g", ","], "-g ,: a comma list of bf16,fp16,fp8,tf32,fp32"),
    (["-g", ""], "-g : no precision"),
    (["-d", "0,0"], "-d 0,0: GPU 0 is listed twice"),
    (["-d", "0,,1"], "-d 0,,1: a comma list of GPU indices"),
    (["-d", "-1"], "-d -1: a comma list of GPU indices"),
    (["-s", "-1"], "-s -1: SUSTAINED_SECONDS must be a whole number from 0 (off) to 86400"),
    (["-s", "1.5"], "-s 1.5: SUSTAINED_SECONDS must be a whole number from 0 (off) to 86400"),
    (["-f", "2"], "-f 2: FAST_ACCUM must be 0 (precise) or 1 (fast)"),
    (["-x", "1"], "unknown option -x"),
    (["-t"], "option -t needs a value"),
    (["8192"], "unknown option 8192"),
])
def test_bad_arguments_are_refused_with_a_reason(logic, args, error):
    assert logic("parse", *args) == "error=" + error


def test_small_hbm_size_is_left_to_the_l2_rule(logic):
    # -m 16 is a valid number: whether it measures HBM depends on the GPU's L2, judged per GPU (error record)
    assert fields(logic("parse", "-m", "16"))["hbm_mib"] == "16"
