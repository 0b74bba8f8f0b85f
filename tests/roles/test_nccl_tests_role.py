# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/nccl_tests end to end with ansible-playbook on localhost, against a TEST DOUBLE of the
nccl-tests source: a small archive written here (nothing committed) whose Makefile takes
nccl-tests' make variables, records the values and origins it was called with into
``build/make-variables.txt``, appends its directory to a call log and writes
``build/all_reduce_perf`` as a shell script. The CUDA, NCCL and MPI homes are directories made
here (``bin/nvcc``, ``lib/libnccl.so`` + ``include/nccl.h``, ``include/mpi.h``) and ``mpicc`` a
script answering ``--showme:incdirs`` as Debian's Open MPI 4.1 does.

The GPUs come from gpu_facts run on replayed recordings (tests/replay/nodes/):
gpu-h100-590-1gpu (``nvidia-smi -q``: NVIDIA H100 80GB HBM3, compute capability 9.0),
gpu-a100-sxm4-80gb-composite (``-q -x``: NVIDIA A100-SXM4-80GB, 8.0) and
gpu-rtx4090-8x-sw-power-cap (``-q``: 8x NVIDIA GeForce RTX 4090, 8.9); NVIDIA's table
(https://developer.nvidia.com/cuda-gpus) gives the capabilities written below by hand.
"""

from __future__ import annotations

import io
import json
import os
import re
import tarfile

import pytest

MAKEFILE = """\
# TEST DOUBLE of nccl-tests' Makefile (written by tests/roles/test_nccl_tests_role.py)
LOG := {log}
.PHONY: default
default: build/all_reduce_perf
build/all_reduce_perf:
\tmkdir -p build
\tprintf 'MPI=%s origin=%s\\n' '$(MPI)' '$(origin MPI)' > build/make-variables.txt
\tprintf 'CUDA_HOME=%s origin=%s\\n' '$(CUDA_HOME)' '$(origin CUDA_HOME)' >> build/make-variables.txt
\tprintf 'NCCL_HOME=%s origin=%s\\n' '$(NCCL_HOME)' '$(origin NCCL_HOME)' >> build/make-variables.txt
\tprintf 'MPI_HOME=%s origin=%s\\n' '$(MPI_HOME)' '$(origin MPI_HOME)' >> build/make-variables.txt
\tprintf 'NVCC_GENCODE=%s origin=%s\\n' '$(NVCC_GENCODE)' '$(origin NVCC_GENCODE)' >> build/make-variables.txt
\tprintf '%s\\n' '$(CURDIR)' >> $(LOG)
\tprintf '#!/bin/sh\\necho all_reduce_perf test double {version}\\n' > $@
\tchmod 0755 $@
"""

NODES = {
    "h100": ("gpu-h100-590-1gpu.yml", ["text"], "-gencode=arch=compute_90,code=sm_90"),
    "a100": ("gpu-a100-sxm4-80gb-composite.yml", ["xml"], "-gencode=arch=compute_80,code=sm_80"),
    "rtx4090": ("gpu-rtx4090-8x-sw-power-cap.yml", ["text"], "-gencode=arch=compute_89,code=sm_89"),
}


def write_archive(path, version, log):
    """A source archive laid out as GitHub's (one top directory ``nccl-tests-<version>/``)."""
    with tarfile.open(path, "w:gz") as tar:
        for name, text, mode in (("Makefile", MAKEFILE.format(log=log, version=version), 0o644),
                                 ("README.md", "test double of nccl-tests %s\n" % version, 0o644)):
            data = text.encode()
            info = tarfile.TarInfo("nccl-tests-%s/%s" % (version, name))
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))


def write_exe(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o755)


