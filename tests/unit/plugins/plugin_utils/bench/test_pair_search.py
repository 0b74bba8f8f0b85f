# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bad-node search on SYNTHETIC fleets (seeded placements; good pairs 100 +-3 %, slow ones 20)."""

from __future__ import annotations

import itertools
import random

import pytest

from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.bench import pair_search
from ansible_collections.gpufleet.acceptance.plugins.plugin_utils.bench.pair_search import (
    PairSearch,
    infer,
    pair_key,
    round_robin,
    simulate,
)


def names(indices):
    return {"node%02d" % index for index in indices}


def assert_disjoint_rounds(rounds):
    for pairs in rounds:
        nodes = [node for pair in pairs for node in pair]
        assert len(nodes) == len(set(nodes)), pairs


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 64])
def test_round_robin_is_every_pair_once_in_disjoint_rounds(n):
    rounds = round_robin(n)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    assert_disjoint_rounds(rounds)
    seen = [pair for pairs in rounds for pair in pairs]
    assert sorted(seen) == sorted(itertools.combinations(range(n), 2))


def test_round_robin_of_four_by_hand():
    assert round_robin(4) == [[(0, 3), (1, 2)], [(0, 2), (1, 3)], [(0, 1), (2, 3)]]


@pytest.mark.parametrize("n", [8, 9, 16, 33, 64])
@pytest.mark.parametrize("k", [1, 2, 3, 4])
def test_adaptive_names_k_bad_nodes_without_false_accusation(n, k):
    if 2 * k >= n - 1:  # k >= N/2 needs the floor: see the next test
        pytest.skip("k too large for the relative rule alone")
    for seed in range(25):
        bad = random.Random(seed * 131 + n * 17 + k).sample(range(n), k)
        verdict = simulate(n, bad, seed=seed)
        assert set(verdict["bad_nodes"]) == names(bad), (seed, bad, verdict)
        assert verdict["bad_links"] == []
        assert verdict["unresolved"] == []
        assert verdict["rounds_used"] <= 2 * k + 2
        assert_disjoint_rounds(verdict["rounds"])
        for node, pairs in verdict["bad_nodes"].items():
            assert len(pairs) >= 2 and all(node in pair for pair in pairs)


def test_half_the_fleet_bad_is_named_with_an_absolute_floor():
    # 4 of 8 bad: a round can hold a bad node in every pair; the floor (50) tells slow from normal
    for seed in range(25):
        bad = random.Random(seed).sample(range(8), 4)
        verdict = simulate(8, bad, seed=seed, floor=50.0)
        assert set(verdict["bad_nodes"]) == names(bad), (seed, bad, verdict)
        assert verdict["bad_links"] == [] and verdict["rounds_used"] <= 10


def test_clean_fleet_accuses_nobody_in_two_rounds():
    for n in (4, 8, 64):
        verdict = simulate(n, [], seed=n)
        assert verdict["bad_nodes"] == {} and verdict["bad_links"] == []
        assert verdict["rounds_used"] == 2


@pytest.mark.parametrize("n", [4, 8, 9, 64])
def test_round_robin_names_a_single_bad_link_as_that_link(n):
    for seed, (a, b) in enumerate([(0, 1), (1, n - 1), (2, 3)]):
        verdict = simulate(n, bad_links=[(a, b)], seed=seed, mode="round_robin")
        assert verdict["bad_links"] == [pair_key("node%02d" % a, "node%02d" % b)]
        assert verdict["bad_nodes"] == {}
        assert verdict["rounds_used"] == (n - 1 if n % 2 == 0 else n)


def test_round_robin_names_bad_node_and_a_link_elsewhere():
    verdict = simulate(8, bad_nodes=[5], bad_links=[(1, 2)], seed=3, mode="round_robin")
    assert set(verdict["bad_nodes"]) == {"node05"}
    assert verdict["bad_links"] == [("node01", "node02")]
    assert len(verdict["bad_nodes"]["node05"]) == 7


def test_adaptive_with_a_bad_link_never_accuses_a_node():
    # a bad link is named when the search happens to measure it, and never turns into a node
    for seed in range(40):
        verdict = simulate(8, bad_links=[(2, 6)], seed=seed)
        assert verdict["bad_nodes"] == {}
        assert verdict["bad_links"] in ([], [("node02", "node06")])


def test_infer_by_hand_link_versus_node():
    # a-b slow, a-c fast, b-d fast: both ends cleared -> the link; e slow with cleared c and d -> e
    results = {("a", "b"): 10.0, ("a", "c"): 100.0, ("b", "d"): 98.0, ("c", "e"): 12.0, ("d", "e"): 11.0}
    verdict = infer(["a", "b", "c", "d", "e"], results)
    assert verdict["bad_links"] == [("a", "b")]
    assert verdict["bad_nodes"] == {"e": [("c", "e"), ("d", "e")]}
    assert verdict["limit"] == pytest.approx(99.0 * 0.75)


def test_one_slow_pair_with_one_cleared_end_stays_unresolved():
    # b has a single cleared accuser: link a-b or node b cannot be told apart yet
    verdict = infer(["a", "b", "c", "d"], {("a", "b"): 10.0, ("a", "c"): 100.0, ("c", "d"): 100.0})
    assert verdict["bad_nodes"] == {} and verdict["bad_links"] == []
    assert verdict["unresolved"] == [("a", "b")] and verdict["suspects"] == ["b"]


def test_failed_pair_counts_as_slow():
    verdict = infer(["a", "b", "c", "d"], {("a", "b"): None, ("a", "c"): 100.0, ("b", "d"): 100.0, ("c", "d"): 99.0})
    assert verdict["bad_links"] == [("a", "b")]


def test_next_round_pairs_suspects_with_cleared_nodes():
    search = PairSearch(["a", "b", "c", "d", "e", "f"], seed=1, min_rounds=0)
    search.record({("a", "b"): 10.0, ("c", "d"): 100.0, ("e", "f"): 100.0})
    pairs = search.next_round()
    assert len(pairs) == 2
    partners = {node for pair in pairs for node in pair}
    assert {"a", "b"} <= partners
    assert all(len(set(pair) & {"a", "b"}) == 1 for pair in pairs)


def test_rounds_reported_for_the_note():
    # The note's figures: N = 4, 8, 64 and k = 1..4 (k < N/2), worst case over 20 seeds
    worst = {}
    for n in (4, 8, 64):
        for k in range(1, 5):
            if 2 * k >= n:
                continue
            for seed in range(20):
                bad = random.Random(seed + 1000 * k + n).sample(range(n), k)
                worst[(n, k)] = max(worst.get((n, k), 0), simulate(n, bad, seed=seed)["rounds_used"])
    assert all(rounds <= 2 * k + 2 for (n, k), rounds in worst.items())
    assert worst[(64, 1)] <= 3
    assert pair_search.MIN_ROUNDS == 2
