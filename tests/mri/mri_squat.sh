#!/bin/sh
# mri_squat.sh AMEBA TARGET
#
# Another local user pre-creates the victim's socket directory
# /tmp/ameba-<victim uid> (mode 777) and binds a socket of its own there
# (issue 20, item 1). With two real users, created here (needs root;
# exits 77, skipped, otherwise):
#   1. the victim's program does not switch profiling off: its server
#      makes a directory of its own (/tmp/ameba-UID.XXXXXX) and says so;
#   2. the victim's `ameba mri PID` attaches to the real server and never
#      connects to the attacker's socket;
#   3. with no real server (AMEBA_MRI=0), the victim's client refuses the
#      attacker's socket with a message naming its owner, and connects to
#      nothing.
set -u
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: two users' processes need root to start (this is uid $(id -u))"
	exit 77
fi
ameba=$1 target=$2
V=ameba_test_victim A=ameba_test_squatter
for u in $V $A; do
	id -u $u >/dev/null 2>&1 || useradd -r -M -s /usr/sbin/nologin $u ||
		{ echo "SKIP: cannot create user $u"; exit 77; }
done
vu=$(id -u $V) au=$(id -u $A)
tmp=$(mktemp -d /tmp/mri-squat.XXXXXX) || exit 1
chmod 755 "$tmp"
pids=
cleanup() {
	for p in $pids; do kill $p 2>/dev/null; done
	pkill -KILL -u "$vu" 2>/dev/null; pkill -KILL -u "$au" 2>/dev/null	# test-only users
	rm -rf "$tmp" "/tmp/ameba-$vu" /tmp/ameba-$vu.*
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$tmp"/*.out "$tmp"/*.err "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }; done; exit 1; }
as() { u=$1; shift; setpriv --reuid=$(id -u $u) --regid=$(id -g $u) --clear-groups "$@"; }

rm -rf "/tmp/ameba-$vu" /tmp/ameba-$vu.*
as $A mkdir -m 777 "/tmp/ameba-$vu" || fail "the squatter could not make /tmp/ameba-$vu"
as $A chmod 777 "/tmp/ameba-$vu"

# The squatter's server: logs every connection it gets.
cat > "$tmp/squat.py" <<'PY'
import os, socket, sys
path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o777)
s.listen(4)
open(log, "a").close()
while True:
    c, _ = s.accept()
    with open(log, "a") as f:
        f.write("connection\n")
    c.close()
PY
chmod 644 "$tmp/squat.py"
touch "$tmp/squat.log" "$tmp/squat2.log"
chmod 666 "$tmp/squat.log" "$tmp/squat2.log"

# 1-2: the victim's program, then the squatter's socket under its pid
(cd "$tmp" && as $V env -u XDG_RUNTIME_DIR "$target" --spin 60 >"$tmp/target.out" 2>"$tmp/target.err") &
pids="$pids $!"
i=0
while [ $i -lt 100 ]; do
	pid=$(pgrep -u $vu -f "$target --spin 60" | head -1)
	[ -n "$pid" ] && ls /tmp/ameba-$vu.*/$pid.sock >/dev/null 2>&1 && break
	sleep 0.05; i=$((i + 1))
done
[ -n "$pid" ] || fail "the victim's program did not start"
ls /tmp/ameba-$vu.*/$pid.sock >/dev/null 2>&1 || fail "no socket in a directory of the victim's own"
grep -q "MRI socket in /tmp/ameba-$vu\.[A-Za-z0-9]* instead: /tmp/ameba-$vu belongs to uid $au" "$tmp/target.err" ||
	fail "the program did not say where its socket is"
as $A /usr/bin/python3 "$tmp/squat.py" "/tmp/ameba-$vu/$pid.sock" "$tmp/squat.log" >/dev/null 2>&1 &
pids="$pids $!"
i=0
while [ ! -S "/tmp/ameba-$vu/$pid.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
[ -S "/tmp/ameba-$vu/$pid.sock" ] || fail "the squatter's socket is not there"
(cd "$tmp" && as $V "$ameba" mri $pid --objects 1 --reads 1 --interval-ms 50 >"$tmp/victim.out" 2>"$tmp/victim.err") ||
	fail "the victim could not attach to its own program"
grep -q "detached" "$tmp/victim.out" || fail "the victim's session did not end with a detach"
[ ! -s "$tmp/squat.log" ] || fail "the victim's client connected to the squatter's socket"
echo "ok: profiling still works for the victim: $(grep -o 'MRI socket in [^ ]*' "$tmp/target.err")"

# 3: no real server; only the squatter's socket
(cd "$tmp" && as $V env -u XDG_RUNTIME_DIR AMEBA_MRI=0 "$target" --spin 60 >"$tmp/t2.out" 2>"$tmp/t2.err") &
pids="$pids $!"
i=0
while [ $i -lt 100 ]; do
	pid2=$(pgrep -u $vu -f "$target --spin 60" | grep -v "^$pid\$" | head -1)
	[ -n "$pid2" ] && break
	sleep 0.05; i=$((i + 1))
done
[ -n "$pid2" ] || fail "the second program did not start"
as $A /usr/bin/python3 "$tmp/squat.py" "/tmp/ameba-$vu/$pid2.sock" "$tmp/squat2.log" >/dev/null 2>&1 &
pids="$pids $!"
i=0
while [ ! -S "/tmp/ameba-$vu/$pid2.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
(cd "$tmp" && as $V "$ameba" mri $pid2 --objects 0 --reads 0 >"$tmp/refused.out" 2>"$tmp/refused.err"); rc=$?
[ $rc = 1 ] || fail "the victim's client exited $rc against the squatter's socket, want 1"
grep -q "refusing /tmp/ameba-$vu/$pid2.sock: its directory /tmp/ameba-$vu belongs to uid $au ($A)" "$tmp/refused.err" ||
	fail "the refusal does not name the directory's owner"
[ ! -s "$tmp/squat2.log" ] || fail "the victim's client connected to the squatter's socket"
echo "ok: refused: $(cat "$tmp/refused.err")"
echo "2 passed, 0 failed"
