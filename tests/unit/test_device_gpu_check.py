# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""tests/device/gpu_check.sh (the check for the day a GPU machine is lent) on a fake PATH, bounded, offline.

TEST DOUBLES on PATH: ``nvidia-smi`` answers the queries the script makes from real captures of other machines
(tests/fixtures: ``topo -m`` and ``-q`` of a 1-GPU H100 80GB HBM3 node, ``-q -x`` of an A100-SXM4-80GB node, whose
content the script only saves) and the ``--query-gpu`` CSV in nvidia-smi's format; ``nvcc`` logs its argv, checks that
the sources and headers it was given are there and writes, as the binary, a wrapper that runs the CPU stand-in
tests/standin/gpubench_standin.py; CUDA_HOME is a directory with ``cublasLt.h`` and ``libcublasLt.so.13`` (empty
files: the fake nvcc links nothing). NVML is the fake libnvidia-ml.so of tests/fakenvml (an H100 recording). What is
checked: the files the script writes, the flags it built with (the role's), the percentage lines against
gpufleet/profiles/gpu_peaks.yml, the sampler's records, SOURCES.md, and that it ends well inside its bound.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import yaml

from gpufleet.checks.compute import published_peak

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "tests", "device", "gpu_check.sh")
FIXTURES = os.path.join(REPO, "tests", "fixtures")
sys.path.insert(0, os.path.join(REPO, "tests", "fakenvml"))

import fakenvml  # noqa: E402  pylint: disable=import-error,wrong-import-position

GPU = "NVIDIA H100 80GB HBM3"
NVIDIA_SMI = '''\
#!{python}
# TEST DOUBLE of nvidia-smi (tests/unit/test_device_gpu_check.py): real captures of other machines, and the CSV
import sys
args = sys.argv[1:]
def show(path):
    sys.stdout.write(open(path).read())
if args == ["-q", "-x"]:
    show({xml!r})
elif args == ["-q"]:
    show({text!r})
elif args == ["topo", "-m"]:
    show({topo!r})
elif args and args[0].startswith("--query-gpu="):
    fields = args[0].split("=", 1)[1].split(",")
    values = {{"index": "0", "name": "{gpu}", "pci.bus_id": "00000000:18:00.0", "memory.total": "81559 MiB",
              "clocks.max.sm": "1980 MHz", "power.limit": "700.00 W", "compute_cap": "9.0",
              "driver_version": "590.48.01"}}
    units = {{"memory.total": " [MiB]", "clocks.max.sm": " [MHz]", "power.limit": " [W]"}}
    if "noheader" not in args[1]:
        print(", ".join(field + units.get(field, "") for field in fields))
    print(", ".join(values.get(field, "[N/A]") for field in fields))
else:
    sys.exit("nvidia-smi TEST DOUBLE: no answer for %s" % args)
'''
NVCC = '''\
#!/bin/sh
# TEST DOUBLE of nvcc (tests/unit/test_device_gpu_check.py): logs its argv, checks the sources, writes a wrapper of
# the CPU stand-in as the binary
if [ "$1" = --version ]; then
    printf 'nvcc: NVIDIA (R) Cuda compiler driver\\nCuda compilation tools, release 13.0, V13.0.88\\n'
    exit 0
fi
printf '%s\\n' "$@" > {log}
out= src=
while [ $# -gt 0 ]; do
    case "$1" in -o) out=$2; shift ;; *.cu) src=$1 ;; esac
    shift
done
for name in $(sed -n 's/^#include "\\(.*\\)"$/\\1/p' "$src"); do
    [ -f "$(dirname "$src")/$name" ] || {{ echo "fatal error: $name: No such file or directory" >&2; exit 1; }}
done
printf '#!/bin/sh\\nexec {python} {standin} "$@"\\n' > "$out"
chmod 0755 "$out"
'''


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, mode)


