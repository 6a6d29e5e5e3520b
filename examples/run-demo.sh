#!/bin/bash
# examples/run-demo.sh: mate's main job: installs the dependencies (Debian), builds mate, runs the
# demo workload at level 10, shows what was recorded, replays it, captures a live trace of the
# demo and renders its timeline, then crashes a run recorded into a ring of its last calls
# (MATE_RING) and replays what it left.
#
# usage: examples/run-demo.sh [--no-install] [--build DIR] [--out DIR [--clean]] [--safetensors]
#                             [--verbose]
#
#   --no-install   do not install packages (they must be there already)
#   --build DIR    build directory (default: build/ in the source tree)
#   --out DIR      where the demo's logs, dumps, trace and pictures go (default: DIR/demo of
#                  the build directory): a new or empty folder, or a previous run's output,
#                  of which the files this script writes are replaced; anything else in it is
#                  left alone, and a non-empty folder of other files is refused
#   --clean        remove a previous run's files from --out (nothing else), then stop
#   --safetensors  dump .safetensors files instead of .pt (MATE_DUMP_SAFETENSORS=1)
#   --verbose      show every step's full output (the build's, the recording's, the replay's)
#                  here too; without it, one line per step, and the rest in OUT/run-demo.log
#
# It can run again at any time: packages already installed are not installed again, the build
# is incremental, and the recording starts afresh.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build
out=
install=1
safetensors=0
verbose=0
clean=0
while [ $# -gt 0 ]; do
	case $1 in
	--no-install) install=0 ;;
	--build|--out)
		[ $# -ge 2 ] || { echo "run-demo.sh: $1 needs a folder (see --help)" >&2; exit 2; }
		if [ "$1" = --build ]; then build=$2; else out=$2; fi
		shift ;;
	--clean) clean=1 ;;
	--safetensors) safetensors=1 ;;
	-v|--verbose) verbose=1 ;;
	-h|--help) sed -n '2,22s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "run-demo.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

# ---- the output folder, checked before anything is installed, built or removed ---------------
# The files a run writes in it (timeline*.png: every picture), and the marker that says so.
made="api.log mate_dumps replay-completed.txt replay-failed.txt trace.log run-demo.log crash.log crash_dumps replay-crash.txt"
marker=.mate-demo
out_given=${out:+1}
[ -n "$out" ] || out=$build/demo
if [ -e "$out" ] && [ ! -d "$out" ]; then
	echo "run-demo.sh: --out $out: not a folder" >&2
	exit 2
fi
# A previous run's output: the marker, or in the default folder (runs before the marker)
# nothing but its files; a folder given with --out may hold a user's own recording.
previous_output() {
	local f
	[ -f "$out/$marker" ] && return 0
	[ -z "$out_given" ] && [ -f "$out/api.log" ] && [ -d "$out/mate_dumps" ] || return 1
	for f in "$out"/* "$out"/.[!.]*; do
		[ -e "$f" ] || continue
		case " $made " in *" ${f##*/} "*) continue ;; esac
		case ${f##*/} in timeline*.png) continue ;; esac
		return 1
	done
}
if [ -d "$out" ] && [ -n "$(ls -A "$out")" ] && ! previous_output; then
	echo "run-demo.sh: --out $out: not empty, and not a previous demo output (no $marker):" \
		"nothing was removed; give a new or empty folder" >&2
	exit 2
fi
# Removes what a run wrote there, by name: never anything else.
remove_previous() {
	local f
	for f in $made $marker; do rm -rf "${out:?}/$f"; done
	rm -f "$out"/timeline*.png
}
if [ "$clean" = 1 ]; then
	if [ -d "$out" ]; then
		remove_previous
		rmdir "$out" 2> /dev/null || echo "run-demo.sh: kept $out: it holds other files"
	fi
	exit 0
fi

mkdir -p "$build"
build=$(cd "$build" && pwd)
jobs=$(nproc 2>/dev/null || echo 2)
py=/usr/bin/python3   # Debian's, with python3-torch (not a pyenv or venv one)
[ -x "$py" ] || py=python3
nsteps=7
step=0
step() { step=$((step + 1)); printf '\n==> [%d/%d] %s\n' "$step" "$nsteps" "$*"; }

