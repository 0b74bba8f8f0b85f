# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``gpufleet_*`` variables the collection knows, and the refusal of any other (pure).

A misspelled variable (``gpufleet_clam:``) would otherwise be ignored: the node judged with no claim.
The preflight of the playbooks (action ``gpufleet.acceptance.fleet_verdict`` with ``validate_only``)
refuses every host variable named ``gpufleet_*`` that is not listed here, naming the nearest known
input ("did you mean gpufleet_claim?").

This is the one list: tests/unit/gpufleet/checks/test_inputs.py fails when a playbook, role,
inventory or Molecule scenario uses a ``gpufleet_*`` name missing from it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping

PREFIX = "gpufleet_"

# What a user sets (inventory, group_vars, -e): documented in the playbooks' headers, the roles'
# meta/argument_specs.yml and docs/. Suggestions for a misspelled name are drawn from these.
INPUT_VARIABLES = frozenset((
    # the run: what is sold, how it is judged, where the results go, which hosts, how it ends
    "gpufleet_claim", "gpufleet_profile", "gpufleet_profile_overrides", "gpufleet_profiles_dir",
    "gpufleet_check_families", "gpufleet_results_dir", "gpufleet_resume", "gpufleet_hosts", "gpufleet_level",
    "gpufleet_fail_on_verdict", "gpufleet_report_title",
    # the verdicts as Slurm drains (playbooks/validate_cluster.yml, roles/slurm_gate, docs/slurm.md)
    "gpufleet_slurm_drain", "gpufleet_slurm_node", "gpufleet_slurm_conf", "gpufleet_slurm_verdict_file",
    "gpufleet_gate_baseline", "gpufleet_gate_baseline_file",
    # the report's cost to train (gpufleet/report/cost.py; recorded in run.json settings.reference_job)
    "gpufleet_reference_job",
    # judging settings handed to the checks (gpufleet/checks/verdict.py SETTINGS_VARS)
    "gpufleet_nccl_env", "gpufleet_fleet_group", "gpufleet_benchmark_vote", "gpufleet_pair_search_tolerance",
    "gpufleet_iperf3_line_rate_gbps", "gpufleet_iperf3_floor_fraction", "gpufleet_iperf3_concurrent_ratio_min",
    "gpufleet_ib_write_lat_max_us", "gpufleet_burn_in_thresholds", "gpufleet_nvlink_domain",
    # facts (roles/facts/meta/argument_specs.yml)
    "gpufleet_fact_groups", "gpufleet_fact_collector", "gpufleet_become", "gpufleet_nvidia_smi_path",
    "gpufleet_lspci_path", "gpufleet_gpu_query_formats", "gpufleet_gpu_nvlink", "gpufleet_sysfs_root",
    "gpufleet_procfs_root", "gpufleet_ethtool_path", "gpufleet_ibstat_path", "gpufleet_ibv_devinfo_path",
    "gpufleet_ip_path", "gpufleet_journalctl_path", "gpufleet_dmesg_path", "gpufleet_ofed_info_path",
    "gpufleet_mpirun_path", "gpufleet_ldconfig_path", "gpufleet_nccl_include_dirs", "gpufleet_tool_timeout",
    "gpufleet_fact_phase_timeout", "gpufleet_fact_phase_output_budget",
    # NCCL environment (roles/nccl_env)
    "gpufleet_cluster_cidr",
    # all-reduce benchmarks and the bad-node search (playbooks/benchmark.yml, benchmark_tasks/allreduce_pairs.yml)
    "gpufleet_benchmarks", "gpufleet_all_reduce_perf_path", "gpufleet_gpus_per_node", "gpufleet_allreduce_max_size",
    "gpufleet_nccl_algo", "gpufleet_allreduce_sweep", "gpufleet_allreduce_env", "gpufleet_benchmark_repeats",
    "gpufleet_benchmark_timeout", "gpufleet_manifest_dir", "gpufleet_launcher", "gpufleet_pair_launcher_argv",
    "gpufleet_mpirun_extra_args",
    "gpufleet_mpi_address", "gpufleet_pair_args", "gpufleet_pair_sequential", "gpufleet_pair_search",
    "gpufleet_pair_search_seed", "gpufleet_pair_search_confirm", "gpufleet_pair_search_max_rounds",
    # network and GPU bandwidth (benchmark_tasks/network.yml, iperf3.yml, perftest.yml, nvbandwidth.yml)
    "gpufleet_rack", "gpufleet_iperf3_seconds", "gpufleet_iperf3_streams", "gpufleet_iperf3_omit",
    "gpufleet_iperf3_port", "gpufleet_iperf3_path", "gpufleet_iperf3_connect_wait", "gpufleet_iperf3_address",
    "gpufleet_ib_write_bw_path", "gpufleet_ib_write_lat_path", "gpufleet_perftest_hca", "gpufleet_perftest_gpudirect",
    "gpufleet_perftest_port", "gpufleet_perftest_address", "gpufleet_perftest_timeout",
    "gpufleet_perftest_connect_wait", "gpufleet_ib_write_bw_size", "gpufleet_ib_write_lat_size",
    "gpufleet_ib_write_lat_iterations", "gpufleet_nvbandwidth_path", "gpufleet_nvbandwidth_testcases",
    "gpufleet_nvbandwidth_timeout",
    # per-GPU compute and memory throughput (benchmark_tasks/gpu_compute.yml, roles/gpu_bench)
    "gpufleet_gpubench_path", "gpufleet_gpubench_size", "gpufleet_gpubench_seconds", "gpufleet_gpubench_dtypes",
    "gpufleet_gpubench_devices", "gpufleet_gpubench_timeout", "gpufleet_gpubench_sample_interval",
    "gpufleet_gpubench_sustained_seconds", "gpufleet_gpubench_fast_accum",
    # burn-in (playbooks/burn_in.yml, roles/burn_in)
    "gpufleet_burn_in", "gpufleet_burn_in_seconds", "gpufleet_burn_in_tool", "gpufleet_burn_in_dcgmi_level",
    "gpufleet_burn_in_fact_groups", "gpufleet_dcgmi_path", "gpufleet_torch_python", "gpufleet_nvml_library_path",
    # weekly health check (playbooks/health_check.yml)
    "gpufleet_health_fact_groups", "gpufleet_health_sample_seconds", "gpufleet_health_sample_interval",
    "gpufleet_health_gpubench_seconds",
    "gpufleet_history_db", "gpufleet_history_clock_drop_share", "gpufleet_textfile_dir",
    "gpufleet_textfile_create_dir", "gpufleet_textfile_name",
    # the replayed fleets' inventories (inventories/simulated, molecule/default)
    "gpufleet_sim_dir", "gpufleet_sim_node", "gpufleet_fleet_node_file",
))

