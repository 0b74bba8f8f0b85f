# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules behind the GPU checks of gpufleet/checks/gpu.py (pure): what the checks share, and the PCIe replay rates.

Shared: what the checks hold the GPUs against (fields that must agree, throttle reasons, the sources cited), the
guard of a check of what ``nvidia-smi -q`` prints (:func:`query_check`: "not measured" without either query), one
pass or skip for a check that found nothing at fault (:func:`collapse`), the name, brand and per-memory ECC tests, and
who must register the GPUs with the NVLink fabric. The PCIe replay rates: one reading noted without the host's uptime
(:func:`replay_counts_noted`) or held against it (:func:`replay_rates_since_boot`), and two readings compared
(:func:`pcie_replay_growth`, also judged after stress by checks/after_stress.py). gpu.py's module docstring says why
each is judged as it is.

The checks themselves stay in gpu.py: the engine runs a family's checks by the module that defines them (a
:func:`query_check` check keeps its own module). gpu.py re-exports what other modules import from it.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any, Callable, Mapping, Sequence

from gpufleet.checks.model import FAIL, PASS, SKIP, WARN, CheckResult, NodeContext, result
from gpufleet.checks.profiles import expectation, profile_value
from gpufleet.checks.registry import node_check
from gpufleet.facts.shapes import Gpu

# A check of one node: ``func(node) -> [result, ...]``
NodeCheckFunc = Callable[[NodeContext], list[CheckResult]]

# What the checks hold the GPUs against
DEFAULT_CONSISTENT_FIELDS = ("name", "vbios_version", "board_part_number", "memory_total_mib", "power_limit_w",
                             "clocks_max_sm_mhz")
HW_THROTTLE = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
SW_THROTTLE = ("sw_power_cap", "sw_thermal_slowdown")
REASON_WORDS = {
    "hw_slowdown": "HW Slowdown",
    "hw_thermal_slowdown": "HW Thermal Slowdown",
    "hw_power_brake_slowdown": "HW Power Brake Slowdown",
    "sw_power_cap": "SW Power Cap",
    "sw_thermal_slowdown": "SW Thermal Slowdown",
}
RECOVERY_SOURCE = ("NVML GPU Recovery Action (nvidia-smi -q, R570+): None means no action is needed "
                   "(docs/baselines.md 8)")
CONSUMER_BRANDS = ("geforce", "titan")
WORKSTATION_BRANDS = ("quadro", "nvidia rtx", "rtx")
NVIDIA_SMI = "nvidia-smi -q"
# Azure azurehpc-health-checks conf/nd96*_v4/v5.conf: `check_gpu_ecc 20000000 10000` (customTests/azure_gpu_ecc.nhc):
# SRAM uncorrectable above 0 fails, SRAM correctable above 10000 fails, DRAM counts above 20000000 fail.
AZNHC_ECC_SOURCE = "Azure azurehpc-health-checks check_gpu_ecc 20000000 10000 (docs/baselines.md 8)"
SRAM_CORRECTABLE_LIMIT = 10000
DRAM_COUNT_LIMIT = 20000000
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


class ReplayGrowth(CheckResult):
    """A :func:`pcie_replay_growth` finding: the result plus the counter, its two readings and the growth per minute
    (None without the time between the readings)."""

    counter: str
    before: int
    after: int
    per_minute: float | None


class ReplayRateWarning(CheckResult):
    """A gpu.pcie_replay warning: the result plus the counter, the GPU's replays and the host's uptime."""

    counter: str
    replays: int
    uptime_s: float


class ReplayRateNote(CheckResult):
    """The gpu.pcie_replay note with the host's uptime: the result plus each GPU's lower-bound rate."""

    per_minute_at_least: dict[str, float]
    uptime_s: float


# --- what the checks share -------------------------------------------------------------------------------------


def node_gpus(node: NodeContext) -> list[Gpu]:
    """``gpufleet_gpu.gpus`` of a node whose GPU facts were gathered."""
    found: list[Gpu] = node.group("gpu").get("gpus") or []
    return found


def queries_unread(node: NodeContext) -> str | None:
    """Why nothing ``nvidia-smi -q`` prints is known (the facts hold only ``nvlink -s``), else None."""
    facts = node.group("gpu") or {}
    sources = facts.get("sources") or {}
    if not sources or sources.get("xml") or sources.get("text"):
        return None
    failures = "; ".join(facts.get("query_failures") or []) or "neither was collected"
    return ("neither `nvidia-smi -q -x` nor `nvidia-smi -q` could be read (%s): only the NVLink state of "
            "`nvidia-smi nvlink -s` is known" % failures)


def query_check(check_id: str) -> Callable[[NodeCheckFunc], NodeCheckFunc]:
    """Register a check of what ``nvidia-smi -q`` prints: without either query it says "not measured", never passes.

    The registered function takes the check's name and module (functools.wraps), so the engine counts it in the
    family of the module that defines the check.
    """

    def register(func: NodeCheckFunc) -> NodeCheckFunc:
        @functools.wraps(func)
        def judged(node: NodeContext) -> list[CheckResult]:
            unread = queries_unread(node)
            if unread:
                return [result(check_id, SKIP, "not measured: %s" % unread)]
            return func(node)

        return node_check(check_id, requires=("gpu",))(judged)

    return register


