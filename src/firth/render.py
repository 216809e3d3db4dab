"""The one renderer of Firth's pages: Jinja2 templates for the report (HTML,
autoescaped, and Markdown, each linking its figures' PNG files) and for ``firth
compare`` (HTML and Markdown).

The templates live in this module as strings rather than in template files: a
stage's code deps are the import closure of its script (firth.code_deps), so a
template edit here restales the report stage exactly as a code edit does; a
separate file would be a dependency DVC does not know about."""

from __future__ import annotations

import re
from collections.abc import Sequence

from jinja2 import Environment, StrictUndefined
from markupsafe import Markup, escape

_HTML = Environment(
    autoescape=True, trim_blocks=True, lstrip_blocks=True, undefined=StrictUndefined
)
_TEXT = Environment(
    autoescape=False, trim_blocks=True, lstrip_blocks=True, undefined=StrictUndefined
)
_TEXT.filters["cell"] = lambda s: str(s).replace("|", "\\|").replace("\n", " ")


def slug(title: str) -> str:
    """An HTML id for a section title: lower case, words joined by hyphens."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


LINK = re.compile(r"^→ (.+)$")  # a table cell "→ Section title" links to it
VERDICTS = {"holds": "holds", "does not hold": "fails", "inconclusive": "open"}


def _linked(cell: str):
    m = LINK.match(str(cell))
    if not m:
        return cell
    return Markup(f'<a href="#{slug(m.group(1))}">{escape(m.group(1))}</a>')


def _verdict_class(cell: str):
    cls = VERDICTS.get(str(cell))
    return Markup(f' class="{cls}"') if cls else ""


_HTML.filters["slug"] = slug
_HTML.filters["linked"] = _linked
_HTML.filters["verdict_class"] = _verdict_class


REPORT_CSS = (
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;"
    "padding:0 1em}table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
    "td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}"
    "caption{text-align:left;font-weight:bold}img{max-width:100%}"
    "td.holds{background:#e3f6e5}td.fails{background:#fde2e1}"
    "td.open{background:#efefef}"
    "nav li{margin:.1em 0}"
)

REPORT_HTML = _HTML.from_string("""\
{% macro figures(sec) %}
{% for caption, _ in sec.figures %}
<figure><img alt="{{ caption }}" src="{{ figure_paths[caption] }}">\
<figcaption>{{ caption }}</figcaption></figure>
{% endfor %}
{% endmacro %}
<!doctype html><html><head><meta charset='utf-8'><title>{{ title }}</title>
<style>{{ css }}</style></head><body>
<h1>{{ title }}</h1>
<ul>
{% for k, v in meta.items() %}
<li>{{ k }}: {{ v }}</li>
{% endfor %}
</ul>
<nav><ul>
{% for sec in sections %}
<li><a href="#{{ sec.title | slug }}">{{ sec.title }}</a></li>
{% endfor %}
</ul></nav>
{% for sec in sections %}
<section id="{{ sec.title | slug }}"><h2>{{ sec.title }}</h2>
{% for para in sec.intro.split("\\n\\n") if para %}
<p>{{ para }}</p>
{% endfor %}
{% if sec.lead_figures %}{{ figures(sec) }}{% endif %}
{% for caption, (head, rows) in sec.tables %}
<table>
{% if caption %}<caption>{{ caption }}</caption>{% endif %}
<tr>{% for h in head %}<th>{{ h }}</th>{% endfor %}</tr>
{% for row in rows %}
<tr>{% for c in row %}<td{{ c | verdict_class }}>{{ c | linked }}</td>{% endfor %}</tr>
{% endfor %}
</table>
{% endfor %}
{% if not sec.lead_figures %}{{ figures(sec) }}{% endif %}
</section>
{% endfor %}
</body></html>
""")

REPORT_MD = _TEXT.from_string("""\
{% macro figures(sec) %}
{% for caption, _ in sec.figures %}
![{{ caption }}]({{ figure_paths[caption] }})

{% endfor %}
{% endmacro %}
# {{ title }}

