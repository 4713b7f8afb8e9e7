"""The dashboard over a Ray cluster's boxes (``xwatch run --ray``): the plan and what
the screen reads of it (``run``), and the boxes as groups of GPUs (``panel``)."""
