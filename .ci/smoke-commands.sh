#!/usr/bin/env bash
# Smoke runs of the README's commands that are not tests of their own, so that none can rot unseen:
# `npm start` on free ports with a fresh data folder, `npm run seed` into it, and the development provider's key
# rotation (rotate, restart, and a token signed with the new key is accepted by the gateway). Fails on any step.
set -euo pipefail
cd "$(dirname "$0")/.."

data="$(mktemp -d)"
chmod 755 "$data"
stack_pid=""
# Stops the stack as Ctrl-C does in a terminal: SIGINT to its whole process group. It must be gone within 60 s.
stop_stack() {
  [ -n "$stack_pid" ] || return 0
  kill -INT -- "-$stack_pid" 2>/dev/null || true
  for _ in $(seq 1 600); do kill -0 -- "-$stack_pid" 2>/dev/null || { stack_pid=""; return 0; }; sleep 0.1; done
  kill -KILL -- "-$stack_pid" 2>/dev/null || true
  stack_pid=""
  echo "npm start did not stop within 60 s of Ctrl-C" >&2
  return 1
}
trap 'stop_stack; rm -rf "$data"' EXIT

# Free ports from the runtime's own helper (npm test has built it).
read -r -a ports <<<"$(node -e '
  const { freePort } = require("@mileage/runtime/config");
  (async () => { const p = []; while (p.length < 14) { const n = await freePort(); if (!p.includes(n)) p.push(n); } console.log(p.join(" ")); })();')"
export DATA_DIR="$data/state" LOG_LEVEL=warn \
  EMBEDDED_POSTGRES_PORT=${ports[0]} GATEWAY_PORT=${ports[1]} GATEWAY_METRICS_PORT=${ports[2]} DEV_IDP_PORT=${ports[3]} \
  USERS_GRPC_PORT=${ports[4]} USERS_METRICS_PORT=${ports[5]} GROUPS_GRPC_PORT=${ports[6]} GROUPS_METRICS_PORT=${ports[7]} \
  DRIVES_GRPC_PORT=${ports[8]} DRIVES_METRICS_PORT=${ports[9]} SCIM_GRPC_PORT=${ports[10]} SCIM_METRICS_PORT=${ports[11]} \
  WEBHOOKS_GRPC_PORT=${ports[12]} WEBHOOKS_METRICS_PORT=${ports[13]}
gateway="http://127.0.0.1:$GATEWAY_PORT"
issuer="http://127.0.0.1:$DEV_IDP_PORT/realms/mileage"

start_stack() {
  : >"$data/start.log"
  setsid npm start >"$data/start.log" 2>&1 &
  stack_pid=$!
  for _ in $(seq 1 1800); do
    grep -q 'Mileage platform is up' "$data/start.log" && return 0
    kill -0 "$stack_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "npm start did not come up:" >&2
  tail -20 "$data/start.log" >&2
  exit 1
}

json() { node -e "let s='';process.stdin.on('data',c=>s+=c).on('end',()=>console.log(eval('(j)=>j.'+process.argv[1])(JSON.parse(s))))" "$1"; }
# A demo user's token (default Alice) for the scopes given (default users_read).
token() {
  curl -sf "$issuer/protocol/openid-connect/token" -d grant_type=password -d client_id=mileage-dev \
    -d "username=${1:-alice@example.com}" -d password=demo -d "scope=${2:-users_read}" | json access_token
}
status_of() { curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $1" "$gateway$2"; }
kid_of() { cut -d. -f1 | tr '_-' '/+' | base64 -d 2>/dev/null | json kid; }

echo "smoke: npm start"
start_stack
status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $(token)" "$gateway/v1/users/me")
[ "$status" = 200 ] || { echo "GET /v1/users/me answered $status" >&2; exit 1; }

echo "smoke: npm run seed"
npm run seed --silent -- --users 20 --drives 2000 | tee "$data/seed.log"
grep -q '^seeded ' "$data/seed.log"

echo "smoke: key rotation (rotate, restart, new key signs and verifies)"
old_kid=$(token | kid_of)
DEV_IDP_DATA_DIR="$DATA_DIR/dev-idp" node packages/dev-idp/dist/rotate-keys.js
stop_stack
start_stack
# Ctrl-C stopped PostgreSQL cleanly: the restart found no stale lock file to clear.
if grep -q 'removed a stale' "$data/start.log"; then echo "npm start did not stop PostgreSQL cleanly" >&2; exit 1; fi
new_token=$(token)
new_kid=$(printf '%s' "$new_token" | kid_of)
[ -n "$new_kid" ] && [ "$new_kid" != "$old_kid" ] || { echo "token still signed with $old_kid after rotation" >&2; exit 1; }
status=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $new_token" "$gateway/v1/users/me")
[ "$status" = 200 ] || { echo "a token of the rotated key answered $status" >&2; exit 1; }

echo "smoke: a person's own copy (GET /v1/users/me/export)"
curl -sf -o "$data/me.json" -H "Authorization: Bearer $(token alice@example.com 'users_read drives_read')" \
  "$gateway/v1/users/me/export"
test -s "$data/me.json"

echo "smoke: npm run org (create, offboard, --cancel, --now, offboarding, erase-due, an unknown organization)"
org() {
  USERS_ADDRESS=127.0.0.1:$USERS_GRPC_PORT GROUPS_ADDRESS=127.0.0.1:$GROUPS_GRPC_PORT \
    DRIVES_ADDRESS=127.0.0.1:$DRIVES_GRPC_PORT WEBHOOKS_ADDRESS=127.0.0.1:$WEBHOOKS_GRPC_PORT npm run --silent org -- "$@"
}
org create smoke "Smoke Test Org" | tee "$data/org.log"
erin=$(token erin@globex.example)
[ "$(status_of "$erin" /v1/users/me)" = 200 ] || { echo "Globex's admin was refused before the offboarding" >&2; exit 1; }
org offboard globex | tee "$data/org.log"
grep -q 'suspended' "$data/org.log"
[ "$(status_of "$erin" /v1/users/me)" = 401 ] || { echo "a suspended organization's user was not refused" >&2; exit 1; }
org offboard globex --cancel
[ "$(status_of "$erin" /v1/users/me)" = 200 ] || { echo "--cancel did not let Globex's admin in again" >&2; exit 1; }
org offboard globex --now >"$data/org.log"
org offboarding 2 | tee "$data/org.log"
grep -q 'erased' "$data/org.log" && grep -q 'rows erased' "$data/org.log"
if grep -qi 'globex.example' "$data/org.log"; then echo "the receipt names a person" >&2; exit 1; fi
org erase-due | grep -q 'no organization is due'
if org offboard no-such-org 2>"$data/org.err"; then echo "offboarding an unknown organization succeeded" >&2; exit 1; fi
grep -q 'not found' "$data/org.err"
[ "$(status_of "$(token)" /v1/users/me)" = 200 ] || { echo "Demo Org was touched by Globex's erasure" >&2; exit 1; }

stop_stack
echo "smoke: npm start, npm run seed, key rotation, a person's copy and npm run org passed"
