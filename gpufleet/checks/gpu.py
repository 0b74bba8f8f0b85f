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
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter

from typing import Any, Dict, List

from gpufleet.checks.registry import node_check
from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, result
from gpufleet.checks.plausible import CEILINGS, implausible
from gpufleet.checks.profiles import expectation, profile_value

DEFAULT_CONSISTENT_FIELDS = ("name", "vbios_version", "board_part_number", "memory_total_mib", "power_limit_w", "clocks_max_sm_mhz")
HW_THROTTLE = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
SW_THROTTLE = ("sw_power_cap", "sw_thermal_slowdown")
REASON_WORDS = {
    "hw_slowdown": "HW Slowdown",
    "hw_thermal_slowdown": "HW Thermal Slowdown",
    "hw_power_brake_slowdown": "HW Power Brake Slowdown",
    "sw_power_cap": "SW Power Cap",
    "sw_thermal_slowdown": "SW Thermal Slowdown",
}
CONSUMER_BRANDS = ("geforce", "titan")
WORKSTATION_BRANDS = ("quadro", "nvidia rtx", "rtx")
NVIDIA_SMI = "nvidia-smi -q"
# Azure azurehpc-health-checks conf/nd96*_v4/v5.conf: `check_gpu_ecc 20000000 10000` (customTests/azure_gpu_ecc.nhc):
# SRAM uncorrectable above 0 fails, SRAM correctable above 10000 fails, DRAM counts above 20000000 fail.
AZNHC_ECC_SOURCE = "Azure azurehpc-health-checks check_gpu_ecc 20000000 10000 (docs/baselines.md 8)"
SRAM_CORRECTABLE_LIMIT = 10000
DRAM_COUNT_LIMIT = 20000000
RECOVERY_SOURCE = ("NVML GPU Recovery Action (nvidia-smi -q, R570+): None means no action is needed "
                   "(docs/baselines.md 8)")
PCIE_REPLAY_SOURCE = ("nvidia-smi -q PCI \"Replays Since Reset\": a link that retrains or corrupts packets replays "
                      "them (docs/baselines.md 8)")
# NVIDIA/DCGM modules/health/DcgmHealthWatch.cpp MonitorPcie (DCGM 2.x to 3.3.3): the replay counter's growth over
# the watched window (default: the last minute) above DCGM_LIMIT_MAX_PCIREPLAY_RATE (common/DcgmGPUHardwareLimits.h,
# "8 replays per minute is the maximum recommended by RM") is a health-watch WARN. DCGM 3.3.8 and later derive the
# limit from the link instead (a 1e-12 bit error rate at the lane's rate: 1.92 per minute per Gen5 lane, 31 for Gen5
# x16); 8 per minute is the stricter of the two for links of Gen4 x16 and wider.
DCGM_PCIE_REPLAYS_PER_MIN = 8
PCIE_REPLAY_RATE_SOURCE = ("NVIDIA/DCGM modules/health/DcgmHealthWatch.cpp MonitorPcie: more than "
                           "DCGM_LIMIT_MAX_PCIREPLAY_RATE = 8 PCIe replays per minute warns (docs/baselines.md 8)")
QUERIES = "gpu.queries"


def _gpus(node):
    return node.group("gpu").get("gpus") or []


def queries_unread(node) -> str | None:
    """Why nothing ``nvidia-smi -q`` prints is known (the facts hold only ``nvlink -s``), else None."""
    facts = node.group("gpu") or {}
    sources = facts.get("sources") or {}
    if not sources or sources.get("xml") or sources.get("text"):
        return None
    failures = "; ".join(facts.get("query_failures") or []) or "neither was collected"
    return ("neither `nvidia-smi -q -x` nor `nvidia-smi -q` could be read (%s): only the NVLink state of "
            "`nvidia-smi nvlink -s` is known" % failures)


def query_check(check_id):
    """Register a check of what ``nvidia-smi -q`` prints: without either query it says "not measured", never passes."""

    def register(func):
        @functools.wraps(func)
        def judged(node):
            unread = queries_unread(node)
            if unread:
                return [result(check_id, SKIP, "not measured: %s" % unread)]
            return func(node)

        return node_check(check_id, requires=("gpu",))(judged)

    return register


@node_check(QUERIES, requires=("gpu",))
def queries(node):
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


def _label(gpu):
    return "GPU%s" % gpu.get("index")


