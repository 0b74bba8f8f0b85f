# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""roles/burn_in end to end with ansible-playbook on localhost (no GPU here), with TEST DOUBLES:

- NVML: the fake libnvidia-ml.so (tests/fakenvml/fake_nvml.c, compiled here with gcc) serving
  tests/fakenvml/h100-590-1gpu.data (one H100, values from a recording; the data file names it),
  loaded by the sampler through the role's ``burn_in_nvml_library_path``;
- ``dcgmi``: a SYNTHETIC shell script written here (not NVIDIA's tool): it answers ``discovery -l`` (so
  the probe finds a host engine) and answers ``diag -r N -j`` with a RECORDING of the real tool's JSON
  (tests/fixtures/dcgm/gb10-dcgm-4.5.2-diag-r2-j-memory-pcie-Skip-software-Fail-persistence.json: the
  software test Fail, memory and pcie Skip) and exit status 226 (made up); without ``-j`` it exits 2;
- gpu-burn: a SYNTHETIC source archive written here whose Makefile records its make variables and
  writes a ``gpu_burn`` script printing gpu-burn's summary lines with ``GPU 1: FAULTY``, exit 0;
- ``all_reduce_perf``: the CPU stand-in (tests/standin/all_reduce_perf_standin.py, one rank) behind
  a wrapper script, as the interconnect load's single-node loop;
- torch: a SYNTHETIC stand-in module for the helper's ``torch`` command (in-process, no Ansible).

Three nodes burn in in ONE playbook run (one ansible-playbook start for the three scenarios): every
node is this machine (a replayed host without tools, tests/replay/nodes/host-bare-no-tools.yml: no
dcgmi, gpu_burn, make, nvcc or torch of its own), told apart by its tool paths and work directory:
``no-tool`` finds no load tool, ``dcgmi`` finds the failing dcgmi (and runs the interconnect loop),
``gpu-burn`` builds gpu-burn from the archive and runs it. A fourth host of the same run,
``bad-seconds``, is refused by the preflight (burn_in_seconds 0) before its node is touched, while the
others go on. The interconnect loads template (loads.json.j2) of a four-node fleet is rendered in-process
by Ansible's Templar (it only computes); the dcgmi node's loop proves it wired into the role. Expected
values are written by hand.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import stat
import sys
import tarfile

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fakenvml"))

import fakenvml  # noqa: E402  pylint: disable=import-error,wrong-import-position

sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "tools"))
from ansible_output import recap  # noqa: E402  pylint: disable=import-error,wrong-import-position

# tests/playbooks' runner (ansible-playbook on localhost against replayed nodes), as tests/roles/conftest.py loads it
_SPEC = importlib.util.spec_from_file_location("gpufleet_tests_playbooks_runner_burn_in", os.path.join(REPO_ROOT, "tests", "playbooks", "conftest.py"))
RUNNER = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(RUNNER)
# tests/playbooks/test_phase_tags.py's ansible_collection_loader: the collection's filters for an in-process Templar
_PHASE_TAGS_SPEC = importlib.util.spec_from_file_location(
    "gpufleet_tests_phase_tags_burn_in", os.path.join(REPO_ROOT, "tests", "playbooks", "test_phase_tags.py"))
PHASE_TAGS = importlib.util.module_from_spec(_PHASE_TAGS_SPEC)
_PHASE_TAGS_SPEC.loader.exec_module(PHASE_TAGS)

STANDIN = os.path.join(REPO_ROOT, "tests", "standin", "all_reduce_perf_standin.py")
NVML_DATA = fakenvml.data_file("h100-590-1gpu.data")
NO_TOOL = "skipped: no GPU load tool (dcgmi, gpu-burn, torch)"

# A recording of dcgmi diag -j (tests/fixtures/dcgm/SOURCES.md): what the stand-in prints.
DCGMI_JSON = os.path.join(REPO_ROOT, "tests", "fixtures", "dcgm",
                          "gb10-dcgm-4.5.2-diag-r2-j-memory-pcie-Skip-software-Fail-persistence.json")
