#!/bin/sh
# test_top_all.sh: mate-top shows the user's own processes by default and, with --all, the
# processes in other users' runtime folders too (here the folders MATE_MONITOR_ALL names,
# all of them this user's: only root could read another's), each process line naming its
# user; a folder others may write, and an .info file that names a socket outside its
# folder, are not followed; without a folder's rights it says how many it cannot read.
set -u
b=$top_builddir
. "$top_srcdir/tests/checks.sh"
checks_tmpdir topall
pub=
trap 'kill $(cat "$tmp/pids" 2>/dev/null) 2>/dev/null; rm -rf "$tmp" "$pub"' EXIT
top=$b/src/top/mate-top
me=$(id -un)
mkdir -m 700 "$tmp/own" "$tmp/users" "$tmp/users/1" "$tmp/users/2" "$tmp/users/3"
mkdir -m 700 "$tmp/users/1/mate" "$tmp/users/2/mate" "$tmp/users/3/mate"
# demo DIR: a publisher announced in DIR (its pid on stdout and in $tmp/pids, which the
# trap kills: demo runs in a command substitution's subshell)
demo() {
	MATE_MONITOR_DIR=$1 MATE_LOGLEVEL=1 MATE_LOGDEST=/dev/null MATE_MONITOR=1 \
	    MATE_DEMO_SECONDS=3600 "$b/examples/mate-demo" >/dev/null 2>&1 &
	echo $! >> "$tmp/pids"
	wait_until [ -e "$1/$!.info" ]
	echo $!
}
mine=$(demo "$tmp/own")
other=$(demo "$tmp/users/1/mate")
# a folder anyone may write: not followed. The publisher itself will not announce in one,
# so the folder is opened after it has (a check of a publisher that never was cannot fail)
open=$(demo "$tmp/users/2/mate")
check [ -e "$tmp/users/2/mate/$open.info" ] || fail "the publisher in folder 2 announced"
chmod 777 "$tmp/users/2/mate"
moved=$(demo "$tmp/users/3/mate")
# an .info in folder 3 that names the socket of folder 1's publisher: not followed there
sed "s|^endpoint=.*|endpoint=ipc://$tmp/users/1/mate/$other.ipc|" "$tmp/users/3/mate/$moved.info" \
    > "$tmp/x" && mv "$tmp/x" "$tmp/users/3/mate/$moved.info"
chmod 600 "$tmp/users/3/mate/$moved.info"

has() { echo "$1" | grep -Eq "$2"; }
lacks() { ! has "$@"; }
# each process's last line in three tables
procs() { "$top" -b -n 3 -d 0.4 "$@" 2>"$tmp/err" | awk '$3 == "process" { p[$1] = $0 }
	END { for (k in p) print p[k] }'; }

got=$(MATE_MONITOR_DIR=$tmp/own MATE_MONITOR_ALL="$tmp/users/*/mate" procs)
check has "$got" "^$mine " || fail "by default the user's own process: '$got'"
check lacks "$got" "^($other|$open|$moved) " || fail "by default no other folder's: '$got'"
check lacks "$got" " user " || fail "by default no user column: '$got'"

got=$(MATE_MONITOR_DIR=$tmp/own MATE_MONITOR_ALL="$tmp/users/*/mate" procs --all)
check has "$got" "^$mine +mate-demo +process +user $me  cpu " &&
	has "$got" "^$other +mate-demo +process +user $me  cpu " ||
	fail "--all: both processes, each with its user: '$got' $(cat "$tmp/err")"
check lacks "$got" "^$open " || fail "--all: a folder others may write is not followed: '$got'"
check lacks "$got" "^$moved " || fail "--all: an .info naming a socket elsewhere: '$got'"
check [ ! -s "$tmp/err" ] || fail "--all: nothing on stderr: $(cat "$tmp/err")"

# a folder it cannot read (another user's, mode 700): told, as one of how many; root reads
# every folder, so as root this runs as nobody (setpriv), in a folder nobody can reach
pub=$(mktemp -d)
chmod 711 "$pub"
mkdir -m 755 "$pub/users"
mkdir -m 700 "$pub/users/1" "$pub/users/2"
as=
if [ "$(id -u)" = 0 ]; then
	as="setpriv --reuid=65534 --regid=65534 --clear-groups"
	chown 65534 "$pub/users/2"
else
	chmod 300 "$pub/users/1"
fi
$as env MATE_MONITOR_DIR="$pub/own" MATE_MONITOR_ALL="$pub/users/*" "$top" -b -n 1 -d 0.1 --all \
    >/dev/null 2>"$tmp/err"
check grep -q "^mate-top: --all: 1 other user's folder cannot be read (only root can)" "$tmp/err" ||
	fail "an unreadable folder is told: $(cat "$tmp/err")"
"$top" --all --pid $mine -n 1 >/dev/null 2>"$tmp/err"
rc=$?
check [ $rc = 2 ] || fail "--all with --pid: exit $rc, not 2: $(cat "$tmp/err")"
checks_done
