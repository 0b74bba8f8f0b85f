# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Required evidence: what must be measured on a node before it may be accepted (pure, controller side).

:func:`required_items` reads a node's claim (``gpufleet_claim``), its profile and the benchmarks the
run asks for (``NodeContext.settings["required_benchmarks"]``, :data:`REQUIRED_BENCHMARKS_SETTING`)
and lists the items that must be verified, each mapped to the check ids that verify it:

- the GPU model, count and memory (claim ``gpu_model``/``gpu_count``/``gpu_memory_gb``, else the
  profile's ``expect.gpu_name``/``expect.gpu_count``/``expect.gpu_memory_min``);
- the GPU pair interconnect (claim ``interconnect``, else ``expect.interconnect``) when the node
  is expected to hold more than one GPU;
- NVLink on each GPU when the node is sold (or profiled) with NVLink;
- each claimed NIC line (count, speed and link layer: ``network.nic_speed``), and the RDMA rails
  (claimed ``ib``/``roce`` NICs, else the profile's ``expect.compute_rail``: ``network.rdma_port_state``);
- each benchmark the run asks for (:data:`BENCHMARK_CHECKS`); the burn-in only when both its samples and its
  load (``burn_in.load``: a DCGM run whose every test was skipped verified nothing) were judged
  (:data:`ALL_PARTS_JUDGED`).

:func:`coverage` holds those items against a node's check results: an item is ``failed`` when a
check verifying it failed, ``verified`` when one judged it (pass or warn), else ``unverified`` with
the reason (the checks' skip or error messages, or "no result: not run"). A node with an unverified
item is INCOMPLETE (gpufleet/checks/model.py ``node_verdict``), never ACCEPT; so is a node whose fact
phase overran (a tool timed out or was skipped: :func:`fact_phase_overruns` names them), whatever was
required of it.
"""

from __future__ import annotations

from typing import Any, Sequence

from gpufleet.checks.fixes import fix_for
from gpufleet.checks.model import ERROR, FAIL, PASS, SKIP, WARN, CheckResult, NodeContext
from gpufleet.checks.profiles import expectation, profile_value
from gpufleet.facts import FACT_GROUPS
from gpufleet.facts.raw import is_overrun
from gpufleet.plan.levels import STATIC_LABEL
from gpufleet.plan.nccl_rails import CLAIM_LINK_LAYER

# NodeContext.settings key: the benchmark names (the vocabulary of gpufleet_benchmarks) this run requires.
REQUIRED_BENCHMARKS_SETTING = "required_benchmarks"
# NodeContext.settings keys: the node's validation level (gpufleet/plan/levels.py) and whether that level required
# nothing measured of it (level quick): its ACCEPT is then labelled STATIC_LABEL.
LEVEL_SETTING = "validation_level"
STATIC_SETTING = "static_checks_only"

# A benchmark asked for -> the check ids that judge its records (checks/benchmarks.py, checks/bench_network.py,
# checks/burn_in.py). The names are those of playbooks/benchmark.yml's gpufleet_benchmarks, plus burn_in.
BENCHMARK_CHECKS = {
    "allreduce_single": ("benchmarks.allreduce_single",),
    "allreduce_multi": ("benchmarks.allreduce_multi",),
    "allreduce_pairs": ("benchmarks.pair_search",),
    "iperf3": ("bench_network.iperf3",),
    "iperf3_concurrent": ("bench_network.iperf3_uplink",),
    "ib_write_bw": ("bench_network.ib_write_bw",),
    "ib_write_lat": ("bench_network.ib_write_lat",),
    "nvbandwidth": ("bench_network.nvbandwidth",),
    "burn_in": ("burn_in", "burn_in.samples", "burn_in.load"),
    "gpu_compute": ("benchmarks.gpu_compute",),
}
# Items whose every part must be judged, each part one or more check ids (any of them judging it verifies the part).
# The burn-in: its samples (NVML under load) and its load, so a DCGM run whose every test was skipped (burn_in.load
# error: "did not verify the GPUs") leaves the item unverified even though the samples were judged.
ALL_PARTS_JUDGED = {
    "benchmark.burn_in": (("burn_in", "burn_in.samples"), ("burn_in.load",)),
    # the health re-read after a stress phase (checks/after_stress.py): read again whole, and compared
    "after_stress.benchmarks": (("after_stress.benchmarks.reading",), ("after_stress.benchmarks",)),
    "after_stress.burn_in": (("after_stress.burn_in.reading",), ("after_stress.burn_in",)),
}
# NodeContext.settings key: the stress phases (benchmarks, burn_in) after which the health facts must have been read
# again and compared (gpufleet/results/verdicts.py sets it from the node's level when the after_stress family judges).
REQUIRED_AFTER_STRESS_SETTING = "required_after_stress"
AFTER_STRESS_LABELS = {"benchmarks": "health after the benchmarks", "burn_in": "health after the burn-in"}
BENCHMARK_LABELS = {
    "allreduce_single": "single-node all-reduce",
    "allreduce_multi": "multi-node all-reduce",
    "allreduce_pairs": "pairwise bad-node search",
    "iperf3": "iperf3",
    "iperf3_concurrent": "iperf3 concurrent",
    "ib_write_bw": "ib_write_bw",
    "ib_write_lat": "ib_write_lat",
    "nvbandwidth": "nvbandwidth",
    "burn_in": "burn-in",
    "gpu_compute": "per-GPU compute and memory throughput",
}

NVLINK_INTERCONNECTS = ("nvswitch", "nvlink_bridge_pairs")
# The longest the fact phase's line of a node's ``incomplete`` grows (a node can skip hundreds of tool runs).
OVERRUN_TEXT_MAX = 500
VERIFIED, FAILED, UNVERIFIED = "verified", "failed", "unverified"
JUDGED_STATUSES = (PASS, WARN, FAIL)


def _item(
    item_id: str, label: str, checks: tuple[str, ...], expected: str | None, source: str | None,
    subject: str | None = None,
) -> dict[str, Any]:
    return {
        "item": item_id,
        "label": label,
        "checks": list(checks),
        "expected": expected,
        "source": source,
        "subject": subject,
    }


def required_benchmarks(node: NodeContext) -> list[str]:
    """The benchmarks the run requires of ``node`` (settings ``required_benchmarks``), known names only, in order."""
    asked = node.settings.get(REQUIRED_BENCHMARKS_SETTING) or []
    if isinstance(asked, str):
        asked = [asked]
    return [str(name) for name in dict.fromkeys(asked)]


def _expected_gpu_count(node: NodeContext) -> int | None:
    count, _source = expectation(node, "gpu_count", "expect.gpu_count")
    return count if isinstance(count, int) and not isinstance(count, bool) else None


def _sold_with_nvlink(node: NodeContext) -> tuple[bool, str | None, int | None]:
    """``(NVLink required, source, links per GPU or None)`` from the claim, else the profile."""
    claim = node.claim or {}
    interconnect = claim.get("interconnect")
    if interconnect is not None:
        links = claim.get("nvlinks_per_pair") if interconnect in NVLINK_INTERCONNECTS else None
        return interconnect in NVLINK_INTERCONNECTS, "claim", links
    links, source = profile_value(node.profile, "expect.nvlink_links_per_gpu")
    if isinstance(links, int) and links > 0:
        return True, source, links
    profiled, source = profile_value(node.profile, "expect.interconnect")
    return profiled in NVLINK_INTERCONNECTS, source, None


def _gpu_labels(node: NodeContext) -> list[str] | None:
    """``GPU<index>`` of each GPU the facts list, else of the expected count; None when neither is known."""
    gpus = [gpu for gpu in (node.group("gpu") or {}).get("gpus") or [] if isinstance(gpu, dict)]
    if gpus:
        return ["GPU%s" % gpu.get("index") for gpu in gpus]
    count = _expected_gpu_count(node)
    return ["GPU%d" % index for index in range(count)] if count else None


def _gpu_items(node: NodeContext) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    model, source = expectation(node, "gpu_model", "expect.gpu_name")
    if model is not None:
        items.append(_item("gpu.model", "GPU model", ("gpu.model",), str(model), source))
    count = _expected_gpu_count(node)
    if count is not None:
        items.append(
            _item(
                "gpu.count",
                "GPU count",
                ("gpu.count",),
                "%d GPUs" % count,
                expectation(node, "gpu_count", "expect.gpu_count")[1],
            )
        )
    claim = node.claim or {}
    if claim.get("gpu_memory_gb") is not None:
        items.append(
            _item("gpu.memory", "GPU memory", ("gpu.memory",), "%s GB per GPU" % claim["gpu_memory_gb"], "claim")
        )
    else:
        minimum, source = profile_value(node.profile, "expect.gpu_memory_min")
        if minimum is not None:
            items.append(_item("gpu.memory", "GPU memory", ("gpu.memory",), "at least %s per GPU" % minimum, source))
    return items


def _interconnect_items(node: NodeContext) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    interconnect, source = expectation(node, "interconnect", "expect.interconnect")
    count = _expected_gpu_count(node)
    if interconnect is not None and count != 1:
        items.append(
            _item("topology.gpu_pairs", "GPU pair interconnect", ("topology.gpu_pairs",), str(interconnect), source)
        )
    nvlink, nvlink_source, links = _sold_with_nvlink(node)
    if nvlink:
        expected = "%d active NVLinks" % links if links else "active NVLinks"
        labels = _gpu_labels(node)
        if labels is None:
            items.append(_item("nvlink", "NVLink", ("nvlink.link_active",), expected + " on every GPU", nvlink_source))
        else:
            items.extend(
                _item(
                    "nvlink.%s" % label,
                    "NVLink %s" % label,
                    ("nvlink.link_active",),
                    expected,
                    nvlink_source,
                    subject=label,
                )
                for label in labels
            )
    return items


def _link_layer_words(link_layer: Any) -> str:
    """A profile's ``compute_rail.link_layer``: one name, or the accepted ones (``[InfiniBand, Ethernet]``) joined."""
    if isinstance(link_layer, (list, tuple)):
        return "/".join(str(layer) for layer in link_layer)
    return str(link_layer)


def _nvlink_domain_items(node: NodeContext) -> list[dict[str, Any]]:
    """Where the profile says NVLink spans nodes: the node's GPUs in the NVLink domain's one fabric clique."""
    scope, source = profile_value(node.profile, "expect.fabric_clique_scope")
    if scope != "nvlink_domain":
        return []
    return [_item("nvlink.fabric_domain", "NVLink domain (fabric clique)", ("nvlink.fabric_domain",),
                  "one fabric ClusterUUID and CliqueId across the NVLink domain", source)]


def _rdma_layer(nic: dict[str, Any]) -> str | None:
    """The RDMA link layer a claimed NIC's type needs (CLAIM_LINK_LAYER); None for ``ethernet`` or no type."""
    kind = nic.get("type")
    return None if kind is None else CLAIM_LINK_LAYER.get(kind)


def _nic_items(node: NodeContext) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    claim = node.claim or {}
    nics: list[dict[str, Any]] = (
        [nic for nic in claim.get("nics") or [] if isinstance(nic, dict)] if isinstance(claim.get("nics"), list) else []
    )
    for index, nic in enumerate(nics):
        label = "%sx %s Gb/s %s %s NIC" % (nic.get("count"), nic.get("gbps"), nic.get("role"), nic.get("type"))
        items.append(
            _item(
                "nic.%d" % index,
                label,
                ("network.nic_speed",),
                "%s up at >= %s Gb/s%s"
                % (
                    nic.get("count"),
                    nic.get("gbps"),
                    ", link layer %s" % _rdma_layer(nic) if _rdma_layer(nic) else "",
                ),
                "claim",
            )
        )
    if claim.get("nics") is not None:
        rails = [nic for nic in nics if _rdma_layer(nic)]
        if rails:
            layers = sorted({CLAIM_LINK_LAYER[nic["type"]] for nic in rails})
            wanted = sum(nic.get("count") or 0 for nic in rails)
            items.append(
                _item(
                    "rdma",
                    "RDMA ports",
                    ("network.rdma_port_state",),
                    "%d %s port(s) Active" % (wanted, "/".join(layers)),
                    "claim",
                )
            )
        return items
    rail, source = profile_value(node.profile, "expect.compute_rail")
    if rail:
        items.append(
            _item(
                "rdma",
                "RDMA compute rail",
                ("network.rdma_port_state",),
                "%s %s port(s) Active at %s"
                % (rail.get("count"), _link_layer_words(rail.get("link_layer")), rail.get("rate")),
                source,
            )
        )
    return items


def _benchmark_items(node: NodeContext) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for name in required_benchmarks(node):
        checks = BENCHMARK_CHECKS.get(name)
        if checks is None:
            # a name no check judges can never be verified: required, and named as such
            items.append(
                _item("benchmark.%s" % name, "benchmark %s" % name, (), "run and judged", "the run's benchmarks")
            )
            continue
        items.append(
            _item(
                "benchmark.%s" % name,
                "benchmark %s" % BENCHMARK_LABELS.get(name, name),
                checks,
                "run and judged",
                "the run's benchmarks",
            )
        )
    return items


def _after_stress_items(node: NodeContext) -> list[dict[str, Any]]:
    phases = node.settings.get(REQUIRED_AFTER_STRESS_SETTING) or []
    return [_item("after_stress.%s" % phase, AFTER_STRESS_LABELS[phase],
                  ("after_stress.%s.reading" % phase, "after_stress.%s" % phase),
                  "read again and no health fact worse than before", "the run's stress phases")
            for phase in AFTER_STRESS_LABELS if phase in phases]


def required_items(node: NodeContext) -> list[dict[str, Any]]:
    """What must be verified on ``node`` (a NodeContext): ``[{item, label, checks, expected, source, subject}]``."""
    return (_gpu_items(node) + _interconnect_items(node) + _nvlink_domain_items(node) + _nic_items(node)
            + _benchmark_items(node) + _after_stress_items(node))


def _matches(item: dict[str, Any], result: CheckResult) -> bool:
    return result.get("id") in item["checks"]


def _for_subject(subject: str, result: CheckResult) -> bool:
    """A result about ``subject`` (``GPU3``) or one of its parts (``GPU3/link2``)."""
    other = str(result.get("subject") or "")
    return other == subject or other.startswith(subject + "/")


def _unverified_reason(item: dict[str, Any], results: Sequence[CheckResult]) -> str:
    if not results:
        if not item["checks"]:
            return "no check judges it"
        return "no result from %s: not run or not recorded" % ", ".join(item["checks"])
    messages = []
    for found in results:
        text = " ".join(str(found.get("message") or found.get("status")).split())
        if found.get("status") == ERROR:
            text = "error: " + text
        if text not in messages:
            messages.append(text)
    return "; ".join(messages)[:300]


def _all_parts_status(
    item: dict[str, Any], parts: tuple[tuple[str, ...], ...], results: Sequence[CheckResult]
) -> tuple[str, str | None]:
    """An item of :data:`ALL_PARTS_JUDGED`: each part judged as an item of its own, the worst part naming why."""
    judged = [(part, item_status(dict(item, item=None, checks=list(part)), results)) for part in parts]
    failed = [reason or "" for _part, (status, reason) in judged if status == FAILED]
    if failed:
        return FAILED, "; ".join(failed)[:300]
    missing = ["%s: %s" % (", ".join(part), reason) for part, (status, reason) in judged if status == UNVERIFIED]
    if missing:
        return UNVERIFIED, "; ".join(missing)[:300]
    return VERIFIED, None


def _about_subject(subject: str, mine: list[CheckResult]) -> list[CheckResult] | None:
    """The results about ``subject`` (``GPU3``), else the node-wide ones; None when the check judged and named only
    other subjects (it found those at fault: this one was judged good); empty when it judged nothing."""
    specific = [found for found in mine if _for_subject(subject, found)]
    if specific:
        return specific
    general = [found for found in mine if not found.get("subject")]
    if general:
        return general
    if any(found.get("status") in JUDGED_STATUSES for found in mine):
        return None
    return []


def item_status(item: dict[str, Any], results: Sequence[CheckResult]) -> tuple[str, str | None]:
    """``(verified | failed | unverified, reason)`` of one required item against a node's check results.

    An item of :data:`ALL_PARTS_JUDGED` is failed when a part failed, unverified when a part was not
    judged (naming it), verified only when every part was.
    """
    parts = ALL_PARTS_JUDGED.get(item.get("item") or "")
    if parts:
        return _all_parts_status(item, parts, results)
    mine: list[CheckResult] | None = [found for found in results if _matches(item, found)]
    if item.get("subject") and mine is not None:
        mine = _about_subject(item["subject"], mine)
    if mine is None:
        # the check judged the node's GPUs and named only those it found at fault: this one was judged good
        return VERIFIED, None
    statuses = {found.get("status") for found in mine}
    if FAIL in statuses:
        return (
            FAILED,
            "; ".join(" ".join(str(found.get("message")).split()) for found in mine if found.get("status") == FAIL)[
                :300
            ],
        )
    if statuses & {PASS, WARN}:
        return VERIFIED, None
    return UNVERIFIED, _unverified_reason(
        item, [found for found in mine if found.get("status") in (SKIP, ERROR)] or mine
    )


def fact_phase_overruns(node: NodeContext) -> str | None:
    """``facts: <tool> timed out after 30 s; <tools> skipped: ...`` when a tool overran the node's fact phase, or None.

    From each group's facts (``overran``: the group was built from what the other tools gave) and from the fact
    errors that say a tool overran (gpufleet/facts/raw.py ``is_overrun``), the host's name taken off.
    """
    found: list[Any] = []
    for group in FACT_GROUPS:
        facts = node.group(group)
        found.extend(facts.get("overran") or [] if isinstance(facts, dict) else [])
    prefix = "%s: " % node.name
    for _group, message in sorted(node.fact_errors.items()):
        if is_overrun(message):
            found.append(message[len(prefix):] if message.startswith(prefix) else message)
    texts = list(dict.fromkeys(str(text) for text in found))
    return "facts: %s" % "; ".join(texts)[:OVERRUN_TEXT_MAX] if texts else None


def coverage(node: NodeContext, results: Sequence[CheckResult]) -> dict[str, Any]:
    """The node's evidence coverage from its check results.

    ``{claim, required, judged, verified, failed, skipped, items, incomplete, level, label}``: counts of the
    required items, each item with its status and reason (an unverified one also its ``fix``, checks/fixes.py), and
    ``incomplete`` the reasons the node
    cannot be accepted for want of evidence (``"NVLink GPU3: nvlink -s listed no link"``). A node
    with no judged result at all is incomplete even when nothing was required of it, and so is one whose
    fact phase overran (:func:`fact_phase_overruns`, first in ``incomplete``). ``level``: the
    validation level the node was judged at (None when the run recorded none); ``label``: "static checks
    only" when that level required nothing measured of it (quick), else None.
    """
    items: list[dict[str, Any]] = []
    for item in required_items(node):
        status, reason = item_status(item, results)
        fixed = {"fix": fix_for(reason or "")} if status == UNVERIFIED else {}
        items.append(dict(item, status=status, reason=reason, **fixed))
    unverified = [item for item in items if item["status"] == UNVERIFIED]
    # the fact phase overran first: it is why the items after it may be unverified
    overran = fact_phase_overruns(node)
    incomplete = ([overran] if overran else []) + ["%s: %s" % (item["label"], item["reason"]) for item in unverified]
    if not any(found.get("status") in JUDGED_STATUSES for found in results):
        incomplete.append("nothing was judged: no check found evidence on this node")
    failed = sum(1 for item in items if item["status"] == FAILED)
    verified = sum(1 for item in items if item["status"] == VERIFIED)
    return {
        "claim": node.claim is not None,
        "required": len(items),
        "judged": failed + verified,
        "verified": verified,
        "failed": failed,
        "skipped": len(unverified),
        "items": items,
        "incomplete": incomplete,
        "level": node.settings.get(LEVEL_SETTING),
        "label": STATIC_LABEL if node.settings.get(STATIC_SETTING) else None,
    }
