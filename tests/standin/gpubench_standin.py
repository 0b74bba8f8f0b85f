# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TEST DOUBLE: a CPU stand-in for gpubench (roles/gpu_bench/files/gpubench.cu). It has no GPU and measures nothing.

It takes the real program's arguments (``-d 0,1 -n SIZE -t SECONDS -m HBM_MIB -g DTYPES -s SUSTAINED_SECONDS
-f FAST_ACCUM -V``) and prints the real program's line format, version 1.1 (gpufleet/parsers/gpubench.py), so that
the benchmark task (playbooks/benchmark_tasks/gpu_compute.yml), the parser and the checks can run on machines without
a GPU. Its header says ``version=1.1+cpu.standin`` and its second line is a ``# gpubench-standin: TEST DOUBLE``
comment, so its output is never mistaken for a recording of a real machine.

Where the figures come from:

- the GPUs (index, name, bus id): ``nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader`` on PATH
  (a replayed node answers it from its recording), else ``GPUBENCH_STANDIN_GPUS`` (``NAME;NAME;...``, each
  ``NAME@BUS_ID`` to give its bus id, else 00000000:18:00.0 and on), else one ``CPU stand-in`` GPU; bus ids in
  NVML's form (``00000000:18:00.0``), as the real 1.1 program prints them;
