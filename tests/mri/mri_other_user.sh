#!/bin/sh
# mri_other_user.sh AMEBA TARGET PEER_CHECK
#
# Another user cannot attach. Needs root, to run clients as nobody (uid
# 65534); exits 77 (skipped) otherwise. Against a live instrumented target
# started by root:
#   1. `ameba mri PID` as nobody fails with "permission denied" (the 0700
#      socket directory keeps it out);
#   2. a client with euid nobody but root's file access reaches the socket,
#      and the server's SO_PEERCRED check refuses it with a message
#      (mri_peer_check);
#   3. root itself (the same uid) still attaches, counts and detaches.
set -u
if [ "$(id -u)" != 0 ]; then
	echo "SKIP: running a client as another user needs root (this is uid $(id -u))"
	exit 77
fi
ameba=$1 target=$2 peer=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mri-user.XXXXXX") || exit 1
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; for f in "$tmp"/*; do echo "--- $f" >&2; cat "$f" >&2; done; exit 1; }

env -u XDG_RUNTIME_DIR "$target" --spin 60 >"$tmp/target.out" 2>"$tmp/target.err" 3>&- &
pid=$!
sock=/tmp/ameba-0/$pid.sock
i=0
while [ ! -S "$sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
[ -S "$sock" ] || fail "no socket $sock"

setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$ameba" mri $pid --objects 0 --reads 0 >"$tmp/nobody.out" 2>"$tmp/nobody.err"
rc=$?
[ $rc = 1 ] || fail "ameba mri as nobody exited $rc, want 1"
grep -q "permission denied" "$tmp/nobody.err" || fail "nobody's error does not say permission denied"
echo "nobody: $(cat "$tmp/nobody.err")"

"$peer" $pid >"$tmp/peer.out" 2>&1 || fail "the server did not refuse euid 65534 with a message"
cat "$tmp/peer.out"

"$ameba" mri $pid --objects 3 --reads 1 --interval-ms 50 >"$tmp/root.out" 2>&1 ||
	fail "root could not attach"
grep -q "detached" "$tmp/root.out" || fail "root's session did not end with a detach"
kill -0 $pid 2>/dev/null || fail "the target died"
echo "3 passed, 0 failed"
