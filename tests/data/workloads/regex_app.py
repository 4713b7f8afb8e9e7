"""Like XSched's example app: prints 'Task N completed in X ms' on stdout."""

import sys
import time

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
for i in range(n):
    time.sleep(0.02)
    print(f"Task {i} completed in {10 + i % 5} ms", flush=True)
    if i % 7 == 0:
        print("some unrelated log line", flush=True)
