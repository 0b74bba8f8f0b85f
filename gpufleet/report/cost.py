# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What it costs to train a reference model on each offer (node group), from what was measured (pure).

The reference job (:data:`DEFAULT_JOB`, overridden by ``gpufleet_reference_job`` / run.json
``settings.reference_job`` / ``gpufleet report --reference-job``; docs/baselines.md 13 sources each default):

- training FLOPs = 6 \u00b7 parameters \u00b7 tokens (dense transformer, forward + backward);
- compute time = FLOPs / (GPUs \u00b7 training rate per GPU). The published MFU figures (Llama 3, PaLM, Megatron)
  are model FLOPs over the part's datasheet *peak*, and they were reached on healthy parts, whose best GEMM runs
  at ``healthy_gemm_fraction`` of that peak. So the training rate is MFU \u00b7 peak, scaled by how this node's
  GEMM compares with a healthy one: MFU \u00b7 peak \u00b7 (measured GEMM / peak) / healthy fraction, which is
  measured GEMM \u00b7 MFU / healthy fraction (the form computed: it needs no peak). The measured GEMM is the
  *slowest* GPU's dense matrix-multiply rate in the job's precision (benchmark kind ``gpu_compute``):
  synchronous data-parallel training waits for the slowest GPU at every step. A node with no such record is
  taken to be healthy (GEMM = peak \u00b7 healthy fraction, labelled an assumption), so its training rate is
  MFU \u00b7 peak: the healthy fraction is not applied twice;
- exposed communication = steps \u00b7 (1 \u2212 overlap) \u00b7 ring all-reduce time of the bf16 gradients
  (2 bytes/parameter): 2(n\u22121)/n \u00b7 2P / busbw, steps = tokens / global batch tokens; busbw is the measured
  single-node all-reduce inside a node, the multi-node one across the nodes of a run that measured it;
- wall time = compute + exposed communication; GPU-hours = wall \u00b7 GPUs; cost = wall \u00b7 the group's price
  per hour.

Every input of a row carries where it came from (``measured: ...`` / ``assumption: ...`` / ``claimed: ...``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from gpufleet.checks.benchmarks import benchmark_kind
from gpufleet.results.gpu_compute import DTYPES, gpu_figures

try:  # the published peaks table (checks/compute.py, docs/baselines.md 12); absent in an older tree
    from gpufleet.checks.compute import published_peak
except ImportError:  # pragma: no cover - only while checks/compute.py does not exist
    published_peak = None  # pylint: disable=invalid-name

FLEET_RULE_PREFIX = "benchmarks.gpu_compute"
BASELINES = "docs/baselines.md 13"
HEALTHY_SOURCE = "docs/baselines.md 12b"

# The defaults, each with its published source in docs/baselines.md section 13.
DEFAULT_JOB = {
    "models": [{"name": "7B", "parameters": 7e9}, {"name": "70B", "parameters": 70e9}],
    "tokens": 1e12,
    "precision": "bf16",
    # model FLOPs utilisation, of the datasheet peak: Llama 3 reports 38-43 % BF16 MFU on H100
    "mfu": 0.40,
    # 1,024 sequences of 4,096 tokens: Llama 2's 4M-token global batch
    "global_batch_tokens": 4194304,
    # share of the gradient all-reduce hidden behind the backward pass: none (the upper bound of the exposed time)
    "overlap": 0.0,
    # the GEMM rate healthy parts reach over the datasheet peak, H100 SXM BF16 (794.5 of 989 TFLOP/s, the
    # ml-engineering MAMF table, docs/baselines.md 12b): the parts the published MFU figures were reached on
    "healthy_gemm_fraction": 0.80,
}
GRADIENT_BYTES_PER_PARAM = 2
JOB_KEYS = tuple(DEFAULT_JOB)
_GPU_SUBJECT = re.compile(r"^GPU ?(\d+)\b")


class ReferenceJobError(ValueError):
    """A reference job that cannot be used; the message names the key and what it must be."""


def _number(value, key, low, high, low_open=True):
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or isinstance(value, float)
        and not math.isfinite(value)
    ):
        raise ReferenceJobError("reference job %s: %r is not a number" % (key, value))
    if (value <= low if low_open else value < low) or value > high:
        raise ReferenceJobError(
            "reference job %s: %s is outside %s%s, %s]" % (key, value, "(" if low_open else "[", low, high)
        )
    return float(value)


