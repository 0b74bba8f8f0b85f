# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Jinja2 environments the report is rendered in, and how each prints a value.

- HTML (:func:`html_environment`): autoescape on; a value's control and bidi characters shown as ``\\x1b``-style
  escapes (:func:`html_visible`), then the value escaped (:func:`html_shown`, one call per ``{{ value }}``);
- Markdown (:func:`markdown_environment`): no autoescape; every value through :func:`md_escape`.

In both a dict of the model is read key first (``node.host``: :class:`ReportEnvironment`). Text is escaped once per
distinct string (lru caches): a fleet's report prints the same check ids, statuses and messages on every node.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Any, Callable

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from jinja2.compiler import CodeGenerator
from markupsafe import Markup, escape

from gpufleet.report.gpu_view import GpuCell
from gpufleet.text import visible

__all__ = ["TEMPLATES_DIR", "ReportEnvironment", "gpu_rows_html", "html_environment", "html_shown", "html_visible",
           "markdown_environment", "md_escape"]

TEMPLATES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")

# Markdown, in one pass: HTML metacharacters become entities (which hold no character escaped next), what Markdown
# interprets is backslash-escaped, a line break becomes a space (a regex with a group template expanded each match in
# Python: a third of report.md's time)
_MD_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\n": " ", "\r": " ",
                             **{character: "\\" + character for character in "\\`*_[]|~#"}})
_MD_SPECIAL = re.compile("[%s]" % re.escape("".join(chr(code) for code in _MD_ESCAPES)))


def md_escape(value: Any) -> str:
    """``value`` as Markdown text that shows exactly as given: ``<b>`` -> ``&lt;b&gt;``, ``*`` -> ``\\*``, newlines ->
    spaces, control and bidi characters (``ESC``, ``U+202E``, NUL) -> ``\\x1b``, ``\\u202e``, ``\\x00``
    (gpufleet/text.py)."""
    if type(value) is str:  # pylint: disable=unidiomatic-typecheck  # most values: each text escaped once
        return _md_text(value)
    if value is None:
        return ""
    return _md_text(str(value))


@functools.lru_cache(maxsize=65536)
def _md_text(text: str) -> str:
    if _MD_SPECIAL.search(text):  # most values hold none, and a search costs less than a translate
        text = text.translate(_MD_ESCAPES)
    # last: the \xNN escapes of control and bidi characters must reach the file as typed, not backslash-escaped again
    return visible(text, keep_lines=True)


def html_visible(value: Any) -> Any:
    """The HTML environment's ``finalize``: control and bidi characters of a printed string shown as ``\\xNN``
    (gpufleet/text.py), newlines and tabs kept. Markup (a macro's output, already escaped) is treated alike: the
    escapes hold no HTML metacharacter, so the markup stays what it was."""
    if isinstance(value, Markup):
        return Markup(visible(str(value), keep_lines=True))
    if isinstance(value, str):
        return visible(value, keep_lines=True)
    return value


@functools.lru_cache(maxsize=65536)
def _html_text(text: str) -> Markup:
    return escape(visible(text, keep_lines=True))


def html_shown(value: Any) -> Markup:
    """What ``{{ value }}`` of an HTML template prints: ``value`` through html_visible, then escaped, in one call
    (_OutputCodeGenerator). A string, most values, is escaped once per distinct text: a fleet's pages print the same
    check ids, statuses and messages on every node."""
    if type(value) is str:  # pylint: disable=unidiomatic-typecheck  # Markup (a str too) is escape()'s to keep as it is
        return _html_text(value)
    return escape(html_visible(value))


class _OutputCodeGenerator(CodeGenerator):
    """Compiles ``{{ value }}`` of an autoescaped template to ``environment.shown(value)`` where Jinja's own compiles
    ``escape(environment.finalize(value))``: the same text (html_shown), in one call instead of four, most of them in
    Python. The two were a third of the HTML's time at 10,000 nodes. Elsewhere (report.md, no autoescape; an
    environment with no ``shown``) Jinja's own code stands."""

    def _output_child_pre(self, node: Any, frame: Any, finalize: Any) -> None:
        if self._shown(frame, finalize):
            self.write("environment.shown(")
        else:
            super()._output_child_pre(node, frame, finalize)

    def _output_child_post(self, node: Any, frame: Any, finalize: Any) -> None:
        if self._shown(frame, finalize):
            self.write(")")
        else:
            super()._output_child_post(node, frame, finalize)

    def _shown(self, frame: Any, finalize: Any) -> bool:
        return (getattr(self.environment, "shown", None) is not None and frame.eval_ctx.autoescape
                and not frame.eval_ctx.volatile and finalize.src == "environment.finalize(")


# what ``x.name`` means on a dict of the model when ``name`` is one of dict's own attributes (``x.get``, ``x.items``)
_DICT_ATTRIBUTES = frozenset(dir(dict))


class ReportEnvironment(Environment):
    """An Environment that reads ``node.host`` of a dict of the model as its key first. Jinja's own tries the
    attribute first and catches the AttributeError: a quarter of the HTML's time at 2,000 nodes. A dict's own methods
    (``node.status_counts.get``) stay methods, whatever keys a node's data gives the dict, as they are in Jinja's."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:  # pylint: disable=unidiomatic-typecheck
            try:
                return obj[attribute]
            except KeyError:
                pass
        return super().getattr(obj, attribute)

    code_generator_class = _OutputCodeGenerator
    # what {{ value }} prints where autoescape is on (html_shown; None: Jinja's escape(finalize(value)))
    shown: Callable[[Any], Markup] | None = None


@functools.lru_cache(maxsize=65536)
def _gpu_cell_html(cell: GpuCell) -> str:
    """A cell of the GPU table: ``<td>`` and its text, a flagged one's majority in its title; each value shown as the
    environment shows one (html_shown). Once per cell: a fleet's GPUs share most of their cells."""
    text = str(html_shown(cell.text))
    if not cell.flag:
        return "<td>" + text
    return '<td class="flag" title="%s majority: %s">%s' % (html_shown(cell.scope), html_shown(cell.majority), text)


def gpu_rows_html(rows: list[list[GpuCell]]) -> Markup:
    """A node's GPU table rows (gpu_view.py ``gpu_table``), ``<tr>`` and ``<td>`` without their end tags as the other
    per-node tables, made here rather than in a template loop: at 10,000 nodes the table has 1.2 million cells, and
    the loop was a quarter of the HTML's time."""
    return Markup("".join("<tr>" + "".join(_gpu_cell_html(cell) for cell in cells) for cells in rows))


def html_environment(templates_dir: str | None = None) -> Environment:
    """The HTML environment: autoescape on for .html/.html.j2/.xml and for strings, control characters shown
    escaped (html_visible); undefined names fail; the GPU table's rows made by :func:`gpu_rows_html`."""
    environment = ReportEnvironment(
        loader=FileSystemLoader(templates_dir or TEMPLATES_DIR),
        autoescape=select_autoescape(enabled_extensions=("html", "html.j2", "xml", "svg"), default_for_string=True,
                                     default=True),
        finalize=html_visible,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["gpu_rows"] = gpu_rows_html
    environment.shown = html_shown
    return environment


def markdown_environment(templates_dir: str | None = None) -> Environment:
    """The Markdown environment: no HTML autoescape (Markdown is not HTML); every printed value goes through
    md_escape."""
    return ReportEnvironment(
        loader=FileSystemLoader(templates_dir or TEMPLATES_DIR),
        autoescape=False,
        finalize=md_escape,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
