# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shipped defaults end to end on a 4-host SSH fleet: provision.yml, then validate_cluster.yml at level standard
(`pytest -m shipped_defaults` runs this file alone).

What the user gives, and nothing else: the inventory (hosts, ansible_host, ansible_user, the SSH key and known hosts,
the node's python, gpufleet_claim, and gpufleet_become: false because these nodes are logged into as root and have no
sudo; plus gpufleet_gpu_query_formats, what the simulated GPU answers, see below) and, for provision.yml, the
source archive (nccl_tests_source_archive: the one input role nccl_tests needs on a site without internet). The
shipped ansible.cfg (no fact cache), the roles' default paths, the level's benchmarks, the launcher from the install
manifest and the shipped tolerances and floors are used as they are. The one setting given
to validate_cluster.yml besides the level is gpufleet_iperf3_seconds (see "Time" below): no binary path, launcher,
fact cache or tolerance is overridden.

What is simulated, and why (each a property of the node, not a setting of the product):
- Separate machines: fleet.sh --own-files gives each host its own overlay of /etc, /opt, /root, /usr/local,
  /usr/include, /usr/lib and /var/lib, so the roles write to their default paths (/opt/gpufleet, /etc/nccl.conf,
  /var/lib/gpufleet/installed.d, ~/.ssh) per host and never into this machine's.
- The GPU: there is none. Each host's /usr/local/bin/nvidia-smi is the replay wrapper of a recorded 1-GPU H100 node
  (tests/replay/nodes/gpu-h100-590-1gpu.yml), so gpu_facts finds it at its default name as on a GPU node: provision
  derives NVCC_GENCODE from it and the benchmarks take the node's GPU count (1) and memory (80 GB: size 16G) from it.
  That recording holds `nvidia-smi -q` only (no one-GPU recording has both `-q -x` and `-q` of one machine), so the
  node's inventory sets gpufleet_gpu_query_formats to [text], as inventories/simulated/hosts.yml does: it says what
  the simulated GPU can answer, a property of the node like its recording, not an override of a binary path,
  launcher, fact cache or tolerance (with the default [xml, text] gpu_facts would find no GPU here).
  The claim says the same (1 x H100 80GB) and a 1 Gb/s frontend Ethernet NIC, which gives the iperf3 floor
  (0.9 x 1 Gb/s; the shaped link below carries about 1.4 Gb/s).
- The build stack: this machine's CUDA toolkit (/usr/local/cuda/bin/nvcc) and mpicc are real; NCCL and Open MPI's
  headers are not installed here, so each node gets an empty /usr/local/nccl/lib/libnccl.so, a
  /usr/local/nccl/include/nccl.h and an mpi.h where mpicc --showme:incdirs says it is (TEST DOUBLES: the role's
  preflight only looks for them). This toolkit has no cuBLAS either: each node gets the real cuBLAS headers and
  library of the nvidia-cublas wheel (a test extra, in this test's virtual environment) linked into
  /usr/local/cuda/include and /usr/local/cuda/lib64, where a toolkit keeps them, so role gpu_bench builds the real
  gpubench with nvcc at its default paths. It cannot run here (no GPU, no driver): at level standard the
  gpu_compute benchmark runs the provisioned binary, which says "no CUDA device", and its record says so; that is
  asserted (the path came from the install manifest), not its verdict.
- nccl-tests: the source archive this test writes (write_source_archive) is laid out as GitHub's
  (nccl-tests-2.17.3/) and its Makefile builds build/all_reduce_perf where the real one does: a wrapper that runs the
  CPU stand-in (tests/standin/all_reduce_perf_standin.py, copied into the archive) with the node's python3 and passes
  every argument through. Two properties of the simulated node live in that wrapper: the simulated GPU memory
  (GPUFLEET_STANDIN_DEVICE_MEMORY 2072M, so nccl-tests' own rule reduces the shipped 16G size to 8 MiB, as the real
  tool does on a small GPU: the Python stand-in could not move 16 GiB), and MPI's part of nccl-tests (rank 0's
  control address) taken from what Open MPI gives every rank (mpirun's address in OMPI_MCA_orte_hnp_uri, a port from
  the job id), where the stand-in otherwise needs GPUFLEET_STANDIN_BOOTSTRAP.
