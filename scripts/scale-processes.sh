#!/usr/bin/env bash
# Measures turnguard with 1, 2 and 3 processor processes sharing the
# partitions: one nats-server process (built from the version in go.mod),
# N processor processes and `loadgen run` against them, all on loopback,
# each round with a fresh store. Usage: scripts/scale-processes.sh [DURATION]
# (default 20s). Prints loadgen's report lines per round.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-20s}
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
go build -o "$work/processor" ./cmd/processor
go build -o "$work/loadgen" ./cmd/loadgen
go build -o "$work/nats-server" github.com/nats-io/nats-server/v2
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for n in 1 2 3; do
  round="$work/round$n"
  mkdir -p "$round"
  port=$(free_port)
  url="nats://127.0.0.1:$port"
  "$work/nats-server" -a 127.0.0.1 -p "$port" -js -sd "$round/js" >"$round/nats.log" 2>&1 &
  server=$!
  sleep 1
  # One state key for every processor of the round: instances sharing the
  # partitions must verify each other's state values.
  (umask 077; head -c 32 /dev/urandom >"$round/state-key")
  pids=()
  for i in $(seq 1 "$n"); do
    "$work/processor" --nats-url "$url" --data-dir "$round/p$i" --state-key "$round/state-key" --instance "p$i" --log-format json --skew-window 0 >"$round/p$i.log" 2>&1 &
    pids+=($!)
  done
  for i in $(seq 1 "$n"); do
    until grep -q '"message":"processing"' "$round/p$i.log"; do sleep 0.1; done
  done
  echo "### $n processor process(es)"
  "$work/loadgen" run --nats-url "$url" --duration "$duration" --settle 2m 2>/dev/null |
    grep -E '^(baseline|published|decided|latency|reconcile)' || true
  kill "${pids[@]}" 2>/dev/null || true
  wait "${pids[@]}" 2>/dev/null || true
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
done
