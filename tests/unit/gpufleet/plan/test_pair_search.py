# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bad-node search on SYNTHETIC fleets (seeded placements; good pairs 100 +-3 %, slow ones 20)."""

from __future__ import annotations

import itertools
import random

import pytest

from gpufleet.plan import pair_search
from gpufleet.plan.pair_search import PairSearch, infer, pair_key, round_robin, simulate


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


# --- confirmation runs (confirm=2): a slow pair convicts only when a second run is slow too -------------


def test_default_max_rounds_by_hand():
    assert pair_search.default_max_rounds(4) == 5             # N - 1 + 2
    assert pair_search.default_max_rounds(4, confirm=2) == 7  # + 2 for the confirmation runs
    assert pair_search.default_max_rounds(4, "round_robin") == 5
    assert pair_search.default_max_rounds(5, "round_robin", 2) == 9   # 5 rounds (odd N) + 2 + 2


def test_a_pair_is_judged_on_its_best_run():
    status, _limit = pair_search.classify({("a", "b"): [10.0, 97.0], ("c", "d"): 100.0, ("e", "f"): [None, 99.0]})
    assert status == {("a", "b"): "fast", ("c", "d"): "fast", ("e", "f"): "fast"}


def test_confirm_by_hand_node_and_link_wait_for_their_second_run():
    # as test_infer_by_hand_link_versus_node, but each slow pair measured once: nothing convicts yet
    once = {("a", "b"): [10.0], ("a", "c"): [100.0], ("b", "d"): [98.0], ("c", "e"): [12.0], ("d", "e"): [11.0]}
    verdict = infer(["a", "b", "c", "d", "e"], once, confirm=2)
    assert verdict["bad_nodes"] == {} and verdict["bad_links"] == []
    assert verdict["pending"] == [("a", "b"), ("c", "e"), ("d", "e")]
    assert verdict["unresolved"] == [("a", "b"), ("c", "e"), ("d", "e")] and verdict["suspects"] == ["e"]
    # one accuser of e confirmed: still not enough (two are needed)
    one_confirmed = dict(once)
    one_confirmed[("c", "e")] = [12.0, 13.0]
    verdict = infer(["a", "b", "c", "d", "e"], one_confirmed, confirm=2)
    assert verdict["bad_nodes"] == {} and verdict["pending"] == [("a", "b"), ("d", "e")]
    twice = {("a", "b"): [10.0, 9.0], ("a", "c"): [100.0], ("b", "d"): [98.0], ("c", "e"): [12.0, 13.0], ("d", "e"): [11.0, 10.0]}
    verdict = infer(["a", "b", "c", "d", "e"], twice, confirm=2)
    assert verdict["bad_links"] == [("a", "b")]
    assert verdict["bad_nodes"] == {"e": [("c", "e"), ("d", "e")]}
    assert verdict["pending"] == [] and verdict["unresolved"] == []


def test_a_confirmation_that_comes_back_fast_clears_both_ends():
    verdict = infer(["a", "b", "c", "d"], {("a", "b"): [10.0, 99.0], ("a", "c"): [100.0], ("b", "d"): [98.0], ("c", "d"): [97.0]}, confirm=2)
    assert verdict["bad_links"] == [] and verdict["unresolved"] == [] and verdict["cleared"] == ["a", "b", "c", "d"]


def test_next_round_re_measures_the_pending_pairs_first():
    search = PairSearch(["a", "b", "c", "d", "e", "f"], seed=3, min_rounds=0, confirm=2)
    # e slow with two cleared partners, each once: the next round re-measures one of them (they share e)
    search.record({("a", "b"): 100.0, ("c", "e"): 10.0, ("d", "f"): 99.0})
    search.record({("a", "c"): 98.0, ("b", "d"): 100.0, ("e", "f"): 11.0})
    pairs = search.next_round()
    assert len([pair for pair in pairs if "e" in pair]) == 1
    assert [pair for pair in pairs if "e" in pair][0] in (("c", "e"), ("e", "f"))


@pytest.mark.parametrize("n", [6, 8, 16, 64])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_adaptive_with_confirmation_names_k_bad_nodes(n, k):
    if 2 * k >= n - 1:
        pytest.skip("k too large for the relative rule alone")
    for seed in range(15):
        bad = random.Random(seed * 131 + n * 17 + k).sample(range(n), k)
        verdict = simulate(n, bad, seed=seed, confirm=2)
        assert set(verdict["bad_nodes"]) == names(bad), (seed, bad, verdict)
        assert verdict["bad_links"] == [] and verdict["unresolved"] == [] and verdict["pending"] == []
        assert verdict["rounds_used"] <= 2 * k + 4
        assert_disjoint_rounds(verdict["rounds"])
        for node, pairs in verdict["bad_nodes"].items():
            assert len(pairs) >= 2 and all(node in pair for pair in pairs)