- The NIC's rate: every host's link is shaped to NIC_RATE (1.5 Gb/s, fleet.sh throttle on each host before anything
  runs), the speed of the simulated node's network card. Unshaped, a pair's busbw came from this machine's CPU, not
  from a link: the stand-in moved 0.35-0.82 GB/s on these 2 shared cores, following the load, and at the shipped
  25 % tolerance a loaded moment convicted a healthy pair (1 control run of 4 passed beside other load). Shaped, the
  link is the bottleneck as on a real node (1.5 Gb/s = 0.19 GB/s, under what the stand-in moves when loaded), and a
  healthy pair measures the link's rate. The claim's 1 Gb/s frontend gives iperf3's floor (0.9 Gb/s); the shaped link
  carries about 1.4 Gb/s of TCP.

The scenario, one validate run: one host chosen at random (the seed is printed) is throttled to RATE (500 Mbit/s, 3
times below the others' 1.5 Gb/s: a 400G port that came up at 100G is 4 times below) with tc (fleet.sh throttle) and
must be named by the pair search (benchmarks.pair_search, "slow node") and by the iperf3 check (bench_network.iperf3),
and no other host: the three healthy hosts are the control, each passing every benchmark check while the faulty one
sits in the same rounds (a separate unthrottled run proved nothing more and cost 85-119 s). Every host, the throttled
one included, ran the level's benchmarks with the provisioned binary, and its single-node all-reduce (no link crossed)
passes. Facts may be INCOMPLETE on these CPU-only hosts (no ibstat, no NCCL library): only the benchmark checks are
asserted, by id.

Time: the shipped iperf3 run is 60 s, 3 repeats, 2 rounds of the ring: 6 min per validate run, alone over the budget
of this file, so gpufleet_iperf3_seconds=2 is given, the one duration overridden (a duration, not a threshold: the
floor, streams, warm-up, repeats and vote are the shipped ones; docs/benchmarks.md gives no reason to ship a shorter
run, so the default stays). The phases' wall times and the rounds used are printed.
"""

from __future__ import annotations

import glob
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import time

import pytest
import yaml

from conftest import REPO_ROOT, fleet_sh, require_fleet  # pylint: disable=import-error,no-name-in-module

sys.path.insert(0, os.path.join(REPO_ROOT, "benchmarks"))

import phase_share  # noqa: E402  pylint: disable=import-error,wrong-import-position

pytestmark = [pytest.mark.shipped_defaults, pytest.mark.usefixtures("mpirun_installed")]

HOSTS = 4
NODE_FILE = os.path.join(REPO_ROOT, "tests", "replay", "nodes", "gpu-h100-590-1gpu.yml")
STANDIN = os.path.join(REPO_ROOT, "tests", "standin", "all_reduce_perf_standin.py")
# the pin of roles/nccl_tests (defaults/main.yml): the archive's top directory must carry it
NCCL_TESTS_VERSION = "2.17.3"
# the version of roles/gpu_bench (defaults/main.yml): its install directory carries it
GPUBENCH_VERSION = "1.1"
# every host's NIC (see the module docstring), and the throttled host's
NIC_RATE = "1500mbit"
RATE = "500mbit"
IPERF3_SECONDS = 2
# inventory variables a user's own inventory sets, taken from the one fleet.sh writes (its tool paths and roots are not)
USER_VARS = ("ansible_host", "ansible_user", "ansible_ssh_private_key_file", "ansible_ssh_common_args", "ansible_control_path_dir",
             "ansible_python_interpreter")
# what the simulated GPU can answer (the format of its recording; see the module docstring), from the same inventory
NODE_VARS = ("gpufleet_gpu_query_formats",)
CLAIM = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 1, "gpu_memory_gb": 80,
         "nics": [{"role": "frontend", "type": "ethernet", "count": 1, "gbps": 1}]}

MAKEFILE = """\
# TEST DOUBLE of nccl-tests' Makefile (tests/sshfleet/test_shipped_defaults.py): takes the real make variables
# (MPI, CUDA_HOME, NCCL_HOME, MPI_HOME, NVCC_GENCODE) and builds build/all_reduce_perf, the CPU stand-in's wrapper.
.PHONY: default
default: build/all_reduce_perf
build/all_reduce_perf: all_reduce_perf.sh all_reduce_perf_standin.py
\tmkdir -p build
\tcp all_reduce_perf_standin.py build/
\tcp all_reduce_perf.sh $@
\tchmod 0755 $@
"""

WRAPPER = r"""#!/bin/sh
# TEST DOUBLE of nccl-tests' all_reduce_perf (tests/sshfleet/test_shipped_defaults.py): the CPU stand-in, run with
# the node's python3, every argument passed through.
# The simulated GPU's memory: nccl-tests sizes its buffers from it ("Reducing maxBytes"): 2072M holds 8 MiB x 3.
: "${GPUFLEET_STANDIN_DEVICE_MEMORY:=2072M}"
export GPUFLEET_STANDIN_DEVICE_MEMORY
# MPI's part of nccl-tests: rank 0 (on mpirun's host) listens at mpirun's address, a port from the job id.
if [ -z "${GPUFLEET_STANDIN_BOOTSTRAP:-}" ] && [ -n "${OMPI_MCA_orte_hnp_uri:-}" ]; then
    addr=$(printf '%s' "$OMPI_MCA_orte_hnp_uri" | sed -n 's/^[^;]*;tcp:\/\/\([0-9.]*\)[,:].*/\1/p')
    GPUFLEET_STANDIN_BOOTSTRAP="$addr:$((20000 + ${OMPI_MCA_ess_base_jobid:-0} % 20000))"
    export GPUFLEET_STANDIN_BOOTSTRAP
fi
exec python3 "$(dirname "$0")/all_reduce_perf_standin.py" "$@"
"""

# the simulated node's software (see the module docstring), installed over SSH on each host; $1: its replay bin dir
NODE_SETUP = """set -e
ln -sfn "$1/nvidia-smi" /usr/local/bin/nvidia-smi
mkdir -p /usr/local/nccl/lib /usr/local/nccl/include
: > /usr/local/nccl/lib/libnccl.so
printf '/* TEST DOUBLE: no NCCL on this simulated node */\\n#define NCCL_MAJOR 2\\n' > /usr/local/nccl/include/nccl.h
# where this machine's mpicc says Open MPI's headers are (mpicc --showme:incdirs, the path the role checks)
include=$(mpicc --showme:incdirs | cut -d' ' -f1)
mkdir -p "$include"
printf '/* TEST DOUBLE: Open MPI development headers are not installed here */\\n' > "$include/mpi.h"
# cuBLAS where a CUDA toolkit keeps it ($2: the nvidia-cublas wheel's cu*/ directory): real files, linked
for header in "$2"/include/*.h; do ln -sfn "$header" /usr/local/cuda/include/; done
for library in "$2"/lib/libcublas*.so.*; do
    ln -sfn "$library" /usr/local/cuda/lib64/
    ln -sfn "$library" "/usr/local/cuda/lib64/$(basename "$library" | sed 's/\\.so\\..*/.so/')"
done
"""


def cublas_home():
    """The nvidia-cublas wheel's ``cu<N>/`` directory (include/cublasLt.h, lib/libcublasLt.so.<N>) in this environment."""
    import nvidia  # pylint: disable=import-outside-toplevel
    for root in list(nvidia.__path__):
        for home in sorted(glob.glob(os.path.join(root, "cu*"))):
            if os.path.exists(os.path.join(home, "include", "cublasLt.h")) and glob.glob(os.path.join(home, "lib", "libcublasLt.so.*")):
                return home
    raise AssertionError("no nvidia-cublas wheel in this environment: .venv/bin/pip install -e '.[test]'")


def write_source_archive(path):
    """nccl-tests-<pin>/ with the TEST DOUBLE Makefile, the wrapper and the stand-in."""
    with open(STANDIN, "rb") as handle:
        standin = handle.read()
    with tarfile.open(path, "w:gz") as tar:
        for name, data, mode in (("Makefile", MAKEFILE.encode(), 0o644), ("all_reduce_perf.sh", WRAPPER.encode(), 0o755),
                                 ("all_reduce_perf_standin.py", standin, 0o644),
                                 ("README.md", b"TEST DOUBLE of nccl-tests: builds the CPU stand-in of all_reduce_perf\n", 0o644)):
            info = tarfile.TarInfo("nccl-tests-%s/%s" % (NCCL_TESTS_VERSION, name))
            info.size, info.mode, info.mtime = len(data), mode, int(time.time())
            tar.addfile(info, io.BytesIO(data))


def ssh(fleet, host_vars, script, *args):
    cmd = ["ssh", "-i", host_vars["ansible_ssh_private_key_file"]] + host_vars["ansible_ssh_common_args"].split()
    cmd += ["root@" + host_vars["ansible_host"], "sh", "-s", "--"] + list(args)
    proc = subprocess.run(cmd, input=script, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, (fleet["state"], proc.stdout, proc.stderr)


@pytest.fixture(scope="module", name="fleet")
def fleet_fixture(tmp_path_factory):
    require_fleet()
    base = tmp_path_factory.mktemp("shippeddefaults")
    state = str(base / "fleet")
    fleet_sh("up", "--hosts", str(HOSTS), "--state", state, "--node-files", NODE_FILE, "--own-files")
    try:
        with open(os.path.join(state, "fleet_id"), "r", encoding="utf-8") as handle:
            number = int(handle.read().strip())
        for index in range(1, HOSTS + 1):
            fleet_sh("throttle", "--state", state, "--host", str(index), "--rate", NIC_RATE)
        with open(os.path.join(state, "inventory.yml"), "r", encoding="utf-8") as handle:
            written = yaml.safe_load(handle)["all"]["children"]["sshfleet"]["hosts"]
        hosts = {}
        for name, host_vars in written.items():
            hosts[name] = {key: host_vars[key] for key in USER_VARS + NODE_VARS}
            hosts[name].update({"gpufleet_claim": CLAIM, "gpufleet_become": False})
            # the node's replay wrappers (fleet.sh built them; its inventory points the fact tools there)
            ssh({"state": state}, host_vars, NODE_SETUP, os.path.dirname(host_vars["gpufleet_nvidia_smi_path"]), cublas_home())
        inventory = base / "inventory.yml"
        inventory.write_text(yaml.safe_dump({"all": {"hosts": hosts}}, sort_keys=False))
        archive = base / ("nccl-tests-%s.tar.gz" % NCCL_TESTS_VERSION)
        write_source_archive(str(archive))
        yield {"state": state, "id": number, "base": base, "inventory": str(inventory), "archive": str(archive),
               "names": ["gf%dh%d" % (number, index) for index in range(1, HOSTS + 1)]}
    finally:
        fleet_sh("down", "--state", state)


def playbook(fleet, args, label, timeout=500):
    """ansible-playbook with the shipped ansible.cfg; ``{phase: seconds}`` from when each phase's first line came."""
    env = dict(os.environ)
    for name in list(env):
        if name.startswith("ANSIBLE_") or name.startswith("GPUFLEET_"):
            del env[name]
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO_ROOT, "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_LOCAL_TEMP": str(fleet["base"] / "ansible-local")})
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", fleet["inventory"]] + args
    started = time.monotonic()
    marks = [("start", started)]
    out = []
    with subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        deadline = started + timeout
        for line in proc.stdout:
            out.append(line)
            now = time.monotonic()
            phase = phase_of(line)
            if phase and phase not in [name for name, _at in marks]:
                marks.append((phase, now))
            if now > deadline:
                proc.kill()
        proc.wait()
    marks.append(("end", time.monotonic()))
    text = "".join(out)
    with open(str(fleet["base"] / ("%s.log" % label)), "w", encoding="utf-8") as handle:
        handle.write(text)
    times = {marks[i][0]: marks[i + 1][1] - marks[i][1] for i in range(len(marks) - 1)}
    print("%s: %s (total %.0f s)" % (label, ", ".join("%s %.0f s" % item for item in times.items()), marks[-1][1] - started))
    return proc.returncode, text, times


