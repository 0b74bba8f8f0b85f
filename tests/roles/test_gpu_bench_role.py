# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/gpu_bench end to end with ansible-playbook on localhost: the build on the node, the build once on the
controller or a named build host with the binary and its libcublasLt copied to every node, the preflight's refusals,
the manifest, idempotence and check mode.

The CUDA toolkit is a TEST DOUBLE made here (nothing committed): ``cuda/bin/nvcc`` is a script that logs its argv (one
JSON line a call), refuses a ``.cu`` whose ``#include "..."`` is not beside it or a missing ``cublasLt.h``, and links a
small C program with gcc instead (the ``-o``, ``-L``, ``-l`` and ``-Xlinker`` arguments it was given): a real ELF that
needs ``libcublasLt.so.99`` and prints a line. ``cuda/lib64`` holds a real shared library built by gcc with the
SONAME ``libcublasLt.so.99`` in ``libcublasLt.so.99.1.2.3``, linked as a toolkit links it (``libcublasLt.so`` ->
``libcublasLt.so.99`` -> the file), ``cuda/include`` a ``cublasLt.h`` and a ``cublas_api.h`` with the version
defines. So readelf, the rpath and the node's loader (ldd, and running the copied binary) are the real ones; nvcc's
compilation of gpubench.cu is not (tests/unit/roles/test_gpubench_compile.py compiles it with the real nvcc).

The GPUs come from gpu_facts on the replayed H100 recording (compute capability 9.0); the others are SYNTHETIC
gpufleet_gpu facts (an A100, 8.0; a TITAN V, which the table does not know). The nodes and the build host are all
this machine, each with its own prefix, so "the node has no toolkit" is shown by what the copied binary resolves
(its own lib/), not by a node without one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from ansible_output import changed_tasks, failures, recap  # noqa: E402  pylint: disable=import-error,wrong-import-position

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
with open(os.path.join(REPO_ROOT, "roles", "gpu_bench", "defaults", "main.yml"), encoding="utf-8") as _handle:
    DEFAULTS = yaml.safe_load(_handle)
VERSION = str(DEFAULTS["gpu_bench_version"])
H100 = ("gpu-h100-590-1gpu.yml", ["text"])
A100_FACTS = {"gpus": [{"name": "NVIDIA A100-SXM4-80GB", "product_architecture": "Ampere"}]}  # SYNTHETIC
STUB_LINE = "gpubench TEST DOUBLE linked with cublasLt 99"

NVCC = '''\
#!{python}
# TEST DOUBLE of nvcc (tests/roles/test_gpu_bench_role.py): logs its argv, checks the sources and headers, links a
# C stub with gcc against the -L/-l/-Xlinker arguments given.
import json, os, re, subprocess, sys
args = sys.argv[1:]
with open({log!r}, "a") as handle:
    handle.write(json.dumps(sys.argv) + "\\n")
out = args[args.index("-o") + 1]
sources = [arg for arg in args if arg.endswith(".cu")]
includes = [arg[2:] for arg in args if arg.startswith("-I")]
for source in sources:
    for name in re.findall(r'^#include "([^"]+)"', open(source).read(), re.M):
        if not os.path.exists(os.path.join(os.path.dirname(source), name)):
            sys.exit("%s: fatal error: %s: No such file or directory" % (source, name))
if not any(os.path.exists(os.path.join(path, "cublasLt.h")) for path in includes):
    sys.exit("fatal error: cublasLt.h: No such file or directory")
link = [arg for arg in args if arg.startswith(("-L", "-l"))]
link += ["-Wl," + args[index + 1] for index, arg in enumerate(args) if arg == "-Xlinker"]
stub = out + ".stub.c"
with open(stub, "w") as handle:
    handle.write('#include <stdio.h>\\nint cublasLtTestDouble(void);\\n'
                 'int main(void) {{ printf("{stub_line}\\\\n"); return cublasLtTestDouble(); }}\\n')
sys.exit(subprocess.call(["gcc", "-o", out, stub] + link))
'''


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, mode)