# SYNTHETIC: a stand-in for dcgmi written for this test; its diag output is the recording above, its exit
# status made up (not recorded from a machine).
FAKE_DCGMI = """#!/bin/sh
# SYNTHETIC test double of dcgmi (tests/roles/test_burn_in_role.py): not NVIDIA's tool.
case "$1" in
  discovery) echo "1 GPU found."; exit 0 ;;
  diag)
    case " $* " in *" -j "*) cat "%s"; exit 226 ;; esac
    echo "this stand-in answers diag only with -j" >&2; exit 2 ;;
esac
exit 2
""" % DCGMI_JSON


def write_exe(path, text):
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(path, 0o755)
    return path


@pytest.fixture(name="fake_nvml", scope="module")
def fake_nvml_fixture(tmp_path_factory):
    """The fake NVML library built with gcc (the test fails, naming the package, without gcc)."""
    return fakenvml.build_once(tmp_path_factory)["full"]  # one build per session, shared with the other modules


# SYNTHETIC: a TEST DOUBLE of gpu-burn's source (nothing committed): its Makefile takes gpu-burn's make
# variables, records them in make-variables.txt and writes gpu_burn as a shell script whose last lines
# follow gpu-burn's summary ("Tested N GPUs:", then "GPU n: OK|FAULTY"); gpu-burn exits 0 even when a
# GPU is FAULTY.
GPU_BURN_MAKEFILE = """# TEST DOUBLE of gpu-burn's Makefile (tests/roles/test_burn_in_role.py)
gpu_burn:
\tprintf 'COMPUTE=%s CUDAPATH=%s\\n' '$(COMPUTE)' '$(CUDAPATH)' > make-variables.txt
\tprintf '#!/bin/sh\\necho "cwd $$(pwd)"\\necho "args $$*"\\necho "Tested 2 GPUs:"\\necho "\tGPU 0: OK"\\necho "\tGPU 1: FAULTY"\\nexit 0\\n' > gpu_burn
\tchmod 0755 gpu_burn
"""
GPU_BURN_COMMIT = "0123456789abcdef0123456789abcdef01234567"


def gpu_burn_archive(path, commit):
    """A source archive laid out as GitHub's (one top directory ``gpu-burn-<commit>/``)."""
    with tarfile.open(path, "w:gz") as tar:
        data = GPU_BURN_MAKEFILE.encode()
        info = tarfile.TarInfo("gpu-burn-%s/Makefile" % commit)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return path


def plays(run_dir, role_vars):
    return [
        {"name": "Results directory", "gpufleet.acceptance.results_record": {"run_dir": run_dir, "phase": "start"},
         "run_once": True, "delegate_to": "localhost"},
        {"name": "Burn in", "ansible.builtin.include_role": {"name": "gpufleet.acceptance.burn_in"},
         "vars": dict(role_vars, burn_in_results_dir=run_dir)},
        {"name": "Judge", "gpufleet.acceptance.fleet_verdict": {"run_dir": run_dir, "families": ["burn_in"]},
         "run_once": True, "delegate_to": "localhost", "register": "verdict"},
        {"name": "Keep", "ansible.builtin.set_fact": {"dumped": {"verdict": "{{ verdict }}", "choice": "{{ __burn_in_choice | default(None) }}"}}},
    ]


def node_vars(root, library, **extra):
    """One node's settings: nothing of its own found (every tool path points at nothing) unless ``extra`` says."""
    values = {
        "burn_in_seconds": 2,
        "burn_in_sample_interval": 1,
        "burn_in_nvml_library_path": library,
        "burn_in_work_dir": str(root / "node-work"),
        "burn_in_dcgmi_path": str(root / "no-dcgmi"),
        "burn_in_torch_python": str(root / "no-python"),
        "burn_in_gpu_burn_make": str(root / "no-make"),
        "burn_in_gpu_burn_cuda_home": str(root / "no-cuda"),
        "burn_in_gpu_burn_prefix": str(root / "opt"),
        "burn_in_grace_seconds": 20,
        "burn_in_interconnect": False,
        "gpufleet_nic": {"rdma": []},
    }
    values.update(extra)
    return values