{% for k, v in meta.items() %}
- {{ k }}: {{ v }}
{% endfor %}

{% for sec in sections %}
## {{ sec.title }}

{% if sec.intro %}
{{ sec.intro }}

{% endif %}
{% if sec.lead_figures %}{{ figures(sec) }}{% endif %}
{% for caption, (head, rows) in sec.tables %}
{% if caption %}
**{{ caption }}**

{% endif %}
| {{ head | map("cell") | join(" | ") }} |
|{% for _ in head %}---|{% endfor %}

{% for row in rows %}
| {{ row | map("cell") | join(" | ") }} |
{% endfor %}

{% endfor %}
{% if not sec.lead_figures %}{{ figures(sec) }}{% endif %}
{% endfor %}
""")


def report_html(
    title: str, meta: dict[str, str], sections: Sequence, figure_paths: dict
) -> str:
    """The report page (``sections``: firth.report.Section), each figure an image
    linked by its path relative to the page (``figure_paths``: caption -> path), so
    that a rebuild rewrites only the figures that changed and the page stays small."""
    return REPORT_HTML.render(
        title=title,
        meta=meta,
        sections=sections,
        css=REPORT_CSS,
        figure_paths=figure_paths,
    )


def report_markdown(
    title: str, meta: dict[str, str], sections: Sequence, figure_paths: dict
) -> str:
    """The report as Markdown, each figure as a link to its PNG."""
    return (
        REPORT_MD.render(
            title=title, meta=meta, sections=sections, figure_paths=figure_paths
        ).rstrip("\n")
        + "\n"
    )


COMPARE_CSS = (
    "body{font-family:system-ui,sans-serif;margin:2em;color:#222}"
    "table{border-collapse:collapse;font-size:14px}"
    "th,td{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left}"
    "td.n{text-align:right;font-variant-numeric:tabular-nums}"
    "tr.worse,tr.missing{background:#fde2e1} tr.better{background:#e3f6e5}"
)

COMPARE_HTML = _HTML.from_string("""\
<!doctype html><html><head><meta charset='utf-8'>\
<title>firth compare {{ a }} {{ b }}</title><style>{{ css }}</style></head><body>
<h1>firth compare: {{ a }} → {{ b }}</h1>
<p>{{ summary }}. Tolerance: how far a tracked metric may move in the bad direction \
(↑ higher is better, ↓ lower is better) before it is flagged; delta = B - A, as in \
<code>dvc metrics diff</code>.</p>
<table><thead><tr><th>path</th><th>metric</th><th>{{ a }}</th><th>{{ b }}</th>\
<th>delta</th><th>tolerance</th><th>flag</th></tr></thead><tbody>
{% for r in rows %}
<tr class="{{ r.status }}"><td>{{ r.path }}</td><td>{{ r.key }}</td>\
<td class="n">{{ r.old }}</td><td class="n">{{ r.new }}</td>\
<td class="n">{{ r.delta }}</td><td>{{ r.tolerance }}</td><td>{{ r.status }}</td></tr>
{% endfor %}
</tbody></table></body></html>
""")

COMPARE_MD = _TEXT.from_string("""\
| path | metric | {{ a }} | {{ b }} | delta | tolerance | flag |
|---|---|---|---|---|---|---|
{% for r in rows %}
| {{ r.path }} | {{ r.key }} | {{ r.old }} | {{ r.new }} | {{ r.delta }} \
| {{ r.tolerance }} | {{ r.status }} |
{% endfor %}
{% if more %}

({{ more }} more rows left out)
{% endif %}
""")


def compare_html(rows: list[dict], a: str, b: str, summary: str) -> str:
    """``rows``: dicts of formatted cells (path, key, old, new, delta, tolerance,
    status)."""
    return COMPARE_HTML.render(rows=rows, a=a, b=b, summary=summary, css=COMPARE_CSS)


def compare_markdown(rows: list[dict], a: str, b: str, *, more: int = 0) -> str:
    return COMPARE_MD.render(rows=rows, a=a, b=b, more=more).rstrip("\n")