def make_toolkit(root, header=True):
    """A TEST DOUBLE CUDA toolkit under ``root``/cuda (see the module docstring); ``root``/nvcc-calls.log."""
    cuda, log = os.path.join(root, "cuda"), os.path.join(root, "nvcc-calls.log")
    write(os.path.join(cuda, "bin", "nvcc"), NVCC.format(python=sys.executable, log=log, stub_line=STUB_LINE), 0o755)
    lib64 = os.path.join(cuda, "lib64")
    os.makedirs(lib64)
    write(os.path.join(root, "fake_cublaslt.c"), "int cublasLtTestDouble(void) { return 0; }\n")
    real = os.path.join(lib64, "libcublasLt.so.99.1.2.3")
    subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcublasLt.so.99", "-o", real,
                    os.path.join(root, "fake_cublaslt.c")], check=True, timeout=120)
    os.symlink("libcublasLt.so.99.1.2.3", os.path.join(lib64, "libcublasLt.so.99"))
    os.symlink("libcublasLt.so.99", os.path.join(lib64, "libcublasLt.so"))
    if header:
        write(os.path.join(cuda, "include", "cublasLt.h"), "/* TEST DOUBLE */\n")
    write(os.path.join(cuda, "include", "cublas_api.h"), "/* TEST DOUBLE */\n" + "".join(
        "#define CUBLAS_VER_%s %s\n" % item for item in (("MAJOR", 99), ("MINOR", 1), ("PATCH", 2), ("BUILD", 3))))
    return {"root": root, "cuda": cuda, "log": log, "real": real}


def nvcc_calls(site):
    if not os.path.exists(site["log"]):
        return []
    with open(site["log"], encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def role_vars(site, prefix, **extra):
    values = {
        "gpu_bench_prefix": prefix + "/{{ inventory_hostname }}",
        # the install manifest goes under the test's prefix, never into this machine's /var/lib
        "gpu_bench_manifest_dir": prefix + "/{{ inventory_hostname }}/installed.d",
        "gpu_bench_cuda_home": site["cuda"],
        "gpu_bench_build_dir": site["root"] + "/build-dir",
    }
    values.update(extra)
    return values


TASKS = [
    {"name": "GPUs from the recording",
     "gpufleet.acceptance.gpu_facts": {"nvidia_smi_path": "{{ replay_bin }}/nvidia-smi",
                                       "query_formats": "{{ formats }}", "nvlink": False},
     "when": "formats is defined"},
    {"name": "Build", "ansible.builtin.include_role": {"name": "gpufleet.acceptance.gpu_bench"}},
    {"name": "Keep", "ansible.builtin.set_fact": {"dumped": {"gpu_bench": "{{ gpufleet_gpu_bench | default(None) }}"}}},
]


def host(node_file, variables, formats=True):
    """A host on the replayed H100 recording; with ``formats`` gpu_facts reads its GPU from it."""
    spec = {"node_file": node_file(H100[0]), "vars": dict(variables)}
    if formats:
        spec["vars"]["formats"] = H100[1]
    return spec


def read_json(path):
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def run_binary(path):
    return subprocess.run([path], capture_output=True, text=True, timeout=30, check=False)


def runpath(path):
    dynamic = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, timeout=30, check=True).stdout
    return re.findall(r"\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[([^\]]*)\]", dynamic)


def gencode_of(argv):
    return [word for index, word in enumerate(argv) if word == "-gencode" or argv[index - 1] == "-gencode"]


def source_names():
    return ["gpubench.cu"] + sorted(name for name in os.listdir(os.path.join(REPO_ROOT, "roles", "gpu_bench", "files"))
                                    if name.endswith(".h"))


# --- the build on the node ------------------------------------------------------------------------------------------


