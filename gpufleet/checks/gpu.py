# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU checks from ``gpufleet_gpu``: count, model, memory, health and state of every GPU.

One result per GPU that is off (``subject`` ``GPU3``), or one ``pass`` when all are fine; a
value nvidia-smi did not print is never read as fine: a GPU without it is left out and the
check says so, or skips when no GPU printed it.

| id | judges | status |
|---|---|---|
| ``gpu.count`` | GPUs NVML lists vs the claim's ``gpu_count`` / ``expect.gpu_count``; a ``topo -m`` count apart fails | fail |
| ``gpu.visible`` | NVIDIA GPUs on the PCI bus (lspci) vs GPUs NVML lists: fell off the bus, driver not bound | fail |
| ``gpu.model`` | each GPU's name vs the claim's ``gpu_model`` / profile ``expect.gpu_name`` (regex); a Cf/Cc character (U+202E) in it fails | fail |
| ``gpu.memory`` | each GPU's memory vs the claim's ``gpu_memory_gb`` (as sold: 10^9 bytes) / ``expect.gpu_memory_min`` | fail |
| ``gpu.consistency`` | the profile's ``fleet.consistent_gpu_fields`` agree between the node's GPUs (mixed batch) | fail |
| ``gpu.app_clocks`` | GPUs of one part at the same application clocks (graphics/memory): one below the others fails, above warns | fail/warn |
| ``gpu.ecc`` | ECC mode: off on a data-center GPU fails, on a workstation GPU warns; pending change warns | fail/warn |
| ``gpu.ecc_errors`` | uncorrectable ECC: volatile fail, aggregate warn; AzNHC's SRAM/DRAM limits fail | fail/warn |
| ``gpu.recovery_action`` | NVML's GPU Recovery Action (R570+): anything but None fails, naming the action | fail |
| ``gpu.pcie_replay`` | PCIe "Replays Since Reset" / host uptime above 8 per minute; else noted | warn |
| ``gpu.retired_pages`` | page retirement pending fails; retired pages present warn (pre-A100 GPUs) | fail/warn |
| ``gpu.row_remap`` | row remapping pending or failed fails; rows remapped for uncorrectable errors warn (A100+) | fail/warn |
| ``gpu.mig`` | MIG mode enabled | fail |
| ``gpu.persistence`` | persistence mode off | warn |
| ``gpu.processes`` | compute processes already on a freshly rented GPU | fail |
| ``gpu.fabric`` | Fabric state not Completed / status not Success: NVSwitch systems, multi-node NVLink domains | fail |
| ``gpu.throttle`` | HW slowdown / HW thermal / HW power brake fail; SW power cap / SW thermal warn | fail/warn |
| ``gpu.temperature`` | temperature at or above the profile's ``host.temperature_max``, else the GPU's own slowdown temperature | warn |
| ``gpu.queries`` | neither ``nvidia-smi -q -x`` nor ``-q`` could be read (the facts hold only ``nvlink -s``) | fail |

A GPU count, memory size or temperature above its ceiling in checks/plausible.py (32 GPUs, 1 TiB, 150 C) is a broken
sensor or a forged capture: ``gpu.count``, ``gpu.memory`` and ``gpu.temperature`` fail it as ``implausible: ...``,
naming the GPU and the figure, and judge nothing else from it.

Without either ``-q`` query (gpufleet/facts/gpu.py ``build_nvlink_only``) every other ``gpu.*`` check says "not
measured" (a skip naming the queries' failures) and ``gpu.queries`` fails; the NVLink checks still judge the links.

``gpu.ecc_errors`` also judges the per-memory counts as AzNHC's ``check_gpu_ecc`` does: SRAM uncorrectable
(volatile or aggregate) fails, SRAM correctable over 10000 or DRAM counts over 20000000 fail.
``pcie_replay_growth`` compares two readings (the health re-read after stress, checks/after_stress.py): any
growth fails, and the message gives the growth per minute against DCGM's health-watch limit when the time between
the readings is known.

