"""Report -> Markdown."""

from __future__ import annotations

from xwatch.core.export.render.model import Report


def render_markdown(rep: Report) -> str:
    out = [f"# {rep.title}", ""]
    for s in rep.sections:
        out += [f"## {s.title}", ""]
        for p in s.paragraphs:
            out += [p, ""]
        for caption, t in s.tables:
            if caption:
                out += [f"*{caption}*", ""]
            out.append("| " + " | ".join(t.header) + " |")
            out.append("|" + "|".join("---" for _ in t.header) + "|")
            for row in t.rows:
                out.append("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |")
            out.append("")
        if s.code:
            out += ["```", s.code, "```", ""]
    return "\n".join(out)
