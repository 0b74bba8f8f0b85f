# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""``gpufleet estimate`` (gpufleet/cli/estimate.py, gpufleet/report/estimate.py): the document in, the answer out,
every input marked measured, claimed or assumed; bad documents named with the key and exit 1."""

from __future__ import annotations

import io
import json

import pytest

from gpufleet.cli.main import main

JOB = {"parameters": 70e9, "layers": 80, "hidden": 8192, "heads": 64, "seq_len": 4096, "vocab": 32000,
       "global_batch_tokens": 1536 * 4096, "tokens": 2e12, "precision": "bf16"}
OFFER = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_memory_gb": 80, "gpus_per_node": 8, "nodes": 1,
         "nvlink_domain_gpus": 8, "intra_node": "nvswitch-nvlink4", "price_per_node_hour": 24.0}


def run(tmp_path, capsys, document):
    path = tmp_path / "estimate.json"
    path.write_text(json.dumps(document))
    code = main(["estimate", str(path)])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


def test_70b_on_one_node_does_not_fit_and_the_assumptions_are_labelled(tmp_path, capsys):
    code, got, err = run(tmp_path, capsys, {"job": JOB, "offer": OFFER})
    assert (code, err) == (0, "")
    assert got["feasible"] is False and got["nodes_needed"] == 3
    assert got["reason"] == "does not fit in 80 GB per GPU on 1 node(s): needs 3 nodes"
    assert got["step_time_s"] is None and got["cost"] is None
    # no GEMM rate and no busbw given: the H100 SXM bf16 peak 989.4 x 0.80, and the NVLink4 switch's typical figure
    assert got["inputs"]["gemm_tflops"]["kind"] == "assumed"
    assert got["inputs"]["gemm_tflops"]["value"] == pytest.approx(989.4 * 0.80)
    assert got["inputs"]["intra_node_busbw_gbs"] == {
        "value": 470.0, "kind": "assumed",
        "source": "docs/baselines.md 3a: 8x H100 SXM NVSwitch with NVLS, ~470-482 GB/s"}
    assert got["inputs"]["price_per_node_hour"] == {
        "value": 24.0, "kind": "claimed", "source": "offer.price_per_node_hour"}


def test_three_nodes_with_measured_figures_fit_and_are_priced(tmp_path, capsys):
    offer = dict(OFFER, nodes=3, gemm_tflops=700.0, intra_node_busbw_gbs=[[1 << 20, 100.0], [1 << 30, 450.0]],
                 inter_node_busbw_gbs=360.0)
    code, got, _err = run(tmp_path, capsys, {"job": JOB, "offer": offer, "parallelism": {"tp": 8}})
    assert code == 0 and got["feasible"] is True
    assert got["parallelism"]["tp"] == 8 and got["parallelism"]["dp"] == 3
    measured = ("gemm_tflops", "intra_node_busbw_gbs", "inter_node_busbw_gbs")
    assert [got["inputs"][key]["kind"] for key in measured] == ["measured"] * 3
    steps = got["step_time_s"]
    assert steps["total"] == pytest.approx(steps["compute"] + steps["tp_comm"] + steps["pp_bubble"] + steps["dp_comm"])
    # 2e12 tokens in steps of 1536 x 4096 tokens; 24 GPUs; 3 nodes at $24 an hour
    seconds = 2e12 / (1536 * 4096) * steps["total"]
    assert got["days"] == pytest.approx(seconds / 86400)
    assert got["gpu_hours"] == pytest.approx(seconds / 3600 * 24)
    assert got["cost"] == pytest.approx(seconds / 3600 * 3 * 24.0)
    assert got["tokens_per_second_per_gpu"] == pytest.approx(1536 * 4096 / steps["total"] / 24)


@pytest.mark.parametrize("document, words", [
    ({"job": JOB}, "the document needs a job and an offer"),
    ({"job": dict(JOB, layers=0), "offer": OFFER}, "job.layers: 0 is not a number > 0"),
    ({"job": {k: v for k, v in JOB.items() if k != "vocab"}, "offer": OFFER}, "job.vocab is missing"),
    ({"job": JOB, "offer": dict(OFFER, intra_node="pcie9")}, "offer.intra_node 'pcie9' is not one of"),
    ({"job": JOB, "offer": dict(OFFER, nodes=2)}, "offer.nodes is 2: give inter_node_busbw_gbs or inter_node_gbps"),
    ({"job": JOB, "offer": dict(OFFER, gpu_model="Acme X1")}, "offer.gemm_tflops is missing and 'Acme X1' has no"),
    ({"job": JOB, "offer": OFFER, "parallelism": {"ep": 2}}, "parallelism: unknown key(s) ep"),
])
def test_a_document_that_cannot_be_used_exits_1_naming_the_key(tmp_path, capsys, document, words):
    code, got, err = run(tmp_path, capsys, document)
    assert code == 1 and got is None
    assert err.startswith("gpufleet estimate: %s: " % (tmp_path / "estimate.json"))
    assert words in err


def test_standard_input_and_a_file_that_is_not_json(tmp_path, capsys, monkeypatch):
    document = {"job": JOB, "offer": dict(OFFER, nodes=3, inter_node_gbps=3200)}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(document)))
    assert main(["estimate", "-", "--query", "inputs.inter_node_busbw_gbs.value"]) == 0
    # 0.94 x 3,200 Gb/s / 8
    assert float(capsys.readouterr().out) == pytest.approx(376.0)
    path = tmp_path / "bad.json"
    path.write_text("{job")
    assert main(["estimate", str(path)]) == 1
    assert "is not JSON" in capsys.readouterr().err