def validate_job(value) -> dict:
    """The reference job: DEFAULT_JOB with ``value``'s keys (a mapping, or None for the defaults) checked.

    ReferenceJobError names an unknown key (the known ones listed) or a value out of its range."""
    job = {key: (list(item) if isinstance(item, list) else item) for key, item in DEFAULT_JOB.items()}
    if value is None:
        return job
    if not isinstance(value, Mapping):
        raise ReferenceJobError(
            "reference job: a mapping of %s expected, got %s" % (", ".join(JOB_KEYS), type(value).__name__)
        )
    unknown = sorted(str(key) for key in value if key not in DEFAULT_JOB)
    if unknown:
        raise ReferenceJobError(
            "reference job: unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(JOB_KEYS))
        )
    for key, item in value.items():
        if key == "models":
            if not isinstance(item, list) or not item:
                raise ReferenceJobError("reference job models: a non-empty list of {name, parameters} expected")
            models = []
            for model in item:
                if not isinstance(model, Mapping) or not isinstance(model.get("name"), str) or not model.get("name"):
                    raise ReferenceJobError(
                        "reference job models: each model needs a name and parameters, got %r" % (model,)
                    )
                models.append(
                    {
                        "name": model["name"],
                        "parameters": _number(model.get("parameters"), "models.parameters", 0, 1e15),
                    }
                )
            job["models"] = models
        elif key == "precision":
            if item not in DTYPES:
                raise ReferenceJobError("reference job precision: %r is not one of %s" % (item, ", ".join(DTYPES)))
            job["precision"] = item
        elif key == "tokens":
            job["tokens"] = _number(item, key, 0, 1e18)
        elif key == "global_batch_tokens":
            job["global_batch_tokens"] = _number(item, key, 0, 1e12)
        elif key == "overlap":
            job["overlap"] = _number(item, key, 0, 1, low_open=False)
        else:  # mfu, healthy_gemm_fraction
            job[key] = _number(item, key, 0, 1)
    return job


# -- the arithmetic --------------------------------------------------------------------------


def allreduce_time_s(params: float, busbw_gbs: float, ranks: int) -> float:
    """Ring all-reduce time of one step's bf16 gradients: 2(n-1)/n \u00b7 2P / busbw (busbw in GB/s = 1e9 B/s)."""
    if ranks < 2:
        return 0.0
    return 2.0 * (ranks - 1) / ranks * GRADIENT_BYTES_PER_PARAM * params / (busbw_gbs * 1e9)


def training_tflops(gemm_tflops: float, mfu: float, healthy_fraction: float) -> float:
    """Model TFLOP/s one GPU sustains in training: MFU \u00b7 peak \u00b7 (GEMM / peak) / healthy fraction, i.e.
    GEMM \u00b7 MFU / healthy fraction (module docstring)."""
    return gemm_tflops * mfu / healthy_fraction


def train_estimate(params: float, tokens: float, gpus: int, training_tflops_per_gpu: float,
                   busbw_gbs: float | None, ranks: int, batch_tokens: float, overlap: float,
                   price_per_hour: float) -> dict:
    """Seconds, GPU-hours and cost of training ``params`` on ``tokens`` (module docstring); the rate per GPU is
    the training rate (:func:`training_tflops`, MFU included).

    ``busbw_gbs`` None: communication not measured, left out (the result is then a lower bound)."""
    flops = 6.0 * params * tokens
    compute_s = flops / (gpus * training_tflops_per_gpu * 1e12)
    steps = tokens / batch_tokens
    step_allreduce_s = allreduce_time_s(params, busbw_gbs, ranks) if busbw_gbs else 0.0
    comm_s = steps * step_allreduce_s * (1.0 - overlap)
    wall_s = compute_s + comm_s
    hours = wall_s / 3600.0
    return {
        "flops": flops,
        "compute_s": compute_s,
        "steps": steps,
        "step_allreduce_s": step_allreduce_s,
        "comm_s": comm_s,
        "wall_s": wall_s,
        "wall_days": wall_s / 86400.0,
        "gpu_hours": hours * gpus,
        "cost": hours * price_per_hour,
    }


# -- what was measured -----------------------------------------------------------------------


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _gpu_of(item: dict):
    """The GPU index a check result names: its ``gpu.index``, else a ``GPU<n>`` subject; None otherwise."""
    gpu = item.get("gpu")
    if isinstance(gpu, dict) and isinstance(gpu.get("index"), int):
        return gpu["index"]
    match = _GPU_SUBJECT.match(str(item.get("subject") or ""))
    return int(match.group(1)) if match else None


