# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus text of a node's latest samples (SYNTHETIC series, tests/fixtures/nvml-samples/synthetic_nvml.py).

``promtool check metrics`` (Debian package ``prometheus``) lints the output, a hostile GPU name included;
the tests that need it fail, naming the package and the set-up command, where it is not installed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from gpufleet.checks import burn_in_flags as flags
from gpufleet.history import prometheus
from gpufleet.facts import nvml_samples as samples

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "fixtures", "nvml-samples"))
sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "tools"))

import synthetic_nvml as synth  # noqa: E402  pylint: disable=import-error,wrong-import-position
from system_programs import require_programs  # noqa: E402  pylint: disable=import-error,wrong-import-position

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.usefixtures("promtool_installed")
HOSTILE = 'H100 "evil"\\ name\nfake_metric{x="1"} 666\r\x1b[31m'


@pytest.fixture(name="promtool_installed")
def promtool_installed_fixture():
    require_programs(["promtool"], "it checks the textfile metrics")


def promtool(text):
    proc = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode("utf-8"), capture_output=True, timeout=60, check=False,
                          env=dict(os.environ, LC_ALL="C"))
    return proc.returncode, (proc.stdout + proc.stderr).decode("utf-8", "replace")


def node(change=None, names=None, gpus=2):
    return samples.parse_text(synth.text(synth.series(gpus=gpus, ticks=3, change=change, names=names)))


def test_escape_label_values():
    assert prometheus.escape_label('a\\b"c\nd') == 'a\\\\b\\"c\\nd'
    assert prometheus.escape_label("tab\there\rcr") == "tab here cr"
    assert prometheus.escape_label("\udcff") == "?"   # not UTF-8: replaced


def test_values_units_and_nulls():
    def change(gpu, tick, sample):
        sample["clock_event_ns"]["hw_slowdown"] = tick * 250000000   # last sample: 0.5 s
        if gpu == 1:
            sample["power_w"] = None                                  # NVML gave no power: no line, never 0
            sample["ecc"]["aggregate_uncorrected"] = 3
    text = prometheus.render_samples(node(change))
    lines = text.splitlines()
    label0 = 'gpu="0",uuid="%s",name="%s"' % (synth.uuid_of(0), synth.MODEL)
    label1 = 'gpu="1",uuid="%s",name="%s"' % (synth.uuid_of(1), synth.MODEL)
    assert "gpufleet_gpu_temperature_celsius{%s} 60" % label0 in lines
    assert "gpufleet_gpu_sm_clock_hertz{%s} 1980000000" % label0 in lines
    assert "gpufleet_gpu_power_watts{%s} 650" % label0 in lines
    assert not [line for line in lines if line.startswith("gpufleet_gpu_power_watts{%s}" % label1)]
    assert 'gpufleet_gpu_clock_event_seconds_total{%s,reason="hw_slowdown"} 0.5' % label0 in lines
    assert 'gpufleet_gpu_ecc_errors_total{%s,scope="aggregate",type="uncorrected"} 3' % label1 in lines
    assert 'gpufleet_gpu_nvlink_errors_total{%s,type="replay"} 0' % label0 in lines
    assert "gpufleet_gpu_lost{%s} 0" % label0 in lines
    assert "gpufleet_health_last_sample_timestamp_seconds 1002" in lines
    assert "# TYPE gpufleet_gpu_ecc_errors_total counter" in lines and "# TYPE gpufleet_gpu_temperature_celsius gauge" in lines


def test_findings_are_counted_per_gpu():
    def change(gpu, tick, sample):
        if gpu == 1 and tick == 2:
            sample["ecc"]["volatile_uncorrected"] = 1
    parsed = node(change)
    text = prometheus.render_samples(parsed, findings=flags.judge(parsed, load={"tool": "gpu-burn", "outcome": "ok"}))
    assert 'gpufleet_gpu_findings{gpu="1",uuid="%s",name="%s",status="fail"} 1' % (synth.uuid_of(1), synth.MODEL) in text.splitlines()
    assert 'gpufleet_gpu_findings{gpu="0",uuid="%s",name="%s",status="fail"} 0' % (synth.uuid_of(0), synth.MODEL) in text.splitlines()


def test_a_hostile_gpu_name_stays_one_label_value():
    text = prometheus.render_samples(node(names={0: HOSTILE}))
    assert not [line for line in text.splitlines() if line.startswith("fake_metric")]
    assert '\r' not in text and "\x1b" not in text
    assert 'name="H100 \\"evil\\"\\\\ name\\nfake_metric{x=\\"1\\"} 666  [31m"' in text


@needs_promtool
def test_promtool_accepts_the_output_with_a_hostile_name():
    def change(gpu, tick, sample):
        if gpu == 1:
            synth.lost(sample)
    parsed = node(change, names={0: HOSTILE}, gpus=3)
    text = prometheus.render_samples(parsed, findings=flags.judge(parsed, load={"tool": "dcgmi", "outcome": "ok"}))
    rc, output = promtool(text)
    assert rc == 0, output
    assert output.strip() == ""


@needs_promtool
def test_promtool_would_catch_an_unescaped_name():
    """The check above can fail: the same text with the name's newline left raw is refused."""
    text = prometheus.render_samples(node(names={0: 'bad\nname'}))
    broken = text.replace("bad\\nname", "bad\nname")
    rc, output = promtool(broken)
    assert rc != 0 and "new-line" in output


@needs_promtool
def test_gpu_compute_throughput_gauges():
    # SYNTHETIC figures in the gpubench parser's shape (results/gpu_compute.py gpu_figures), GPU 1 named hostilely
    throughput = [{"index": 0, "name": synth.MODEL, "gemm_tflops": {"bf16": 712.5, "fp32": 51.0}, "hbm_gbs": {"copy": 2950.0}},
                  {"index": 1, "name": HOSTILE, "gemm_tflops": {"bf16": 600.0}, "hbm_gbs": {}}]
    text = prometheus.render_samples(node(), throughput=throughput)
    lines = text.splitlines()
    label0 = 'gpu="0",uuid="%s",name="%s"' % (synth.uuid_of(0), synth.MODEL)
    # 712.5 TFLOP/s = 712.5e12 FLOP/s; 2950 GB/s = 2.95e12 B/s (base units)
    assert 'gpufleet_gpu_gemm_flops_per_second{%s,dtype="bf16"} 712500000000000' % label0 in lines
    assert 'gpufleet_gpu_gemm_flops_per_second{%s,dtype="fp32"} 51000000000000' % label0 in lines
    assert 'gpufleet_gpu_memory_bandwidth_bytes_per_second{%s,kernel="copy"} 2950000000000' % label0 in lines
    assert "# TYPE gpufleet_gpu_gemm_flops_per_second gauge" in lines
    assert len([line for line in lines if line.startswith("gpufleet_gpu_gemm_flops_per_second{")]) == 3
    assert "fake_metric" not in [line.split("{")[0] for line in lines]
    code, output = promtool(text)
    assert code == 0, output
    # no gpu_compute record: no throughput family at all
    assert "gpu_gemm_flops_per_second" not in prometheus.render_samples(node())