- the figures: the nominal ones below (round numbers, not any part's), each GPU's scaled by the knob
  ``GPUBENCH_STANDIN_SCALE`` (``INDEX:FACTOR,INDEX:FACTOR``, e.g. ``3:0.6`` makes GPU 3 run at 60 %) so a test
  can make one GPU slow;
- FP8 is "not supported on this part" for a name matching ``A100``/``V100``/``A10`` (compute capability < 8.9),
  as the real program says it; its records carry the ``-f`` mode (``fast_accum=``);
- ``-s SECONDS`` (> 0): a ``sustained`` record per GPU (bf16, the ``-n`` size, one window a second); its windows
  hold the GPU's figure unless the knob ``GPUBENCH_STANDIN_SAG`` (``INDEX:FRACTION``, e.g. ``1:0.2``) makes that
  GPU's last and lowest window FRACTION below its first;
- ``-m`` below 4 x the L2 cache (nominal 50 MiB, so ``-m`` < 200): copy and triad are errors, as the real program
  refuses an array the cache would hold;
- the knob ``GPUBENCH_STANDIN_HANG`` (``INDEX[,INDEX]``): that GPU "never finishes" its first test; as the real
  1.1 program does at its per-test deadline, the output has that GPU's ``gpu`` line, one ``error ... msg=timeout:``
  record for it and no other record of it, the other GPUs' records, and the ``end`` line.

The run sleeps a sliver of the asked time (so the NVML sampler beside it sees a run that lasts), never the time.
Python 3.8+ standard library only: it runs on the simulated nodes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

VERSION = "1.1+cpu.standin"
NOMINAL_TFLOPS = {"bf16": 700.0, "fp16": 700.0, "fp8": 1400.0, "tf32": 350.0, "fp32": 50.0}
NOMINAL_GBS = {"copy": 3000.0, "triad": 3100.0}
DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32")
NO_FP8 = re.compile(r"\b(A100|A10|A30|A40|V100|T4)\b")
SMS, L2_MIB = 132, 50
USAGE = ("usage: %s [-d 0,1,...] [-n SIZE] [-t SECONDS] [-m HBM_MIB] [-g bf16,fp16,fp8,tf32,fp32] "
         "[-s SUSTAINED_SECONDS] [-f 0|1] [-V]\n")
DEFAULTS = {"-d": "", "-n": "8192", "-t": "3", "-m": "1024", "-g": ",".join(DTYPES), "-s": "0", "-f": "0"}


def gpus_of_node() -> list:
    """[(index, name, bus_id)] of the (replayed) node."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            proc = subprocess.run([smi, "--query-gpu=index,name,pci.bus_id", "--format=csv,noheader"],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=30, check=False)
            rows = [line.split(",") for line in proc.stdout.decode("utf-8", "replace").splitlines() if line.strip()]
            found = [(int(row[0]), row[1].strip(), row[2].strip()) for row in rows
                     if len(row) == 3 and row[0].strip().isdigit()]
            if proc.returncode == 0 and found:
                return found
        except (OSError, subprocess.SubprocessError, ValueError):
            pass
    items = [item.strip() for item in os.environ.get("GPUBENCH_STANDIN_GPUS", "").split(";") if item.strip()]
    out = []
    for index, item in enumerate(items or ["CPU stand-in"]):
        # NAME@BUS gives the GPU the bus id of the (replayed) node's recording, so its NVML samples are its own
        name, at, bus_id = item.partition("@")
        out.append((index, name.strip(), bus_id.strip() if at else "00000000:%02X:00.0" % (0x18 + index)))
    return out


def factors(knob: str) -> dict:
    """``{index: float}`` of a knob written ``INDEX:VALUE,INDEX:VALUE``."""
    out = {}
    for item in os.environ.get(knob, "").split(","):
        if ":" in item:
            index, factor = item.split(":", 1)
            out[int(index)] = float(factor)
    return out


def hanging() -> set:
    return {int(item) for item in os.environ.get("GPUBENCH_STANDIN_HANG", "").split(",") if item.strip()}


def arguments(argv: list):
    """The options (DEFAULTS filled in), "-V" for the version, or None for a usage error."""
    options, args = dict(DEFAULTS), list(argv[1:])
    while args:
        flag = args.pop(0)
        if flag == "-V":
            return "-V"
        if flag not in options or not args:
            return None
        options[flag] = args.pop(0)
    try:
        int(options["-n"]), float(options["-t"]), int(options["-m"]), float(options["-s"])
    except ValueError:
        return None
    return options if options["-f"] in ("0", "1") else None


def gemm_line(index: int, dtype: str, options: dict, figure: float) -> str:
    size, seconds = int(options["-n"]), float(options["-t"])
    iters = max(1, int(seconds * figure * 1e12 / (2.0 * size ** 3)))
    accum = " fast_accum=%s" % options["-f"] if dtype == "fp8" else ""
    return ("gemm index=%d dtype=%s size=%d init=normal%s warmup_s=%.2f iters=%d seconds=%.3f tflops=%.1f"
            % (index, dtype, size, accum, warmup_s(options), iters, 2.0 * size ** 3 * iters / (figure * 1e12), figure))


def hbm_line(index: int, test: str, options: dict, figure: float) -> str:
    moved = (1 << 20) * int(options["-m"]) * (3 if test == "triad" else 2)
    iters = max(1, int(float(options["-t"]) * figure * 1e9 / moved))
    return ("hbm index=%d test=%s bytes=%d grid=%d threads=256 iters=%d seconds=%.3f gbs=%.1f"
            % (index, test, moved, SMS * 8, iters, moved * iters / (figure * 1e9), figure))


def sustained_line(index: int, options: dict, figure: float, sag: float) -> str:
    seconds = float(options["-s"])
    lowest = figure * (1.0 - sag)
    # a sag falls steadily from the first window to the last: the mean is halfway
    return ("sustained index=%d dtype=bf16 size=%s seconds=%.1f windows=%d tflops=%.1f first=%.1f last=%.1f min=%.1f"
            % (index, options["-n"], seconds, max(1, int(seconds)), (figure + lowest) / 2.0, figure, lowest, lowest))


def warmup_s(options: dict) -> float:
    return max(1.0, float(options["-t"]) / 2.0)  # the real program's warm-up: max(1 s, SECONDS / 2)


def timeout_line(index: int, test: str, options: dict) -> str:
    # the real program's deadline (gpubench_logic.h test_deadline_s): 4 x its budget, never under 10 s
    deadline = max(10.0, 4.0 * (warmup_s(options) + float(options["-t"])))
    return ("error index=%d test=%s msg=timeout: no result within the %.1f s deadline of this test; "
            "no further test on this GPU" % (index, test, deadline))


def gpu_lines(index: int, name: str, options: dict) -> list:
    """One GPU's records after its ``gpu`` line."""
    factor = factors("GPUBENCH_STANDIN_SCALE").get(index, 1.0)
    dtypes = [item for item in options["-g"].split(",") if item]
    if index in hanging():
        return [timeout_line(index, dtypes[0] if dtypes else "copy", options)]
    lines = []
    for dtype in dtypes:
        if dtype == "fp8" and NO_FP8.search(name):
            lines.append("error index=%d test=fp8 msg=not supported on this part (compute capability 8.0 < 8.9)"
                         % index)
        else:
            lines.append(gemm_line(index, dtype, options, NOMINAL_TFLOPS[dtype] * factor))
    for test, nominal in NOMINAL_GBS.items():
        if int(options["-m"]) < 4 * L2_MIB:
            lines.append("error index=%d test=%s msg=-m %s MiB is below 4 x the %d MiB L2 cache: the cache would "
                         "hold the arrays" % (index, test, options["-m"], L2_MIB))
        else:
            lines.append(hbm_line(index, test, options, nominal * factor))
    if float(options["-s"]) > 0:
        sag = factors("GPUBENCH_STANDIN_SAG").get(index, 0.0)
        lines.append(sustained_line(index, options, NOMINAL_TFLOPS["bf16"] * factor, sag))
    return lines


def chosen(gpus: list, device_list: str):
    """The GPUs of ``-d`` (all when empty), or the index that is not one of them."""
    if not device_list:
        return gpus, None
    wanted = [int(item) for item in device_list.split(",") if item.strip()]
    known = {gpu[0] for gpu in gpus}
    missing = [index for index in wanted if index not in known]
    return [gpu for gpu in gpus if gpu[0] in wanted], (missing[0] if missing else None)


def main(argv: list) -> int:
    options = arguments(argv)
    if options == "-V":
        print("gpubench version=%s" % VERSION)
        return 0
    if options is None:
        sys.stderr.write(USAGE % argv[0])
        return 2
    gpus = gpus_of_node()
    print("gpubench version=%s cuda=12.4 driver=unknown order=PCI_BUS_ID" % VERSION)
    print("# gpubench-standin: TEST DOUBLE on a CPU, the figures are nominal numbers, not measurements")
    visible = len(gpus)
    gpus, missing = chosen(gpus, options["-d"])
    if missing is not None:
        print("error msg=device %d is not one of the %d visible GPUs" % (missing, visible))
        print("end gpus=0")
        return 2
    # a sliver of the asked run time, so the NVML sampler beside it sees a run that lasts
    time.sleep(min(float(options["-t"]), 5.0) / 10.0)
    for index, name, bus_id in gpus:
        print("gpu index=%d bus_id=%s cc=0.0 sms=%d l2_mib=%d name=%s" % (index, bus_id, SMS, L2_MIB, name))
    # a hung GPU's timeout comes at its deadline, after the other GPUs' records (the real program streams them)
    for index, name, _bus_id in sorted(gpus, key=lambda gpu: gpu[0] in hanging()):
        for line in gpu_lines(index, name, options):
            print(line)
    print("end gpus=%d" % len(gpus))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