@pytest.fixture(name="fleet", scope="module")
def fleet_fixture(tmp_path_factory, fake_nvml):
    """The one playbook run of the four nodes: ``(run, run_dir, roots)``.

    About 15 s on an idle machine (more than most tests): three burn-in scenarios share this one
    ansible-playbook run, each with 2 s of load and sampling; the fourth node fails its preflight (the run exits 2).
    """
    base = tmp_path_factory.mktemp("burn-in")
    roots = {name: base / name for name in ("no-tool", "dcgmi", "gpu-burn", "bad-seconds")}
    for root in roots.values():
        root.mkdir()
    dcgmi = write_exe(str(roots["dcgmi"] / "dcgmi"), FAKE_DCGMI)
    allreduce = write_exe(str(roots["dcgmi"] / "all_reduce_perf"), '#!/bin/sh\nexec "%s" "%s" "$@"\n' % (sys.executable, STANDIN))
    cuda = roots["gpu-burn"] / "cuda"
    (cuda / "bin").mkdir(parents=True)
    write_exe(str(cuda / "bin" / "nvcc"), "#!/bin/sh\nexit 1\n")
    archive = gpu_burn_archive(str(roots["gpu-burn"] / "gpu-burn.tar.gz"), GPU_BURN_COMMIT)
    bare = os.path.join(REPO_ROOT, "tests", "replay", "nodes", "host-bare-no-tools.yml")
    hosts = {
        "no-tool": {"node_file": bare, "vars": node_vars(roots["no-tool"], fake_nvml)},
        "dcgmi": {"node_file": bare, "vars": node_vars(
            roots["dcgmi"], fake_nvml, burn_in_dcgmi_path=dcgmi, burn_in_dcgmi_level="long", burn_in_interconnect=True,
            burn_in_all_reduce_perf_path=allreduce, burn_in_gpus_per_node=1, burn_in_allreduce_args=["-b", "1M", "-e", "1M", "-n", "2", "-w", "1"])},
        "gpu-burn": {"node_file": bare, "vars": node_vars(
            roots["gpu-burn"], fake_nvml, burn_in_tool="gpu-burn", burn_in_gpu_burn_commit=GPU_BURN_COMMIT, burn_in_gpu_burn_make="make",
            burn_in_gpu_burn_cuda_home=str(cuda), burn_in_gpu_burn_compute="90", burn_in_gpu_burn_args=["-tc"],
            burn_in_gpu_burn_source_archive=archive)},
        "bad-seconds": {"node_file": bare, "vars": {"burn_in_seconds": 0,
                                                    "burn_in_work_dir": str(roots["bad-seconds"] / "node-work")}},
    }
    run_dir = str(base / "run")
    saved = os.environ.get("FAKE_NVML_DATA")
    os.environ["FAKE_NVML_DATA"] = NVML_DATA
    try:
        run = RUNNER.run_playbook(base / "play", hosts, plays(run_dir, {}))
    finally:
        if saved is None:
            del os.environ["FAKE_NVML_DATA"]
        else:
            os.environ["FAKE_NVML_DATA"] = saved
    # the preflight's refusal fails bad-seconds alone: the three burn-ins end without a failed task
    assert {host: failed for host, (_ok, _changed, failed) in recap(run.stdout).items()} == {
        "no-tool": 0, "dcgmi": 0, "gpu-burn": 0, "bad-seconds": 1}, run.stdout + run.stderr
    return run, run_dir, roots


def host_record(run_dir, host):
    with open(os.path.join(run_dir, "hosts", host + ".json"), "r", encoding="utf-8") as handle:
        return json.load(handle)


def checks_of(record, prefix):
    return [item for item in record["checks"] if item["id"].startswith(prefix)]


def role_summary(run_dir, host):
    with open(os.path.join(run_dir, "raw", host, "burn_in", "burn_in-role.json"), "r", encoding="utf-8") as handle:
        return json.load(handle)


