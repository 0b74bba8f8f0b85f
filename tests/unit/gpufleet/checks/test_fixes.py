"""The fix of an unverified item, from the words of its reason (gpufleet/checks/fixes.py).

The reasons are ones the product writes: the demo fleet's records (make demo), the fact phase's overrun record
(docs/facts/node_facts.md) and the benchmark preflight's missing tool (playbooks/benchmark_tasks/preflight.yml).
"""

import os

from ansible_collections.gpufleet.acceptance.plugins.module_utils.bench_process import classify

from gpufleet.checks.benchmarks import outcome_problem
from gpufleet.checks.evidence import coverage
from gpufleet.checks.fixes import GENERIC_FIX, distinct_fixes, fix_for, launcher_fix
from gpufleet.checks.model import NodeContext

PROVISION = "ansible-playbook -i INVENTORY gpufleet.acceptance.provision"
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def test_a_fact_group_left_out_names_the_setting():
    # a100-pcie-nvlink-bridge-pairs of the demo: gpufleet_fact_groups [topology]
    assert fix_for("not judged: gpu facts not gathered") == (
        "gather the gpu facts: gpufleet_fact_groups must include gpu")
    assert fix_for("not judged: nic facts not gathered") == (
        "gather the nic facts: gpufleet_fact_groups must include nic")


def test_a_missing_tool_or_device_is_provisioned_or_named_to_the_seller():
    # azure-a100-nvlink-inactive of the demo: ibstat could not stat a device the sysfs tree lists
    ibstat = ("not judged: nic facts failed: n1: `/x/bin/ibstat` exited 255: ibpanic: [1400444] main: stat of IB "
              "device 'mlx5_8' failed: No such file or directory")
    assert fix_for(ibstat) == ("install the nic tools the node lacks (%s), or have the seller fix the device it names"
                               % PROVISION)
    assert fix_for("not judged: gpu facts failed: `nvidia-smi -q -x` exited 127") .startswith("install the gpu tools")
    preflight = ("not verified: single-node all-reduce was not run: all_reduce_perf not found on the node; provision "
                 "first: `ansible-playbook gpufleet.acceptance.provision`")
    # the preflight's own words win over "was not run"
    assert fix_for(preflight) == "install the tools it lacks: %s" % PROVISION


def test_a_failed_group_points_at_its_raw_output():
    assert fix_for("not judged: host facts failed: lspci printed no device") == (
        "read the host tool's output in the results directory (raw/NODE/host/) and have the seller fix what it names")


def test_an_overrun_tool_names_both_settings():
    overran = ("facts: nvidia-smi nvlink -s timed out after 33.9 s (the fact phase's budget of 150 s ran out); "
               "nvidia-smi nvlink -e skipped")
    assert "gpufleet_fact_phase_timeout" in fix_for(overran) and "hangs" in fix_for(overran)


def test_a_benchmark_not_run_and_the_unknown():
    assert fix_for("no result from nccl.allreduce_single_node: not run or not recorded") == (
        "run it: a level that measures it (--level standard)")
    assert fix_for("a cause no row knows") == GENERIC_FIX
    assert distinct_fixes(["gpu facts not gathered", "GPU count: gpu facts not gathered", "x"]) == [
        "gather the gpu facts: gpufleet_fact_groups must include gpu", GENERIC_FIX]


def test_coverage_gives_each_unverified_item_its_fix_and_a_verified_one_none():
    claim = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 1, "gpu_memory_gb": 80}
    node = NodeContext("n1", facts={}, claim=claim)
    # the engine's skip of a check whose fact group is missing (checks/engine.py)
    skipped = [{"id": check, "status": "skip", "subject": None, "message": "not judged: gpu facts not gathered"}
               for check in ("gpu.model", "gpu.count", "gpu.memory")]
    items = coverage(node, skipped)["items"]
    assert [item["item"] for item in items] == ["gpu.model", "gpu.count", "gpu.memory"]
    assert all(item["status"] == "unverified" for item in items)
    assert {item["fix"] for item in items} == {"gather the gpu facts: gpufleet_fact_groups must include gpu"}
    judged = [{"id": "gpu.model", "status": "pass", "subject": None, "message": "ok"}]
    model = [item for item in coverage(node, judged + skipped[1:])["items"] if item["item"] == "gpu.model"][0]
    assert model["status"] == "verified" and "fix" not in model


def _launcher_words(name):
    """(outcome, reason) the node-side runner gives srun's stderr of a recording (tests/fixtures/slurm/SOURCES.md)."""
    with open(os.path.join(REPO, "tests", "fixtures", "slurm", name), encoding="utf-8") as handle:
        return classify(1, "", handle.read())


def test_a_launcher_failure_names_slurms_words_and_the_fix():
    outcome, drained = _launcher_words("srun-immediate-drained-node-22.05.8.txt")
    assert (outcome, drained) == ("launcher_error", "srun: Required node not available (down, drained or reserved)")
    record = {"name": "multi-node all-reduce", "outcome": "launcher_error", "reason": drained}
    assert outcome_problem(record) == (
        "multi-node all-reduce failed: launcher_error (srun: Required node not available (down, drained or reserved)); "
        "fix: a node of the run is drained, down or reserved in Slurm (sinfo -N -l): resume it once its cause is "
        "fixed, or leave it out (--limit)")
    _outcome, invalid = _launcher_words("srun-invalid-node-name-22.05.8.txt")
    assert launcher_fix(invalid).startswith("a node is not known to Slurm by that name")
    assert launcher_fix("srun: error: Couldn't find the specified plugin name for mpi/pmi2 looking at all files") \
        .startswith("srun's MPI plugin")
    assert launcher_fix("some words no row knows") is None
