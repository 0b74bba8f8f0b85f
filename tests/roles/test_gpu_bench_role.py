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

h100's GPU comes from gpu_facts on the replayed H100 recording (compute capability 9.0); the other hosts' are SYNTHETIC
gpufleet_gpu facts (an H100, 9.0; an A100, 8.0; a TITAN V, which the table does not know) or none. The nodes and the
build host are all this machine, each with its own prefix, so "the node has no toolkit" is shown by what the copied
binary resolves (its own lib/), not by a node without one.
"""

from __future__ import annotations

import importlib.util
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
H100_FACTS = {"gpus": [{"name": "NVIDIA H100 80GB HBM3", "product_architecture": "Hopper"}]}  # SYNTHETIC
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


# --- four runs of the role back every test below -------------------------------------------------------------------


def node_hosts(node_file, toolkits, base):
    """The node route: h100 builds with the GPU of the recording, lost-lib (no GPU facts) with the shipped default
    gencode and a toolkit that loses its libcublasLt before the second run."""
    prefix = str(base / "opt")
    return {
        "h100": host(node_file, role_vars(toolkits["node"], prefix)),
        "lost-lib": host(node_file, role_vars(toolkits["lost"], prefix), formats=False),
    }


def refused_node_hosts(node_file, toolkits, base):
    """The node route's preflight refusals, one host each (no GPU facts where the refusal is not about the GPU)."""
    site, prefix, gone = toolkits["node"], str(base / "opt"), str(base / "gone")
    return {
        "no-toolkit": host(node_file, role_vars(site, prefix, gpu_bench_cuda_home=gone + "/cuda"), formats=False),
        "no-header": host(node_file, role_vars(toolkits["no_header"], prefix), formats=False),
        # SYNTHETIC GPU facts: a Volta (7.0) the table does not know
        "volta": host(node_file, role_vars(site, prefix, gpufleet_gpu={
            "gpus": [{"name": "NVIDIA TITAN V", "product_architecture": "Volta"}]}), formats=False),
        "bad-route": host(node_file, role_vars(site, prefix, gpu_bench_build_on="nowhere"), formats=False),
    }


def copy_fleet(node_file, site, prefix, build_on, names=("n1", "n2"), **extra):
    """Nodes of a build host's route: a SYNTHETIC H100 node and a SYNTHETIC A100 node (gpu_facts is proven by h100)."""
    variables = role_vars(site, prefix, gpu_bench_build_on=build_on, **extra)
    fleet = {names[0]: host(node_file, dict(variables, gpufleet_gpu=H100_FACTS), formats=False)}
    if len(names) > 1:
        fleet[names[1]] = host(node_file, dict(variables, gpufleet_gpu=A100_FACTS), formats=False)
    return fleet


