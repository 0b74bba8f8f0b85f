# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bad-node search's verdict on each node (pure): the steps of ``benchmarks.pair_search`` (checks/benchmarks.py).

The per-pair figures (checks/bench_pair_records.py :func:`pair_measurements`) go through
``bench/pair_search.infer`` with the mode, confirmation and seed of the search; :class:`PairSearch` holds what it
inferred and words each node's results: a convicted node fails naming the pairs that convicted it, a convicted link
fails on both ends naming the link, an unresolved slow pair (or one still awaiting its confirmation run) warns.
Besides the relative rule an absolute floor (the NIC-bound floor of the searched nodes) makes a pair slow; a
conviction says which rule made it, and a node none of whose pairs reaches the absolute floor fails. A pair run with
fewer ranks than the two nodes' GPUs fails on both nodes by name and is never a figure of the search.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from gpufleet.checks.bench_floors import left_out_of_rdma, nic_aggregate, nic_floor
from gpufleet.checks.bench_pair_records import (Pair, lost_hosts, pair_measurements, pair_ranks_problem,
                                                parse_search_label, unmeasured_pairs, unrun_pair_reasons)
from gpufleet.checks.bench_records import Record, hosts_of, parsed_of
from gpufleet.checks.bench_words import not_measured_words, search_summary
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.network import num
from gpufleet.plan.pair_search import DEFAULT_TOLERANCE, best, infer, measurements, pair_key

PAIR_SEARCH_CHECK = "benchmarks.pair_search"
TOLERANCE_SETTING = "gpufleet_pair_search_tolerance"


def short_run_results(by_name: Mapping[str, NodeContext], records: Sequence[Record]) -> dict[str, list[CheckResult]]:
    """``{host: [FAIL]}``: a run over fewer ranks than the pair's GPUs fails on its own (on both ends of the pair)."""
    short_runs: dict[Pair, list[tuple[str, int]]] = {}
    for record in records:
        problem = pair_ranks_problem(by_name, record)
        if problem:
            hosts = list(dict.fromkeys(hosts_of(record)))
            short_runs.setdefault(pair_key(hosts[0], hosts[1]), []).append((problem, parsed_of(record)["ranks"]))
    rank_items: dict[str, list[CheckResult]] = {}
    for pair, problems in sorted(short_runs.items()):
        runs = " (%d runs)" % len(problems) if len(problems) > 1 else ""
        for host in pair:
            rank_items.setdefault(host, []).append(result(
                PAIR_SEARCH_CHECK, FAIL, "pair %s-%s%s: %s" % (pair[0], pair[1], runs, problems[0][0]),
                measured="%d ranks" % problems[0][1], expected="one rank per GPU of both nodes",
                subject="%s-%s" % pair))
    return rank_items


