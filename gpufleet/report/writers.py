# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Who writes the report's files: this process alone, or, past BESIDE_NODES nodes where a fork can help (beside.py
``can_fork``), this process and two copies of it.

Shared, so that neither CPU waits on the other (at 10,000 nodes the files take as long as reading the records):

- junit.xml and results.json need no render model: a copy writes them while this process builds the model
  (EARLY_FORMATS; the two views of the model results.json keeps are made before the copy starts);
- once the model is built, a second copy writes report.md, then renders HTML pages;
- this process renders HTML pages meanwhile. The pages are taken one at a time, in order, by whichever process is free
  (beside.py ``TakeQueue``): report.html, the largest, first. Each is written under a temporary name as it is
  rendered, and all are put in place here once all are (results/store.py ``staged_write``), as one process puts them:
  a page that cannot be rendered leaves the pages already there as they were.

A copy that ends without a result has its part done here again. The files are the same either way, and their failures
named alike, in the order of the formats asked for.
"""

from __future__ import annotations

import functools
from typing import Any, Iterable, Protocol, Sequence

from gpufleet.report.beside import Beside, BesideError, TakeQueue, can_fork
from gpufleet.report.common import error_words

FORMATS = ("html", "md", "json", "junit")
FILE_NAMES = {"html": "report.html", "md": "report.md", "json": "results.json", "junit": "junit.xml"}
# Past this many nodes the files are written by this process and copies of it (the module docstring).
BESIDE_NODES = 1000
# what is written from the pass over the records alone, before the render model is built (results.json with the two
# views of the model it keeps, made before: model.py document_views)
EARLY_FORMATS = ("json", "junit")

# a page of the HTML: (file name, text)
Page = tuple[str, str]
# a file written under a temporary name, to be put in place (results/store.py staged_write): (temporary file, path)
Staged = tuple[str, str]
# per format asked for: None when written, else why not
Outcome = dict[str, Any]


class FileMaker(Protocol):
    """How each of a render's files is made (render.py ``ReportFiles``)."""

    unmade: dict[str, str]  # format -> why the pass over the records could not make its part of it

    def write(self, name: str) -> None:
        """Write the file of format ``name`` (``html``: every page)."""

    def page_count(self) -> int:
        """How many pages the HTML has (the model built)."""

    def stage_page(self, index: int) -> Staged:
        """Page ``index`` (0: report.html) rendered and written under a temporary name."""

    def commit_pages(self, staged: list[Staged]) -> None:
        """The HTML's pages, all of them staged, put in place."""

    def discard_pages(self, staged: list[Staged] | None) -> None:
        """Pages staged and not to be put in place removed (None: any left in the output directory)."""


def write_each(maker: FileMaker, names: Sequence[str]) -> Outcome:
    """Write the files of ``names`` here, one after another: one file's failure never costs the others."""
    outcome: Outcome = {}
    for name in names:
        if name in maker.unmade:
            outcome[name] = maker.unmade[name]
            continue
        try:
            maker.write(name)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # the other files are still written
            outcome[name] = error_words(exc)
            continue
        outcome[name] = None
    return outcome


def _stage_pages(maker: FileMaker, indexes: Iterable[int]) -> dict[int, Staged] | str:
    """The pages of ``indexes`` (those this process takes from a queue, or all), rendered and staged; at the first
    that cannot be, why (the HTML is failed: what was staged is removed, and nothing of it put in place)."""
    pages: dict[int, Staged] = {}
    try:
        for index in indexes:
            pages[index] = maker.stage_page(index)
    except Exception as exc:  # pylint: disable=broad-exception-caught  # the other files are still written
        maker.discard_pages(list(pages.values()))
        return error_words(exc)
    return pages


def commit_every_page(maker: FileMaker, count: int, pages: dict[int, Staged] | None = None) -> None:
    """The HTML's ``count`` pages put in place: each of ``pages`` as a process staged it, any other staged here. When
    one cannot be, every page staged is removed (none is put in place) and the error raised."""
    pages = {} if pages is None else pages
    try:
        for index in range(count):
            if index not in pages:
                pages[index] = maker.stage_page(index)
        maker.commit_pages([pages[index] for index in range(count)])
    except BaseException:
        maker.discard_pages(list(pages.values()))
        raise


def _late_copy(maker: FileMaker, names: Sequence[str], queue: TakeQueue | None) -> tuple[Outcome, Any]:
    """In the second copy: ``names`` written, then the pages it takes from ``queue`` staged."""
    return write_each(maker, names), (_stage_pages(maker, queue.taken()) if queue is not None else {})


class Writing:
    """The files of ``formats`` for a fleet of ``nodes``: :meth:`start_early` before the render model is built,
    :meth:`finish` once it is, :meth:`stop` in every case (it ends a copy whose result was not taken)."""

    def __init__(self, maker: FileMaker, formats: Sequence[str], nodes: int) -> None:
        self.maker, self.formats = maker, list(formats)
        self.shared = nodes >= BESIDE_NODES and can_fork()
        self.early_names = [name for name in self.formats if name in EARLY_FORMATS] if self.shared else []
        self._early: Beside | None = None
        self._late: Beside | None = None

    def start_early(self) -> None:
        if self.early_names:
            self._early = Beside(functools.partial(write_each, self.maker, self.early_names))

    def finish(self) -> Outcome:
        """Every format asked for: None when written, else why not; in the order asked for."""
        if not self.shared:
            return write_each(self.maker, self.formats)
        outcome = self._write_late()
        if self._early is not None:
            answer, self._early = _answer(self._early), None
            outcome.update(answer if answer is not None else write_each(self.maker, self.early_names))
        return {name: outcome[name] for name in self.formats}

    def stop(self) -> None:
        for copy in (self._early, self._late):
            if copy is not None:
                copy.stop()
        self._early = self._late = None

    def _write_late(self) -> Outcome:
        """What is written once the model is built: the second copy's formats, and the HTML, its pages shared."""
        late = [name for name in self.formats if name not in EARLY_FORMATS and name != "html"]
        count = self.maker.page_count() if "html" in self.formats else 0
        queue = TakeQueue(count) if 1 < count <= TakeQueue.LIMIT else None
        try:
            self._late = Beside(functools.partial(_late_copy, self.maker, late, queue))
            pages = _stage_pages(self.maker, queue.taken() if queue is not None else range(count))
        finally:
            if queue is not None:
                queue.close()
        answer, self._late = _answer(self._late), None
        outcome, their_pages = answer if answer is not None else (write_each(self.maker, late), {})
        if "html" in self.formats:
            outcome["html"] = self._write_pages(count, pages, their_pages)
        if answer is None:  # what the copy staged before it ended is not known: once the pages are in place, the rest
            self.maker.discard_pages(None)
        return outcome

    def _write_pages(self, count: int, *parts: dict[int, Staged] | str) -> str | None:
        """Put the HTML's pages in place, as each process staged them (any none did staged here): None, or why not
        (then none is)."""
        pages: dict[int, Staged] = {}
        failed = [part for part in parts if isinstance(part, str)]
        for part in parts:
            if not isinstance(part, str):
                pages.update(part)
        if failed:
            self.maker.discard_pages(list(pages.values()))
            return failed[0]
        try:
            commit_every_page(self.maker, count, pages)
        except Exception as exc:  # pylint: disable=broad-exception-caught  # the other files are still written
            return error_words(exc)
        return None


def _answer(copy: Beside) -> Any:
    """What ``copy`` returned; None when it ended without a result (its part is then done here again)."""
    try:
        return copy.result()
    except BesideError:
        return None