def _collapse(check_id, items, judged, pass_message, skip_message, **pass_fields):
    """The non-pass items; else one pass (when any GPU was judged) or one skip."""
    if items:
        return items
    if not judged:
        return [result(check_id, SKIP, "not judged: %s" % skip_message)]
    return [result(check_id, PASS, pass_message, **pass_fields)]


def _topology_gpu_count(node):
    """GPUs in the node's ``nvidia-smi topo -m`` matrix, None when no matrix was read."""
    gpus = (node.group("topology") or {}).get("gpus")
    return len(gpus) if isinstance(gpus, list) and gpus else None


@query_check("gpu.count")
def count(node):
    """GPUs NVML lists against the claim/profile; first, the node's own evidence must agree: as many GPUs in
    ``nvidia-smi topo -m`` as ``nvidia-smi -q`` lists (a matrix of another machine, or a forged one, is not judged)."""
    measured = node.group("gpu").get("gpu_count")
    in_matrix = _topology_gpu_count(node)
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
def visible(node):
    """NVIDIA GPUs on the PCI bus against the GPUs NVML lists."""
    facts = node.group("gpu")
    on_bus, nvml = facts.get("lspci_gpu_count"), facts.get("gpu_count")
    if on_bus is None:
        return [result("gpu.visible", SKIP, "not judged: no lspci listing (lspci missing or not collected)")]
    missing = facts.get("lspci_only_bus_ids") or []
    if on_bus > nvml or missing:
        where = " (%s)" % ", ".join(missing) if missing else ""
        return [result("gpu.visible", FAIL, "lspci lists %d NVIDIA GPU(s), nvidia-smi sees %d: %d fell off the bus or have no driver%s"
                       % (on_bus, nvml, max(on_bus - nvml, len(missing)), where), measured=nvml, expected=on_bus,
                       threshold_source="lspci: NVIDIA GPUs on the PCI bus", subject=", ".join(missing) or None)]
    return [result("gpu.visible", PASS, "all %d GPU(s) on the PCI bus are visible to nvidia-smi" % on_bus,
                   measured=nvml, expected=on_bus, threshold_source="lspci: NVIDIA GPUs on the PCI bus")]


def hidden_characters(name: str) -> list[str]:
    """The format and control characters of a name (Unicode categories Cf, Cc: U+200B ZERO WIDTH SPACE, U+202E
    RIGHT-TO-LEFT OVERRIDE, ESC), each as ``U+202E RIGHT-TO-LEFT OVERRIDE``, in order, once each. nvidia-smi prints
    none: a name with one is no model name, whatever it looks like once the character is stripped or rendered."""
    found = []
    for char in name:
        if unicodedata.category(char) in ("Cf", "Cc"):
            words = "U+%04X %s" % (ord(char), unicodedata.name(char, "control character"))
            if words not in found:
                found.append(words)
    return found


def _model_matches(claimed, name):
    def norm(text):
        return re.sub(r"\s+", " ", re.sub(r"^nvidia\s+", "", text.strip().lower()))

    return norm(claimed) == norm(name) or norm(claimed) in norm(name)


@query_check("gpu.model")
def model(node):
    """Every GPU's model against the claim (name) or the profile (regex)."""
    claimed = (node.claim or {}).get("gpu_model")
    pattern, source = profile_value(node.profile, "expect.gpu_name")
    if claimed:
        source = "claim"
    elif pattern is None:
        return [result("gpu.model", SKIP, "not judged: no claim and profile %s sets no expect.gpu_name" % (node.profile or {}).get("name"))]
    items, judged = [], 0
    for gpu in _gpus(node):
        name = gpu.get("name")
        if not name:
            continue
        judged += 1
        hidden = hidden_characters(name)
        if hidden:
            items.append(result("gpu.model", FAIL, "%s name contains %s: not a name nvidia-smi prints, never compared "
                                "as a model" % (_label(gpu), ", ".join(hidden)), measured=name,
                                expected=claimed or pattern, threshold_source=source, subject=_label(gpu)))
            continue
        good = _model_matches(claimed, name) if claimed else re.search(pattern, name)
        if not good:
            want = claimed or "a GPU matching %r" % pattern
            items.append(result("gpu.model", FAIL, "%s is %s, expected %s" % (_label(gpu), name, want),
                                measured=name, expected=claimed or pattern, threshold_source=source, subject=_label(gpu)))
    names = sorted({gpu.get("name") for gpu in _gpus(node) if gpu.get("name")})
    return _collapse("gpu.model", items, judged, "%d GPU(s) %s as expected" % (judged, ", ".join(names)), "nvidia-smi printed no GPU name",
                     measured=names, expected=claimed or pattern, threshold_source=source)


