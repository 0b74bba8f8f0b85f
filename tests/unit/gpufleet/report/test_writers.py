# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report/writers.py and render.py's copy: a large report made by this process and copies of it is, byte for byte,
the report one process makes, whichever copy ends early, and its failures are named alike.

The runs are conftest.py's hand-built ones; ``shared`` lowers the thresholds so that
their few nodes are written as 10,000 are, a page a node (render.py NODES_PER_PAGE)."""

from __future__ import annotations

import os

import pytest

from gpufleet.report import beside, model, render, writers
from gpufleet.report.beside import Beside
from gpufleet.report.model import ReportError, load_results
from gpufleet.report.render import render_report
from gpufleet.results.store import RunDir

pytestmark = pytest.mark.skipif(not beside.sys.platform.startswith("linux"), reason="the copies fork on Linux alone")
NOW = "2026-12-07T00:00:00Z"


def files_of(folder):
    return {name: (folder / name).read_bytes() for name in sorted(os.listdir(str(folder)))}


@pytest.fixture(name="one_page_a_node")
def one_page_a_node_fixture(monkeypatch):
    monkeypatch.setattr(render, "utc_now", lambda: NOW)
    monkeypatch.setattr(render, "NODES_PER_PAGE", 1)


@pytest.fixture(name="alone")
def alone_fixture(views_run, tmp_path, one_page_a_node):
    """The report of ``views_run`` as one process writes it: what the shared ones are held to."""
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(render, "can_fork", lambda: False)
        patched.setattr(writers, "can_fork", lambda: False)
        render_report(views_run, output_dir=str(tmp_path / "alone"))
    # seven nodes, a page each
    assert sorted(name for name in os.listdir(str(tmp_path / "alone")) if name.startswith("report-nodes-")) == [
        "report-nodes-%03d.html" % page for page in range(2, 8)]
    return files_of(tmp_path / "alone")


@pytest.fixture(name="shared")
def shared_fixture(monkeypatch, one_page_a_node):
    """The files of even a few nodes written by this process and two copies (writers.py)."""
    monkeypatch.setattr(writers, "BESIDE_NODES", 1)
    monkeypatch.setattr(writers, "can_fork", lambda: True)


@pytest.fixture(name="apart")
def apart_fixture(monkeypatch, one_page_a_node):
    """The report of even a few nodes made in a copy of this process (render.py APART_NODES)."""
    monkeypatch.setattr(render, "APART_NODES", 1)
    monkeypatch.setattr(render, "can_fork", lambda: True)


def in_a_copy(here, then, otherwise):
    """``then`` in a copy of this process (``here`` is its pid), else ``otherwise``."""
    def chosen(*args, **kwargs):
        return (then if os.getpid() != here else otherwise)(*args, **kwargs)
    return chosen


def dies(*_args, **_kwargs):
    os._exit(9)  # pylint: disable=protected-access


def test_files_written_shared_are_those_one_process_writes(views_run, tmp_path, alone, shared):
    outcome = render_report(views_run, output_dir=str(tmp_path / "shared"))
    assert list(outcome["files"]) == list(render.FORMATS)
    assert files_of(tmp_path / "shared") == alone


def test_the_views_results_json_keeps_are_made_once_before_the_copies(
        views_run, tmp_path, alone, shared, monkeypatch):
    """The cost and throughput views are made here before the copy that writes results.json starts: it reads them, as
    the model does, and neither makes them again."""
    made = tmp_path / "made"
    real = model.document_views

    def recording(*args, **kwargs):
        with open(str(made), "a", encoding="utf-8") as handle:
            handle.write("%d\n" % os.getpid())
        return real(*args, **kwargs)

    monkeypatch.setattr(render, "document_views", recording)
    monkeypatch.setattr(model, "document_views", recording)
    render_report(views_run, output_dir=str(tmp_path / "shared"))
    assert made.read_text(encoding="utf-8").split() == [str(os.getpid())]
    assert files_of(tmp_path / "shared") == alone


def test_files_of_copies_that_die_are_written_here(views_run, tmp_path, alone, shared, monkeypatch):
    """Both copies end before writing anything (the second before it takes a page): all is done here."""
    monkeypatch.setattr(writers, "write_each", in_a_copy(os.getpid(), dies, writers.write_each))
    render_report(views_run, output_dir=str(tmp_path / "shared"))
    assert files_of(tmp_path / "shared") == alone


def test_a_page_a_dead_copy_staged_is_rendered_here_and_its_file_removed(
        views_run, tmp_path, alone, shared, monkeypatch):
    """The second copy stages one page (written under a temporary name) and ends without saying so: the page is
    rendered here again, and the copy's file is not left in the output directory."""
    stage = writers._stage_pages  # pylint: disable=protected-access

    def stages_one_and_dies(maker, indexes):
        assert len(stage(maker, [next(iter(indexes))])) == 1
        dies()

    monkeypatch.setattr(writers, "_stage_pages", in_a_copy(os.getpid(), stages_one_and_dies, stage))
    render_report(views_run, output_dir=str(tmp_path / "shared"))
    assert files_of(tmp_path / "shared") == alone  # no temporary file among them


