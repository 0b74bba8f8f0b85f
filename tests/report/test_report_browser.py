# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The demo report in headless Chromium (Debian's ``chromium``): what a reader's browser really shows.

The run is the replayed demo fleet (inventories/simulated/, validate_cluster.yml, report role included)
plus one SYNTHETIC hostile node added afterwards: the real recording
smi/gpud-nvidia-smi-q-8x-h100-535.161.08.txt with its first GPU's product name replaced, in this test, by
markup and a script tag, parsed by the real parser, under a hostname carrying markup; the fleet is then
judged again by the real checks engine and the report rendered again. Chromium then:
- loads it without a console error;
- shows, for every node, the verdict that results.json holds;
- shows the hostile strings as text only: no element they could have injected exists in the DOM;
- paints a screenshot that is not blank (PNG decoded with zlib, more than one colour).
Fails, naming the package and the set-up command, when chromium is missing (a set-up defect).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import zlib
from html.parser import HTMLParser

import pytest

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
HOSTILE_GPU = '<script>alert("gpu")</script><img src=x onerror=alert(1)>'
HOSTILE_HOST = "evil-<b>bold</b><script>alert('host')</script>"

sys.path.insert(0, os.path.join(REPO_ROOT, "tests", "tools"))

from system_programs import require_programs  # noqa: E402  pylint: disable=import-error,wrong-import-position

# Module scope: checked before the demo fleet is built.
pytestmark = pytest.mark.usefixtures("chromium_installed")


@pytest.fixture(name="chromium_installed", scope="module")
def chromium_installed_fixture():
    require_programs(["chromium"], "the browser test renders the report in it")


def _add_hostile_node_and_rejudge(results_dir):
    from gpufleet.checks.verdict import Judge  # pylint: disable=import-outside-toplevel
    from gpufleet.results.verdicts import judge_run  # pylint: disable=import-outside-toplevel
    from gpufleet.facts.gpu import build_inventory  # pylint: disable=import-outside-toplevel
    from gpufleet.parsers.registry import parse  # pylint: disable=import-outside-toplevel
    from gpufleet.results.store import RunDir  # pylint: disable=import-outside-toplevel

    with open(os.path.join(REPO_ROOT, "tests", "fixtures", "smi", "gpud-nvidia-smi-q-8x-h100-535.161.08.txt"), encoding="utf-8") as handle:
        text = handle.read().replace("NVIDIA H100 80GB HBM3", HOSTILE_GPU, 1)  # SYNTHETIC edit of a real recording
    run = RunDir.open(results_dir)
    record = run.new_host_record(HOSTILE_HOST)
    record["facts"]["gpu"] = build_inventory(text=parse("nvidia-smi-q", text))
    record["claim"] = {"gpu_model": "NVIDIA H100 80GB HBM3", "gpu_count": 8}
    record["phases"] = {"facts": {"complete": True, "finished": "2026-01-31T12:00:00Z"}}
    run.write_host(record)
    records = run.host_records()
    hosts = sorted(records)
    choices = {host: {"claim": records[host].get("claim"), "profile": None, "overrides": None, "settings": {}} for host in hosts}
    judge_run(run, hosts, set(hosts), choices, Judge())