def test_no_load_tool_is_a_recorded_skip(fleet):
    run, run_dir, roots = fleet
    root = roots["no-tool"]
    choice = run.results["no-tool"]["choice"]
    assert choice["tool"] is None and choice["skip_reason"] == NO_TOOL
    assert choice["reasons"]["dcgmi"] == "%s not found" % (root / "no-dcgmi")
    assert choice["reasons"]["torch"] == "%s not found" % (root / "no-python")
    assert choice["reasons"]["gpu-burn"] == "gpu-burn not built: not found: %s, %s (make and nvcc are needed to build it)" % (
        root / "no-make", root / "no-cuda" / "bin" / "nvcc")
    record = host_record(run_dir, "no-tool")
    [burn] = record["burn_in"]
    assert burn["load"] == {"tool": None, "outcome": "skipped", "reason": NO_TOOL}
    assert burn["samples_path"] is None and burn["sampler_error"] == "not sampled: " + NO_TOOL
    # nothing ran on the node: no sampler output
    assert not os.path.exists(root / "node-work" / "nvml-samples.jsonl")
    summary = role_summary(run_dir, "no-tool")
    assert summary["tool"] is None and summary["skipped"] == NO_TOOL and sorted(summary["tools_not_used"]) == ["dcgmi", "gpu-burn", "torch"]
    load = checks_of(record, "burn_in.load")
    assert [item["status"] for item in load] == ["warn"] and NO_TOOL in load[0]["message"]
    assert "burn_in: no-tool: %s (dcgmi: %s not found;" % (NO_TOOL, root / "no-dcgmi") in run.stdout


def test_failing_dcgmi_diag_is_flagged_with_samples_and_interconnect_loop(fleet):
    run, run_dir, roots = fleet
    dcgmi = str(roots["dcgmi"] / "dcgmi")
    record = host_record(run_dir, "dcgmi")
    [burn] = record["burn_in"]
    load = burn["load"]
    assert (load["tool"], load["outcome"], load["level"], load["rc"]) == ("dcgmi", "failed", "3", 226)
    # the JSON's failing test, with its warning, and the skipped ones are the reason (whitespace folded by the record)
    assert load["reason"] == ('dcgmi diag: Fail in Deployment/software: Persistence Mode: Persistence mode for GPU 0 is disabled. '
                              'Enable persistence mode by running "nvidia-smi -i <gpuId> -pm 1 " as root.; '
                              'Skip in Hardware/memory, Integration/pcie (0 of 3 test(s) passed)')
    assert load["command"] == "%s diag -r 3 -j" % dcgmi
    with open(os.path.join(run_dir, load["raw_output_path"]), "r", encoding="utf-8") as handle:
        assert '"name" : "memory"' in handle.read()
    # the sampler ran for the 2 s of the run at 1 s: ticks at 0, 1 and 2 s on the one GPU of the data file
    assert burn["samples_path"] == "raw/dcgmi/burn_in/burn_in.jsonl"
    assert burn["sampler"]["ticks"] == 3 and burn["sampler"]["samples"] == 3 and burn["sampler"]["ended"] == "duration"
    assert [gpu["uuid"] for gpu in burn["gpus"]] == ["GPU-00000000-0000-0000-0000-000000000000"]
    assert run.results["dcgmi"]["verdict"]["line_of"]["dcgmi"].startswith("dcgmi: REJECT")
    failed = [item for item in checks_of(record, "burn_in.load") if item["status"] == "fail"]
    assert len(failed) == 1 and "Fail in Deployment/software: Persistence Mode" in failed[0]["message"]
    assert record["failed"] == ["burn_in.load"]
    # the interconnect load ran in a loop beside it
    [loop] = role_summary(run_dir, "dcgmi")["interconnect"]
    assert loop["name"] == "all_reduce_perf_single" and loop["missing"] is False and loop["failed"] == 0
    assert loop["runs"] >= 1 and loop["argv"][-2:] == ["-g", "1"]
    with open(os.path.join(run_dir, "raw", "dcgmi", "burn_in", "all_reduce_perf_single.log"), "r", encoding="utf-8") as handle:
        assert "# Collective test starting: all_reduce_perf" in handle.read()