@query_check("gpu.memory")
def memory(node):
    """Every GPU's memory against the claim (GB as sold) or the profile's minimum (MiB)."""
    claim_gb = (node.claim or {}).get("gpu_memory_gb")
    if claim_gb:
        # Sellers quote "80 GB" in decimal units: an H100 80GB reports 81559 MiB (< 80 GiB).
        minimum, source = int(claim_gb * 10 ** 9 / 2 ** 20), "claim"
        want = "%s GB claimed (%d MiB)" % (claim_gb, minimum)
    else:
        minimum, source = profile_value(node.profile, "expect.gpu_memory_min")
        if minimum is None:
            return [result("gpu.memory", SKIP, "not judged: no claim and profile %s sets no expect.gpu_memory_min" % (node.profile or {}).get("name"))]
        want = "at least %d MiB" % minimum
    items, judged = [], 0
    for gpu in _gpus(node):
        size = gpu.get("memory_total_mib")
        if size is None:
            continue
        judged += 1
        absurd = implausible("gpu_memory_mib", size, _label(gpu))
        if absurd:
            items.append(result("gpu.memory", FAIL, absurd, measured=size, expected=CEILINGS["gpu_memory_mib"].limit,
                                threshold_source=CEILINGS["gpu_memory_mib"].source, subject=_label(gpu)))
        elif size < minimum:
            items.append(result("gpu.memory", FAIL, "%s has %d MiB, expected %s" % (_label(gpu), size, want),
                                measured=size, expected=minimum, threshold_source=source, subject=_label(gpu)))
    sizes = sorted({gpu.get("memory_total_mib") for gpu in _gpus(node) if gpu.get("memory_total_mib") is not None})
    return _collapse("gpu.memory", items, judged, "%d GPU(s) with %s MiB, expected %s" % (judged, "/".join(map(str, sizes)), want),
                     "nvidia-smi printed no memory size", measured=min(sizes) if sizes else None, expected=minimum, threshold_source=source)


@query_check("gpu.consistency")
def consistency(node):
    """The node's GPUs agree on model, VBIOS, board part, memory, power limit and max clocks."""
    fields, source = profile_value(node.profile, "fleet.consistent_gpu_fields")
    if fields is None:
        fields, source = DEFAULT_CONSISTENT_FIELDS, "gpufleet default consistency fields"
    gpus = _gpus(node)
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
                                    % (_label(gpu), field, value, common), measured=value, expected=common,
                                    threshold_source=source, subject=_label(gpu)))
    return _collapse("gpu.consistency", items, compared, "%d GPU(s) agree on %s" % (len(gpus), ", ".join(compared)),
                     "fewer than two GPUs print %s" % ", ".join(fields), threshold_source=source)


def _brand(gpu):
    text = "%s %s" % (gpu.get("product_brand") or "", gpu.get("name") or "")
    text = text.lower()
    if any(word in text for word in CONSUMER_BRANDS):
        return "consumer"
    if any(word in text for word in WORKSTATION_BRANDS):
        return "workstation"
    return "datacenter"


@query_check("gpu.ecc")
def ecc(node):
    """ECC mode on; a pending change reported."""
    items, judged = [], 0
    for gpu in _gpus(node):
        current, pending = gpu.get("ecc_mode_current"), gpu.get("ecc_mode_pending")
        kind = _brand(gpu)
        if current is None or kind == "consumer":
            continue
        judged += 1
        if current is False:
            status = FAIL if kind == "datacenter" else WARN
            items.append(result("gpu.ecc", status, "%s (%s) has ECC disabled, expected enabled on a %s GPU" % (_label(gpu), gpu.get("name"), kind),
                                measured=False, expected=True, threshold_source=NVIDIA_SMI, subject=_label(gpu)))
        elif pending is False:
            items.append(result("gpu.ecc", WARN, "%s: ECC is on but set to turn off at the next reboot" % _label(gpu),
                                measured={"current": current, "pending": pending}, expected=True, threshold_source=NVIDIA_SMI,
                                subject=_label(gpu)))
    return _collapse("gpu.ecc", items, judged, "ECC enabled on %d GPU(s)" % judged,
                     "no GPU reports an ECC mode (consumer GPUs have none)", measured=True, expected=True, threshold_source=NVIDIA_SMI)