# ---- the story here, the details in run-demo.log -----------------------------------------------
mkdir -p "$out"
remove_previous
out=$(cd "$out" && pwd)
printf 'examples/run-demo.sh wrote this folder; its next run replaces: %s timeline*.png\n' \
	"$made" > "$out/$marker"
runlog=$out/run-demo.log
exec 3>&1 4>&2
if [ "$verbose" = 1 ]; then
	exec > >(tee "$runlog") 2>&1
else
	exec > "$runlog" 2>&1
fi
# say: one line of the story (on the terminal, and in the log)
say() {
	printf '%s\n' "$*"
	[ "$verbose" = 1 ] || printf '%s\n' "$*" >&3
}
failed() {
	local rc=$?
	[ "$rc" = 0 ] || [ "$verbose" = 1 ] && return
	printf 'run-demo.sh: step %d failed (exit %d); the end of %s:\n' "$step" "$rc" "$runlog" >&4
	tail -n 20 "$runlog" | sed 's/^/  /' >&4
}
trap failed EXIT
say "mate's demo: one line a step here; every step's full output in $runlog (or --verbose)"

# ---- 1. dependencies --------------------------------------------------------------------------
step "dependencies (.ci/packages)"
if [ "$install" = 0 ]; then
	say "[1/$nsteps] dependencies: not checked (--no-install)"
elif [ ! -r "$src/.ci/packages" ]; then
	say "[1/$nsteps] dependencies: no $src/.ci/packages to check against: install them yourself," \
		"then use --no-install"
	exit 2
elif ! command -v dpkg-query > /dev/null; then
	say "[1/$nsteps] dependencies: not a Debian system: install the equivalents of .ci/packages" \
		"yourself, then use --no-install"
else
	packages=$(grep -v '^#' "$src/.ci/packages" | tr '\n' ' ')
	missing=
	for p in $packages; do
		dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q 'install ok installed' || missing="$missing $p"
	done
	if [ -z "$missing" ]; then
		say "[1/$nsteps] dependencies: all $(echo $packages | wc -w) packages of .ci/packages are installed"
	else
		say "[1/$nsteps] dependencies: installing$missing"
		sudo=
		[ "$(id -u)" = 0 ] || sudo=sudo
		export DEBIAN_FRONTEND=noninteractive
		$sudo apt-get update
		$sudo apt-get install -y $packages
	fi
fi

# ---- 2. build -----------------------------------------------------------------------------------
step "build mate in $build"
# said before the build, which is silent for minutes the first time
say "[2/$nsteps] build: making mate in $build (make -j$jobs: a few minutes the first time) ..."
if [ ! -x "$src/configure" ]; then
	(cd "$src" && autoreconf -fi)
fi
if [ ! -f "$build/Makefile" ]; then
	(cd "$build" && "$src/configure" -q)
fi
make -C "$build" -j"$jobs" -s
say "[2/$nsteps] build: mate is built in $build; every tool and mate-demo are in $build/bin"

# ---- 3. record ------------------------------------------------------------------------------------
step "run examples/mate-demo at MATE_LOGLEVEL=10"
export MATE_LOGLEVEL=10 MATE_LOGDEST="$out/api.log" MATE_DUMP_DIR="$out/mate_dumps"
export MATE_DUMP_SAFETENSORS=$safetensors MATE_DEMO_CHECKSUM=1
echo "MATE_LOGLEVEL=10 MATE_LOGDEST=$MATE_LOGDEST MATE_DUMP_DIR=$MATE_DUMP_DIR MATE_DUMP_SAFETENSORS=$safetensors"
"$build/examples/mate-demo"
unset MATE_LOGLEVEL MATE_LOGDEST MATE_DUMP_DIR MATE_DUMP_SAFETENSORS MATE_DEMO_CHECKSUM
ncalls=$(grep -c 'MATE API Call:' "$out/api.log" || true)
say "[3/$nsteps] record: mate-demo at MATE_LOGLEVEL=10 made $ncalls calls: their log api.log," \
	"their tensors mate_dumps/ (a folder a call)"