A cumulative counter read once counts from a start the facts do not know (the driver load, a GPU reset, a counter
clear), so a non-zero value says the link erred at some time, not that it errs now. DCGM's health watch judges PCIe
replays by their rate, more than 8 per minute warns (NVIDIA/DCGM modules/health/DcgmHealthWatch.cpp ``MonitorPcie``,
``DCGM_LIMIT_MAX_PCIREPLAY_RATE``). A rate needs a time base: the host's uptime (``gpufleet_host.uptime_s``) bounds
the counter's window from above, so count / uptime is a lower bound of the rate, which warns when even it exceeds 8
per minute; without the uptime one reading is noted. Per counter (docs/baselines.md 8):

| counter (check) | one reading | why |
|---|---|---|
| PCIe Replays Since Reset (``gpu.pcie_replay``) | over 8/min since boot warns, else noted | uptime (above) |
| NVLink replay / recovery / CRC (``nvlink.errors``) | non-zero fails, kept | Meta GCM's check fails one reading |
| IB PortCounters errors (``network.ib_port_errors``) | non-zero noted (it warned) | no time base |
| the same, saturated at the counter's width | fails, kept | the count is unknown; growth can no longer show |
| volatile uncorrectable ECC, AzNHC's SRAM/DRAM limits | fail, kept | a fault on one reading (NVIDIA, AzNHC) |
| aggregate uncorrectable ECC (``gpu.ecc_errors``) | warns, kept | uncorrectable errors in the GPU's life |
| retired pages, remapped rows | kept | a state of the memory, not a rate |

Growth between two readings of any of them is judged: after stress (checks/after_stress.py), in the burn-in's NVML
samples (checks/burn_in_flags.py: NVLink and ECC; the sampler reads no PCIe replay counter) and around the network
benchmarks (``bench_network.ib_counters``).