def _aznhc_ecc_findings(gpu: Dict[str, Any]) -> List[str]:
    """What AzNHC's check_gpu_ecc rejects in one GPU's per-memory counts (empty when nothing, or not printed)."""
    found = []
    for scope in ("volatile", "aggregate"):
        sram_u = gpu.get("ecc_errors_%s_sram_uncorrectable" % scope)
        sram_c = gpu.get("ecc_errors_%s_sram_correctable" % scope)
        if sram_u:
            found.append("%d %s SRAM uncorrectable" % (sram_u, scope))
        if sram_c is not None and sram_c > SRAM_CORRECTABLE_LIMIT:
            found.append("%d %s SRAM correctable (limit %d)" % (sram_c, scope, SRAM_CORRECTABLE_LIMIT))
        for kind in ("correctable", "uncorrectable"):
            dram = gpu.get("ecc_errors_%s_dram_%s" % (scope, kind))
            if dram is not None and dram > DRAM_COUNT_LIMIT:
                found.append("%d %s DRAM %s (limit %d)" % (dram, scope, kind, DRAM_COUNT_LIMIT))
    return found


@query_check("gpu.ecc_errors")
def ecc_errors(node):
    """Uncorrectable ECC errors since boot (fail) and over the GPU's life (warn); AzNHC's SRAM/DRAM limits (fail)."""
    items, judged = [], 0
    for gpu in _gpus(node):
        volatile, aggregate = gpu.get("ecc_errors_volatile_uncorrectable"), gpu.get("ecc_errors_aggregate_uncorrectable")
        if volatile is None and aggregate is None:
            continue
        judged += 1
        aznhc = _aznhc_ecc_findings(gpu)
        if aznhc:
            counts = dict((key[len("ecc_errors_"):], gpu.get(key)) for key in sorted(gpu)
                          if key.startswith("ecc_errors_") and ("_sram_" in key or "_dram_" in key))
            items.append(result("gpu.ecc_errors", FAIL, "%s: %s" % (_label(gpu), ", ".join(aznhc)), measured=counts,
                                expected={"sram_uncorrectable": 0, "sram_correctable_max": SRAM_CORRECTABLE_LIMIT,
                                          "dram_max": DRAM_COUNT_LIMIT},
                                threshold_source=AZNHC_ECC_SOURCE, subject=_label(gpu)))
        elif volatile:
            items.append(result("gpu.ecc_errors", FAIL, "%s: %d uncorrectable ECC errors since boot, expected 0" % (_label(gpu), volatile),
                                measured=volatile, expected=0, threshold_source=NVIDIA_SMI, subject=_label(gpu)))
        elif aggregate:
            items.append(result("gpu.ecc_errors", WARN, "%s: %d uncorrectable ECC errors over its life (none since boot)" % (_label(gpu), aggregate),
                                measured=aggregate, expected=0, threshold_source=NVIDIA_SMI, subject=_label(gpu)))
    return _collapse("gpu.ecc_errors", items, judged, "no uncorrectable ECC error on %d GPU(s)" % judged,
                     "no GPU reports ECC error counts", measured=0, expected=0, threshold_source=NVIDIA_SMI)


@query_check("gpu.recovery_action")
def recovery_action(node):
    """NVML's GPU Recovery Action: anything but None fails with the action named (drivers before R570 print none)."""
    items, judged = [], 0
    for gpu in _gpus(node):
        action = gpu.get("gpu_recovery_action")
        if action is None:
            continue
        judged += 1
        if action.strip().lower() != "none":
            items.append(result("gpu.recovery_action", FAIL,
                                "%s: the driver asks for a recovery action: %s" % (_label(gpu), action),
                                measured=action, expected="None", threshold_source=RECOVERY_SOURCE,
                                subject=_label(gpu)))
    return _collapse("gpu.recovery_action", items, judged, "GPU Recovery Action None on %d GPU(s)" % judged,
                     "no GPU prints a GPU Recovery Action (driver before R570)", measured="None", expected="None",
                     threshold_source=RECOVERY_SOURCE)


def replays_per_minute(growth: int, window_s: float | None) -> float | None:
    """Replays per minute over ``window_s`` seconds; None without a time base."""
    if window_s is None or window_s <= 0:
        return None
    return growth * 60.0 / window_s


def _rate_words(growth: int, window_s: float | None) -> str:
    rate = replays_per_minute(growth, window_s)
    if rate is None:
        return ""
    side = "above" if rate > DCGM_PCIE_REPLAYS_PER_MIN else "within"
    return ": %g per minute over %g min, %s DCGM's health-watch limit of %d per minute" % (
        round(rate, 2), round(window_s / 60.0, 1), side, DCGM_PCIE_REPLAYS_PER_MIN)


