#!/bin/sh
# tensor-files.sh: libmate's .pt/safetensors write and read throughput against torch.save/torch.load and plain write()/read().
#
# How to run (this script builds nothing):
#   cd BUILDDIR && make bench                 # builds bench/tensor-files
#   sh SRCDIR/bench/tensor-files.sh [--small] [--dir DIR] [--repeat N] [--cold] [--fsync]
# from the build directory (or set BUILDDIR=...). One run measures, in one folder:
#   libmate:  mate_pt_write/mate_pt_read and mate_safetensors_write/_read  (bench/tensor-files)
#   plain:    write()/read() of the same bytes, padded to the libmate file's size (bench/tensor-files)
#   torch:    torch.save/torch.load of the same tensors  (bench/tensor-files-torch.py)
# on three cases of random f32 tensors, one file each: 1 x 512 MiB, 100 x 5 MiB and
# 10,000 x 4 KiB (1.03 GiB in all); the tensors are bit-identical on both sides.
#
# Options:
#   --small      61 MiB instead (1 x 32 MiB, 100 x 256 KiB, 1,000 x 4 KiB): a quick check
#   --dir DIR    folder for the files (default: a new one under ${TMPDIR:-/tmp}, removed at
#                the end); at most two files exist at a time (about 1.1 GiB in full mode)
#   --repeat N   rounds (default 3); each round runs the libmate/plain part and the
#                torch part once, alternating which goes first; the table shows medians
#   --best       the table shows the best (shortest) time of the rounds, not the median,
#                which filters out interference on a busy machine
#   --cold       drop each file from the page cache (fsync + POSIX_FADV_DONTNEED) before
#                each timed read; default: warm, i.e. the file is read through once first
#   --fsync      end every timed write with fsync() (default: at close(), or when
#                torch.save returns); files are fsync'ed untimed after each write anyway,
#                so no timed write starts with dirty pages of ours
#   --no-prefault  do not touch and free 1.25x the payload right before each timed
#                operation (both halves do by default): on a virtual machine that hands
#                freed memory back to its host within seconds (virtio-balloon free page
#                reporting), first touches run at about 450 MiB/s instead of 10 GiB/s
#                and would measure the host, not the code; before a timed write both
#                halves also write and unlink (unsynced) a scratch file of that size in
#                the folder, so the page cache the write takes is backed too
# Environment: BUILDDIR (default .) holds bench/tensor-files; PYTHON_TORCH (default
#   /usr/bin/python3) is a Python with torch and numpy.
# Output: MiB/s of tensor payload per case and in total (total bytes / summed times),
#   then each target with PASS or MISS. Exit: 0 ran, 1 failed, 2 usage.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
builddir=${BUILDDIR:-.}
prog=$builddir/bench/tensor-files
py=${PYTHON_TORCH:-/usr/bin/python3}
dir=
args=
rounds=3
stat=median

usage() {
	if [ "$1" = 0 ]; then
		sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'
	else
		echo "usage: tensor-files.sh [--small] [--dir DIR] [--repeat N] [--best] [--cold] [--fsync] [--no-prefault] [--help]" >&2
	fi
	exit "$1"
}

while [ $# -gt 0 ]; do
	case $1 in
	--small|--cold|--fsync|--no-prefault) args="$args $1" ;;
	--repeat) [ $# -ge 2 ] || usage 2; rounds=$2; shift ;;
	--best) stat=best ;;
	--dir) [ $# -ge 2 ] || usage 2; dir=$2; shift ;;
	-h|--help) usage 0 ;;
	*) echo "tensor-files.sh: unknown option: $1" >&2; usage 2 ;;
	esac
	shift
done

if [ ! -x "$prog" ]; then
	echo "tensor-files.sh: $prog not found: run 'make bench' in the build directory first" >&2
	exit 1