The checks are declared here (the engine runs a family's checks by the module that declares them); the rules they
share live in checks/gpu_rules.py, and what each per-GPU check finds at fault in one GPU in checks/gpu_findings.py.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from gpufleet.checks.registry import node_check
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.plausible import CEILINGS, implausible
from gpufleet.checks.profiles import expectation, profile_value
from gpufleet.facts.shapes import Gpu
# The rules the checks share (gpu_rules.py); query_check and pcie_replay_growth are imported from here by pcie.py and
# after_stress.py, so they are re-exported.
from gpufleet.checks.gpu_rules import (DEFAULT_CONSISTENT_FIELDS, NVIDIA_SMI, PCIE_REPLAY_SOURCE, RECOVERY_SOURCE,
                                       brand, collapse, fabric_expected, fabric_states, hidden_characters, label,
                                       model_matches, node_gpus, queries_unread, replay_counts_noted,
                                       replay_rates_since_boot, topology_gpu_count)
# What each per-GPU check finds at fault in one GPU (gpu_findings.py)
from gpufleet.checks.gpu_findings import (ecc_error_findings, ecc_mode_findings, fabric_findings, fabric_not_printed,
                                          mig_findings, process_findings, recovery_action_findings,
                                          retired_page_findings, row_remap_findings, throttle_findings)
from gpufleet.checks.gpu_rules import pcie_replay_growth
from gpufleet.checks.gpu_rules import query_check
# the re-exported names above (a plain import and __all__, so mypy and pylint both see them exported)
__all__ = ["pcie_replay_growth", "query_check"]

QUERIES = "gpu.queries"


@node_check(QUERIES, requires=("gpu",))
def queries(node: NodeContext) -> list[CheckResult]:
    """The GPU state was read by ``nvidia-smi -q -x`` or ``-q``; neither read (only ``nvlink -s``) fails."""
    facts = node.group("gpu")
    failures = facts.get("query_failures") or []
    unread = queries_unread(node)
    if unread:
        return [result(QUERIES, FAIL, "could not read the GPUs: %s" % unread, measured=failures,
                       expected="nvidia-smi -q -x or -q read", threshold_source=NVIDIA_SMI)]
    sources = facts.get("sources") or {}
    read = [name for key, name in (("xml", "nvidia-smi -q -x"), ("text", "nvidia-smi -q")) if sources.get(key)]
    note = " (%s)" % "; ".join(failures) if failures else ""
    return [result(QUERIES, PASS, "GPU state read from %s%s" % (" and ".join(read) or NVIDIA_SMI, note),
                   measured=read or None, threshold_source=NVIDIA_SMI)]


@query_check("gpu.count")
def count(node: NodeContext) -> list[CheckResult]:
    """GPUs NVML lists against the claim/profile; first, the node's own evidence must agree: as many GPUs in
    ``nvidia-smi topo -m`` as ``nvidia-smi -q`` lists (a matrix of another machine, or a forged one, is not judged)."""
    measured = node.group("gpu").get("gpu_count")
    in_matrix = topology_gpu_count(node)
    if in_matrix is not None and measured is not None and in_matrix != measured:
        return [result("gpu.count", FAIL, "inconsistent evidence: nvidia-smi topo -m shows %d GPU(s), nvidia-smi -q "
                       "lists %d: the two came from different machines or one is damaged; gather both again on the "
                       "node" % (in_matrix, measured), measured=measured, expected=in_matrix,
                       threshold_source="the node's own nvidia-smi topo -m")]
    absurd = implausible("gpu_count", measured, "nvidia-smi's GPU count")
    if absurd:
        return [result("gpu.count", FAIL, absurd, measured=measured, expected=CEILINGS["gpu_count"].limit,
                       threshold_source=CEILINGS["gpu_count"].source)]
    expected, source = expectation(node, "gpu_count", "expect.gpu_count")
    if expected is None:
        return [result("gpu.count", SKIP, "not judged: no claim and profile %s sets no expect.gpu_count; %s GPU(s) seen"
                       % ((node.profile or {}).get("name"), measured), measured=measured)]
    status = PASS if measured == expected else FAIL
    return [result("gpu.count", status, "%s GPU(s) visible to nvidia-smi, expected %s" % (measured, expected),
                   measured=measured, expected=expected, threshold_source=source)]


@query_check("gpu.visible")
def visible(node: NodeContext) -> list[CheckResult]:
    """NVIDIA GPUs on the PCI bus against the GPUs NVML lists."""
    facts = node.group("gpu")
    on_bus, nvml = facts.get("lspci_gpu_count"), facts.get("gpu_count")
    if on_bus is None:
        return [result("gpu.visible", SKIP, "not judged: no lspci listing (lspci missing or not collected)")]
    missing = facts.get("lspci_only_bus_ids") or []
    if on_bus > nvml or missing:
        where = " (%s)" % ", ".join(missing) if missing else ""
        return [result("gpu.visible", FAIL,
                       "lspci lists %d NVIDIA GPU(s), nvidia-smi sees %d: %d fell off the bus or have no driver%s"
                       % (on_bus, nvml, max(on_bus - nvml, len(missing)), where), measured=nvml, expected=on_bus,
                       threshold_source="lspci: NVIDIA GPUs on the PCI bus", subject=", ".join(missing) or None)]
    return [result("gpu.visible", PASS, "all %d GPU(s) on the PCI bus are visible to nvidia-smi" % on_bus,
                   measured=nvml, expected=on_bus, threshold_source="lspci: NVIDIA GPUs on the PCI bus")]


@query_check("gpu.model")
def model(node: NodeContext) -> list[CheckResult]:
    """Every GPU's model against the claim (name) or the profile (regex)."""
    claimed = (node.claim or {}).get("gpu_model")
    pattern, source = profile_value(node.profile, "expect.gpu_name")
    if claimed:
        source = "claim"
    elif pattern is None:
        return [result("gpu.model", SKIP, "not judged: no claim and profile %s sets no expect.gpu_name"
                       % (node.profile or {}).get("name"))]
    items, judged = [], 0
    for gpu in node_gpus(node):
        name = gpu.get("name")
        if not name:
            continue
        judged += 1
        hidden = hidden_characters(name)
        if hidden:
            items.append(result("gpu.model", FAIL, "%s name contains %s: not a name nvidia-smi prints, never compared "
                                "as a model" % (label(gpu), ", ".join(hidden)), measured=name,
                                expected=claimed or pattern, threshold_source=source, subject=label(gpu)))
            continue
        good = model_matches(claimed, name) if claimed else re.search(pattern, name)
        if not good:
            want = claimed or "a GPU matching %r" % pattern
            items.append(result("gpu.model", FAIL, "%s is %s, expected %s" % (label(gpu), name, want),
                                measured=name, expected=claimed or pattern, threshold_source=source,
                                subject=label(gpu)))
    names = sorted({printed for gpu in node_gpus(node) if (printed := gpu.get("name"))})
    return collapse("gpu.model", items, judged, "%d GPU(s) %s as expected" % (judged, ", ".join(names)),
                    "nvidia-smi printed no GPU name",
                    measured=names, expected=claimed or pattern, threshold_source=source)


@query_check("gpu.memory")
def memory(node: NodeContext) -> list[CheckResult]:
    """Every GPU's memory against the claim (GB as sold) or the profile's minimum (MiB)."""
    claim_gb = (node.claim or {}).get("gpu_memory_gb")
    minimum: Any  # MiB
    source: str | None
    if claim_gb:
        # Sellers quote "80 GB" in decimal units: an H100 80GB reports 81559 MiB (< 80 GiB).
        minimum, source = int(claim_gb * 10 ** 9 / 2 ** 20), "claim"
        want = "%s GB claimed (%d MiB)" % (claim_gb, minimum)
    else:
        minimum, source = profile_value(node.profile, "expect.gpu_memory_min")
        if minimum is None:
            return [result("gpu.memory", SKIP, "not judged: no claim and profile %s sets no expect.gpu_memory_min"
                           % (node.profile or {}).get("name"))]
        want = "at least %d MiB" % minimum
    items, judged = [], 0
    for gpu in node_gpus(node):
        size = gpu.get("memory_total_mib")
        if size is None:
            continue
        judged += 1
        absurd = implausible("gpu_memory_mib", size, label(gpu))
        if absurd:
            items.append(result("gpu.memory", FAIL, absurd, measured=size, expected=CEILINGS["gpu_memory_mib"].limit,
                                threshold_source=CEILINGS["gpu_memory_mib"].source, subject=label(gpu)))
        elif size < minimum:
            items.append(result("gpu.memory", FAIL, "%s has %d MiB, expected %s" % (label(gpu), size, want),
                                measured=size, expected=minimum, threshold_source=source, subject=label(gpu)))
    sizes = sorted({size_mib for gpu in node_gpus(node) if (size_mib := gpu.get("memory_total_mib")) is not None})
    return collapse("gpu.memory", items, judged, "%d GPU(s) with %s MiB, expected %s"
                    % (judged, "/".join(map(str, sizes)), want),
                    "nvidia-smi printed no memory size", measured=min(sizes) if sizes else None, expected=minimum,
                    threshold_source=source)


@query_check("gpu.consistency")
def consistency(node: NodeContext) -> list[CheckResult]:
    """The node's GPUs agree on model, VBIOS, board part, memory, power limit and max clocks."""
    fields, source = profile_value(node.profile, "fleet.consistent_gpu_fields")
    if fields is None:
        fields, source = DEFAULT_CONSISTENT_FIELDS, "gpufleet default consistency fields"
    gpus = node_gpus(node)
    items, compared = [], []
    for field in fields:
        values = [(gpu, gpu.get(field)) for gpu in gpus if gpu.get(field) is not None]
        if len(values) < 2:
            continue
        compared.append(field)
        common, _count = Counter(value for _gpu, value in values).most_common(1)[0]
        for gpu, value in values:
            if value != common:
                items.append(result("gpu.consistency", FAIL, "%s %s is %s, the node's other GPUs have %s (mixed batch)"
                                    % (label(gpu), field, value, common), measured=value, expected=common,
                                    threshold_source=source, subject=label(gpu)))
    return collapse("gpu.consistency", items, compared, "%d GPU(s) agree on %s" % (len(gpus), ", ".join(compared)),
                    "fewer than two GPUs print %s" % ", ".join(fields), threshold_source=source)


# Application clocks are a setting (``nvidia-smi -ac``) that survives a job: the node's GPUs of one part share them.
APP_CLOCKS_SOURCE = ("the node's GPUs of one part at one application clock setting (same batch; nvidia-smi -q "
                     "Applications Clocks)")


def _app_clocks_of(gpu: Gpu) -> tuple[int, int] | None:
    """``(graphics, memory)`` application clocks in MHz of a GPU that prints both, else None."""
    graphics, memory = gpu.get("clocks_applications_graphics_mhz"), gpu.get("clocks_applications_mem_mhz")
    return None if graphics is None or memory is None else (graphics, memory)


def _part_clock_findings(part: str, members: list[tuple[Gpu, tuple[int, int]]]) -> tuple[str, list[CheckResult]]:
    """``(the part's usual setting in words, findings)``: a GPU below it (graphics or memory lower) fails, one
    above it warns."""
    counts = Counter(clocks for _gpu, clocks in members)
    # the part's usual setting; in a tie the higher one, so that the GPUs below it are the ones named
    usual = max(counts, key=lambda clocks: (counts[clocks], clocks))
    items = []
    for gpu, clocks in members:
        if clocks != usual:
            words = "%s application clocks %d/%d MHz (graphics/memory), its other %s GPUs %d/%d MHz" % (
                label(gpu), *clocks, part, *usual)
            slower = clocks[0] < usual[0] or clocks[1] < usual[1]
            items.append(result("gpu.app_clocks", FAIL if slower else WARN, words, measured="%d/%d MHz" % clocks,
                                expected="%d/%d MHz" % usual, threshold_source=APP_CLOCKS_SOURCE, subject=label(gpu)))
    return "%s %d/%d MHz" % (part, usual[0], usual[1]), items


@query_check("gpu.app_clocks")
def app_clocks(node: NodeContext) -> list[CheckResult]:
    """GPUs of one part at one application clock setting: a GPU below the part's usual setting (its graphics or memory
    clock lower) is slower in every job and fails; one above it warns. Drivers that no longer serve application clocks
    (590 prints "deprecated") leave it not judged."""
    by_part: dict[str, list[tuple[Gpu, tuple[int, int]]]] = {}
    for gpu in node_gpus(node):
        if (clocks := _app_clocks_of(gpu)) is not None:
            by_part.setdefault(str(gpu.get("name")), []).append((gpu, clocks))
    items, settings = [], []
    for part, members in sorted(by_part.items()):
        setting, off = _part_clock_findings(part, members)
        settings.append(setting)
        items.extend(off)
    judged = sum(len(members) for members in by_part.values())
    return collapse("gpu.app_clocks", items, judged, "%d GPU(s) at one application clock setting: %s"
                    % (judged, "; ".join(settings)), "no GPU prints its application clocks",
                    threshold_source=APP_CLOCKS_SOURCE)


@query_check("gpu.ecc")
def ecc(node: NodeContext) -> list[CheckResult]:
    """ECC mode on; a pending change reported."""
    items, judged = [], 0
    for gpu in node_gpus(node):
        kind = brand(gpu)
        if gpu.get("ecc_mode_current") is None or kind == "consumer":
            continue
        judged += 1
        items.extend(ecc_mode_findings(gpu, kind))
    return collapse("gpu.ecc", items, judged, "ECC enabled on %d GPU(s)" % judged,
                    "no GPU reports an ECC mode (consumer GPUs have none)", measured=True, expected=True,
                    threshold_source=NVIDIA_SMI)


@query_check("gpu.ecc_errors")
def ecc_errors(node: NodeContext) -> list[CheckResult]:
    """Uncorrectable ECC errors since boot (fail) and over the GPU's life (warn); AzNHC's SRAM/DRAM limits (fail)."""
    items, judged = [], 0
    for gpu in node_gpus(node):
        volatile = gpu.get("ecc_errors_volatile_uncorrectable")
        aggregate = gpu.get("ecc_errors_aggregate_uncorrectable")
        if volatile is None and aggregate is None:
            continue
        judged += 1
        items.extend(ecc_error_findings(gpu, volatile, aggregate))
    return collapse("gpu.ecc_errors", items, judged, "no uncorrectable ECC error on %d GPU(s)" % judged,
                    "no GPU reports ECC error counts", measured=0, expected=0, threshold_source=NVIDIA_SMI)


@query_check("gpu.recovery_action")
def recovery_action(node: NodeContext) -> list[CheckResult]:
    """NVML's GPU Recovery Action: anything but None fails with the action named (drivers before R570 print none)."""
    items, judged = [], 0
    for gpu in node_gpus(node):
        action = gpu.get("gpu_recovery_action")
        if action is None:
            continue
        judged += 1
        items.extend(recovery_action_findings(gpu, action))
    return collapse("gpu.recovery_action", items, judged, "GPU Recovery Action None on %d GPU(s)" % judged,
                    "no GPU prints a GPU Recovery Action (driver before R570)", measured="None", expected="None",
                    threshold_source=RECOVERY_SOURCE)


@query_check("gpu.pcie_replay")
def pcie_replay(node: NodeContext) -> list[CheckResult]:
    """PCIe replays since the last reset, read once. The counter starts at a driver load or GPU reset after boot, so
    with the host's uptime (``gpufleet_host.uptime_s``) count / uptime is a lower bound of its mean rate: a GPU whose
    lower bound is above DCGM's 8 per minute warns, the others are noted with it. Without uptime the counts are
    noted, not judged; growth between two readings is judged after stress."""
    counts = {label(gpu): replays for gpu in node_gpus(node) if (replays := gpu.get("replays_since_reset")) is not None}
    if not counts:
        return [result("gpu.pcie_replay", SKIP, "not judged: no GPU prints Replays Since Reset")]
    replayed = {name: count for name, count in counts.items() if count}
    if not replayed:
        return [result("gpu.pcie_replay", PASS, "no PCIe replay on %d GPU(s)" % len(counts), measured=0, expected=0,
                       threshold_source=PCIE_REPLAY_SOURCE)]
    others = len(counts) - len(replayed)
    zeros = "; 0 on the other %d GPU(s)" % others if others else ""
    # no host group (not gathered, failed) is no reason to skip: the counts are still noted
    uptime_s = (node.group("host") or {}).get("uptime_s")
    if uptime_s is None or uptime_s <= 0:
        return replay_counts_noted(counts, replayed, zeros)
    return replay_rates_since_boot(counts, replayed, uptime_s, zeros)


@query_check("gpu.retired_pages")
def retired_pages(node: NodeContext) -> list[CheckResult]:
    """Page retirement pending (fail) or pages retired (warn)."""
    items, judged = [], 0
    for gpu in node_gpus(node):
        pages = gpu.get("retired_pages")
        if not pages:
            continue
        judged += 1
        items.extend(retired_page_findings(gpu, pages))
    return collapse("gpu.retired_pages", items, judged, "no retired page on %d GPU(s)" % judged,
                    "no GPU reports page retirement (A100 and later remap rows instead)", measured=0, expected=0,
                    threshold_source=NVIDIA_SMI)


@query_check("gpu.row_remap")
def row_remap(node: NodeContext) -> list[CheckResult]:
    """Row remapping pending or failed (fail); rows remapped for uncorrectable errors (warn)."""
    items, judged = [], 0
    for gpu in node_gpus(node):
        rows = gpu.get("remapped_rows")
        if not rows:
            continue
        judged += 1
        items.extend(row_remap_findings(gpu, rows))
    return collapse("gpu.row_remap", items, judged, "no pending or failed row remapping on %d GPU(s)" % judged,
                    "no GPU reports row remapping (before A100, or N/A under MIG)", threshold_source=NVIDIA_SMI)


@query_check("gpu.mig")
def mig(node: NodeContext) -> list[CheckResult]:
    """MIG mode off: the node is sold as whole GPUs."""
    items, judged = [], 0
    for gpu in node_gpus(node):
        mode = gpu.get("mig_mode_current")
        if mode is None:
            continue
        judged += 1
        items.extend(mig_findings(gpu, mode))
    return collapse("gpu.mig", items, judged, "MIG disabled on %d GPU(s)" % judged,
                    "no GPU reports a MIG mode (not MIG-capable)",
                    measured="Disabled", expected="Disabled", threshold_source=NVIDIA_SMI)


@query_check("gpu.persistence")
def persistence(node: NodeContext) -> list[CheckResult]:
    """Persistence mode on (off: every job pays driver initialisation, state is lost between jobs)."""
    items, judged = [], 0
    for gpu in node_gpus(node):
        mode = gpu.get("persistence_mode")
        if mode is None:
            continue
        judged += 1
        if mode is False:
            items.append(result("gpu.persistence", WARN, "%s has persistence mode off" % label(gpu), measured=False,
                                expected=True,
                                threshold_source=NVIDIA_SMI, subject=label(gpu)))
    return collapse("gpu.persistence", items, judged, "persistence mode on for %d GPU(s)" % judged,
                    "no GPU reports persistence mode",
                    measured=True, expected=True, threshold_source=NVIDIA_SMI)


@query_check("gpu.processes")
def processes(node: NodeContext) -> list[CheckResult]:
    """No compute process on a GPU that was just handed over."""
    items, judged = [], 0
    for gpu in node_gpus(node):
        procs = gpu.get("processes")
        if procs is None:
            continue
        judged += 1
        items.extend(process_findings(gpu, procs))
    return collapse("gpu.processes", items, judged, "no process on %d GPU(s)" % judged,
                    "nvidia-smi printed no process list",
                    measured=0, expected=0, threshold_source="a freshly rented GPU runs nothing")


@query_check("gpu.fabric")
def fabric(node: NodeContext) -> list[CheckResult]:
    """Fabric registration Completed/Success on NVSwitch systems and on every GPU of a multi-node NVLink domain."""
    required, source, registrar = fabric_expected(node)
    states = fabric_states(node_gpus(node))
    if not states:
        return fabric_not_printed(required, source, registrar)
    items = fabric_findings(states, required, source, registrar)
    return collapse("gpu.fabric", items, states, "fabric Completed / Success on %d GPU(s)" % len(states), "",
                    measured={"state": "Completed", "status": "Success"},
                    expected={"state": "Completed", "status": "Success"},
                    threshold_source=source or NVIDIA_SMI)


@query_check("gpu.throttle")
def throttle(node: NodeContext) -> list[CheckResult]:
    """Clock event reasons: hardware slowdowns fail, software caps warn."""
    items, judged = [], 0
    for gpu in node_gpus(node):
        reasons = gpu.get("clock_event_reasons")
        if not reasons or all(value is None for value in reasons.values()):
            continue
        judged += 1
        items.extend(throttle_findings(gpu, reasons))
    return collapse("gpu.throttle", items, judged, "no throttle reason active on %d GPU(s)" % judged,
                    "no GPU reports clock event reasons",
                    measured=[], expected=[], threshold_source=NVIDIA_SMI + " Clocks Event Reasons")


@query_check("gpu.temperature")
def temperature(node: NodeContext) -> list[CheckResult]:
    """Temperature below the profile's maximum, else below the GPU's own slowdown temperature."""
    limit, source = profile_value(node.profile, "host.temperature_max")
    items, judged = [], 0
    for gpu in node_gpus(node):
        temp = gpu.get("temperature_c")
        own = gpu.get("temperature_slowdown_c")
        gpu_limit, gpu_source = ((limit, source) if limit is not None
                                 else (own, "%s: GPU Slowdown Temp of %s" % (NVIDIA_SMI, label(gpu))))
        absurd = implausible("gpu_temperature_c", temp, label(gpu))
        if absurd:
            judged += 1
            ceiling = CEILINGS["gpu_temperature_c"]
            items.append(result("gpu.temperature", FAIL, absurd, measured=temp, expected=ceiling.limit,
                                threshold_source=ceiling.source, subject=label(gpu)))
            continue
        if temp is None or gpu_limit is None:
            continue
        judged += 1
        if temp >= gpu_limit:
            items.append(result("gpu.temperature", WARN, "%s at %s C, limit %s C" % (label(gpu), temp, gpu_limit),
                                measured=temp, expected=gpu_limit, threshold_source=gpu_source, subject=label(gpu)))
    hottest = max([reading for gpu in node_gpus(node) if (reading := gpu.get("temperature_c")) is not None],
                  default=None)
    return collapse("gpu.temperature", items, judged, "%d GPU(s) below their limit (hottest %s C)" % (judged, hottest),
                    "no temperature limit: the profile sets no host.temperature_max and nvidia-smi printed no "
                    "slowdown temperature",
                    measured=hottest, expected=limit, threshold_source=source)
