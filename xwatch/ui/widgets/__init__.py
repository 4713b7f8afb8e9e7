"""Dashboard widgets: each one is fed a ``SessionSnapshot`` via ``show(snap)``."""
