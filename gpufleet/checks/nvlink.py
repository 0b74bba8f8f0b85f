# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVLink checks from ``nvidia-smi nvlink -s`` / ``-e`` (the ``nvlink`` block of each GPU).

- ``nvlink.link_active``: every link printed is active and each GPU has the expected number of
  active links (the claim's ``nvlinks_per_pair`` — on NVSwitch and bridge systems a pair's NV#
  is every link of the GPU — else the profile's ``expect.nvlink_links_per_gpu``). A GPU with at
  least that many active links passes whatever its other links print (H100 NVL wires 12 of 18:
  docs/baselines.md 7); short of it, each ``<inactive>`` link fails (docs/baselines.md 6). A GPU
  sold with NVLink that reports none fails in every wording: "all links are inactive", "not
  supported" (MIG mode, NVML's Not Supported, a non-zero exit saying so) or the GPU line alone;
  "sold with NVLink" is an expected link count, or else an interconnect ``nvswitch`` /
  ``nvlink_bridge_pairs`` in the claim (else the profile's ``expect.interconnect``). Judged from
  ``nvlink -s`` alone when neither ``-q`` query could be read (gpufleet/facts/gpu.py ``build_nvlink_only``).
- ``nvlink.link_speed``: each active link at the profile's ``expect.nvlink_link_speed``
  (25 / 26.562 / 53.125 GB/s, docs/baselines.md 2 and 6); without one, links slower than the node's
  fastest link warn.
- ``nvlink.errors``: replay / recovery / CRC counters above zero at facts time fail with their counts,
  one result per link (Meta GCM's default thresholds are 0; the burn-in's DCGM health watch fails any
  replay or recovery error: docs/baselines.md 8); a counter pinned at its maximum (65535, 4294967295,
  2^64-1) is SATURATED, not a count: the true count is unknown and at least that (docs/baselines.md 6).
  Unlike the PCIe replays of one reading (noted: gpufleet/checks/gpu.py), one reading of these fails: a
  published health check (Meta GCM ``check-dcgmi nvlink``) fails it on one reading.
- ``nvlink.fabric_domain`` (fleet): on multi-node NVLink systems (profile ``expect.fabric_clique_scope:
  nvlink_domain``) every GPU of the nodes of one NVLink domain prints one non-zero fabric ClusterUUID
  and CliqueId (docs/baselines.md 7 and 9).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from gpufleet.checks.registry import fleet_check, node_check
from gpufleet.checks.evidence import NVLINK_INTERCONNECTS
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.profiles import expectation, profile_value

ACTIVE, SPEED, ERRORS = "nvlink.link_active", "nvlink.link_speed", "nvlink.errors"
DOMAIN = "nvlink.fabric_domain"
DOMAIN_SOURCE = ("docs/baselines.md 7 and 9: one NVLink domain (rack) = one fabric ClusterUUID and CliqueId on every "
                 "GPU; only GPUs of one clique use NVLink with each other")
NVLINK_DOMAIN_SETTING = "gpufleet_nvlink_domain"
_ZERO_UUID_RE = re.compile(r"^[0-]+$")
SATURATED = (2 ** 16 - 1, 2 ** 32 - 1, 2 ** 64 - 1)
SATURATION_SOURCE = "docs/baselines.md 6: a counter pinned at its maximum (65535) is saturated, not a literal count"
COUNTER_SOURCE = ("Meta GCM check-dcgmi nvlink: replay, recovery and CRC thresholds 0; DCGM health watch: any "
                  "replay or recovery error is a failure (docs/baselines.md 8)")
_SPEED_TOLERANCE = 0.001  # GB/s: nvidia-smi prints three decimals
INACTIVE_SOURCE = "docs/baselines.md 6: <inactive> or a missing link means FAIL"

# A GPU's place in the NVLink fabric: (ClusterUUID lower-cased or None, CliqueId)
Pair = tuple[Any, Any]
# One node's fabric ids: {pair: [labels of the GPUs printing it]}
FabricIds = dict[Pair, list[str]]


def _nvlink_expected(node: NodeContext) -> tuple[int | None, str | None]:
    """``(links per GPU or None, source)``; (0, source) when the node is sold without NVLink."""
    claim = node.claim or {}
    if claim.get("interconnect") == "pcie":
        return 0, "claim"
    if claim.get("nvlinks_per_pair") and claim.get("interconnect") in ("nvswitch", "nvlink_bridge_pairs"):
        return int(claim["nvlinks_per_pair"]), "claim"
    value, source = profile_value(node.profile, "expect.nvlink_links_per_gpu")
    if value is not None:
        return value, source
    interconnect, source = profile_value(node.profile, "expect.interconnect")
    if interconnect == "pcie" and not claim.get("interconnect"):
        return 0, source
    return None, None


def _sold_with_nvlink(node: NodeContext) -> tuple[bool, str | None]:
    """``(True, source)`` when the claim (else the profile) names an NVLink interconnect, whatever the link count."""
    interconnect, source = expectation(node, "interconnect", "expect.interconnect")
    return interconnect in NVLINK_INTERCONNECTS, source


def _gpu_label(gpu: dict[str, Any]) -> str:
    return "GPU%s" % gpu.get("index")


def _nvlink_blocks(gpus: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """GPUs with an nvlink block; None when nvlink was not collected at all."""
    with_block = [gpu for gpu in gpus if gpu.get("nvlink") is not None]
    return with_block or None


# How drivers say a GPU has no usable NVLink, in place of its links: "Nvlink queries are not supported
# for Devices in MIG mode", "NVML: Unable to retrieve NVLink information: Not Supported", and the
# tool's own failure line when it exited non-zero saying so.
_UNSUPPORTED_WORDS = ("not supported", "not_supported", "mig mode")


def _reports_no_nvlink(nvlink: dict[str, Any]) -> bool:
    """True when the GPU's nvlink -s block says the GPU has no NVLink to use (any driver wording)."""
    if nvlink.get("supported") is False:
        return True
    message = (nvlink.get("message") or "").lower()
    return any(words in message for words in _UNSUPPORTED_WORDS)


def _no_links_listed(label: str, nvlink: dict[str, Any], expected: int | None, source: str | None,
                     sold: bool = False) -> tuple[list[CheckResult], int | None]:
    """(results, active count or None) for a GPU whose nvlink -s block lists no link at all.

    ``sold``: the node is sold with NVLink though no link count is expected: no NVLink fails too.
    """
    if _reports_no_nvlink(nvlink):
        return _no_nvlink_reported(label, nvlink, expected, source, sold)
    required = expected or sold
    bare_gpu_line = (nvlink.get("message") is None and not nvlink.get("elided") and nvlink.get("supported") is None
                     and required)
    if nvlink.get("supported") is True or bare_gpu_line:
        # "all links are inActive", or the GPU line with nothing under it: no active link.
        return _none_active(label, nvlink, expected, source, sold)
    return [result(ACTIVE, SKIP, "%s: nvlink -s listed no link (%s)"
                   % (label, nvlink.get("message") or "not collected"), subject=label)], None


def _no_nvlink_reported(label: str, nvlink: dict[str, Any], expected: int | None, source: str | None,
                        sold: bool) -> tuple[list[CheckResult], int | None]:
    """A GPU whose driver says it has no NVLink to use: fine when none is expected, else fails (or is not readable)."""
    if expected == 0:
        return [], 0
    message = nvlink.get("message") or "not supported"
    if expected or sold:
        sold_with = "sold with %d active NVLinks" % expected if expected else "sold with NVLink"
        return [result(ACTIVE, FAIL, "%s reports no NVLink (%s), %s" % (label, message, sold_with),
                       measured=0, expected=expected or 1, threshold_source=source, subject=label)], 0
    return [result(ACTIVE, SKIP, "%s: NVLink not readable: %s" % (label, message), subject=label)], None


def _none_active(label: str, nvlink: dict[str, Any], expected: int | None, source: str | None,
                 sold: bool) -> tuple[list[CheckResult], int | None]:
    """A GPU with NVLink and no active link: fails when NVLink is expected or sold, else warns."""
    if expected == 0:
        return [], 0
    want = "expected %d active" % expected if expected else "sold with NVLink" if sold else "no NVLink expectation"
    return [result(ACTIVE, FAIL if expected or sold else WARN, "%s: no active NVLink (%s), %s"
                   % (label, nvlink.get("message") or "all links inactive", want),
                   measured=0, expected=expected or (1 if sold else None), threshold_source=source,
                   subject=label)], 0


def _active_for_gpu(gpu: dict[str, Any], expected: int | None, source: str | None,
                    sold: bool = False) -> tuple[list[CheckResult], int | None]:
    """Results (non-pass) for one GPU, and its active link count (None when unknown).

    With an expected count, a GPU with at least that many active links passes whatever its other
    links report: parts wired with fewer links than the chip has (H100 NVL: 12 of 18) print the
    rest ``<inactive>`` by design. Short of the count, each inactive link is named.
    """
    label = _gpu_label(gpu)
    nvlink = gpu["nvlink"]
    links = nvlink.get("links") or []
    status_links = [link for link in links if link.get("active") is not None]
    if not status_links:
        return _no_links_listed(label, nvlink, expected, source, sold)
    items = []
    active = [link for link in status_links if link["active"] is True]
    short = expected is None or len(active) < expected
    for link in status_links:
        if link["active"] is False and short:
            subject = "%s/link%s" % (label, link["link"])
            items.append(result(ACTIVE, FAIL, "%s inactive, expected active" % subject, measured="inactive",
                                expected="active", subject=subject,
                                threshold_source=source or INACTIVE_SOURCE))
    if expected and len(active) < expected and not nvlink.get("elided"):
        items.append(result(ACTIVE, FAIL, "%s: %d of %d NVLinks active" % (label, len(active), expected),
                            measured=len(active), expected=expected, threshold_source=source, subject=label))
    elif expected is not None and len(active) > expected:
        items.append(result(ACTIVE, WARN, "%s: %d NVLinks active, expected %d: not the GPU described"
                            % (label, len(active), expected),
                            measured=len(active), expected=expected, threshold_source=source, subject=label))
    return items, len(active)


def _inactive_by_design(gpus: list[dict[str, Any]]) -> int:
    """Inactive links printed on GPUs that already have their expected active count (they passed)."""
    return sum(1 for gpu in gpus for link in gpu["nvlink"].get("links") or [] if link.get("active") is False)


@node_check(ACTIVE, requires=("gpu",))
def link_active(node: NodeContext) -> list[CheckResult]:
    """Links per GPU active, and as many as expected."""
    gpus = node.group("gpu").get("gpus") or []
    blocks = _nvlink_blocks(gpus)
    expected, source = _nvlink_expected(node)
    sold, sold_source = _sold_with_nvlink(node) if expected is None else (False, None)
    if blocks is None:
        return [result(ACTIVE, SKIP, "not judged: nvlink status was not collected")]
    items: list[CheckResult] = []
    counts: list[int] = []
    for gpu in blocks:
        found, count = _active_for_gpu(gpu, expected, source or sold_source, sold)
        items.extend(found)
        if count is not None:
            counts.append(count)
    if [item for item in items if item["status"] != SKIP]:
        return items
    if expected == 0 and not any(counts):
        return [result(ACTIVE, PASS, "sold without NVLink; no active NVLink on %d GPU(s)" % len(blocks),
                       measured=0, expected=0, threshold_source=source)]
    if not counts and items:
        reasons = sorted({item["message"].split(": ", 1)[-1] for item in items})
        return [result(ACTIVE, SKIP, "not judged: %d GPU(s) without NVLink readings: %s"
                       % (len(items), "; ".join(reasons)))]
    total = sum(counts)
    what = "%d GPU(s) x %s" % (len(counts), "/".join(str(c) for c in sorted(set(counts))))
    spare = _inactive_by_design(blocks) if expected else 0
    note = "; %d more link(s) inactive by design" % spare if spare else ""
    return items + [result(ACTIVE, PASS, "all NVLinks active: %s links (%d)%s%s"
                           % (what, total, "" if expected else "; no expected count", note),
                           measured=total, expected=expected * len(counts) if expected else None,
                           threshold_source=source)]


@node_check(SPEED, requires=("gpu",))
def link_speed(node: NodeContext) -> list[CheckResult]:
    """Every active link at the expected speed."""
    gpus = node.group("gpu").get("gpus") or []
    links = []
    for gpu in _nvlink_blocks(gpus) or []:
        for link in gpu["nvlink"].get("links") or []:
            if link.get("active") is True and isinstance(link.get("speed_gbs"), (int, float)):
                links.append(("%s/link%s" % (_gpu_label(gpu), link["link"]), link["speed_gbs"]))
    if not links:
        return [result(SPEED, SKIP, "not judged: no active NVLink with a speed printed")]
    expected, source = profile_value(node.profile, "expect.nvlink_link_speed")
    status = FAIL
    if expected is None:
        expected, source, status = (max(speed for _name, speed in links), "the node's fastest link (no profile speed)",
                                    WARN)
    slow = [result(SPEED, status, "%s runs at %s GB/s, expected %s GB/s" % (name, speed, expected),
                   measured=speed, expected=expected, threshold_source=source, subject=name)
            for name, speed in links if speed < expected - _SPEED_TOLERANCE]
    if slow:
        return slow
    return [result(SPEED, PASS, "%d active NVLinks at %s GB/s or faster" % (len(links), expected),
                   measured=min(speed for _name, speed in links), expected=expected, threshold_source=source)]


def _is_error_counter(name: str, value: Any) -> bool:
    return (name.endswith("_errors") and not name.startswith("fec") and isinstance(value, int)
            and not isinstance(value, bool))


@node_check(ERRORS, requires=("gpu",))
def errors(node: NodeContext) -> list[CheckResult]:
    """Replay / recovery / CRC counters at facts time: non-zero fails, saturated fails as such."""
    gpus = node.group("gpu").get("gpus") or []
    items, counted = [], 0
    for gpu in _nvlink_blocks(gpus) or []:
        for link in gpu["nvlink"].get("links") or []:
            counters = {name: value for name, value in link.items() if _is_error_counter(name, value)}
            if not counters:
                continue
            counted += 1
            found = _counter_failure("%s/link%s" % (_gpu_label(gpu), link["link"]), counters)
            if found is not None:
                items.append(found)
    if not counted:
        return [result(ERRORS, SKIP, "not judged: no NVLink error counters (nvlink -e) collected")]
    return items or [result(ERRORS, PASS, "%d NVLinks, every error counter 0" % counted, measured=0, expected=0,
                            threshold_source=COUNTER_SOURCE)]


def _counter_failure(subject: str, counters: dict[str, int]) -> CheckResult | None:
    """The failure of one link's error counters: saturated ones first, else non-zero ones; None when all are 0."""
    saturated = {name: value for name, value in counters.items() if value in SATURATED}
    nonzero = {name: value for name, value in counters.items() if value and name not in saturated}
    if saturated:
        words = ", ".join("%s SATURATED at %d (true count unknown, at least that)" % (name.replace("_", " "), value)
                          for name, value in sorted(saturated.items()))
        return result(ERRORS, FAIL, "%s: %s" % (subject, words), measured=dict(sorted(counters.items())), expected=0,
                      threshold_source=SATURATION_SOURCE, subject=subject)
    if nonzero:
        words = ", ".join("%d %s" % (value, name.replace("_", " ")) for name, value in sorted(nonzero.items()))
        return result(ERRORS, FAIL, "%s: %s since the counters were reset, expected 0" % (subject, words),
                      measured=dict(sorted(counters.items())), expected=0, threshold_source=COUNTER_SOURCE,
                      subject=subject)
    return None


def _fabric_ids(node: NodeContext) -> tuple[FabricIds, list[str]]:
    """``({(cluster_uuid, clique_id): [GPU labels]}, [GPU labels printing neither])`` of one node."""
    ids: FabricIds = {}
    missing: list[str] = []
    for gpu in node.group("gpu").get("gpus") or []:
        fabric = gpu.get("fabric") or {}
        cluster, clique = fabric.get("cluster_uuid"), fabric.get("clique_id")
        if cluster is None and clique is None:
            missing.append(_gpu_label(gpu))
            continue
        ids.setdefault((str(cluster).lower() if cluster is not None else None, clique), []).append(_gpu_label(gpu))
    return ids, missing


def _no_domain(pair: Pair) -> bool:
    """True when ``(cluster_uuid, clique_id)`` places the GPU in no NVLink domain (Azure azhpc-images#506 shape)."""
    cluster, clique = pair
    return not cluster or bool(_ZERO_UUID_RE.match(cluster)) or clique is None or clique == 0


def _pair_words(pair: Pair) -> str:
    return "cluster %s clique %s" % pair


def _pair_measured(pair: Pair) -> dict[str, Any]:
    return {"cluster_uuid": pair[0], "clique_id": pair[1]}


def _tray_results(ids: FabricIds, missing: list[str]) -> list[CheckResult]:
    """Failures inside one node: GPUs in no domain, GPUs without ids while others have them."""
    items = []
    for pair, labels in sorted(ids.items(), key=lambda entry: str(entry[0])):
        if _no_domain(pair):
            items.append(result(DOMAIN, FAIL, "%s in no NVLink domain: ClusterUUID %s, CliqueId %s"
                                % (", ".join(labels), pair[0], pair[1]),
                                measured=_pair_measured(pair), expected="the domain's ClusterUUID and CliqueId",
                                threshold_source=DOMAIN_SOURCE, subject=labels[0]))
    if missing and ids:
        items.append(result(DOMAIN, FAIL, "%s print no ClusterUUID/CliqueId while the node's other GPUs do"
                            % ", ".join(missing), measured=None, expected="the domain's ClusterUUID and CliqueId",
                            threshold_source=DOMAIN_SOURCE, subject=missing[0]))
    return items


def domain_label(node: NodeContext) -> tuple[str, str] | tuple[None, None]:
    """``(label, where from)``: the NVLink domain the node is said to be in: inventory ``gpufleet_nvlink_domain``,
    else the claim's ``rack``, else ``gpufleet_rack``; ``(None, None)`` when unlabelled."""
    label = node.settings.get(NVLINK_DOMAIN_SETTING)
    if label:
        return str(label), "NVLink domain %s (%s)" % (label, NVLINK_DOMAIN_SETTING)
    rack = (node.claim or {}).get("rack") or node.settings.get("gpufleet_rack")
    return (str(rack), "rack %s" % rack) if rack else (None, None)


def _domain_of(node: NodeContext, ids: FabricIds) -> tuple[tuple[str, Any], str]:
    """``(group key, words)`` of the node's NVLink domain: its label, else its one ClusterUUID, else itself."""
    labelled = domain_label(node)
    if labelled[0] is not None:
        return ("label", labelled[0]), labelled[1]
    clusters = {cluster for cluster, _clique in ids}
    if len(clusters) == 1:
        cluster = next(iter(clusters))
        return ("cluster", cluster), "NVLink domain %s" % cluster
    return ("node", node.name), "node %s" % node.name


@dataclass(frozen=True)
class _Domain:
    """One NVLink domain as judged: its words, its nodes' sound fabric ids, the pair most of its GPUs print (None
    with a tie) and how many of its trays print each pair."""

    words: str
    members: list[str]
    ids_by_node: dict[str, FabricIds]
    top: Pair | None
    trays: Counter[Pair]

    @property
    def expected(self) -> Any:
        return _pair_measured(self.top) if self.top else "one clique per NVLink domain (no majority)"


def _judge_domain(words: str, members: list[str], ids_by_node: dict[str, FabricIds]) -> dict[str, list[CheckResult]]:
    """``{node: [results]}`` of the nodes of one NVLink domain: every GPU in the domain's one (cluster, clique).

    The domain's pair is the one most of its GPUs print; with a tie nobody is right and every node fails. A node whose
    GPUs agree is one result (a tray is placed in a clique as a whole); a node whose GPUs disagree fails per GPU.
    """
    votes: Counter[Pair] = Counter()
    for name in members:
        for pair, labels in ids_by_node[name].items():
            votes[pair] += len(labels)
    ranked = votes.most_common()
    top = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else None
    trays = Counter(pair for name in members for pair in ids_by_node[name])
    domain = _Domain(words, members, ids_by_node, top, trays)
    return {name: _judge_tray(domain, name) for name in members}


def _judge_tray(domain: _Domain, name: str) -> list[CheckResult]:
    """One node of ``domain``: in the domain's clique (pass), wholly in another (fail), or split (fail per GPU)."""
    ids = domain.ids_by_node[name]
    if len(ids) == 1 and next(iter(ids)) == domain.top:
        pair = next(iter(ids))
        return [result(DOMAIN, PASS, "%s: %d tray(s) in one clique (cluster %s, clique %s)"
                       % (domain.words, domain.trays[pair], pair[0], pair[1]), measured=_pair_measured(pair),
                       expected=domain.expected, threshold_source=DOMAIN_SOURCE)]
    if len(ids) == 1:
        pair = next(iter(ids))
        others = Counter(other for member in domain.members if member != name for other in domain.ids_by_node[member])
        elsewhere = ", ".join("%s x%d" % (_pair_words(other), count) for other, count in sorted(others.items()))
        return [result(DOMAIN, FAIL, "%s: this tray is in %s, the other trays in %s: expected one clique per "
                       "NVLink domain" % (domain.words, _pair_words(pair), elsewhere or "no other clique"),
                       measured=_pair_measured(pair), expected=domain.expected, threshold_source=DOMAIN_SOURCE)]
    items = []
    for pair, labels in sorted(ids.items(), key=lambda entry: str(entry[0])):
        if pair == domain.top:
            continue
        for label in labels:
            items.append(result(DOMAIN, FAIL, "%s fabric %s: the node's GPUs are in %d NVLink cliques, "
                                "%s has %s" % (label, _pair_words(pair), len(ids), domain.words,
                                               _pair_words(domain.top) if domain.top else "no majority"),
                                measured=_pair_measured(pair), expected=domain.expected,
                                threshold_source=DOMAIN_SOURCE, subject=label))
    return items


@fleet_check(DOMAIN, requires=("gpu",))
def fabric_domain(nodes: list[NodeContext]) -> dict[str, list[CheckResult]]:
    """Multi-node NVLink (profile ``expect.fabric_clique_scope: nvlink_domain``): one clique per NVLink domain.

    Every GPU prints a non-zero fabric ClusterUUID and CliqueId (zero: the GPU is in no domain); the GPUs of the
    nodes of one NVLink domain share both. The domain: inventory ``gpufleet_nvlink_domain``, else the claim's
    ``rack`` (or ``gpufleet_rack``), else the nodes printing one ClusterUUID (their CliqueIds compared), else the
    node alone. The odd ones out fail; a tie fails the whole domain. No fabric ids at all: skip.
    """
    out: dict[str, list[CheckResult]] = {}
    ids_by_node: dict[str, FabricIds] = {}
    groups: dict[tuple[str, Any], tuple[str, list[str]]] = {}
    for node in nodes:
        scope, _source = profile_value(node.profile, "expect.fabric_clique_scope")
        if scope != "nvlink_domain":
            continue
        ids, missing = _fabric_ids(node)
        if not ids:
            out[node.name] = [result(DOMAIN, SKIP, "not judged: no GPU prints a fabric ClusterUUID/CliqueId (driver "
                                     "too old, or -q not collected)")]
            continue
        out[node.name] = _tray_results(ids, missing)
        sound = {pair: labels for pair, labels in ids.items() if not _no_domain(pair)}
        if not sound:
            continue
        ids_by_node[node.name] = sound
        key, words = _domain_of(node, sound)
        groups.setdefault(key, (words, []))[1].append(node.name)
    for words, members in groups.values():
        for name, items in _judge_domain(words, members, ids_by_node).items():
            if out[name] and all(item["status"] == PASS for item in items):
                continue  # the node already failed inside itself; its sound GPUs agree with the domain
            out[name].extend(items)
    return out