def test_gpu_burn_built_from_the_pin_and_faulty_exit_0_is_a_failed_load(fleet):
    _run, run_dir, roots = fleet
    root = roots["gpu-burn"]
    build = root / "opt" / ("gpu-burn-" + GPU_BURN_COMMIT)
    assert (build / "make-variables.txt").read_text() == "COMPUTE=90 CUDAPATH=%s\n" % (root / "cuda")
    stamp = json.loads((build / ".gpufleet-build.json").read_text())
    assert stamp["commit"] == GPU_BURN_COMMIT and stamp["make_variables"] == {"COMPUTE": "90", "CUDAPATH": str(root / "cuda")}
    assert stat.S_IMODE(os.stat(build / "gpu_burn").st_mode) == 0o755
    record = host_record(run_dir, "gpu-burn")
    [burn] = record["burn_in"]
    load = burn["load"]
    assert (load["tool"], load["outcome"], load["rc"]) == ("gpu-burn", "failed", 0)
    assert load["reason"] == "gpu-burn reported: GPU 1: FAULTY"
    assert load["command"] == "%s/gpu_burn -tc 2" % build
    with open(os.path.join(run_dir, load["raw_output_path"]), "r", encoding="utf-8") as handle:
        output = handle.read()
    # run in its own directory (where gpu-burn finds compare.ptx), with the run length last
    assert output.startswith("cwd %s\nargs -tc 2\n" % build)
    assert [item["status"] for item in checks_of(record, "burn_in.load")] == ["fail"]


def _rdma(*ports):
    """gpufleet_nic.rdma (nic_facts' shape, docs/facts/nic_facts.md) with the given (device, state, link_layer, gids)."""
    return [{"device": device, "ports": [{"port": 1, "state": state, "link_layer": layer, "gids": gids}]} for device, state, layer, gids in ports]


def render_loads(hosts):
    """loads.json.j2 of every host of ``hosts`` ({name: variables}, the play in that order), as the role's
    ``lookup('ansible.builtin.template', 'loads.json.j2') | from_json`` renders it: ``{name: loads}``."""
    with open(os.path.join(REPO_ROOT, "roles", "burn_in", "templates", "loads.json.j2"), encoding="utf-8") as handle:
        template = trust_as_template(handle.read())
    hostvars = {name: dict(variables, inventory_hostname=name) for name, variables in hosts.items()}
    loads = {}
    with PHASE_TAGS.ansible_collection_loader():
        for name, variables in hostvars.items():
            play = dict(variables, hostvars=hostvars, ansible_play_hosts=list(hosts))
            templar = Templar(loader=DataLoader(), variables=play)
            loads[name] = json.loads(templar.template(template))
    return loads