class PairSearch:
    """The search over one fleet's pair records: its figures, what ``infer`` made of them, and each node's results."""

    def __init__(self, nodes: Sequence[NodeContext], records: Sequence[Record]) -> None:
        found: dict[str, Any] = {}
        for record in records:
            found.update(parse_search_label(record.get("group")))
        self.nodes = nodes
        self.mode, self.confirm = found.get("mode"), found.get("confirm", 1)
        by_name = {node.name: node for node in nodes}
        self.rank_items = short_run_results(by_name, records)
        records_judged = [record for record in records if not pair_ranks_problem(by_name, record)]
        lost = lost_hosts(records_judged)
        self.results = pair_measurements(records_judged, lost)
        # a pair whose every run measured nothing (a host lost, a launcher that could not start it): not measured, not
        # slow
        self.unmeasured = {pair: whys for pair, whys in unmeasured_pairs(records_judged, lost).items()
                           if pair not in self.results}
        self.tolerance = float(nodes[0].settings.get(TOLERANCE_SETTING) or DEFAULT_TOLERANCE)
        measured = {host for pair in self.results for host in pair}
        # the absolute floor: a fleet slow everywhere has no fast pair for the relative rule to compare with
        self.absolute = nic_floor([nic_aggregate(node) for node in nodes if node.name in measured])
        self.floor = self.absolute["floor"] if self.absolute else None
        self.verdict = infer([node.name for node in nodes], self.results, tolerance=self.tolerance, floor=self.floor,
                             confirm=self.confirm)
        rounds = sorted({rnd for rnd in (record.get("round") for record in records) if rnd is not None})
        self.summary = search_summary(self.verdict, self.mode, len(rounds))
        self.source = self._source(found.get("seed"), len(rounds))
        self.limit = self.verdict["limit"]
        self.relative = None if self.verdict["reference"] is None else self.verdict["reference"] * (1 - self.tolerance)
        self.pending = set(self.verdict["pending"])

    def _source(self, seed: Any, rounds: int) -> str:
        """Where the search's limit comes from: its tolerance (policy or site setting), floor, mode and size."""
        # 25 % is a gpufleet policy (docs/baselines.md 9), not a published figure: the result says so
        policy = "policy (docs/baselines.md 9)" if self.nodes[0].settings.get(TOLERANCE_SETTING) is None else \
            "site setting %s" % TOLERANCE_SETTING
        floor_words = " or below the absolute floor %s GB/s (%s)" % (num(self.floor), self.absolute["source"]) \
            if self.absolute else " (no absolute floor: NIC aggregate unknown)"
        return policy + (": bad-node search (gpufleet/plan/pair_search.py%s): slow = more than %.0f%% below the "
                         "median of the best pairs%s%s; %d pair(s), %d round(s)") % (
            ", %s, seed %s" % (self.mode, seed) if self.mode and seed else "", self.tolerance * 100, floor_words,
            ", a slow pair convicts only once a confirmation run is slow too" if self.confirm > 1 else "",
            len(self.results), rounds)

    def _best(self, pair: Pair) -> Optional[float]:
        figure: Optional[float] = best(self.results[pair])
        return figure

    def rule(self, pairs: Sequence[Pair]) -> str:
        """Which rule made these pairs slow: the absolute floor, the relative rule, or both."""
        floor, relative = self.floor, self.relative
        figures = [best(self.results.get(pair)) for pair in pairs]
        below_floor = floor is not None and all(value is None or value < floor for value in figures)
        below_relative = relative is not None and all(value is None or value < relative for value in figures)
        relative_words = num(round(relative, 2)) if relative is not None else "none"
        if below_floor and below_relative:
            return "convicted by both rules: below the absolute floor %s GB/s and the relative limit %s GB/s" % (
                num(floor), relative_words)
        if below_floor:
            return "convicted by the absolute floor %s GB/s (the relative limit %s GB/s alone would pass)" % (
                num(floor), relative_words)
        return "convicted by the relative rule (limit %s GB/s%s)" % (
            relative_words, ", absolute floor %s GB/s" % num(floor) if floor is not None else "")

    def words(self, pair: Pair) -> str:
        """``a-b 180 GB/s (best of 2 runs: 120, 180)``: a pair and its figure(s)."""
        values = measurements(self.results.get(pair))
        value = best(values)
        text = "%s-%s %s" % (pair[0], pair[1], "no figure" if value is None else "%s GB/s" % num(round(value, 2)))
        if len(values) > 1:
            text += " (best of %d runs: %s)" % (
                len(values), ", ".join("-" if item is None else num(round(item, 2)) for item in values))
        return text

    def node_results(self, node: NodeContext) -> list[CheckResult]:
        """The search's results for one node: outside the search, convicted, slow everywhere, unresolved or clear."""
        mine = [pair for pair in self.results if node.name in pair]
        missing = not_measured_words(self.unmeasured, node.name)
        if not mine:
            return self._outside_results(node, missing)
        items = self._conviction_results(node.name)
        everywhere = None if items else self._slow_everywhere_result(node.name, mine)
        if everywhere:
            return self.rank_items.get(node.name, []) + [everywhere]
        items += self._unresolved_results(node.name)
        if missing and items:
            message = "not measured (no figure, not slow): %s; search: %s" % (missing, self.summary)
            items.append(result(PAIR_SEARCH_CHECK, WARN, message, subject=node.name))
        if not items:
            items.append(self._clear_result(mine, missing))
        return self.rank_items.get(node.name, []) + items

    def _outside_results(self, node: NodeContext, missing: str) -> list[CheckResult]:
        """A node in no measured pair: its short runs, its unmeasured pairs, left out of RDMA, or never run."""
        if node.name in self.rank_items:
            return self.rank_items[node.name]
        why = left_out_of_rdma(node, self.nodes)
        if missing and not why:
            message = "not measured: no pair with this node produced a figure: %s; search: %s" % (missing, self.summary)
            return [result(PAIR_SEARCH_CHECK, SKIP, message, subject=node.name)]
        if why:
            return [result(PAIR_SEARCH_CHECK, FAIL, "%s; in no pair of the search" % why, measured="no RDMA rail",
                           expected="Active RDMA ports on the compute rails", subject=node.name)]
        unrun = unrun_pair_reasons(node)
        if unrun:
            # the preflight's record names the missing binary or launcher and the fix: unverified, so INCOMPLETE
            return [result(PAIR_SEARCH_CHECK, SKIP,
                           "not judged: the node was in no measured pair: %s" % "; ".join(unrun))]
        return [result(PAIR_SEARCH_CHECK, SKIP, "not judged: the node was in no measured pair")]

    def _conviction_results(self, name: str) -> list[CheckResult]:
        """FAILS of a convicted node (naming the pairs that convicted it) and of each convicted link with it."""
        items = []
        if name in self.verdict["bad_nodes"]:
            pairs = self.verdict["bad_nodes"][name]
            message = "slow node: every pair with it is slow, %s by %s against nodes proven good (limit %s GB/s); " \
                "search: %s"
            items.append(result(PAIR_SEARCH_CHECK, FAIL, message % (
                self.rule(pairs), ", ".join(self.words(pair) for pair in pairs), num(round(self.limit, 2)),
                self.summary), measured=[self._best(pair) for pair in pairs], expected=round(self.limit, 3),
                threshold_source=self.source, subject=name))
        for pair in self.verdict["bad_links"]:
            if name in pair:
                message = "slow link %s-%s: %s, while both ends are fast with other partners, %s; search: %s"
                items.append(result(PAIR_SEARCH_CHECK, FAIL, message % (
                    pair[0], pair[1], self.words(pair), self.rule([pair]), self.summary), measured=self._best(pair),
                    expected=round(self.limit, 3), threshold_source=self.source, subject="%s-%s" % pair))
        return items

    def _slow_everywhere_result(self, name: str, mine: Sequence[Pair]) -> Optional[CheckResult]:
        """A FAIL when no pair with the node reached the absolute floor and no partner explains it: the relative rule
        cannot see a fleet slow everywhere; else None."""
        floor = self.floor
        partners = {pair[0] if pair[1] == name else pair[1] for pair in mine}
        figures = [self._best(pair) for pair in mine]
        if (floor is None or name in self.verdict["cleared"] or partners <= set(self.verdict["bad_nodes"])
                or not all(value is None or value < floor for value in figures)):
            return None
        message = "below the absolute floor in every pair: %s, convicted by the absolute floor %s GB/s (no pair with " \
            "it reached it); search: %s"
        return result(PAIR_SEARCH_CHECK, FAIL,
                      message % (", ".join(self.words(pair) for pair in sorted(mine)), num(floor), self.summary),
                      measured=[self._best(pair) for pair in sorted(mine)], expected=floor,
                      threshold_source=self.source, subject=name)

    def _unresolved_results(self, name: str) -> list[CheckResult]:
        """WARNS of the node's slow pairs the search resolved to no node or link (or that await confirmation)."""
        items = []
        for pair in self.verdict["unresolved"]:
            if name in pair:
                why = "awaits its confirmation run (the search ran out of rounds)" if pair in self.pending \
                    else "not resolved to a node or a link"
                items.append(result(PAIR_SEARCH_CHECK, WARN,
                                    "slow pair %s %s; search: %s" % (self.words(pair), why, self.summary),
                                    measured=self._best(pair), expected=round(self.limit, 3),
                                    threshold_source=self.source, subject="%s-%s" % pair))
        return items

    def _clear_result(self, mine: Sequence[Pair], missing: str) -> CheckResult:
        """No pair convicts the node: PASS; a partner of a lost host WARNS (the pairs with it were not measured)."""
        tail = "; not measured (no figure, not slow): %s" % missing if missing else ""
        message = "%d pair(s) with this node, none convicts it (limit %s GB/s)%s; search: %s" % (
            len(mine), num(round(self.limit, 2)) if self.limit is not None else "none", tail, self.summary)
        return result(PAIR_SEARCH_CHECK, WARN if missing else PASS, message, expected=self.limit,
                      threshold_source=self.source)