@pytest.fixture(name="site")
def site_fixture(tmp_path):
    """Fake CUDA, NCCL and MPI homes, an mpicc, and a source archive of version 9.9.1."""
    root = tmp_path / "site"
    cuda, nccl, mpi = str(root / "cuda"), str(root / "nccl"), str(root / "openmpi")
    write_exe(os.path.join(cuda, "bin", "nvcc"), "#!/bin/sh\nexit 1\n")
    write_exe(os.path.join(nccl, "lib", "libnccl.so"), "")
    write_exe(os.path.join(nccl, "include", "nccl.h"), "#define NCCL_MAJOR 2\n")
    write_exe(os.path.join(mpi, "include", "mpi.h"), "")
    mpicc = str(root / "bin" / "mpicc")
    write_exe(mpicc, '#!/bin/sh\n[ "$1" = --showme:incdirs ] && echo "%s/include %s/include/openmpi" && exit 0\nexit 1\n' % (mpi, mpi))
    log = str(tmp_path / "make-calls.log")
    archives = {}
    for version in ("9.9.1", "9.9.2"):
        archives[version] = str(tmp_path / ("nccl-tests-%s.tar.gz" % version))
        write_archive(archives[version], version, log)
    return {"cuda": cuda, "nccl": nccl, "mpi": mpi, "mpicc": mpicc, "log": log, "archives": archives, "prefix": str(tmp_path / "opt")}


def role_vars(site, version="9.9.1", **extra):
    values = {
        "nccl_tests_version": version,
        "nccl_tests_source_archive": site["archives"][version],
        "nccl_tests_prefix": site["prefix"] + "/{{ inventory_hostname }}",
        # the install manifest goes under the test's prefix, never into this machine's /var/lib
        "nccl_tests_manifest_dir": site["prefix"] + "/{{ inventory_hostname }}/installed.d",
        "nccl_tests_cuda_home": site["cuda"],
        "nccl_tests_nccl_home_candidates": ["/nonexistent/nccl", site["nccl"]],
        "nccl_tests_mpicc": site["mpicc"],
        "nccl_tests_make_jobs": 2,
    }
    values.update(extra)
    return values


def tasks(variables):
    return [
        {"name": "GPUs from the recording", "gpufleet.acceptance.gpu_facts": {"nvidia_smi_path": "{{ replay_bin }}/nvidia-smi",
                                                                              "query_formats": "{{ formats }}", "nvlink": False}},
        {"name": "Build", "ansible.builtin.include_role": {"name": "gpufleet.acceptance.nccl_tests"}, "vars": variables},
        {"name": "Keep", "ansible.builtin.set_fact": {"dumped": {"nccl_tests": "{{ gpufleet_nccl_tests | default(None) }}"}}},
    ]


def hosts(node_file, names):
    return {name: {"node_file": node_file(NODES[name][0]), "vars": {"formats": NODES[name][1]}} for name in names}