class _Dom(HTMLParser):
    """Node rows (host, verdict) of the summary table and every element name seen."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags = []
        self.rows = []
        self._field = None
        self._row = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        classes = (attrs.get("class") or "").split()
        if tag == "tr" and "node" in classes:
            self._row = {"host": "", "verdict": "", "data": attrs.get("data-verdict"), "coverage": "", "incomplete": "",
                         "counts": None}
            self.rows.append(self._row)
        elif self._row is not None and tag == "td" and "host" in classes:
            self._field = "host"
        elif self._row is not None and tag == "span" and "verdict" in classes:
            self._field = "verdict"
        elif self._row is not None and tag == "td" and "coverage" in classes:
            self._field = "coverage"
            self._row["counts"] = tuple(int(attrs.get(key)) for key in ("data-required", "data-judged", "data-skipped"))
        elif self._row is not None and tag == "span" and "incomplete-reason" in classes:
            self._field = "incomplete"

    def handle_endtag(self, tag):
        if tag in ("td", "span"):
            self._field = None
        if tag == "tr":
            self._row = None

    def handle_data(self, data):
        if self._row is not None and self._field:
            self._row[self._field] += data


def _png_colours(path):
    """``(width, height, distinct RGB colours)`` of an 8-bit RGB/RGBA PNG (decoded with zlib, filters undone)."""
    with open(path, "rb") as handle:
        data = handle.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and colour in (2, 6), "only 8-bit RGB/RGBA decoded here"
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    previous = bytearray(stride)
    colours = set()
    for row in range(height):
        filter_type = raw[row * (stride + 1)]
        line = bytearray(raw[row * (stride + 1) + 1:(row + 1) * (stride + 1)])
        for index in range(stride):
            left = line[index - channels] if index >= channels else 0
            up = previous[index]
            upper_left = previous[index - channels] if index >= channels else 0
            if filter_type == 1:
                line[index] = (line[index] + left) & 0xFF
            elif filter_type == 2:
                line[index] = (line[index] + up) & 0xFF
            elif filter_type == 3:
                line[index] = (line[index] + (left + up) // 2) & 0xFF
            elif filter_type == 4:
                estimate = left + up - upper_left
                distances = (abs(estimate - left), abs(estimate - up), abs(estimate - upper_left))
                line[index] = (line[index] + (left, up, upper_left)[distances.index(min(distances))]) & 0xFF
        colours.update(bytes(line[column:column + 3]) for column in range(0, stride, channels))
        previous = line
    return width, height, colours


@pytest.fixture(name="demo_report", scope="module")
def demo_report_fixture(tmp_path_factory, simulated_validate_run):
    """The demo fleet validated (report role included; the run is shared), the hostile node added to a copy of its
    results, judged and rendered again."""
    base = tmp_path_factory.mktemp("demo-report")
    results_dir = base / "results"
    proc = simulated_validate_run
    # the report is written, then the run fails for the nodes not accepted (REJECT, INCOMPLETE): exit 3, a REJECT
    assert proc["rc"] == 3, proc["stdout"][-3000:] + proc["stderr"][-3000:]
    shutil.copytree(proc["results_dir"], str(results_dir))
    assert (results_dir / "report.html").exists() and (results_dir / "junit.xml").exists()  # the role ran inside the playbook
    _add_hostile_node_and_rejudge(str(results_dir))
    from gpufleet.report.render import render_report  # pylint: disable=import-outside-toplevel
    render_report(str(results_dir))
    return results_dir


def _chromium(base, *args):
    profile = base / ("chromium-profile-%d" % len(list(base.glob("chromium-profile-*"))))
    cmd = [CHROMIUM] + CHROMIUM_FLAGS + ["--user-data-dir=%s" % profile, "--enable-logging=stderr", "--v=0"] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def test_dom_shows_results_json_verdicts_and_no_injected_element(demo_report, tmp_path):
    with open(demo_report / "results.json", encoding="utf-8") as handle:
        results = json.load(handle)
    proc = _chromium(tmp_path, "--dump-dom", (demo_report / "report.html").as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if "Uncaught" in line or "ERROR:CONSOLE" in line or ":CONSOLE(" in line]
    assert console == []
    dom = _Dom()
    dom.feed(proc.stdout)
    shown = {row["host"].strip(): row["verdict"].strip() for row in dom.rows}
    expected = {host: record["verdict"] for host, record in results["hosts"].items()}
    assert HOSTILE_HOST in shown and len(expected) >= 12
    assert shown == expected
    assert all(row["data"] == row["verdict"].strip() for row in dom.rows)
    assert results["hosts"][HOSTILE_HOST]["verdict"] == "REJECT"  # judged on its GPU model against the claim
    # nothing the hostile strings carry became an element: no script, no img, no <b> holding "bold"
    assert [tag for tag, _attrs in dom.tags if tag in ("script", "img", "iframe", "object", "embed")] == []
    assert not any(attrs.get("onerror") is not None for _tag, attrs in dom.tags)
    assert "<b>bold</b>" not in proc.stdout.replace("&lt;b&gt;bold&lt;/b&gt;", "")
    text = _text_of(proc.stdout)
    assert HOSTILE_GPU in text and HOSTILE_HOST in text  # shown, as text


def test_dom_shows_coverage_and_incomplete_reasons(demo_report, tmp_path):
    with open(demo_report / "results.json", encoding="utf-8") as handle:
        results = json.load(handle)
    proc = _chromium(tmp_path, "--dump-dom", (demo_report / "report.html").as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = _Dom()
    dom.feed(proc.stdout)
    rows = {row["host"].strip(): row for row in dom.rows}
    assert "coverage" in list(_header_cells(proc.stdout))
    # every node row carries its coverage as results.json holds it
    for host, record in results["hosts"].items():
        coverage = record["coverage"]
        assert rows[host]["counts"] == (coverage["required"], coverage["judged"], coverage["skipped"]), host
    # dgx-a100-nv12 (inventories/simulated: topo -m recorded, no gpu or nic facts): 15 required items, only the
    # NVSwitch pair interconnect measured; the row names the first unverified item and its reason
    nv12 = rows["dgx-a100-nv12"]
    assert nv12["verdict"].strip() == "INCOMPLETE"
    assert nv12["coverage"].strip() == "1 of 15 required judged, 14 not verified"
    assert nv12["incomplete"].strip() == ("not verified: GPU model: not judged: gpu facts not gathered (fix: gather the "
                                          "gpu facts: gpufleet_fact_groups must include gpu)")
    # della-h100-1gpu: every required item measured
    assert rows["della-h100-1gpu"]["coverage"].strip() == "3 of 3 required judged"
    # the node's details list every reason with its fix (its host_vars gather topology only), the 8 alike NVLink
    # items folded into one
    text = _text_of(proc.stdout)
    assert ("NVLink GPU0\u20137: not judged: gpu facts not gathered (fix: gather the gpu facts: gpufleet_fact_groups "
            "must include gpu)") in text
    assert ("RDMA ports: not judged: nic facts not gathered (fix: gather the nic facts: gpufleet_fact_groups must "
            "include nic)") in text
    # its folded details say how many items were not verified, not "0 reasons"
    assert "dgx-a100-nv12 \u2014 14 not verified " in " ".join(text.split())
    assert "dgx-a100-nv12 \u2014 0 reasons" not in " ".join(text.split())


def _nic_cells(html):
    """``{host: [cell texts]}`` of the NICs table's rows (``tr.nic-row``)."""
    rows = {}

    class _Nics(HTMLParser):
        host, cell = None, None

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "tr" and "nic-row" in (attrs.get("class") or "").split():
                self.host = attrs.get("data-host")
                rows[self.host] = []
            elif tag == "td" and self.host is not None:
                self.cell = ""

        def handle_endtag(self, tag):
            if tag == "td" and self.cell is not None:
                rows[self.host].append(self.cell.strip())
                self.cell = None
            elif tag == "tr":
                self.host = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell += data

    _Nics(convert_charrefs=True).feed(html)
    return rows