def test_interconnect_loads_multi_node_launcher_and_rails():
    """The loads template alone (no node work): four hosts burning in, an Open MPI launcher, RDMA rails from NIC facts."""
    roce_gids = [{"index": 2, "gid": "fe80:0000:0000:0000:0a00:27ff:fe00:0001", "type": "RoCE v2"},
                 {"index": 3, "gid": "0000:0000:0000:0000:0000:ffff:0a00:0002", "type": "RoCE v2"}]
    common = {
        "__burn_in_choice": {"tool": "torch"},
        "__burn_in_probe": {"ib_write_bw": {"path": "/usr/bin/ib_write_bw"}},
        "burn_in_interconnect": True, "burn_in_ib_write_bw": True, "burn_in_ib_run_seconds": 60, "burn_in_ib_port_base": 18615,
        "burn_in_all_reduce_perf_path": "/opt/nt/all_reduce_perf", "burn_in_allreduce_args": ["-b", "1G", "-e", "1G"],
        "burn_in_allreduce_env": {"NCCL_DEBUG": "WARN"}, "burn_in_gpus_per_node": 8,
        "gpufleet_launcher": {"kind": "mpirun", "argv_prefix": ["/usr/bin/mpirun", "--hostfile", "/opt/gpufleet/hostfile"]},
    }
    hosts = {
        "node-a": dict(common, ansible_host="10.0.0.1", gpufleet_nic={"rdma": _rdma(
            ("mlx5_0", "Active", "InfiniBand", []), ("mlx5_1", "Active", "Ethernet", roce_gids),
            ("mlx5_2", "Down", "InfiniBand", []))}),
        "node-b": dict(common, ansible_host="10.0.0.2", gpufleet_nic={"rdma": _rdma(
            ("mlx5_0", "Active", "InfiniBand", []), ("mlx5_1", "Active", "Ethernet", roce_gids))}),
        # provisioning told NCCL to use mlx5_1 only (nccl_env): its one rail pairs with node-d's one
        "node-c": dict(common, ansible_host="10.0.0.3", gpufleet_nic={"rdma": _rdma(
            ("mlx5_0", "Active", "InfiniBand", []), ("mlx5_1", "Active", "Ethernet", roce_gids))},
            gpufleet_nccl_env={"NCCL_IB_HCA": "=mlx5_1"}),
        "node-d": dict(common, ansible_host="10.0.0.4",
                       gpufleet_nic={"rdma": _rdma(("mlx5_1", "Active", "Ethernet", roce_gids))}),
    }
    loads = render_loads(hosts)
    assert sorted(loads) == ["node-a", "node-b", "node-c", "node-d"]
    # the first host runs the multi-node all-reduce through the launcher; mpirun is told to pass the tag and the env
    assert loads["node-a"][0] == {"name": "all_reduce_perf_multi", "env": {"NCCL_DEBUG": "WARN"},
                                  "argv": ["/usr/bin/mpirun", "-x", "GPUFLEET_JOB_ID", "-x", "NCCL_DEBUG", "--hostfile", "/opt/gpufleet/hostfile",
                                           "/opt/nt/all_reduce_perf", "-b", "1G", "-e", "1G", "-g", "1"]}
    # ib_write_bw, pairs in play order: node-a serves node-b on both rails (its Down mlx5_2 is no rail), rail i on
    # port 18615 + i; the RoCE rail with -x and its IPv4-mapped RoCE v2 GID index, 3
    tool = ["/usr/bin/ib_write_bw", "-d"]
    common_args = ["--report_gbits", "-F", "-D", "60", "-p"]
    assert loads["node-a"][1:] == [
        {"name": "ib_write_bw_server_mlx5_0_1", "env": {}, "argv": tool + ["mlx5_0"] + common_args + ["18615"]},
        {"name": "ib_write_bw_server_mlx5_1_1", "env": {}, "argv": tool + ["mlx5_1", "-x", "3"] + common_args + ["18616"]},
    ]
    assert loads["node-b"] == [
        {"name": "ib_write_bw_client_mlx5_0_1", "env": {}, "argv": tool + ["mlx5_0"] + common_args + ["18615", "10.0.0.1"]},
        {"name": "ib_write_bw_client_mlx5_1_1", "env": {}, "argv": tool + ["mlx5_1", "-x", "3"] + common_args + ["18616", "10.0.0.1"]},
    ]
    # node-c's NCCL_IB_HCA leaves it mlx5_1 (rail_hcas, as benchmark.yml's perftest reads it): one pair with node-d
    assert loads["node-c"] == [{"name": "ib_write_bw_server_mlx5_1_1", "env": {}, "argv": tool + ["mlx5_1", "-x", "3"] + common_args + ["18615"]}]
    assert loads["node-d"] == [
        {"name": "ib_write_bw_client_mlx5_1_1", "env": {}, "argv": tool + ["mlx5_1", "-x", "3"] + common_args + ["18615", "10.0.0.3"]}]


def test_preflight_refuses_bad_settings_before_the_node_is_touched(fleet):
    """bad-seconds (burn_in_seconds 0) in the fleet's run: refused, its node untouched, the others burn in."""
    run, _run_dir, roots = fleet
    assert run.rc == 2
    assert "burn_in: burn_in_seconds must be a whole number of seconds > 0 (got 0)" in run.stdout
    assert not os.path.exists(roots["bad-seconds"] / "node-work")