def load_runner():
    """tests/playbooks/conftest.py, loaded from its file as tests/roles/conftest.py loads it (not ``from conftest``)."""
    spec = importlib.util.spec_from_file_location("gpufleet_tests_playbooks_runner_gpu_bench",
                                                  os.path.join(REPO_ROOT, "tests", "playbooks", "conftest.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUNNER = load_runner()


def run_plays(tmp_dir, plays, extra_args=(), dump=False):
    """ansible-playbook, as the runner's run_playbook (tests/playbooks/conftest.py) runs its one play, on ``plays`` (a
    list of ``{name: {node_file, vars}}``), each a play of TASKS on its own hosts: every route's hosts of a play are
    one group, so scenarios on the same route need plays of their own. With ``dump``, what the tests read
    (``run.results``) is written once a play by the controller, not by a copy on every host (two module runs a host)."""
    os.makedirs(str(tmp_dir), exist_ok=True)
    inventory, playbook = {"all": {"hosts": {}}}, []
    for index, hosts in enumerate(plays):
        for name, spec in hosts.items():
            layout = RUNNER.build_fleet.build_node(spec["node_file"], str(tmp_dir / "fleet"))
            inventory["all"]["hosts"][name] = dict({
                "ansible_connection": "local", "ansible_python_interpreter": RUNNER.node_python(),
                "replay_bin": layout["bin_dir"], "replay_sysfs": layout["sysfs_root"]}, **spec["vars"])
        keep = [{"name": "Dump what the tests read, of every host of the play, in one file",
                 "run_once": True, "delegate_to": "localhost", "check_mode": False, "changed_when": False,
                 "ansible.builtin.copy": {
                     "content": "{{ dict(ansible_play_hosts | zip(ansible_play_hosts"
                                " | map('extract', hostvars, 'dumped'))) | to_json }}",
                     "dest": "%s/dumped-%d.json" % (tmp_dir, index), "mode": "0600"}}]
        playbook.append({"name": "Scenario %d" % index, "hosts": sorted(hosts), "gather_facts": False,
                         "tasks": TASKS + (keep if dump else [])})
    (tmp_dir / "inventory.yml").write_text(yaml.safe_dump(inventory))
    (tmp_dir / "play.yml").write_text(yaml.safe_dump(playbook, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(REPO_ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO_ROOT, "collections"),
               ANSIBLE_LOCAL_TEMP=str(tmp_dir / "ansible-local"), ANSIBLE_REMOTE_TEMP=str(tmp_dir / "ansible-remote"))
    cmd = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(tmp_dir / "inventory.yml"),
           str(tmp_dir / "play.yml")] + list(extra_args)
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    results = {}
    for index in range(len(plays)):
        results.update(read_json("%s/dumped-%d.json" % (tmp_dir, index)) or {})
    return RUNNER.PlaybookRun(proc, results)


@pytest.fixture(name="runs", scope="module")
def runs_fixture(tmp_path_factory, node_file):
    """Three runs (hosts of a play on different routes never share a build):

    - build: in one play, two nodes that build each their own, the controller route for an H100 and an A100 node
      after a host that skips the role, and a named build host for itself and an A100 node;
    - again: the node route's and the controller's nodes again, lost-lib's toolkit having lost its libcublasLt since,
      then, in a play of their own, the node route's preflight refusals and a controller without the toolkit (two
      nodes refused);
    - check: the controller route in check mode.
    """
    base = tmp_path_factory.mktemp("gpu-bench")
    toolkits = {name: make_toolkit(str(base / name), header=name != "no_header")
                for name in ("node", "no_header", "lost", "copy", "named")}
    site = toolkits["copy"]
    prefix = {label: str(base / ("opt-" + label)) for label in ("controller", "named", "check", "refused")}
    out = {"toolkits": toolkits, "site": site, "prefix": prefix, "node_prefix": str(base / "opt"),
           "gone": str(base / "gone"), "named_build": str(base / "named-build")}
    nodes = node_hosts(node_file, toolkits, base)
    controller = copy_fleet(node_file, site, prefix["controller"], "controller")
    # first in the inventory (hosts are sorted): a host that skips the role must not stop the shared build
    controller["a-disabled"] = host(node_file, dict(controller["n1"]["vars"], gpu_bench_enabled=False), formats=False)
    named = copy_fleet(node_file, toolkits["named"], prefix["named"], "builder", names=("builder", "nb2"),
                       gpu_bench_build_dir=out["named_build"])
    out["build"] = run_plays(base / "build", [dict(nodes, **controller, **named)], dump=True)
    out["calls_build"] = {name: nvcc_calls(toolkits[name]) for name in ("node", "lost", "copy", "named")}
    # the versioned library gone, an unversioned file left where the preflight looks
    lost = toolkits["lost"]["cuda"] + "/lib64"
    for name in os.listdir(lost):
        os.unlink(os.path.join(lost, name))
    write(os.path.join(lost, "libcublasLt.so"), "")
    refused = copy_fleet(node_file, site, prefix["refused"], "controller", names=("refused-n1", "refused-n2"),
                         gpu_bench_cuda_home=out["gone"] + "/cuda")
    # the host that skips the role proved its point in the first run
    again = dict(nodes, n1=controller["n1"], n2=controller["n2"])
    out["again"] = run_plays(base / "again", [again, dict(refused_node_hosts(node_file, toolkits, base), **refused)])
    out["calls_again"] = nvcc_calls(toolkits["node"]) + nvcc_calls(toolkits["lost"])
    out["calls_controller_again"] = nvcc_calls(site)
    check = copy_fleet(node_file, site, prefix["check"], "controller", names=("c1",),
                       gpu_bench_build_dir=str(base / "check-build"))
    out["check"] = run_plays(base / "check", [check], extra_args=["--check"])
    out["calls_check"] = nvcc_calls(site)[len(out["calls_controller_again"]):]
    return out


def outputs_of(calls):
    return [call[call.index("-o") + 1] for call in calls]


# --- the build on the node ------------------------------------------------------------------------------------------


def test_node_builds_with_the_shipped_flags_and_ptx_of_its_gpu(runs):
    site, prefix, run = runs["toolkits"]["node"], runs["node_prefix"], runs["build"]
    assert recap(run.stdout)["h100"][2] == 0, run.stdout + run.stderr
    install = os.path.join(prefix, "h100", "gpubench-%s" % VERSION)
    [argv] = [call for call in runs["calls_build"]["node"] if install + "/bin/gpubench" in call]
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


def test_a_node_without_gpu_facts_builds_the_default_gencode(runs):
    """lost-lib has no GPU facts (its first run: its library is lost before the second)."""
    run, prefix = runs["build"], runs["node_prefix"]
    assert recap(run.stdout)["lost-lib"][2] == 0, run.stdout
    install = os.path.join(prefix, "lost-lib", "gpubench-%s" % VERSION)
    [argv] = [call for call in runs["calls_build"]["lost"] if install + "/bin/gpubench" in call]
    assert gencode_of(argv) == DEFAULTS["gpu_bench_default_gencode"] == [
        "-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=sm_90",
        "-gencode", "arch=compute_100,code=[sm_100,compute_100]"]
    assert DEFAULTS["gpu_bench_cflags"] == ["-O2", "-std=c++17", "-Xcompiler=-Wall,-Wextra"]


def test_same_inputs_build_nothing_again(runs):
    run = runs["again"]
    assert recap(run.stdout)["h100"][2] == 0, run.stdout + run.stderr
    assert [task for task, name in changed_tasks(run.stdout) if name == "h100"] == []
    # the node route's two builds (h100, lost-lib), none again
    assert len(runs["calls_again"]) == len(runs["calls_build"]["node"] + runs["calls_build"]["lost"]) == 2


def test_a_binary_whose_library_is_gone_is_not_recorded(runs):
    """The loader must find cuBLASLt on the node: the toolkit's versioned library removed since the build (the
    preflight still finds a libcublasLt.so, the stamp still matches), and ldd says what is missing."""
    run, lost = runs["again"], runs["toolkits"]["lost"]
    assert recap(runs["build"].stdout)["lost-lib"][2] == 0
    msg = failures(run.stdout)["lost-lib"]
    install = os.path.join(runs["node_prefix"], "lost-lib", "gpubench-%s" % VERSION)
    assert msg == ("gpu_bench on lost-lib: %s/bin/gpubench cannot start here: the loader does not find "
                   "libcublasLt.so.99 (ldd). It was linked against %s/lib64 (rpath): reinstall cuBLASLt there, or set "
                   "gpu_bench_build_on: controller to ship the library with the binary." % (install, lost["cuda"])), msg


def test_preflight_names_what_is_missing_on_the_node_and_the_fix(runs):
    run, gone, no_header = runs["again"], runs["gone"], runs["toolkits"]["no_header"]
    failed = failures(run.stdout)
    for name in ("no-toolkit", "no-header", "volta", "bad-route"):
        assert recap(run.stdout)[name][2] == 1, (name, run.stdout)
        # failed before anything was built
        assert not os.path.exists(os.path.join(runs["node_prefix"], name)), name
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


def test_controller_builds_once_for_every_gpu_and_copies_binary_and_library(runs):
    site, run = runs["site"], runs["build"]
    assert run.rc == 0, run.stdout + run.stderr
    build = site["root"] + "/build-dir/gpubench-%s" % VERSION
    [argv] = runs["calls_build"]["copy"]
    # the capabilities of every node of the play (A100 8.0, H100 9.0), the highest also as PTX
    assert gencode_of(argv) == ["-gencode", "arch=compute_80,code=sm_80", "-gencode", "arch=compute_90,code=[sm_90,compute_90]"]
    assert argv[1:1 + len(DEFAULTS["gpu_bench_cflags"])] == DEFAULTS["gpu_bench_cflags"]
    assert argv[argv.index("-Xlinker") + 1] == "-rpath=$ORIGIN/../lib" and argv[argv.index("-o") + 1] == build + "/bin/gpubench"
    with open(site["real"], "rb") as handle:
        library = handle.read()
    prefix = runs["prefix"]["controller"]
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


def test_controller_route_again_changes_nothing(runs):
    run = runs["again"]
    assert recap(run.stdout)["n1"][2] == recap(run.stdout)["n2"][2] == 0, run.stdout + run.stderr
    # delegated tasks read "n1 -> localhost"
    ours = ("n1", "n2")
    assert [task for task, name in changed_tasks(run.stdout) if name.split(" -> ")[0] in ours] == []
    assert len(runs["calls_controller_again"]) == 1


def test_a_named_build_host_builds_and_the_controller_relays(runs):
    run = runs["build"]
    assert run.rc == 0, run.stdout + run.stderr
    build = runs["named_build"] + "/gpubench-%s" % VERSION
    [argv] = [call for call in runs["calls_build"]["named"]
              if call[call.index("-o") + 1].startswith(runs["named_build"])]
    assert argv[argv.index("-o") + 1] == build + "/bin/gpubench"
    # one build for the build host's two nodes, itself among them (A100 8.0, H100 9.0)
    assert gencode_of(argv) == ["-gencode", "arch=compute_80,code=sm_80",
                                "-gencode", "arch=compute_90,code=[sm_90,compute_90]"]
    # the binary and library as the build host left them, and as the controller received them on their way
    assert os.path.exists(build + "/lib/libcublasLt.so.99")
    staged = runs["named_build"] + "/gpubench-%s-from-builder" % VERSION
    assert os.path.exists(staged + "/bin/gpubench") and os.path.exists(staged + "/lib/libcublasLt.so.99")
    prefix = runs["prefix"]["named"]
    for name in ("builder", "nb2"):
        install = os.path.join(prefix, name, "gpubench-%s" % VERSION)
        assert run_binary(install + "/bin/gpubench").stdout.strip() == STUB_LINE, name
        manifest = read_json(os.path.join(prefix, name, "installed.d", "gpu_bench.json"))
        assert (manifest["built_on"], manifest["build_host"]) == ("build_host", "builder"), manifest
        assert manifest["cublaslt"]["library"] == install + "/lib/libcublasLt.so.99"


def test_check_mode_copies_and_builds_nothing(runs):
    run = runs["check"]
    assert run.rc == 0, run.stdout + run.stderr
    assert "gpu_bench: would build gpubench %s into " % VERSION in run.stdout
    assert "gpu_bench: would copy gpubench %s and its libcublasLt, built on localhost" % VERSION in run.stdout
    assert runs["calls_check"] == []
    assert not os.path.exists(runs["prefix"]["check"])


def test_preflight_names_what_the_build_host_lacks_on_every_node(runs):
    run, gone = runs["again"], runs["gone"] + "/cuda"
    failed = failures(run.stdout)
    for name in ("refused-n1", "refused-n2"):
        assert recap(run.stdout)[name][2] == 1, (name, run.stdout)
        assert failed[name] == textwrap.dedent("""\
            gpu_bench on %s: cannot build gpubench on the build host localhost (gpu_bench_build_on: controller): no nvcc
            at %s/bin/nvcc; no cublasLt.h under %s/include; no libcublasLt.so (cuBLASLt) in %s/lib64. Fix: install the
            CUDA toolkit with its cuBLAS development files on localhost (e.g. apt-get install cuda-toolkit-12-4) or
            point gpu_bench_cuda_home, gpu_bench_cublas_include_dir and gpu_bench_cublas_lib_dir at them (paths on the
            build host); or set gpu_bench_build_on to a host that has them (node: each node builds with its own).
            """ % (name, gone, gone, gone)).replace("\n", " ").strip()
    assert not os.path.exists(runs["prefix"]["refused"])


def test_hosts_of_one_play_may_build_each_their_own_way(runs):
    """n1 and n2 from the controller, h100 and lost-lib each with its own toolkit, builder and nb2 from a named build
    host, in one play."""
    site, run, prefix = runs["site"], runs["build"], runs["prefix"]["controller"]
    assert run.rc == 0, run.stdout + run.stderr
    built = {}
    for name, root in (("n1", prefix), ("h100", runs["node_prefix"])):
        manifest = read_json(os.path.join(root, name, "installed.d", "gpu_bench.json"))
        built[name] = (manifest["built_on"], manifest["build_host"], manifest["gencode"],
                       manifest["cublaslt"]["library"])
    install = os.path.join("%s", "%s", "gpubench-" + VERSION)
    # each build for its own hosts' GPUs: the controller's for n1's H100 (9.0) and n2's A100 (8.0), h100's for its own
    assert built == {
        "n1": ("controller", "localhost", ["-gencode", "arch=compute_80,code=sm_80",
                                           "-gencode", "arch=compute_90,code=[sm_90,compute_90]"],
               install % (prefix, "n1") + "/lib/libcublasLt.so.99"),
        "h100": ("node", "h100", ["-gencode", "arch=compute_90,code=[sm_90,compute_90]"],
                 runs["toolkits"]["node"]["cuda"] + "/lib64/libcublasLt.so.99")}
    calls = [call for name in sorted(runs["calls_build"]) for call in runs["calls_build"][name]]
    assert sorted(outputs_of(calls)) == sorted([
        install % (runs["node_prefix"], "h100") + "/bin/gpubench", install % (runs["node_prefix"], "lost-lib")
        + "/bin/gpubench", site["root"] + "/build-dir/gpubench-%s/bin/gpubench" % VERSION,
        runs["named_build"] + "/gpubench-%s/bin/gpubench" % VERSION])
