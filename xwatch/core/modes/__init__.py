"""Scheduling modes as one concept: native, XSched and MPS.

``base`` names the modes and states what a mode backend gives the runner;
``isolation`` keeps each mode's environment free of the others' (an XSched shim
on the user's ``LD_LIBRARY_PATH`` must not reach a native phase) and proves it
from each workload's ``/proc/PID/maps``. The XSched and MPS backends live in
their own stages (``core/xsched``, ``core/mps``) and build on these.
"""