@pytest.fixture(name="on_node", scope="module")
def on_node_fixture(tmp_path_factory, node_file, run_playbook):
    """One run of the node route: three nodes that build and four refused each on its own; then the first again, and
    a node whose toolkit lost its libcublasLt since."""
    base = tmp_path_factory.mktemp("gpu-bench-node")
    site = make_toolkit(str(base / "site"))
    no_header = make_toolkit(str(base / "no-header"), header=False)
    lost = make_toolkit(str(base / "lost"))
    prefix, gone = str(base / "opt"), str(base / "gone")
    hosts = {
        "h100": host(node_file, role_vars(site, prefix)),
        # no GPU facts: the shipped portable gencode
        "nofacts": host(node_file, role_vars(site, prefix), formats=False),
        "no-toolkit": host(node_file, role_vars(site, prefix, gpu_bench_cuda_home=gone + "/cuda")),
        "no-header": host(node_file, role_vars(no_header, prefix)),
        # SYNTHETIC GPU facts: a Volta (7.0) the table does not know
        "volta": host(node_file, role_vars(site, prefix, gpufleet_gpu={
            "gpus": [{"name": "NVIDIA TITAN V", "product_architecture": "Volta"}]}), formats=False),
        "bad-route": host(node_file, role_vars(site, prefix, gpu_bench_build_on="nowhere")),
        "lost-lib": host(node_file, role_vars(lost, prefix)),
    }
    out = {"site": site, "no_header": no_header, "lost": lost, "prefix": prefix, "gone": gone}
    out["first"] = run_playbook(base / "first", hosts, TASKS)
    out["calls_first"] = nvcc_calls(site)
    # the versioned library gone, an unversioned file left where the preflight looks
    for name in os.listdir(os.path.join(lost["cuda"], "lib64")):
        os.unlink(os.path.join(lost["cuda"], "lib64", name))
    write(os.path.join(lost["cuda"], "lib64", "libcublasLt.so"), "")
    out["again"] = run_playbook(base / "again", {"h100": hosts["h100"], "lost-lib": hosts["lost-lib"]}, TASKS)
    out["calls_again"] = nvcc_calls(site)
    return out


def test_node_builds_with_the_shipped_flags_and_ptx_of_its_gpu(on_node):
    site, prefix, run = on_node["site"], on_node["prefix"], on_node["first"]
    assert recap(run.stdout)["h100"][2] == 0, run.stdout + run.stderr
    install = os.path.join(prefix, "h100", "gpubench-%s" % VERSION)
    [argv] = [call for call in on_node["calls_first"] if install + "/bin/gpubench" in call]
    assert argv == ([site["cuda"] + "/bin/nvcc"] + DEFAULTS["gpu_bench_cflags"]
                    + ["-gencode", "arch=compute_90,code=[sm_90,compute_90]", "-I" + site["cuda"] + "/include",
                       "-L" + site["cuda"] + "/lib64", "-Xlinker", "-rpath=" + site["cuda"] + "/lib64",
                       "-o", install + "/bin/gpubench", install + "/src/gpubench.cu", "-lcublasLt"])
    # every source beside gpubench.cu (it includes them), and the stamp's hash covers each
    assert sorted(os.listdir(os.path.join(install, "src"))) == sorted(source_names())
    stamp = read_json(os.path.join(install, ".gpufleet-build.json"))
    assert sorted(stamp["sources_sha256"]) == sorted(source_names()) and stamp["argv"] == argv
    assert run_binary(install + "/bin/gpubench").stdout.strip() == STUB_LINE
    manifest = read_json(os.path.join(prefix, "h100", "installed.d", "gpu_bench.json"))
    assert manifest == {
        "role": "gpufleet.acceptance.gpu_bench", "version": VERSION, "prefix": install, "bin_dir": install + "/bin",
        "binaries": {"gpubench": install + "/bin/gpubench"}, "built_on": "node", "build_host": "h100",
        "gencode": ["-gencode", "arch=compute_90,code=[sm_90,compute_90]"],
        "cublaslt": {"soname": "libcublasLt.so.99", "version": "99.1.2.3", "built_against": site["real"],
                     "library": site["cuda"] + "/lib64/libcublasLt.so.99"}}
    assert run.results["h100"]["gpu_bench"]["gpubench"] == install + "/bin/gpubench"


