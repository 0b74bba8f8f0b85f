# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for ``dcgmi diag -r <level> -j`` (KIND ``dcgmi-diag``): DCGM's diagnostic as JSON.

The document (DCGM's nvvs JSON output, documented in DCGM's NvvsCommon.h)::

    {"DCGM GPU Diagnostic" (DCGM 3.x) | "DCGM Diagnostic" (DCGM 4.x): {
        "test_categories": [{"category": "Deployment|Hardware|Integration|Stress|...",
                             "tests": [{"name": str,
                                        "results": [{"gpu_ids": "0,1" (3.x) | "entity_id": 0 (4.x),
                                                     "status": "Pass|Fail|Warn|Skip" (3.x: PASS|FAIL|WARN|SKIPPED),
                                                     "warnings": [str | {"warning": str, "error_id": int, ...}],
                                                     "info": [str]}],
                                        "test_summary": {"status": str, ...} (4.x)}]}],
        "runtime_error": str (optional), "version": str (3.x)},
     "metadata": {"version": str, "Driver Version Detected": str} (4.x)}

Text dcgmi prints before the document (a warning line) is skipped: the first ``{`` outside a foreign line starts
it. Foreign lines before and after the document (a shell prompt, a banner, a note: common's ``foreign_line``) are
listed in ``ignored_lines`` (``{line, text, why}``, present only when there is one); inside it, any text is broken
JSON.

``parse_dcgmi_diag(text)`` returns:

- ``version`` (str|None): DCGM's version (``metadata.version``, else the diagnostic's ``version``).
- ``driver_version`` (str|None): ``metadata["Driver Version Detected"]``.
- ``runtime_error`` (str|None): the diagnostic's ``runtime_error`` (it could not run its tests).
- ``tests`` (list[dict]): one per test, in order: ``{category, name, status, entities: [{entity, status,
  warnings: [str]}]}``. ``status`` is normalised to ``pass``, ``fail``, ``warn``, ``skip`` or, for a word
  DCGM did not document, the word in lower case: the test's ``test_summary.status`` when present, else the
  worst of its results (fail > skip > warn > pass).
- ``counts`` (dict[str, int]): tests per normalised status.

Raises :class:`ParseError` for empty input, text without a JSON document, broken JSON, a document nested deeper than
common's ``MAX_JSON_DEPTH`` (32; refused before the JSON reader, which recurses, sees it), or a document without a
``DCGM Diagnostic`` / ``DCGM GPU Diagnostic`` key.
"""

from __future__ import annotations

import json
from typing import Any

from gpufleet.parsers.common import IgnoredLine, ParseError, refuse_deep_json, skip_foreign, with_ignored

KIND = "dcgmi-diag"
ROOT_KEYS = ("DCGM Diagnostic", "DCGM GPU Diagnostic")
# DCGM 4.x words (Pass/Fail/Warn/Skip) and 3.x words (PASS/FAIL/WARN/SKIPPED) -> one vocabulary.
_STATUS_WORDS = {"pass": "pass", "fail": "fail", "warn": "warn", "warning": "warn", "skip": "skip", "skipped": "skip"}
_WORST_FIRST = ("fail", "skip", "warn", "pass")


def normal_status(word: object) -> str:
    """``Pass``/``PASS`` -> ``pass``, ``Skip``/``SKIPPED`` -> ``skip``...; an undocumented word in lower case."""
    word = str(word or "").strip().lower()
    return _STATUS_WORDS.get(word, word or "unknown")


def _warning_text(item: Any) -> str:
    if isinstance(item, dict):
        return " ".join(str(item.get("warning") or item.get("message") or json.dumps(item, sort_keys=True)).split())
    return " ".join(str(item).split())


def _entity(result: dict[str, Any]) -> Any:
    if "entity_id" in result:
        return result.get("entity_id")
    return result.get("gpu_ids")


def _test(category: str, test: dict[str, Any]) -> dict[str, Any]:
    entities: list[dict[str, Any]] = []
    for result in test.get("results") or []:
        if not isinstance(result, dict):
            continue
        entities.append({"entity": _entity(result), "status": normal_status(result.get("status")),
                         "warnings": [_warning_text(item) for item in result.get("warnings") or []]})
    raw_summary = test.get("test_summary")
    summary: dict[str, Any] = raw_summary if isinstance(raw_summary, dict) else {}
    if summary.get("status"):
        status = normal_status(summary["status"])
    else:
        found = [entity["status"] for entity in entities]
        status = next((word for word in _WORST_FIRST if word in found), found[0] if found else "unknown")
    return {"category": category, "name": str(test.get("name") or "?"), "status": status, "entities": entities}


def _document_start(text: str, ignored: list[IgnoredLine]) -> int:
    """Offset of the ``{`` that opens the document (-1 when none); foreign lines before it are listed in ``ignored``."""
    offset = 0
    for number, line in enumerate(text.split("\n"), start=1):
        if not skip_foreign(ignored, number, line.rstrip("\r")) and "{" in line:
            return offset + line.index("{")
        offset += len(line) + 1
    return -1


def _after_document(text: str, end: int, ignored: list[IgnoredLine]) -> None:
    """List the foreign lines after the document, which ends at offset ``end``; other text there is left unread."""
    number = text.count("\n", 0, end) + 1
    for line in text[end:].split("\n")[1:]:
        number += 1
        skip_foreign(ignored, number, line.rstrip("\r"))


def _read_document(text: str, ignored: list[IgnoredLine]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(document, root)`` of the output's JSON document (root: its ``ROOT_KEYS`` object); foreign lines around it
    are listed in ``ignored``."""
    start = _document_start(text, ignored)
    if start < 0:
        raise ParseError("no JSON document in the output (dcgmi diag was not run with -j, "
                         "or it failed before printing one)", kind=KIND)
    # DCGM nests 10 brackets (root, diagnostic, test_categories, tests, results, warnings: lists and objects)
    refuse_deep_json(text[start:], kind=KIND, what="the JSON document")
    try:
        document, end = json.JSONDecoder().raw_decode(text[start:])
    except ValueError as exc:
        line = text.count("\n", 0, start) + getattr(exc, "lineno", 1)
        raise ParseError("broken JSON: %s" % getattr(exc, "msg", exc), line=line, kind=KIND) from None
    root_key = next((key for key in ROOT_KEYS if isinstance(document, dict) and key in document), None)
    if root_key is None or not isinstance(document[root_key], dict):
        raise ParseError("no %s key in the JSON document" % " / ".join(repr(key) for key in ROOT_KEYS), kind=KIND)
    _after_document(text, start + end, ignored)
    return document, document[root_key]


def _tests(root: dict[str, Any]) -> list[dict[str, Any]]:
    """Every test of every category, in the document's order."""
    tests = []
    for category in root.get("test_categories") or []:
        if not isinstance(category, dict):
            continue
        for test in category.get("tests") or []:
            if isinstance(test, dict):
                tests.append(_test(str(category.get("category") or "?"), test))
    return tests


def parse_dcgmi_diag(text: str) -> dict[str, Any]:
    """Parse ``dcgmi diag -j`` output; see the module docstring for the keys."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty input", kind=KIND)
    ignored: list[IgnoredLine] = []
    document, root = _read_document(text, ignored)
    raw_metadata = document.get("metadata")
    metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
    tests = _tests(root)
    counts: dict[str, int] = {}
    for test in tests:
        counts[test["status"]] = counts.get(test["status"], 0) + 1
    return with_ignored({
        "version": metadata.get("version") or root.get("version"),
        "driver_version": metadata.get("Driver Version Detected"),
        "runtime_error": root.get("runtime_error") or None,
        "tests": tests,
        "counts": counts,
    }, ignored)
