# measures: the dashboard as a user sees it, in tmux: one phase natively, then m (MPS), then x (XSched, given XS), the Compare and XSched tabs, s and q; what was left behind
# takes: about 3 * (S + 35) s
# params: SCENARIO (default intensive), S (default 20), XS (XSched install), SIZE (default 120x40)
S=${S:-20}; XS=${XS:-}; SC=${SCENARIO:-intensive}; SIZE=${SIZE:-120x40}
tmx new -d -s xw -x "${SIZE%x*}" -y "${SIZE#*x}" "$X run $SC --device cuda:0 --telemetry nvml --duration $S --no-keep ${XS:+--xsched $XS} --export $R/dash; echo EXIT=\$? > $R/dash-exit.txt"
pause $((S + 30)); tmx capture-pane -p -t xw > "$R/tmux-native.txt"
tmx send-keys -t xw m; pause $((S + 35)); tmx capture-pane -p -t xw > "$R/tmux-mps.txt"
if [ -n "$XS" ]; then
  tmx send-keys -t xw x; pause $((S + 40)); tmx capture-pane -p -t xw > "$R/tmux-xsched.txt"
  tmx send-keys -t xw 3; pause 3; tmx capture-pane -p -t xw > "$R/tmux-xsched-tab.txt"
fi
tmx send-keys -t xw 2; pause 2; tmx capture-pane -p -t xw > "$R/tmux-compare.txt"
tmx send-keys -t xw s; pause 5; tmx send-keys -t xw q; pause 15
tmx kill-server 2>/dev/null; left dashboard