def fleet_outliers(record: dict) -> dict:
    """``{gpu index: [messages]}`` of the host's fleet-relative compute findings (ids ``benchmarks.gpu_compute*``,
    status warn or fail) that name a GPU."""
    named = {}
    for item in record.get("checks") or []:
        if not isinstance(item, dict) or not str(item.get("id") or "").startswith(FLEET_RULE_PREFIX):
            continue
        if item.get("status") not in ("warn", "fail"):
            continue
        index = _gpu_of(item)
        if index is not None:
            named.setdefault(index, []).append(
                "%s %s: %s" % (item.get("status"), item.get("id"), item.get("message") or "")
            )
    return named


def throughput_rows(records: list) -> list:
    """The per-GPU throughput table: one row per GPU of every gpu_compute record, fleet-relative outliers flagged."""
    rows = []
    for record in records:
        host = str(record.get("host"))
        flagged = fleet_outliers(record)
        for gpu in gpu_figures(record):
            findings = flagged.get(gpu["index"], [])
            rows.append({"host": host, "gpu": gpu["index"], "name": gpu["name"], "bus_id": gpu["bus_id"],
                         "gemm_tflops": gpu["gemm_tflops"], "hbm_gbs": gpu["hbm_gbs"],
                         "outlier": bool(findings), "findings": findings})
    return rows


def _gpus_facts(record: dict) -> list:
    gpu = (record.get("facts") or {}).get("gpu")
    return [item for item in (gpu or {}).get("gpus") or [] if isinstance(item, dict)] if isinstance(gpu, dict) else []


def node_description(record: dict) -> dict:
    """``{model, model_source, gpus, interconnect, price}`` of one node: measured facts first, else the claim."""
    claim = record.get("claim") if isinstance(record.get("claim"), dict) else {}
    facts = record.get("facts") or {}
    names = sorted({str(item["name"]) for item in _gpus_facts(record) if item.get("name")})
    model, model_source = (", ".join(names), "measured") if names else (claim.get("gpu_model"), "claimed")
    summary = ((facts.get("topology") or {}).get("summary") or {}) if isinstance(facts.get("topology"), dict) else {}
    gpu_group = facts.get("gpu") if isinstance(facts.get("gpu"), dict) else {}
    count = gpu_group.get("gpu_count") or summary.get("gpu_count")
    count_source = "measured"
    if not isinstance(count, int) or count < 1:
        count, count_source = claim.get("gpu_count"), "claimed"
    pairs, nvlink = summary.get("pair_count"), summary.get("nvlink_pairs")
    if isinstance(count, int) and count == 1:
        interconnect = "single GPU"
    elif isinstance(pairs, int) and pairs > 0 and isinstance(nvlink, int):
        interconnect = (
            "NVLink, all GPU pairs"
            if nvlink == pairs
            else ("NVLink, %d of %d GPU pairs" % (nvlink, pairs) if nvlink else "PCIe")
        )
    elif claim.get("interconnect"):
        interconnect = "claimed: %s" % claim["interconnect"]
    else:
        interconnect = "unknown"
    price = claim.get("price_per_node_hour")
    return {"model": model, "model_source": model_source, "gpus": count if isinstance(count, int) else None,
            "gpus_source": count_source, "interconnect": interconnect,
            "price": float(price) if _is_number(price) else None}


