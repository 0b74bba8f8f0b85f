# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action gpufleet.acceptance.pair_search_plan plans with the absolute floor of the pair check (SYNTHETIC figures).

Four hosts claimed with 8 x 400 Gb/s InfiniBand (400 GB/s per node: floor 0.9 x 0.94 x 400 = 338.4 GB/s); the
round-robin rounds are recorded with every pair of node d at 300 GB/s and the others at 370: fast by the relative
rule (25 % below 370 is 277.5), slow by the floor. The plan of round 3 is a confirmation run of one of d's pairs.
"""

from __future__ import annotations

from gpufleet.checks.benchmarks import search_label
from gpufleet.results.store import RunDir

JOB = "gpufleet-20260101T000000Z"
CLAIM = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8, "nics": [{"role": "compute", "type": "ib", "count": 8, "gbps": 400}]}


def _records(run_dir):
    run = RunDir.create(run_dir)
    for host in "abcd":
        record = RunDir.new_host_record(host)
        record["claim"] = CLAIM
        run.write_host(record)
    for rnd, pairs in enumerate([[("a", "d"), ("b", "c")], [("a", "c"), ("b", "d")], [("a", "b"), ("c", "d")]]):
        for a, b in pairs:
            run.add_benchmark(a, {
                "name": "all_reduce_perf", "command": ["mpirun"], "environment": {}, "message_size_bytes": None, "algorithm": None,
                "raw_output_path": None, "parsed": {"busbw_at_largest_size_gbs": 300.0 if "d" in (a, b) else 370.0},
                "started": "2026-01-01T00:00:%02dZ" % rnd, "duration_s": 1.0, "kind": "allreduce_pair", "hosts": [a, b], "outcome": "ok",
                "reason": None, "rc": 0, "repeat": 0, "round": rnd, "group": search_label("round_robin", 2, 7),
                "job_id": "%s-pair-r%d-%s-%s" % (JOB, rnd, a, b), "stderr_path": None})


def test_a_pair_slow_only_by_the_floor_is_planned_for_its_confirmation_run(playbook, node_file, tmp_path):
    run_dir = str(tmp_path / "run")
    _records(run_dir)
    tasks = [{"name": "Plan round 3", "register": "step", "run_once": True,
              "gpufleet.acceptance.pair_search_plan": {"run_dir": run_dir, "job": JOB, "hosts": ["a", "b", "c", "d"], "round": 3,
                                                       "seed": "7", "mode": "round_robin"}},
             {"name": "Keep it", "ansible.builtin.set_fact": {"dumped": "{{ step }}"}}]
    run = playbook({"node-a": {"node_file": node_file("host-bare-no-tools.yml")}}, tasks)
    assert run.rc == 0, run.stdout + run.stderr
    step = run.results["node-a"]
    assert step["floor"] == 338.4 and "aggregate 8 x 400 Gb/s InfiniBand = 400 GB/s (claim)" in step["floor_source"]
    assert step["done"] is False and len(step["pairs"]) == 1 and "d" in step["pairs"][0], step
    assert sorted(map(tuple, step["pending"])) == [("a", "d"), ("b", "d"), ("c", "d")]