def label(gpu: Mapping[str, Any]) -> str:
    """``GPU3``: a GPU as a result's subject."""
    return "GPU%s" % gpu.get("index")


def collapse(check_id: str, items: list[CheckResult], judged: Any, pass_message: str, skip_message: str,
             **pass_fields: Any) -> list[CheckResult]:
    """The non-pass items; else one pass (when any GPU was judged) or one skip."""
    if items:
        return items
    if not judged:
        return [result(check_id, SKIP, "not judged: %s" % skip_message)]
    return [result(check_id, PASS, pass_message, **pass_fields)]


def topology_gpu_count(node: NodeContext) -> int | None:
    """GPUs in the node's ``nvidia-smi topo -m`` matrix, None when no matrix was read."""
    matrix_gpus = (node.group("topology") or {}).get("gpus")
    return len(matrix_gpus) if isinstance(matrix_gpus, list) and matrix_gpus else None


# --- names, brands, memory ------------------------------------------------------------------------------------


def hidden_characters(name: str) -> list[str]:
    """The format and control characters of a name (Unicode categories Cf, Cc: U+200B ZERO WIDTH SPACE, U+202E
    RIGHT-TO-LEFT OVERRIDE, ESC), each as ``U+202E RIGHT-TO-LEFT OVERRIDE``, in order, once each. nvidia-smi prints
    none: a name with one is no model name, whatever it looks like once the character is stripped or rendered."""
    found: list[str] = []
    for char in name:
        if unicodedata.category(char) in ("Cf", "Cc"):
            words = "U+%04X %s" % (ord(char), unicodedata.name(char, "control character"))
            if words not in found:
                found.append(words)
    return found


def model_matches(claimed: str, name: str) -> bool:
    """Whether a GPU's name is the claimed model: the same, or containing it, case and an ``NVIDIA`` prefix aside."""

    def norm(text: str) -> str:
        return re.sub(r"\s+", " ", re.sub(r"^nvidia\s+", "", text.strip().lower()))

    return norm(claimed) == norm(name) or norm(claimed) in norm(name)


def brand(gpu: Mapping[str, Any]) -> str:
    """``consumer``, ``workstation`` or ``datacenter`` from the GPU's product brand and name."""
    text = "%s %s" % (gpu.get("product_brand") or "", gpu.get("name") or "")
    text = text.lower()
    if any(word in text for word in CONSUMER_BRANDS):
        return "consumer"
    if any(word in text for word in WORKSTATION_BRANDS):
        return "workstation"
    return "datacenter"


def aznhc_ecc_findings(gpu: Mapping[str, Any]) -> list[str]:
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


# --- the NVLink fabric ------------------------------------------------------------------------------------------


def fabric_states(gpus: list[Gpu]) -> list[tuple[Gpu, str, str | None]]:
    """``(gpu, Fabric state, Fabric status)`` of each GPU that prints a Fabric state."""
    states = []
    for gpu in gpus:
        info = gpu.get("fabric")
        state = info.get("state") if info else None
        if info and state is not None:
            states.append((gpu, state, info.get("status")))
    return states


def _nvswitch_expected(node: NodeContext) -> tuple[Any, str | None]:
    interconnect, source = expectation(node, "interconnect", "expect.interconnect")
    fabric_manager, fm_source = profile_value(node.profile, "expect.fabric_manager")
    if interconnect is not None and (node.claim or {}).get("interconnect"):
        return interconnect == "nvswitch", source
    if fabric_manager is not None:
        return fabric_manager, fm_source
    return interconnect == "nvswitch" if interconnect else None, source


def fabric_expected(node: NodeContext) -> tuple[Any, str | None, str]:
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


# --- PCIe replays ----------------------------------------------------------------------------------------------


def replays_per_minute(growth: int, window_s: float | None) -> float | None:
    """Replays per minute over ``window_s`` seconds; None without a time base."""
    if window_s is None or window_s <= 0:
        return None
    return growth * 60.0 / window_s


def _rate_words(growth: int, window_s: float | None) -> str:
    rate = replays_per_minute(growth, window_s)
    if rate is None or window_s is None:
        return ""
    side = "above" if rate > DCGM_PCIE_REPLAYS_PER_MIN else "within"
    return ": %g per minute over %g min, %s DCGM's health-watch limit of %d per minute" % (
        round(rate, 2), round(window_s / 60.0, 1), side, DCGM_PCIE_REPLAYS_PER_MIN)


