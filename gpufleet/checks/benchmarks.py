# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark checks (pure): all-reduce in a node and across nodes, the fleet-relative rule, the pair search.

Reads the benchmark records of each host (``NodeContext.settings["benchmarks"]``, the host
record's ``benchmarks`` list, docs/results-schema.md). A record's kind is :func:`benchmark_kind`
(its ``kind`` field; records of older runs without one are read by their name there, and only there).

- ``benchmarks.allreduce_single``: out-of-place busbw at the profile's
  ``thresholds.allreduce_single_node.message_size`` (else the largest size of the sweep, and the
  message says so) against its floor / warn band. Repeats vote: the median figure is judged and
  the spread (min-max) is reported; ``gpufleet_benchmark_vote: best`` judges the best instead.
- ``benchmarks.allreduce_wrong``: ``#wrong`` (and ``Out of bounds values``) must be 0, any kind.
- ``benchmarks.allreduce_algo``: ``NCCL_ALGO`` and NVLS as recorded (warns when the profile's floor
  assumes NVLS and the NCCL log says NVLS was unavailable or disabled).
- ``benchmarks.allreduce_multi`` (fleet): a multi-node run that fell back to sockets on a node with
  active RDMA ports FAILS with that reason whatever its number; else busbw at the largest size
  against ``thresholds.allreduce_multi_node``. Judged on every host of the run.
- ``benchmarks.allreduce_relative`` (fleet): single-node busbw against the cohort median
  (``fleet.max_below_median``, checks/fleet.py ``fleet_relative``).
- ``benchmarks.pair_search`` (fleet): the per-pair figures of the bad-node search
  (``allreduce_pair`` records; a pair's runs in different rounds are its measurements, repeats in
  one round vote by median) go through ``bench/pair_search.infer`` with the mode, confirmation and
  seed of the search (the records' ``group`` label, :func:`search_label`); a convicted node fails
  naming the pairs that convicted it, a convicted link fails on both ends naming the link, an
  unresolved slow pair (or one still awaiting its confirmation run) warns. Every message ends with
  the search's summary: bad nodes and links named, rounds used, mode.
- A run that did not finish (``outcome`` hang, crash, missing_binary, launcher_error, failed) fails
  its check with the outcome and reason: it is never read as a figure.
"""

from __future__ import annotations

from gpufleet.plan.pair_search import DEFAULT_TOLERANCE, best, infer, measurements, pair_key
from gpufleet.checks.engine import fleet_check, node_check
from gpufleet.checks.fleet import cohorts, fleet_relative, median
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, result
from gpufleet.checks.network import num
from gpufleet.checks.profiles import profile_value

VOTE_SETTING = "gpufleet_benchmark_vote"
TOLERANCE_SETTING = "gpufleet_pair_search_tolerance"
ALLREDUCE_KINDS = ("allreduce_single", "allreduce_multi", "allreduce_pair")


def records_of(node):
    """The node's benchmark records (a list of dicts)."""
    records = node.settings.get("benchmarks") or []
    return [record for record in records if isinstance(record, dict)]


def _parsed(record):
    parsed = record.get("parsed")
    return parsed if isinstance(parsed, dict) else {}


def hosts_of(record):
    """Inventory names of the hosts of a run: the record's ``hosts``, else ``parsed.hosts``."""
    hosts = record.get("hosts")
    if isinstance(hosts, list) and hosts:
        return [str(host) for host in hosts]
    return [str(host) for host in _parsed(record).get("hosts") or []]


def benchmark_kind(record):
    """The kind of a benchmark record (one of results/store.py ``BENCHMARK_KINDS``): its ``kind`` field.

    Every reader asks here. The writers set ``kind``; a record written without one (by an older run)
    is read by its name, as such records always were: ``all_reduce_perf*`` is ``allreduce_single``
    with at most one host (:func:`hosts_of`), ``allreduce_pair`` with two, ``allreduce_multi`` with
    more; ``iperf3*`` is ``iperf3_concurrent`` when the environment's ``GPUFLEET_IPERF3_MODE`` or the
    name says concurrent, else ``iperf3``; any other name's first word is its kind (None without a name).
    """
    if record.get("kind"):
        return record["kind"]
    name = str(record.get("name") or "")
    if name.startswith("all_reduce_perf"):
        count = len(set(hosts_of(record)))
        if count <= 1:
            return "allreduce_single"
        return "allreduce_pair" if count == 2 else "allreduce_multi"
    first = name.split()[0] if name.split() else ""
    if first.startswith("iperf3"):
        mode = (record.get("environment") or {}).get("GPUFLEET_IPERF3_MODE")
        concurrent = mode == "concurrent" or "concurrent" in name
        return "iperf3_concurrent" if concurrent else "iperf3"
    return first or None


def outcome_problem(record):
    """A message when the run did not produce a figure to judge (outcome not ok), else None."""
    outcome = record.get("outcome")
    if outcome in (None, "ok"):
        return None
    reason = record.get("reason") or ""
    return "%s %s: %s%s" % (record.get("name") or "benchmark", "did not finish" if outcome == "hang" else "failed", outcome,
                            " (%s)" % " ".join(str(reason).split())[:200] if reason else "")


def busbw_at(parsed, size):
    """``(busbw, size judged)``: out-of-place busbw of the last row at ``size``, else at the largest size."""
    rows = [row for row in parsed.get("rows") or [] if isinstance(row.get("out_of_place"), dict)]
    if size is not None:
        at = [row for row in rows if row.get("size_bytes") == size and row["out_of_place"].get("busbw_gbs") is not None]
        if at:
            return at[-1]["out_of_place"]["busbw_gbs"], size
    if parsed.get("busbw_at_largest_size_gbs") is not None:
        return parsed["busbw_at_largest_size_gbs"], parsed.get("largest_size_bytes")
    return None, None


def size_words(size):
    if size is None:
        return "unknown size"
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return "%d %s" % (size // factor, unit)
    return "%d B" % size


def vote(values, how="median"):
    """``(judged figure, min, max)`` of repeats; ``how`` is ``median`` or ``best``."""
    if not values:
        return None, None, None
    judged = max(values) if how == "best" else median(values)
    return judged, min(values), max(values)


def _repeat_words(values, how):
    if len(values) < 2:
        return ""
    return " (%s of %d repeats, spread %s-%s)" % ("best" if how == "best" else "median", len(values), num(min(values)), num(max(values)))


# --- single node ---------------------------------------------------------------------------------


@node_check("benchmarks.allreduce_single")
def check_allreduce_single(node):
    """Single-node all-reduce busbw at the profile's message size against its floor and warn band."""
    records = [record for record in records_of(node) if benchmark_kind(record) == "allreduce_single"]
    if not records:
        return [result("benchmarks.allreduce_single", SKIP, "not judged: no single-node all_reduce_perf run recorded")]
    out = [result("benchmarks.allreduce_single", FAIL, problem, subject=record.get("name"))
           for record in records for problem in [outcome_problem(record)] if problem]
    threshold, threshold_source = profile_value(node.profile, "thresholds.allreduce_single_node")
    wanted = (threshold or {}).get("message_size")
    figures, sizes = [], set()
    for record in records:
        if outcome_problem(record):
            continue
        value, size = busbw_at(_parsed(record), wanted)
        if value is not None:
            figures.append(value)
            sizes.add(size)
    if not figures:
        if not out:
            out.append(result("benchmarks.allreduce_single", FAIL, "no busbw in the single-node all_reduce_perf output (no result row)"))
        return out
    how = node.settings.get(VOTE_SETTING) or "median"
    judged, _low, _high = vote(figures, how)
    judged_size = max(size for size in sizes if size is not None) if any(size is not None for size in sizes) else None
    where = "at %s" % size_words(judged_size)
    if wanted is not None and judged_size != wanted:
        where += " (the profile's size %s is absent from the sweep: judged at its largest size)" % size_words(wanted)
    elif wanted is None:
        where += " (the profile names no message size: judged at the largest size)"
    spread = _repeat_words(figures, how)
    if threshold is None:
        out.append(result("benchmarks.allreduce_single", SKIP, "not judged: the profile sets no thresholds.allreduce_single_node; busbw %s GB/s %s%s" % (
            num(judged), where, spread), measured=judged))
        return out
    source = threshold.get("source") or threshold_source
    floor, warn_below = threshold.get("floor"), threshold.get("warn_below")
    if judged < floor:
        status, words = FAIL, "below the floor %s GB/s" % num(floor)
    elif warn_below is not None and judged < warn_below:
        status, words = WARN, "above the floor %s GB/s but below %s GB/s" % (num(floor), num(warn_below))
    else:
        status, words = PASS, "at or above the floor %s GB/s" % num(floor)
    out.append(result("benchmarks.allreduce_single", status, "single-node all-reduce busbw %s GB/s %s%s, %s" % (num(judged), where, spread, words),
                      measured=judged, expected=floor, threshold_source=source, subject=size_words(judged_size)))
    return out


@node_check("benchmarks.allreduce_wrong")
def check_allreduce_wrong(node):
    """``#wrong`` must be 0 (and ``Out of bounds values`` 0) in every all-reduce run recorded on the node."""
    records = [record for record in records_of(node) if benchmark_kind(record) in ALLREDUCE_KINDS and _parsed(record)]
    if not records:
        return [result("benchmarks.allreduce_wrong", SKIP, "not judged: no all_reduce_perf output recorded")]
    out = []
    for record in records:
        parsed = _parsed(record)
        wrong, bounds = parsed.get("wrong_total"), parsed.get("out_of_bounds")
        bad_rows = [row["size_bytes"] for row in parsed.get("rows") or []
                    if any(isinstance((row.get(half) or {}).get("wrong"), (int, float)) and (row.get(half) or {}).get("wrong") > 0
                           for half in ("out_of_place", "in_place"))]
        if (wrong or 0) > 0 or (bounds or 0) > 0 or parsed.get("out_of_bounds_status") == "FAILED":
            message = "%s: #wrong %s in %d row(s) (first at %s), Out of bounds values %s: the results are corrupt"
            out.append(result("benchmarks.allreduce_wrong", FAIL, message % (
                record.get("name"), num(wrong), len(bad_rows), size_words(bad_rows[0]) if bad_rows else "unknown size", num(bounds)),
                measured=wrong if wrong is not None else bounds, expected=0, threshold_source="nccl-tests: #wrong must be 0", subject=record.get("name")))
    if not out:
        out.append(result("benchmarks.allreduce_wrong", PASS, "#wrong 0 in %d all-reduce run(s)" % len(records), measured=0, expected=0,
                          threshold_source="nccl-tests: #wrong must be 0"))
    return out


@node_check("benchmarks.allreduce_algo")
def check_allreduce_algo(node):
    """NCCL_ALGO and NVLS as recorded with the single-node runs."""
    records = [record for record in records_of(node)
               if benchmark_kind(record) == "allreduce_single" and not outcome_problem(record)]
    if not records:
        return [result("benchmarks.allreduce_algo", SKIP, "not judged: no finished single-node all_reduce_perf run")]
    threshold = profile_value(node.profile, "thresholds.allreduce_single_node")[0] or {}
    out = []
    for record in records:
        env = record.get("environment") or {}
        algo = record.get("algorithm") or env.get("NCCL_ALGO") or "not pinned (NCCL's choice)"
        debug = _parsed(record).get("debug") or {}
        channels = debug.get("channels") or {}
        nvls_off = debug.get("nvls_available") is False or debug.get("nvls_disabled_by_env") or str(env.get("NCCL_NVLS_ENABLE")) == "0"
        nvls = "off" if nvls_off else ("on (%s NVLS channels)" % channels["nvls"] if channels.get("nvls") else "not reported")
        message = "%s: NCCL_ALGO %s, NVLS %s" % (record.get("name"), algo, nvls)
        if threshold.get("nvls") and nvls_off:
            out.append(result("benchmarks.allreduce_algo", WARN, message + "; the profile's floor assumes NVLS", measured=nvls, expected="NVLS on",
                              threshold_source=threshold.get("source")))
        else:
            out.append(result("benchmarks.allreduce_algo", PASS, message, measured=algo))
    return out


# --- across nodes ----------------------------------------------------------------------------------


def _all_records(nodes, kind):
    """Each record of ``kind`` once (records may be stored on several hosts), with its hosts."""
    seen, out = set(), []
    for node in nodes:
        for record in records_of(node):
            if benchmark_kind(record) != kind:
                continue
            key = (record.get("name"), record.get("started"), tuple(hosts_of(record)), record.get("repeat"))
            if key in seen:
                continue
            seen.add(key)
            out.append(record)
    return out


def active_rdma_ports(node):
    """Active RDMA ports (``dev/port``) in the node's facts; None when no NIC facts."""
    nic = node.group("nic")
    if nic is None:
        return None
    return ["%s/%s" % (dev.get("device"), port.get("port")) for dev in nic.get("rdma") or [] for port in dev.get("ports") or []
            if port.get("state") == "Active"]


def fell_back(parsed):
    """True when the NCCL log shows the network transport was sockets only (no NET/IB)."""
    debug = parsed.get("debug") or {}
    transports = parsed.get("transports") or debug.get("transports") or {}
    if parsed.get("fallback_to_socket") or debug.get("fallback_to_socket"):
        return True
    names = set(transports)
    return "NET/Socket" in names and not any(name.startswith("NET/IB") for name in names)


@fleet_check("benchmarks.allreduce_multi")
def check_allreduce_multi(nodes):
    """Multi-node all-reduce: socket fallback on RDMA nodes fails; else busbw against the multi-node floor."""
    by_name = {node.name: node for node in nodes}
    out = {}
    for record in _all_records(nodes, "allreduce_multi"):
        parsed = _parsed(record)
        hosts = [host for host in hosts_of(record) if host in by_name]
        problem = outcome_problem(record)
        value = parsed.get("busbw_at_largest_size_gbs")
        for host in hosts:
            node = by_name[host]
            threshold = profile_value(node.profile, "thresholds.allreduce_multi_node")[0]
            where = "%s over %s" % (record.get("name"), ", ".join(hosts_of(record)))
            if fell_back(parsed):
                ports = active_rdma_ports(node)
                evidence = "; ".join((parsed.get("debug") or {}).get("hca_evidence") or [])[:300]
                message = "%s fell back to NET/Socket%s (busbw %s GB/s not judged)" % (where, ": " + evidence if evidence else "", num(value))
                if ports:
                    item = result("benchmarks.allreduce_multi", FAIL, message + "; the node has %d active RDMA port(s) (%s)" % (
                        len(ports), ", ".join(ports[:8])), measured="NET/Socket", expected="NET/IB", subject=record.get("name"))
                elif ports is None:
                    item = result("benchmarks.allreduce_multi", WARN, message + "; the node's RDMA ports are unknown (no NIC facts)",
                                  measured="NET/Socket", subject=record.get("name"))
                else:
                    item = result("benchmarks.allreduce_multi", PASS, message + "; the node has no active RDMA port: sockets are its network",
                                  measured="NET/Socket", subject=record.get("name"))
            elif problem:
                item = result("benchmarks.allreduce_multi", FAIL, "%s: %s" % (where, problem), subject=record.get("name"))
            elif value is None:
                item = result("benchmarks.allreduce_multi", FAIL, "%s: no busbw in the output" % where, subject=record.get("name"))
            elif threshold is None:
                item = result("benchmarks.allreduce_multi", SKIP, "not judged: the profile sets no thresholds.allreduce_multi_node; %s busbw %s GB/s" % (
                    where, num(value)), measured=value)
            else:
                low = value < threshold["floor"]
                item = result("benchmarks.allreduce_multi", FAIL if low else PASS, "%s: busbw %s GB/s at %s, %s the multi-node floor %s GB/s" % (
                    where, num(value), size_words(parsed.get("largest_size_bytes")), "below" if low else "at or above", num(threshold["floor"])),
                    measured=value, expected=threshold["floor"], threshold_source=threshold.get("source"), subject=record.get("name"))
            out.setdefault(host, []).append(item)
    return out


@fleet_check("benchmarks.allreduce_relative")
def check_allreduce_relative(nodes):
    """Single-node busbw of each node against its cohort's median (fleet.max_below_median)."""
    out = {}
    for members in cohorts(nodes).values():
        figures = {}
        for node in members:
            wanted = (profile_value(node.profile, "thresholds.allreduce_single_node")[0] or {}).get("message_size")
            values = [busbw_at(_parsed(record), wanted)[0] for record in records_of(node)
                      if benchmark_kind(record) == "allreduce_single" and not outcome_problem(record)]
            values = [value for value in values if value is not None]
            figures[node.name] = vote(values, node.settings.get(VOTE_SETTING) or "median")[0]
        if not any(value is not None for value in figures.values()):
            continue
        limit, source = profile_value(members[0].profile, "fleet.max_below_median")
        out.update(fleet_relative(figures, limit, source, check_id="benchmarks.allreduce_relative", what="single-node all-reduce busbw", unit="GB/s"))
    return out


# --- the pair search -----------------------------------------------------------------------------------

SEARCH_LABEL = "pair_search"


def search_label(mode, confirm, seed):
    """The ``group`` label of every pair run of one search: ``pair_search mode=M confirm=C seed=S``."""
    return "%s mode=%s confirm=%d seed=%s" % (SEARCH_LABEL, mode, int(confirm), seed)


def parse_search_label(text):
    """``{mode, confirm, seed}`` from a :func:`search_label` (``{}`` for any other label)."""
    words = str(text or "").split()
    if not words or words[0] != SEARCH_LABEL:
        return {}
    fields = dict(word.split("=", 1) for word in words[1:] if "=" in word)
    out = {}
    if fields.get("mode"):
        out["mode"] = fields["mode"]
    if str(fields.get("confirm", "")).isdigit():
        out["confirm"] = int(fields["confirm"])
    if fields.get("seed"):
        out["seed"] = fields["seed"]
    return out


def pair_measurements(records):
    """``{(a, b): [figure or None per round]}`` from pair records, rounds in order.

    The runs of one pair in one round (repeats) vote by median; a failed run is None. A pair run in
    two rounds (a confirmation run) has two measurements; the search judges the best of them.
    """
    runs = {}
    for record in records:
        hosts = list(dict.fromkeys(hosts_of(record)))
        if len(hosts) != 2:
            continue
        value = None if outcome_problem(record) else _parsed(record).get("busbw_at_largest_size_gbs")
        runs.setdefault(pair_key(hosts[0], hosts[1]), {}).setdefault(record.get("round"), []).append(value)
    out = {}
    for pair, by_round in runs.items():
        values = []
        for rnd in sorted(by_round, key=lambda key: (key is None, key if isinstance(key, int) else 0)):
            known = [value for value in by_round[rnd] if value is not None]
            values.append(median(known) if known else None)
        out[pair] = values
    return out


def search_summary(verdict, mode, rounds_used):
    """``2 bad node(s) and 0 bad link(s) named in 5 round(s) (adaptive)``."""
    return "%d bad node(s) and %d bad link(s) named in %d round(s) (%s)" % (
        len(verdict["bad_nodes"]), len(verdict["bad_links"]), rounds_used, mode or "mode not recorded")


@fleet_check("benchmarks.pair_search")
def check_pair_search(nodes):
    """The bad-node search's verdict: convicted nodes and links fail, naming the pairs."""
    records = _all_records(nodes, "allreduce_pair")
    if not records:
        return {}
    found = {}
    for record in records:
        found.update(parse_search_label(record.get("group")))
    mode, confirm = found.get("mode"), found.get("confirm", 1)
    results = pair_measurements(records)
    tolerance = float(nodes[0].settings.get(TOLERANCE_SETTING) or DEFAULT_TOLERANCE)
    names = [node.name for node in nodes]
    verdict = infer(names, results, tolerance=tolerance, confirm=confirm)
    rounds = sorted({record.get("round") for record in records if record.get("round") is not None})
    summary = search_summary(verdict, mode, len(rounds))
    source = "bad-node search (bench/pair_search.py%s): slow = more than %.0f%% below the median of the best pairs%s; %d pair(s), %d round(s)" % (
        ", %s, seed %s" % (mode, found["seed"]) if mode and found.get("seed") else "", tolerance * 100,
        ", a slow pair convicts only once a confirmation run is slow too" if confirm > 1 else "", len(results), len(rounds))
    limit = verdict["limit"]
    pending = set(verdict["pending"])

    def words(pair):
        values = measurements(results.get(pair))
        value = best(values)
        text = "%s-%s %s" % (pair[0], pair[1], "no figure" if value is None else "%s GB/s" % num(round(value, 2)))
        if len(values) > 1:
            text += " (best of %d runs: %s)" % (len(values), ", ".join("-" if item is None else num(round(item, 2)) for item in values))
        return text

    out = {}
    for node in nodes:
        mine = [pair for pair in results if node.name in pair]
        if not mine:
            out[node.name] = [result("benchmarks.pair_search", SKIP, "not judged: the node was in no measured pair")]
            continue
        items = []
        if node.name in verdict["bad_nodes"]:
            pairs = verdict["bad_nodes"][node.name]
            message = "slow node: every pair with it is slow, convicted by %s against nodes proven good (limit %s GB/s); search: %s"
            items.append(result("benchmarks.pair_search", FAIL, message % (
                ", ".join(words(pair) for pair in pairs), num(round(limit, 2)), summary), measured=[best(results[pair]) for pair in pairs],
                expected=round(limit, 3), threshold_source=source, subject=node.name))
        for pair in verdict["bad_links"]:
            if node.name in pair:
                message = "slow link %s-%s: %s, while both ends are fast with other partners (limit %s GB/s); search: %s"
                items.append(result("benchmarks.pair_search", FAIL, message % (
                    pair[0], pair[1], words(pair), num(round(limit, 2)), summary), measured=best(results[pair]), expected=round(limit, 3),
                    threshold_source=source, subject="%s-%s" % pair))
        for pair in verdict["unresolved"]:
            if node.name in pair:
                why = "awaits its confirmation run (the search ran out of rounds)" if pair in pending else "not resolved to a node or a link"
                items.append(result("benchmarks.pair_search", WARN, "slow pair %s %s; search: %s" % (words(pair), why, summary),
                                    measured=best(results[pair]), expected=round(limit, 3), threshold_source=source, subject="%s-%s" % pair))
        if not items:
            items.append(result("benchmarks.pair_search", PASS, "%d pair(s) with this node, none convicts it (limit %s GB/s); search: %s" % (
                len(mine), num(round(limit, 2)) if limit is not None else "none", summary), expected=limit, threshold_source=source))
        out[node.name] = items
    return out
