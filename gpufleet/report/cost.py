# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What it costs to train each reference model on each offer of the fleet (pure), with the training-performance
model of gpufleet/plan/training.py: the fastest parallel layout that fits, its step time, days and cost.

An *offer* is a group of accepted nodes alike in GPU model, GPU count, NVLink domain and price. Its inputs are read
from the nodes' records (report/offers.py): the slowest measured GEMM, the lowest measured busbw curve, else the claim
or a published typical figure, each labelled measured, claimed or assumed. A model that does not fit in one node's
GPU memory is costed on the fewest nodes that hold it, across the nodes' measured (else claimed) inter-node busbw.
Nodes not accepted (REJECT, INCOMPLETE, UNREACHABLE, not judged) are listed apart with their verdict and never
ranked as offers.

The reference job (:data:`DEFAULT_JOB`, overridden by ``gpufleet_reference_job`` / run.json
``settings.reference_job`` / ``gpufleet report --reference-job``) names the models (their architecture) and the run
(tokens, precision, global batch); docs/baselines.md 13 sources each default.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Dict, List, Optional, Tuple

from gpufleet.checks.model import ACCEPTED, INCOMPLETE, UNREACHABLE, VERDICTS
from gpufleet.plan import training
from gpufleet.report import offers
from gpufleet.report.estimate import estimate_fields
from gpufleet.report.offers import Input, fig, largest_busbw

NOT_JUDGED = "NOT JUDGED"

# The defaults, each with its published source in docs/baselines.md section 13: Llama 2 7B and 70B (Touvron et al.
# 2023, arXiv 2307.09288, Table 1 and the released configurations), 1T tokens, Llama 2's 4M-token global batch.
DEFAULT_MODELS = (
    {"name": "7B", "parameters": 6.74e9, "layers": 32, "hidden": 4096, "heads": 32, "seq_len": 4096, "vocab": 32000,
     "tied_embeddings": False},
    {"name": "70B", "parameters": 68.98e9, "layers": 80, "hidden": 8192, "heads": 64, "seq_len": 4096,
     "vocab": 32000, "tied_embeddings": False},
)
DEFAULT_JOB: Dict[str, Any] = {
    "models": [dict(model) for model in DEFAULT_MODELS],
    "tokens": 1e12,
    "precision": "bf16",
    "global_batch_tokens": 4194304,
}
JOB_KEYS = tuple(DEFAULT_JOB)
MODEL_KEYS = ("name", "parameters", "layers", "hidden", "heads", "seq_len", "vocab")
# optional: false when the input embedding and the output matrix are two (Llama), as training.Job's field says
OPTIONAL_MODEL_KEYS = ("tied_embeddings",)
# upper bounds of a model's integer keys: a value past them is a typo, not a model
MODEL_LIMITS = {"layers": 10000, "hidden": 1 << 20, "heads": 1 << 14, "seq_len": 1 << 22, "vocab": 1 << 24}


class ReferenceJobError(ValueError):
    """A reference job that cannot be used; the message names the key and what it must be."""


# -- the reference job ---------------------------------------------------------------------------------------


