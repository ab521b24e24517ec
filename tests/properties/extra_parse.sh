#!/usr/bin/env bash
# extra_parse.sh - runs the test property extra_parse.lua (asl.extra on a
# synthetic ctx.extra) on a workload: it must fire and must not be disabled.
# usage: extra_parse.sh AMEBA PROPERTY_FILE TARGET
set -u
AMEBA=$1 PROP=$2 TARGET=$3
T=$(mktemp -d "${TMPDIR:-/tmp}/ameba-extra-XXXXXX")
trap 'rm -rf "$T"' EXIT
export HOME=$T XDG_CONFIG_HOME=$T/config
(cd "$T" && "$AMEBA" run -q -o r.json --property "$PROP" -- "$TARGET" > /dev/null 2> err.txt)
cat "$T/err.txt"
if grep -q ExtraParseCheck "$T/err.txt"; then
	echo "FAIL: ExtraParseCheck reported an error" >&2
	exit 1
fi
jq -e '[.findings[] | select(.property == "ExtraParseCheck")] | length > 0' "$T/r.json" > /dev/null ||
	{ echo "FAIL: no ExtraParseCheck finding" >&2; exit 1; }
echo "ok: asl.extra parsed the synthetic notes"
