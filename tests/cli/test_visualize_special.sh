#!/bin/sh
# visualize_special.sh: mate-visualize -o never replaces a symlink, FIFO or device with a regular file: it writes into FIFOs and devices as -o - does and refuses the rest.
set -u
bin="$top_builddir/mate-visualize"
demo="$top_srcdir/tests/fixtures/gt-logs/demo.log"
. "$top_srcdir/tests/checks.sh"
checks_tmpdir vis-special

# a FIFO: the picture goes to its reader, the FIFO stays a FIFO
mkfifo "$tmp/fifo.svg"
timeout 20 cat "$tmp/fifo.svg" >"$tmp/read.svg" &   # ends if the FIFO is replaced
reader=$!
timeout 20 "$bin" -q -o "$tmp/fifo.svg" "$demo" 2>"$tmp/err"
rc=$?
wait $reader
check [ $rc -eq 0 ] || fail "-o FIFO exits 0, got $rc: $(cat "$tmp/err")"
check [ -p "$tmp/fifo.svg" ] || fail "-o FIFO: the FIFO was replaced: $(ls -l "$tmp/fifo.svg")"
check grep -q "<svg" "$tmp/read.svg" || fail "-o FIFO: the reader got the picture"

# a character device named through a symlink (/dev/null): written into, not replaced
ln -s /dev/null "$tmp/null.json"
"$bin" -q -o "$tmp/null.json" "$demo" 2>"$tmp/err"
rc=$?
check [ $rc -eq 0 ] || fail "-o link-to-/dev/null exits 0, got $rc: $(cat "$tmp/err")"
check [ -L "$tmp/null.json" ] || fail "-o link-to-/dev/null: the link was replaced"
check [ -c /dev/null ] || fail "/dev/null is still a device"

# a symlink to a regular file: refused, exit 1, link and target unchanged
echo "someone's file" >"$tmp/target"
ln -s "$tmp/target" "$tmp/link.svg"
"$bin" -q -o "$tmp/link.svg" "$demo" 2>"$tmp/err"
rc=$?
check [ $rc -eq 1 ] || fail "-o symlink exits 1, got $rc"
check [ -L "$tmp/link.svg" ] || fail "-o symlink: the link was replaced"
check [ "$(cat "$tmp/target")" = "someone's file" ] || fail "-o symlink: the target changed"
check grep -q "link.svg is a symbolic link: not replaced" "$tmp/err" ||
	fail "-o symlink: the refusal is named: $(cat "$tmp/err")"
for fmt in png json; do
	ln -s "$tmp/target" "$tmp/link.$fmt"
	"$bin" -q -o "$tmp/link.$fmt" "$demo" 2>"$tmp/err"
	check [ -L "$tmp/link.$fmt" ] || fail "-o symlink .$fmt: the link was replaced"
done

# a directory: refused by name
mkdir "$tmp/dir.svg"
"$bin" -q -o "$tmp/dir.svg" "$demo" 2>"$tmp/err"
check [ $? -eq 1 ] || fail "-o directory exits 1"
check grep -q "dir.svg is a directory: not replaced" "$tmp/err" ||
	fail "-o directory: named: $(cat "$tmp/err")"

# a regular file is still replaced atomically
echo old >"$tmp/plain.svg"
"$bin" -q -o "$tmp/plain.svg" "$demo" 2>"$tmp/err"
check grep -q "<svg" "$tmp/plain.svg" || fail "-o regular file: replaced by the picture"
checks_done
