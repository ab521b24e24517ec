#!/usr/bin/env bash
# geom_sysfs.sh AMEBA FIXTURE - the host preset read from another machine's
# sysfs (AMEBA_SYSFS=FIXTURE, tests/mri/sysfs_vm/: 32 KiB 8-way L1D, 512 KiB
# 8-way L2, 32 MiB 16-way L3, 2 nodes, 16 CPUs), not from this machine's.
set -u
AMEBA=$1 FIX=$2
T=$(mktemp -d "${TMPDIR:-/tmp}/ameba-geom-XXXXXX")
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
key() { sed -n "s/^$1 = //p" "$2"; }
want() {	# want FILE KEY VALUE
	local v
	v=$(key "$2" "$1")
	[ "$v" = "$3" ] || fail "$1: $2 = '$v', want $3"
}

# 1. --preset host on the command line: the suite's AMEBA_PRESET (a fixed
#    config file) is in the environment and must not win
AMEBA_SYSFS=$FIX "$AMEBA" geometry --preset host > "$T/flag" || fail "ameba geometry --preset host failed"
cat "$T/flag"
head -1 "$T/flag" | grep -qx '# ameba sim geometry: host' || fail "not the host preset"
want "$T/flag" l1d_size 32K
want "$T/flag" l1d_assoc 8
want "$T/flag" l1d_line 64
want "$T/flag" l2_size 512K
want "$T/flag" l2_assoc 8
want "$T/flag" l2_line 64
want "$T/flag" llc_size 32M
want "$T/flag" llc_assoc 16
want "$T/flag" nodes 2
want "$T/flag" cores_per_node 8

# 2. AMEBA_PRESET=host without the flag: the same geometry
AMEBA_SYSFS=$FIX AMEBA_PRESET=host "$AMEBA" geometry > "$T/env" || fail "AMEBA_PRESET=host failed"
cmp -s "$T/flag" "$T/env" || fail "AMEBA_PRESET=host differs from --preset host"

# 3. `ameba list presets` shows the same host
AMEBA_SYSFS=$FIX "$AMEBA" list presets > "$T/list" || fail "ameba list presets failed"
grep -Eq '^host +32K/8w/64B +512K/8w/64B +32M/16w/64B +2 ' "$T/list" ||
	{ cat "$T/list"; fail "list presets: not the fixture's host row"; }

# 4. a tree without caches or nodes: the documented fallbacks (skylake-sp's
#    caches: AMEBA_SYSFS names another machine, so not this one's CPUID;
#    one node), not this machine's values
mkdir -p "$T/empty"
AMEBA_SYSFS=$T/empty "$AMEBA" geometry --preset host > "$T/none" || fail "empty sysfs: geometry failed"
want "$T/none" l1d_size 32K
want "$T/none" l2_size 1M
want "$T/none" l2_assoc 16
want "$T/none" llc_size 22M
want "$T/none" llc_assoc 11
want "$T/none" nodes 1

# 5. a tree whose cache directory has the L1D only: the L2 and LLC it does
#    not list are absent (a directory that describes some levels is believed)
mkdir -p "$T/l1only/devices/system/cpu/cpu0/cache/index0"
cp -r "$FIX/devices/system/cpu/cpu0/cache/index0/." "$T/l1only/devices/system/cpu/cpu0/cache/index0/"
AMEBA_SYSFS=$T/l1only "$AMEBA" geometry --preset host > "$T/l1" || fail "L1-only sysfs: geometry failed"
want "$T/l1" l1d_size 32K
want "$T/l1" l2_size 0
want "$T/l1" llc_size 0
echo "PASS"