def pcie_replay_growth(before_gpus: List[Dict[str, Any]], after_gpus: List[Dict[str, Any]],
                       check_id: str = "gpu.pcie_replay_growth", window_s: float | None = None,
                       during: str = "") -> List[Dict[str, Any]]:
    """PCIe replay counters read twice (``gpufleet_gpu.gpus`` before and after stress): any growth fails.

    GPUs are matched by PCI bus id (else index). A GPU missing a reading on either side is left out; a later
    reading below the earlier one (a reset, a driver reload) counts the new value as the growth since the reset.
    With ``window_s`` (seconds between the readings) the message gives the growth per minute against DCGM's
    health-watch limit (``per_minute`` on the result); the status stays fail: any growth under our load fails.
    ``during`` (``"the benchmarks"``) names the phase in the message.
    """
    def key(gpu):
        return (gpu.get("pci_bus_id") or "").lower() or gpu.get("index")

    before = {key(gpu): gpu for gpu in before_gpus or []}
    items, judged = [], 0
    for gpu in after_gpus or []:
        earlier = before.get(key(gpu))
        first = earlier.get("replays_since_reset") if earlier else None
        second = gpu.get("replays_since_reset")
        if first is None or second is None:
            continue
        judged += 1
        growth = second - first if second >= first else second
        if growth > 0:
            item = result(check_id, FAIL, "%s: PCIe replays grew by %d (%d -> %d%s)%s%s" % (
                _label(gpu), growth, first, second, ", counter reset between the readings" if second < first else "",
                " during %s" % during if during else "", _rate_words(growth, window_s)),
                measured=growth, expected=0, threshold_source=PCIE_REPLAY_SOURCE, subject=_label(gpu))
            rate = replays_per_minute(growth, window_s)
            item.update(counter="replays_since_reset", before=first, after=second,
                        per_minute=round(rate, 3) if rate is not None else None)
            items.append(item)
    return _collapse(check_id, items, judged, "no PCIe replay counter grew on %d GPU(s)" % judged,
                     "no GPU has a PCIe replay count in both readings", measured=0, expected=0,
                     threshold_source=PCIE_REPLAY_SOURCE)


@query_check("gpu.pcie_replay")
def pcie_replay(node):
    """PCIe replays since the last reset, read once. The counter starts at a driver load or GPU reset after boot, so
    with the host's uptime (``gpufleet_host.uptime_s``) count / uptime is a lower bound of its mean rate: a GPU whose
    lower bound is above DCGM's 8 per minute warns, the others are noted with it. Without uptime the counts are
    noted, not judged; growth between two readings is judged after stress."""
    counts = {_label(gpu): gpu["replays_since_reset"] for gpu in _gpus(node)
              if gpu.get("replays_since_reset") is not None}
    if not counts:
        return [result("gpu.pcie_replay", SKIP, "not judged: no GPU prints Replays Since Reset")]
    replayed = {label: count for label, count in counts.items() if count}
    if not replayed:
        return [result("gpu.pcie_replay", PASS, "no PCIe replay on %d GPU(s)" % len(counts), measured=0, expected=0,
                       threshold_source=PCIE_REPLAY_SOURCE)]
    others = len(counts) - len(replayed)
    zeros = "; 0 on the other %d GPU(s)" % others if others else ""
    # no host group (not gathered, failed) is no reason to skip: the counts are still noted
    uptime_s = (node.group("host") or {}).get("uptime_s")
    if uptime_s is None or uptime_s <= 0:
        return [result("gpu.pcie_replay", PASS,
                       "noted, not judged: PCIe replays since the last driver load or GPU reset: %s%s. One reading has "
                       "no time base (when the counter started is unknown; the host facts carry no uptime), so it "
                       "gives no rate to hold against DCGM's %d per minute; growth between two readings is judged "
                       "after stress" % (", ".join("%s %d" % item for item in replayed.items()), zeros,
                                         DCGM_PCIE_REPLAYS_PER_MIN),
                       measured=counts, expected=None, threshold_source=PCIE_REPLAY_RATE_SOURCE)]
    return _replay_rates_since_boot(counts, replayed, uptime_s, zeros)


