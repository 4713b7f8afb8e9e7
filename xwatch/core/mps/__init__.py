"""The MPS mode (NVIDIA Multi-Process Service): a private control daemon per phase,
each workload's client settings, and proof that every workload joined it.

``control`` finds and talks to ``nvidia-cuda-mps-control`` and checks that MPS can
run here; ``env`` gives each workload its client variables; ``controller`` is the
mode backend the runner drives.
"""