def node_rate(record: dict, description: dict, job: dict) -> dict:
    """The node's GEMM rate per GPU in the job's precision and the training rate it gives (module docstring):
    ``{tflops, measured, source, peak_tflops, training_tflops, training_source}`` (tflops None: unknown).

    Measured: the slowest GPU of its latest gpu_compute record, set against the published dense peak where the
    part has one. Else a healthy part is assumed: the published dense peak \u00d7 healthy_gemm_fraction, whose
    training rate is then MFU \u00d7 peak (labelled an assumption)."""
    host = str(record.get("host"))
    precision, mfu, healthy = job["precision"], job["mfu"], job["healthy_gemm_fraction"]
    measured = [gpu for gpu in gpu_figures(record) if precision in gpu["gemm_tflops"]]
    name = str(measured[0]["name"] or description["model"] or "") if measured else str(description["model"] or "")
    peak = published_peak(name) if published_peak and name else None
    peak_tflops = ((peak or {}).get("dense_tflops") or {}).get(precision)
    peak_tflops = float(peak_tflops) if _is_number(peak_tflops) else None
    sku = (peak or {}).get("sku") or name
    if measured:
        slowest = min(measured, key=lambda gpu: gpu["gemm_tflops"][precision])
        gemm = slowest["gemm_tflops"][precision]
        training = training_tflops(gemm, mfu, healthy)
        source = ("measured: gpu_compute on host %s GPU %s, the slowest of its %d (synchronous training waits for it): "
                  "%s TFLOP/s %s" % (host, slowest["index"], len(measured), _fig(gemm), precision))
        if peak_tflops:
            share = gemm / peak_tflops
            source += " = %s of the published %s dense peak %s" % (_fig(share), sku, _fig(peak_tflops))
            training_source = ("MFU %s of the %s TFLOP/s peak, scaled by this GPU's %s of peak over the healthy %s "
                               "(%s): %s \u00d7 %s / %s = %s TFLOP/s"
                               % (_fig(mfu), _fig(peak_tflops), _fig(share), _fig(healthy), HEALTHY_SOURCE,
                                  _fig(gemm), _fig(mfu), _fig(healthy), _fig(training)))
        else:
            source += " (no published peak for %r)" % name
            training_source = (
                "measured GEMM \u00d7 MFU %s / the healthy fraction %s (%s): %s \u00d7 %s / %s = %s TFLOP/s"
                % (_fig(mfu), _fig(healthy), HEALTHY_SOURCE, _fig(gemm), _fig(mfu), _fig(healthy), _fig(training))
            )
        return {"tflops": gemm, "measured": True, "source": source, "peak_tflops": peak_tflops,
                "training_tflops": training, "training_source": training_source}
    if peak_tflops:
        gemm = peak_tflops * healthy
        training = training_tflops(gemm, mfu, healthy)
        return {"tflops": gemm, "measured": False, "peak_tflops": peak_tflops, "training_tflops": training,
                "source": "assumption: no gpu_compute record; taken as a healthy part: %s of the published %s dense "
                          "peak %s TFLOP/s (%s) = %s TFLOP/s (%s)"
                          % (_fig(healthy), sku, _fig(peak_tflops), precision, _fig(gemm), HEALTHY_SOURCE),
                "training_source": "assumption: MFU %s of the %s TFLOP/s peak, a healthy part (no further scaling): "
                                   "%s TFLOP/s" % (_fig(mfu), _fig(peak_tflops), _fig(training))}
    why = "no published peak for %r" % name if name else "GPU model unknown"
    return {"tflops": None, "measured": False, "peak_tflops": None, "training_tflops": None,
            "source": "unknown: no gpu_compute record and %s" % why, "training_source": "unknown"}


def _fig(value) -> str:
    return ("%.3f" % value).rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def _allreduce(bench: dict):
    """``(busbw GB/s, ranks)`` of an all-reduce record (the report's judged figure), else ``(None, None)``."""
    parsed = bench.get("parsed")
    if not isinstance(parsed, dict) or parsed.get("failed"):
        return None, None
    for key in ("busbw_at_largest_size_gbs", "max_busbw_gbs"):
        if _is_number(parsed.get(key)):
            ranks = parsed.get("ranks")
            return float(parsed[key]), ranks if isinstance(ranks, int) and not isinstance(ranks, bool) else None
    return None, None


def single_busbw(record: dict):
    """The best single-node all-reduce busbw of the host's runs (repeats): ``(busbw, ranks)`` or ``(None, None)``."""
    best = (None, None)
    for bench in record.get("benchmarks") or []:
        if isinstance(bench, dict) and benchmark_kind(bench) == "allreduce_single":
            busbw, ranks = _allreduce(bench)
            if busbw is not None and (best[0] is None or busbw > best[0]):
                best = (busbw, ranks)
    return best


# -- node groups -----------------------------------------------------------------------------


