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
(https://developer.nvidia.com/cuda-gpus) gives the capabilities written below by hand. gpu_facts runs on the
recording in h100's first run and in the run that repeats it; the runs and hosts that are not about the GPU get
SYNTHETIC facts of the same H100 (a module run less each).

The playbook runs are made once (module-scoped fixtures) and read by the tests: one node, h100, is built, converged
again (nothing changes), given a new pin, then other inputs for that pin; the first of those runs also holds one node
per preflight refusal, each failing on its own; a fresh node is run with --check. Which compute capability the GPUs of
the A100 and RTX 4090 recordings get is checked in-process (gpu_facts' collector and fact builder, then the
compute_capability filter the role applies): the playbook run of h100 proves how the role turns it into NVCC_GENCODE.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile

import pytest

from ansible_collections.gpufleet.acceptance.plugins.filter.compute_capability import compute_capability
from ansible_collections.gpufleet.acceptance.plugins.module_utils.gpu_collect import collect
from gpufleet.facts.gpu import build_facts
from gpufleet.facts.raw import RawReader

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from ansible_output import changed_tasks, failures, recap  # noqa: E402  pylint: disable=import-error,wrong-import-position

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "replay"))

import build_fleet  # noqa: E402  pylint: disable=import-error,wrong-import-position

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

# node file, the nvidia-smi -q format gpu_facts reads from it, and the compute capability of its GPUs
NODES = {
    "h100": ("gpu-h100-590-1gpu.yml", ["text"], "90"),
    "a100": ("gpu-a100-sxm4-80gb-composite.yml", ["xml"], "80"),
    "rtx4090": ("gpu-rtx4090-8x-sw-power-cap.yml", ["text"], "89"),
}
H100_GENCODE = "-gencode=arch=compute_90,code=sm_90"
H100_FACTS = {"gpus": [{"name": "NVIDIA H100 80GB HBM3", "product_architecture": "Hopper"}]}  # SYNTHETIC


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


def make_site(root):
    """Fake CUDA, NCCL and MPI homes, an mpicc, a make call log and source archives of versions 9.9.1 and 9.9.2."""
    cuda, nccl, mpi = os.path.join(root, "cuda"), os.path.join(root, "nccl"), os.path.join(root, "openmpi")
    write_exe(os.path.join(cuda, "bin", "nvcc"), "#!/bin/sh\nexit 1\n")
    write_exe(os.path.join(nccl, "lib", "libnccl.so"), "")
    write_exe(os.path.join(nccl, "include", "nccl.h"), "#define NCCL_MAJOR 2\n")
    write_exe(os.path.join(mpi, "include", "mpi.h"), "")
    mpicc = os.path.join(root, "bin", "mpicc")
    write_exe(mpicc, '#!/bin/sh\n[ "$1" = --showme:incdirs ] && echo "%s/include %s/include/openmpi" && exit 0\nexit 1\n' % (mpi, mpi))
    log = os.path.join(root, "make-calls.log")
    archives = {}
    for version in ("9.9.1", "9.9.2"):
        archives[version] = os.path.join(root, "nccl-tests-%s.tar.gz" % version)
        write_archive(archives[version], version, log)
    return {"root": root, "cuda": cuda, "nccl": nccl, "mpi": mpi, "mpicc": mpicc, "log": log, "archives": archives,
            "prefix": os.path.join(root, "opt")}


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


# The role's variables are host variables: each host of one run can have its own. gpu_facts runs where the host
# names a recording format; a host without one brings its (SYNTHETIC) gpufleet_gpu as a variable.
TASKS = [
    {"name": "GPUs from the recording",
     "gpufleet.acceptance.gpu_facts": {"nvidia_smi_path": "{{ replay_bin }}/nvidia-smi",
                                       "query_formats": "{{ formats }}", "nvlink": False},
     "when": "formats is defined"},
    {"name": "Build", "ansible.builtin.include_role": {"name": "gpufleet.acceptance.nccl_tests"}},
    {"name": "Keep",
     "ansible.builtin.set_fact": {"dumped": {"nccl_tests": "{{ gpufleet_nccl_tests | default(None) }}"}}},
]

