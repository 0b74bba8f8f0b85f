# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bad-node search by pairwise rounds (pure, stdlib only).

Every node runs a two-node benchmark (all-reduce busbw, or iperf3 Gb/s) with one partner at a
time. A *round* is a set of DISJOINT pairs (a matching), so all pairs of a round run at the same
time without sharing a node. From the per-pair figures the search names the slow NODES and the
slow LINKS (a fault that shows on one pair only).

Classifying a pair
------------------
A pair may be measured more than once (a confirmation run, below); its *figure* is the best of its
measurements: a fault is persistent and makes every run of the pair slow, a transient dip (another
job on the CPU, a congested moment) does not repeat. A pair is *slow* when its figure is below
``floor`` (an absolute floor, when known) or more than ``tolerance`` below the *reference*. The
reference is the median of the upper cluster of all pair figures measured so far (the figures
within ``tolerance`` of the best one). Plain median of all pairs would be dragged down when most
pairs of a round contain a bad node (k = 4 bad among 8: a random round can have a bad node in every
pair); the upper cluster is made of good-good pairs as long as at least one was measured. A pair
that did not produce a figure (hang, crash) is slow.

Fault model and inference
-------------------------
(1) A bad node makes EVERY pair it is in slow. (2) A bad link makes its one pair slow. (3) A node
has at most one bad link (two slow links at one node are that node's fault and are reported as
the node). Under this model:

- *cleared*: a node in at least one fast pair is not bad (by (1) a bad node has no fast pair).
- *convicted node*: a node with no fast pair and slow pairs with at least TWO distinct cleared
  partners. Each partner is good, so each slow pair is either the node or a bad link at the node;
  two bad links at one node are excluded by (3): the node is bad.
- *convicted link*: a slow pair whose two ends are both cleared. Neither end is bad, so the pair is
  slow because of the link.
- anything else slow is *unresolved* and is reported as such, never as a conviction.

Confirmation (``confirm``): with ``confirm=2`` a slow pair may convict (a node, as one of its two
accusers, or a link) only once it has been measured twice, both times slow (its best figure is
slow). The search schedules that re-measurement only for pairs that would convict (*pending*),
never for every slow pair: a bad node in N - 1 slow pairs needs two confirmed accusers, not N - 1.
A confirmation that comes back fast makes the pair fast, which clears both its ends. It costs a
bad node two more rounds and buys that one transient dip (or two on different pairs of one node)
never convicts. ``confirm=1`` convicts on one measurement.