def test_dom_shows_not_measured_where_a_figure_is_missing(demo_report, tmp_path):
    """A figure never measured reads "not measured" with why, never 0: dgx-a100-nv12 (inventories/simulated: its
    host_vars ask for the topology group only) has no NIC facts; frontend-1g-copper's were gathered (its sysfs tree,
    tests/fixtures/sysfs/node-exporter-1g-copper: eth0 operstate up and lo unknown, no RDMA device): 2 interfaces, 1
    up, and its zeros of RDMA ports are measured ones."""
    proc = _chromium(tmp_path, "--dump-dom", (demo_report / "report.html").as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    nics = _nic_cells(proc.stdout)
    assert nics["dgx-a100-nv12"][1] == "not measured: nic facts not gathered", nics["dgx-a100-nv12"]
    assert len(nics["dgx-a100-nv12"]) == 4  # node, the one cell in place of four counts, claimed, measured
    assert nics["frontend-1g-copper"][1:5] == ["2", "1", "0", "0"], nics["frontend-1g-copper"]
    assert "0" not in nics["dgx-a100-nv12"]
    # and each node not accepted names what to do next (gpufleet/report/next_steps.py)
    text = " ".join(_text_of(proc.stdout).split())
    assert ("next step: dispute it with its evidence: gpufleet bundle %s frontend-1g-copper; after the seller's "
            "fix: gpufleet validate -i INVENTORY --retest-failed %s --out NEW_DIR" % (demo_report, demo_report)) in text


def _svg_texts(html, label):
    """The text (``<text>`` and ``<title>``) inside each ``<svg aria-label=label>`` of the DOM, one string per svg."""
    found = []

    class _Svg(HTMLParser):
        inside = False

        def handle_starttag(self, tag, attrs):
            if tag == "svg" and dict(attrs).get("aria-label") == label:
                self.inside = True
                found.append("")

        def handle_endtag(self, tag):
            if tag == "svg":
                self.inside = False

        def handle_data(self, data):
            if self.inside:
                found[-1] += data + "\n"

    _Svg(convert_charrefs=True).feed(html)
    return found


def test_dom_draws_the_recorded_benchmark_chart(demo_report, tmp_path):
    proc = _chromium(tmp_path, "--dump-dom", (demo_report / "report.html").as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    # hgx-h100-rdma-down replays nccl/h100-8gpu-1node-nvls-allreduce-128M-4G-issue290.txt: out-of-place busbw 473.60
    # GB/s at 4294967296 B; profile hgx-h100-8 floor 460 GB/s. The only node with a single-node all-reduce: one bar.
    [chart] = _svg_texts(proc.stdout, "single-node all-reduce busbw per node")
    texts = [line.strip() for line in chart.split("\n") if line.strip()]
    assert texts[:3] == ["hgx-h100-rdma-down", "hgx-h100-rdma-down: 473.6 GB/s, floor 460.0 GB/s", "473.6 GB/s"]
    assert "floor 460.0 GB/s" in chart
    # hgx-h100-nv18 starts the two-node run (recording
    # nccl/h100-2node-16rank-ndr-ib-allreduce-srun-prefix-validation0-issue290.txt): 16 ranks, out-of-place busbw
    # 155.57 GB/s at 8 GiB, below the two-node floor 440 GB/s
    assert ('<tr class="multi-run" data-first-host="hgx-h100-nv18">'
            '<td class="mono">hgx-h100-nv18, hgx-h100-rdma-down</td><td class="num">2</td><td class="num">16</td>'
            '<td>8 GiB</td><td class="num">155.57 GB/s</td><td class="num">440 GB/s</td><td>fail</td></tr>'
            ) in proc.stdout


def _header_cells(html):
    cells = []

    class _Headers(HTMLParser):
        inside = False

        def handle_starttag(self, tag, attrs):
            self.inside = tag == "th"

        def handle_data(self, data):
            if self.inside:
                cells.append(data.strip())

    _Headers(convert_charrefs=True).feed(html)
    return cells


def _text_of(html):
    parser = HTMLParser(convert_charrefs=True)
    parts = []
    parser.handle_data = parts.append
    parser.feed(html)
    return "".join(parts)


def test_screenshot_is_not_blank(demo_report, tmp_path):
    shot = tmp_path / "report.png"
    proc = _chromium(tmp_path, "--screenshot=%s" % shot, "--window-size=1280,900", (demo_report / "report.html").as_uri())
    assert proc.returncode == 0 and shot.exists(), proc.stderr[-2000:]
    width, height, colours = _png_colours(str(shot))
    assert (width, height) == (1280, 900)
    assert len(colours) > 8  # text, badges and table lines in several colours; a blank page has one
    # the REJECT colour (#b3261e: banner edge and badges) is painted, give or take colour management
    assert any(abs(colour[0] - 0xB3) <= 8 and abs(colour[1] - 0x26) <= 8 and abs(colour[2] - 0x1E) <= 8 for colour in colours)


def _table_rows(html, row_class):
    """The text of each cell of every ``<tr class=row_class>`` in the DOM: ``[[cell text, ...], ...]``."""
    rows = []

    class _Rows(HTMLParser):
        row = None
        cell = None

        def handle_starttag(self, tag, attrs):
            if tag == "tr" and row_class in (dict(attrs).get("class") or "").split():
                self.row = []
                rows.append(self.row)
            elif tag == "td" and self.row is not None:
                self.cell = []
                self.row.append(self.cell)

        def handle_endtag(self, tag):
            if tag == "tr":
                self.row = None
            elif tag == "td":
                self.cell = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell.append(data)

    _Rows(convert_charrefs=True).feed(html)
    return [[" ".join(" ".join(cell).split()) for cell in row] for row in rows]


def test_dom_shows_the_cost_view_offers_and_never_ranks_a_rejected_node(demo_report, tmp_path):
    with open(demo_report / "results.json", encoding="utf-8") as handle:
        results = json.load(handle)
    cost = results["cost_to_train"]
    proc = _chromium(tmp_path, "--dump-dom", (demo_report / "report.html").as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    offers = _table_rows(proc.stdout, "cost-row")
    # ranked as results.json ranks them: the NVLink H100 offer first (cheapest 70B), then the same GPUs over PCIe
    assert [row[2] for row in offers] == [", ".join(offer["hosts"]) for offer in cost["offers"]]
    assert [row[2] for row in offers][:2] == ["hgx-h100-offer-nvlink", "h100-offer-pcie-only"]
    # each cell shows the chosen layout, the memory per GPU and the communication share of the step
    seventy = cost["offers"][0]["estimates"][1]
    layout = tuple(seventy["parallelism"][key] for key in ("tp", "pp", "dp"))
    assert "tp %d \u00b7 pp %d \u00b7 dp %d" % layout in offers[0][6]
    assert "%.1f GB per GPU, %.1f %% communication" % (
        seventy["memory_per_gpu_gb"], 100 * seventy["communication_share"]) in offers[0][6]
    assert offers[0][-1].startswith("assumed: GEMM rate per GPU")
    # every node not accepted is listed apart with its verdict, none is an offer
    apart = {row[0]: row[1] for row in _table_rows(proc.stdout, "not-offer")}
    not_accepted = {host: record["verdict"] for host, record in results["hosts"].items()
                    if record["verdict"] not in ("ACCEPT", "ACCEPT WITH WARNINGS")}
    assert apart == not_accepted and HOSTILE_HOST in apart
    assert not set(apart) & {host for offer in cost["offers"] for host in offer["hosts"]}
