#!/bin/sh
# Refuses to let a realm file be imported with a required variable unset. Keycloak replaces ${VAR} placeholders from
# the environment at import, but keeps an unresolved one as literal text: an unset ${MILEAGE_SCIM_CLIENT_SECRET} would
# become the client's secret. Every placeholder without a default (${VAR}, not ${VAR:default}) must be set and not
# empty, and a *_SECRET at least 32 characters long. Run it right before `kc.sh start --import-realm` (run.sh does for
# a production realm file; in a container: `check-placeholders.sh /opt/keycloak/data/import/*.json && exec kc.sh ...`).
#   check-placeholders.sh <realm.json>...   exit 0 when every required variable is set, else 1 with the list
# POSIX sh, grep and sed only (the Keycloak image has no Node).
set -eu
[ "$#" -gt 0 ] || { echo "usage: $0 <realm.json>..." >&2; exit 2; }
missing=0
for file in "$@"; do
  for name in $(grep -o '\${[A-Za-z_][A-Za-z0-9_]*}' "$file" | sed 's/^\${\(.*\)}$/\1/' | sort -u); do
    value="$(printenv "$name" || true)"
    if [ -z "$value" ]; then
      echo "$file: \${$name} is not set: Keycloak would import the placeholder literally" >&2
      missing=1
    else
      case "$name" in
        *_SECRET)
          if [ "${#value}" -lt 32 ]; then
            echo "$file: $name is shorter than 32 characters" >&2
            missing=1
          fi
          ;;
      esac
    fi
  done
done
exit "$missing"
