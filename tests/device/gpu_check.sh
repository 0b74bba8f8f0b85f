#!/usr/bin/env bash
# gpu_check.sh: the first look at a real GPU machine (NVIDIA driver, nvcc, cuBLASLt; no network needed), for the
# day one is lent. Usage: tests/device/gpu_check.sh [OUTPUT_DIR]   (default $OUT, else ./gpu-check-out)
#
# In order, each step bounded by `timeout` and the whole run by GPU_CHECK_BUDGET seconds (480; a step that would
# pass it is skipped and noted), each step's command, exit status, time and stderr in steps.log:
#   1. nvidia-smi -q -x, nvidia-smi topo -m, nvidia-smi --query-gpu=index,name,pci.bus_id,memory.total,
#      clocks.max.sm,power.limit --format=csv (nvidia-smi-q.xml, nvidia-smi-topo.txt, nvidia-smi-query.csv);
#   2. gpubench built with nvcc and the flags roles/gpu_bench ships (gpu_bench_cflags; the gencode the role derives:
#      SASS for the local GPU's compute capability and its PTX), cuBLASLt from the toolkit, /usr or the nvidia-cublas
#      wheel (build/gpubench, build/src, the nvcc output in steps.log); GPUBENCH=PATH runs that binary instead;
#   3. gpubench $GPUBENCH_ARGS (-t 3 -s 30), stdout and stderr kept raw (gpubench.out, gpubench.err), with the
#      collection's NVML sampler (plugins/module_utils/nvml_sampler.py, standard library only) beside it every
#      second (nvml.jsonl);
#   4. the output parsed by the repository's parser (gpubench.parsed.json) and each figure set against the part's
#      published peak (gpufleet/profiles/gpu_peaks.yml, gpufleet.checks.compute.published_peak), e.g.
#      "GPU0 bf16 712.3 TFLOP/s = 72.0 % of the 989.4 peak" (summary.txt, and printed);
#   5. the node's facts: playbooks/gather_facts.yml on localhost where ansible-playbook is installed, else the GPU
#      fact collector in-process (node-facts.json);
#   6. where python3 imports torch with CUDA: torch.matmul on random normal inputs timed with CUDA events, a
#      cross-check recorded apart (torch-matmul.txt), never part of a verdict.
# SOURCES.md says which machine, when and with which command, and what each file is. GPU_CHECK_SKIP=build,nvml,
# facts,torch skips steps. Exit status 0 when gpubench ran and its output parsed, else 1.
#
# The device tool brings back at most 8 files: give a scratch directory and pack it, e.g.
#   tests/device/gpu_check.sh /tmp/gpu-check; tar -czf "$OUT/gpu-check.tar.gz" -C /tmp gpu-check;
#   cp /tmp/gpu-check/summary.txt /tmp/gpu-check/SOURCES.md "$OUT/"
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
if [[ $# -ge 1 ]]; then
    out="$1"
elif [[ -n "${OUT:-}" ]]; then
    out="$OUT"
else
    out=./gpu-check-out
fi
mkdir -p "$out" && out="$(cd "$out" && pwd)"
budget="${GPU_CHECK_BUDGET:-480}"
skip=",${GPU_CHECK_SKIP:-},"
read -r -a bench_args <<<"${GPUBENCH_ARGS:--t 3 -s 30}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
: >"$out/steps.log"
notes=()
files=()

note() {
    notes+=("$*")
    printf 'gpu_check: %s\n' "$*" >&2
}

# seconds a step may take: WANT, or what is left of the budget; 0 when too little is left to start it
allow() {
    local left=$((budget - SECONDS - 10))
    if ((left < 5)); then
        echo 0
    elif ((left < $1)); then
        echo "$left"
    else
        echo "$1"
    fi
}

# step FILE SECONDS CMD...: CMD's stdout into $out/FILE (or /dev/null for -), its stderr into steps.log (or the
# file $step_stderr names), the command, status and time logged in steps.log; returns CMD's status
step_stderr=""
step() {
    local file="$1" limit rc start dest="/dev/null"
    limit="$(allow "$2")"
    shift 2
    if [[ "$file" != "-" ]]; then
        dest="$out/$file"
        files+=("$file|$*")
    fi
    if ((limit == 0)); then
        note "skipped (budget of ${budget} s spent): $*"
        return 124
    fi
    start=$SECONDS
    printf '\n$ %s\n' "$*" >>"$out/steps.log"
    timeout -k 5 "$limit" "$@" >"$dest" 2>>"${step_stderr:-$out/steps.log}"
    rc=$?
    printf '# exit %d after %d s (limit %d s)\n' "$rc" "$((SECONDS - start))" "$limit" >>"$out/steps.log"
    if ((rc == 124 || rc == 137)); then
        note "timed out after ${limit} s: $*"
    fi
    return "$rc"
}

# The repository's Python: its virtual environment where there is one, else python3 (with PyYAML for the flags).
python="$repo/.venv/bin/python"
[[ -x "$python" ]] || python="$(command -v python3 || echo python3)"
# the collection's Python (plugins/module_utils) imports as ansible_collections.gpufleet.acceptance
mkdir -p "$tmp/ansible_collections/gpufleet"
ln -s "$repo" "$tmp/ansible_collections/gpufleet/acceptance"
pythonpath="$tmp:$repo${PYTHONPATH:+:$PYTHONPATH}"

# --- 1. nvidia-smi -----------------------------------------------------------------------------------------------
smi="${NVIDIA_SMI:-nvidia-smi}"
step nvidia-smi-q.xml 60 "$smi" -q -x || note "nvidia-smi -q -x failed (steps.log)"
step nvidia-smi-topo.txt 60 "$smi" topo -m || note "nvidia-smi topo -m failed (steps.log)"
step nvidia-smi-query.csv 60 "$smi" --query-gpu=index,name,pci.bus_id,memory.total,clocks.max.sm,power.limit \
    --format=csv || note "nvidia-smi --query-gpu failed (steps.log)"
caps="$(timeout 30 "$smi" --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d ' .' | sort -un)"
gpus="$(sed -n '2,$p' "$out/nvidia-smi-query.csv" 2>/dev/null | cut -d, -f2 | sed 's/^ *//' | sort | uniq -c \
    | sed 's/^ *\([0-9]*\) /\1 x /' | paste -sd ';' -)"
driver="$(timeout 30 "$smi" --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)"

# --- 2. build ----------------------------------------------------------------------------------------------------
# The role's flags (roles/gpu_bench/defaults/main.yml); without PyYAML the same ones, written here.
cflags=()
default_gencode=()
if flags="$(timeout 30 "$python" - "$repo/roles/gpu_bench/defaults/main.yml" 2>>"$out/steps.log" <<'EOF'
import sys, yaml
defaults = yaml.safe_load(open(sys.argv[1]))
print("\n".join(defaults["gpu_bench_cflags"]))
print("--")
print("\n".join(defaults["gpu_bench_default_gencode"]))
EOF
)"; then
    mapfile -t cflags < <(sed '/^--$/,$d' <<<"$flags")
    mapfile -t default_gencode < <(sed '1,/^--$/d' <<<"$flags")
    flags_from="roles/gpu_bench/defaults/main.yml (gpu_bench_cflags, gpu_bench_default_gencode)"
else
    # the same as roles/gpu_bench/defaults/main.yml (gpu_bench_cflags, gpu_bench_default_gencode)
    cflags=(-O2 -std=c++17 "-Xcompiler=-Wall,-Wextra")
    default_gencode=(-gencode "arch=compute_80,code=sm_80" -gencode "arch=compute_90,code=sm_90"
        -gencode "arch=compute_100,code=[sm_100,compute_100]")
    flags_from="written in tests/device/gpu_check.sh (no PyYAML for $python)"
fi
# as the role derives it: SASS for each capability found, the highest also as PTX
gencode=()
if [[ -n "$caps" ]]; then
    highest="$(tail -n 1 <<<"$caps")"
    while read -r cap; do
        if [[ "$cap" == "$highest" ]]; then
            gencode+=(-gencode "arch=compute_$cap,code=[sm_$cap,compute_$cap]")
        else
            gencode+=(-gencode "arch=compute_$cap,code=sm_$cap")
        fi
    done <<<"$caps"
else
    gencode=("${default_gencode[@]}")
    note "no compute capability from nvidia-smi: the role's default gencode is used"
fi

# cuBLASLt: "include-dir:lib-dir" candidates, the toolkit's first, then /usr, then the nvidia-cublas wheel's
cublas_candidates() {
    local home="$1" py
    printf '%s\n' "$home/include:$home/lib64" "$home/targets/x86_64-linux/include:$home/targets/x86_64-linux/lib" \
        "/usr/include:/usr/lib/x86_64-linux-gnu" "/usr/include:/usr/lib64"
    for py in "$python" python3; do
        timeout 30 "$py" - 2>/dev/null <<'EOF'
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit(0)
for root in list(nvidia.__path__):
    for home in sorted(glob.glob(os.path.join(root, "cu*"))) + [os.path.join(root, "cublas")]:
        print(os.path.join(home, "include") + ":" + os.path.join(home, "lib"))
EOF
    done
}

binary="${GPUBENCH:-}"
nvcc="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
build_cmd=""
if [[ -n "$binary" ]]; then
    note "gpubench not built: GPUBENCH=$binary given"
elif [[ "$skip" == *,build,* ]]; then
    note "gpubench not built (GPU_CHECK_SKIP)"
elif [[ ! -x "$nvcc" ]]; then
    note "gpubench not built: no nvcc at $nvcc (set NVCC)"
else
    cuda_home="${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$nvcc")")")}"
    include=""
    libdir=""
    while IFS=: read -r inc lib; do
        libs=("$lib"/libcublasLt.so*)
        if [[ -f "$inc/cublasLt.h" && -e "${libs[0]}" ]]; then
            include="$inc"
            libdir="$lib"
            break
        fi
    done < <(cublas_candidates "$cuda_home")
    if [[ -z "$include" ]]; then
        note "gpubench not built: no cublasLt.h with libcublasLt.so* under $cuda_home, /usr or the nvidia-cublas wheel"
    else
        mkdir -p "$out/build/src" "$tmp/link"
        cp "$repo/roles/gpu_bench/files/gpubench.cu" "$repo"/roles/gpu_bench/files/*.h "$out/build/src/"
        # -lcublasLt links libcublasLt.so; a wheel ships only the versioned file
        linkdir="$libdir"
        if [[ ! -e "$libdir/libcublasLt.so" ]]; then
            libs=("$libdir"/libcublasLt.so.*)
            ln -s "${libs[0]}" "$tmp/link/libcublasLt.so"
            linkdir="$tmp/link"
        fi
        build=("$nvcc" "${cflags[@]}" "${gencode[@]}" "-I$include" "-L$linkdir" -Xlinker "-rpath=$libdir"
            -o "$out/build/gpubench" "$out/build/src/gpubench.cu" -lcublasLt)
        build_cmd="${build[*]}"
        if step - 300 "${build[@]}" && [[ -x "$out/build/gpubench" ]]; then
            binary="$out/build/gpubench"
        else
            note "the gpubench build failed (nvcc's output in steps.log)"
        fi
    fi
fi

# --- 3. gpubench, the NVML sampler beside it ----------------------------------------------------------------------
bench_ok=1
sampler_pid=""
if [[ -n "$binary" ]]; then
    limit="$(allow 240)"
    if [[ "$skip" != *,nvml,* ]] && ((limit > 0)); then
        PYTHONPATH="$pythonpath" timeout -k 5 "$((limit + 30))" "$python" - "$out/nvml.jsonl" "$((limit + 20))" \
            "${GPU_CHECK_NVML_LIBRARY:-}" 2>>"$out/steps.log" <<'EOF' &
import sys
from ansible_collections.gpufleet.acceptance.plugins.module_utils import nvml, nvml_sampler

output, duration, library = sys.argv[1], float(sys.argv[2]), sys.argv[3] or None
try:
    sampler = nvml_sampler.Sampler(nvml_sampler.open_backend("auto", library), interval=1, duration=duration)
    sampler.start()
except (nvml.NVMLError, OSError, ValueError) as exc:
    sys.exit("NVML sampler did not start: %s" % (getattr(exc, "name", None) or exc))
try:
    with open(output, "w") as handle:
        writer = nvml_sampler.JsonLinesWriter(handle)
        sampler.run(writer.emit, writer.flush)  # SIGTERM ends it after the current tick, with its trailer
finally:
    sampler.close()
EOF
        sampler_pid=$!
        files+=("nvml.jsonl|NVML sampler (plugins/module_utils/nvml_sampler.py), 1 s ticks, beside gpubench")
    fi
    files+=("gpubench.err|stderr of $binary ${bench_args[*]}")
    : >"$out/gpubench.err"
    step_stderr="$out/gpubench.err"
    step gpubench.out 240 "$binary" "${bench_args[@]}"
    bench_rc=$?
    step_stderr=""
    ((bench_rc == 0)) || note "gpubench exited $bench_rc"
    if [[ -n "$sampler_pid" ]]; then
        sleep 2  # a tick after the run
        kill -TERM "$sampler_pid" 2>/dev/null
        wait "$sampler_pid" || note "the NVML sampler ended with status $? (steps.log)"
    fi
else
    note "gpubench not run: no binary"
fi

# --- 4. parse, and each figure against the published peak ---------------------------------------------------------
if [[ -s "$out/gpubench.out" ]]; then
    if [[ -x "$repo/.venv/bin/gpufleet" ]]; then
        parse=("$repo/.venv/bin/gpufleet" parse gpubench "$out/gpubench.out")
    else
        parse=(env "PYTHONPATH=$pythonpath" "$python" -m gpufleet.cli.main parse gpubench "$out/gpubench.out")
    fi
    if step gpubench.parsed.json 60 "${parse[@]}"; then
        bench_ok=0
        files+=("summary.txt|each parsed figure against gpufleet/profiles/gpu_peaks.yml (published_peak)")
        PYTHONPATH="$pythonpath" timeout 60 "$python" - "$out/gpubench.parsed.json" 2>>"$out/steps.log" \
            <<'EOF' | tee "$out/summary.txt"
import json, sys
from gpufleet.checks.compute import published_peak

parsed = json.load(open(sys.argv[1]))


def line(label, value, unit, peak):
    if peak:
        return "%s %.1f %s = %.1f %% of the %.1f peak" % (label, value, unit, 100.0 * value / peak, peak)
    return "%s %.1f %s (no published peak)" % (label, value, unit)


print("gpubench version=%s cuda=%s driver=%s" % (parsed.get("version"), parsed.get("cuda"), parsed.get("driver")))
for gpu in parsed.get("gpus", []):
    peak = published_peak(gpu.get("name") or "") or {}
    print("GPU%s %s (%s)" % (gpu["index"], gpu.get("name"), peak.get("sku", "not in gpu_peaks.yml")))
    for dtype, value in gpu.get("gemm_tflops", {}).items():
        print(line("GPU%s %s" % (gpu["index"], dtype), value, "TFLOP/s", peak.get("dense_tflops", {}).get(dtype)))
    for test, value in gpu.get("hbm_gbs", {}).items():
        print(line("GPU%s hbm %s" % (gpu["index"], test), value, "GB/s", peak.get("hbm_gbs")))
    sustained = gpu.get("sustained")
    if sustained:
        dtype = sustained.get("dtype")
        print(line("GPU%s sustained %s" % (gpu["index"], dtype), sustained["tflops"], "TFLOP/s",
                   peak.get("dense_tflops", {}).get(dtype))
              + " (1-s windows: first %s, last %s, min %s)" % (sustained.get("first"), sustained.get("last"),
                                                               sustained.get("min")))
for error in parsed.get("errors", []):
    print("error: %s" % error)
EOF
    else
        note "gpubench's output did not parse (steps.log)"
    fi
fi

# --- 5. the node's facts --------------------------------------------------------------------------------------------
playbook="$(command -v "$repo/.venv/bin/ansible-playbook" || command -v ansible-playbook || true)"
if [[ "$skip" == *,facts,* ]]; then
    note "facts not gathered (GPU_CHECK_SKIP)"
elif [[ -n "$playbook" ]]; then
    cat >"$tmp/facts.yml" <<EOF
- name: The gpufleet facts of this machine
  ansible.builtin.import_playbook: "$repo/playbooks/gather_facts.yml"
- name: Keep them
  hosts: all
  gather_facts: false
  tasks:
    - name: The fact module's result
      ansible.builtin.copy:
        content: "{{ facts_node_result | to_nice_json }}\n"
        dest: "$out/node-facts.json"
        mode: "0644"
EOF
    files+=("node-facts.json|playbooks/gather_facts.yml on localhost (facts_node_result)")
    step - 120 env LC_ALL=C.UTF-8 ANSIBLE_CONFIG="$repo/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$tmp" ANSIBLE_NOCOLOR=1 \
        ANSIBLE_LOCAL_TEMP="$tmp/ansible-local" ANSIBLE_REMOTE_TEMP="$tmp/ansible-remote" \
        "$playbook" -i localhost, -c local -e "ansible_python_interpreter=$python" "$tmp/facts.yml" \
        || note "the fact playbook failed (steps.log)"
else
    files+=("node-facts.json|GPU facts by the collection's collector in-process (no ansible-playbook here)")
    step node-facts.json 120 env "PYTHONPATH=$pythonpath" "$python" -c '
import json, sys
from ansible_collections.gpufleet.acceptance.plugins.module_utils.gpu_collect import collect
from gpufleet.facts.gpu import build_facts
from gpufleet.facts.raw import RawReader
raw = collect(sys.argv[1], "lspci", 60)
json.dump({"source": "gpu_collect.collect + gpufleet.facts.gpu.build_facts", "facts": build_facts(
    RawReader("localhost", raw))}, sys.stdout, indent=1, sort_keys=True, default=str)
' "$smi" || note "the in-process GPU fact collector failed (steps.log)"
fi

# --- 6. the PyTorch cross-check -------------------------------------------------------------------------------------
torch_python=""
for py in "$python" python3; do
    if timeout 60 "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
        torch_python="$py"
        break
    fi
done
if [[ "$skip" == *,torch,* ]]; then
    note "torch cross-check not run (GPU_CHECK_SKIP)"
elif [[ -z "$torch_python" ]]; then
    note "torch cross-check not run: no python with torch and CUDA"
else
    step torch-matmul.txt 120 env "PYTHONPATH=$pythonpath" "$torch_python" -c '
import torch
from gpufleet.checks.compute import published_peak

size = 8192
peak = published_peak(torch.cuda.get_device_name(0)) or {}
torch.backends.cuda.matmul.allow_tf32 = True
print("torch %s on %s (a cross-check, not a verdict): torch.matmul %d^3, random normal inputs, CUDA events"
      % (torch.__version__, torch.cuda.get_device_name(0), size))
for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16), ("tf32", torch.float32)):
    a = torch.randn(size, size, device="cuda", dtype=dtype)
    b = torch.randn(size, size, device="cuda", dtype=dtype)
    for _ in range(5):
        torch.matmul(a, b)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    iters = 50
    start.record()
    for _ in range(iters):
        torch.matmul(a, b)
    end.record()
    torch.cuda.synchronize()
    tflops = 2.0 * size ** 3 * iters / (start.elapsed_time(end) / 1e3) / 1e12
    ref = peak.get("dense_tflops", {}).get(name)
    print("torch %s %.1f TFLOP/s = %.1f %% of the %.1f peak" % (name, tflops, 100 * tflops / ref, ref) if ref
          else "torch %s %.1f TFLOP/s (no published peak)" % (name, tflops))
' || note "the torch cross-check failed (steps.log)"
fi

# --- SOURCES.md ------------------------------------------------------------------------------------------------------
nvcc_version="$(timeout 30 "$nvcc" --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p' | head -n 1)"
commit="$(timeout 30 git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
{
    printf '# gpu_check.sh output\n\n'
    printf -- '- %s on %s (%s; %s; driver %s; nvcc %s): tests/device/gpu_check.sh %s, repository at %s' \
        "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$(hostname)" "$(uname -srm)" "${gpus:-no GPU listed}" "${driver:-?}" \
        "${nvcc_version:-none}" "$*" "$commit"
    printf ' (gpubench %s; flags from %s; gencode %s).\n\n' "${bench_args[*]}" "$flags_from" "${gencode[*]}"
    printf '| file | what wrote it |\n| --- | --- |\n'
    printf '| steps.log | every step: command, stderr, exit status, seconds |\n'
    [[ -n "$build_cmd" ]] && printf '| build/gpubench, build/src/ | %s |\n' "$build_cmd"
    for entry in "${files[@]}"; do
        [[ -e "$out/${entry%%|*}" ]] && printf '| %s | %s |\n' "${entry%%|*}" "${entry#*|}"
    done
    if ((${#notes[@]} > 0)); then
        printf '\nNotes:\n'
        printf -- '- %s\n' "${notes[@]}"
    fi
} >"$out/SOURCES.md"
printf 'gpu_check: %s (%d s)\n' "$out" "$SECONDS" >&2
exit "$bench_ok"
