#!/bin/sh
# Regenerates ../../scripts_table.go and ../../casing_table.go from the ICU
# this machine has (Debian's libicu-dev): go generate ./onmttok. With
# OUT=DIR it writes them into DIR instead (TestScriptsTableFresh compares).
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc "$dir/icudump.c" -o "$tmp/icudump" -licuuc
"$tmp/icudump" > "$tmp/dump.txt"
go run "$dir/gen.go" "$tmp/dump.txt" "$tmp"
for f in scripts_table.go casing_table.go; do
	gofmt -w "$tmp/$f"
	mv "$tmp/$f" "${OUT:-$dir/../..}/$f"
done