# Runs whose results no test reads end before the runner's dump (a copy on every host: two module runs a host).
UNREAD = TASKS + [{"name": "End before the runner's dump (no test reads this run's results)",
                   "ansible.builtin.meta": "end_play"}]


def h100(node_file, variables, formats=True):
    """The h100 node with the role's ``variables``: its recording's GPUs (gpu_facts), or with ``formats`` false the
    SYNTHETIC facts of that GPU, where the run is not about the GPU."""
    gpus = {"formats": NODES["h100"][1]} if formats else {"gpufleet_gpu": H100_FACTS}
    return {"node_file": node_file(NODES["h100"][0]), "vars": dict(variables, **gpus)}


def read_lines(path):
    if not os.path.exists(path):
        return []
    with open(path, "r", encoding="utf-8") as handle:
        return handle.read().splitlines()


def read_json(path):
    """The JSON file at ``path``, None when there is none (a failed run: the test's assertion says so)."""
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture(name="built", scope="module")
def built_fixture(tmp_path_factory, node_file, run_playbook):
    """The four runs of h100 (site ``site``), the refused nodes beside its first (site ``refused_site``), and what
    the make call log and the install manifest held after each run that later runs change."""
    base = tmp_path_factory.mktemp("nccl-tests")
    site, refused = make_site(str(base / "site")), make_site(str(base / "refused"))
    gone = str(base / "refused")  # the missing homes of the refused nodes are named under it
    refused_hosts = {
        "missing-all": h100(node_file, role_vars(
            refused, nccl_tests_cuda_home=gone + "/no-cuda", nccl_tests_nccl_home_candidates=[gone + "/no-nccl"],
            nccl_tests_mpicc=gone + "/no-mpicc", nccl_tests_mpi_home_fallback=gone + "/no-mpi"), formats=False),
        "missing-nccl": h100(node_file, role_vars(refused, nccl_tests_nccl_home_candidates=["/nonexistent"]),
                             formats=False),
        # SYNTHETIC GPU facts: a Volta (7.0) the table does not list
        "volta": {"node_file": node_file(NODES["h100"][0]), "vars": dict(
            role_vars(refused), gpufleet_gpu={"gpus": [{"name": "NVIDIA TITAN V", "product_architecture": "Volta"}]})},
        # the public archive without its checksum
        "public": h100(node_file, role_vars(refused, nccl_tests_source_archive=""), formats=False),
        # a local archive whose sha256 is not the one given
        "wrong-checksum": h100(node_file, role_vars(refused, nccl_tests_source_checksum="sha256:" + "0" * 64),
                               formats=False),
    }
    out = {"site": site, "refused_site": refused, "gone": gone, "log": {}}
    out["first"] = run_playbook(base / "first", dict({"h100": h100(node_file, role_vars(site))}, **refused_hosts),
                                TASKS)
    out["log"]["first"] = read_lines(site["log"])
    out["manifest_after_first"] = read_json(os.path.join(site["prefix"], "h100", "installed.d", "nccl_tests.json"))
    # same pin, same inputs
    out["again"] = run_playbook(base / "again", {"h100": h100(node_file, role_vars(site))}, UNREAD)
    out["log"]["again"] = read_lines(site["log"])
    # a new pin
    out["new_pin"] = run_playbook(base / "new-pin", {"h100": h100(node_file, role_vars(site, version="9.9.2"),
                                                                  formats=False)}, UNREAD)
    out["log"]["new_pin"] = read_lines(site["log"])
    out["new_binary"] = read_lines(os.path.join(site["prefix"], "h100", "nccl-tests-9.9.2", "build", "all_reduce_perf"))
    # other inputs for the same pin: a capability forced; NCCL's directory from gpufleet_host.versions.nccl.source (what
    # host_facts reports) and MPI from the fallback when mpicc is missing, which find the same homes as before
    write_exe(os.path.join(site["nccl"], "libnccl.so"), "")
    out["other_inputs"] = run_playbook(base / "other-inputs", {"h100": h100(node_file, role_vars(
        site, version="9.9.2", nccl_tests_compute_capabilities=["90", "100"], nccl_tests_nccl_home_candidates=[],
        nccl_tests_mpicc=str(base / "no-mpicc"), nccl_tests_mpi_home_fallback=site["mpi"],
        gpufleet_host={"versions": {"nccl": {"version": "2.18.3", "source": site["nccl"] + "/libnccl.so.2"}}}),
        formats=False)}, UNREAD)
    out["log"]["other_inputs"] = read_lines(site["log"])
    return out