fi
if ! "$py" -c 'import torch, numpy' 2>/dev/null; then
	echo "tensor-files.sh: $py cannot import torch and numpy (set PYTHON_TORCH)" >&2
	exit 1
fi
if [ -z "$dir" ]; then
	dir=$(mktemp -d "${TMPDIR:-/tmp}/mate-bench.XXXXXX")
	trap 'rm -rf "$dir"' EXIT INT TERM
fi
case $rounds in
''|*[!0-9]*|0) echo "tensor-files.sh: --repeat needs a positive number" >&2; exit 2 ;;
esac
mkdir -p "$dir"
out_c=$dir/libmate.out
out_t=$dir/torch.out
: >"$out_c"
: >"$out_t"

run_c() {
	# shellcheck disable=SC2086
	"$prog" --dir "$dir" --repeat 1 $args >>"$out_c"
}
run_torch() {
	# shellcheck disable=SC2086
	"$py" "$here/tensor-files-torch.py" --dir "$dir" --repeat 1 $args >>"$out_t"
}
r=1
while [ "$r" -le "$rounds" ]; do
	echo "tensor-files: round $r of $rounds" >&2
	if [ $((r % 2)) = 1 ]; then run_c; run_torch; else run_torch; run_c; fi
	r=$((r + 1))
done

