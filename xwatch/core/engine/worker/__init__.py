"""The built-in workload process (``python -m xwatch.core.engine.worker``).

It is started by the supervisor with its configuration as JSON in
``XWATCH_WORKER_CONFIG`` and the event pipe's fd in ``XWATCH_EVENT_FD``. It may
run under another interpreter than xwatch's (a ROCm PyTorch environment), so
this package imports only the standard library, ``xwatch.core.engine.protocol`` and
torch/torchvision/transformers.
"""

CONFIG_ENV = "XWATCH_WORKER_CONFIG"

#: A request counts as "late" when it starts more than this after its
#: scheduled send time (open-loop workloads only).
LATE_THRESHOLD_S = 0.001

#: Variables reported in the hello event: what decides how the process ran.
REPORTED_ENV_PREFIXES = ("XSCHED_", "LD_", "HIP_", "CUDA_", "ROCR_", "HSA_", "MIOPEN_",
                         "AMD_", "OMP_", "PYTORCH_", "TORCH_")