# ---- 4. show what was recorded --------------------------------------------------------------------
step "what was recorded in $out"
log=$out/api.log
dumps=$out/mate_dumps
echo "--- the API log ($log): $(grep -c 'MATE API Call:' "$log") calls, $(wc -l < "$log") lines"
echo "    (the text of concurrent calls interleaves by blocks: each block is one write); its start:"
banner=$(grep -n '^Current dump directory is:' "$log" | head -1 | cut -d: -f1 || true)
sed -n "1,$((${banner:-0} + 45))p" "$log"
echo "..."
list=$(find "$build" -name mate-list-dumps -type f -perm -u+x 2> /dev/null | grep -v '/\.libs/' | head -1 || true)
if [ -n "$list" ]; then
	echo "--- the dumps ($list):"
	"$list" "$dumps"
else
	echo "--- the dumps ($dumps): one folder per call, its last record's status, its files"
	for d in "$dumps"/*/; do
		d=${d%/}
		status=$(tail -n 1 "$d/metadata.jsonl" 2> /dev/null | grep -o '"execution_status": "[a-z_]*"' | cut -d'"' -f4 || true)
		printf '  %s: %s  [%s]\n' "${d##*/}" "${status:-?}" "$(cd "$d" && ls | tr '\n' ' ' | sed 's/ $//')"
	done
fi
echo "--- $dumps/session.jsonl: $(wc -l < "$dumps/session.jsonl") records; the last one:"
tail -n 1 "$dumps/session.jsonl" | { "$py" -m json.tool 2> /dev/null || cat; }
# each call writes an inputs_saved record before it runs, then completed or failed after
outcomes=$(for m in "$dumps"/*/metadata.jsonl; do tail -n 1 "$m"; done |
	grep -o '"execution_status": "[a-z_]*"' | cut -d'"' -f4 | sort | uniq -c |
	awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}')
echo "--- how the calls ended: $outcomes (each call saved its inputs before it ran)"
ncompleted=$(grep -l '"execution_status": "completed"' "$dumps"/*/metadata.jsonl | wc -l)
nfailed=$(grep -l '"execution_status": "failed"' "$dumps"/*/metadata.jsonl | wc -l)
read_by=
ext=pt
[ "$safetensors" = 1 ] && ext=safetensors
first=$(ls "$dumps"/*/inputs.$ext 2> /dev/null | head -1 || true)
if [ -n "$first" ] && { [ "$ext" = safetensors ] || "$py" -c 'import torch' 2> /dev/null; }; then
	echo "--- Python reads the dumps: $first"
	read_by="; Python reads them"
	"$py" - "$first" <<'EOF'
import json, struct, sys
path = sys.argv[1]
if path.endswith(".pt"):
    import torch
    for key, t in torch.load(path, weights_only=True).items():
        print(f"  {key}: torch.load gives a tensor of shape {tuple(t.shape)}, {t.dtype}")
else:
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        for key, t in json.loads(f.read(n)).items():
            if key != "__metadata__":
                print(f"  {key}: shape {tuple(t['shape'])}, {t['dtype']}, bytes {t['data_offsets']}")
EOF
fi
say "[4/$nsteps] recorded: $ncompleted calls completed, $nfailed failed on purpose (a bad shape)," \
	"each with its inputs saved$read_by"

# ---- 5. replay ---------------------------------------------------------------------------------------
step "replay the recorded calls on libmate's kernels"
# the tools as built, found by `mate VERB` through PATH
export PATH="$build/src/replay:$build/src/record:$build/src/trace:$build/src/top:$build:$PATH"
echo "--- mate replay --status completed: every completed call re-executed and compared"
"$build/src/mate/mate" replay --status completed "$dumps" | tee "$out/replay-completed.txt"
echo "--- mate replay --status failed: the demo's deliberate failures re-executed (they must reproduce)"
# exit 0: each one failed again as it did when recorded
"$build/src/mate/mate" replay --status failed "$dumps" | tee "$out/replay-failed.txt"
grep -q "failed ([0-9]* reproduced failures\{0,1\})$" "$out/replay-failed.txt" || {
	echo "run-demo.sh: a recorded failure did not reproduce" >&2
	exit 1
}
npassed=$(grep -c ': Passed' "$out/replay-completed.txt" || true)
nexact=$(grep -c ': Passed (bit-exact' "$out/replay-completed.txt" || true)
nreproduced=$(grep -c ': Reproduced the failure' "$out/replay-failed.txt" || true)
say "[5/$nsteps] replay: $npassed of $ncompleted completed calls pass ($nexact bit-exact);" \
	"$nreproduced of $nfailed failures fail again as recorded"

