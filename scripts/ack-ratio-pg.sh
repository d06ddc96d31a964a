#!/usr/bin/env bash
# The ack path on PostgreSQL, beside the SQLite anchors: the group-commit
# server (SQLite, the least a durable receiver can do), one pointhook
# instance on an empty PostgreSQL database, and three instances on one
# (the load spread over the three), worker off, the per-address limit off.
# ROUNDS interleaved rounds of SECONDS each at 64 connections; prints each
# round, then the medians. Run from the repository root after
# `cargo build --release --bins --examples`, with a PostgreSQL server that
# lets `postgres` create databases (PGURL, default postgres://postgres@127.0.0.1:5432).
#
#   scripts/ack-ratio-pg.sh [ROUNDS] [SECONDS]      (default 5 rounds of 5 s)
#
# POINTHOOK=path/to/another/pointhook measures that binary instead (an
# earlier build, for a before-and-after).
set -euo pipefail

rounds=${1:-5}
seconds=${2:-5}
server=${PGURL:-postgres://postgres@127.0.0.1:5432}
bin=target/release
pointhook=${POINTHOOK:-$bin/pointhook}
[[ -x $pointhook ]] || { echo "ack-ratio-pg: $pointhook is missing" >&2; exit 2; }
for b in examples/group_commit_server examples/loadgen; do
  [[ -x $bin/$b ]] || { echo "ack-ratio-pg: $bin/$b is missing: run cargo build --release --bins --examples" >&2; exit 2; }
done

dir=$(mktemp -d)
one=ackbench_one_$$
three=ackbench_three_$$
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  psql "$server/postgres" -qc "DROP DATABASE IF EXISTS $one" -c "DROP DATABASE IF EXISTS $three" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
psql "$server/postgres" -qc "CREATE DATABASE $one" -c "CREATE DATABASE $three" >/dev/null
# The sample configuration without its SQLite path: the URL comes from the
# environment.
sed '/^path = "pointhook.db"/d' sample-config.toml >"$dir/pg.toml"

"$bin/examples/group_commit_server" 127.0.0.1:8098 "$dir/anchor.db" >"$dir/anchor.log" 2>&1 &
pids+=($!); anchor=$!
start() { # name port database
  POINTHOOK_WORKER_ENABLED=false POINTHOOK_SERVER_RATE_LIMIT_PER_IP=0 \
    POINTHOOK_STORAGE_URL="$server/$3" POINTHOOK_SERVER_LISTEN="127.0.0.1:$2" RUST_LOG=warn \
    "$pointhook" serve --config "$dir/pg.toml" >"$dir/$1.log" 2>&1 &
  pids+=($!)
}
start one 8091 "$one"; alone=$!
sleep 2 # the first instance migrates the database alone
start a 8092 "$three"; a=$!
sleep 2
start b 8093 "$three"; b=$!
start c 8094 "$three"; c=$!
sleep 2
for p in "$anchor" "$alone" "$a" "$b" "$c"; do
  kill -0 "$p" 2>/dev/null || { echo "ack-ratio-pg: a server exited at start (ports 8091-8094, 8098):" >&2; tail -n 3 "$dir"/*.log >&2; exit 2; }
done

# Prints requests/s for the URLs given.
measure() {
  local args=()
  for port in "$@"; do args+=(--url "http://127.0.0.1:$port/notifications"); done
  "$bin/examples/loadgen" "${args[@]}" --connections 64 --seconds "$seconds" |
    grep -o 'throughput=[0-9]*' | cut -d= -f2
}

printf '%-6s %14s %16s %18s %9s %9s\n' round 'anchor/s' 'pg one/s' 'pg three/s' '% one' '% three'
for r in $(seq "$rounds"); do
  g=$(measure 8098)
  o=$(measure 8091)
  t=$(measure 8092 8093 8094)
  echo "$g $o $t" >>"$dir/rounds"
  printf '%-6s %14s %16s %18s %9s %9s\n' "$r" "$g" "$o" "$t" $((100 * o / g)) $((100 * t / g))
done
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "median: anchor $(cut -d' ' -f1 "$dir/rounds" | median)/s," \
     "one instance $(cut -d' ' -f2 "$dir/rounds" | median)/s," \
     "three instances $(cut -d' ' -f3 "$dir/rounds" | median)/s"