# What the playbooks and roles set themselves (registered results, set_fact, play vars, loop variables,
# the facts the fact modules return): known, so never refused, but never suggested to a user.
SET_BY_THE_COLLECTION = frozenset((
    "gpufleet_run", "gpufleet_slurm", "gpufleet_gate", "gpufleet_single_kind", "gpufleet_multi_slots",
    "gpufleet_multi_addresses",
    "gpufleet_pair_launch", "gpufleet_verdict", "gpufleet_fact_summary",
    "gpufleet_topology", "gpufleet_gpu", "gpufleet_nic", "gpufleet_host", "gpufleet_nccl_tests",
    "gpufleet_bench_open", "gpufleet_bench_dir", "gpufleet_bench_job", "gpufleet_bench_known",
    "gpufleet_bench_selected", "gpufleet_bench_env", "gpufleet_bench_sweep", "gpufleet_single_result",
    "gpufleet_multi_result",
    # the benchmark preflight (benchmark_tasks/installed.yml, preflight.yml)
    "gpufleet_installed", "gpufleet_installed_launchers", "gpufleet_bench_level", "gpufleet_bench_ready",
    "gpufleet_bench_ready_json", "gpufleet_bench_rails", "gpufleet_bench_blocked", "gpufleet_bench_blocked_json",
    "gpufleet_bench_blocked_by", "gpufleet_bench_multi_blocked", "gpufleet_bench_tool_of", "gpufleet_bench_fix_of",
    "gpufleet_bench_launcher_fix", "gpufleet_bench_tools", "gpufleet_bench_asked_by", "gpufleet_bench_asked",
    "gpufleet_bench_able_by", "gpufleet_bench_able_json",
    # a resumed run: the run's start (the job tag) and the benchmark jobs already recorded (benchmark.yml)
    "gpufleet_bench_start", "gpufleet_bench_recorded",
    # the validation levels (gpufleet_level) and what each level runs (validate_cluster.yml, benchmark.yml)
    "gpufleet_bad_levels", "gpufleet_bench_by_level", "gpufleet_bench_rail_hosts", "gpufleet_bench_gpus",
    "gpufleet_bench_size", "gpufleet_bench_no_rails", "gpufleet_single_launch", "gpufleet_net_iperf3_hosts",
    "gpufleet_perftest_hosts", "gpufleet_single_prefix", "gpufleet_iperf3_processes_wrapper",
    "gpufleet_iperf3_processes_argv", "gpufleet_bench_no_rails_json", "gpufleet_multi_prefix", "gpufleet_multi_hosts",
    "gpufleet_multi_prefix_json", "gpufleet_multi_restrictable", "gpufleet_fleet_hosts", "gpufleet_gather_hosts",
    "gpufleet_judge_run_dir",
    "gpufleet_pair_gpus",
    "gpufleet_pair_addresses", "gpufleet_pair_bounds", "gpufleet_pair_default_launcher", "gpufleet_pair_known",
    "gpufleet_pair_member", "gpufleet_pair_mine", "gpufleet_pair_nodes", "gpufleet_pair_prefix",
    "gpufleet_pair_result", "gpufleet_pair_round_index", "gpufleet_pair_seed", "gpufleet_pair_step",
    "gpufleet_net_client_wrapper", "gpufleet_net_iperf3", "gpufleet_net_perftest", "gpufleet_net_racks",
    "gpufleet_net_repeats",
    "gpufleet_ib_counters_benchmark", "gpufleet_ib_counters_phase", "gpufleet_ib_counters_result",
    "gpufleet_ib_counters_snapshot",
    "gpufleet_iperf3_is_client", "gpufleet_iperf3_job", "gpufleet_iperf3_mode", "gpufleet_iperf3_plan",
    "gpufleet_iperf3_repeat", "gpufleet_iperf3_round", "gpufleet_iperf3_rounds", "gpufleet_iperf3_run",
    "gpufleet_iperf3_widest", "gpufleet_iperf3_wrapper_argv", "gpufleet_iperf3_result", "gpufleet_iperf3_version",
    "gpufleet_iperf3_step",
    "gpufleet_perftest_binary", "gpufleet_perftest_help", "gpufleet_perftest_info", "gpufleet_perftest_is_client",
    "gpufleet_perftest_job", "gpufleet_perftest_plan", "gpufleet_perftest_repeat", "gpufleet_perftest_result",
    "gpufleet_perftest_round", "gpufleet_perftest_run", "gpufleet_perftest_step", "gpufleet_perftest_tool",
    "gpufleet_perftest_wrapper_argv",
    "gpufleet_nvbandwidth_result",
    # gpu_compute (benchmark_tasks/gpu_compute.yml) and where roles/gpu_bench installed gpubench (its fact)
    "gpufleet_compute_argv", "gpufleet_compute_expected_s", "gpufleet_compute_samples_path", "gpufleet_compute_sampler",
    "gpufleet_compute_result", "gpufleet_compute_sampler_done", "gpufleet_gpu_bench",
    "gpufleet_compute_sustained_by_level", "gpufleet_compute_sustained_s",
    "gpufleet_burn_in_open", "gpufleet_burn_in_dir", "gpufleet_burn_in_alone", "gpufleet_burn_in_verdict",
    "gpufleet_health_samples", "gpufleet_history", "gpufleet_prom", "gpufleet_textfile_stat",
))

