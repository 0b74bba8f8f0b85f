# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""phase_hosts: which hosts validate_cluster.yml runs the optional phases on."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.acceptance.plugins.filter.phase_hosts import phase_hosts

HOSTVARS = {
    "a": {"gpufleet_benchmarks": ["allreduce_single"], "gpufleet_burn_in": "true"},  # -e gives strings
    "b": {"gpufleet_benchmarks": [], "gpufleet_burn_in": "false"},
    # level quick: only the explicit variables ask (the default level, standard, asks for benchmarks)
    "c": {"gpufleet_burn_in": True, "gpufleet_level": "quick"},
    "d": {"gpufleet_benchmarks": "allreduce_single", "gpufleet_burn_in": "no"},
    "e": {"gpufleet_level": "quick"},
}


def test_benchmarks_need_a_non_empty_list_and_keep_the_input_order():
    assert phase_hosts(["e", "d", "c", "b", "a"], HOSTVARS, "benchmarks") == ["d", "a"]


def test_burn_in_reads_the_value_as_the_bool_filter_does():
    assert phase_hosts(["a", "b", "c", "d", "e"], HOSTVARS, "burn_in") == ["a", "c"]


def test_no_host_asks_gives_no_host_and_unknown_names_are_left_out():
    assert phase_hosts(["b", "e"], HOSTVARS, "benchmarks") == []
    assert phase_hosts(["zz", "a"], HOSTVARS, "benchmarks") == ["a"]


@pytest.mark.parametrize("hosts, phase, message", [
    (["a"], "burnin", "phase must be one of benchmarks, burn_in, got 'burnin'"),
    ("a,b", "benchmarks", "the input must be a list of host names, got str"),
])
def test_bad_arguments_say_what_is_wrong(hosts, phase, message):
    with pytest.raises(AnsibleFilterError, match=message):
        phase_hosts(hosts, HOSTVARS, phase)


# Levels (gpufleet_level): standard (the default) runs the benchmarks, full the benchmarks and the burn-in; an explicit
# gpufleet_benchmarks / gpufleet_burn_in wins over the level.
LEVEL_HOSTVARS = {
    "default": {},
    "quick": {"gpufleet_level": "quick"},
    "standard": {"gpufleet_level": "standard"},
    "full": {"gpufleet_level": "full"},
    "full-no-bench": {"gpufleet_level": "full", "gpufleet_benchmarks": []},
    "full-no-burn": {"gpufleet_level": "full", "gpufleet_burn_in": "false"},
    "quick-bench": {"gpufleet_level": "quick", "gpufleet_benchmarks": ["iperf3"]},
}


def test_the_level_decides_when_the_phase_variable_is_not_set():
    names = list(LEVEL_HOSTVARS)
    assert phase_hosts(names, LEVEL_HOSTVARS, "benchmarks") == ["default", "standard", "full", "full-no-burn", "quick-bench"]
    assert phase_hosts(names, LEVEL_HOSTVARS, "burn_in") == ["full", "full-no-bench"]


def test_an_unknown_level_is_refused_naming_the_host():
    with pytest.raises(AnsibleFilterError, match="x: gpufleet_level must be one of quick, standard, full, got 'thorough'"):
        phase_hosts(["x"], {"x": {"gpufleet_level": "thorough"}}, "benchmarks")
