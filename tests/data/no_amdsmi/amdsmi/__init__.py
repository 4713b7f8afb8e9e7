"""amdsmi as if it were not installed, for the Ray cluster of the fleet's tests
(``xwatch/testing/fleet/cluster.py``): this machine has the package (the test extra) but
not its library, and Ray's AMD probe catches only ImportError."""

raise ImportError("amdsmi is hidden from the fleet tests' Ray cluster (no libamd_smi.so "
                  "here)", name="amdsmi")