KNOWN_VARIABLES = INPUT_VARIABLES | SET_BY_THE_COLLECTION


def nearest_input(name: str) -> str | None:
    """The known input variable ``name`` most likely misspells, or None when none is close."""
    # compared without the shared prefix, which would make every gpufleet_ name look alike
    suffixes = sorted(known[len(PREFIX):] for known in INPUT_VARIABLES)
    wanted = name[len(PREFIX):] if name.startswith(PREFIX) else name
    matches = difflib.get_close_matches(wanted, suffixes, n=1, cutoff=0.7)
    return PREFIX + matches[0] if matches else None


def unknown_variable(name: str) -> str:
    """Why ``name`` is refused: ``gpufleet_clam is not a gpufleet variable: did you mean gpufleet_claim?``."""
    nearest = nearest_input(name)
    if nearest:
        return "%s is not a gpufleet variable: did you mean %s?" % (name, nearest)
    known_in = "the playbooks' headers, roles' meta/argument_specs.yml"
    return "%s is not a gpufleet variable (the known ones: %s)" % (name, known_in)


def host_variable_problems(names_of: Mapping[str, Iterable[str]]) -> list[str]:
    """``host: <why>`` for each unknown ``gpufleet_*`` name of each host (``{host: variable names}``), hosts sorted."""
    problems = []
    for host in sorted(names_of):
        for name in sorted(set(str(name) for name in names_of[host])):
            if name.startswith(PREFIX) and name not in KNOWN_VARIABLES:
                problems.append("%s: %s" % (host, unknown_variable(name)))
    return problems
