# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render a run's results directory into report.html, report.md, results.json and junit.xml.

Controller side, re-renderable at any time from the directory alone (nothing is run)::

    render_report("results/20260131T120000Z")   # writes the four files into that directory

- ``report.html``: one self-contained file (inline CSS and SVG, no script, no external asset),
  from ``gpufleet/report/templates/report.html.j2`` in a Jinja2 environment that autoescapes
  HTML (every node string is escaped once; the templates never mark one safe); past NODES_PER_PAGE nodes it holds
  the per-node tables of the first of them, and ``report-nodes-002.html``, ... (``report_nodes.html.j2``, each
  self-contained) those of the rest, NODES_PER_PAGE a page;
- ``report.md``: the summary in Markdown (``report.md.j2``); every value printed is passed
  through :func:`md_escape` by the environment's ``finalize``, so Markdown and HTML
  metacharacters from a node are shown, never interpreted;
- in both, control and bidi characters from a node (terminal escape sequences, U+202E, NUL) are
  shown as ``\\x1b``-style escapes (gpufleet/text.py), never passed on raw nor dropped;
- ``results.json``: the run as one document (schema ``gpufleet.results/v2``: run, fleet, the hosts without their
  readings, each value of a check once: gpufleet/results/compact.py);
- ``junit.xml``: one testcase per node x check (``classname`` = node), fail -> ``<failure>``,
  skip -> ``<skipped>``, error -> ``<error>``; an unreachable node is one failed testcase; each
  required item not verified is an ``evidence.<item>`` testcase ``<skipped>`` with its reason, and an
  INCOMPLETE node one failed ``node.evidence`` testcase (junit.py).

Each host record is read once (report/digest.py): its row, its results.json entry and its junit.xml testsuite are made
as it is read, and of the rest only what the fleet-wide views read is kept, so a 10,000-node run is never in memory
whole. Every file is written atomically (gpufleet.results.store.write_bytes_atomic). Past APART_NODES nodes the report
is made in a copy of this process, and past writers.py's BESIDE_NODES its files are written by this process and copies
of it meanwhile (report/writers.py), the same files either way.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import re
from typing import Any, Callable, Iterator, Sequence, cast

from gpufleet.report.beside import Beside, BesideError, can_fork
from gpufleet.report.cost import ReferenceJobError, validate_job
from gpufleet.report.digest import Digest, digest_run
from gpufleet.report.junit import junit_document
from gpufleet.report.model import (ReportError, build_model, document_views, load_profile_thresholds, load_run,
                                   results_document)
from gpufleet.report.templating import html_environment, markdown_environment
from gpufleet.report.writers import FILE_NAMES, FORMATS, Page, Staged, Writing, commit_every_page
from gpufleet.results.store import (RunDir, commit_staged, discard_staged, staged_write, utc_now,
                                    write_bytes_atomic, write_text_atomic)

__all__ = ["FILE_NAMES", "FORMATS", "ReportError", "node_pages", "render_html", "render_html_pages", "render_markdown",
           "render_report"]


def render_html(model: dict[str, Any], templates_dir: str | None = None) -> str:
    return html_environment(templates_dir).get_template("report.html.j2").render(report=model)


# Past this many nodes report.html holds the first of them (failing first) and further pages the rest: a page's
# per-node tables cost a browser about 1 ms a node to load, its folded reasons most (docs/performance.md).
NODES_PER_PAGE = 500
NODE_PAGE_FILE = "report-nodes-%03d.html"
NODE_PAGE_NAME = re.compile(r"^report-nodes-[0-9]{3,}\.html$")


def node_pages(total: int, page_size: int = NODES_PER_PAGE) -> list[dict[str, Any]]:
    """The pages of ``total`` nodes: ``index`` (1-based), ``file``, ``first`` and ``last`` node (1-based)."""
    return [{"index": number, "file": "report.html" if number == 1 else NODE_PAGE_FILE % number,
             "first": first + 1, "last": min(first + page_size, total)}
            for number, first in enumerate(range(0, total, page_size), start=1)]


class HtmlPages:
    """report.html alone up to ``page_size`` nodes; past it report.html with the fleet's sections and the per-node rows
    of the first ``page_size`` nodes, and one further page per ``page_size`` more (_page_view: which rows are a
    node's). Each page is rendered on its own (:meth:`render`), by whichever process takes it (writers.py)."""

    def __init__(self, model: dict[str, Any], templates_dir: str | None = None,
                 page_size: int = NODES_PER_PAGE) -> None:
        self.model = model
        self.environment = html_environment(templates_dir)
        nodes = model["nodes"]
        self.pages = node_pages(len(nodes), page_size) if len(nodes) > page_size else []

    def __len__(self) -> int:
        return len(self.pages) or 1

    def render(self, index: int) -> Page:
        """``(file name, HTML)`` of page ``index`` (0: report.html)."""
        if not self.pages:
            return "report.html", self.environment.get_template("report.html.j2").render(report=self.model)
        page = self.pages[index]
        view = _page_view(self.model, self.model["nodes"][page["first"] - 1:page["last"]])
        view["pager"] = {"pages": self.pages, "current": page["index"], "total": len(self.model["nodes"])}
        template = "report.html.j2" if page["index"] == 1 else "report_nodes.html.j2"
        return page["file"], self.environment.get_template(template).render(report=view)