def _replay_rates_since_boot(counts: Dict[str, int], replayed: Dict[str, int], uptime_s: float,
                             zeros: str) -> List[Dict[str, Any]]:
    """gpu.pcie_replay with the host's uptime: a warning per GPU whose lower-bound rate is above DCGM's limit, else
    one note naming each lower bound (rates rounded to 2 decimals only where shown)."""
    rates = {label: replays_per_minute(count, uptime_s) for label, count in replayed.items()}
    shown = {label: round(rate, 2) for label, rate in rates.items()}
    uptime_min = round(uptime_s / 60.0, 1)
    warned = []
    for label, rate in rates.items():
        if rate > DCGM_PCIE_REPLAYS_PER_MIN:
            item = result("gpu.pcie_replay", WARN, "%s: at least %g replays per minute on average since boot: above "
                          "DCGM's %d per minute (%d PCIe replays since the last driver load or GPU reset, the host up "
                          "%g min)" % (label, shown[label], DCGM_PCIE_REPLAYS_PER_MIN, replayed[label], uptime_min),
                          measured=shown[label], expected=DCGM_PCIE_REPLAYS_PER_MIN,
                          threshold_source=PCIE_REPLAY_RATE_SOURCE, subject=label)
            item.update(counter="replays_since_reset", replays=replayed[label], uptime_s=uptime_s)
            warned.append(item)
    if warned:
        return warned
    named = ", ".join("%s %d (%g per minute at least)" % (label, replayed[label], rate)
                      for label, rate in shown.items())
    item = result("gpu.pcie_replay", PASS,
                  "noted: PCIe replays since the last driver load or GPU reset, at most %g min ago (the host's "
                  "uptime): %s%s. Even the lower bound is within DCGM's %d per minute; the rate now is unknown, growth "
                  "between two readings is judged after stress" % (uptime_min, named, zeros, DCGM_PCIE_REPLAYS_PER_MIN),
                  measured=counts, expected=None, threshold_source=PCIE_REPLAY_RATE_SOURCE)
    item.update(per_minute_at_least=shown, uptime_s=uptime_s)
    return [item]


@query_check("gpu.retired_pages")
def retired_pages(node):
    """Page retirement pending (fail) or pages retired (warn)."""
    items, judged = [], 0
    for gpu in _gpus(node):
        pages = gpu.get("retired_pages")
        if not pages:
            continue
        judged += 1
        sbe, dbe = pages.get("single_bit_ecc") or 0, pages.get("double_bit_ecc") or 0
        counts = {"single_bit_ecc": sbe, "double_bit_ecc": dbe, "pending": pages.get("pending")}
        if pages.get("pending") is True:
            items.append(result("gpu.retired_pages", FAIL, "%s: page retirement pending (%d double-bit, %d single-bit pages retired): "
                                "needs a GPU reset, RMA candidate" % (_label(gpu), dbe, sbe), measured=counts, expected={"pending": False},
                                threshold_source=NVIDIA_SMI, subject=_label(gpu)))
        elif sbe or dbe:
            items.append(result("gpu.retired_pages", WARN, "%s: %d double-bit and %d single-bit ECC pages retired" % (_label(gpu), dbe, sbe),
                                measured=counts, expected={"single_bit_ecc": 0, "double_bit_ecc": 0}, threshold_source=NVIDIA_SMI,
                                subject=_label(gpu)))
    return _collapse("gpu.retired_pages", items, judged, "no retired page on %d GPU(s)" % judged,
                     "no GPU reports page retirement (A100 and later remap rows instead)", measured=0, expected=0, threshold_source=NVIDIA_SMI)


@query_check("gpu.row_remap")
def row_remap(node):
    """Row remapping pending or failed (fail); rows remapped for uncorrectable errors (warn)."""
    items, judged = [], 0
    for gpu in _gpus(node):
        rows = gpu.get("remapped_rows")
        if not rows:
            continue
        judged += 1
        if rows.get("failure") is True or rows.get("pending") is True:
            what = "row remapping FAILED (RMA)" if rows.get("failure") else "row remapping pending (needs a GPU reset)"
            items.append(result("gpu.row_remap", FAIL, "%s: %s, %s uncorrectable rows remapped" % (_label(gpu), what, rows.get("uncorrectable")),
                                measured=rows, expected={"pending": False, "failure": False}, threshold_source=NVIDIA_SMI, subject=_label(gpu)))
        elif rows.get("uncorrectable"):
            items.append(result("gpu.row_remap", WARN, "%s: %d rows remapped for uncorrectable errors" % (_label(gpu), rows["uncorrectable"]),
                                measured=rows, expected={"uncorrectable": 0}, threshold_source=NVIDIA_SMI, subject=_label(gpu)))
    return _collapse("gpu.row_remap", items, judged, "no pending or failed row remapping on %d GPU(s)" % judged,
                     "no GPU reports row remapping (before A100, or N/A under MIG)", threshold_source=NVIDIA_SMI)