def test_gpu_check_writes_the_evidence_and_the_percentages(tmp_path, tmp_path_factory):
    fake = tmp_path / "bin"
    write(str(fake / "nvidia-smi"), NVIDIA_SMI.format(
        python=sys.executable, gpu=GPU,
        xml=os.path.join(FIXTURES, "smi", "telegraf-nvidia-smi-q-x-a100-sxm4-80gb-mig-535-v12.xml.txt"),
        text=os.path.join(FIXTURES, "smi", "exporter-capture-nvidia-smi-q-text-1x-h100-590-fabric-completed-under-load.txt"),
        topo=os.path.join(FIXTURES, "topo", "exporter-capture-1gpu-h100-80gb-hbm3-590-ansi-header.txt")), 0o755)
    log = tmp_path / "nvcc-argv.txt"
    write(str(fake / "nvcc"), NVCC.format(log=log, python=sys.executable,
                                          standin=os.path.join(REPO, "tests", "standin", "gpubench_standin.py")), 0o755)
    cuda = tmp_path / "cuda"
    write(str(cuda / "include" / "cublasLt.h"), "/* TEST DOUBLE */\n")
    write(str(cuda / "lib64" / "libcublasLt.so.13"), "")
    nvml = fakenvml.build_once(tmp_path_factory)["full"]
    out = tmp_path / "out"
    env = {"PATH": "%s:%s" % (fake, os.environ["PATH"]), "HOME": str(tmp_path), "CUDA_HOME": str(cuda),
           "GPU_CHECK_NVML_LIBRARY": nvml, "FAKE_NVML_DATA": fakenvml.data_file("h100-590-1gpu.data"),
           "GPU_CHECK_BUDGET": "150", "LC_ALL": "C"}
    proc = subprocess.run([SCRIPT, str(out)], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=240,
                          check=False)
    steps = (out / "steps.log").read_text() if (out / "steps.log").exists() else ""
    assert proc.returncode == 0, proc.stdout + proc.stderr + steps

    # the three nvidia-smi outputs, raw
    assert (out / "nvidia-smi-q.xml").read_text().lstrip().startswith("<?xml")
    assert "GPU0" in (out / "nvidia-smi-topo.txt").read_text()
    assert (out / "nvidia-smi-query.csv").read_text().splitlines() == [
        "index, name, pci.bus_id, memory.total [MiB], clocks.max.sm [MHz], power.limit [W]",
        "0, %s, 00000000:18:00.0, 81559 MiB, 1980 MHz, 700.00 W" % GPU]

    # built with the role's flags, for the GPU's capability (its PTX too), the sources and headers beside each other
    with open(os.path.join(REPO, "roles", "gpu_bench", "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    argv = log.read_text().splitlines()
    assert argv[:len(defaults["gpu_bench_cflags"])] == defaults["gpu_bench_cflags"]
    rest = argv[len(defaults["gpu_bench_cflags"]):]
    assert rest[:3] == ["-gencode", "arch=compute_90,code=[sm_90,compute_90]", "-I%s/include" % cuda]
    # only the versioned library there (as in the nvidia-cublas wheel): linked through a libcublasLt.so made for it,
    # found at run time in its own directory
    assert rest[3].startswith("-L") and rest[4:6] == ["-Xlinker", "-rpath=%s/lib64" % cuda] and argv[-1] == "-lcublasLt"
    headers = sorted(name for name in os.listdir(os.path.join(REPO, "roles", "gpu_bench", "files")) if name.endswith(".h"))
    assert sorted(os.listdir(str(out / "build" / "src"))) == sorted(["gpubench.cu"] + headers)

    # gpubench's raw output, parsed, and each figure against the published peak
    assert (out / "gpubench.out").read_text().startswith("gpubench version=")
    assert (out / "gpubench.err").exists()
    parsed = json.loads((out / "gpubench.parsed.json").read_text())
    [gpu] = parsed["gpus"]
    assert gpu["name"] == GPU and gpu["sustained"]
    peak = published_peak(GPU)
    summary = (out / "summary.txt").read_text()
    for dtype, value in gpu["gemm_tflops"].items():
        expected = "GPU0 %s %.1f TFLOP/s = %.1f %% of the %.1f peak" % (
            dtype, value, 100.0 * value / peak["dense_tflops"][dtype], peak["dense_tflops"][dtype])
        assert expected in summary.splitlines(), (expected, summary)
        assert expected in proc.stdout
    assert re.search(r"^GPU0 hbm copy [\d.]+ GB/s = [\d.]+ % of the 3350\.0 peak$", summary, re.M), summary
    assert re.search(r"^GPU0 sustained bf16 [\d.]+ TFLOP/s = [\d.]+ % of the 989\.4 peak \(1-s windows", summary, re.M)

    # the NVML sampler beside it: header, samples, and its trailer when the script stopped it
    records = [json.loads(line) for line in (out / "nvml.jsonl").read_text().splitlines()]
    assert records[0]["type"] == "header" and records[-1]["type"] == "end" and records[-1]["reason"] == "signal"
    assert any(record["type"] == "sample" for record in records)

    # the node's facts (playbooks/gather_facts.yml on localhost)
    facts = json.loads((out / "node-facts.json").read_text())
    assert "groups" in facts or "gpufleet_gpu" in json.dumps(facts), sorted(facts)

    # SOURCES.md: the machine, the date, the command, and each file
    sources = (out / "SOURCES.md").read_text()
    first = [line for line in sources.splitlines() if line.startswith("- ")][0]
    assert re.match(r"- \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ on \S+ \(", first), first
    assert "1 x %s" % GPU in first and "driver 590.48.01" in first and "tests/device/gpu_check.sh %s" % out in first
    for name in ("steps.log", "nvidia-smi-q.xml", "gpubench.out", "summary.txt", "nvml.jsonl", "node-facts.json"):
        assert "| %s |" % name in sources, (name, sources)
    assert "torch cross-check not run" in sources
    # bounded: every step under `timeout`, the whole run well inside its budget
    assert all(re.match(r"# exit \d+ after \d+ s \(limit \d+ s\)", line) for line in steps.splitlines()
               if line.startswith("# exit")), steps


def test_gpu_check_is_shellcheck_and_bash_n_clean():
    assert subprocess.run(["bash", "-n", SCRIPT], capture_output=True, timeout=60, check=False).returncode == 0
    shellcheck = shutil.which("shellcheck")
    assert shellcheck, "shellcheck is not installed (apt-get install shellcheck)"
    proc = subprocess.run([shellcheck, SCRIPT], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout
