"""xwatch: watch GPU scheduling contention live (native vs XSched).

This package root stays import-light: the workload process imports
``xwatch.core.engine.worker`` from whatever Python the user points it at, and the
dashboard never imports torch. Nothing here may import textual or torch.
"""

__version__ = "0.1.0"
