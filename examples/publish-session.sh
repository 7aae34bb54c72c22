#!/bin/sh
# Publishes the example session under examples/session/ to a running
# turnguard processor with the stock nats CLI, one envelope per hook subject.
#
#   examples/publish-session.sh [SESSION_ID] [TENANT]
#
# Without SESSION_ID the files' own session id is used; a different id makes
# a new session from the same files (request ids only need to be unique
# within a session). NATS_URL selects the server (default nats://127.0.0.1:4222).
set -eu
dir=$(cd "$(dirname "$0")/session" && pwd)
file_sid=7f3c2a9e-4b1d-4e8a-9c6f-2d5e8a1b3c70
sid=${1:-$file_sid}
tenant=${2:-default}
for f in "$dir"/[0-9][0-9]-*.json; do
	hook=${f##*/[0-9][0-9]-}
	hook=${hook%.json}
	nats pub "acs.hooks.$tenant.$sid.$hook" "$(sed "s/$file_sid/$sid/g" "$f")"
done
