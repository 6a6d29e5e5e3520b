#!/bin/bash
# examples/run-demo.sh: mate's main job: installs the dependencies (Debian), builds mate, runs the
# demo workload at level 10, shows what was recorded, replays it, then captures a live trace of
# the demo and renders its timeline.
#
# usage: examples/run-demo.sh [--no-install] [--build DIR] [--out DIR] [--safetensors]
#
#   --no-install   do not install packages (they must be there already)
#   --build DIR    build directory (default: build/ in the source tree)
#   --out DIR      where the demo's log and dumps go (default: DIR/demo of the build directory);
#                  emptied first, so every run shows only its own recording
#   --safetensors  dump .safetensors files instead of .pt (MATE_DUMP_SAFETENSORS=1)
#
# It can run again at any time: packages already installed are not installed again, the build
# is incremental, and the recording starts afresh.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build
out=
install=1
safetensors=0
while [ $# -gt 0 ]; do
	case $1 in
	--no-install) install=0 ;;
	--build) build=$2; shift ;;
	--out) out=$2; shift ;;
	--safetensors) safetensors=1 ;;
	-h|--help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "run-demo.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
mkdir -p "$build"
build=$(cd "$build" && pwd)
out=${out:-$build/demo}
jobs=$(nproc 2>/dev/null || echo 2)
py=/usr/bin/python3   # Debian's, with python3-torch (not a pyenv or venv one)
[ -x "$py" ] || py=python3
nsteps=6
step=0
step() { step=$((step + 1)); printf '\n==> [%d/%d] %s\n' "$step" "$nsteps" "$*"; }

# ---- 1. dependencies --------------------------------------------------------------------------
step "dependencies (.ci/packages)"
packages=$(grep -v '^#' "$src/.ci/packages" | tr '\n' ' ')
if [ "$install" = 0 ]; then
	echo "skipped (--no-install)"
elif ! command -v dpkg-query > /dev/null; then
	echo "not a Debian system: install the equivalents of .ci/packages yourself, then use --no-install"
else
	missing=
	for p in $packages; do
		dpkg-query -W -f='${Status}' "$p" 2> /dev/null | grep -q 'install ok installed' || missing="$missing $p"
	done
	if [ -z "$missing" ]; then
		echo "all $(echo $packages | wc -w) packages are installed"
	else
		echo "installing:$missing"
		sudo=
		[ "$(id -u)" = 0 ] || sudo=sudo
		export DEBIAN_FRONTEND=noninteractive
		$sudo apt-get update
		$sudo apt-get install -y $packages
	fi
fi

# ---- 2. build -----------------------------------------------------------------------------------
step "build mate in $build"
if [ ! -x "$src/configure" ]; then
	(cd "$src" && autoreconf -fi)
fi
if [ ! -f "$build/Makefile" ]; then
	(cd "$build" && "$src/configure" -q)
fi
make -C "$build" -j"$jobs" -s
echo "built: $build/examples/mate-demo"

# ---- 3. record ------------------------------------------------------------------------------------
step "run examples/mate-demo at MATE_LOGLEVEL=10"
rm -rf "$out"
mkdir -p "$out"
export MATE_LOGLEVEL=10 MATE_LOGDEST="$out/api.log" MATE_DUMP_DIR="$out/mate_dumps"
export MATE_DUMP_SAFETENSORS=$safetensors MATE_DEMO_CHECKSUM=1
echo "MATE_LOGLEVEL=10 MATE_LOGDEST=$MATE_LOGDEST MATE_DUMP_DIR=$MATE_DUMP_DIR MATE_DUMP_SAFETENSORS=$safetensors"
"$build/examples/mate-demo"
unset MATE_LOGLEVEL MATE_LOGDEST MATE_DUMP_DIR MATE_DUMP_SAFETENSORS MATE_DEMO_CHECKSUM

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
echo "--- statuses: $(cat "$dumps"/*/metadata.jsonl | grep -o '"execution_status": "[a-z_]*"' | cut -d'"' -f4 |
	sort | uniq -c | awk '{printf "%s%s %s", (NR > 1 ? ", " : ""), $1, $2}') records"
ext=pt
[ "$safetensors" = 1 ] && ext=safetensors
first=$(ls "$dumps"/*/inputs.$ext 2> /dev/null | head -1 || true)
if [ -n "$first" ] && { [ "$ext" = safetensors ] || "$py" -c 'import torch' 2> /dev/null; }; then
	echo "--- Python reads the dumps: $first"
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

# ---- 5. replay ---------------------------------------------------------------------------------------
step "replay the recorded calls on libmate's kernels"
# the tools as built, found by `mate VERB` through PATH
export PATH="$build/src/replay:$build/src/record:$build/src/trace:$build/src/top:$build:$PATH"
echo "--- mate replay --status completed: every completed call re-executed and compared"
"$build/src/mate/mate" replay --status completed "$dumps"
echo "--- mate replay --status failed: the demo's deliberate failures re-executed (they must reproduce)"
if "$build/src/mate/mate" replay --status failed "$dumps" | tee "$out/replay-failed.txt"; then
	echo "run-demo.sh: a deliberate failure no longer fails" >&2
	exit 1
fi
grep -q "failed ([0-9]* reproduced failures\{0,1\})$" "$out/replay-failed.txt" || {
	echo "run-demo.sh: a recorded failure did not reproduce" >&2
	exit 1
}

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
# and 4 ms of it, one second in: single calls, their work and the arrows between them
zoom=$(awk '/^ *[0-9.]+s \| #/ { t = $1 + 1; printf "--from %.6f --to %.6f", t, t + 0.004; exit }' "$out/trace.log")
echo "--- mate-visualize $out/trace.log $zoom --output $out/timeline-zoom.png"
"$build/mate-visualize" "$out/trace.log" $zoom --output "$out/timeline-zoom.png"

echo
echo "done: the log is $log, the dumps are in $dumps,"
echo "      the trace is $out/trace.log and its timeline $out/timeline.png"
