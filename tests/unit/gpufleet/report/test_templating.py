# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet engineers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's environments print what Jinja's own code would, with ``{{ value }}`` compiled to one call
(templating.py _OutputCodeGenerator) and each text escaped once (lru caches)."""

from __future__ import annotations

from jinja2 import Environment, StrictUndefined
from markupsafe import Markup

from gpufleet.report.templating import html_environment, html_shown, html_visible, markdown_environment, md_escape

# SYNTHETIC values, written here: HTML metacharacters, a terminal escape, a bidi override, numbers and a bool
VALUES = {"host": 'n1<b>"&\x1b[2J\u202e', "count": 3, "ratio": 0.5, "flag": True, "none": None,
          "items": ["<i>", "b\x00"], "safe": Markup("<em>kept</em>")}
TEMPLATE = (
    "{{ host }}|{{ count }}|{{ ratio }}|{{ flag }}|{{ none }}|{{ items|join(', ') }}|{{ host ~ '<x>' }}|{{ safe }}"
    "|{% macro cell(text) %}<td>{{ text }}{% endmacro %}{{ cell(host) }}|{{ items|length }}"
    "|{% autoescape false %}{{ host }}{% endautoescape %}|{% for item in items %}{{ loop.index }}{{ item }}{% endfor %}"
)


def _stock_html() -> Environment:
    """What html_environment is without its code generator: Jinja's own ``escape(finalize(value))``."""
    return Environment(autoescape=True, finalize=html_visible, undefined=StrictUndefined)


def test_each_printed_value_is_what_jinja_itself_prints():
    ours = html_environment().from_string(TEMPLATE).render(**VALUES)
    assert ours == _stock_html().from_string(TEMPLATE).render(**VALUES)
    # and what that is, by hand: escaped, then the escape and the override shown as text
    assert ours.split("|")[0] == "n1&lt;b&gt;&#34;&amp;\\x1b[2J\\u202e"
    assert ours.split("|")[1:5] == ["3", "0.5", "True", "None"]
    assert ours.split("|")[7] == "<em>kept</em>"
    # autoescape switched off by the template: the text as html_visible shows it, not escaped
    assert ours.split("|")[10] == 'n1<b>"&\\x1b[2J\\u202e'


def test_a_printed_value_compiles_to_one_call_where_autoescape_is_on():
    environment = html_environment()
    source = environment.compile("{{ a }}{% autoescape false %}{{ b }}{% endautoescape %}", raw=True)
    assert source.count("environment.shown(") == 1
    assert "escape(environment.finalize(" not in source
    assert "str(environment.finalize(" in source
    # report.md's environment has no autoescape: Jinja's own code
    assert "environment.shown(" not in markdown_environment().compile("{{ a }}", raw=True)


def test_a_cached_text_never_stands_for_a_value_of_another_type():
    assert (html_shown("1"), html_shown(1), html_shown(True), html_shown(1.0)) == ("1", "1", "True", "1.0")
    assert (md_escape("1"), md_escape(1), md_escape(True), md_escape(1.0), md_escape(None)) == (
        "1", "1", "True", "1.0", "")
    assert html_shown(Markup("<b>")) == "<b>"
    assert html_shown("<b>") == "&lt;b&gt;"
