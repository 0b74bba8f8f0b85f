# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared pieces of the tool-output parsers.

Every parser in this package is a pure function ``text -> dict``. It never runs a
command and never reads a file. When the text cannot be read with certainty it raises
:class:`ParseError` naming the 1-based line, so that a damaged input can never turn into
a silently wrong number.
"""

from __future__ import annotations

import math
import os
import re
from typing import TYPE_CHECKING, Any, Iterator, NamedTuple, TypedDict, TypeVar

if TYPE_CHECKING:  # only for the annotations; imported where a template is read
    import textfsm

# CSI sequences (colours, underline) that nvidia-smi >= 590 writes around header rows,
# plus the rarer OSC/two-byte forms that terminal captures carry.
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[@-Z\\-_]")

# Values NVIDIA tools print for "no value" that say nothing more: the field does not apply or is not served.
QUIET_NOT_AVAILABLE = frozenset(
    {
        "",
        "n/a",
        "[n/a]",
        "na",
        "not supported",
        "[not supported]",
        # driver 590's words where a query it no longer serves was (application clocks), with and without brackets
        "requested functionality has been deprecated",
        "[requested functionality has been deprecated]",
        "-",
    }
)
# Values NVIDIA tools print for "no value"; they read as None, never as 0. Those beyond the quiet ones say something is
# wrong with the GPU or the query (a parser may warn of them).
NOT_AVAILABLE = QUIET_NOT_AVAILABLE | frozenset(
    {
        "unknown",
        "unknown!",
        "[unknown error]",
        "unknown error",
        "not available",
        "[not available]",
        "[insufficient permissions]",
        "insufficient permissions",
        "[gpu requires reset]",
        "[gpu is lost]",
    }
)


class ParseError(ValueError):
    """A tool output that cannot be read with certainty.

    ``line`` is the 1-based line number in the text given to the parser (None when the
    problem is the text as a whole, e.g. empty input). ``kind`` names the format.
    """

    def __init__(self, message: str, line: int | None = None, kind: str | None = None,
                 text: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.kind = kind
        self.text = text

    def __str__(self) -> str:
        where = "line %d: " % self.line if self.line is not None else ""
        what = "%s: " % self.kind if self.kind else ""
        shown = ""
        if self.text is not None:
            shown = " [%r]" % (self.text[:120],)
        return "%s%s%s%s" % (what, where, self.message, shown)


def strip_ansi(text: str) -> str:
    """Remove terminal escape sequences (nvidia-smi >= 590 underlines header rows)."""
    return _ANSI_RE.sub("", text)


def numbered_lines(text: str) -> list[tuple[int, str]]:
    """Split text into ``(line_number, line)`` pairs, 1-based, without line endings.

    Carriage returns are dropped so CRLF captures read like LF ones.
    """
    return [(i + 1, line.rstrip("\r")) for i, line in enumerate(text.split("\n"))]


def snake_case(label: str) -> str:
    """A tool's label as a key: ``"Link layer"`` -> ``"link_layer"``, ``"Rx CRC errors"`` -> ``"rx_crc_errors"``."""
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def is_not_available(value: str | None) -> bool:
    """True when ``value`` is one of the tools' spellings of "no value"."""
    if value is None:
        return True
    return value.strip().lower() in NOT_AVAILABLE


# The largest magnitude a parsed number may have: 2^64 - 1, the widest counter these tools print (NVML's ECC and
# PCIe counters and the InfiniBand port counters are unsigned 64-bit). Anything larger is no reading of any tool field;
# it is refused before it reaches arithmetic (float() of a 400-digit int raises OverflowError). docs/parsers.md.
MAX_NUMBER = 2 ** 64 - 1
# digits of MAX_NUMBER: a longer run of digits is refused without converting it (int() of 5,000 digits raises)
MAX_DIGITS = len(str(MAX_NUMBER))
# The most GPUs one system can hold: NV_MAX_DEVICES, "the maximum number of GPUs supported in a single system"
# (NVIDIA/open-gpu-kernel-modules src/common/sdk/nvidia/inc/nvlimits.h). A count or a matrix above it is no node's.
MAX_GPUS_PER_NODE = 32

# a number as a parser converted it; bounded_number gives back the type it was given
_Number = TypeVar("_Number", int, float)


class ImplausibleNumber(ParseError):
    """A number no tool field holds: non-finite, or of a magnitude above :data:`MAX_NUMBER`."""


def _shown(text: str) -> str:
    """A long number as a short quote: its first digits and how many there are."""
    return text if len(text) <= 24 else "%s... (%d characters)" % (text[:16], len(text))