def _group_rows(records: list, job: dict) -> tuple:
    """``(single-node groups, hosts without a price)``: nodes alike in GPU model, count, interconnect and price."""
    groups, unpriced = {}, []
    for record in records:
        if record.get("unreachable"):
            continue
        description = node_description(record)
        if description["price"] is None:
            unpriced.append(str(record.get("host")))
            continue
        key = (str(description["model"]), description["gpus"], description["interconnect"], description["price"])
        groups.setdefault(key, {"description": description, "records": []})["records"].append(record)
    rows = []
    for (_model, gpus, _interconnect, price), group in sorted(groups.items(), key=lambda item: str(item[0])):
        records_in = group["records"]
        hosts = [str(record.get("host")) for record in records_in]
        description = group["description"]
        rates = [node_rate(record, description, job) for record in records_in]
        known = [rate for rate in rates if rate["tflops"] is not None]
        measured = [rate for rate in known if rate["measured"]]
        # the slowest node of the group sets its rate; a measured one is preferred to an assumed one
        rate = min(measured or known, key=lambda item: item["training_tflops"]) if known else rates[0]
        inputs = {"gemm_tflops": rate}
        if gpus == 1:
            comm = {"busbw": None, "ranks": 1, "source": "one GPU: no gradient all-reduce within the node (0 s)"}
        else:
            found = [(single_busbw(record), str(record.get("host"))) for record in records_in]
            found = [(busbw, ranks, host) for (busbw, ranks), host in found if busbw is not None]
            if found:
                busbw, ranks, host = min(found)
                comm = {"busbw": busbw, "ranks": ranks or gpus,
                        "source": "measured: allreduce_single busbw %s GB/s on host %s%s"
                                  % (_fig(busbw), host, ", the lowest of the group" if len(found) > 1 else "")}
            else:
                comm = {"busbw": None, "ranks": gpus,
                        "source": "not measured: no allreduce_single record; communication left out (a lower bound)"}
        inputs["busbw"] = comm
        rows.append(
            {
                "label": "%s \u00d7 %s, %s, $%s/h"
                % (gpus, description["model"], description["interconnect"], _fig(price)),
                "scope": "single node",
                "hosts": hosts,
                "nodes": 1,
                "gpus": gpus,
                "model": description["model"],
                "model_source": description["model_source"],
                "interconnect": description["interconnect"],
                "price_per_hour": price,
                "price_source": "claimed: price_per_node_hour %s \u00d7 1 node" % _fig(price),
                "inputs": inputs,
            }
        )
    return rows, unpriced


def _multi_rows(records: list, job: dict) -> list:
    """One group per multi-node all-reduce run whose hosts all have a price: measured together."""
    by_host = {str(record.get("host")): record for record in records}
    runs = {}
    for record in records:
        for bench in record.get("benchmarks") or []:
            if not isinstance(bench, dict) or benchmark_kind(bench) != "allreduce_multi":
                continue
            busbw, ranks = _allreduce(bench)
            hosts = [str(host) for host in bench.get("hosts") or []]
            # every node of the run is needed: its price and GPUs are part of the group's
            if busbw is None or len(hosts) < 2 or any(host not in by_host for host in hosts):
                continue
            runs.setdefault((str(bench.get("name")), str(bench.get("started")), tuple(hosts), bench.get("repeat")),
                            (busbw, ranks))
    rows = []
    for (_name, _started, hosts, _repeat), (busbw, ranks) in sorted(runs.items(), key=lambda item: str(item[0])):
        descriptions = [node_description(by_host[host]) for host in hosts]
        if any(item["price"] is None or not item["gpus"] for item in descriptions):
            continue
        rates = [node_rate(by_host[host], item, job) for host, item in zip(hosts, descriptions)]
        known = [rate for rate in rates if rate["tflops"] is not None]
        rate = min(known, key=lambda item: item["training_tflops"]) if len(known) == len(rates) else \
            next(rate for rate in rates if rate["tflops"] is None)
        gpus = sum(item["gpus"] for item in descriptions)
        price = sum(item["price"] for item in descriptions)
        models = sorted({str(item["model"]) for item in descriptions})
        rows.append(
            {
                "label": "%d nodes: %s" % (len(hosts), " + ".join(hosts)),
                "scope": "across nodes",
                "hosts": list(hosts),
                "nodes": len(hosts),
                "gpus": gpus,
                "model": ", ".join(models),
                "model_source": "/".join(sorted({item["model_source"] for item in descriptions})),
                "interconnect": "measured together",
                "price_per_hour": price,
                "price_source": "claimed: price_per_node_hour summed over %d nodes: %s"
                % (len(hosts), " + ".join(_fig(item["price"]) for item in descriptions)),
                "inputs": {
                    "gemm_tflops": rate,
                    "busbw": {
                        "busbw": busbw,
                        "ranks": ranks or gpus,
                        "source": "measured: allreduce_multi busbw %s GB/s over %s" % (_fig(busbw), ", ".join(hosts)),
                    },
                },
            }
        )
    return rows