def test_a_node_without_gpu_facts_builds_the_default_gencode(on_node):
    run, prefix = on_node["first"], on_node["prefix"]
    assert recap(run.stdout)["nofacts"][2] == 0, run.stdout
    install = os.path.join(prefix, "nofacts", "gpubench-%s" % VERSION)
    [argv] = [call for call in on_node["calls_first"] if install + "/bin/gpubench" in call]
    assert gencode_of(argv) == DEFAULTS["gpu_bench_default_gencode"] == [
        "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90",
        "-gencode", "arch=compute_100,code=[sm_100,compute_100]"]
    assert DEFAULTS["gpu_bench_cflags"] == ["-O2", "-std=c++17", "-Xcompiler=-Wall,-Wextra"]


def test_same_inputs_build_nothing_again(on_node):
    run = on_node["again"]
    assert recap(run.stdout)["h100"][2] == 0, run.stdout + run.stderr
    assert [task for task, name in changed_tasks(run.stdout) if name == "h100"] == []
    assert len(on_node["calls_again"]) == len(on_node["calls_first"]) == 2


def test_a_binary_whose_library_is_gone_is_not_recorded(on_node):
    """The loader must find cuBLASLt on the node: the toolkit's versioned library removed since the build (the
    preflight still finds a libcublasLt.so, the stamp still matches), and ldd says what is missing."""
    run, lost = on_node["again"], on_node["lost"]
    assert recap(on_node["first"].stdout)["lost-lib"][2] == 0
    msg = failures(run.stdout)["lost-lib"]
    install = os.path.join(on_node["prefix"], "lost-lib", "gpubench-%s" % VERSION)
    assert msg == ("gpu_bench on lost-lib: %s/bin/gpubench cannot start here: the loader does not find "
                   "libcublasLt.so.99 (ldd). It was linked against %s/lib64 (rpath): reinstall cuBLASLt there, or set "
                   "gpu_bench_build_on: controller to ship the library with the binary." % (install, lost["cuda"])), msg


def test_preflight_names_what_is_missing_on_the_node_and_the_fix(on_node):
    run, gone, no_header = on_node["first"], on_node["gone"], on_node["no_header"]
    failed = failures(run.stdout)
    for name in ("no-toolkit", "no-header", "volta", "bad-route"):
        assert recap(run.stdout)[name][2] == 1, (name, run.stdout)
        # failed before anything was built
        assert not os.path.exists(os.path.join(on_node["prefix"], name)), name
    msg = failed["no-toolkit"]
    assert msg.startswith("gpu_bench on no-toolkit: cannot build gpubench on this node: no nvcc at %s/cuda/bin/nvcc; "
                          "no cublasLt.h under %s/cuda/include; no libcublasLt.so (cuBLASLt) in %s/cuda/lib64. "
                          "Fix: install the CUDA toolkit" % (gone, gone, gone)), msg
    assert "gpu_bench_build_on: controller (or the inventory name of a host with nvcc)" in msg
    only = failed["no-header"]
    assert ("cannot build gpubench on this node: no cublasLt.h under %s/cuda/include. Fix:" % no_header["root"]
            in only), only
    assert "no nvcc" not in only and "no libcublasLt" not in only
    assert nvcc_calls(no_header) == []
    assert failed["volta"].startswith("gpu_bench on volta: no known compute capability for NVIDIA TITAN V."), failed
    assert "gpu_bench_default_gencode" in failed["volta"]
    assert ("gpu_bench_build_on node, controller or the inventory name of a host with a CUDA toolkit (got nowhere)"
            in failed["bad-route"]), failed["bad-route"]


# --- the build once, copied to every node ---------------------------------------------------------------------------


