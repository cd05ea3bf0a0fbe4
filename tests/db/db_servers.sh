#!/usr/bin/env bash
# Starts (or stops) the real database servers the db task tests run against,
# once for the whole suite (CTest fixture db_servers):
#   db_servers.sh start STATE_FILE   PostgreSQL and MariaDB on loopback ports,
#                                    data in a fresh /tmp dir; writes
#                                    KEY=VALUE lines to STATE_FILE
#   db_servers.sh stop STATE_FILE    stops both and removes the dir
# Keys: DIR, PG_PORT, PG_URL, PG_SOCKET_DIR, PG_ADMIN_USER, MY_PORT, MY_URL,
# MY_SOCKET, DB_PASSWORD (the password of the `apollo` user on both).
# Needs Debian's postgresql and mariadb-server (scripts/setup.sh --with-tests).
# PostgreSQL refuses to run as root: as root its commands run as `postgres`.
set -euo pipefail

cmd=${1:?start or stop}
state=${2:?state file}
password=apollo-secret


as_pg() {
  if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

stop() {
  [[ -f $state ]] || return 0
  # shellcheck disable=SC1090
  source "$state"
  if [[ -n ${DIR:-} && -d $DIR ]]; then
    as_pg "$PG_BIN/pg_ctl" -D "$DIR/pg" -m immediate stop >/dev/null 2>&1 || true
    if [[ -f $DIR/my.pid ]]; then
      kill "$(cat "$DIR/my.pid")" 2>/dev/null || true
      for _ in $(seq 100); do kill -0 "$(cat "$DIR/my.pid")" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -rf "$DIR"
  fi
  rm -f "$state"
}

if [[ $cmd == stop ]]; then
  stop
  exit 0
fi

stop  # leftovers of an interrupted run
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
DIR=$(mktemp -d /tmp/apollo11-db.XXXXXX)
chmod 755 "$DIR"
mkdir "$DIR/pgsock"
echo "$password" >"$DIR/pwfile"
if [[ $(id -u) -eq 0 ]]; then chown postgres "$DIR/pgsock" "$DIR/pwfile"; fi
{
  echo "DIR=$DIR"
  echo "PG_BIN=$PG_BIN"
} >"$state"

# PostgreSQL: trust on the unix socket (for the test's own checks), SCRAM
# passwords on loopback TCP (what the tasks use).
# Both ports in one draw: separate draws may repeat a port.
mapfile -t ports < <(python3 "$(dirname "$0")/../ha/free_ports.py" 2)
[[ ${#ports[@]} -eq 2 ]] || { echo "could not pick 2 free ports" >&2; exit 1; }
PG_PORT=${ports[0]}
mkdir "$DIR/pg"
if [[ $(id -u) -eq 0 ]]; then chown postgres "$DIR/pg"; fi
as_pg "$PG_BIN/initdb" -D "$DIR/pg" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
  --pwfile="$DIR/pwfile" >"$DIR/initdb.log" 2>&1
as_pg "$PG_BIN/pg_ctl" -D "$DIR/pg" -l "$DIR/pgsock/pg.log" -w -t 60 \
  -o "-p $PG_PORT -k $DIR/pgsock -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null
as_pg psql -h "$DIR/pgsock" -p "$PG_PORT" -U postgres -d postgres -qAt -v ON_ERROR_STOP=1 \
  -c "CREATE ROLE apollo LOGIN PASSWORD '$password'" -c "CREATE DATABASE apollo OWNER apollo" >/dev/null

# MariaDB, as the current user; root without a password on the socket.
MY_PORT=${ports[1]}
mariadb-install-db --no-defaults --datadir="$DIR/my" --user="$(id -un)" \
  --auth-root-authentication-method=normal --skip-test-db >"$DIR/install-db.log" 2>&1
mariadbd --no-defaults --datadir="$DIR/my" --socket="$DIR/my.sock" --port="$MY_PORT" \
  --bind-address=127.0.0.1 --pid-file="$DIR/my.pid" --user="$(id -un)" --skip-log-bin \
  --innodb-flush-log-at-trx-commit=0 --log-error="$DIR/my.err" </dev/null >/dev/null 2>&1 &
for _ in $(seq 300); do
  mariadb --no-defaults -S "$DIR/my.sock" -u root -e "SELECT 1" >/dev/null 2>&1 && break
  sleep 0.1
done
mariadb --no-defaults -S "$DIR/my.sock" -u root -e "
  CREATE DATABASE apollo;
  CREATE USER 'apollo'@'127.0.0.1' IDENTIFIED BY '$password';
  CREATE USER 'apollo'@'localhost' IDENTIFIED BY '$password';
  GRANT ALL ON apollo.* TO 'apollo'@'127.0.0.1';
  GRANT ALL ON apollo.* TO 'apollo'@'localhost';"

cat >>"$state" <<STATE
PG_PORT=$PG_PORT
PG_URL=postgres://apollo@127.0.0.1:$PG_PORT/apollo
PG_SOCKET_DIR=$DIR/pgsock
PG_ADMIN_USER=postgres
MY_PORT=$MY_PORT
MY_URL=mysql://apollo@127.0.0.1:$MY_PORT/apollo
MY_SOCKET=$DIR/my.sock
DB_PASSWORD=$password
STATE
