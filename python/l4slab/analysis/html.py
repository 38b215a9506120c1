"""Self-contained HTML reports, and the escaping of user text for every output format.

Reports are written as Markdown (``report.md``) and as one HTML file (``report.html``) whose
figures are embedded inline as SVG, so that the file can be mailed or archived alone.
:func:`markdown_to_html` renders the small Markdown subset the report writers produce
(headings, paragraphs, pipe tables, images, links, ``**bold**``, ``code``) and nothing else:
everything else is text and is escaped. User text (study names, labels, factor values) goes
through :func:`md_text` before it enters Markdown and :func:`mpl_text` before it enters a
matplotlib figure, where a ``$`` would otherwise start mathtext.
"""

from __future__ import annotations

import base64
import html
import io
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["md_text", "mpl_text", "figure_svg", "markdown_to_html", "html_page"]

#: Characters that would change the meaning of Markdown text (tables, emphasis, links, HTML).
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|<>#!$])")


def md_text(value: object) -> str:
    """``value`` as literal Markdown text: one line, with ``| < > * _ [ ] ` # ! $ \\`` escaped by a
    backslash, so a label such as ``<script>`` or ``a | b`` stays text in a table cell."""
    text = " ".join(str(value).split())
    return _MD_SPECIAL.sub(r"\\\1", text)


def mpl_text(value: object) -> str:
    """``value`` as literal matplotlib text: ``$`` escaped so that mathtext never parses it."""
    return str(value).replace("$", r"\$")


