# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A report of more nodes than a page holds: report.html with the fleet's sections and the first nodes' tables, and
report-nodes-NNN.html with the rest (render.py NODES_PER_PAGE), every node on exactly one page."""

from __future__ import annotations

import os
import re

from gpufleet.report import render
from gpufleet.report.render import node_pages, render_report

ROW = re.compile(r'<tr class="node" id="row-([^"]+)" data-verdict="([^"]+)">\n<td class="host mono"><a href="#([^"]+)">'
                 r'([^<]+)</a>')


def test_pages_of_five_nodes_two_a_page():
    assert node_pages(5, 2) == [{"index": 1, "file": "report.html", "first": 1, "last": 2},
                                {"index": 2, "file": "report-nodes-002.html", "first": 3, "last": 4},
                                {"index": 3, "file": "report-nodes-003.html", "first": 5, "last": 5}]
    assert [page["last"] for page in node_pages(4, 2)] == [2, 4] and len(node_pages(2, 2)) == 1


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_four_nodes_two_a_page_each_once_failing_first(small_run, monkeypatch):
    monkeypatch.setattr(render, "NODES_PER_PAGE", 2)
    outcome = render_report(small_run, formats=("html",))
    assert outcome["files"]["html"] == os.path.join(small_run, "report.html")
    first = _read(os.path.join(small_run, "report.html"))
    second = _read(os.path.join(small_run, "report-nodes-002.html"))
    assert not os.path.exists(os.path.join(small_run, "report-nodes-003.html"))
    # conftest.py: bravo REJECT and delta UNREACHABLE fail (a REJECT first); charlie ACCEPT WITH WARNINGS and alpha
    # ACCEPT pass
    rows = [[(match.group(4), match.group(2)) for match in ROW.finditer(page)] for page in (first, second)]
    assert rows == [[("bravo", "REJECT"), ("delta", "UNREACHABLE")], [("charlie", "ACCEPT WITH WARNINGS"),
                                                                      ("alpha", "ACCEPT")]]
    for page in (first, second):
        # each row's link finds the node's folded reasons on the same page, and its NIC row is there too
        for match in ROW.finditer(page):
            assert page.count('<details class="node-detail" id="%s">' % match.group(3)) == 1
            assert page.count('<tr class="nic-row" data-host="%s">' % match.group(4)) == 1
        assert page.count('<details class="node-detail"') == 2 and page.count('class="nic-row"') == 2
    # the fleet's sections are on report.html only; each page names the other
    assert 'id="fleet-verdict"' in first and 'id="topology"' in first and 'id="cost"' in first
    assert 'id="fleet-verdict"' not in second and 'id="topology"' not in second and 'id="cost"' not in second
    assert ('Nodes 1&#8211;2 of 4 (failing first) on this page. All pages: <b>1&#8211;2</b> · '
            '<a href="report-nodes-002.html">3&#8211;4</a>') in first
    assert ('Nodes 3&#8211;4 of 4 (failing first) on this page. All pages: <a href="report.html">1&#8211;2</a> · '
            '<b>3&#8211;4</b>') in second
    assert '<a href="report.html">report.html</a>' in second and "<title>" in second and "<style>" in second


def test_a_later_render_on_one_page_removes_the_pages_of_an_earlier_one(small_run, monkeypatch):
    monkeypatch.setattr(render, "NODES_PER_PAGE", 1)
    render_report(small_run, formats=("html",))
    assert sorted(name for name in os.listdir(small_run) if name.startswith("report")) == [
        "report-nodes-002.html", "report-nodes-003.html", "report-nodes-004.html", "report.html"]
    with open(os.path.join(small_run, "report-nodes-notes.txt"), "w", encoding="utf-8") as handle:
        handle.write("an operator's file, not a page")
    monkeypatch.setattr(render, "NODES_PER_PAGE", 500)
    render_report(small_run, formats=("html",))
    assert sorted(name for name in os.listdir(small_run) if name.startswith("report")) == [
        "report-nodes-notes.txt", "report.html"]
    html = _read(os.path.join(small_run, "report.html"))
    assert "pager" not in html and len(ROW.findall(html)) == 4


def test_a_pages_gpu_values_and_not_offers_are_its_own_nodes(small_run, monkeypatch):
    monkeypatch.setattr(render, "NODES_PER_PAGE", 1)
    render_report(small_run, formats=("html",))
    pages = [_read(os.path.join(small_run, name)) for name in
             ("report.html", "report-nodes-002.html", "report-nodes-003.html", "report-nodes-004.html")]
    # one node a page, failing first: bravo (its GPU3's VBIOS unlike the others', conftest.py), delta, charlie, alpha
    assert [ROW.search(page).group(4) for page in pages] == ["bravo", "delta", "charlie", "alpha"]
    flagged = re.compile(r'<tr><td class="mono">([^<]+)</td><td class="num">([^<]+)</td><td class="mono">([^<]+)</td>')
    assert flagged.findall(pages[0].split('id="gpu-flagged"', 1)[1].split("</table>", 1)[0]) == [
        ("bravo", "3", "vbios_version")]
    # the priced nodes not accepted (bravo REJECT, delta UNREACHABLE), each on its own page; charlie and alpha none
    not_offer = re.compile(r'<tr class="not-offer"><td class="mono">([^<]+)</td><td>([^<]+)</td>')
    assert [not_offer.findall(page) for page in pages] == [[("bravo", "REJECT")], [("delta", "UNREACHABLE")], [], []]
    # a later page shows those sections only when its nodes have rows there
    assert 'id="gpus"' not in pages[1] and 'id="cost-not-offers"' in pages[1] and 'href="report.html#cost"' in pages[1]
    assert 'id="gpus"' not in pages[2] and 'id="cost"' not in pages[2]
