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
    "c": {"gpufleet_burn_in": True},
    "d": {"gpufleet_benchmarks": "allreduce_single", "gpufleet_burn_in": "no"},
    "e": {},
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
