#!/bin/sh
# Publishes an example session to a running turnguard processor with the
# stock nats CLI, one envelope per hook subject, in file order.
#
#   examples/publish.sh DIR [SESSION_ID] [TENANT]
#
# DIR is examples/session (a clean session) or examples/taint (web content,
# then a consequential call that the default rules deny). Without SESSION_ID
# the files' own session id is used; another id makes a new session from
# the same files (request ids need only be unique within a session).
# Each envelope is stamped with the current time: the processor refuses
# envelopes whose timestamp is further than its skew window (default 5
# minutes) from their arrival (-32006), and the files carry fixed times.
# The nats CLI's own settings select the server and credential: NATS_CONTEXT
# (e.g. tg-agent, README "Walkthrough"), or NATS_URL and NATS_CREDS (e.g.
# data/creds/agent.creds; core publishes need no inbox prefix).
set -eu
dir=${1:?usage: examples/publish.sh DIR [SESSION_ID] [TENANT]}
first=$(ls "$dir"/[0-9][0-9]-*.json | head -n 1)
file_sid=$(sed -n 's/.*"session_id": "\([^"]*\)".*/\1/p' "$first" | head -n 1)
sid=${2:-$file_sid}
tenant=${3:-default}
for f in "$dir"/[0-9][0-9]-*.json; do
	hook=${f##*/[0-9][0-9]-}
	hook=${hook%.json}
	now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
	nats pub "acs.hooks.$tenant.$sid.$hook" "$(sed -e "s/$file_sid/$sid/g" -e "s/\"timestamp\": \"[^\"]*\"/\"timestamp\": \"$now\"/" "$f")"
done
