# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One sampler run as the burn-in checks of gpufleet/checks/burn_in_flags.py read it (pure), and its evidence.

:class:`SamplerRun` reads the samples once (ticks, per-GPU series, identities); a per-GPU finding is the results-schema
shape plus ``gpu: {index, uuid, name}`` (:func:`gpu_finding`), its messages name the GPU with :func:`gpu_words` and
its figures with :func:`num` and :func:`pct`. The evidence of ``burn_in.samples`` per GPU (never sampled, never
readable, lost during the run), the unreadable lines and the pass are here too; the checks stay in burn_in_flags.py.
"""

from __future__ import annotations

from typing import Any, Iterable, TypedDict

from gpufleet.facts import nvml_samples as nvml
from gpufleet.checks.model import ERROR, FAIL, PASS, WARN, CheckResult, result


def num(value: Any) -> str:
    """A figure for a message: ``0.125`` (3 decimals at most, no trailing zeros), ``n/a`` for None."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return ("%.3f" % value).rstrip("0").rstrip(".")
    return str(value)


def pct(share: float) -> str:
    """A share as a percentage for a message: ``12.5%``."""
    return "%s%%" % num(round(share * 100.0, 1))


def median_of(items: Iterable[float]) -> float:
    """The median of figures the caller holds at least one of."""
    middle = nvml.median(items)
    if middle is None:
        raise ValueError("the median of no figures")
    return middle


class GpuIdent(TypedDict):
    """Which GPU a finding is about (``gpu`` of a per-GPU finding)."""

    index: int
    uuid: str | None
    name: str | None


class GpuFinding(CheckResult):
    """A result about one GPU: the results-schema shape plus ``gpu``."""

    gpu: GpuIdent


def gpu_words(ident: dict[str, Any]) -> str:
    """``GPU 3 (GPU-uuid)`` for messages."""
    return "GPU %s%s" % (ident["index"], " (%s)" % ident["uuid"] if ident.get("uuid") else "")


def gpu_finding(check_id: str, status: str, ident: dict[str, Any], message: str, measured: Any = None,
                expected: Any = None, source: str | None = None) -> GpuFinding:
    """A result about one GPU: the results-schema shape plus ``gpu: {index, uuid, name}``."""
    item = result(check_id, status, message, measured=measured, expected=expected, threshold_source=source,
                  subject="GPU %s" % ident["index"])
    return GpuFinding(**item, gpu={"index": ident["index"], "uuid": ident.get("uuid"), "name": ident.get("name")})


class SamplerRun:
    """One sampler run, read once: ticks, per-GPU series and identities."""

    def __init__(self, parsed: dict[str, Any]) -> None:
        self.parsed = parsed
        self.header: dict[str, Any] | None = parsed.get("header")
        self.samples: list[dict[str, Any]] = parsed.get("samples") or []
        self.series = nvml.by_gpu(self.samples)
        listed = {item["index"] for item in (self.header or {}).get("gpus") or []}
        self.indexes: list[int] = sorted(set(self.series) | listed)
        self.ident = {index: nvml.gpu_identity(index, self.series.get(index), self.header) for index in self.indexes}
        self.ticks = nvml.ticks(self.samples)

    def span_s(self) -> float:
        """Seconds from the first sample to the last (0 without samples)."""
        if not self.samples:
            return 0.0
        times: list[float] = [sample["t"] for sample in self.samples]
        return max(times) - min(times)


# -- the evidence ----------------------------------------------------------------------------


def gpu_evidence(run: SamplerRun, index: int, where: str) -> CheckResult | None:
    """``burn_in.samples`` of one GPU: never sampled or never readable (error), lost during the run (fail); else
    None."""
    series = run.series.get(index) or []
    ident = run.ident[index]
    if not series:
        return gpu_finding("burn_in.samples", ERROR, ident,
                           "%s is listed by the sampler's header but has no sample in %s"
                           % (gpu_words(ident), where), measured=0)
    lost = [sample for sample in series if nvml.gpu_lost(sample)]
    unread = [sample["errors"]["*"] for sample in series if sample.get("errors", {}).get("*")
              and not nvml.gpu_lost(sample)]
    if len(unread) == len(series):
        return gpu_finding("burn_in.samples", ERROR, ident, "%s could not be read in any of its %d sample(s): %s" % (
            gpu_words(ident), len(series), unread[-1]), measured=unread[-1], expected="readable")
    if lost:
        return gpu_finding("burn_in.samples", FAIL, ident,
                           "%s was lost during the run (NVML GPU_IS_LOST) from t=%s, %s s "
                           "after the first sample" % (gpu_words(ident), num(lost[0]["t"]),
                                                       num(round(lost[0]["t"] - run.samples[0]["t"], 1))),
                           measured="gpu_lost", expected="readable for the whole run",
                           source="NVML: NVML_ERROR_GPU_IS_LOST")
    return None


def unreadable_lines(parsed: dict[str, Any], where: str) -> CheckResult | None:
    """``burn_in.samples`` warns of lines or values that could not be read; a single torn last line (a sampler killed
    mid-write: no end line) is no warning."""
    bad_lines = parsed.get("bad_lines") or []
    torn_last = len(bad_lines) == 1 and bad_lines[0][0] == parsed.get("lines") and parsed.get("end") is None
    if not ((bad_lines and not torn_last) or parsed.get("bad_fields")):
        return None
    first = "; first: line %s: %s" % (bad_lines[0][0], bad_lines[0][1]) if bad_lines else ""
    return result("burn_in.samples", WARN, "%s: %d line(s) and %d value(s) could not be read and were left out%s" % (
        where, len(bad_lines), parsed.get("bad_fields") or 0, first),
        measured=len(bad_lines) + (parsed.get("bad_fields") or 0), expected=0)


def samples_pass(run: SamplerRun) -> CheckResult:
    """``burn_in.samples`` passed: how many samples of how many GPUs, over how long, and how the sampler ended."""
    end = run.parsed.get("end")
    ending = ("ended by %s" % end.get("reason") if end
              else "no end line (the sampler was stopped before it could write one)")
    header = run.header
    interval = (", interval %s s" % num(header.get("interval_s")) if header and header.get("interval_s") is not None
                else "")
    return result("burn_in.samples", PASS, "%d sample(s) of %d GPU(s) in %d tick(s) over %s s%s, %s" % (
        len(run.samples), len(run.indexes), len(run.ticks), num(round(run.span_s(), 1)), interval, ending),
        measured=len(run.samples))