The relative rule needs one good-good pair among the measured ones (else every figure is equally
slow and looks normal). A perfect matching of N (even) nodes with k < N / 2 bad ones always has a
good-good pair, so the relative rule suffices for k < N / 2; with k >= N / 2 only an absolute
``floor`` (the profile's) can tell a slow fleet from a normal one.

No false accusation follows directly: a conviction needs cleared partners, and a node is only
cleared by a fast pair, which a bad node never has. What the search cannot do is name a bad link
whose pair it never measured: the adaptive search tests only the pairs it needs; the round-robin
mode tests every pair once and so names every bad link.

Adaptive schedule (``mode="adaptive"``)
---------------------------------------
Round 1: a random perfect matching. Round 2 (always, ``min_rounds``): another matching avoiding
round-1 pairs, so the reference is not decided by one unlucky round. Then each round first
re-measures the *pending* pairs (as many as are disjoint), then pairs every *suspect* (a node in
a slow pair that is neither cleared nor convicted, or a node that rested in an odd round and was
never measured) with a cleared node it has not met yet, so one round either clears it (fast) or
adds a cleared accuser (slow); suspects left without a cleared partner are paired with each other
in pairs not yet measured. The search stops when nothing is pending, no suspect is left, or no
new useful pair exists. With k bad nodes a bad node needs two cleared accusers, so in practice
k <= N/2 is settled in 2-4 rounds (4-6 with ``confirm=2``); the tests hold it to <= 2k + 2
(2k + 4 with ``confirm=2``).

Round robin (``mode="round_robin"``)
------------------------------------
The circle method: N - 1 rounds (N even; odd N adds a bye, N rounds), every pair exactly once;
with ``confirm=2`` then the rounds re-measuring the pending pairs (usually 1-2).

The search is deterministic given its nodes (in order), seed, settings and the figures recorded so
far: the controller rebuilds it from the recorded rounds before planning the next one (action
``pair_search_plan``).
"""

from __future__ import annotations

import random
from typing import Any, Callable, Collection, Iterable

# a node's name (any ordered, hashable value; the inventory's host names in practice) and a pair of them, sorted
Node = Any
Pair = tuple[Any, Any]
# a pair's measurements: a figure, None (no figure) or a list of those
Figures = Any

DEFAULT_TOLERANCE = 0.25
MIN_ROUNDS = 2
MODES = ("adaptive", "round_robin")


def pair_key(a: Node, b: Node) -> Pair:
    """The canonical (sorted) tuple for the pair ``a``-``b``."""
    try:
        first = a <= b
    except TypeError:
        first = str(a) <= str(b)
    return (a, b) if first else (b, a)


def round_robin(n: int) -> list[list[Pair]]:
    """The circle-method schedule over node indices ``0..n-1``: a list of rounds of disjoint pairs.

    n even: n - 1 rounds of n / 2 pairs; n odd: n rounds of (n - 1) / 2 pairs (one node rests).
    Every pair appears exactly once.
    """
    if n < 2:
        return []
    slots: list[int | None] = list(range(n)) + ([None] if n % 2 else [])
    size = len(slots)
    rounds = []
    for _round in range(size - 1):
        pairs = []
        for i in range(size // 2):
            a, b = slots[i], slots[size - 1 - i]
            if a is not None and b is not None:
                pairs.append(pair_key(a, b))
        rounds.append(pairs)
        slots = [slots[0], slots[-1]] + slots[1:-1]
    return rounds


def round_robin_names(nodes: Iterable[Node]) -> list[list[Pair]]:
    """:func:`round_robin` over ``nodes`` (names)."""
    names = list(nodes)
    return [[pair_key(names[a], names[b]) for a, b in pairs] for pairs in round_robin(len(names))]


def default_max_rounds(n: int, mode: str = "adaptive", confirm: int = 1) -> int:
    """The default bound on rounds: N - 1 + 2 (adaptive) or the round-robin schedule + 2, each + 2 per confirmation."""
    extra = MIN_ROUNDS + 2 * (max(int(confirm), 1) - 1)
    if mode == "round_robin":
        return len(round_robin(n)) + extra
    return max(n - 1, 1) + extra


def measurements(value: Figures) -> list[Any]:
    """A pair's measurements as a list: ``value`` is a figure, None (no figure) or a list of those."""
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def best(value: Figures) -> Any:
    """The best figure of a pair's measurements (None when none produced a figure)."""
    known = [item for item in measurements(value) if item is not None]
    return max(known) if known else None


def _median(values: list[Any]) -> Any:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2.0


def reference(values: Iterable[Any], tolerance: float = DEFAULT_TOLERANCE) -> Any:
    """The median of the upper cluster (figures within ``tolerance`` of the best); None when empty."""
    known = [value for value in values if value is not None]
    if not known:
        return None
    top = max(known)
    return _median([value for value in known if value >= top * (1 - tolerance)])


def classify(results: dict[Pair, Figures], tolerance: float = DEFAULT_TOLERANCE,
             floor: float | None = None) -> tuple[dict[Pair, str], Any]:
    """``({pair: "slow"|"fast"}, limit)`` for ``results`` ``{pair: figure, None or a list of them}``.

    A pair's figure is its best measurement. ``limit`` is the figure below which a pair is slow:
    the larger of ``floor`` and ``reference * (1 - tolerance)``.
    """
    figures = {pair: best(value) for pair, value in results.items()}
    ref = reference(figures.values(), tolerance)
    limits = [value for value in (floor, None if ref is None else ref * (1 - tolerance)) if value is not None]
    limit = max(limits) if limits else None
    out: dict[Pair, str] = {}
    for pair, value in figures.items():
        out[pair] = "slow" if value is None or (limit is not None and value < limit) else "fast"
    return out, limit


def infer(nodes: Iterable[Node], results: dict[Pair, Figures], tolerance: float = DEFAULT_TOLERANCE,
          floor: float | None = None, confirm: int = 1) -> dict[str, Any]:
    """Name the bad nodes and links from ``results`` ``{(a, b): figure, None or a list of them}``.

    Returns ``{bad_nodes: {node: [pairs that convicted it]}, bad_links: [pair], cleared: [node],
    suspects: [node], untested: [node], unresolved: [pair], pending: [pair], limit, reference}``.
    ``pending``: slow pairs that would convict once measured ``confirm`` times (the search
    re-measures them): a link's pair, or the accusers of a node with two or more. See the module
    docstring for why a conviction is never false under the fault model.
    """
    status, limit = classify(results, tolerance, floor)
    counts = {pair: len(measurements(value)) for pair, value in results.items()}
    # a node in a fast pair is not bad: a bad node makes every pair it is in slow
    cleared = {node for (a, b), state in status.items() if state == "fast" for node in (a, b)}
    bad_nodes, pending = _convicted_nodes(nodes, status, cleared, counts, confirm)
    bad_links, unresolved = _convicted_links(status, cleared, bad_nodes, counts, confirm, pending)
    measured = {node for pair in status for node in pair}
    # every measured node that no fast pair cleared and no conviction named: also one whose slow pairs
    # were all with convicted nodes (those pairs are "explained" and not unresolved, yet prove nothing
    # about it), which otherwise left it unjudged (N=8, k=4, seed 2: node06)
    suspects = sorted(node for node in measured if node not in cleared and node not in bad_nodes)
    untested = [node for node in nodes if node not in measured]
    return {"bad_nodes": bad_nodes, "bad_links": bad_links, "cleared": sorted(cleared), "suspects": suspects,
            "untested": untested, "unresolved": unresolved, "pending": sorted(pending), "limit": limit,
            "reference": reference([best(value) for value in results.values()], tolerance)}


def _convicted_nodes(nodes: Iterable[Node], status: dict[Pair, str], cleared: set[Node], counts: dict[Pair, int],
                     confirm: int) -> tuple[dict[Node, list[Pair]], set[Pair]]:
    """``(bad_nodes, pending)``: each node not cleared with slow pairs to two cleared partners measured ``confirm``
    times is bad (its accusers); the accusers of one with too few such pairs are pending."""
    bad_nodes: dict[Node, list[Pair]] = {}
    pending: set[Pair] = set()
    for node in nodes:
        if node in cleared:
            continue
        accusers = sorted(pair for pair, state in status.items() if state == "slow" and node in pair
                          and (pair[0] if pair[1] == node else pair[1]) in cleared)
        if len(accusers) < 2:
            continue
        sure = [pair for pair in accusers if counts[pair] >= confirm]
        if len(sure) >= 2:
            bad_nodes[node] = sure
        else:
            pending.update(pair for pair in accusers if counts[pair] < confirm)
    return bad_nodes, pending


def _convicted_links(status: dict[Pair, str], cleared: set[Node], bad_nodes: dict[Node, list[Pair]],
                     counts: dict[Pair, int], confirm: int, pending: set[Pair]) -> tuple[list[Pair], list[Pair]]:
    """``(bad_links, unresolved)``: a slow pair with both ends cleared is a bad link once measured ``confirm`` times
    (before: added to ``pending``); a slow pair that no convicted node explains is unresolved."""
    bad_links, unresolved = [], []
    for pair, state in sorted(status.items()):
        if state != "slow":
            continue
        a, b = pair
        if a in cleared and b in cleared:
            if counts[pair] >= confirm:
                bad_links.append(pair)
                continue
            pending.add(pair)
        if a not in bad_nodes and b not in bad_nodes:
            unresolved.append(pair)
    return bad_links, unresolved


# A greedy pass over a shuffled order can strand two nodes whose only pair left is one already
# measured (6 nodes after one round: about 1 order in 5), so a round is drawn again on new shuffles.
MATCHING_TRIES = 64


def _greedy_matching(nodes: Iterable[Node], rng: random.Random, avoid: Collection[Pair]) -> list[Pair]:
    pool = list(nodes)
    rng.shuffle(pool)
    pairs = []
    while len(pool) >= 2:
        a = pool.pop(0)
        partner = next((b for b in pool if pair_key(a, b) not in avoid), None)
        if partner is None:
            partner = pool[0]
        pool.remove(partner)
        pairs.append(pair_key(a, partner))
    return pairs


def random_matching(nodes: list[Node], rng: random.Random, avoid: Iterable[Pair] = ()) -> list[Pair]:
    """A matching of ``nodes`` in random order, preferring pairs not in ``avoid`` (odd count: one rests).

    Up to MATCHING_TRIES shuffles; the first matching with no pair of ``avoid`` is taken, else the one
    with the fewest. Deterministic for the state of ``rng``.
    """
    avoided = set(avoid)
    chosen: list[Pair] | None = None
    repeats = 0
    for _try in range(MATCHING_TRIES):
        pairs = _greedy_matching(nodes, rng, avoided)
        count = sum(1 for pair in pairs if pair in avoided)
        if chosen is None or count < repeats:
            chosen, repeats = pairs, count
        if count == 0:
            break
    return chosen or []


class PairSearch:
    """The search: call :meth:`next_round`, run its pairs, :meth:`record` the figures, repeat.

    ``mode`` is ``adaptive`` (default) or ``round_robin``; ``confirm`` the measurements a slow pair
    needs before it may convict (1 or 2). ``next_round()`` returns ``[]`` when the search is settled
    (or ``max_rounds`` were planned). ``verdict()`` gives :func:`infer`'s answer plus ``rounds``
    (the schedule used), ``rounds_used``, ``mode`` and ``confirm``.
    """

    def __init__(self, nodes: Iterable[Node], seed: Any = None, tolerance: float = DEFAULT_TOLERANCE,
                 floor: float | None = None, min_rounds: int = MIN_ROUNDS, max_rounds: int | None = None,
                 mode: str = "adaptive", confirm: int = 1) -> None:
        if mode not in MODES:
            raise ValueError("mode must be one of %s, not %r" % (", ".join(MODES), mode))
        self.nodes = list(nodes)
        self.rng = random.Random(seed)
        self.tolerance = tolerance
        self.floor = floor
        self.min_rounds = min_rounds
        self.mode = mode
        self.confirm = max(int(confirm), 1)
        self.schedule = round_robin_names(self.nodes) if mode == "round_robin" else []
        self.max_rounds = (max_rounds if max_rounds is not None
                           else default_max_rounds(len(self.nodes), mode, self.confirm))
        self.results: dict[Pair, list[Any]] = {}
        self.rounds: list[list[Pair]] = []
        # pairs planned that produced no measurement (a host lost, a launcher that could not start the run): never
        # planned again, never slow; and the hosts that stopped answering: never planned again
        self.unmeasured: set[Pair] = set()
        self.lost: set[Node] = set()

    def record(self, figures: dict[Pair, Any]) -> None:
        """Record ``{(a, b): figure or None}`` of the last round (a pair measured again adds a measurement)."""
        for (a, b), value in figures.items():
            self.results.setdefault(pair_key(a, b), []).append(value)

    def record_unmeasured(self, pairs: Iterable[Pair], lost: Iterable[Node] = ()) -> None:
        """Record the planned ``pairs`` that measured nothing, and the hosts ``lost`` (they stopped answering)."""
        self.unmeasured.update(pair_key(a, b) for a, b in pairs)
        self.lost.update(lost)

    def _tried(self) -> set[Pair]:
        """The pairs measured or tried without a measurement: a new round avoids them."""
        return set(self.results) | self.unmeasured

    def current(self) -> dict[str, Any]:
        return infer(self.nodes, self.results, self.tolerance, self.floor, self.confirm)

    def next_round(self) -> list[Pair]:
        """The next round's pairs, or ``[]`` when settled (or no new useful pair exists)."""
        if len(self.nodes) < 2 or len(self.rounds) >= self.max_rounds:
            return []
        if self.mode == "round_robin":
            if len(self.rounds) < len(self.schedule):
                # the fixed schedule keeps its pairs with a lost host (a round of them alone would end the search)
                pairs = list(self.schedule[len(self.rounds)])
            else:
                pairs = self._confirmations(self.current(), set())
        elif len(self.rounds) < self.min_rounds:
            live = [node for node in self.nodes if node not in self.lost]
            tried = self._tried()
            pairs = random_matching(live, self.rng, avoid=tried) if len(live) >= 2 else []
            pairs = [pair for pair in pairs if pair not in tried] or pairs
        else:
            pairs = self._targeted()
        if pairs:
            self.rounds.append(pairs)
        return pairs

    def _confirmations(self, state: dict[str, Any], busy: set[Node]) -> list[Pair]:
        """Disjoint pending pairs (re-measurements), in seeded random order; marks their nodes ``busy``."""
        # a confirmation that measured nothing, or with a lost host, is not tried again
        pending = [pair for pair in state["pending"]
                   if pair not in self.unmeasured and not self.lost.intersection(pair)]
        self.rng.shuffle(pending)
        pairs = []
        for pair in pending:
            if pair[0] not in busy and pair[1] not in busy:
                busy.update(pair)
                pairs.append(pair)
        return pairs

    def _targeted(self) -> list[Pair]:
        state = self.current()
        busy: set[Node] = set()
        pairs = self._confirmations(state, busy)
        tried = self._tried()
        suspects = [node for node in list(state["suspects"]) + list(state["untested"])
                    if node not in busy and node not in self.lost]
        self.rng.shuffle(suspects)
        cleared = [node for node in state["cleared"] if node not in self.lost]
        self.rng.shuffle(cleared)
        for node in suspects:
            partner = next((c for c in cleared if c not in busy and pair_key(node, c) not in tried), None)
            if partner is not None:
                busy.update((node, partner))
                pairs.append(pair_key(node, partner))
        rest = [node for node in suspects if node not in busy]
        for index, node in enumerate(rest):
            if node in busy:
                continue
            partner = next((other for other in rest[index + 1:]
                            if other not in busy and pair_key(node, other) not in tried), None)
            if partner is not None:
                busy.update((node, partner))
                pairs.append(pair_key(node, partner))
        return pairs

    def verdict(self) -> dict[str, Any]:
        out = self.current()
        out["rounds"] = [list(pairs) for pairs in self.rounds]
        out["rounds_used"] = len(self.rounds)
        out["mode"] = self.mode
        out["confirm"] = self.confirm
        out["not_measured"] = sorted(self.unmeasured - set(self.results))
        out["lost"] = sorted(self.lost)
        return out


def run_search(nodes: Iterable[Node], measure: Callable[[list[Pair]], dict[Pair, Any]], mode: str = "adaptive",
               seed: Any = None, tolerance: float = DEFAULT_TOLERANCE, floor: float | None = None, confirm: int = 1,
               max_rounds: int | None = None) -> dict[str, Any]:
    """Drive a whole search with ``measure(pairs) -> {pair: figure}`` (one call per round)."""
    search = PairSearch(nodes, seed=seed, tolerance=tolerance, floor=floor, mode=mode, confirm=confirm,
                        max_rounds=max_rounds)
    while True:
        pairs = search.next_round()
        if not pairs:
            return search.verdict()
        search.record(measure(pairs))


def simulate(n: int, bad_nodes: Iterable[int] = (), bad_links: Iterable[tuple[int, int]] = (), seed: int = 0,
             mode: str = "adaptive", good: float = 100.0, slow: float = 20.0, noise: float = 0.03,
             floor: float | None = None, confirm: int = 1, dip: float = 0.0,
             dip_to: float | None = None) -> dict[str, Any]:
    """SYNTHETIC fleet of ``n`` nodes ``node00..``: pairs touching a bad node or link measure ``slow``.

    ``bad_nodes``: indices; ``bad_links``: index pairs. Figures get +-``noise`` relative jitter
    (seeded); ``floor`` is the absolute floor handed to the search. ``dip``: the chance that one run
    of a GOOD pair measures ``dip_to`` (default ``slow``) instead, a transient that does not repeat
    by itself. Returns :func:`run_search`'s verdict with names, plus ``dips`` (the runs that dipped).
    """
    names = ["node%02d" % index for index in range(n)]
    bad = {names[index] for index in bad_nodes}
    links = {pair_key(names[a], names[b]) for a, b in bad_links}
    rng = random.Random(seed * 7919 + 1)
    dips: list[Pair] = []

    def measure(pairs: list[Pair]) -> dict[Pair, float]:
        out = {}
        for a, b in pairs:
            faulty = a in bad or b in bad or pair_key(a, b) in links
            base = slow if faulty else good
            if not faulty and dip and rng.random() < dip:
                base = slow if dip_to is None else dip_to
                dips.append(pair_key(a, b))
            out[pair_key(a, b)] = base * (1 + rng.uniform(-noise, noise))
        return out

    verdict = run_search(names, measure, mode=mode, seed=seed, floor=floor, confirm=confirm)
    verdict["dips"] = dips
    return verdict
