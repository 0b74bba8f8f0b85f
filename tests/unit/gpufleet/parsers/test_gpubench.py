# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpubench's line format: the CPU test double's output and hand-written hostile and edge inputs.

No recording of the real program exists yet (it has not run on a GPU): every input here is the test double's output
or written by hand in the form the real program prints (version 1.1: NVML's bus id form ``00000000:18:00.0``, as
nvidia-smi prints it; version 1.0 printed CUDA's ``0000:18:00.0``), with the expected values written from the input.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from foreign_lines import insert_lines  # pylint: disable=import-error
from gpufleet.checks import compute
from gpufleet.checks.model import SKIP, NodeContext
from gpufleet.parsers.common import ParseError
from gpufleet.parsers.gpubench import parse_gpubench
from gpufleet.parsers.registry import parse
from gpufleet.results.bench import run_reason

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
STANDIN = os.path.join(REPO, "tests", "standin", "gpubench_standin.py")
H100 = "NVIDIA H100 80GB HBM3"

# version 1.1, the contract's example records: GPU 0 measured, GPU 3 an A100 (no FP8), GPU 5 timed out
VERSION_1_1 = """gpubench version=1.1 cuda=12.4 driver=550.54.15 order=PCI_BUS_ID
gpu index=0 bus_id=00000000:18:00.0 cc=9.0 sms=132 l2_mib=50 name=NVIDIA H100 80GB HBM3
gpu index=3 bus_id=00000000:5D:00.0 cc=8.0 sms=108 l2_mib=40 name=NVIDIA A100-SXM4-80GB
gemm index=0 dtype=bf16 size=8192 init=normal warmup_s=1.50 iters=120 seconds=3.012 tflops=712.3
gpu index=5 bus_id=00000000:AB:00.0 cc=9.0 sms=132 l2_mib=50 name=NVIDIA H100 80GB HBM3
gemm index=0 dtype=fp8 size=8192 init=normal fast_accum=0 warmup_s=1.50 iters=240 seconds=3.004 tflops=1402.6
error index=3 test=fp8 msg=not supported on this part (compute capability 8.0 < 8.9)
hbm index=0 test=copy bytes=4294967296 grid=1056 threads=256 iters=200 seconds=0.291 gbs=2950.1
gemm index=3 dtype=bf16 size=8192 init=normal warmup_s=1.50 iters=40 seconds=3.100 tflops=270.2
sustained index=0 dtype=bf16 size=8192 seconds=30.0 windows=30 tflops=705.2 first=712.0 last=698.1 min=695.3
error index=5 test=bf16 msg=timeout: no result within the 25.0 s deadline of this test; no further test on this GPU
end gpus=3
"""

# version 1.0 (old results): CUDA's bus id form, no order, sms, l2_mib, fast_accum or sustained
VERSION_1_0 = """gpubench version=1.0 cuda=12.4 driver=550.54.15
gpu index=0 bus_id=0000:18:00.0 cc=9.0 name=NVIDIA H100 80GB HBM3
gpu index=1 bus_id=0000:2A:00.0 cc=9.0 name=NVIDIA H100 80GB HBM3
gemm index=0 dtype=bf16 size=8192 iters=120 seconds=1.853 tflops=712.3
gemm index=0 dtype=fp8 size=8192 iters=240 seconds=1.900 tflops=1302.0
hbm index=0 test=copy bytes=2147483648 iters=200 seconds=0.291 gbs=2950.1
hbm index=0 test=triad bytes=3221225472 iters=200 seconds=0.214 gbs=3010.4
gemm index=1 dtype=bf16 size=8192 iters=60 seconds=1.853 tflops=356.0
error index=1 test=fp8 msg=cublasLtMatmul: cublasLt status 13
end gpus=2
"""


def gpu_dict(index, name, bus_id, cc, **keys):
    """A parsed GPU with every key; ``keys`` override the empty figures."""
    out = {"index": index, "name": name, "bus_id": bus_id, "cc": cc, "sms": None, "l2_mib": None,
           "gemm_tflops": {}, "fast_accum": {}, "hbm_gbs": {}, "sustained": None}
    out.update(keys)
    return out


def run_standin(*args: str, **env: str) -> str:
    environ = dict(os.environ, PATH="/nonexistent", **env)
    proc = subprocess.run([sys.executable, STANDIN, *args], capture_output=True, text=True, env=environ, check=True)
    return proc.stdout


def test_version_1_1_written_by_hand_interleaved_with_a_timeout():
    parsed = parse_gpubench(VERSION_1_1)
    assert (parsed["tool"], parsed["version"], parsed["cuda"], parsed["driver"], parsed["order"]) == (
        "gpubench", "1.1", "12.4", "550.54.15", "PCI_BUS_ID")
    sustained = {"dtype": "bf16", "tflops": 705.2, "first": 712.0, "last": 698.1, "min": 695.3, "seconds": 30.0,
                 "windows": 30}
    assert parsed["gpus"] == [
        gpu_dict(0, H100, "00000000:18:00.0", "9.0", sms=132, l2_mib=50.0,
                 gemm_tflops={"bf16": 712.3, "fp8": 1402.6}, fast_accum={"fp8": 0}, hbm_gbs={"copy": 2950.1},
                 sustained=sustained),
        gpu_dict(3, "NVIDIA A100-SXM4-80GB", "00000000:5D:00.0", "8.0", sms=108, l2_mib=40.0,
                 gemm_tflops={"bf16": 270.2}),
        gpu_dict(5, H100, "00000000:AB:00.0", "9.0", sms=132, l2_mib=50.0),
    ]
    # the timed-out GPU is named, the others' figures stay, and a GPU's error is no cause of the whole run
    assert parsed["errors"] == [
        "gpu 3 fp8: not supported on this part (compute capability 8.0 < 8.9)",
        "gpu 5 bf16: timeout: no result within the 25.0 s deadline of this test; no further test on this GPU",
    ]
    assert "cause" not in parsed
    assert parse("gpubench", VERSION_1_1) == parsed


def test_version_1_0_output_still_reads():
    parsed = parse_gpubench(VERSION_1_0)
    assert (parsed["version"], parsed["cuda"], parsed["driver"], parsed["order"]) == (
        "1.0", "12.4", "550.54.15", None)
    assert parsed["gpus"] == [
        gpu_dict(0, H100, "0000:18:00.0", "9.0", gemm_tflops={"bf16": 712.3, "fp8": 1302.0},
                 hbm_gbs={"copy": 2950.1, "triad": 3010.4}),
        gpu_dict(1, H100, "0000:2A:00.0", "9.0", gemm_tflops={"bf16": 356.0}),
    ]
    assert parsed["errors"] == ["gpu 1 fp8: cublasLtMatmul: cublasLt status 13"]


def test_standin_output_one_slow_gpu():
    text = run_standin("-t", "0.01", GPUBENCH_STANDIN_GPUS="NVIDIA H100 80GB HBM3;NVIDIA H100 80GB HBM3",
                       GPUBENCH_STANDIN_SCALE="1:0.5")
    parsed = parse_gpubench(text)
    assert (parsed["version"], parsed["order"]) == ("1.1+cpu.standin", "PCI_BUS_ID")
    assert "# gpubench-standin: TEST DOUBLE" in text
    assert [gpu["name"] for gpu in parsed["gpus"]] == ["NVIDIA H100 80GB HBM3"] * 2
    # NVML's bus id form, as the real 1.1 program prints it
    assert [gpu["bus_id"] for gpu in parsed["gpus"]] == ["00000000:18:00.0", "00000000:19:00.0"]
    assert parsed["gpus"][0]["gemm_tflops"] == {"bf16": 700.0, "fp16": 700.0, "fp8": 1400.0, "tf32": 350.0,
                                                "fp32": 50.0}
    assert parsed["gpus"][0]["fast_accum"] == {"fp8": 0}  # -f left at 0
    assert parsed["gpus"][1]["gemm_tflops"] == {"bf16": 350.0, "fp16": 350.0, "fp8": 700.0, "tf32": 175.0,
                                                "fp32": 25.0}
    assert parsed["gpus"][1]["hbm_gbs"] == {"copy": 1500.0, "triad": 1550.0}
    assert [gpu["sustained"] for gpu in parsed["gpus"]] == [None, None]  # no -s: no sustained phase
    assert parsed["errors"] == []


def test_standin_a100_has_no_fp8_and_takes_the_device_list():
    text = run_standin("-t", "0.01", "-d", "1", "-g", "bf16,fp8",
                       GPUBENCH_STANDIN_GPUS="NVIDIA A100-SXM4-80GB;NVIDIA A100-SXM4-80GB")
    parsed = parse_gpubench(text)
    assert [gpu["index"] for gpu in parsed["gpus"]] == [1]
    assert parsed["gpus"][0]["gemm_tflops"] == {"bf16": 700.0}
    assert parsed["errors"] == ["gpu 1 fp8: not supported on this part (compute capability 8.0 < 8.9)"]


def test_standin_sustained_phase_fast_accumulation_and_a_sagging_gpu():
    text = run_standin("-t", "0.01", "-g", "bf16,fp8", "-s", "10", "-f", "1",
                       GPUBENCH_STANDIN_GPUS=";".join([H100] * 2), GPUBENCH_STANDIN_SAG="1:0.2")
    gpus = parse_gpubench(text)["gpus"]
    assert [gpu["fast_accum"] for gpu in gpus] == [{"fp8": 1}, {"fp8": 1}]
    assert gpus[0]["sustained"] == {"dtype": "bf16", "tflops": 700.0, "first": 700.0, "last": 700.0, "min": 700.0,
                                    "seconds": 10.0, "windows": 10}
    # GPU 1 falls 20 % from its first window (700) to its last and lowest (560): mean halfway, 630
    assert gpus[1]["sustained"] == {"dtype": "bf16", "tflops": 630.0, "first": 700.0, "last": 560.0, "min": 560.0,
                                    "seconds": 10.0, "windows": 10}


def test_standin_hbm_arrays_under_four_times_the_l2_cache_are_refused():
    parsed = parse_gpubench(run_standin("-t", "0.01", "-g", "bf16", "-m", "100"))
    assert parsed["gpus"][0]["l2_mib"] == 50.0 and parsed["gpus"][0]["hbm_gbs"] == {}
    assert [error.split(":")[0] for error in parsed["errors"]] == ["gpu 0 copy", "gpu 0 triad"]


def test_standin_hung_gpu_is_named_and_the_others_figures_survive_parser_and_checks():
    text = run_standin("-t", "0.01", GPUBENCH_STANDIN_GPUS=";".join([H100] * 3), GPUBENCH_STANDIN_HANG="1")
    parsed = parse_gpubench(text)
    # the hung GPU keeps its gpu line (end counts it) and nothing else; the others have all their figures
    assert text.rstrip().endswith("end gpus=3")
    assert [(gpu["index"], len(gpu["gemm_tflops"]), len(gpu["hbm_gbs"])) for gpu in parsed["gpus"]] == [
        (0, 5, 2), (1, 0, 0), (2, 5, 2)]
    timeout = ("gpu 1 bf16: timeout: no result within the 10.0 s deadline of this test; "  # 4 x 1.01 s, at least 10
               "no further test on this GPU")
    assert parsed["errors"] == [timeout]
    record = {"name": "gpubench", "kind": "gpu_compute", "hosts": ["w1"], "outcome": "ok", "parsed": parsed}
    items = compute.check_gpu_compute(NodeContext("w1", facts={}, settings={"benchmarks": [record]}))
    # the stand-in's nominal figures are above the H100 SXM floors (700 of 989.4 bf16 is 71 %): GPUs 0 and 2 pass
    # their floors; GPU 1 is not verified, naming the timeout and every figure it cost
    assert [(item["status"], item["message"]) for item in items] == [
        (SKIP, "not verified: GPU1: not measured: bf16, fp16, fp8, tf32, fp32, HBM (gpubench: %s)" % timeout)]


def test_standin_bad_argument_exits_2_with_usage():
    proc = subprocess.run([sys.executable, STANDIN, "-x"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.startswith("usage:")


def test_cut_off_run_keeps_its_figures_and_says_so():
    parsed = parse_gpubench("gpubench version=1.0 cuda=unknown driver=unknown\n"
                            "gpu index=0 bus_id= cc=9.0 name=NVIDIA H200\n"
                            "gemm index=0 dtype=fp32 size=4096 iters=10 seconds=1.0 tflops=0\n")
    assert (parsed["cuda"], parsed["driver"]) == (None, None)
    assert parsed["gpus"][0]["bus_id"] is None
    assert parsed["gpus"][0]["gemm_tflops"] == {"fp32": 0.0}
    assert parsed["errors"] == ["output ends before the end line: the run did not finish"]


def test_crlf_comments_blank_lines_and_global_errors():
    text = ("# a comment\r\n\r\ngpubench version=1.0\r\n"
            "error msg=no CUDA device: no CUDA-capable device is detected\r\nend gpus=0\r\n")
    parsed = parse_gpubench(text)
    assert parsed["gpus"] == []
    assert parsed["errors"] == ["no CUDA device: no CUDA-capable device is detected"]
    # the whole run's error is why it failed: the benchmark record's reason leads with it
    assert parsed["cause"] == "no CUDA device: no CUDA-capable device is detected"


def test_a_gpu_error_is_no_cause_of_the_run():
    parsed = parse_gpubench("gpubench version=1.0\ngpu index=0 name=NVIDIA A100-SXM4-80GB\n"
                            "error index=0 test=fp8 msg=not supported on this part\nend gpus=1\n")
    assert parsed["errors"] == ["gpu 0 fp8: not supported on this part"] and "cause" not in parsed


def test_the_record_of_a_failed_run_gives_the_cause():
    # what gpubench printed on this GPU-less machine (built from roles/gpu_bench/files/gpubench.cu with nvcc),
    # exit status 1: the node words the failure from the output's last line
    parsed = parse_gpubench("gpubench version=1.0 cuda=13.0 driver=unknown\n"
                            "error msg=no CUDA device: CUDA driver version is insufficient for CUDA runtime version\n"
                            "end gpus=0\n")
    assert run_reason("failed", "exit status 1: end gpus=0", parsed) == (
        "no CUDA device: CUDA driver version is insufficient for CUDA runtime version (exit status 1)")


@pytest.mark.parametrize("text, line, words", [
    ("gpu index=0 name=X\n", 1, "first record must be"),
    ("gpubench version=1.0\nbanana index=0\n", 2, "unknown record"),
    ("gpubench version=1.0\ngpu index=0 bogus name=X\n", 2, "expected key=value"),
    ("gpubench version=1.0\ngpu index=0 bus_id=1 bus_id=2 name=X\n", 2, "given twice"),
    ("gpubench\n", 1, "missing field version"),
    ("gpubench version=1.0\ngpu index=zero name=X\n", 2, "index must be"),
    ("gpubench version=1.0\ngpu index=0\n", 2, "missing field name"),
    ("gpubench version=1.0\ngpu index=0 name=A\ngpu index=0 name=B\n", 3, "declared twice"),
    ("gpubench version=1.0\ngemm index=0 dtype=bf16 tflops=1\n", 2, "before its gpu line"),
    ("gpubench version=1.0\ngpu index=0 name=A\ngemm index=0 dtype=int8 tflops=1\n", 3, "unknown dtype"),
    ("gpubench version=1.0\ngpu index=0 name=A\nhbm index=0 test=scale gbs=1\n", 3, "unknown test"),
    ("gpubench version=1.0\ngpu index=0 name=A\ngemm index=0 dtype=bf16 tflops=nan\n", 3, "finite number"),
    ("gpubench version=1.0\ngpu index=0 name=A\ngemm index=0 dtype=bf16 tflops=-5\n", 3, "finite number"),
    ("gpubench version=1.0\ngpu index=0 name=A\ngemm index=0 dtype=bf16 tflops=fast\n", 3, "must be a number"),
    ("gpubench version=1.0\ngpu index=0 name=A\ngemm index=0 dtype=bf16\n", 3, "missing field tflops"),
    ("gpubench version=1.0\ngpu index=0 name=A\nhbm index=0 test=copy gbs=1\nhbm index=0 test=copy gbs=2\n", 4,
     "given twice"),
    ("gpubench version=1.0\ngpu index=0 name=A\nend gpus=2\n", 3, "end says 2 GPUs"),
    ("gpubench version=1.0\nend gpus=0\ngpu index=0 name=A\n", 3, "after the end line"),
    ("gpubench version=1.1\ngpu index=0 name=A\ngemm index=0 dtype=fp8 fast_accum=2 tflops=1\n", 3, "0 or 1"),
    ("gpubench version=1.1\ngpu index=0 name=A\ngemm index=0 dtype=bf16 fast_accum=1 tflops=1\n", 3,
     "only for fp8"),
    ("gpubench version=1.1\ngpu index=0 sms=many name=A\n", 2, "sms must be a whole number"),
    ("gpubench version=1.1\nsustained index=0 dtype=bf16 tflops=1 first=1 last=1 min=1 seconds=1\n", 2,
     "before its gpu line"),
    ("gpubench version=1.1\ngpu index=0 name=A\nsustained index=0 dtype=bf16 tflops=1 first=1 last=1 seconds=1\n",
     3, "missing field min"),
    ("gpubench version=1.1\ngpu index=0 name=A\nsustained index=0 dtype=int8 tflops=1 first=1 last=1 min=1 "
     "seconds=1\n", 3, "unknown dtype"),
    ("gpubench version=1.1\ngpu index=0 name=A\n" + "sustained index=0 dtype=bf16 tflops=1 first=1 last=1 min=1 "
     "seconds=1\n" * 2, 4, "sustained given twice"),
    ("gpubench version=1.0\ngpubench version=1.0\n", 2, "second gpubench header"),
])
def test_hostile_input_names_its_line(text, line, words):
    with pytest.raises(ParseError) as caught:
        parse_gpubench(text)
    assert caught.value.line == line
    assert words in caught.value.message


@pytest.mark.parametrize("text", ["", "  \n\n", "# only a comment\n"])
def test_no_output_is_an_error(text):
    with pytest.raises(ParseError) as caught:
        parse_gpubench(text)
    assert caught.value.line is None


def test_foreign_lines_are_listed_and_change_no_value():
    # EDITED: the contract's records (no recording of the program on a GPU is in the repository) behind a prompt,
    # with a note after the A100's FP8 error, a rule and a prompt after the end line
    edited = insert_lines(VERSION_1_1, {
        1: "(venv) ubuntu@node-07:~$ /opt/gpufleet/gpubench-1.1/bin/gpubench -t 3",
        9: "<-- the A100 has no FP8",
        15: "-----",
        16: "root@node-07:~# echo $?",
    })
    parsed = parse_gpubench(edited)
    assert parsed.pop("ignored_lines") == [
        {"line": 1, "text": "(venv) ubuntu@node-07:~$ /opt/gpufleet/gpubench-1.1/bin/gpubench -t 3",
         "why": "shell prompt"},
        {"line": 9, "text": "<-- the A100 has no FP8", "why": "note"},
        {"line": 15, "text": "-----", "why": "separator"},
        {"line": 16, "text": "root@node-07:~# echo $?", "why": "shell prompt"},
    ]
    assert parsed == parse_gpubench(VERSION_1_1)
    assert parsed["gpus"][0]["gemm_tflops"] == {"bf16": 712.3, "fp8": 1402.6}
    assert parsed["gpus"][0]["hbm_gbs"] == {"copy": 2950.1}


def test_damage_beside_foreign_lines_is_still_refused_at_its_line():
    # EDITED: a prompt first, and the hbm record (line 8, 9 with the prompt) cut after "grid"
    cut = VERSION_1_1.replace("grid=1056 threads=256 iters=200 seconds=0.291 gbs=2950.1", "grid")
    with pytest.raises(ParseError) as info:
        parse_gpubench(insert_lines(cut, {1: "$ gpubench -t 3"}))
    assert info.value.line == 9 and "expected key=value" in str(info.value)
    # EDITED: a line no rule names foreign after the end line is still refused (line 13)
    with pytest.raises(ParseError) as info:
        parse_gpubench(insert_lines(VERSION_1_1, {13: "done"}))
    assert info.value.line == 13 and "after the end line" in str(info.value)
