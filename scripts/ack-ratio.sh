#!/usr/bin/env bash
# The ack-path throughput target, measured the way a noisy machine allows:
# the no-op server, the group-commit server and pointhook (SQLite, worker
# off, a fresh database) run side by side, and ROUNDS interleaved rounds of
# SECONDS each at 64 connections load them in turn. Prints each round, then
# the median of pointhook's share of each anchor. Run from the repository
# root after `cargo build --release --bins --examples`.
#
#   scripts/ack-ratio.sh [ROUNDS] [SECONDS]      (default 7 rounds of 5 s)
#
# BEFORE=path/to/an/earlier/pointhook adds that binary to every round (its
# own fresh database, port 8096), for a before-and-after in the same run.
set -euo pipefail

rounds=${1:-7}
seconds=${2:-5}
bin=target/release
for b in pointhook examples/noop_server examples/group_commit_server examples/loadgen; do
  [[ -x $bin/$b ]] || { echo "ack-ratio: $bin/$b is missing: run cargo build --release --bins --examples" >&2; exit 2; }
done

dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

"$bin/examples/noop_server" 127.0.0.1:8099 >"$dir/noop.log" 2>&1 &
pids+=($!); noop=$!
"$bin/examples/group_commit_server" 127.0.0.1:8098 "$dir/anchor.db" >"$dir/anchor.log" 2>&1 &
pids+=($!); anchor=$!
POINTHOOK_WORKER_ENABLED=false POINTHOOK_SERVER_RATE_LIMIT_PER_IP=0 \
  POINTHOOK_STORAGE_PATH="$dir/bench.db" \
  POINTHOOK_SERVER_LISTEN=127.0.0.1:8097 RUST_LOG=warn \
  "$bin/pointhook" serve --config sample-config.toml >"$dir/pointhook.log" 2>&1 &
pids+=($!); pointhook=$!
before=
if [[ -n ${BEFORE:-} ]]; then
  POINTHOOK_WORKER_ENABLED=false POINTHOOK_SERVER_RATE_LIMIT_PER_IP=0 \
    POINTHOOK_STORAGE_PATH="$dir/before.db" \
    POINTHOOK_SERVER_LISTEN=127.0.0.1:8096 RUST_LOG=warn \
    "$BEFORE" serve --config sample-config.toml >"$dir/before.log" 2>&1 &
  pids+=($!); before=$!
fi
sleep 1.5
# A server that could not bind (a port already taken) has exited: the load
# would then measure whatever holds the port.
for name in noop anchor pointhook ${before:+before}; do
  kill -0 "${!name}" 2>/dev/null || {
    echo "ack-ratio: the $name server exited at start (is a port of 8097-8099 taken?):" >&2
    head -n 3 "$dir/$name.log" >&2
    exit 2
  }
done

# Prints "requests/s cpu-us-per-request" for one server.
measure() {
  local out
  out=$("$bin/examples/loadgen" --url "http://127.0.0.1:$1/notifications" \
    --connections 64 --seconds "$seconds" --pid "$2")
  echo "$(grep -o 'throughput=[0-9]*' <<<"$out" | cut -d= -f2)" \
       "$(grep -o 'total=[0-9.]*' <<<"$out" | cut -d= -f2)"
}

printf '%-6s %18s %18s %20s %9s %9s' round 'no-op/s (us/req)' 'anchor/s (us/req)' 'pointhook/s (us/req)' '% no-op' '% anchor'
[[ -n $before ]] && printf ' %20s %9s' 'before/s (us/req)' '% anchor'
echo
for r in $(seq "$rounds"); do
  read -r n nc < <(measure 8099 "$noop")
  read -r a ac < <(measure 8098 "$anchor")
  read -r p pc < <(measure 8097 "$pointhook")
  of_noop=$(( 100 * p / n )); of_anchor=$(( 100 * p / a ))
  printf '%-6s %18s %18s %20s %9s %9s' "$r" "$n ($nc)" "$a ($ac)" "$p ($pc)" "$of_noop" "$of_anchor"
  b_of_anchor=0
  if [[ -n $before ]]; then
    read -r b bc < <(measure 8096 "$before")
    b_of_anchor=$(( 100 * b / a ))
    printf ' %20s %9s' "$b ($bc)" "$b_of_anchor"
  fi
  echo
  echo "$of_noop $of_anchor $b_of_anchor" >>"$dir/shares"
done
median() { sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "median: pointhook = $(cut -d' ' -f1 "$dir/shares" | median) % of the no-op server," \
     "$(cut -d' ' -f2 "$dir/shares" | median) % of the group-commit server (target: >= 80 %)"
[[ -n $before ]] && echo "median: before = $(cut -d' ' -f3 "$dir/shares" | median) % of the group-commit server"
exit 0
