#!/bin/sh
# mri_env.sh AMEBA TARGET
#
# Where the server listens, and when it does not:
#   1. AMEBA_MRI=0: no socket, and `ameba mri PID` says so;
#   2. $XDG_RUNTIME_DIR/ameba with mode 0755: refused (the target says why
#      on stderr), the socket goes to /tmp/ameba-UID, and a client still
#      finds it;
#   3. $XDG_RUNTIME_DIR/ameba a symlink to a 0700 directory: refused too;
#   4. a good $XDG_RUNTIME_DIR: the directory is created 0700 and the
#      socket 0600, found through the target's environment.
set -u
ameba=$1 target=$2
uid=$(id -u)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mri-env.XXXXXX") || exit 1
pids=
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; for f in "$tmp"/*.err "$tmp"/*.out; do [ -f "$f" ] && { echo "--- $f" >&2; cat "$f" >&2; }; done; exit 1; }
wait_sock() { i=0; while [ ! -S "$1" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done; [ -S "$1" ]; }
mode() { stat -c %a "$1"; }

# 1
mkdir -p "$tmp/x"
XDG_RUNTIME_DIR="$tmp/x" AMEBA_MRI=0 "$target" --spin 30 >"$tmp/1.out" 2>"$tmp/1.err" 3>&- &
p=$!; pids="$pids $p"
sleep 0.5
[ ! -e "$tmp/x/ameba/$p.sock" ] && [ ! -e "/tmp/ameba-$uid/$p.sock" ] || fail "AMEBA_MRI=0 still made a socket"
"$ameba" mri $p --reads 0 --objects 0 >"$tmp/1c.out" 2>"$tmp/1c.err" && fail "a client attached to AMEBA_MRI=0"
grep -q "has no MRI socket" "$tmp/1c.err" || fail "the client does not say there is no socket"
kill $p

# 2
mkdir -p "$tmp/y/ameba" && chmod 755 "$tmp/y/ameba"
XDG_RUNTIME_DIR="$tmp/y" "$target" --spin 30 >"$tmp/2.out" 2>"$tmp/2.err" 3>&- &
p=$!; pids="$pids $p"
wait_sock "/tmp/ameba-$uid/$p.sock" || fail "no fallback socket in /tmp/ameba-$uid"
[ ! -e "$tmp/y/ameba/$p.sock" ] || fail "a socket in a 0755 directory"
grep -q "has mode 0755, not 0700" "$tmp/2.err" || fail "the target does not say why it refused the directory"
"$ameba" mri $p --objects 0 --reads 1 --interval-ms 50 >"$tmp/2c.out" 2>&1 || fail "no client through the fallback"
[ "$(mode "/tmp/ameba-$uid")" = 700 ] || fail "/tmp/ameba-$uid is not 0700"
kill $p

# 3
mkdir -p "$tmp/real" && chmod 700 "$tmp/real" && mkdir -p "$tmp/z" && ln -s "$tmp/real" "$tmp/z/ameba"
XDG_RUNTIME_DIR="$tmp/z" "$target" --spin 30 >"$tmp/3.out" 2>"$tmp/3.err" 3>&- &
p=$!; pids="$pids $p"
wait_sock "/tmp/ameba-$uid/$p.sock" || fail "no fallback socket for a symlinked directory"
[ ! -e "$tmp/real/$p.sock" ] || fail "a socket behind a symlink"
grep -q "is not a directory" "$tmp/3.err" || fail "the target does not say why it refused the symlink"
kill $p

# 4
mkdir -p "$tmp/w"
XDG_RUNTIME_DIR="$tmp/w" "$target" --spin 30 >"$tmp/4.out" 2>"$tmp/4.err" 3>&- &
p=$!; pids="$pids $p"
wait_sock "$tmp/w/ameba/$p.sock" || fail "no socket in \$XDG_RUNTIME_DIR/ameba"
[ "$(mode "$tmp/w/ameba")" = 700 ] || fail "$tmp/w/ameba is not 0700"
[ "$(mode "$tmp/w/ameba/$p.sock")" = 600 ] || fail "the socket is not 0600"
env -u XDG_RUNTIME_DIR "$ameba" mri $p --objects 0 --reads 1 --interval-ms 50 >"$tmp/4c.out" 2>&1 ||
	fail "the client did not find the socket through /proc/PID/environ"
[ -s "$tmp/4.err" ] && fail "the target wrote to stderr"
kill $p
echo "4 passed, 0 failed"
