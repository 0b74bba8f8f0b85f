# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The validation levels (gpufleet/plan/levels.py): what each level runs on each host. Expected lists by hand from
the rule in the module's docstring (the one benchmark.yml and preflight.yml run by)."""

from __future__ import annotations

import pytest

from gpufleet.plan import levels


def test_quick_runs_nothing_and_full_adds_the_burn_in():
    assert levels.level_benchmarks("quick", 4, 4) == []
    assert levels.required_benchmarks("quick") == []
    assert levels.required_benchmarks("full", hosts=1, rail_hosts=0, rails=0, nvbandwidth_built=False) == [
        "allreduce_single", "gpu_compute", "burn_in"]


def test_standard_on_one_host_is_the_single_node_run_gpu_compute_and_nvbandwidth_where_built():
    # None: the default, standard
    assert levels.level_benchmarks(None, 1, 0) == ["allreduce_single", "nvbandwidth", "gpu_compute"]
    assert levels.required_benchmarks("standard", hosts=1, nvbandwidth_built=True) == [
        "allreduce_single", "nvbandwidth", "gpu_compute"]
    assert levels.required_benchmarks("standard", hosts=1, nvbandwidth_built=False) == ["allreduce_single", "gpu_compute"]


def test_standard_on_two_hosts_one_with_rails():
    # one host with rails: no ib_write_bw anywhere (it needs two); a host lacks rails: iperf3 for both
    assert levels.level_benchmarks("standard", 2, 1) == ["allreduce_single", "allreduce_pairs", "iperf3", "nvbandwidth", "gpu_compute"]
    for rails in (8, 0):
        assert levels.required_benchmarks("standard", hosts=2, rail_hosts=1, rails=rails) == [
            "allreduce_single", "allreduce_pairs", "iperf3", "gpu_compute"]


def test_standard_on_four_hosts_two_with_rails():
    selected = levels.level_benchmarks("standard", 4, 2)
    assert selected == ["allreduce_single", "allreduce_pairs", "ib_write_bw", "iperf3", "nvbandwidth", "gpu_compute"]
    # two hosts lack rails: they are each other's iperf3 partners, the hosts with rails run ib_write_bw only
    assert levels.host_benchmarks(selected, 4, 2, 8, False) == ["allreduce_single", "allreduce_pairs", "ib_write_bw", "gpu_compute"]
    assert levels.host_benchmarks(selected, 4, 2, 0, False) == ["allreduce_single", "allreduce_pairs", "iperf3", "gpu_compute"]
    # three hosts with rails of four: the one without has partners only if the others run iperf3 too
    selected = levels.level_benchmarks("standard", 4, 3)
    assert levels.host_benchmarks(selected, 4, 3, 4, True) == [
        "allreduce_single", "allreduce_pairs", "ib_write_bw", "iperf3", "nvbandwidth", "gpu_compute"]


def test_explicit_choices_win_over_the_level():
    assert levels.required_benchmarks("quick", benchmarks=["allreduce_multi"]) == ["allreduce_multi"]
    assert levels.required_benchmarks("full", benchmarks=[], burn_in="false") == []
    assert levels.required_benchmarks("quick", benchmarks=[], burn_in=True) == ["burn_in"]
    assert levels.asks_for_phase("benchmarks", "quick", ["iperf3"], overridden=True) is True
    assert levels.asks_for_phase("benchmarks", "full", [], overridden=True) is False


def test_an_unknown_level_is_refused():
    with pytest.raises(levels.LevelError, match="gpufleet_level must be one of quick, standard, full, got 'thorough'"):
        levels.level_benchmarks("thorough", 2, 0)