def phase_of(line):
    if line.startswith("TASK [") and "Facts |" in line:
        return "facts"
    if line.startswith("PLAY [All-reduce benchmarks"):
        return "benchmarks"
    if line.startswith("PLAY [Judge and report"):
        return "verdict"
    return None


def validate(fleet, label):
    run_dir = str(fleet["base"] / ("run-" + label))
    rc, text, times = playbook(fleet, ["-e", "gpufleet_level=standard", "-e", "gpufleet_results_dir=" + run_dir,
                                       "-e", "gpufleet_iperf3_seconds=%d" % IPERF3_SECONDS,
                                       os.path.join(REPO_ROOT, "playbooks", "validate_cluster.yml")], label)
    # a judged run (gpufleet/results/exit_codes.py): 3 some node REJECT, 6 some INCOMPLETE (facts may be here); 1
    # (the run failed), 4 (a node unreachable) or any other code is a failed run
    assert rc in (0, 3, 6), text[-8000:]
    records = {}
    for path in glob.glob(os.path.join(run_dir, "hosts", "*.json")):
        with open(path, "r", encoding="utf-8") as handle:
            record = json.load(handle)
        records[record["host"]] = record
    assert sorted(records) == fleet["names"], text[-4000:]
    return records, times


def checks(records, check_id):
    return {host: [item for item in record["checks"] if item["id"] == check_id] for host, record in records.items()}