def test_exact_make_variables_idempotence_and_new_pin(built):
    site, first = built["site"], built["first"]
    assert recap(first.stdout)["h100"][2] == 0, first.stdout + first.stderr
    name = "h100"
    prefix = os.path.join(site["prefix"], name, "nccl-tests-9.9.1")
    # every variable on make's command line, with the values the role found
    assert read_lines(os.path.join(prefix, "build", "make-variables.txt")) == [
        "MPI=1 origin=command line",
        "CUDA_HOME=%s origin=command line" % site["cuda"],
        "NCCL_HOME=%s origin=command line" % site["nccl"],
        "MPI_HOME=%s origin=command line" % site["mpi"],
        "NVCC_GENCODE=%s origin=command line" % H100_GENCODE,
    ]
    assert os.access(os.path.join(prefix, "build", "all_reduce_perf"), os.X_OK)
    fact = first.results[name]["nccl_tests"]
    assert fact["prefix"] == prefix and fact["all_reduce_perf"] == prefix + "/build/all_reduce_perf"
    assert fact["make_variables"]["NVCC_GENCODE"] == H100_GENCODE
    # the install manifest the benchmark playbooks read: the path the build made, not a guess
    manifest = built["manifest_after_first"]
    assert manifest == {"role": "gpufleet.acceptance.nccl_tests", "version": "9.9.1", "prefix": prefix,
                        "bin_dir": prefix + "/build",
                        "binaries": {"all_reduce_perf": prefix + "/build/all_reduce_perf"}}
    assert (("gpufleet.acceptance.pinned_build : Pinned_build | Make nccl-tests 9.9.1", name)
            in changed_tasks(first.stdout))
    assert built["log"]["first"] == [os.path.join(site["prefix"], "h100", "nccl-tests-9.9.1")]

    # same pin, same inputs: nothing changes, make is not run again
    second = built["again"]
    assert second.rc == 0, second.stdout + second.stderr
    assert changed_tasks(second.stdout) == []
    assert [counts[2] for counts in recap(second.stdout).values()] == [0]
    assert len(built["log"]["again"]) == 1

    # a new pin builds into a new prefix and leaves the old one
    third = built["new_pin"]
    assert third.rc == 0, third.stdout + third.stderr
    new = os.path.join(site["prefix"], "h100", "nccl-tests-9.9.2")
    assert built["log"]["new_pin"][-1] == new and len(built["log"]["new_pin"]) == 2
    assert "echo all_reduce_perf test double 9.9.2" in built["new_binary"]
    assert os.path.exists(os.path.join(site["prefix"], "h100", "nccl-tests-9.9.1", "build", "all_reduce_perf"))

    # other inputs for the same pin (a capability forced): rebuilt from a clean tree
    fourth = built["other_inputs"]
    assert fourth.rc == 0, fourth.stdout + fourth.stderr
    assert read_lines(os.path.join(new, "build", "make-variables.txt"))[-1] == (
        "NVCC_GENCODE=-gencode=arch=compute_100,code=sm_100 -gencode=arch=compute_90,code=sm_90 origin=command line")
    assert len(built["log"]["other_inputs"]) == 3


def test_the_gpus_of_other_recordings_get_their_compute_capability(tmp_path):
    """What the role's gencode is made of, for the A100 (``-q -x``) and RTX 4090 (``-q``) recordings: gpu_facts'
    collector on the replayed node, its fact builder, then compute_capability on every GPU (as the role applies it)."""
    for name in ("a100", "rtx4090"):
        node, formats, capability = NODES[name]
        layout = build_fleet.build_node(os.path.join(REPO_ROOT, "tests", "replay", "nodes", node), str(tmp_path))
        raw = collect(os.path.join(layout["bin_dir"], "nvidia-smi"), os.path.join(layout["bin_dir"], "lspci"), 30,
                      query_formats=formats, nvlink=False)
        gpus = build_facts(RawReader(name, raw))["gpufleet_gpu"]["gpus"]
        assert gpus and sorted({compute_capability(gpu) for gpu in gpus}) == [capability], (name, gpus)