@pytest.mark.parametrize("n", [4, 6, 8, 9])
def test_round_robin_confirms_the_bad_link_in_one_more_round(n):
    verdict = simulate(n, bad_links=[(1, n - 1)], seed=n, mode="round_robin", confirm=2)
    assert verdict["bad_links"] == [pair_key("node01", "node%02d" % (n - 1))] and verdict["bad_nodes"] == {}
    schedule = n - 1 if n % 2 == 0 else n
    assert verdict["rounds_used"] == schedule + 1
    assert verdict["rounds"][-1] == [pair_key("node01", "node%02d" % (n - 1))]


def test_round_robin_confirms_a_bad_node_in_two_more_rounds():
    verdict = simulate(6, bad_nodes=[2], seed=1, mode="round_robin", confirm=2)
    assert set(verdict["bad_nodes"]) == {"node02"} and len(verdict["bad_nodes"]["node02"]) == 2
    assert verdict["rounds_used"] == 5 + 2


def test_transient_dips_convict_without_confirmation_and_never_with_it():
    """10 % of the runs of GOOD pairs dip to the slow figure once (a transient). Without confirmation
    the search convicts good nodes at some seeds; with it a good node is never convicted, and a good
    pair is named a bad link only when BOTH its runs dipped."""
    false_nodes = {1: 0, 2: 0}
    for confirm in (1, 2):
        for seed in range(150):
            bad = random.Random(seed).sample(range(8), 1)
            verdict = simulate(8, bad, seed=seed, confirm=confirm, dip=0.1)
            false_nodes[confirm] += len(set(verdict["bad_nodes"]) - names(bad))
            if confirm == 2:
                for link in verdict["bad_links"]:
                    assert verdict["dips"].count(link) >= 2, (seed, link, verdict["dips"])
                for node in set(verdict["bad_nodes"]) - names(bad):
                    assert all(verdict["dips"].count(pair) >= 2 for pair in verdict["bad_nodes"][node]), (seed, node)
    assert false_nodes[1] > 0
    assert false_nodes[2] == 0


def test_node_whose_pairs_are_all_with_convicted_nodes_stays_a_suspect():
    """b and c are convicted by the cleared a and d; e met only b and c, so its two slow pairs are
    explained by them and prove nothing about e: e must stay a suspect (to be paired with a or d),
    neither cleared nor convicted. (Before the fix e fell out of the search unjudged.)"""
    results = {("a", "d"): 100.0, ("a", "b"): 20.0, ("b", "d"): 20.0, ("a", "c"): 20.0, ("c", "d"): 20.0,
               ("b", "e"): 20.0, ("c", "e"): 20.0}
    verdict = infer(["a", "b", "c", "d", "e"], results)
    assert sorted(verdict["bad_nodes"]) == ["b", "c"]
    assert verdict["cleared"] == ["a", "d"]
    assert verdict["suspects"] == ["e"]
    assert verdict["unresolved"] == []
    assert verdict["bad_links"] == []


def test_second_round_avoids_every_measured_pair_when_it_can():
    # After round 1 = h1-h3, h2-h5, h4-h6 a perfect matching of new pairs always exists (e.g. h1-h2, h3-h4,
    # h5-h6); one greedy pass over a shuffled order strands h2 and h5 in about 1 order of 5 (67 of the
    # seeds 0..299 did before random_matching drew again), which left a node without a new partner.
    nodes = ["h%d" % index for index in range(1, 7)]
    measured = {pair_key("h1", "h3"), pair_key("h2", "h5"), pair_key("h4", "h6")}
    for seed in range(300):
        pairs = pair_search.random_matching(nodes, random.Random(seed), avoid=measured)
        assert len(pairs) == 3 and not set(pairs) & measured, (seed, pairs)
        assert sorted(node for pair in pairs for node in pair) == nodes


def test_matching_falls_back_to_fewest_repeats_when_none_avoids_them():
    # 4 nodes after all 3 rounds of round robin: every pair is measured, a round still pairs everyone
    nodes = ["a", "b", "c", "d"]
    measured = {pair_key(x, y) for x, y in itertools.combinations(nodes, 2)}
    pairs = pair_search.random_matching(nodes, random.Random(1), avoid=measured)
    assert len(pairs) == 2 and sorted(node for pair in pairs for node in pair) == nodes
