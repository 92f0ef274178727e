#!/bin/sh
# Regenerates ../../scripts_table.go from the ICU this machine has
# (Debian's libicu-dev): go generate ./onmttok. With OUT=FILE it writes
# FILE instead (TestScriptsTableFresh compares the two).
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc "$dir/icudump.c" -o "$tmp/icudump" -licuuc
"$tmp/icudump" > "$tmp/dump.txt"
go run "$dir/gen.go" "$tmp/dump.txt" > "$tmp/scripts_table.go"
gofmt -l "$tmp/scripts_table.go" >/dev/null
mv "$tmp/scripts_table.go" "${OUT:-$dir/../../scripts_table.go}"
