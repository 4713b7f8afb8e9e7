"""How a report looks: its model (sections, tables), the Markdown and HTML
renderings, and the charts in them (inline SVG, braille). Knows nothing of files."""