@pytest.fixture(name="copied", scope="module")
def copied_fixture(tmp_path_factory, node_file, run_playbook):
    """The controller route (a first host that skips the role, an H100 and an A100 node), again; a named build host;
    check mode; a controller without the toolkit; hosts of one play on different routes."""
    base = tmp_path_factory.mktemp("gpu-bench-copy")
    site = make_toolkit(str(base / "site"))
    out = {"site": site, "prefix": {}}

    def fleet(label, build_on, **extra):
        prefix = out["prefix"].setdefault(label, str(base / ("opt-" + label)))
        variables = role_vars(site, prefix, gpu_bench_build_on=build_on, **extra)
        return {
            # first in the inventory (hosts are sorted): a host that skips the role must not stop the shared build
            "a-disabled": host(node_file, dict(variables, gpu_bench_enabled=False)),
            "n1": host(node_file, variables),
            "n2": host(node_file, dict(variables, gpufleet_gpu=A100_FACTS), formats=False),
        }

    out["controller"] = run_playbook(base / "controller", fleet("controller", "controller"), TASKS)
    out["calls_controller"] = nvcc_calls(site)
    out["controller_again"] = run_playbook(base / "controller-again", fleet("controller", "controller"), TASKS)
    out["calls_controller_again"] = nvcc_calls(site)
    named = fleet("named", "builder", gpu_bench_build_dir=str(base / "named-build"))
    named["builder"] = host(node_file, named["n1"]["vars"])
    out["named_build"] = str(base / "named-build")
    out["named"] = run_playbook(base / "named", named, TASKS)
    out["calls_named"] = nvcc_calls(site)
    out["check"] = run_playbook(base / "check", fleet("check", "controller", gpu_bench_build_dir=str(base / "check-build")),
                                TASKS, extra_args=["--check"])
    out["calls_check"] = nvcc_calls(site)
    out["gone"] = str(base / "gone")
    out["refused"] = run_playbook(base / "refused", fleet("refused", "controller", gpu_bench_cuda_home=out["gone"]),
                                  TASKS)
    out["mixed_build"] = str(base / "mixed-build")
    mixed = fleet("mixed", "controller", gpu_bench_build_dir=out["mixed_build"])
    mixed["n2"]["vars"]["gpu_bench_build_on"] = "node"
    out["mixed"] = run_playbook(base / "mixed", mixed, TASKS)
    out["calls_end"] = nvcc_calls(site)
    return out


def test_controller_builds_once_for_every_gpu_and_copies_binary_and_library(copied):
    site, run = copied["site"], copied["controller"]
    assert run.rc == 0, run.stdout + run.stderr
    build = site["root"] + "/build-dir/gpubench-%s" % VERSION
    [argv] = copied["calls_controller"]
    # the capabilities of every node of the play (A100 8.0, H100 9.0), the highest also as PTX
    assert gencode_of(argv) == ["-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=[sm_90,compute_90]"]
    assert argv[1:1 + len(DEFAULTS["gpu_bench_cflags"])] == DEFAULTS["gpu_bench_cflags"]
    assert argv[argv.index("-Xlinker") + 1] == "-rpath=$ORIGIN/../lib" and argv[argv.index("-o") + 1] == build + "/bin/gpubench"
    with open(site["real"], "rb") as handle:
        library = handle.read()
    prefix = copied["prefix"]["controller"]
    for name in ("n1", "n2"):
        install = os.path.join(prefix, name, "gpubench-%s" % VERSION)
        binary = install + "/bin/gpubench"
        with open(os.path.join(install, "lib", "libcublasLt.so.99"), "rb") as handle:
            assert handle.read() == library
        assert runpath(binary) == ["$ORIGIN/../lib"]
        assert run_binary(binary).stdout.strip() == STUB_LINE
        assert not os.path.exists(os.path.join(install, ".gpufleet-build.json"))
        manifest = read_json(os.path.join(prefix, name, "installed.d", "gpu_bench.json"))
        assert manifest["binaries"] == {"gpubench": binary}, manifest
        assert (manifest["built_on"], manifest["build_host"]) == ("controller", "localhost")
        assert manifest["gencode"] == gencode_of(argv)
        assert manifest["cublaslt"] == {"soname": "libcublasLt.so.99", "version": "99.1.2.3", "built_against": site["real"],
                                        "library": install + "/lib/libcublasLt.so.99"}
    # the host that skips the role got nothing, and did not keep the others from building
    assert not os.path.exists(os.path.join(prefix, "a-disabled"))


def test_controller_route_again_changes_nothing(copied):
    run = copied["controller_again"]
    assert run.rc == 0, run.stdout + run.stderr
    assert changed_tasks(run.stdout) == []
    assert len(copied["calls_controller_again"]) == 1