def _out_of_range(what: str, shown: str, line: int | None, kind: str | None) -> ImplausibleNumber:
    return ImplausibleNumber("%s %s is out of range: its magnitude is above 2^64-1, more than any tool field holds"
                             % (what, _shown(shown)), line=line, kind=kind)


def bounded_number(number: _Number, line: int | None = None, kind: str | None = None,
                   what: str = "number") -> _Number:
    """``number`` when finite and of magnitude at most :data:`MAX_NUMBER`; else :class:`ImplausibleNumber` naming
    ``what`` and the line. For parsers that convert a cell themselves (``int()``, ``float()``, JSON)."""
    if isinstance(number, float) and not math.isfinite(number):
        raise ImplausibleNumber("%s is not a finite number: %s" % (what, number), line=line, kind=kind)
    if abs(number) > MAX_NUMBER:
        raise _out_of_range(what, repr(number), line, kind)
    return number


def parse_number(value: str | None, line: int | None = None, kind: str | None = None,
                 unit: str | None = None) -> int | float | None:
    """Read an int or float from a tool's cell; None for the "no value" spellings.

    ``unit`` is an optional suffix to strip (``"MiB"``, ``"W"``, ``"MHz"``, ``"C"``...).
    Anything else that is not a number raises :class:`ParseError` with ``line``; a number whose
    magnitude is above :data:`MAX_NUMBER` (``1e308``, 400 digits) raises :class:`ImplausibleNumber`.
    """
    if value is None:
        return None
    raw = value.strip()
    if is_not_available(raw):
        return None
    if unit and raw.lower().endswith(unit.lower()):
        raw = raw[: -len(unit)].strip()
    number: int | float
    if re.fullmatch(r"[-+]?\d+", raw):
        if len(raw.lstrip("+-").lstrip("0")) > MAX_DIGITS:
            raise _out_of_range("number", raw, line, kind)
        number = int(raw)
    elif re.fullmatch(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?", raw):
        number = float(raw)
    elif re.fullmatch(r"0[xX][0-9a-fA-F]+", raw):
        if len(raw[2:].lstrip("0")) > 16:
            raise _out_of_range("number", raw, line, kind)
        number = int(raw, 16)
    else:
        raise ParseError("not a number: %r" % value, line=line, kind=kind)
    if isinstance(number, float) and not math.isfinite(number) or abs(number) > MAX_NUMBER:
        raise _out_of_range("number", raw, line, kind)
    return number


# a JSON string (escapes included; an unclosed one runs to the end) or a bracket: what json_depth reads
_JSON_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


def json_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` outside JSON strings: checked before ``json.loads``, which recurses (a
    100,000-deep document raises RecursionError there). Strings are skipped whole, escapes included."""
    depth = deepest = 0
    for token in _JSON_TOKEN_RE.finditer(text):
        char = token.group(0)
        if char in ("[", "{"):
            depth += 1
            deepest = max(deepest, depth)
        elif char in ("]", "}"):
            depth -= 1
    return deepest


# Nesting a JSON document gpufleet reads may have: nccl-tests' nests 4, DCGM's diagnostic 10, a reference job 3.
MAX_JSON_DEPTH = 32


def refuse_deep_json(text: str, limit: int = MAX_JSON_DEPTH, kind: str | None = None,
                     what: str = "the document") -> None:
    """ParseError naming the depth when ``text`` nests brackets deeper than ``limit``, before any recursive reader."""
    deepest = json_depth(text)
    if deepest > limit:
        raise ParseError("%s is nested %d deep, deeper than the %d this reader takes" % (what, deepest, limit),
                         kind=kind)


# srun -l "0: " / "  12: " and mpirun --tag-output "[1,0]<stdout>:" prefixes.
RANK_PREFIX_RE = re.compile(r"^(?:\[(\d+),(\d+)\]<(?:stdout|stderr)>:\s?|\s*(\d+):(?: |$))")
# "$ ibstat", "# ibstat", "root@host:~# ibstat", "[root@h ~]# ibstat", "linux$ sudo ibstat".
PROMPT_RE = re.compile(r"^\s*(?:\([^)]*\)\s*)?(?:[\w.@:~/\-]*|\[[^\]]*\])\s?[$#%>]\s+\S")


def clean_lines(text: object, kind: str | None) -> list[tuple[int, str]]:
    """``(n, line)`` pairs with ANSI escapes, CR and one rank prefix removed, prompt lines blanked.

    A uniform ``srun -l`` / ``mpirun --tag-output`` prefix is removed; lines of a second rank
    raise, since one parse reads one tool run. Line numbers stay those of the text as given.
    """
    if not isinstance(text, str):
        raise ParseError("expected text, got %s" % type(text).__name__, kind=kind)
    rank = None
    started = False
    out = []
    for number, line in numbered_lines(text):
        line = strip_ansi(line)
        match = RANK_PREFIX_RE.match(line)
        if not started and match:
            rank = match.groups()
        started = started or bool(line.strip())
        if rank is not None and match:
            if match.groups() != rank:
                raise ParseError("output of several ranks is mixed; parse one rank at a time", line=number, kind=kind, text=line)
            line = line[match.end():]
        if PROMPT_RE.match(line):
            line = ""
        out.append((number, line.rstrip()))
    return out


# srun -l "0: " and mpirun --tag-output "[1,0]<stdout>:" as the benchmark parsers accept them.
BENCH_RANK_PREFIX_RE = re.compile(r"^(?:(\d+): ?|\[\d+,(\d+)\]<std(?:out|err)>: ?)")


def strip_rank_prefix(text: object, kind: str | None) -> list[tuple[int, str]]:
    """Numbered lines with ANSI removed and one launcher's rank prefix stripped.

    The prefix is removed when at least half of the non-blank lines carry it (a benchmark's
    own lines may start with digits); lines of a second rank raise, naming the line, since
    one parse reads one process's output. Empty input raises.
    """
    if text is None or not isinstance(text, str):
        raise ParseError("input is not text", kind=kind)
    pairs = numbered_lines(strip_ansi(text))
    nonblank = [(n, line) for n, line in pairs if line.strip()]
    if not nonblank:
        raise ParseError("empty input", kind=kind)
    hits = [(n, m) for n, m in ((n, BENCH_RANK_PREFIX_RE.match(line)) for n, line in nonblank) if m]
    if not hits or len(hits) * 2 < len(nonblank):
        return pairs
    first_rank = hits[0][1].group(1) or hits[0][1].group(2)
    for n, match in hits:
        rank = match.group(1) or match.group(2)
        if rank != first_rank:
            raise ParseError("output of several ranks is interleaved (rank %s and %s)" % (first_rank, rank), line=n, kind=kind)
    cleaned = []
    for n, line in pairs:
        prefix = BENCH_RANK_PREFIX_RE.match(line)
        cleaned.append((n, line[prefix.end():] if prefix else line))
    return cleaned


# ------------------------------------------------------------------------------------------
# Foreign lines: text a person or a script put around a tool's output, never part of any format.
# A parser consults foreign_line() only for a line its format does not accept, so a format's own
# separators ("-----" in perftest, "#" in nccl-tests) are never taken for one.

# Placeholders people paste instead of a value: never read as one.
PLACEHOLDERS = frozenset({"...", "\u2026", "<masked>", "<redacted>", "<removed>", "xxx", "***"})

# (why, pattern), tried in order; the first match names the line.
_FOREIGN_PATTERNS = (
    # "$ ibstat", "root@h:~# ibstat", "(venv) user@h:~$ nvidia-smi -q", "[root@h ~]# lsmod"
    ("shell prompt", PROMPT_RE),
    # a prompt with nothing typed after it, as a pasted session ends: "xyz@debian:~$", "[root@h ~]#"
    ("shell prompt", re.compile(r"^\s*(?:\([^)]*\)\s*)?(?:[\w.-]+@[\w.-]+:\S*|\[[\w.-]+@[^\]]*\])\s?[$#%>]\s*$")),
    # bash -x echoes each command with "+" per nesting level: "+ nvidia-smi topo -m", "++ hostname"
    ("echoed command", re.compile(r"^\s*\+{1,3} [\w./-]")),
    # a rule of punctuation alone: "-----", "=====", "*****", "#####", "~~~~"
    ("separator", re.compile(r"^\s*([=\-#*~_])\1{2,}\s*$")),
    # a title between rules: "===== node-07 : GPU 3 =====", "### ibstat ###", "--- mlx5_0 ---"
    ("banner", re.compile(r"^\s*([=\-#*~])\1{2,}\s*\S.*?\s*\1{2,}\s*$")),
    # "==> /sys/class/net/eth0/speed <==" (head/tail over several files)
    ("file header", re.compile(r"^\s*==> .* <==\s*$")),
    # an author's note or an elision in a pasted block: "<-- note", "// note", "# note", "[snip]", "... (cut)"
    ("note", re.compile(r"^\s*(?:<-+|-+>|//|#+\s"
                        r"|\[(?:snip|snipped|truncated|cut|\.\.\.|\u2026)\]"
                        r"|\((?:snip|cut|truncated)\))", re.IGNORECASE)),
    ("elision", re.compile(r"^\s*(?:\.{3,}|\u2026)(?:\s*[\[(].*[\])])?\s*$")),
)


class IgnoredLine(TypedDict):
    """A line a parser skipped as foreign: its 1-based number, its text (cut to 200) and why."""

    line: int
    text: str
    why: str


def foreign_line(line: str) -> str | None:
    """Why ``line`` is clearly not any tool's output (a prompt, a banner, a note...), or None."""
    for why, pattern in _FOREIGN_PATTERNS:
        if pattern.match(line):
            return why
    return None


def ignore_line(ignored: list[IgnoredLine], number: int, line: str, why: str) -> None:
    """Record ``line`` in ``ignored`` as skipped for ``why`` (a parser's own rule, e.g. a bare command line)."""
    ignored.append({"line": number, "text": line.strip()[:200], "why": why})


def skip_foreign(ignored: list[IgnoredLine], number: int, line: str) -> bool:
    """Record ``line`` in ``ignored`` and say True when it is foreign; False leaves the refusal to the parser."""
    why = foreign_line(line)
    if why is None:
        return False
    ignore_line(ignored, number, line, why)
    return True


def with_ignored(result: dict[str, Any], ignored: list[IgnoredLine]) -> dict[str, Any]:
    """``result`` with ``ignored_lines`` set when a line was skipped (absent otherwise)."""
    if ignored:
        result["ignored_lines"] = list(ignored)
    return result


def is_placeholder(value: str | None) -> bool:
    """True for a value someone pasted instead of the real one (``...``, ``<masked>``)."""
    return value is not None and value.strip().lower() in PLACEHOLDERS


# ------------------------------------------------------------------------------------------
# TextFSM templates: the grammar of a key-value tool output kept as data.

TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")
# Compiled templates not in use, by name. A parse takes one and puts it back, so two parses
# (threads, or a caller that stops reading rows half-way) never share one FSM's state.
_IDLE_TEMPLATES: dict[str, list["textfsm.TextFSM"]] = {}
# What textfsm raises for an ``-> Error "message"`` rule: 'Error: "message". Rule Line: ...'.
_TEMPLATE_ERROR_RE = re.compile(r'^Error: "(.*)"\. Rule Line: \d+\. Input Line: ', re.DOTALL)


class TemplateRow(NamedTuple):
    """One record a template emitted: the 1-based line it came from, that line, its fields.

    ``fields`` maps every Value of the template to the text captured on this line; a Value
    the line did not capture is ``""`` (TextFSM's spelling of unset).
    """

    line: int
    text: str
    fields: dict[str, str]


def _take_template(name: str) -> "textfsm.TextFSM":
    # textfsm is imported here, not at module level, so that parsers without a template load without it.
    import textfsm

    try:
        return _IDLE_TEMPLATES.setdefault(name, []).pop()
    except IndexError:
        with open(os.path.join(TEMPLATE_DIR, name + ".textfsm"), encoding="utf-8") as handle:
            return textfsm.TextFSM(handle)


def parse_with_template(name: str, text: str, kind: str, ignored: list[IgnoredLine] | None = None,
                        foreign_refusal: str | None = None) -> Iterator[TemplateRow]:
    """Rows of ``templates/<name>.textfsm`` read over ``text``, one line at a time.

    ``text`` is cleaned first (:func:`clean_lines`: ANSI, CR, rank prefix, prompt lines), so
    a template sees blank lines but never those. Each line is given to the FSM alone, which
    is how a row (and an error) keeps its line number. Rows come lazily, as the template reads
    them: a caller's own checks on a row and the template's errors on later lines are raised
    in line order. An ``-> Error "message"`` rule becomes ``ParseError(message, line=N)``;
    a template must end each state with a rule that matches every line it does not accept.

    With ``ignored`` and ``foreign_refusal`` (the message of the template's catch-all rule), a line
    refused with that message that :func:`skip_foreign` names is recorded in ``ignored`` and the
    FSM goes on in the state it was in (an ``Error`` rule raises before any state change); any other
    refusal, a damaged value or a key out of place, stands.
    """
    import textfsm

    lines = clean_lines(text, kind)
    fsm = _take_template(name)
    fsm.Reset()
    header = fsm.header
    try:
        emitted = 0
        for number, line in lines:
            try:
                # ParseText splits on newlines itself: the trailing one makes an empty line a line.
                records = fsm.ParseText(line + "\n", eof=False)
            except textfsm.TextFSMError as err:
                match = _TEMPLATE_ERROR_RE.match(str(err))
                message = match.group(1) if match else "line not accepted by the %s template" % name
                if ignored is not None and message == foreign_refusal and skip_foreign(ignored, number, line):
                    continue
                raise ParseError(message, line=number, kind=kind, text=line) from None
            while emitted < len(records):
                yield TemplateRow(number, line, dict(zip(header, records[emitted])))
                emitted += 1
    finally:
        fsm.Reset()
        _IDLE_TEMPLATES[name].append(fsm)
