#!/usr/bin/env bash
# Real Keycloak for local use and tests: the distribution is fetched from Maven Central (cached), started on loopback
# with a throw-away dev-file database and the development realm (dev/realm-mileage.json, built from
# realm-mileage.json + dev-overlay.json) imported at start.
#
#   run.sh start   start in the background, wait until ready, print the issuer URL (last line of stdout)
#   run.sh stop    stop the instance started on KEYCLOAK_PORT and delete its state
#   run.sh status  say whether it runs
#   run.sh check   run smoke-test.mjs against the running instance; when none runs: start, test, stop
#   run.sh fetch   only download and unpack the distribution
#   run.sh home    fetch, then print the distribution's folder (deploy/docker builds the test image from it)
#
# Environment (defaults):
#   KEYCLOAK_VERSION (26.7.3)       org.keycloak:keycloak-quarkus-dist version on Maven Central
#   KEYCLOAK_PORT (8180)            HTTP port on 127.0.0.1
#   KEYCLOAK_MANAGEMENT_PORT (9180) management port on 127.0.0.1 (/health/ready); Keycloak's own default is 9000
#   KEYCLOAK_MODE (start)           start: production mode (HTTP enabled, hostname not strict); or start-dev
#   KEYCLOAK_REALM_FILE             realm file to import instead of the development realm (e.g. realm-mileage.json,
#                                   then MILEAGE_SCIM_CLIENT_SECRET must be set)
#   KEYCLOAK_STATE_DIR              keep database and log there (default: a temporary folder deleted by stop)
#   KEYCLOAK_PIDFILE                (/tmp/mileage-keycloak-<port>.pid)
#   XDG_CACHE_HOME                  the distribution goes to ${XDG_CACHE_HOME:-$HOME/.cache}/mileage-tools/keycloak-<version>
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
version="${KEYCLOAK_VERSION:-26.7.3}"
port="${KEYCLOAK_PORT:-8180}"
management_port="${KEYCLOAK_MANAGEMENT_PORT:-9180}"
mode="${KEYCLOAK_MODE:-start}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/mileage-tools"
home="$cache/keycloak-$version"
pidfile="${KEYCLOAK_PIDFILE:-/tmp/mileage-keycloak-$port.pid}"
issuer="http://127.0.0.1:$port/realms/mileage"
ready_timeout="${KEYCLOAK_READY_TIMEOUT:-300}"

log() { echo "keycloak: $*" >&2; }
now_ms() { date +%s%3N; }
seconds_since() { local ms=$(( $(now_ms) - $1 )); printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)); }

fetch() {
  [ -x "$home/bin/kc.sh" ] && return 0
  command -v java >/dev/null || { log "Java 17 or later is needed (java not found)"; exit 1; }
  mkdir -p "$cache"
  # One download at a time per version (parallel test runs share the cache); the lock is released with the subshell.
  (
    command -v flock >/dev/null && flock 9
    [ -x "$home/bin/kc.sh" ] && exit 0
    zip="$cache/keycloak-$version.zip.part"
    tmp="$cache/keycloak-$version.tmp"
    url="https://repo1.maven.org/maven2/org/keycloak/keycloak-quarkus-dist/$version/keycloak-quarkus-dist-$version.zip"
    t0=$(now_ms)
    log "fetching Keycloak $version from Maven Central"
    if command -v curl >/dev/null; then
      curl -sfL --retry 3 -o "$zip" "$url"
      expected="$(curl -sfL --retry 3 "$url.sha1" | cut -c1-40)"
      actual="$(sha1sum "$zip" | cut -d' ' -f1)"
      [ "$expected" = "$actual" ] || { log "SHA-1 mismatch for $url ($actual, Maven Central says $expected)"; rm -f "$zip"; exit 1; }
    else
      # Maven checks the repository's checksums itself.
      mvn -q dependency:copy -Dartifact="org.keycloak:keycloak-quarkus-dist:$version:zip" -DoutputDirectory="$cache" -Dmdep.stripVersion=false
      mv "$cache/keycloak-quarkus-dist-$version.zip" "$zip"
    fi
    rm -rf "$tmp" "$home"
    mkdir -p "$tmp"
    unzip -q "$zip" -d "$tmp"
    mv "$tmp/keycloak-$version" "$home"
    rm -rf "$tmp" "$zip"
    log "Keycloak $version fetched and unpacked in $(seconds_since "$t0") s: $home"
  ) 9>"$cache/keycloak-$version.lock"
}