def pcie_replay_growth(before_gpus: Sequence[Mapping[str, Any]] | None, after_gpus: Sequence[Mapping[str, Any]] | None,
                       check_id: str = "gpu.pcie_replay_growth", window_s: float | None = None,
                       during: str = "") -> list[CheckResult]:
    """PCIe replay counters read twice (``gpufleet_gpu.gpus`` before and after stress): any growth fails.

    GPUs are matched by PCI bus id (else index). A GPU missing a reading on either side is left out; a later
    reading below the earlier one (a reset, a driver reload) counts the new value as the growth since the reset.
    With ``window_s`` (seconds between the readings) the message gives the growth per minute against DCGM's
    health-watch limit (``per_minute`` on the result); the status stays fail: any growth under our load fails.
    ``during`` (``"the benchmarks"``) names the phase in the message.
    """
    def key(gpu: Mapping[str, Any]) -> Any:
        return (gpu.get("pci_bus_id") or "").lower() or gpu.get("index")

    before = {key(gpu): gpu for gpu in before_gpus or []}
    items: list[CheckResult] = []
    judged = 0
    for gpu in after_gpus or []:
        earlier = before.get(key(gpu))
        first = earlier.get("replays_since_reset") if earlier else None
        second = gpu.get("replays_since_reset")
        if first is None or second is None:
            continue
        judged += 1
        growth = second - first if second >= first else second
        if growth > 0:
            found = result(check_id, FAIL, "%s: PCIe replays grew by %d (%d -> %d%s)%s%s" % (
                label(gpu), growth, first, second, ", counter reset between the readings" if second < first else "",
                " during %s" % during if during else "", _rate_words(growth, window_s)),
                measured=growth, expected=0, threshold_source=PCIE_REPLAY_SOURCE, subject=label(gpu))
            rate = replays_per_minute(growth, window_s)
            items.append(ReplayGrowth(**found, counter="replays_since_reset", before=first, after=second,
                                      per_minute=round(rate, 3) if rate is not None else None))
    return collapse(check_id, items, judged, "no PCIe replay counter grew on %d GPU(s)" % judged,
                    "no GPU has a PCIe replay count in both readings", measured=0, expected=0,
                    threshold_source=PCIE_REPLAY_SOURCE)


def replay_counts_noted(counts: dict[str, int], replayed: dict[str, int], zeros: str) -> list[CheckResult]:
    """gpu.pcie_replay without the host's uptime: the counts noted, not judged (one reading has no time base)."""
    return [result("gpu.pcie_replay", PASS,
                   "noted, not judged: PCIe replays since the last driver load or GPU reset: %s%s. One reading has "
                   "no time base (when the counter started is unknown; the host facts carry no uptime), so it "
                   "gives no rate to hold against DCGM's %d per minute; growth between two readings is judged "
                   "after stress" % (", ".join("%s %d" % item for item in replayed.items()), zeros,
                                     DCGM_PCIE_REPLAYS_PER_MIN),
                   measured=counts, expected=None, threshold_source=PCIE_REPLAY_RATE_SOURCE)]


def replay_rates_since_boot(counts: dict[str, int], replayed: dict[str, int], uptime_s: float,
                            zeros: str) -> list[CheckResult]:
    """gpu.pcie_replay with the host's uptime: a warning per GPU whose lower-bound rate is above DCGM's limit, else
    one note naming each lower bound (rates rounded to 2 decimals only where shown)."""
    rates = {gpu: growth * 60.0 / uptime_s for gpu, growth in replayed.items()}  # uptime_s > 0: the caller's guard
    shown = {gpu: round(rate, 2) for gpu, rate in rates.items()}
    uptime_min = round(uptime_s / 60.0, 1)
    warned: list[CheckResult] = []
    for gpu, rate in rates.items():
        if rate > DCGM_PCIE_REPLAYS_PER_MIN:
            found = result("gpu.pcie_replay", WARN, "%s: at least %g replays per minute on average since boot: above "
                           "DCGM's %d per minute (%d PCIe replays since the last driver load or GPU reset, the host up "
                           "%g min)" % (gpu, shown[gpu], DCGM_PCIE_REPLAYS_PER_MIN, replayed[gpu], uptime_min),
                           measured=shown[gpu], expected=DCGM_PCIE_REPLAYS_PER_MIN,
                           threshold_source=PCIE_REPLAY_RATE_SOURCE, subject=gpu)
            warned.append(ReplayRateWarning(**found, counter="replays_since_reset", replays=replayed[gpu],
                                            uptime_s=uptime_s))
    if warned:
        return warned
    named = ", ".join("%s %d (%g per minute at least)" % (gpu, replayed[gpu], rate) for gpu, rate in shown.items())
    note = result("gpu.pcie_replay", PASS,
                  "noted: PCIe replays since the last driver load or GPU reset, at most %g min ago (the host's "
                  "uptime): %s%s. Even the lower bound is within DCGM's %d per minute; the rate now is unknown, growth "
                  "between two readings is judged after stress" % (uptime_min, named, zeros, DCGM_PCIE_REPLAYS_PER_MIN),
                  measured=counts, expected=None, threshold_source=PCIE_REPLAY_RATE_SOURCE)
    return [ReplayRateNote(**note, per_minute_at_least=shown, uptime_s=uptime_s)]
