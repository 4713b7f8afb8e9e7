# measures: the rest of issue 58 in one sitting on a 4-GPU box, each part its own plan into its own folder (R/NAME): leave (join-stall PARTS="A B C" with LEAVE=1: a joiner's exit, a LOW that leaves and a LOW killed, every worker telling xserver it leaves before it exits), stay (join-stall's part B with LEAVE=0, the old exit: the same sitting's control), split (split STEPS="aa naa": the split layout's A/A and the neighbour A/A with XSched neighbours), start (xsched-start: the first XSched phase and x, issue 58 goal 4), race (race-box STEPS="one box": the same race on cuda:0 alone for BUDGET_ONE minutes, then over every GPU for up to BUDGET minutes, runs a minute compared)
# takes: about 22 min on 4 GPUs at its defaults; run it detached (device.sh detach, then wait, again and again)
# params: XS (the XSched install, required), PARTS (default "leave split race"; stay adds the control), BUDGET (minutes of the race over the box, default 8), BUDGET_ONE (minutes of the one-GPU race, default 3), R_AA (A/A rounds, default 4), R_NAA (neighbour A/A rounds, default 3), S (seconds an A/A phase, default 8)
# Each part's folder has the part's own commands.txt, progress.txt and leftovers.txt;
# R/progress.txt says which part runs. A part that fails does not stop the others.
XS=${XS:?"XS=the XSched install"}; [ -d "$XS" ] && XS=$(cd "$XS" && pwd)
PARTS=${PARTS:-"leave split race"}; S=${S:-8}; BUDGET=${BUDGET:-8}; BUDGET_ONE=${BUDGET_ONE:-3}
R_AA=${R_AA:-4}; R_NAA=${R_NAA:-3}
D="bash benchmarks/gpu/device.sh"
part() { local name=$1; shift; say "part $name: $*"; echo "\$ $D $*" >> "$R/commands.txt"
         local t0=$SECONDS; $D "$@" > "$R/$name.log" 2>&1
         echo "  -> exit $?, $((SECONDS - t0)) s ($name.log)" >> "$R/commands.txt"
         left "part $name"; }
for p in $PARTS; do
  case $p in
    leave) part leave join-stall "$R/leave" XS="$XS" PARTS="A B C" LEAVE=1 DUR1=35 DUR2=10 ;;
    stay) part stay join-stall "$R/stay" XS="$XS" PARTS="B" LEAVE=0 ;;
    start) part start xsched-start "$R/start" XS="$XS" ;;
    split) part split split "$R/split" XS="$XS" STEPS="aa naa" R_AA="$R_AA" S="$S" ;;
    naa) part naa split "$R/naa" XS="$XS" STEPS="naa" R_AA="$R_NAA" S="$S" ;;
    race) part race race-box "$R/race" XS="$XS" STEPS="one box" BUDGET="$BUDGET" \
            BUDGET_ONE="$BUDGET_ONE" ;;
    *) echo "unknown part $p" >> "$R/commands.txt" ;;
  esac
done
true