def test_a_named_build_host_builds_and_the_controller_relays(copied):
    site, run = copied["site"], copied["named"]
    assert run.rc == 0, run.stdout + run.stderr
    [argv] = copied["calls_named"][len(copied["calls_controller_again"]):]
    build = copied["named_build"] + "/gpubench-%s" % VERSION
    assert argv[argv.index("-o") + 1] == build + "/bin/gpubench"
    # the binary and library as the build host left them, and as the controller received them on their way
    assert os.path.exists(build + "/lib/libcublasLt.so.99")
    staged = copied["named_build"] + "/gpubench-%s-from-builder" % VERSION
    assert os.path.exists(staged + "/bin/gpubench") and os.path.exists(staged + "/lib/libcublasLt.so.99")
    prefix = copied["prefix"]["named"]
    for name in ("builder", "n1", "n2"):
        install = os.path.join(prefix, name, "gpubench-%s" % VERSION)
        assert run_binary(install + "/bin/gpubench").stdout.strip() == STUB_LINE, name
        manifest = read_json(os.path.join(prefix, name, "installed.d", "gpu_bench.json"))
        assert (manifest["built_on"], manifest["build_host"]) == ("build_host", "builder"), manifest
        assert manifest["cublaslt"]["library"] == install + "/lib/libcublasLt.so.99"


def test_check_mode_copies_and_builds_nothing(copied):
    run = copied["check"]
    assert run.rc == 0, run.stdout + run.stderr
    assert "gpu_bench: would build gpubench %s into " % VERSION in run.stdout
    assert "gpu_bench: would copy gpubench %s and its libcublasLt, built on localhost" % VERSION in run.stdout
    assert len(copied["calls_check"]) == len(copied["calls_named"])
    assert not os.path.exists(copied["prefix"]["check"])


def test_preflight_names_what_the_build_host_lacks_on_every_node(copied):
    run, gone = copied["refused"], copied["gone"]
    assert run.rc != 0
    failed = failures(run.stdout)
    for name in ("n1", "n2"):
        assert failed[name] == textwrap.dedent("""\
            gpu_bench on %s: cannot build gpubench on the build host localhost (gpu_bench_build_on: controller): no nvcc
            at %s/bin/nvcc; no cublasLt.h under %s/include; no libcublasLt.so (cuBLASLt) in %s/lib64. Fix: install the
            CUDA toolkit with its cuBLAS development files on localhost (e.g. apt-get install cuda-toolkit-12-4) or
            point gpu_bench_cuda_home, gpu_bench_cublas_include_dir and gpu_bench_cublas_lib_dir at them (paths on the
            build host); or set gpu_bench_build_on to a host that has them (node: each node builds with its own).
            """ % (name, gone, gone, gone)).replace("\n", " ").strip()
    assert not os.path.exists(copied["prefix"]["refused"])


def test_hosts_of_one_play_may_build_each_their_own_way(copied):
    """n1 from the controller, n2 with its own toolkit, in one play."""
    site, run, prefix = copied["site"], copied["mixed"], copied["prefix"]["mixed"]
    assert run.rc == 0, run.stdout + run.stderr
    built = {}
    for name in ("n1", "n2"):
        manifest = read_json(os.path.join(prefix, name, "installed.d", "gpu_bench.json"))
        built[name] = (manifest["built_on"], manifest["build_host"], manifest["gencode"], manifest["cublaslt"]["library"])
    install = os.path.join(prefix, "%s", "gpubench-%s")
    # each build for its own hosts' GPUs: n1 the H100 (9.0), n2 the A100 (8.0)
    assert built == {
        "n1": ("controller", "localhost", ["-gencode", "arch=compute_90,code=[sm_90,compute_90]"],
               install % ("n1", VERSION) + "/lib/libcublasLt.so.99"),
        "n2": ("node", "n2", ["-gencode", "arch=compute_80,code=[sm_80,compute_80]"], site["cuda"] + "/lib64/libcublasLt.so.99")}
    new_calls = copied["calls_end"][len(copied["calls_check"]):]
    assert sorted(call[call.index("-o") + 1] for call in new_calls) == sorted([
        install % ("n2", VERSION) + "/bin/gpubench", copied["mixed_build"] + "/gpubench-%s/bin/gpubench" % VERSION])
