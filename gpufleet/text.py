# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Text from a node (a hostname, a tool's message, a parse error quoting a line) made safe to show.

A rented node is untrusted: what it prints may hold terminal escape sequences (``ESC [ 2 J`` clears
the screen of whoever runs ``cat report.md``), bidi overrides that make a line read differently from
what it holds, or NUL. Every place that shows node text (the CLI summary and messages, report.md,
report.html, ``gpufleet parse`` errors) shows those characters as visible escapes (``\\x1b``,
``\\u202e``) instead of passing them on or dropping them: the reader sees that they were there.

No gpufleet import: every stage may use it.
"""

from __future__ import annotations

import re
from typing import Any

# C0 controls (tab and newline included: callers that keep lines split them first), DEL, C1 controls,
# the line/paragraph separators, and the bidi embedding/override/isolate controls.
UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
# the same without tab and newline: for text whose lines are kept (report.md code blocks, HTML <pre>)
UNPRINTABLE_IN_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def _escape(match: "re.Match[str]") -> str:
    code = ord(match.group(0))
    return "\\x%02x" % code if code < 256 else "\\u%04x" % code


def visible(value: Any, keep_lines: bool = False) -> str:
    """``value`` as text with every control, separator and bidi character shown as ``\\xNN``/``\\uNNNN``.

    With ``keep_lines`` newlines and tabs stay (a multi-line output shown as such); else they are
    escaped too. Nothing is dropped, so the shown text still says what the node sent.
    """
    text = "" if value is None else str(value)
    # printable ASCII holds none of them: the common case, without the regex (6 million calls in a 10,000-node report)
    if text.isascii() and text.isprintable():
        return text
    return (UNPRINTABLE_IN_LINES if keep_lines else UNPRINTABLE).sub(_escape, text)


def one_line(value: Any, limit: int | None = None) -> str:
    """``value`` as one line a terminal shows as text: whitespace runs become one space, control and
    bidi characters ``\\xNN`` escapes (:func:`visible`), cut at ``limit`` characters with ``...``."""
    text = visible(" ".join(str("" if value is None else value).split()))
    if limit and len(text) > limit:
        text = text[: max(limit - 3, 1)] + "..."
    return text