@pytest.mark.parametrize("failing_page", [0, 5])
def test_a_page_that_cannot_be_rendered_leaves_the_pages_there_as_they_were(views_run, tmp_path, shared, monkeypatch,
                                                                            failing_page):
    out = tmp_path / "shared"
    render_report(views_run, output_dir=str(out))
    before = files_of(out)
    render_one = render.HtmlPages.render

    def fails_on_one(pages, index):
        if index == failing_page:
            raise ValueError("template broke on page %d" % index)
        return render_one(pages, index)

    monkeypatch.setattr(render.HtmlPages, "render", fails_on_one)
    with pytest.raises(ReportError) as raised:
        render_report(views_run, output_dir=str(out))
    assert str(raised.value) == ("not written: report.html: ValueError: template broke on page %d; written: report.md, "
                                 "results.json, junit.xml" % failing_page)
    after = files_of(out)
    assert {name: after[name] for name in after if name.endswith(".html")} == {
        name: before[name] for name in before if name.endswith(".html")}
    assert sorted(after) == sorted(before)  # no page staged by either process left under a temporary name


def test_a_page_one_process_cannot_render_leaves_the_pages_there_as_they_were(
        views_run, tmp_path, one_page_a_node, monkeypatch):
    monkeypatch.setattr(render, "can_fork", lambda: False)
    monkeypatch.setattr(writers, "can_fork", lambda: False)
    out = tmp_path / "alone"
    render_report(views_run, output_dir=str(out))
    before = files_of(out)
    render_one = render.HtmlPages.render

    def fails_on_the_fifth(pages, index):
        if index == 4:
            raise ValueError("template broke on page 4")
        return render_one(pages, index)

    monkeypatch.setattr(render.HtmlPages, "render", fails_on_the_fifth)
    with pytest.raises(ReportError, match="^not written: report.html: ValueError: template broke on page 4;"):
        render_report(views_run, output_dir=str(out))
    after = files_of(out)
    assert {name: after[name] for name in after if name.endswith(".html")} == {
        name: before[name] for name in before if name.endswith(".html")}
    assert sorted(after) == sorted(before)  # the four pages staged before it are not left under a temporary name


def test_a_file_a_copy_cannot_write_is_named_in_order(small_run, tmp_path, shared):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.json").mkdir()  # a directory where results.json goes: it cannot be replaced
    with pytest.raises(ReportError) as raised:
        render_report(small_run, output_dir=str(tmp_path / "out"))
    assert str(raised.value).startswith("not written: results.json: ")
    assert str(raised.value).endswith("; written: report.html, report.md, junit.xml")


def test_a_report_made_apart_is_the_report_made_here(views_run, tmp_path, alone, apart):
    outcome = render_report(views_run, output_dir=str(tmp_path / "apart"))
    assert files_of(tmp_path / "apart") == alone
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(render, "can_fork", lambda: False)
        here = render_report(views_run, output_dir=str(tmp_path / "here"))
    assert here["files"] == {name: str(tmp_path / "here" / os.path.basename(path))
                             for name, path in outcome["files"].items()}
    assert dict(here, files=None) == dict(outcome, files=None)


def test_the_copys_report_error_is_the_callers(small_run, tmp_path, apart):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "junit.xml").mkdir()
    with pytest.raises(ReportError) as raised:
        render_report(small_run, output_dir=str(tmp_path / "out"))
    assert str(raised.value).startswith("not written: junit.xml: ")
    assert str(raised.value).endswith("; written: report.html, report.md, results.json")


def test_a_report_whose_copy_dies_is_made_here(views_run, tmp_path, alone, apart, monkeypatch):
    monkeypatch.setattr(render, "_render", in_a_copy(os.getpid(), dies, render._render))
    render_report(views_run, output_dir=str(tmp_path / "apart"))
    assert files_of(tmp_path / "apart") == alone


@pytest.mark.skipif(not beside.can_fork(), reason="no second CPU here: the report is made alone")
def test_a_thousand_nodes_are_made_with_copies_by_default(small_run, tmp_path, monkeypatch):
    """The shipped thresholds, nothing overridden: 1,000 nodes (small_run's four records, each cloned 250 times) are
    made in a copy of this process, which reads the second share of the records in a copy of its own, and has
    results.json and junit.xml written by another, report.md and HTML pages by a third. The files are those of one
    process."""
    run = RunDir.open(small_run)
    records = list(load_results(small_run)["hosts"].values())
    for number in range(1000):
        run.write_host(dict(records[number % 4], host="n%04d" % number))
    for record in records:
        os.remove(run.host_file(record["host"]))
    monkeypatch.setattr(render, "utc_now", lambda: NOW)
    made = tmp_path / "copies-made"
    start = Beside.__init__

    def noted(self, work):
        with open(str(made), "a", encoding="utf-8") as note:  # from whichever process makes the copy
            note.write("%d %s\n" % (os.getpid(), work.func.__name__))
        start(self, work)

    monkeypatch.setattr(Beside, "__init__", noted)
    render_report(small_run, output_dir=str(tmp_path / "shared"))
    lines = [line.split() for line in made.read_text(encoding="utf-8").splitlines()]
    assert lines[0] == [str(os.getpid()), "_caught"]
    # all three made by the one copy the report was made in
    assert len({pid for pid, _name in lines[1:]} - {str(os.getpid())}) == 1
    assert sorted(name for _pid, name in lines[1:]) == ["_late_copy", "read_sent", "write_each"]
    with monkeypatch.context() as alone:
        alone.setattr(render, "can_fork", lambda: False)
        alone.setattr(writers, "can_fork", lambda: False)
        alone.setattr("gpufleet.report.digest.can_fork", lambda: False)
        render_report(small_run, output_dir=str(tmp_path / "alone"))
    assert len(made.read_text(encoding="utf-8").splitlines()) == 4
    assert files_of(tmp_path / "shared") == files_of(tmp_path / "alone")
