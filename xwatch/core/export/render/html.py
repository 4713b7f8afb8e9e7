"""Report + SVG charts -> one self-contained HTML page (no scripts, no URLs)."""

from __future__ import annotations

import html
import re

from xwatch.core.export.render.model import Report


def _md_inline(text: str) -> str:
    """The tiny bit of Markdown our paragraphs use -> HTML (escaped first)."""
    t = html.escape(text)
    t = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", t)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    t = t.replace("&lt;br&gt;", "<br>").replace("  \n", "<br>\n")
    return t


def render_html(rep: Report, charts: list[str]) -> str:
    css = ("body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222}"
           "table{border-collapse:collapse;margin:8px 0 18px}td,th{border:1px solid #ccc;"
           "padding:3px 8px;text-align:right;font-variant-numeric:tabular-nums}"
           "td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}"
           "pre{background:#f6f6f6;padding:8px;overflow-x:auto}code{background:#f6f6f6}"
           "figure{margin:10px 0}h2{border-bottom:1px solid #ddd;padding-bottom:3px}")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>{html.escape(rep.title)}</title><style>{css}</style></head><body>",
           f"<h1>{html.escape(rep.title)}</h1>"]
    if charts:
        out.append("<h2>Charts</h2>")
        out += [f"<figure>{c}</figure>" for c in charts]
    for s in rep.sections:
        out.append(f"<h2>{html.escape(s.title)}</h2>")
        for p in s.paragraphs:
            if "\n    " in p:
                head, _, body = p.partition("\n\n")
                out.append(f"<p>{_md_inline(head)}</p><pre>"
                           f"{html.escape(chr(10).join(ln[4:] for ln in body.splitlines()))}</pre>")
            else:
                out.append(f"<p>{_md_inline(p)}</p>")
        for caption, t in s.tables:
            if caption:
                out.append(f"<p><i>{html.escape(caption)}</i></p>")
            out.append("<table><thead><tr>" + "".join(f"<th>{html.escape(h)}</th>"
                                                      for h in t.header) + "</tr></thead><tbody>")
            for row in t.rows:
                out.append("<tr>" + "".join(f"<td>{_md_inline(c)}</td>" for c in row) + "</tr>")
            out.append("</tbody></table>")
        if s.code:
            out.append(f"<pre>{html.escape(s.code)}</pre>")
    out.append("</body></html>")
    return "\n".join(out)