awk -v cfile="$out_c" -v stat="$stat" -v rounds="$rounds" '
function tput(b, t) { return (t == "NA" || t <= 0) ? "n/a" : sprintf("%.0f", b / 1048576 / t) }
function fig(who, fmt, op, c) { return use == "best" ? bst[who " " fmt " " op " " c] : med[who " " fmt " " op " " c] }
# the median (or with s=best the minimum) of the times recorded for key k
function pick(k, s,   i, j, n, v, a) {
	n = nt[k]
	for (i = 1; i <= n; i++) {
		v = times[k, i]
		for (j = i - 1; j >= 1 && a[j] > v; j--) a[j + 1] = a[j]
		a[j + 1] = v
	}
	if (s == "best") return a[1]
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function sz(k) { return (k in fsz) ? fsz[k] : "n/a" }
# total time over the cases, NA if any is missing
function tot(who, fmt, op,   i, s, t) {
	s = 0
	for (i = 1; i <= 3; i++) {
		t = fig(who, fmt, op, cases[i])
		if (t == "" || t == "NA") return "NA"
		s += t
	}
	return s
}
function ratio(num, den) { return (num == "NA" || den == "NA" || den <= 0) ? "NA" : num / den }
function verdict(r, want) { return r == "NA" ? "n/a" : (r >= want ? "PASS" : "MISS") }
function rfmt(r) { return r == "NA" ? "n/a" : sprintf("%.2fx", r) }
# r: the ratio from medians, rb: from the best times
function target(fmt, what, r, rb, want) {
	printf "  %-12s %-34s %7s %-4s  %7s %-4s  (target >= %.2fx)\n", fmt, what, rfmt(r), \
	    verdict(r, want), rfmt(rb), verdict(rb, want), want
}
# each target from the medians and from the best times
function targets(fmt, name, num_who, num_fmt, den_who, den_fmt, op, c, want,   r, rb) {
	use = "median"
	r = c == "" ? ratio(tot(num_who, num_fmt, op), tot(den_who, den_fmt, op)) \
	    : ratio(fig(num_who, num_fmt, op, c), fig(den_who, den_fmt, op, c))
	use = "best"
	rb = c == "" ? ratio(tot(num_who, num_fmt, op), tot(den_who, den_fmt, op)) \
	    : ratio(fig(num_who, num_fmt, op, c), fig(den_who, den_fmt, op, c))
	use = stat
	target(fmt, name, r, rb, want)
}
BEGIN { cases[1] = "big"; cases[2] = "medium"; cases[3] = "small"; nf = 0 }
/^CONFIG/ { config = $0; sub(/^CONFIG /, "", config); sub(/ repeat=1/, "", config) }
/^TORCH/ { tv = $2 }
/^CHECKSUM/ { if (FILENAME == cfile) cs_c[$2] = $3; else cs_t[$2] = $3 }
/^FILESIZE/ { fsz[$2 " " $3 " " $4] = $5 }
/^RESULT/ {
	k = $2 " " $3 " " $4 " " $5
	if ($7 == "NA") na[k] = 1
	else times[k, ++nt[k]] = $7
	bytes[$5] = $6
	if ($2 == "libmate" && !seen[$3]++) fmts[++nf] = $3
}
END {
	for (k in nt) { med[k] = pick(k, "median"); bst[k] = pick(k, "best") }
	for (k in na) med[k] = bst[k] = "NA"
	use = stat
	total = bytes["big"] + bytes["medium"] + bytes["small"]
	printf "tensor-files: %.2f GiB of f32 tensors; %s; %s of %d rounds; torch %s\n", \
	    total / 1073741824, config, stat, rounds, tv
	same = 1
	for (i = 1; i <= 3; i++) if (cs_c[cases[i]] != cs_t[cases[i]]) same = 0
	print same ? "  data: libmate and torch tensors bit-identical (checksums match)" \
	    : "  WARNING: libmate and torch data checksums differ"
	printf "\n%-12s %-7s %9s %9s %9s   %9s %9s %9s   (MiB/s)\n", "format", "case", \
	    "mate wr", "torch.sv", "write()", "mate rd", "torch.ld", "read()"
	for (f = 1; f <= nf; f++) {
		fmt = fmts[f]
		for (i = 1; i <= 4; i++) {
			c = i <= 3 ? cases[i] : "total"
			b = i <= 3 ? bytes[c] : total
			lw = i <= 3 ? fig("libmate", fmt, "write", c) : tot("libmate", fmt, "write")
			tw = i <= 3 ? fig("torch", "pt", "write", c) : tot("torch", "pt", "write")
			pw = i <= 3 ? fig("plain", fmt, "write", c) : tot("plain", fmt, "write")
			lr = i <= 3 ? fig("libmate", fmt, "read", c) : tot("libmate", fmt, "read")
			tr = i <= 3 ? fig("torch", "pt", "read", c) : tot("torch", "pt", "read")
			pr = i <= 3 ? fig("plain", fmt, "read", c) : tot("plain", fmt, "read")
			printf "%-12s %-7s %9s %9s %9s   %9s %9s %9s\n", fmt, c, tput(b, lw), \
			    tput(b, tw), tput(b, pw), tput(b, lr), tput(b, tr), tput(b, pr)
		}
	}
	printf "\nfile sizes (bytes):"
	for (i = 1; i <= 3; i++) {
		c = cases[i]
		printf "  %s: torch %s", c, sz("torch pt " c)
		for (f = 1; f <= nf; f++) printf ", %s %s", fmts[f], sz("libmate " fmts[f] " " c)
	}
	printf "\n\ntargets (ratios of times; higher is better for libmate):\n"
	printf "  %-12s %-34s %12s  %12s\n", "", "", "from medians", "from bests"
	for (f = 1; f <= nf; f++) {
		fmt = fmts[f]
		targets(fmt, "write vs torch.save", "torch", "pt", "libmate", fmt, "write", "", 1.5)
		targets(fmt, "write vs plain write()", "plain", fmt, "libmate", fmt, "write", "", 0.70)
		targets(fmt, "read vs torch.load", "torch", "pt", "libmate", fmt, "read", "", 1.5)
		n = sprintf("%d", bytes["small"] / 4096)
		targets(fmt, n " x 4 KiB write vs torch.save", "torch", "pt", "libmate", fmt, \
		    "write", "small", 1.0)
		targets(fmt, n " x 4 KiB read vs torch.load", "torch", "pt", "libmate", fmt, \
		    "read", "small", 1.0)
	}
}' "$out_c" "$out_t"
