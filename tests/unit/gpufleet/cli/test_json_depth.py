# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A JSON document nested 100,000 deep is refused by the commands that read one (``gpufleet estimate FILE``,
``--reference-job JSON``), naming the depth, before json.loads recurses into a RecursionError. The documents are
built here; their only point is their depth."""

from __future__ import annotations

import pytest

from gpufleet.cli.main import main
from gpufleet.cli.playbook_options import OptionsError, reference_job_option

DEEP = "[" * 100000 + "]" * 100000


def test_estimate_refuses_a_100000_deep_document_naming_the_depth(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text(DEEP)
    assert main(["estimate", str(path)]) == 1
    assert capsys.readouterr().err == ("gpufleet estimate: %s: the document is nested 100000 deep, deeper than the 32 "
                                       "this reader takes\n" % path)


def test_reference_job_refuses_a_deep_job_naming_the_depth():
    with pytest.raises(OptionsError) as info:
        reference_job_option('{"models": %s}' % DEEP)
    assert str(info.value) == "--reference-job: the job is nested 100001 deep, deeper than the 32 this reader takes"


def test_a_job_of_ordinary_depth_still_reads():
    assert reference_job_option('{"precision": "fp8", "tokens": 2e12}') == {"precision": "fp8", "tokens": 2e12}