@pytest.fixture(name="checked", scope="module")
def checked_fixture(tmp_path_factory, node_file, run_playbook):
    """A fresh h100 run with --check: ``(site, run)``."""
    base = tmp_path_factory.mktemp("nccl-tests-check")
    site = make_site(str(base / "site"))
    return site, run_playbook(base / "run", {"h100": h100(node_file, role_vars(site), formats=False)}, UNREAD,
                              extra_args=["--check"])


def test_check_mode_builds_nothing(checked):
    site, run = checked
    assert run.rc == 0, run.stdout + run.stderr
    assert "nccl_tests: would build nccl-tests 9.9.1 into %s/h100/nccl-tests-9.9.1" % site["prefix"] in run.stdout
    assert changed_tasks(run.stdout) == [("gpufleet.acceptance.pinned_build : Pinned_build | Report what --check would build for nccl-tests 9.9.1", "h100")]
    assert not os.path.exists(site["prefix"])
    assert read_lines(site["log"]) == []


def test_preflight_names_missing_cuda_nccl_and_mpi(built):
    gone, run = built["gone"], built["first"]
    assert run.rc != 0
    out = failures(run.stdout)["missing-all"]
    assert "nccl_tests: CUDA toolkit not found: no %s/no-cuda/bin/nvcc." % gone in out
    assert "apt-get install cuda-toolkit-12-4) or set nccl_tests_cuda_home" in out
    assert "nccl_tests: NCCL development files not found: no libnccl.so with nccl.h in %s/no-nccl." % gone in out
    assert "apt-get install libnccl2 libnccl-dev), or set nccl_tests_install_nccl: true" in out
    assert ("nccl_tests: MPI not found: no %s/no-mpi/include/mpi.h (%s/no-mpicc --showme:incdirs failed)."
            % (gone, gone) in out)
    assert "apt-get install openmpi-bin libopenmpi-dev" in out
    # failed before anything was fetched or built
    refused = built["refused_site"]
    assert not os.path.exists(refused["prefix"]) and read_lines(refused["log"]) == []

    # only NCCL missing: only NCCL is named
    only_nccl = failures(run.stdout)["missing-nccl"]
    assert recap(run.stdout)["missing-nccl"][2] == 1
    assert "NCCL development files not found" in only_nccl
    assert "CUDA toolkit not found" not in only_nccl and "MPI not found" not in only_nccl


def test_nccl_home_from_host_facts_and_mpi_fallback(built):
    """NCCL's directory from gpufleet_host.versions.nccl.source (what host_facts reports), MPI from the
    fallback when mpicc is missing (the fourth run of h100)."""
    site, run = built["site"], built["other_inputs"]
    assert run.rc == 0, run.stdout + run.stderr
    made = read_lines(os.path.join(site["prefix"], "h100", "nccl-tests-9.9.2", "build", "make-variables.txt"))
    assert made[2] == "NCCL_HOME=%s origin=command line" % site["nccl"]
    assert made[3] == "MPI_HOME=%s origin=command line" % site["mpi"]


def test_unknown_gpu_and_missing_checksum_fail_early(built):
    run, refused = built["first"], built["refused_site"]
    failed = failures(run.stdout)
    assert recap(run.stdout)["volta"][2] == 1
    assert "nccl_tests: no known compute capability for NVIDIA TITAN V (architecture Volta)." in failed["volta"]
    # the public archive without its checksum
    assert recap(run.stdout)["public"][2] == 1
    assert ("nccl_tests: nccl_tests_source_checksum is required to download "
            "https://github.com/NVIDIA/nccl-tests/archive/refs/tags/v9.9.1.tar.gz") in failed["public"]
    # a local archive whose sha256 is not the one given
    assert recap(run.stdout)["wrong-checksum"][2] == 1
    assert ("nccl_tests: the source archive %s on the controller has sha256:" % refused["archives"]["9.9.1"]
            in failed["wrong-checksum"])
    assert not os.path.exists(refused["prefix"]) and read_lines(refused["log"]) == []