def recap(stdout):
    """{host: (ok, changed, failed)} from PLAY RECAP."""
    return {m.group(1): (int(m.group(2)), int(m.group(3)), int(m.group(5)))
            for m in re.finditer(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", stdout, re.M)}


def changed_tasks(stdout):
    """[(task, host)] reported ``changed``, without the runner's own dump task."""
    found, task = [], None
    for line in stdout.splitlines():
        head = re.match(r"^TASK \[(.*)\] \*+$", line)
        if head:
            task = head.group(1)
            continue
        hit = re.match(r"^changed: \[([^\]]+)\]", line)
        if hit and task != "Dump what the test reads":
            found.append((task, hit.group(1)))
    return found


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path, "r", encoding="utf-8") as handle:
        return handle.read().splitlines()


def test_exact_make_variables_idempotence_and_new_pin(tmp_path, node_file, site, run_playbook):
    names = ["h100", "a100", "rtx4090"]
    first = run_playbook(tmp_path / "run1", hosts(node_file, names), tasks(role_vars(site)))
    assert first.rc == 0, first.stdout + first.stderr
    for name in names:
        prefix = os.path.join(site["prefix"], name, "nccl-tests-9.9.1")
        # every variable on make's command line, with the values the role found
        assert read_lines(os.path.join(prefix, "build", "make-variables.txt")) == [
            "MPI=1 origin=command line",
            "CUDA_HOME=%s origin=command line" % site["cuda"],
            "NCCL_HOME=%s origin=command line" % site["nccl"],
            "MPI_HOME=%s origin=command line" % site["mpi"],
            "NVCC_GENCODE=%s origin=command line" % NODES[name][2],
        ]
        assert os.access(os.path.join(prefix, "build", "all_reduce_perf"), os.X_OK)
        fact = first.results[name]["nccl_tests"]
        assert fact["prefix"] == prefix and fact["all_reduce_perf"] == prefix + "/build/all_reduce_perf"
        assert fact["make_variables"]["NVCC_GENCODE"] == NODES[name][2]
        # the install manifest the benchmark playbooks read: the path the build made, not a guess
        with open(os.path.join(site["prefix"], name, "installed.d", "nccl_tests.json"), encoding="utf-8") as handle:
            manifest = json.load(handle)
        assert manifest == {"role": "gpufleet.acceptance.nccl_tests", "version": "9.9.1", "prefix": prefix, "bin_dir": prefix + "/build",
                            "binaries": {"all_reduce_perf": prefix + "/build/all_reduce_perf"}}
        assert ("gpufleet.acceptance.pinned_build : Pinned_build | Make nccl-tests 9.9.1", name) in changed_tasks(first.stdout)
    assert sorted(read_lines(site["log"])) == sorted(os.path.join(site["prefix"], name, "nccl-tests-9.9.1") for name in names)

    # same pin, same inputs: nothing changes, make is not run again
    second = run_playbook(tmp_path / "run2", hosts(node_file, names), tasks(role_vars(site)))
    assert second.rc == 0, second.stdout + second.stderr
    assert changed_tasks(second.stdout) == []
    assert [counts[2] for counts in recap(second.stdout).values()] == [0, 0, 0]
    assert len(read_lines(site["log"])) == 3

    # a new pin builds into a new prefix and leaves the old one
    third = run_playbook(tmp_path / "run3", hosts(node_file, ["h100"]), tasks(role_vars(site, version="9.9.2")))
    assert third.rc == 0, third.stdout + third.stderr
    new = os.path.join(site["prefix"], "h100", "nccl-tests-9.9.2")
    assert read_lines(site["log"])[-1] == new and len(read_lines(site["log"])) == 4
    with open(os.path.join(new, "build", "all_reduce_perf"), "r", encoding="utf-8") as handle:
        assert "test double 9.9.2" in handle.read()
    assert os.path.exists(os.path.join(site["prefix"], "h100", "nccl-tests-9.9.1", "build", "all_reduce_perf"))

    # other inputs for the same pin (a capability forced): rebuilt from a clean tree
    fourth = run_playbook(tmp_path / "run4", hosts(node_file, ["h100"]),
                          tasks(role_vars(site, version="9.9.2", nccl_tests_compute_capabilities=["90", "100"])))
    assert fourth.rc == 0, fourth.stdout + fourth.stderr
    assert read_lines(os.path.join(new, "build", "make-variables.txt"))[-1] == (
        "NVCC_GENCODE=-gencode=arch=compute_100,code=sm_100 -gencode=arch=compute_90,code=sm_90 origin=command line")
    assert len(read_lines(site["log"])) == 5


def test_check_mode_builds_nothing(tmp_path, node_file, site, run_playbook):
    run = run_playbook(tmp_path / "run", hosts(node_file, ["h100"]), tasks(role_vars(site)), extra_args=["--check"])
    assert run.rc == 0, run.stdout + run.stderr
    assert "nccl_tests: would build nccl-tests 9.9.1 into %s/h100/nccl-tests-9.9.1" % site["prefix"] in run.stdout
    assert changed_tasks(run.stdout) == [("gpufleet.acceptance.pinned_build : Pinned_build | Report what --check would build for nccl-tests 9.9.1", "h100")]
    assert not os.path.exists(site["prefix"])
    assert read_lines(site["log"]) == []


def test_preflight_names_missing_cuda_nccl_and_mpi(tmp_path, node_file, site, run_playbook):
    missing = role_vars(site, nccl_tests_cuda_home=str(tmp_path / "no-cuda"), nccl_tests_nccl_home_candidates=[str(tmp_path / "no-nccl")],
                        nccl_tests_mpicc=str(tmp_path / "no-mpicc"), nccl_tests_mpi_home_fallback=str(tmp_path / "no-mpi"))
    run = run_playbook(tmp_path / "run", hosts(node_file, ["h100"]), tasks(missing))
    assert run.rc != 0
    out = run.stdout
    assert "nccl_tests: CUDA toolkit not found: no %s/no-cuda/bin/nvcc." % tmp_path in out
    assert "apt-get install cuda-toolkit-12-4) or set nccl_tests_cuda_home" in out
    assert "nccl_tests: NCCL development files not found: no libnccl.so with nccl.h in %s/no-nccl." % tmp_path in out
    assert "apt-get install libnccl2 libnccl-dev), or set nccl_tests_install_nccl: true" in out
    assert "nccl_tests: MPI not found: no %s/no-mpi/include/mpi.h (%s/no-mpicc --showme:incdirs failed)." % (tmp_path, tmp_path) in out
    assert "apt-get install openmpi-bin libopenmpi-dev" in out
    # failed before anything was fetched or built
    assert not os.path.exists(site["prefix"]) and read_lines(site["log"]) == []

    # only NCCL missing: only NCCL is named
    run = run_playbook(tmp_path / "run2", hosts(node_file, ["h100"]), tasks(role_vars(site, nccl_tests_nccl_home_candidates=["/nonexistent"])))
    assert run.rc != 0
    assert "NCCL development files not found" in run.stdout
    assert "CUDA toolkit not found" not in run.stdout and "MPI not found" not in run.stdout


def test_nccl_home_from_host_facts_and_mpi_fallback(tmp_path, node_file, site, run_playbook):
    """NCCL's directory from gpufleet_host.versions.nccl.source (what host_facts reports), MPI from the
    fallback when mpicc is missing."""
    variables = role_vars(site, nccl_tests_nccl_home_candidates=[], nccl_tests_mpicc=str(tmp_path / "no-mpicc"),
                          nccl_tests_mpi_home_fallback=site["mpi"],
                          gpufleet_host={"versions": {"nccl": {"version": "2.18.3", "source": site["nccl"] + "/libnccl.so.2"}}})
    write_exe(os.path.join(site["nccl"], "libnccl.so"), "")
    run = run_playbook(tmp_path / "run", hosts(node_file, ["h100"]), tasks(variables))
    assert run.rc == 0, run.stdout + run.stderr
    made = read_lines(os.path.join(site["prefix"], "h100", "nccl-tests-9.9.1", "build", "make-variables.txt"))
    assert made[2] == "NCCL_HOME=%s origin=command line" % site["nccl"]
    assert made[3] == "MPI_HOME=%s origin=command line" % site["mpi"]


def test_unknown_gpu_and_missing_checksum_fail_early(tmp_path, node_file, site, run_playbook):
    # SYNTHETIC GPU facts: a Volta (7.0) the table does not list
    volta = {"gpus": [{"name": "NVIDIA TITAN V", "product_architecture": "Volta"}]}
    run = run_playbook(tmp_path / "run", {"volta": {"node_file": node_file("gpu-h100-590-1gpu.yml"), "vars": {"formats": ["text"]}}},
                       [{"name": "Build", "ansible.builtin.include_role": {"name": "gpufleet.acceptance.nccl_tests"},
                         "vars": dict(role_vars(site), gpufleet_gpu=volta)}])
    assert run.rc != 0
    assert "nccl_tests: no known compute capability for NVIDIA TITAN V (architecture Volta)." in run.stdout
    # the public archive without its checksum
    public = role_vars(site, nccl_tests_source_archive="")
    run = run_playbook(tmp_path / "run2", hosts(node_file, ["h100"]), tasks(public))
    assert run.rc != 0
    assert "nccl_tests: nccl_tests_source_checksum is required to download https://github.com/NVIDIA/nccl-tests/archive/refs/tags/v9.9.1.tar.gz" in run.stdout
    # a local archive whose sha256 is not the one given
    wrong = role_vars(site, nccl_tests_source_checksum="sha256:" + "0" * 64)
    run = run_playbook(tmp_path / "run3", hosts(node_file, ["h100"]), tasks(wrong))
    assert run.rc != 0
    assert "nccl_tests: the source archive %s on the controller has sha256:" % site["archives"]["9.9.1"] in run.stdout
    assert not os.path.exists(site["prefix"]) and read_lines(site["log"]) == []