@query_check("gpu.mig")
def mig(node):
    """MIG mode off: the node is sold as whole GPUs."""
    items, judged = [], 0
    for gpu in _gpus(node):
        mode = gpu.get("mig_mode_current")
        if mode is None:
            continue
        judged += 1
        if mode.lower() == "enabled":
            devices = " (%d MIG devices)" % len(gpu["mig_devices"]) if gpu.get("mig_devices") else ""
            items.append(result("gpu.mig", FAIL, "%s has MIG enabled%s, expected whole GPUs" % (_label(gpu), devices),
                                measured="Enabled", expected="Disabled",
                                threshold_source=NVIDIA_SMI, subject=_label(gpu)))
    return _collapse("gpu.mig", items, judged, "MIG disabled on %d GPU(s)" % judged, "no GPU reports a MIG mode (not MIG-capable)",
                     measured="Disabled", expected="Disabled", threshold_source=NVIDIA_SMI)


@query_check("gpu.persistence")
def persistence(node):
    """Persistence mode on (off: every job pays driver initialisation, state is lost between jobs)."""
    items, judged = [], 0
    for gpu in _gpus(node):
        mode = gpu.get("persistence_mode")
        if mode is None:
            continue
        judged += 1
        if mode is False:
            items.append(result("gpu.persistence", WARN, "%s has persistence mode off" % _label(gpu), measured=False, expected=True,
                                threshold_source=NVIDIA_SMI, subject=_label(gpu)))
    return _collapse("gpu.persistence", items, judged, "persistence mode on for %d GPU(s)" % judged, "no GPU reports persistence mode",
                     measured=True, expected=True, threshold_source=NVIDIA_SMI)


@query_check("gpu.processes")
def processes(node):
    """No compute process on a GPU that was just handed over."""
    items, judged = [], 0
    for gpu in _gpus(node):
        procs = gpu.get("processes")
        if procs is None:
            continue
        judged += 1
        if procs:
            used = sum(proc.get("used_memory_mib") or 0 for proc in procs)
            shown = ", ".join("pid %s %s" % (proc.get("pid"), proc.get("name")) for proc in procs[:3])
            items.append(result("gpu.processes", FAIL, "%s runs %d process(es) using %d MiB (%s%s): the GPU is not free"
                                % (_label(gpu), len(procs), used, shown, ", ..." if len(procs) > 3 else ""),
                                measured=len(procs), expected=0, threshold_source="a freshly rented GPU runs nothing", subject=_label(gpu)))
    return _collapse("gpu.processes", items, judged, "no process on %d GPU(s)" % judged, "nvidia-smi printed no process list",
                     measured=0, expected=0, threshold_source="a freshly rented GPU runs nothing")


def _nvswitch_expected(node):
    interconnect, source = expectation(node, "interconnect", "expect.interconnect")
    fabric_manager, fm_source = profile_value(node.profile, "expect.fabric_manager")
    if interconnect is not None and (node.claim or {}).get("interconnect"):
        return interconnect == "nvswitch", source
    if fabric_manager is not None:
        return fabric_manager, fm_source
    return interconnect == "nvswitch" if interconnect else None, source


def _fabric_expected(node):
    """``(fabric registration required: True/False/None, source, who registers the GPUs)``.

    NVLink across nodes (profile ``expect.fabric_clique_scope: nvlink_domain``, GB200 NVL72) needs every GPU
    registered with the rack's NVLink fabric (state Completed) for IMEX and multi-node NVLink, though the compute
    tray runs no Fabric Manager (``expect.fabric_manager: false``: the switch trays' NMX controller manages the
    fabric); on single-node NVSwitch systems the node's Fabric Manager registers them.
    """
    scope, scope_source = profile_value(node.profile, "expect.fabric_clique_scope")
    if scope == "nvlink_domain":
        return True, scope_source, "the rack's NVLink fabric, for IMEX / multi-node NVLink"
    nvswitch, source = _nvswitch_expected(node)
    return nvswitch, source, "Fabric Manager"


