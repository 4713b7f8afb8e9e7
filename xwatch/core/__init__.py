"""The headless engine: scenarios run as processes, events become statistics,
sessions become snapshots. Nothing under ``xwatch.core`` imports textual (a test
checks it) and nothing outside ``xwatch.core.engine.worker`` imports torch."""
