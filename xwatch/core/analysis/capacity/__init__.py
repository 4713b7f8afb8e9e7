"""``xwatch capacity``'s analysis: the search's statistics (``search``: loads judged by
the race's intervals, brackets, shares of dedicated) and what it says from its snapshot
record (``lines``: the table, the consolidation, the TOML), read by the plan, the
report and the dashboard alike."""