# ---- 6. watch it live: trace and timeline ----------------------------------------------------------
step "capture a live trace of the demo and render its timeline"
MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 MATE_DEMO_SECONDS=3 \
	"$build/examples/mate-demo" 2> /dev/null &
demo=$!
sleep 0.5
echo "--- mate-trace -s 2 --pid $demo -o $out/trace.log"
"$build/src/trace/mate-trace" -s 2 --pid "$demo" -o "$out/trace.log"
wait "$demo"
echo "--- the trace's first events:"
awk '/^ *[0-9.]+s \| #/ && n++ < 8' "$out/trace.log"
echo "--- mate-visualize $out/trace.log --output $out/timeline.png"
"$build/mate-visualize" "$out/trace.log" --output "$out/timeline.png"
# and 4 ms of it, from the middle of its events (a loaded machine runs the demo in less than
# the capture's 2 s): single calls, their work and the arrows between them
zoom=$(awk '/^ *[0-9.]+s \| #/ { t = $1 + 0; if (n++ == 0) first = t; last = t }
	END { if (n) { t = (first + last) / 2; printf "--from %.6f --to %.6f", t, t + 0.004 } }' \
	"$out/trace.log")
echo "--- mate-visualize $out/trace.log $zoom --output $out/timeline-zoom.png"
"$build/mate-visualize" "$out/trace.log" $zoom --output "$out/timeline-zoom.png"

say "[6/$nsteps] live: a trace of the demo in $out/trace.log, its timeline $out/timeline.png"

# ---- 7. a flight recorder: a run that crashes, and its last calls recovered --------------------------
step "crash a run recorded into a ring of its last 8 calls, and replay what it left"
echo "MINILIB_FAULT=rmsnorm:5:0:crash MATE_LOGLEVEL=10 MATE_RING=8 MATE_DUMP_DIR=$out/crash_dumps mate-layers 6 64"
set +e
MINILIB_FAULT=rmsnorm:5:0:crash MATE_LOGLEVEL=10 MATE_RING=8 MATE_RING_PATH="$out/ring.%p" \
	MATE_RING_HELPER="$build/bin/mate-list-dumps" MATE_DUMP_DIR="$out/crash_dumps" \
	MATE_LOGDEST="$out/crash.log" "$build/bin/mate-layers" 6 64
rc=$?
set -e
[ "$rc" -ge 128 ] || { echo "run-demo.sh: mate-layers was to crash; it exited $rc"; exit 1; }
echo "--- mate-layers died by signal $((rc - 128)); mate-list-dumps $out/crash_dumps:"
"$build/bin/mate-list-dumps" "$out/crash_dumps"
echo "--- mate-replay $out/crash_dumps (exit 1: the call it died in now runs):"
"$build/bin/mate-replay" "$out/crash_dumps" > "$out/replay-crash.txt" || [ $? -eq 1 ]
cat "$out/replay-crash.txt"
nkept=$(find "$out/crash_dumps" -mindepth 1 -maxdepth 1 -type d | wc -l)
npass=$(grep -c ': Passed' "$out/replay-crash.txt" || true)
[ "$npass" -eq $((nkept - 1)) ] || { echo "run-demo.sh: $npass of $nkept recovered calls pass"; exit 1; }
say "[7/$nsteps] flight recorder: mate-layers crashed inside its 5th rmsnorm (signal $((rc - 128)));" \
	"its last $nkept calls, written from the ring, are in $out/crash_dumps: they replay, the" \
	"one it died in with its inputs"
say "done in ${SECONDS}s: everything is in $out"
