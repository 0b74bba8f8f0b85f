# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine's contract: skips, errors, fact failures, fleet rules and verdicts (synthetic checks)."""

from __future__ import annotations

import sys

from gpufleet.checks import engine
from gpufleet.checks.model import (
    ACCEPT,
    ACCEPT_WITH_WARNINGS,
    INCOMPLETE,
    FAIL,
    PASS,
    REJECT,
    UNREACHABLE,
    WARN,
    NodeContext,
    result,
)

FAMILY = __name__


@engine.node_check("demo.gpu_count", requires=("gpu",))
def _gpu_count(node):
    count = node.group("gpu")["gpu_count"]
    status = PASS if count == 8 else FAIL
    return [result("demo.gpu_count", status, "%d GPUs" % count, measured=count, expected=8, threshold_source="test")]


@engine.node_check("demo.warns", requires=())
def _always_warn(node):
    return [result("demo.warns", WARN, "a warning for %s" % node.name)]


@engine.node_check("demo.crashes", requires=("host",))
def _crashes(node):
    return [result("demo.crashes", PASS, str(node.group("host")["missing"]))]


@engine.fleet_check("demo.outlier", requires=("gpu",))
def _outlier(nodes):
    return {node.name: [result("demo.outlier", PASS, "seen with %d peers" % (len(nodes) - 1))] for node in nodes}


def _node(name, gpu_count=None, **kwargs):
    facts = {"gpu": {"gpu_count": gpu_count}} if gpu_count is not None else {}
    facts.update(kwargs.pop("facts", {}))
    return NodeContext(name, facts=facts, **kwargs)


def _ids(entry, status):
    return [item["id"] for item in entry["checks"] if item["status"] == status]


def test_verdicts_skips_errors_and_fleet_rules():
    assert sys.modules[FAMILY]
    nodes = [
        _node("good", 8, facts={"host": {"missing": "x"}}),
        _node("short", 7),
        _node("nofacts", fact_errors={"gpu": "nvidia-smi not found"}),
        _node("gone", unreachable="ssh: connect to host timed out"),
    ]
    report = engine.run_checks(nodes, families=[FAMILY])
    good, short, nofacts, gone = (report["nodes"][n] for n in ("good", "short", "nofacts", "gone"))
    # good: gpu 8 passes, warns once, the host check works (KeyError is not raised: "missing" exists).
    assert good["verdict"] == ACCEPT_WITH_WARNINGS
    assert _ids(good, "pass") == ["demo.gpu_count", "demo.crashes", "demo.outlier"]
    # short: 7 GPUs fails with the figures; its host check is skipped (no host facts).
    assert short["verdict"] == REJECT
    failed = [item for item in short["checks"] if item["status"] == FAIL][0]
    assert (failed["measured"], failed["expected"]) == (7, 8)
    assert _ids(short, "skip") == ["demo.crashes"]
    # nofacts: the failed fact group is itself a failure, and the checks needing it say why they skipped.
    assert nofacts["failed"] == ["facts.gpu"]
    skipped = [item for item in nofacts["checks"] if item["id"] == "demo.gpu_count"][0]
    assert skipped["message"] == "not judged: gpu facts failed: nvidia-smi not found"
    # The fleet rule saw the two nodes with gpu facts, not the unreachable one.
    outlier = [item for item in good["checks"] if item["id"] == "demo.outlier"][0]
    assert outlier["message"] == "seen with 1 peers"
    assert gone["verdict"] == UNREACHABLE and gone["checks"] == []
    # A node without the facts a fleet rule needs is told why it was left out.
    assert [item["message"] for item in nofacts["checks"] if item["id"] == "demo.outlier"] == ["not judged: gpu facts failed: nvidia-smi not found"]
    assert report["fleet"]["counts"] == {ACCEPT: 0, ACCEPT_WITH_WARNINGS: 1, INCOMPLETE: 0, REJECT: 2, UNREACHABLE: 1}
    assert report["fleet"]["verdict"] == REJECT


def test_a_check_that_raises_becomes_an_error_not_a_crash():
    report = engine.run_checks([_node("n", 8, facts={"host": {}})], families=[FAMILY])
    crashed = [item for item in report["nodes"]["n"]["checks"] if item["id"] == "demo.crashes"][0]
    assert crashed["status"] == "error"
    assert crashed["message"] == "check raised KeyError: 'missing'"
    assert report["nodes"]["n"]["verdict"] == ACCEPT_WITH_WARNINGS
