#!/usr/bin/env bash
# Real Keycloak for tests and local use: fetched from Maven Central (cached), started on loopback with the
# development realm (realm-mileage.json + dev-overlay.json).
#   run.sh start   start in the background, wait until the realm answers, print the issuer
#   run.sh stop    stop it
# Environment: KEYCLOAK_VERSION (26.5.6), KEYCLOAK_PORT (8180), KEYCLOAK_MANAGEMENT_PORT (9180),
# MILEAGE_SCIM_CLIENT_SECRET (scim-dev-secret), MILEAGE_EXAMPLE_REDIRECT_URI (https://payroll.example.com/oauth/callback).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="${KEYCLOAK_VERSION:-26.5.6}"
port="${KEYCLOAK_PORT:-8180}"
management_port="${KEYCLOAK_MANAGEMENT_PORT:-9180}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mileage-tools"
home="$cache/keycloak-$version"
state="${KEYCLOAK_STATE_DIR:-$(mktemp -d -t mileage-keycloak-XXXXXX)}"
pidfile="${KEYCLOAK_PIDFILE:-/tmp/mileage-keycloak-$port.pid}"
issuer="http://127.0.0.1:$port/realms/mileage"

fetch() {
  [ -x "$home/bin/kc.sh" ] && return
  mkdir -p "$cache"
  local url="https://repo1.maven.org/maven2/org/keycloak/keycloak-quarkus-dist/$version/keycloak-quarkus-dist-$version.zip"
  echo "fetching Keycloak $version from Maven Central" >&2
  curl -sfL --retry 3 -o "$cache/keycloak-$version.zip.part" "$url"
  local expected actual
  expected="$(curl -sfL --retry 3 "$url.sha1")"
  actual="$(sha1sum "$cache/keycloak-$version.zip.part" | cut -d' ' -f1)"
  [ "$expected" = "$actual" ] || { echo "checksum mismatch for $url" >&2; exit 1; }
  rm -rf "$home" "$cache/keycloak-$version.tmp"
  mkdir -p "$cache/keycloak-$version.tmp"
  unzip -q "$cache/keycloak-$version.zip.part" -d "$cache/keycloak-$version.tmp"
  mv "$cache/keycloak-$version.tmp/keycloak-$version" "$home"
  rm -rf "$cache/keycloak-$version.tmp" "$cache/keycloak-$version.zip.part"
}

start() {
  fetch
  mkdir -p "$state/data" "$home/data/import"
  # --import-realm reads <home>/data/import; a realm that already exists in the database is left as it is.
  node "$here/build-dev-realm.mjs" "$home/data/import/realm-mileage.json"
  export MILEAGE_SCIM_CLIENT_SECRET="${MILEAGE_SCIM_CLIENT_SECRET:-scim-dev-secret}"
  export MILEAGE_EXAMPLE_REDIRECT_URI="${MILEAGE_EXAMPLE_REDIRECT_URI:-https://payroll.example.com/oauth/callback}"
  # dev-file database in the state folder; HTTP on loopback only; the realm imported at start.
  KC_DB=dev-file KC_HTTP_HOST=127.0.0.1 KC_HTTP_PORT="$port" KC_HTTP_MANAGEMENT_PORT="$management_port" KC_HEALTH_ENABLED=true \
  KC_HOSTNAME_STRICT=false KC_BOOTSTRAP_ADMIN_USERNAME=admin KC_BOOTSTRAP_ADMIN_PASSWORD="$(head -c 18 /dev/urandom | base64)" \
  KC_DB_URL_PATH="$state/data" JAVA_OPTS_APPEND="-Djava.io.tmpdir=$state" \
    nohup "$home/bin/kc.sh" start-dev --import-realm --log-level=warn >"$state/keycloak.log" 2>&1 &
  echo $! >"$pidfile"
  echo "$state" >"$pidfile.state"
  local started=$SECONDS
  until curl -sf "http://127.0.0.1:$management_port/health/ready" >/dev/null 2>&1 && curl -sf "$issuer/.well-known/openid-configuration" >/dev/null 2>&1; do
    if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
      echo "Keycloak exited; its log:" >&2
      tail -50 "$state/keycloak.log" >&2
      exit 1
    fi
    if (( SECONDS - started > 240 )); then
      echo "Keycloak did not become ready in 240 s; its log:" >&2
      tail -50 "$state/keycloak.log" >&2
      exit 1
    fi
    sleep 1
  done
  echo "Keycloak $version ready in $((SECONDS - started)) s: $issuer" >&2
  echo "$issuer"
}

stop() {
  [ -f "$pidfile" ] || return 0
  local pid
  pid="$(cat "$pidfile")"
  pkill -TERM -P "$pid" 2>/dev/null || true
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -KILL "$pid" 2>/dev/null || true
  # The state folder (database, logs) is thrown away unless KEYCLOAK_STATE_DIR chose it.
  if [ -z "${KEYCLOAK_STATE_DIR:-}" ] && [ -f "$pidfile.state" ]; then rm -rf "$(cat "$pidfile.state")"; fi
  rm -f "$pidfile" "$pidfile.state"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
