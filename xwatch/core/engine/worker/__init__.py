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

#: Which GPUs the process sees and in which order: read when the GPU runtime initializes
#: (CUDA: ``cuInit``, which the first CUDA call makes; HIP and ROCr: the first HIP call),
#: and by ``torch.cuda.device_count()`` on each call until then, never at ``import
#: torch`` (NVIDIA's CUDA Programming Guide, "CUDA Environment Variables", device
#: enumeration; ROCm's HIP "Initialization" and "GPU isolation" pages). xwatch pins a
#: copy with the first three (``Scenario.on_gpus``); ``ROCR_VISIBLE_DEVICES`` is ROCm's
#: own. ``GPU_DEVICE_ORDINAL`` (HIP/OpenCL) is left out: xwatch never sets it.
DEVICE_ENV = frozenset({"CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "HIP_VISIBLE_DEVICES",
                        "ROCR_VISIBLE_DEVICES"})
#: MPS's client variables (``core/mps/env.py``): read by the CUDA driver when it
#: initializes and reaches for the control daemon through the pipe directory, and when
#: it creates the client's context (priority, SM share, pinned memory); NVIDIA's MPS
#: guide, "Environment Variables"
MPS_CLIENT_ENV = frozenset({"CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY",
                            "CUDA_MPS_CLIENT_PRIORITY", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE",
                            "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"})
#: Every variable read at the GPU runtime's initialization that xwatch may set per
#: workload; the hello's ``gpu_init_env`` reports them as the runtime would read them.
GPU_INIT_ENV = DEVICE_ENV | MPS_CLIENT_ENV
