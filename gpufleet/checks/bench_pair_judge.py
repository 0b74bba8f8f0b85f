# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pair runs judged across the fleet (pure): :class:`PairJudge`, the base of the iperf3 and perftest checks.

The plan is a directed ring: every host, or HCA, meets two partners. A pair is fast when each direction measured
reaches its threshold; from the pairs the checks infer who is at fault with the fault model of bench/pair_search.py
(:func:`infer_ends`): an end in a fast pair is *cleared*; an end that is not cleared and is slow with two cleared
partners is *convicted* (a slow node, or a slow HCA rail); a slow pair of two cleared ends is a slow *link* (both
ends fail, naming the link); a slow pair that cannot be resolved fails the ends that are not cleared (no run proved
them good) and leaves the cleared end passing. A host is never failed because its partner was slow. A missing binary
fails the host that lacked it, and its runs are left out of the inference (they say nothing of the other end); a
skipped benchmark (outcome ``skipped``) is SKIP with its reason.

A pair none of whose repeats produced a figure is *not measured*, never slow: it stays out of the inference, and a
host whose every pair is unmeasured is SKIP "not measured". A repeat whose tool says it failed is such a repeat,
whatever figure its first seconds left (:meth:`PairJudge.run_error`).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional, Sequence, TypedDict

from gpufleet.checks.bench_net_floors import INFERENCE_SOURCE, Limit
from gpufleet.checks.bench_net_records import End, Ends, OWN_FAULTS, outcome_words, record_label, records, vote, vote_of
from gpufleet.checks.bench_records import Record
from gpufleet.checks.bench_words import repeat_words
from gpufleet.checks.model import ERROR, FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.network import num


class Edge(TypedDict):
    """The repeats of one directed run: their figures, why some have none, notes on the output, a missing tool."""

    values: list[float]
    problems: list[str]
    notes: list[str]
    own_fault: bool


class EndsVerdict(TypedDict):
    """What the fault model makes of the pairs: convicted ends (with their accusing pairs), slow links, the rest."""

    convicted: dict[End, list[Ends]]
    links: list[Ends]
    unresolved: list[Ends]
    cleared: set[End]


def infer_ends(pairs: Mapping[Ends, bool]) -> EndsVerdict:
    """``{convicted: {end: [pair]}, links: [pair], unresolved: [pair], cleared: set}`` from ``{pair: fast (bool)}``.

    The fault model of bench/pair_search.py (see the module docstring), on pairs already judged.
    """
    cleared: set[End] = set()
    for pair, fast in pairs.items():
        if fast:
            cleared.update(pair)
    ends = sorted({end for pair in pairs for end in pair}, key=str)
    convicted: dict[End, list[Ends]] = {}
    for end in ends:
        if end in cleared:
            continue
        accusers = sorted((pair for pair, fast in pairs.items()
                           if not fast and end in pair and _other(pair, end) in cleared), key=str)
        if len({_other(pair, end) for pair in accusers}) >= 2:
            convicted[end] = accusers
    links, unresolved = [], []
    for pair, fast in sorted(pairs.items(), key=lambda item: str(item[0])):
        if fast:
            continue
        if pair[0] in cleared and pair[1] in cleared:
            links.append(pair)
        elif pair[0] not in convicted and pair[1] not in convicted:
            unresolved.append(pair)
    return {"convicted": convicted, "links": links, "unresolved": unresolved, "cleared": cleared}


def _other(pair: Ends, end: End) -> End:
    return pair[1] if pair[0] == end else pair[0]


def pair_of(a: End, b: End) -> Ends:
    """The undirected pair of two ends, in a fixed order."""
    return (a, b) if str(a) <= str(b) else (b, a)


def host_of(end: End) -> str:
    """The host of an end (a host, or a (host, HCA) rail)."""
    return end[0] if isinstance(end, tuple) else end


def end_words(end: End) -> str:
    """``host`` or ``host:mlx5_0``."""
    return "%s:%s" % end if isinstance(end, tuple) else str(end)


def _new_edge() -> Edge:
    return {"values": [], "problems": [], "notes": [], "own_fault": False}


