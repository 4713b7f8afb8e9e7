"""Snapshots out of the session: JSON/CSV written atomically, the report model and
its Markdown and HTML renderings with SVG charts."""
