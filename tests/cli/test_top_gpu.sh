#!/bin/sh
# top_gpu.sh: mate-top's GPU columns from NVML, opened with dlopen (a test-only NVML here,
# tests/fakes/nvml.c, with NVML's ABI): a process's SM utilisation and memory on each device
# it holds memory on, "gpu0 37% 117.74MB"; memory alone where the driver has no utilisation
# samples; another process on the device is not shown; no NVML (or MATE_NVML=none): no
# columns and no error.
set -u
b=$top_builddir
. "$top_srcdir/tests/checks.sh"
checks_tmpdir topgpu
demo=
trap 'kill $demo 2>/dev/null; rm -rf "$tmp"' EXIT
nvml=$b/tests/fakes/.libs/libfakenvml.so
if [ ! -e "$nvml" ]; then
	echo "note: no $nvml (a static-only build): nothing to open"
	exit 77
fi
mkdir -m 700 "$tmp/rt"
MATE_MONITOR_DIR=$tmp/rt MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 \
    MATE_DEMO_SECONDS=3600 "$b/examples/mate-demo" >/dev/null 2>&1 &  # until the trap kills it
demo=$!
wait_until [ -e "$tmp/rt/$demo.info" ]
has() { echo "$1" | grep -Eq "$2"; }
# the process line of the last of two tables
line() { MATE_MONITOR_DIR=$tmp/rt "$b/src/top/mate-top" -b -n 2 -d 0.3 --pid $demo 2>"$tmp/err" |
	grep -E "^$demo +mate-demo +process " | tail -1; }

# two devices: 37% and 117.74 MB on gpu0, 1 MiB and no sample on gpu1; pid 1 on gpu0
got=$(MATE_NVML=$nvml FAKE_NVML_DEVICES=2 FAKE_NVML="0:$demo:123456789:37,1:$demo:1048576:,0:1:5:50" line)
check has "$got" ' process cpu [0-9]+%  rss [0-9.]+[KMG]?B  gpu0 37% 117\.74MB  gpu1 0% 1\.00MB$' ||
	fail "the process line with its two devices: '$got' $(cat "$tmp/err")"
# a driver without utilisation samples: memory alone
got=$(MATE_NVML=$nvml FAKE_NVML_NO_UTIL=1 FAKE_NVML="0:$demo:2048:" line)
check has "$got" ' rss [0-9.]+[KMG]?B  gpu0 2\.0KB$' || fail "memory alone: '$got'"
# not on a device: no GPU columns
got=$(MATE_NVML=$nvml FAKE_NVML="0:1:2048:5" line)
check has "$got" ' rss [0-9.]+[KMG]?B$' || fail "a process on no device: '$got'"
# no NVML, or turned off: no columns, no error
for v in "$tmp/no-such-libnvidia-ml.so" none; do
	got=$(MATE_NVML=$v FAKE_NVML="0:$demo:2048:5" line)
	check has "$got" ' rss [0-9.]+[KMG]?B$' && [ ! -s "$tmp/err" ] ||
		fail "MATE_NVML=$v: '$got' $(cat "$tmp/err")"
done
checks_done