running_pid() {
  [ -f "$pidfile" ] || return 1
  local pid
  pid="$(head -1 "$pidfile")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

ready() {
  curl -sf -o /dev/null "http://127.0.0.1:$management_port/health/ready" &&
    curl -sf -o /dev/null "$issuer/.well-known/openid-configuration"
}

start() {
  if running_pid >/dev/null; then
    log "already running (pid $(running_pid)): $issuer"
    echo "$issuer"
    return 0
  fi
  local t_fetch t0 state
  t_fetch=$(now_ms)
  fetch
  t0=$(now_ms)
  state="${KEYCLOAK_STATE_DIR:-$(mktemp -d -t mileage-keycloak-XXXXXX)}"
  mkdir -p "$state/data"

  # --import-realm reads every *.json in <home>/data/import at start and skips a realm that already exists
  # (parallel runs share that folder: start them one after the other when they import different files).
  # Placeholders ${VAR} / ${VAR:default} in the file are replaced from the environment during that import.
  mkdir -p "$home/data/import"
  local realm_file="${KEYCLOAK_REALM_FILE:-}" realm_kind=production
  if [ -z "$realm_file" ]; then
    node "$here/build-dev-realm.mjs"
    realm_file="$here/dev/realm-mileage.json"
    realm_kind=development
  fi
  # A production realm file is imported only with every variable it needs (an unset one would import literally).
  if [ "$realm_kind" = production ]; then
    "$here/check-placeholders.sh" "$realm_file" || { log "not importing $realm_file: set the variables above"; exit 1; }
    # The production realm requires HTTPS on every request (sslRequired all); this instance serves plain HTTP on
    # loopback, so it imports it with "external" (HTTPS except from loopback and private addresses) unless told.
    export MILEAGE_SSL_REQUIRED="${MILEAGE_SSL_REQUIRED:-external}"
    log "importing the production realm with sslRequired=$MILEAGE_SSL_REQUIRED (plain HTTP on loopback)"
  fi
  # Only this realm file: remove what other versions of this script or runs may have left there.
  find "$home/data/import" -maxdepth 1 -name '*.json' -delete
  cp "$realm_file" "$home/data/import/.mileage-realm.json.$$"
  mv "$home/data/import/.mileage-realm.json.$$" "$home/data/import/mileage-realm.json"

  local admin_password
  admin_password="$(head -c 24 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')"
  (umask 077 && echo "$admin_password" >"$state/admin-password")

  # shellcheck disable=SC2054 # the comma belongs to --log-level's value
  local -a args=(--import-realm --http-host=127.0.0.1 --http-port="$port" --http-management-port="$management_port"
    --health-enabled=true --db=dev-file --cache=local --log-level=info,io.smallrye.health:warn "-Dkc.db-url-path=$state")
  if [ "$mode" = "start" ]; then
    args+=(--http-enabled=true --hostname-strict=false)
  fi
  # Single node (--cache=local: no JGroups ports). The dev-file database (H2) goes to the state folder
  # (kc.db-url-path), the temporary files too. A throw-away bootstrap admin
  # (master realm) lets smoke-test.mjs check the user profile through the admin API.
  KC_BOOTSTRAP_ADMIN_USERNAME=admin KC_BOOTSTRAP_ADMIN_PASSWORD="$admin_password" \
  JAVA_OPTS_APPEND="-Djava.io.tmpdir=$state ${JAVA_OPTS_APPEND:-}" \
    nohup "$home/bin/kc.sh" "$mode" "${args[@]}" >"$state/keycloak.log" 2>&1 </dev/null &
  local pid=$!
  printf '%s\n%s\n%s\n' "$pid" "$state" "$realm_kind" >"$pidfile"

  until ready; do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "Keycloak exited before it was ready; the end of $state/keycloak.log:"
      tail -40 "$state/keycloak.log" >&2
      rm -f "$pidfile"
      exit 1
    fi
    if (( $(now_ms) - t0 > ready_timeout * 1000 )); then
      log "not ready after ${ready_timeout} s; the end of $state/keycloak.log:"
      tail -40 "$state/keycloak.log" >&2
      stop
      exit 1
    fi
    sleep 0.25
  done
  log "Keycloak $version ($mode) ready in $(seconds_since "$t0") s after launch, $(seconds_since "$t_fetch") s in all; log: $state/keycloak.log"
  echo "$issuer"
}

stop() {
  local pid state
  [ -f "$pidfile" ] || { log "not running (no $pidfile)"; return 0; }
  pid="$(sed -n 1p "$pidfile")"
  state="$(sed -n 2p "$pidfile")"
  if kill -0 "$pid" 2>/dev/null; then
    # kc.sh forwards TERM to its Java process and waits for it.
    local children
    children="$(pgrep -P "$pid" || true)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    for child in $children; do kill -KILL "$child" 2>/dev/null || true; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  if [ -z "${KEYCLOAK_STATE_DIR:-}" ] && [ -n "$state" ] && [[ "$state" == */mileage-keycloak-* ]]; then rm -rf "$state"; fi
  rm -f "$pidfile"
  log "stopped"
}

status() {
  if running_pid >/dev/null; then
    log "running (pid $(running_pid), state $(sed -n 2p "$pidfile"))"
    echo "$issuer"
  else
    log "not running on port $port"
    return 1
  fi
}

check() {
  local started_here=0
  if ! running_pid >/dev/null; then
    start >/dev/null
    started_here=1
    trap 'stop' EXIT
  fi
  local state
  local -a smoke_args=("$issuer")
  state="$(sed -n 2p "$pidfile")"
  [ "$(sed -n 3p "$pidfile")" = development ] || smoke_args+=(--production)
  KEYCLOAK_ADMIN_PASSWORD="$(cat "$state/admin-password" 2>/dev/null || true)" \
    node "$here/smoke-test.mjs" "${smoke_args[@]}"
  node "$here/build-dev-realm.mjs" --check >&2
  if (( started_here )); then trap - EXIT; stop; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  check) check ;;
  fetch) fetch ;;
  home) fetch && echo "$home" ;;
  *) echo "usage: $0 start|stop|status|check|fetch" >&2; exit 2 ;;
esac
