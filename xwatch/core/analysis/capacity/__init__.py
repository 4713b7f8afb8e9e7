"""``xwatch capacity``'s analysis: the search's statistics (``search``: brackets, shares
of dedicated; ``loads``: how one load is judged and the search's design; ``knee``:
where the next load goes) and what it says from its snapshot
record (``lines``: the table, the consolidation, the TOML), read by the plan, the
report and the dashboard alike."""