def cost_view(records: list, job: dict | None = None) -> dict | None:
    """Cost to train each reference model on each node group; None when no claim has a price.

    ``{"job", "formula", "models", "rows", "unavailable", "unpriced", "available", "reason"}``: ``rows`` are the groups
    with a known GEMM rate, cheapest first by the last (largest) model; ``unavailable`` those without one, with why."""
    job = job or validate_job(None)
    if not any(node_description(record)["price"] is not None for record in records):
        return None
    singles, unpriced = _group_rows(records, job)
    rows, unavailable = [], []
    for row in singles + _multi_rows(records, job):
        rate, comm = row["inputs"]["gemm_tflops"], row["inputs"]["busbw"]
        if rate["tflops"] is None or not row["gpus"]:
            unavailable.append(dict(row, reason=rate["source"] if rate["tflops"] is None else "GPU count unknown"))
            continue
        row["inputs"]["mfu"] = {"value": job["mfu"],
                                "source": "assumption: MFU %s of the datasheet peak, as the papers quote it (%s)"
                                          % (_fig(job["mfu"]), BASELINES)}
        row["inputs"]["healthy_gemm_fraction"] = {
            "value": job["healthy_gemm_fraction"],
            "source": "assumption: healthy parts reach %s of the dense peak in a GEMM (%s)"
                      % (_fig(job["healthy_gemm_fraction"]), HEALTHY_SOURCE)}
        row["inputs"]["training_tflops"] = {"value": rate["training_tflops"], "source": rate["training_source"]}
        row["inputs"]["overlap"] = {
            "value": job["overlap"],
            "source": "assumption: %s of the all-reduce hidden behind compute (%s)" % (_fig(job["overlap"]), BASELINES),
        }
        row["lower_bound"] = comm["busbw"] is None and comm["ranks"] > 1
        row["estimates"] = []
        for model in job["models"]:
            estimate = train_estimate(model["parameters"], job["tokens"], row["gpus"], rate["training_tflops"],
                                      comm["busbw"], comm["ranks"], job["global_batch_tokens"], job["overlap"],
                                      row["price_per_hour"])
            row["estimates"].append(dict(estimate, model=model["name"], parameters=model["parameters"]))
        rows.append(row)
    rows.sort(key=lambda row: (row["estimates"][-1]["cost"], row["label"]))
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
    reason = None
    if not rows:
        reason = "no node group has a GEMM rate (measured or from a published peak): nothing to estimate"
    return {"job": job, "formula": FORMULA, "models": [model["name"] for model in job["models"]], "rows": rows,
            "unavailable": unavailable, "unpriced": unpriced, "available": bool(rows), "reason": reason}


FORMULA = (
    "FLOPs = 6 \u00b7 P \u00b7 tokens;  training rate per GPU = MFU \u00b7 peak \u00b7 "
    "(measured GEMM of the slowest GPU / peak) / healthy GEMM fraction = measured GEMM \u00b7 MFU / healthy fraction;  "
    "compute = FLOPs / (GPUs \u00b7 training rate);  "
    "communication = tokens / global batch \u00b7 (1 \u2212 overlap) \u00b7 2(n\u22121)/n \u00b7 2P / busbw;  "
    "cost = (compute + communication) \u00b7 price per hour"
)


def cost_document(view: dict | None) -> dict | None:
    """The cost view as results.json carries it (``cost_to_train``): figures and their sources, no display text."""
    if view is None:
        return None

    def group(row):
        out = {
            key: row[key]
            for key in (
                "label",
                "scope",
                "hosts",
                "nodes",
                "gpus",
                "model",
                "model_source",
                "interconnect",
                "price_per_hour",
                "price_source",
            )
        }
        out["inputs"] = {name: dict(value) for name, value in row["inputs"].items()}
        return out

    return {"job": view["job"], "formula": view["formula"],
            "groups": [dict(group(row), rank=row["rank"], lower_bound=row["lower_bound"],
                            estimates=[dict(item) for item in row["estimates"]]) for row in view["rows"]],
            "unavailable": [dict(group(row), reason=row["reason"]) for row in view["unavailable"]],
            "unpriced_hosts": list(view["unpriced"])}