@query_check("gpu.fabric")
def fabric(node):
    """Fabric registration Completed/Success on NVSwitch systems and on every GPU of a multi-node NVLink domain."""
    required, source, registrar = _fabric_expected(node)
    gpus = _gpus(node)
    states = [(gpu, gpu.get("fabric") or {}) for gpu in gpus if (gpu.get("fabric") or {}).get("state") is not None]
    if not states:
        if required and registrar != "Fabric Manager":
            return [result("gpu.fabric", SKIP, "not judged: NVLink spans nodes but nvidia-smi prints no Fabric state "
                           "(driver too old, or -q not collected)", threshold_source=source)]
        if required:
            return [result("gpu.fabric", SKIP, "not judged: NVSwitch system but nvidia-smi prints no Fabric state (A100 and older "
                           "drivers do not); check nvidia-fabricmanager by hand", threshold_source=source)]
        return [result("gpu.fabric", SKIP, "not judged: not an NVSwitch system and no Fabric state printed")]
    items = []
    for gpu, info in states:
        state, status = info.get("state"), info.get("status")
        if state.lower() != "completed" or (status or "Success").lower() != "success":
            items.append(result("gpu.fabric", FAIL if required is not False else WARN,
                                "%s fabric %s / %s, expected Completed / Success (%s)"
                                % (_label(gpu), state, status, registrar),
                                measured={"state": state, "status": status}, expected={"state": "Completed", "status": "Success"},
                                threshold_source=source or NVIDIA_SMI, subject=_label(gpu)))
    return _collapse("gpu.fabric", items, states, "fabric Completed / Success on %d GPU(s)" % len(states), "",
                     measured={"state": "Completed", "status": "Success"}, expected={"state": "Completed", "status": "Success"},
                     threshold_source=source or NVIDIA_SMI)


@query_check("gpu.throttle")
def throttle(node):
    """Clock event reasons: hardware slowdowns fail, software caps warn."""
    items, judged = [], 0
    for gpu in _gpus(node):
        reasons = gpu.get("clock_event_reasons")
        if not reasons or all(value is None for value in reasons.values()):
            continue
        judged += 1
        hard = [name for name in HW_THROTTLE if reasons.get(name) is True]
        soft = [name for name in SW_THROTTLE if reasons.get(name) is True]
        if hard or soft:
            words = ", ".join(REASON_WORDS[name] for name in hard + soft)
            items.append(result("gpu.throttle", FAIL if hard else WARN, "%s clocks held down: %s Active (clocks %s/%s MHz SM)"
                                % (_label(gpu), words, gpu.get("clocks_sm_mhz"), gpu.get("clocks_max_sm_mhz")),
                                measured=hard + soft, expected=[], threshold_source=NVIDIA_SMI + " Clocks Event Reasons", subject=_label(gpu)))
    return _collapse("gpu.throttle", items, judged, "no throttle reason active on %d GPU(s)" % judged, "no GPU reports clock event reasons",
                     measured=[], expected=[], threshold_source=NVIDIA_SMI + " Clocks Event Reasons")


@query_check("gpu.temperature")
def temperature(node):
    """Temperature below the profile's maximum, else below the GPU's own slowdown temperature."""
    limit, source = profile_value(node.profile, "host.temperature_max")
    items, judged = [], 0
    for gpu in _gpus(node):
        temp = gpu.get("temperature_c")
        own = gpu.get("temperature_slowdown_c")
        gpu_limit, gpu_source = (limit, source) if limit is not None else (own, "%s: GPU Slowdown Temp of %s" % (NVIDIA_SMI, _label(gpu)))
        absurd = implausible("gpu_temperature_c", temp, _label(gpu))
        if absurd:
            judged += 1
            ceiling = CEILINGS["gpu_temperature_c"]
            items.append(result("gpu.temperature", FAIL, absurd, measured=temp, expected=ceiling.limit,
                                threshold_source=ceiling.source, subject=_label(gpu)))
            continue
        if temp is None or gpu_limit is None:
            continue
        judged += 1
        if temp >= gpu_limit:
            items.append(result("gpu.temperature", WARN, "%s at %s C, limit %s C" % (_label(gpu), temp, gpu_limit),
                                measured=temp, expected=gpu_limit, threshold_source=gpu_source, subject=_label(gpu)))
    hottest = max([gpu["temperature_c"] for gpu in _gpus(node) if gpu.get("temperature_c") is not None], default=None)
    return _collapse("gpu.temperature", items, judged, "%d GPU(s) below their limit (hottest %s C)" % (judged, hottest),
                     "no temperature limit: the profile sets no host.temperature_max and nvidia-smi printed no slowdown temperature",
                     measured=hottest, expected=limit, threshold_source=source)