def _number(value: Any, key: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ReferenceJobError("reference job %s: %r is not a number" % (key, value))
    if not low < value <= high:
        raise ReferenceJobError("reference job %s: %s is outside (%s, %s]" % (key, value, low, high))
    return float(value)


def _model(item: Any) -> Dict[str, Any]:
    if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item.get("name"):
        raise ReferenceJobError("reference job models: each model needs %s, got %r" % (", ".join(MODEL_KEYS), item))
    unknown = sorted(str(key) for key in item if key not in MODEL_KEYS + OPTIONAL_MODEL_KEYS)
    missing = [key for key in MODEL_KEYS if key not in item]
    if unknown or missing:
        raise ReferenceJobError("reference job models %s: %s (a model has %s)" % (
            item["name"], "unknown key(s) %s" % ", ".join(unknown) if unknown else "missing %s" % ", ".join(missing),
            ", ".join(MODEL_KEYS)))
    parameters = _number(item["parameters"], "models.parameters", 0, 1e15)
    model: Dict[str, Any] = {"name": item["name"], "parameters": parameters}
    for key, high in MODEL_LIMITS.items():
        value = item[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise ReferenceJobError("reference job models.%s: %r is not a whole number" % (key, value))
        model[key] = int(_number(value, "models.%s" % key, 0, high))
    tied = item.get("tied_embeddings", True)
    if not isinstance(tied, bool):
        raise ReferenceJobError("reference job models.tied_embeddings: %r is not true or false" % (tied,))
    model["tied_embeddings"] = tied
    if model["hidden"] % model["heads"]:
        raise ReferenceJobError("reference job models %s: hidden %d is not a multiple of heads %d"
                                % (model["name"], model["hidden"], model["heads"]))
    return model


def validate_job(value: Any) -> Dict[str, Any]:
    """The reference job: DEFAULT_JOB with ``value``'s keys (a mapping, or None for the defaults) checked.

    ReferenceJobError names an unknown key (the known ones listed) or a value out of its range."""
    job = dict(DEFAULT_JOB, models=[dict(model) for model in DEFAULT_MODELS])
    if value is None:
        return job
    if not isinstance(value, Mapping):
        raise ReferenceJobError(
            "reference job: a mapping of %s expected, got %s" % (", ".join(JOB_KEYS), type(value).__name__))
    unknown = sorted(str(key) for key in value if key not in DEFAULT_JOB)
    if unknown:
        raise ReferenceJobError(
            "reference job: unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(JOB_KEYS)))
    if "models" in value:
        if not isinstance(value["models"], list) or not value["models"]:
            raise ReferenceJobError("reference job models: a non-empty list of {%s} expected" % ", ".join(MODEL_KEYS))
        job["models"] = [_model(item) for item in value["models"]]
    if "precision" in value:
        if value["precision"] not in training.PRECISIONS:
            raise ReferenceJobError("reference job precision: %r is not one of %s"
                                    % (value["precision"], ", ".join(training.PRECISIONS)))
        job["precision"] = value["precision"]
    for key, high in (("tokens", 1e18), ("global_batch_tokens", 1e12)):
        if key in value:
            job[key] = _number(value[key], key, 0, high)
    for model in job["models"]:
        if job["global_batch_tokens"] < model["seq_len"]:
            raise ReferenceJobError("reference job global_batch_tokens: %s is less than one sequence of model %s "
                                    "(%d tokens)" % (fig(job["global_batch_tokens"]), model["name"], model["seq_len"]))
    return job


def training_job(job: Dict[str, Any], model: Dict[str, Any]) -> training.Job:
    return training.Job(model["parameters"], model["layers"], model["hidden"], model["heads"], model["seq_len"],
                        model["vocab"], job["global_batch_tokens"], job["tokens"], precision=job["precision"],
                        tied_embeddings=model.get("tied_embeddings", True))


# -- nodes and offers ----------------------------------------------------------------------------------------


def verdict_of(record: Dict[str, Any]) -> str:
    """The node's verdict: UNREACHABLE when it was and none was recorded, NOT_JUDGED when none is known."""
    verdict = record.get("verdict")
    if record.get("unreachable") and not verdict:
        return UNREACHABLE
    return verdict if verdict in VERDICTS else NOT_JUDGED


def first_reason(record: Dict[str, Any]) -> str:
    """Why a node is not an offer, in one line: why it was unreachable; an INCOMPLETE node's first unverified item;
    else the first failed or errored check."""
    if record.get("unreachable"):
        return _line(record["unreachable"])
    coverage = record.get("coverage")
    if not isinstance(coverage, dict):
        coverage = {}
    if verdict_of(record) == INCOMPLETE and coverage.get("incomplete"):
        return "not verified: %s" % _line(coverage["incomplete"][0])
    for status in ("fail", "error"):
        for check in record.get("checks") or []:
            if isinstance(check, dict) and check.get("status") == status:
                return _line(check.get("message") or check.get("id"))
    return "no verdict recorded" if verdict_of(record) == NOT_JUDGED else "see the node's reasons"


def _line(text: Any) -> str:
    return " ".join(str(text).split())[:200]


def node_inputs(record: Dict[str, Any], precision: str) -> Dict[str, Input]:
    """The node's inputs of an estimate, each labelled (report/offers.py); ``inter_node_busbw_gbs`` may be absent."""
    model = offers.gpu_model(record)
    count = offers.gpu_count(record)
    domain = offers.nvlink_domain(record, count["value"])
    inputs = {"gpu_model": model, "gpus_per_node": count, "gpu_memory_gb": offers.gpu_memory_gb(record),
              "nvlink_domain_gpus": domain, "gemm_tflops": offers.gemm_tflops(record, model["value"], precision),
              "intra_node_busbw_gbs": offers.intra_node_curve(record, model["value"], domain["value"], count["value"]),
              "price_per_node_hour": offers.price(record)}
    inter = offers.inter_node_curve(record)
    if inter is not None:
        inputs["inter_node_busbw_gbs"] = inter
    return inputs


def _pace(item: Input) -> float:
    """What orders two nodes' figures: the curve's largest-size busbw, else the figure."""
    value = item["value"]
    return float(largest_busbw(value)) if isinstance(value, list) else float(value)


def group_inputs(nodes: List[Dict[str, Input]]) -> Dict[str, Input]:
    """One offer's inputs from its alike nodes: the slowest GEMM and the lowest busbw set the pace (a synchronous job
    waits for them); a measured figure is preferred to a claimed or assumed one."""
    merged = dict(nodes[0])
    for key in ("gemm_tflops", "intra_node_busbw_gbs", "inter_node_busbw_gbs"):
        found = [node[key] for node in nodes if key in node and node[key]["value"] is not None]
        if not found:
            continue
        measured = [item for item in found if item["kind"] == offers.MEASURED]
        merged[key] = min(measured or found, key=_pace)
    return merged


def _missing(inputs: Dict[str, Input]) -> Optional[str]:
    for key in ("gpu_model", "gpus_per_node", "gpu_memory_gb", "gemm_tflops"):
        if inputs[key]["value"] is None:
            return "%s unknown: %s" % (key, inputs[key]["source"])
    return None


def interconnect_words(inputs: Dict[str, Input]) -> str:
    domain, gpus = inputs["nvlink_domain_gpus"]["value"], inputs["gpus_per_node"]["value"]
    if gpus == 1:
        return "single GPU"
    if domain == gpus:
        return "NVLink, all GPUs"
    return "NVLink pairs" if domain == 2 else "PCIe"


# -- estimates -----------------------------------------------------------------------------------------------


def offer_of(inputs: Dict[str, Input], precision: str, nodes: int = 1) -> training.Offer:
    inter = inputs.get("inter_node_busbw_gbs")
    model = inputs["gpu_model"]["value"]
    return training.Offer(str(model), inputs["gpu_memory_gb"]["value"], inputs["gpus_per_node"]["value"], nodes,
                          inputs["nvlink_domain_gpus"]["value"], inputs["gemm_tflops"]["value"],
                          training.Curve.of(inputs["intra_node_busbw_gbs"]["value"]),
                          training.Curve.of(inter["value"]) if inter else None,
                          inputs["price_per_node_hour"]["value"], peak_tflops=offers.peak_tflops(model, precision))


def model_estimate(job: Dict[str, Any], model: Dict[str, Any], inputs: Dict[str, Input]) -> Dict[str, Any]:
    """The model on one node of the offer, else on the fewest nodes that hold it (across the inter-node busbw)."""
    spec = training_job(job, model)
    offer = offer_of(inputs, job["precision"])
    got = training.estimate(spec, offer)
    nodes = 1
    if not got.feasible and got.nodes_needed:
        if "inter_node_busbw_gbs" in inputs:
            nodes = got.nodes_needed
            got = training.estimate(spec, replace(offer, nodes=nodes))
        else:
            got = replace(got, reason="%s; no inter-node busbw measured or claimed to cost it across nodes"
                          % got.reason)
    return dict(estimate_fields(got), model=model["name"], nodes=nodes)


# what makes nodes alike: one offer
GROUP_KEYS = ("gpu_model", "gpus_per_node", "nvlink_domain_gpus", "price_per_node_hour")


def _groups(records: List[Dict[str, Any]], precision: str) -> Tuple[Dict[tuple, List[tuple]], List[str]]:
    groups: Dict[tuple, List[tuple]] = {}
    unpriced = []
    for record in records:
        inputs = node_inputs(record, precision)
        if inputs["price_per_node_hour"]["value"] is None:
            unpriced.append(str(record.get("host")))
            continue
        key = tuple(str(inputs[name]["value"]) for name in GROUP_KEYS)
        groups.setdefault(key, []).append((str(record.get("host")), inputs))
    return groups, unpriced


def offer_row(job: Dict[str, Any], members: List[tuple]) -> Dict[str, Any]:
    hosts = [host for host, _inputs in members]
    inputs = group_inputs([node for _host, node in members])
    row: Dict[str, Any] = {
        "hosts": hosts, "gpu_model": inputs["gpu_model"]["value"], "gpus_per_node": inputs["gpus_per_node"]["value"],
        "interconnect": interconnect_words(inputs), "price_per_node_hour": inputs["price_per_node_hour"]["value"],
        "inputs": inputs}
    row["label"] = "%s \u00d7 %s, %s, $%s/h" % (
        row["gpus_per_node"], row["gpu_model"], row["interconnect"], fig(row["price_per_node_hour"]))
    missing = _missing(inputs)
    if missing:
        row["reason"] = missing
        return row
    row["estimates"] = [model_estimate(job, model, inputs) for model in job["models"]]
    return row


def _rank_key(row: Dict[str, Any]) -> tuple:
    """Cheapest first by the largest model; an offer that cannot train it after those that can."""
    cost = row["estimates"][-1]["cost"]
    return (cost is None, cost or 0.0, row["label"])


def cost_view(records: List[Dict[str, Any]], job: Optional[Dict[str, Any]] = None) -> Optional[Dict[str, Any]]:
    """Cost to train each reference model on each offer; None when no claim has a price.

    ``{"job", "models", "rows", "not_offers", "unavailable", "unpriced", "available", "reason"}``: ``rows`` are the
    offers (accepted nodes) with estimates, cheapest first by the last (largest) model; ``not_offers`` the priced
    nodes that are not accepted, with their verdict; ``unavailable`` offers with an unknown input, with why."""
    job = job or validate_job(None)
    if not any(offers.price(record)["value"] is not None for record in records):
        return None
    accepted = [record for record in records if verdict_of(record) in ACCEPTED]
    not_offers = [{"host": str(record.get("host")), "verdict": verdict_of(record), "reason": first_reason(record)}
                  for record in records if verdict_of(record) not in ACCEPTED]
    groups, unpriced = _groups(accepted, job["precision"])
    rows: List[Dict[str, Any]] = []
    unavailable: List[Dict[str, Any]] = []
    for _key, members in sorted(groups.items()):
        row = offer_row(job, members)
        (unavailable if "reason" in row else rows).append(row)
    rows.sort(key=_rank_key)
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
    reason = None
    if not rows:
        reason = "no accepted node has a price and a GEMM rate (measured or from a published peak): nothing to rank"
    return {"job": job, "models": [model["name"] for model in job["models"]], "rows": rows, "not_offers": not_offers,
            "unavailable": unavailable, "unpriced": unpriced, "available": bool(rows), "reason": reason}


OFFER_FIELDS = ("label", "hosts", "gpu_model", "gpus_per_node", "interconnect", "price_per_node_hour")


def cost_document(view: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """The cost view as results.json carries it (``cost_to_train``): figures and their sources, no display text."""
    if view is None:
        return None

    def offer(row: Dict[str, Any]) -> Dict[str, Any]:
        inputs = {key: dict(item) for key, item in row["inputs"].items()}
        return dict({key: row[key] for key in OFFER_FIELDS}, inputs=inputs)

    return {"job": view["job"], "model_source": "gpufleet/plan/training.py (docs/baselines.md 14)",
            "offers": [dict(offer(row), rank=row["rank"], estimates=[dict(item) for item in row["estimates"]])
                       for row in view["rows"]],
            "unavailable": [dict(offer(row), reason=row["reason"]) for row in view["unavailable"]],
            "not_offers": [dict(item) for item in view["not_offers"]],
            "unpriced_hosts": list(view["unpriced"])}
