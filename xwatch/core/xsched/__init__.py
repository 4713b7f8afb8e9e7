"""XSched support: install discovery (install), per-workload environment (env), the
xserver HTTP client (client), engagement rules (engagement) and the mode backend that
ties them together (controller)."""