def render_html_pages(model: dict[str, Any], templates_dir: str | None = None,
                      page_size: int = NODES_PER_PAGE) -> list[Page]:
    """``[(file name, HTML)]`` of every page (:class:`HtmlPages`)."""
    pages = HtmlPages(model, templates_dir, page_size)
    return [pages.render(index) for index in range(len(pages))]


def _page_view(model: dict[str, Any], nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """The model for a page of ``nodes``: its per-node rows (node tables, GPU values unlike the majority, priced nodes
    that are not offers) of those nodes only."""
    hosts = {node["host"] for node in nodes}
    view = dict(model, nodes=nodes, gpu_flagged=[row for row in model["gpu_flagged"] if row["host"] in hosts])
    if model.get("cost") is not None:
        not_offers = [row for row in model["cost"]["not_offers"] if row["host"] in hosts]
        view["cost"] = dict(model["cost"], not_offers=not_offers)
    return view


def commit_html_pages(path: str, staged: list[Staged]) -> None:
    """The pages staged (``(temporary file, path)``, store.py ``staged_write``) put in place: report.html at ``path``
    and the further pages beside it; a page an earlier, longer render left is removed."""
    commit_staged(staged)
    written = {os.path.basename(page) for _tmp, page in staged}
    folder = os.path.dirname(path)
    for name in os.listdir(folder):
        if NODE_PAGE_NAME.match(name) and name not in written:
            os.remove(os.path.join(folder, name))


# a page staged and not put in place (store.py staged_write's temporary name)
STAGED_PAGE_NAME = re.compile(r"^\.report(-nodes-[0-9]{3,})?\.html\..+\.tmp$")


def render_markdown(model: dict[str, Any], templates_dir: str | None = None) -> str:
    return markdown_environment(templates_dir).get_template("report.md.j2").render(report=model)


class ReportFiles:
    """How each of a render's files is made, and where it goes (writers.py ``FileMaker``): from the pass over the
    records (``digest``) and, once it is set, the render ``model``."""

    def __init__(self, out: str, results: dict[str, Any], digest: Digest, templates_dir: str | None,
                 views: dict[str, Any]) -> None:
        self.out, self.results, self.digest, self.templates_dir = out, results, digest, templates_dir
        # the views results.json keeps (model.py document_views), made before the copies that write it are
        self.views = views
        self.unmade = digest.failed
        self.generated = utc_now()
        self.model: dict[str, Any] = {}
        self._pages: HtmlPages | None = None

    def path(self, name: str) -> str:
        return os.path.join(self.out, FILE_NAMES[name])

    def write(self, name: str) -> None:
        if name == "html":
            commit_every_page(self, self.page_count())
        elif name == "md":
            write_text_atomic(self.path(name), render_markdown(self.model, self.templates_dir))
        elif name == "json":
            self._write_json()
        elif self.digest.spool is None:
            raise RuntimeError("the pass over the host records kept no testsuites for it")
        else:
            write_bytes_atomic(self.path(name), junit_document(self.results, self.digest.spool.totals(),
                                                               self.digest.spool.suites()))

    def _write_json(self) -> None:
        # written before the model is built where it is shared (writers.py EARLY_FORMATS): its views made already
        document = results_document(self.results, generated=self.generated, model=self.views,
                                    compacted=self.digest.compacted())
        # compact: without indent json uses its C encoder (1,024 nodes: 0.3 s instead of 1.5 s, 31 MB instead of 44 MB)
        text = json.dumps(document, sort_keys=True, default=str, separators=(",", ":")) + "\n"
        write_bytes_atomic(self.path("json"), text.encode("utf-8"))

    def html_pages(self) -> HtmlPages:
        if self._pages is None:
            self._pages = HtmlPages(self.model, self.templates_dir, NODES_PER_PAGE)
        return self._pages

    def page_count(self) -> int:
        return len(self.html_pages())

    def stage_page(self, index: int) -> Staged:
        name, text = self.html_pages().render(index)
        path = os.path.join(self.out, name)
        return staged_write(path, text.encode("utf-8", "backslashreplace")), path

    def commit_pages(self, staged: list[Staged]) -> None:
        commit_html_pages(self.path("html"), staged)

    def discard_pages(self, staged: list[Staged] | None) -> None:
        """``staged`` removed; None: every page staged in the output directory and not put in place (a copy's that
        ended without saying which it staged)."""
        if staged is None:
            staged = [(os.path.join(self.out, name), "") for name in os.listdir(self.out)
                      if STAGED_PAGE_NAME.match(name)]
        discard_staged(staged)


@contextlib.contextmanager
def _long_lived() -> Iterator[Callable[[], None]]:
    """The records and the model stay until the last file is written: no cyclic collection while they are read in,
    and none over them once ``settled()`` is called (gc.freeze), only over what each file's rendering makes. Each full
    collection walked every object read so far: 40 % of loading 2,000 nodes' records, and more at 10,000. After the
    block, the frozen objects are the collector's again."""
    enabled = gc.isenabled()
    gc.disable()

    def settled() -> None:
        gc.freeze()
        if enabled:
            gc.enable()

    try:
        yield settled
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


def render_report(results_dir: str, output_dir: str | None = None, formats: Sequence[str] = FORMATS,
                  profiles_dir: str | None = None, title: str | None = None, templates_dir: str | None = None,
                  reference_job: Any = None) -> dict[str, Any]:
    """Render ``results_dir`` into ``output_dir`` (default: the results directory itself); ``reference_job``: the cost
    view's job (report/cost.py ``validate_job``; ReportError when invalid), else run.json ``settings.reference_job``.

    Returns ``{"files": {format: path}, "verdict", "counts", "nodes", "failing"}``. ReportError
    when the directory is not a gpufleet results directory or a format is unknown, and after the other
    files are written when one could not be (naming it and what was written): one file's failure never
    costs the others, results.json included. A node whose data breaks its row is shown with the error
    on its row (nodes.py `node_row`); every other node renders.
    """
    unknown = [name for name in formats if name not in FORMATS]
    if unknown:
        raise ReportError("unknown report format(s) %s (known: %s)" % (", ".join(unknown), ", ".join(FORMATS)))
    if reference_job is not None:
        try:
            validate_job(reference_job)
        except ReferenceJobError as exc:
            raise ReportError(str(exc)) from None
    results = load_run(results_dir)
    out = os.path.abspath(output_dir or results["path"])
    os.makedirs(out, exist_ok=True)
    render = functools.partial(_render, results, out, formats, profiles_dir, title, templates_dir, reference_job)
    if len(RunDir.open(results["path"]).host_files()) < APART_NODES or not can_fork():
        return _summary(render([]))
    return _summary(_apart(render))


# Past this many nodes the report is made in a copy of this process (beside.py), which ends without letting go of
# what it read one object at a time: at 10,000 nodes that took half a second, after the last file was written.
APART_NODES = 1000
# what :func:`_render` returns: the files written (format -> path), and the fleet's part of the model the caller is told
Rendered = tuple[dict[str, str], dict[str, Any]]


def _apart(render: Callable[[list[Any]], Rendered]) -> Rendered:
    """``render()`` in a copy of this process; here again when the copy ends without a result (it was killed, or
    failed otherwise than with a ReportError: here it fails as it would have, its traceback whole)."""
    copy = Beside(functools.partial(_caught, render))
    try:
        answer = copy.result()
    except BesideError:
        return render([])
    except BaseException:
        copy.stop()
        raise
    if "report_error" in answer:
        raise ReportError(answer["report_error"])
    return cast(Rendered, answer["rendered"])


def _caught(render: Callable[[list[Any]], Rendered]) -> dict[str, Any]:
    """In the copy: what ``render`` returned, or the ReportError it raised; what it made is held till the copy ends."""
    held: list[Any] = []
    _HELD_TILL_THE_END.append(held)
    try:
        return {"rendered": render(held)}
    except ReportError as exc:
        return {"report_error": str(exc)}


# what a copy's render made (_caught): let go by the copy's end, at once, not object by object
_HELD_TILL_THE_END: list[Any] = []


def _render(results: dict[str, Any], out: str, formats: Sequence[str], profiles_dir: str | None, title: str | None,
            templates_dir: str | None, reference_job: Any, held: list[Any]) -> Rendered:
    """The files written, and ``fleet`` and ``failing`` of the model; ReportError naming what was not written.
    ``held``: what the render made (the records' rows, the model), let go by whoever holds the list."""
    with _long_lived() as settled:
        # each host record read once, and only what the report shows of it kept (report/digest.py)
        digest = digest_run(results, formats, out)
        # made once, here, before a copy that writes results.json is started: that copy reads them as the model does
        views = document_views(results, reference_job)
        maker = ReportFiles(out, results, digest, templates_dir, views)
        held.append(maker)
        writing = Writing(maker, formats, len(digest.rows))
        try:
            writing.start_early()
            model = maker.model = build_model(results, profiles=load_profile_thresholds(profiles_dir), title=title,
                                              job=reference_job, rows=digest.rows, views=views)
            settled()
            model["generated"] = maker.generated
            outcome = writing.finish()
        finally:
            writing.stop()
            digest.close()
    files = {name: maker.path(name) for name, why in outcome.items() if why is None}
    failed = ["%s: %s" % (FILE_NAMES[name], why) for name, why in outcome.items() if why is not None]
    if failed:
        raise ReportError("not written: %s; written: %s" % ("; ".join(failed), ", ".join(
            FILE_NAMES[name] for name in files) or "nothing"))
    return files, {"fleet": model["fleet"], "failing": [node["host"] for node in model["failing"]]}


def _summary(rendered: Rendered) -> dict[str, Any]:
    files, model = rendered
    return {
        "files": files,
        "verdict": model["fleet"]["verdict"],
        "counts": {item["verdict"]: item["count"] for item in model["fleet"]["counts"]},
        "nodes": model["fleet"]["nodes"],
        "failing": model["failing"],
    }