# --- the node-side helper's torch load, with a TEST DOUBLE of torch --------------------------------


class _FakeTensor:
    """SYNTHETIC stand-in for a torch tensor: a product is a number; ``bad`` marks a wrong one."""

    def __init__(self, value):
        self.value = value

    def all(self):
        return self


class _FakeTorch:
    """SYNTHETIC stand-in for the few torch calls gpufleet_burn_in.py torch makes (not PyTorch).

    Device ``faulty`` returns a different product from its ``fail_after``-th multiplication on.
    """

    float32 = "float32"

    def __init__(self, devices=2, faulty=None, fail_after=3):
        self.devices, self.faulty, self.fail_after, self.calls = devices, faulty, fail_after, {}
        self.current = None
        fake = self

        class _Cuda:
            @staticmethod
            def is_available():
                return fake.devices > 0

            @staticmethod
            def device_count():
                return fake.devices

            @staticmethod
            def get_device_name(device):
                return "SYNTHETIC GPU %d" % device[1]

            @staticmethod
            def synchronize(device):
                return None

            @staticmethod
            def device(device):
                fake.current = device[1]
                return _Context()

        class _Context:
            def __enter__(self):
                return self

            def __exit__(self, *args):
                return False

        class _Backends:
            class cuda:  # pylint: disable=invalid-name
                class matmul:  # pylint: disable=invalid-name
                    allow_tf32 = True

        self.cuda = _Cuda
        self.backends = _Backends

    @staticmethod
    def device(kind, index):
        return (kind, index)

    @staticmethod
    def Generator(device):  # pylint: disable=invalid-name
        class _Gen:
            def manual_seed(self, seed):
                return seed
        return _Gen()

    def rand(self, shape, device, dtype, generator):  # pylint: disable=unused-argument
        return _FakeTensor(1.0)

    def matmul(self, left, right):
        index = self.current
        self.calls[index] = self.calls.get(index, 0) + 1
        wrong = index == self.faulty and self.calls[index] > self.fail_after
        return _FakeTensor(left.value * right.value + (0.5 if wrong else 0.0))

    @staticmethod
    def isfinite(tensor):
        return _FakeTensor(tensor.value == tensor.value)

    @staticmethod
    def allclose(left, right, rtol, atol):
        return abs(left.value - right.value) <= atol + rtol * abs(right.value)


def _helper():
    path = os.path.join(REPO_ROOT, "roles", "burn_in", "files", "node", "gpufleet_burn_in.py")
    spec = importlib.util.spec_from_file_location("gpufleet_burn_in_helper", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("faulty, rc, last", [(None, 0, "GPU 1: OK"), (1, 1, "GPU 1: FAULTY")])
def test_torch_load_flags_the_gpu_whose_product_changes(monkeypatch, capsys, faulty, rc, last):
    """The comparison logic of ``gpufleet_burn_in.py torch`` with a fake torch (no GPU, no PyTorch here)."""
    helper = _helper()
    monkeypatch.setitem(sys.modules, "torch", _FakeTorch(devices=2, faulty=faulty))
    assert helper.main(["torch", "--seconds", "0.2", "--size", "16", "--batch", "2"]) == rc
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "GPU 0: SYNTHETIC GPU 0, 16x16 float32"
    assert lines[-2].startswith("GPU 0: OK iterations=") and lines[-1].startswith(last + " iterations=")
    if faulty is not None:
        assert "mismatches=" in lines[-1] and not lines[-1].endswith("mismatches=0")


def test_torch_load_without_cuda_exits_2(monkeypatch, capsys):
    helper = _helper()
    monkeypatch.setitem(sys.modules, "torch", _FakeTorch(devices=0))
    assert helper.main(["torch", "--seconds", "1"]) == 2
    assert "torch.cuda.is_available() is False" in capsys.readouterr().err