class PairJudge:
    """One pair-run check over the fleet: gather the directed runs, vote the repeats, infer, word the results.

    Subclasses give ``check_id``, ``kind``, ``unit``, ``higher_is_better``, :meth:`ends` (the two
    ends of a record: hosts, or (host, HCA)), :meth:`figure` (of a parsed output) and
    :meth:`threshold` (``(value, words for the message, source)`` for a run, or None when there is nothing to judge
    against).
    """

    check_id = ""
    kind = ""
    what = ""
    unit = ""
    digits = 3
    higher_is_better = True

    def ends(self, record: Record) -> Optional[Ends]:
        hosts = record.get("hosts") or []
        return (str(hosts[0]), str(hosts[1])) if len(hosts) == 2 else None

    def figure(self, parsed: dict[str, Any]) -> Optional[float]:
        raise NotImplementedError

    def run_error(self, parsed: dict[str, Any]) -> Any:
        """What the tool's own output says went wrong with the run (None when nothing): such a repeat has no figure."""
        del parsed
        return None

    def threshold(self, client_node: Optional[NodeContext], server_node: Optional[NodeContext]) -> Optional[Limit]:
        raise NotImplementedError

    def fmt(self, value: float) -> str:
        return num(round(value, self.digits))

    def __init__(self, nodes: Sequence[NodeContext]) -> None:
        self.nodes = {node.name: node for node in nodes}
        self.how = vote_of(nodes)
        self.own: dict[str, list[CheckResult]] = {name: [] for name in self.nodes}
        self.edges: dict[Ends, Edge] = {}

    # --- gathering the repeats ---

    def gather(self) -> None:
        for name, node in self.nodes.items():
            for rec in records(node, self.kind):
                self._gather_one(name, rec)

    def _gather_one(self, name: str, rec: Record) -> None:
        """One record of host ``name``: a result of its own (skipped, missing tool), or a repeat of its directed run."""
        outcome = rec.get("outcome")
        if outcome == "skipped":
            self.own[name].append(result(self.check_id, SKIP, "%s not run on this host: %s" % (
                self.what, rec.get("reason") or "skipped"), subject=record_label(rec)))
            return
        if outcome in OWN_FAULTS:
            # the tool is missing here: nothing measured, not verified (INCOMPLETE where required), never failed
            self.own[name].append(result(self.check_id, SKIP, "not verified: %s did not run on %s: %s" % (
                record_label(rec), name, outcome_words(rec)), measured=outcome, subject=record_label(rec)))
        ends = self.ends(rec)
        if ends is None:
            if outcome not in OWN_FAULTS:
                self.own[name].append(result(self.check_id, ERROR, "%s: the record names no client and server" % (
                    record_label(rec)), subject=record_label(rec)))
            # else the benchmark preflight's record of a host that cannot run the tool: no run, so no link to judge
            return
        edge = self.edges.setdefault(ends, _new_edge())
        if outcome in OWN_FAULTS:
            edge["own_fault"] = True
        value, problem = self._read_repeat(name, rec)
        if value is None:
            edge["problems"].append(problem)
            return
        edge["values"].append(float(value))
        for note in self.notes(rec["parsed"]):
            if note not in edge["notes"]:
                edge["notes"].append(note)

    def _read_repeat(self, name: str, rec: Record) -> tuple[Optional[float], str]:
        """``(figure, "")`` of one repeat, or ``(None, why it has none)``."""
        repeat = "repeat %s on %s" % (rec.get("repeat") or 1, name)
        if rec.get("outcome") not in (None, "ok"):
            return None, "%s: %s" % (repeat, outcome_words(rec))
        parsed = rec.get("parsed") if isinstance(rec.get("parsed"), dict) else None
        said = self.run_error(parsed) if parsed is not None else None
        if said:
            # a run its tool calls failed (a peer rebooted: "control socket has closed unexpectedly") measured
            # nothing about the link, whatever figure its first seconds left
            return None, "%s: %s reported: %s" % (repeat, self.what, said)
        value = self.figure(self.parsed_of(rec)) if parsed is not None else None
        if value is None:
            said = parsed.get("error") if parsed is not None else None
            why = "%s said: %s" % (self.what, said) if said else "no figure in the output"
            return None, "%s: %s" % (repeat, why)
        return value, ""

    def parsed_of(self, record: Record) -> dict[str, Any]:
        """What :meth:`figure` reads of a record (its ``parsed``; iperf3 marks runs of several processes)."""
        parsed: dict[str, Any] = record["parsed"]
        return parsed

    def notes(self, parsed: dict[str, Any]) -> list[str]:
        """Words about a repeat's output worth keeping in the message (none by default)."""
        del parsed
        return []

    def edge_figure(self, edge: Edge) -> Optional[float]:
        return vote(edge["values"], self.how, self.higher_is_better)[0]

    def edge_words(self, ends: Ends, edge: Edge) -> str:
        value = self.edge_figure(edge)
        text = "%s->%s " % (end_words(ends[0]), end_words(ends[1]))
        if value is None:
            return text + "no figure (%s)" % "; ".join(edge["problems"][:3])
        text += "%s %s%s" % (self.fmt(value), self.unit, repeat_words(edge["values"], self.how, self.fmt))
        if edge["notes"]:
            text += " (%s)" % ", ".join(edge["notes"])
        if edge["problems"]:
            text += " [%s]" % "; ".join(edge["problems"][:3])
        return text

    # --- judging ---

    def infer(self) -> tuple[EndsVerdict, dict[Ends, Limit], dict[Ends, bool]]:
        """``(verdict, limits, pairs)``: gather the runs, judge each pair against its threshold, infer the ends.

        Runs without a threshold (no line rate, no profile floor) stay out of ``limits``: their hosts get a SKIP with
        the figures.
        """
        self.gather()
        limits: dict[Ends, Limit] = {}
        pairs: dict[Ends, bool] = {}
        for ends, edge in self.edges.items():
            if edge["own_fault"]:
                # one side could not run at all (missing binary): that host fails for it; the run says nothing of the
                # link
                continue
            client, server = (self.nodes.get(host_of(end)) for end in ends)
            limit = self.threshold(client, server)
            if limit is None:
                continue
            limits[ends] = limit
            value = self.edge_figure(edge)
            if value is None:
                # not measured (every repeat failed or said nothing): no evidence that the pair is slow, nor fast
                continue
            fast = value >= limit[0] if self.higher_is_better else value <= limit[0]
            key = pair_of(*ends)
            pairs[key] = pairs.get(key, True) and fast
        return infer_ends(pairs), limits, pairs

    def judge(self) -> dict[str, list[CheckResult]]:
        """``{node: [result]}``."""
        verdict, limits, pairs = self.infer()
        out = {}
        for name in self.nodes:
            out[name] = list(self.own[name]) + self._node_results(name, verdict, limits, pairs)
            if not out[name]:
                out[name] = [result(self.check_id, SKIP, "no %s run recorded with this host" % self.what)]
        return out

    def _limit_words(self, limits: Mapping[Ends, Limit], pair_edges: Iterable[Ends]) -> str:
        values = sorted({limits[ends][:2] for ends in pair_edges if ends in limits}, key=str)
        kind = "floor" if self.higher_is_better else "limit"
        return "; ".join("%s %s %s (%s)" % (kind, self.fmt(value), self.unit, words) for value, words in values)

    def _runs_words(self, pair_edges: Iterable[Ends]) -> str:
        return ", ".join(self.edge_words(ends, self.edges[ends]) for ends in pair_edges)

    def _worst_of(self, pair_edges: Iterable[Ends]) -> Optional[float]:
        """The worst voted figure of these runs, rounded as the results carry it (None without one)."""
        worst = self._worst([self.edge_figure(self.edges[ends]) for ends in pair_edges])
        return None if worst is None else round(worst, self.digits)

    def _node_results(self, name: str, verdict: EndsVerdict, limits: Mapping[Ends, Limit],
                      pairs: Mapping[Ends, bool]) -> list[CheckResult]:
        mine = sorted((ends for ends in self.edges
                       if name in (host_of(ends[0]), host_of(ends[1])) and not self.edges[ends]["own_fault"]), key=str)
        if not mine:
            return []
        out = (self._convicted_results(name, mine, verdict, limits) + self._link_results(name, mine, verdict, limits)
               + self._stuck_results(name, mine, verdict, limits))
        return out or [self._cleared_result(name, mine, limits, pairs)]

    def _slow_result(self, message: str, pair_edges: Sequence[Ends], limits: Mapping[Ends, Limit],
                     subject: str) -> CheckResult:
        """A FAIL the fault model inferred from these runs, with their worst figure and the thresholds they missed."""
        return result(self.check_id, FAIL, message, measured=self._worst_of(pair_edges),
                      expected=self._expected(limits, pair_edges),
                      threshold_source=self._sources(limits, pair_edges, INFERENCE_SOURCE), subject=subject)

    def _convicted_results(self, name: str, mine: Sequence[Ends], verdict: EndsVerdict,
                           limits: Mapping[Ends, Limit]) -> list[CheckResult]:
        """A convicted end of this host (slow with two cleared partners) fails, naming its runs."""
        out = []
        for end in [end for end in verdict["convicted"] if host_of(end) == name]:
            pair_edges = [ends for ends in mine if pair_of(*ends) in verdict["convicted"][end]]
            message = ("slow %s %s: every %s run with it misses the threshold, against partners that meet it with "
                       "others: %s; %s" % ("rail" if isinstance(end, tuple) else "host", end_words(end), self.what,
                                           self._runs_words(pair_edges), self._limit_words(limits, pair_edges)))
            out.append(self._slow_result(message, pair_edges, limits, end_words(end)))
        return out

    def _link_results(self, name: str, mine: Sequence[Ends], verdict: EndsVerdict,
                      limits: Mapping[Ends, Limit]) -> list[CheckResult]:
        """A slow link of two cleared ends fails on both ends, naming the link."""
        out = []
        for pair in verdict["links"]:
            if name not in (host_of(pair[0]), host_of(pair[1])):
                continue
            pair_edges = [ends for ends in mine if pair_of(*ends) == pair]
            link = "%s<->%s" % (end_words(pair[0]), end_words(pair[1]))
            message = "slow link %s: %s, while both ends meet the threshold with other partners; %s" % (
                link, self._runs_words(pair_edges), self._limit_words(limits, pair_edges))
            out.append(self._slow_result(message, pair_edges, limits, link))
        return out

    def _stuck_results(self, name: str, mine: Sequence[Ends], verdict: EndsVerdict,
                       limits: Mapping[Ends, Limit]) -> list[CheckResult]:
        """An end of this host in an unresolved slow pair that no fast run cleared fails (no run proved it good)."""
        stuck: dict[End, list[Ends]] = {}
        for pair in verdict["unresolved"]:
            for end in pair:
                if host_of(end) == name and end not in verdict["cleared"]:
                    stuck.setdefault(end, []).append(pair)
        out = []
        for end, unresolved in sorted(stuck.items(), key=lambda item: str(item[0])):
            pair_edges = [ends for ends in mine if pair_of(*ends) in unresolved]
            message = ("%s %s not cleared: no %s run with it meets the threshold (%s) and no partner proves which "
                       "end is slow; %s" % ("rail" if isinstance(end, tuple) else "host", end_words(end), self.what,
                                            self._runs_words(pair_edges), self._limit_words(limits, pair_edges)))
            out.append(self._slow_result(message, pair_edges, limits, end_words(end)))
        return out

    def _cleared_result(self, name: str, mine: Sequence[Ends], limits: Mapping[Ends, Limit],
                        pairs: Mapping[Ends, bool]) -> CheckResult:
        """A host nothing convicts: no threshold (SKIP), nothing measured (SKIP), or its runs meet the threshold."""
        judged = [ends for ends in mine if ends in limits]
        if not judged:
            return result(self.check_id, SKIP, "%s: %s; no threshold to judge against (%s)" % (
                self.what, self._runs_words(mine), self.no_threshold_words()), measured=self._worst_of(mine))
        unmeasured = [ends for ends in judged if self.edge_figure(self.edges[ends]) is None]
        if len(unmeasured) == len(judged):
            return result(self.check_id, SKIP, "not measured: %s produced no figure with this host: %s" % (
                self.what, self._runs_words(judged)))
        if unmeasured:
            status, lead = WARN, "some pairs were not measured (no figure); the others meet the threshold"
        elif any(self.edges[ends]["problems"] for ends in judged):
            status, lead = WARN, "some repeats produced no figure; the others meet the threshold"
        else:
            status, lead = PASS, "meets the threshold"
        slow_partner = [ends for ends in judged if not pairs.get(pair_of(*ends), True)]
        tail = ""
        if slow_partner:
            tail = "; slow runs with %s are the partner's fault (this end is cleared)" % ", ".join(sorted(
                {end_words(end) for ends in slow_partner for end in ends if host_of(end) != name}))
        return result(self.check_id, status, "%s %s: %s; %s%s" % (
            self.what, lead, self._runs_words(judged), self._limit_words(limits, judged), tail),
            measured=self._worst_of(judged), expected=self._expected(limits, judged),
            threshold_source=self._sources(limits, judged))

    def _worst(self, figures: Iterable[Optional[float]]) -> Optional[float]:
        known = [value for value in figures if value is not None]
        if not known:
            return None
        return min(known) if self.higher_is_better else max(known)

    def _expected(self, limits: Mapping[Ends, Limit], pair_edges: Iterable[Ends]) -> Optional[float]:
        values = [limits[ends][0] for ends in pair_edges if ends in limits]
        if not values:
            return None
        return round(max(values) if self.higher_is_better else min(values), self.digits)

    @staticmethod
    def _sources(limits: Mapping[Ends, Limit], pair_edges: Iterable[Ends], *more: str) -> Optional[str]:
        return "; ".join(sorted({limits[ends][2] for ends in pair_edges if ends in limits}) + list(more)) or None

    def no_threshold_words(self) -> str:
        return "no threshold"
