#!/bin/sh
# A fresh cluster in $PGDATA (default /tmp/pgdata: a tmpfs in the test) with the superuser password from
# POSTGRES_PASSWORD, then the server in the foreground on 127.0.0.1:${PGPORT:-5432}. SIGTERM reaches it directly (exec).
set -eu
: "${POSTGRES_PASSWORD:?}" "${PGDATA:=/tmp/pgdata}"
pwfile="$(mktemp)"
printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
/opt/postgresql/bin/initdb --pgdata="$PGDATA" --username=postgres --pwfile="$pwfile" --auth=scram-sha-256 \
  --encoding=UTF8 --locale=C >/dev/null
rm -f "$pwfile"
exec /opt/postgresql/bin/postgres -D "$PGDATA" -c listen_addresses=127.0.0.1 -c port="${PGPORT:-5432}" \
  -c unix_socket_directories=/tmp