def pair_rounds(records):
    runs = sorted({(bench["round"], tuple(sorted(bench["hosts"])), bench["parsed"]["busbw_at_largest_size_gbs"] if bench["parsed"] else None)
                   for record in records.values() for bench in record["benchmarks"] if bench["kind"] == "allreduce_pair"})
    return runs, len({rnd for rnd, _pair, _value in runs})


def describe(records, check_ids):
    return "\n".join("%s %s %s: %s" % (host, item["id"], item["status"], item["message"][:300])
                     for host, record in sorted(records.items()) for item in record["checks"] if item["id"] in check_ids)


BENCH_CHECKS = ("benchmarks.allreduce_single", "benchmarks.pair_search", "bench_network.iperf3")


def test_shipped_defaults_name_the_throttled_host(fleet):
    started = time.monotonic()
    rc, text, _times = playbook(fleet, ["-e", "nccl_tests_source_archive=" + fleet["archive"], os.path.join(REPO_ROOT, "playbooks", "provision.yml")],
                                "provision")
    assert rc == 0, text[-8000:]

    seed = random.randrange(1 << 30)
    victim = random.Random(seed).randrange(1, HOSTS + 1)
    bad = fleet["names"][victim - 1]
    print("seed %d: throttling host %d (%s) to %s" % (seed, victim, bad, RATE))
    fleet_sh("throttle", "--state", fleet["state"], "--host", str(victim), "--rate", RATE)
    throttled, times = validate(fleet, "throttled")
    # docs/performance.md: the benchmark phase's orchestration against the time some node ran a benchmark (a
    # measurement for the docs, printed, not asserted)
    print(phase_share.line(phase_share.share(str(fleet["base"] / "run-throttled"), times["benchmarks"])))
    runs, rounds = pair_rounds(throttled)
    print("throttled: pair rounds %d: %s" % (rounds, runs))
    print(describe(throttled, BENCH_CHECKS))
    # a pair run is recorded once, in the record of the host that started it: every host is in some pair
    paired = {host for record in throttled.values() for bench in record["benchmarks"] if bench["kind"] == "allreduce_pair"
              for host in bench["hosts"]}
    assert sorted(paired) == fleet["names"], paired
    for host, record in throttled.items():
        kinds = {bench["kind"] for bench in record["benchmarks"]}
        # the level's benchmarks ran with the provisioned binary (no missing_binary, no launcher_error)
        assert {"allreduce_single", "iperf3"} <= kinds, (host, kinds)
        for bench in record["benchmarks"]:
            if bench["kind"] in ("allreduce_single", "allreduce_pair"):
                assert bench["outcome"] == "ok", (host, bench["kind"], bench["reason"])
                assert "/opt/gpufleet/nccl-tests-%s/build/all_reduce_perf" % NCCL_TESTS_VERSION in bench["command"], bench["command"]
                # the pinned release writes its JSON document (-J), and the record was read from it
                assert bench["parsed"]["parsed_from"] == "json", (
                    host, bench["kind"], bench["parsed"]["json_fallback_reason"])
        # gpubench: the binary role gpu_bench built, found through the install manifest; no GPU here, and it says so
        compute = [bench for bench in record["benchmarks"] if bench["kind"] == "gpu_compute"]
        assert len(compute) == 1 and compute[0]["command"][0] == "/opt/gpufleet/gpubench-%s/bin/gpubench" % GPUBENCH_VERSION, compute
        assert compute[0]["outcome"] != "missing_binary" and "no CUDA device" in (compute[0]["reason"] or ""), compute[0]
    # the healthy hosts are the control: no benchmark check fails them; the single-node run crosses no link, so it
    # passes on the throttled host too
    for check_id in BENCH_CHECKS:
        for host, items in checks(throttled, check_id).items():
            assert items, (host, check_id)
            if host != bad or check_id == "benchmarks.allreduce_single":
                assert all(item["status"] != "fail" for item in items), (host, items)
    for host, items in checks(throttled, "benchmarks.pair_search").items():
        if host == bad:
            assert [item["status"] for item in items] == ["fail"], (host, items)
            assert items[0]["message"].startswith("slow node: every pair with it is slow"), items[0]["message"]
        else:
            assert all(item["status"] == "pass" for item in items), (host, items)
    for host, items in checks(throttled, "bench_network.iperf3").items():
        if host == bad:
            assert any(item["status"] == "fail" and "slow host %s" % bad in item["message"] for item in items), (host, items)
        else:
            assert all(item["status"] != "fail" for item in items), (host, items)
    print("whole test: %.0f s" % (time.monotonic() - started))
