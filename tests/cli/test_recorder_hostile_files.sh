#!/bin/sh
# recorder_hostile_files.sh: FIFOs and symlinks planted where the recorder writes neither block the host nor redirect its writes; names the user gave literally still work.
set -u
b=$top_builddir
. "$top_srcdir/tests/checks.sh"
checks_tmpdir hostile
demo() {  # demo OUT ERR VAR=VALUE...: the demo (2 threads, 2 rounds), killed after 20 s
	out=$1 err=$2
	shift 2
	env MATE_DEMO_ROUNDS=2 MATE_DEMO_THREADS=2 "$@" timeout 20 "$b/examples/mate-demo" >"$out" 2>"$err"
}
echo "victim's own text" >"$tmp/victim"

# a FIFO nobody reads as MATE_LOGDEST: a warning, the log on stderr, no hang
mkfifo "$tmp/fifo"
demo "$tmp/out" "$tmp/err" MATE_LOGLEVEL=1 MATE_LOGDEST="$tmp/fifo"
rc=$?
check [ $rc -eq 0 ] || fail "a FIFO as MATE_LOGDEST: the demo exits 0, got $rc (124: it hung)"
check grep -q "^mate: cannot open MATE_LOGDEST '$tmp/fifo': no reader" "$tmp/err" ||
	fail "a FIFO nobody reads is named in one warning: $(head -3 "$tmp/err")"

# a FIFO with a reader, named by the user: the log reaches the reader
cat "$tmp/fifo" >"$tmp/read" &
reader=$!
demo "$tmp/out" "$tmp/err" MATE_LOGLEVEL=1 MATE_LOGDEST="$tmp/fifo"
wait $reader
check grep -q rmsnorm "$tmp/read" || fail "a read FIFO gets the log: $(head -3 "$tmp/err")"

# /dev/stderr (a symlink the user named) keeps working
demo "$tmp/out" "$tmp/err" MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/stderr
check grep -q rmsnorm "$tmp/err" || fail "MATE_LOGDEST=/dev/stderr logs to stderr: $(head -3 "$tmp/err")"

# a symlink the user named literally is followed (they named the link)
ln -s "$tmp/named-target" "$tmp/named-link"
demo "$tmp/out" "$tmp/err" MATE_LOGLEVEL=1 MATE_LOGDEST="$tmp/named-link"
check grep -q rmsnorm "$tmp/named-target" || fail "a named link is followed: $(head -3 "$tmp/err")"

# a %i name is mate's own: a symlink planted at it is refused (the pid is known: exec, no timeout)
sh -c 'ln -s "$1/victim" "$1/log_$$"; exec env MATE_LOGLEVEL=1 MATE_LOGDEST="$1/log_%i" \
    MATE_DEMO_ROUNDS=2 MATE_DEMO_THREADS=2 "$2/examples/mate-demo"' sh "$tmp" "$b" \
    >"$tmp/out" 2>"$tmp/err"
check [ "$(cat "$tmp/victim")" = "victim's own text" ] ||
	fail "MATE_LOGDEST with %i does not write through a planted symlink: $(head -3 "$tmp/victim")"
check grep -q "^mate: cannot open MATE_LOGDEST '.*/log_[0-9]*': a symbolic link" "$tmp/err" ||
	fail "the refused link is named: $(head -3 "$tmp/err")"
sh -c 'ln -s "$1/victim" "$1/il_$$"; exec env MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null \
    MATE_INSTRUCTION_LOG="$1/il_%i" MATE_DEMO_ROUNDS=2 MATE_DEMO_THREADS=2 \
    "$2/examples/mate-demo"' sh "$tmp" "$b" >"$tmp/out" 2>"$tmp/err"
check [ "$(cat "$tmp/victim")" = "victim's own text" ] ||
	fail "MATE_INSTRUCTION_LOG with %i does not truncate a planted symlink's target"

# in a dump root: session.jsonl as a FIFO, then as a symlink; metadata.jsonl's folder
mkdir "$tmp/root"
mkfifo "$tmp/root/session.jsonl"
demo "$tmp/out" "$tmp/err" MATE_LOGLEVEL=10 MATE_LOGDEST=/dev/null MATE_DUMP_DIR="$tmp/root"
rc=$?
check [ $rc -eq 0 ] || fail "session.jsonl a FIFO: the demo exits 0, got $rc (124: it hung)"
check grep -q "dumping stopped: cannot open $tmp/root/session.jsonl" "$tmp/err" ||
	fail "session.jsonl a FIFO: one warning: $(head -3 "$tmp/err")"
cat "$tmp/root/session.jsonl" >/dev/null &
reader=$!
demo "$tmp/out" "$tmp/err" MATE_LOGLEVEL=10 MATE_LOGDEST=/dev/null MATE_DUMP_DIR="$tmp/root"
kill $reader 2>/dev/null
check grep -q "session.jsonl: not a regular file" "$tmp/err" ||
	fail "session.jsonl a FIFO another user reads: refused: $(head -3 "$tmp/err")"
rm -rf "$tmp/root"
mkdir "$tmp/root"
ln -s "$tmp/victim" "$tmp/root/session.jsonl"
demo "$tmp/out" "$tmp/err" MATE_LOGLEVEL=10 MATE_LOGDEST=/dev/null MATE_DUMP_DIR="$tmp/root"
check [ "$(cat "$tmp/victim")" = "victim's own text" ] ||
	fail "session.jsonl a symlink: the target is untouched: $(tail -1 "$tmp/victim")"
check grep -q "session.jsonl: a symbolic link" "$tmp/err" ||
	fail "session.jsonl a symlink: refused with a warning: $(head -3 "$tmp/err")"
checks_done
