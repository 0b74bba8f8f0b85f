# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""TEST DOUBLE: a CPU stand-in for gpubench (roles/gpu_bench/files/gpubench.cu). It has no GPU and measures nothing.

It takes the real program's arguments (``-d 0,1 -n SIZE -t SECONDS -m HBM_MIB -g DTYPES -V``) and prints the real
program's line format, so that the benchmark task (playbooks/benchmark_tasks/gpu_compute.yml), the parser and the
checks can run on machines without a GPU. Its header says ``version=1.0+cpu.standin`` and its second line is a
``# gpubench-standin: TEST DOUBLE`` comment, so its output is never mistaken for a recording of a real machine.

Where the figures come from:

- the GPUs (index, name, bus id): ``nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader`` on PATH
  (a replayed node answers it from its recording), else ``GPUBENCH_STANDIN_GPUS`` (``NAME;NAME;...``), else one
  ``CPU stand-in`` GPU;
- the figures: the nominal ones below (round numbers, not any part's), each GPU's scaled by the knob
  ``GPUBENCH_STANDIN_SCALE`` (``INDEX:FACTOR,INDEX:FACTOR``, e.g. ``3:0.6`` makes GPU 3 run at 60 %) so a test
  can make one GPU slow;
- FP8 is "not supported on this part" for a name matching ``A100``/``V100``/``A10`` (compute capability < 8.9),
  as the real program says it.

Python 3.8+ standard library only: it runs on the simulated nodes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

VERSION = "1.0+cpu.standin"
NOMINAL_TFLOPS = {"bf16": 700.0, "fp16": 700.0, "fp8": 1400.0, "tf32": 350.0, "fp32": 50.0}
NOMINAL_GBS = {"copy": 3000.0, "triad": 3100.0}
DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32")
NO_FP8 = re.compile(r"\b(A100|A10|A30|A40|V100|T4)\b")
USAGE = "usage: %s [-d 0,1,...] [-n SIZE] [-t SECONDS] [-m HBM_MIB] [-g bf16,fp16,fp8,tf32,fp32] [-V]\n"


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
    names = [name.strip() for name in os.environ.get("GPUBENCH_STANDIN_GPUS", "").split(";") if name.strip()]
    names = names or ["CPU stand-in"]
    return [(index, name, "00000000:%02X:00.0" % (0x18 + index)) for index, name in enumerate(names)]


def scales() -> dict:
    out = {}
    for item in os.environ.get("GPUBENCH_STANDIN_SCALE", "").split(","):
        if ":" in item:
            index, factor = item.split(":", 1)
            out[int(index)] = float(factor)
    return out


def main(argv: list) -> int:
    options = {"-d": "", "-n": "8192", "-t": "3", "-m": "1024", "-g": ",".join(DTYPES)}
    args = list(argv[1:])
    while args:
        flag = args.pop(0)
        if flag == "-V":
            print("gpubench version=%s" % VERSION)
            return 0
        if flag not in options or not args:
            sys.stderr.write(USAGE % argv[0])
            return 2
        options[flag] = args.pop(0)
    try:
        size, seconds = int(options["-n"]), float(options["-t"])
    except ValueError:
        sys.stderr.write(USAGE % argv[0])
        return 2
    gpus = gpus_of_node()
    print("gpubench version=%s cuda=12.4 driver=unknown" % VERSION)
    print("# gpubench-standin: TEST DOUBLE on a CPU, the figures are nominal numbers, not measurements")
    if options["-d"]:
        wanted = [int(item) for item in options["-d"].split(",") if item.strip()]
        known = {gpu[0] for gpu in gpus}
        for index in wanted:
            if index not in known:
                print("error msg=device %d is not one of the %d visible GPUs" % (index, len(gpus)))
                print("end gpus=0")
                return 2
        gpus = [gpu for gpu in gpus if gpu[0] in wanted]
    factor_of = scales()
    # a sliver of the asked run time, so the NVML sampler beside it sees a run that lasts
    time.sleep(min(seconds, 5.0) / 10.0)
    for index, name, bus_id in gpus:
        print("gpu index=%d bus_id=%s cc=0.0 name=%s" % (index, bus_id, name))
    for index, name, _bus_id in gpus:
        factor = factor_of.get(index, 1.0)
        for dtype in [item for item in options["-g"].split(",") if item]:
            if dtype == "fp8" and NO_FP8.search(name):
                print("error index=%d test=fp8 msg=not supported on this part (compute capability 8.0 < 8.9)" % index)
                continue
            figure = NOMINAL_TFLOPS[dtype] * factor
            iters = max(1, int(seconds * figure * 1e12 / (2.0 * size ** 3)))
            print("gemm index=%d dtype=%s size=%d iters=%d seconds=%.3f tflops=%.1f"
                  % (index, dtype, size, iters, 2.0 * size ** 3 * iters / (figure * 1e12), figure))
        for test, nominal in NOMINAL_GBS.items():
            moved = (1 << 20) * int(options["-m"]) * (3 if test == "triad" else 2)
            figure = nominal * factor
            iters = max(1, int(seconds * figure * 1e9 / moved))
            print("hbm index=%d test=%s bytes=%d iters=%d seconds=%.3f gbs=%.1f"
                  % (index, test, moved, iters, moved * iters / (figure * 1e9), figure))
    print("end gpus=%d" % len(gpus))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