def figure_svg(fig: Figure) -> str:
    """``fig`` as an inline ``<svg>`` element (no XML prolog), text kept as text."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "l4slab"}):
        fig.savefig(buffer, format="svg")
    svg = buffer.getvalue()
    return svg[svg.index("<svg") :]


_INLINE = re.compile(
    r"(?P<img>!\[(?P<alt>(?:\\.|[^\]\\])*)\]\((?P<src>[^)\s]+)\))"
    r"|(?P<link>\[(?P<text>(?:\\.|[^\]\\])*)\]\((?P<href>[^)\s]+)\))"
    r"|(?P<code>`(?P<code_text>[^`]*)`)"
    r"|(?P<bold>\*\*(?P<bold_text>.+?)\*\*)"
    r"|(?P<escape>\\(?P<escaped>.))"
)
_ANCHOR = re.compile(r'^<a id="([A-Za-z0-9_-]+)"></a>$')
_SAFE_HREF = re.compile(r"^(#[A-Za-z0-9_-]+|[A-Za-z0-9_][A-Za-z0-9_./-]*)$")


def _image(src: str, alt: str, assets: Path | None) -> str:
    """An image of the report: its ``.svg`` twin inline if it exists, else the file as a data URI."""
    if assets is not None and _SAFE_HREF.match(src) and not src.startswith("#"):
        path = assets / src
        svg = path.with_suffix(".svg")
        if svg.is_file():
            text = svg.read_text(encoding="utf-8")
            return f'<figure class="fig" title="{html.escape(alt)}">{text[text.index("<svg") :]}</figure>'
        if path.is_file():
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            mime = "image/png" if path.suffix.lower() == ".png" else "application/octet-stream"
            return f'<figure class="fig"><img alt="{html.escape(alt)}" src="data:{mime};base64,{data}"></figure>'
    return f'<span class="missing">[missing figure {html.escape(src)}]</span>'


def _inline(text: str, assets: Path | None) -> str:
    out = []
    pos = 0
    for match in _INLINE.finditer(text):
        out.append(html.escape(text[pos : match.start()]))
        pos = match.end()
        if match.group("img"):
            out.append(_image(match.group("src"), match.group("alt"), assets))
        elif match.group("link"):
            href = match.group("href")
            label = _inline(match.group("text"), assets)
            out.append(f'<a href="{html.escape(href)}">{label}</a>' if _SAFE_HREF.match(href) else label)
        elif match.group("code"):
            out.append(f"<code>{html.escape(match.group('code_text'))}</code>")
        elif match.group("bold"):
            out.append(f"<strong>{_inline(match.group('bold_text'), assets)}</strong>")
        else:
            out.append(html.escape(match.group("escaped")))
    out.append(html.escape(text[pos:]))
    return "".join(out)


def _cells(line: str) -> list[str]:
    """The cells of a pipe-table row, honouring ``\\|`` inside a cell."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    cells, current, escaped = [], [], False
    for char in body:
        if escaped:
            current.append("\\" + char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "|":
            cells.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    cells.append("".join(current).strip())
    return cells


_NUMERIC = re.compile(r"^[-+−]?[\d.]+( ± [\d.]+)?( \(.*\))?( %)?$")


def _table(rows: list[str], assets: Path | None) -> str:
    head = _cells(rows[0])
    out = ['<div class="table"><table>', "<thead><tr>"]
    out += [f"<th>{_inline(c, assets)}</th>" for c in head]
    out.append("</tr></thead><tbody>")
    for row in rows[2:]:
        cells = _cells(row)
        out.append("<tr>")
        for cell in cells:
            cls = ' class="num"' if _NUMERIC.match(cell) else ""
            out.append(f"<td{cls}>{_inline(cell, assets)}</td>")
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def markdown_to_html(markdown: str, assets: str | os.PathLike[str] | None = None) -> str:
    """The HTML body of a report written in Markdown. Images are looked up in ``assets``
    (the report folder) and embedded: the ``.svg`` beside a ``.png`` inline, else a data URI."""
    folder = Path(assets) if assets is not None else None
    lines = markdown.splitlines()
    out: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            out.append(f"<p>{_inline(' '.join(paragraph), folder)}</p>")
            paragraph.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        anchor = _ANCHOR.match(stripped)
        if not stripped:
            flush()
        elif anchor:
            flush()
            out.append(f'<a id="{anchor.group(1)}"></a>')
        elif stripped.startswith("#"):
            flush()
            level = min(len(stripped) - len(stripped.lstrip("#")), 6)
            out.append(f"<h{level}>{_inline(stripped[level:].strip(), folder)}</h{level}>")
        elif stripped.startswith("|") and i + 1 < len(lines) and re.match(r"^\|(\s*:?-+:?\s*\|)+\s*$", lines[i + 1]):
            flush()
            rows = [line, lines[i + 1]]
            i += 2
            while i < len(lines) and lines[i].strip().startswith("|"):
                rows.append(lines[i])
                i += 1
            out.append(_table(rows, folder))
            continue
        elif stripped.startswith(("- ", "* ")):
            flush()
            items = []
            while i < len(lines) and lines[i].strip().startswith(("- ", "* ")):
                items.append(f"<li>{_inline(lines[i].strip()[2:], folder)}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        else:
            paragraph.append(stripped)
        i += 1
    flush()
    return "\n".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.45}
h1{border-bottom:2px solid #ddd;padding-bottom:.2em}h2{border-bottom:1px solid #eee;margin-top:2em}
.description{color:#444;font-size:1.05em}
.table{overflow-x:auto;margin:1em 0}table{border-collapse:collapse;font-size:.9em}
th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4}td.num{text-align:right;font-variant-numeric:tabular-nums}
tbody tr:nth-child(even){background:#fafafa}
figure.fig{display:inline-block;margin:.5em;vertical-align:top}figure.fig svg{max-width:100%;height:auto}
figure.fig img{max-width:100%}code{background:#f4f4f4;padding:0 .2em}.missing{color:#b00}
""".strip()


def html_page(title: str, body: str, description: str | None = None) -> str:
    """A complete HTML document: ``title`` (escaped) as title and first heading, an optional
    ``description`` paragraph (escaped), then ``body`` (already HTML), with inline CSS."""
    desc = f'<p class="description">{html.escape(description)}</p>\n' if description else ""
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>\n{_CSS}\n</style>\n</head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1>\n{desc}{body}\n</body>\n</html>\n"
    )
