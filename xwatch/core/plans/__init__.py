"""What a command runs, phase after phase: the runner (one phase in a mode), headless
runs, compare, sweep, calibrate, doctor, and the console lines they print."""
