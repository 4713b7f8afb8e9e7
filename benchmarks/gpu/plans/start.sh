# measures: how fast a phase starts, stage by stage, per mode; the dashboard's m and x keys from the key to the first measured second
# takes: about 5 min (3 min without XS)
# params: SCENARIO (default intensive), XS (XSched install: the x key too), N (runs, default 3)
SC=${SCENARIO:-intensive}; XS=${XS:-}; N=${N:-3}
run phase-start.md python3 benchmarks/measure/phase_start.py "$SC" --modes native,mps --repeat "$N" --duration 5 --export "$R/ps" --json "$R/phase-start.json" --markdown
run restart-mps.txt python3 benchmarks/measure/restart.py "$SC" --modes native,mps --toggles 4 --device cuda:0 --json "$R/restart-mps.json"
[ -n "$XS" ] && run restart-xsched.txt python3 benchmarks/measure/restart.py "$SC" --modes native,xsched --toggles 3 --device cuda:0 --xsched "$XS" --json "$R/restart-xsched.json"
