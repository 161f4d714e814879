#!/usr/bin/env bash
# The servers the tests need, installed (Debian packages) and started by the project itself: PostgreSQL on
# 127.0.0.1:5432 (user postgres, trust, database `test`), MariaDB on 127.0.0.1:3306 (root, no password,
# database `test`) and Neo4j 5.26 on bolt://127.0.0.1:7687 (services/neo4j/start.sh).
#
#   services/services.sh [start]   install what is missing, start what is not running, print the environment
#   services/services.sh env       print the environment only (for `eval "$(services/services.sh env)"`)
#   services/services.sh stop      stop the servers this script started
#
# Idempotent: a server that already answers on its address is used as it is (only its `test` database is
# made sure of), so a second run returns at once. Our own servers keep their data under $EXECUTOR_SERVICES_DIR
# (default /tmp/executor-services), never in the checkout and never in the system's clusters.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
state=${EXECUTOR_SERVICES_DIR:-/tmp/executor-services}
PG_PORT=5432
MY_PORT=3306

say() { echo "services: $*" >&2; }
die() { echo "services: error: $*" >&2; exit 1; }

apt_install() {
  # Debian's maintainer scripts would start the system's own server (root via unix_socket, not what the tests
  # use) on the same port: policy-rc.d answers 101 ("not allowed") while we install.
  local pkgs=("$@") policy=/usr/sbin/policy-rc.d saved=""
  [ "$(id -u)" = 0 ] || die "installing ${pkgs[*]} needs root (apt-get); install them yourself and run again"
  [ -e "$policy" ] && saved=$(mktemp) && cp -p "$policy" "$saved"
  printf '#!/bin/sh\nexit 101\n' > "$policy" && chmod 755 "$policy"
  local rc=0
  { [ -n "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -print -quit 2>/dev/null)" ] || apt-get update -qq; } \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" > "$state/apt.log" 2>&1 \
    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" \
         > "$state/apt.log" 2>&1; } || rc=$?
  if [ -n "$saved" ]; then mv "$saved" "$policy"; else rm -f "$policy"; fi
  [ "$rc" = 0 ] || die "apt-get install ${pkgs[*]} failed (exit $rc); see $state/apt.log"
}

wait_for() {  # wait_for SECONDS WHAT COMMAND...
  local limit=$1 what=$2; shift 2
  for _ in $(seq "$limit"); do "$@" > /dev/null 2>&1 && return 0; sleep 1; done
  return 1
}

# -- PostgreSQL ----------------------------------------------------------------
pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
pg_up() { "$(pg_bin)/pg_isready" -q -h 127.0.0.1 -p $PG_PORT; }
pg_sql() { "$(pg_bin)/psql" -X -q -h 127.0.0.1 -p $PG_PORT -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"; }

start_postgres() {
  [ -n "$(pg_bin)" ] || { say "installing PostgreSQL (Debian package)"; apt_install postgresql; }
  local bin data=$state/postgres
  bin=$(pg_bin)
  if ! pg_up; then
    mkdir -p "$data"
    chown postgres: "$data" && chmod 700 "$data"
    if [ ! -s "$data/PG_VERSION" ]; then
      runuser -u postgres -- "$bin/initdb" -D "$data" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
        > "$state/postgres-init.log" 2>&1 || die "initdb failed; see $state/postgres-init.log"
    fi
    runuser -u postgres -- "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w -t 60 \
      -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $data -c fsync=off" start > /dev/null \
      || die "PostgreSQL did not start; see $data/server.log"
    say "PostgreSQL started on 127.0.0.1:$PG_PORT (data $data)"
  else
    say "PostgreSQL already answers on 127.0.0.1:$PG_PORT"
  fi
  pg_sql -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -q 1 || pg_sql -c "CREATE DATABASE test"
}

stop_postgres() {
  local data=$state/postgres
  [ -s "$data/postmaster.pid" ] || return 0
  runuser -u postgres -- "$(pg_bin)/pg_ctl" -D "$data" -m fast -w stop > /dev/null && say "PostgreSQL stopped"
}

# -- MariaDB -------------------------------------------------------------------
my_client() { command -v mariadb || command -v mysql; }
my_up() { [ -n "$(my_client)" ] && "$(my_client)" -h 127.0.0.1 -P $MY_PORT -u root --connect-timeout=2 -e "SELECT 1"; }

start_mariadb() {
  command -v mariadbd > /dev/null || { say "installing MariaDB (Debian package)"; apt_install mariadb-server; }
  local data=$state/mariadb sock=$state/mariadb/mariadb.sock
  if ! my_up > /dev/null 2>&1; then
    mkdir -p "$data" && chown mysql: "$data"
    if [ ! -d "$data/mysql" ]; then
      mariadb-install-db --no-defaults --user=mysql --datadir="$data" --auth-root-authentication-method=normal \
        --skip-test-db > "$state/mariadb-init.log" 2>&1 || die "mariadb-install-db failed; see $state/mariadb-init.log"
    fi
    # utf8mb4 as Debian's own config sets it (--no-defaults reads none): the tests store Chinese text
    nohup mariadbd --no-defaults --user=mysql --datadir="$data" --socket="$sock" --pid-file="$data/mariadb.pid" \
      --port=$MY_PORT --bind-address=127.0.0.1 --skip-name-resolve \
      --character-set-server=utf8mb4 --collation-server=utf8mb4_unicode_ci --innodb-flush-log-at-trx-commit=0 \
      --log-error="$state/mariadb.log" > /dev/null 2>&1 &
    wait_for 60 MariaDB "$(my_client)" -S "$sock" -u root -e "SELECT 1" \
      || die "MariaDB did not start; see $state/mariadb.log"
    # --skip-name-resolve: a TCP client from 127.0.0.1 is 'root'@'127.0.0.1', which install-db does not create
    "$(my_client)" -S "$sock" -u root -e "CREATE USER IF NOT EXISTS 'root'@'127.0.0.1';
      GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;"
    say "MariaDB started on 127.0.0.1:$MY_PORT (data $data)"
  else
    say "MariaDB already answers on 127.0.0.1:$MY_PORT"
  fi
  "$(my_client)" -h 127.0.0.1 -P $MY_PORT -u root -e "CREATE DATABASE IF NOT EXISTS test CHARACTER SET utf8mb4"
}

stop_mariadb() {
  local pid_file=$state/mariadb/mariadb.pid
  [ -s "$pid_file" ] || return 0
  local pid
  pid=$(cat "$pid_file")
  kill "$pid" 2> /dev/null || return 0
  wait_for 60 "MariaDB stop" sh -c "! kill -0 $pid" && say "MariaDB stopped"
}

# -- Neo4j ---------------------------------------------------------------------
neo4j() { if [ -x "$here/neo4j/start.sh" ]; then "$here/neo4j/start.sh" "$@"; else say "no Neo4j launcher yet"; fi; }

print_env() {
  cat <<EOF
export NEO4J_URI=bolt://127.0.0.1:7687 NEO4J_USER=neo4j NEO4J_PASSWORD=executor-neo4j
# PostgreSQL: postgresql://postgres@127.0.0.1:$PG_PORT/test   MariaDB: mysql+pymysql://root@127.0.0.1:$MY_PORT/test
# stop them: services/services.sh stop   (or make services-stop)
EOF
}

mkdir -p "$state"
case "${1:-start}" in
  start)
    start_postgres
    start_mariadb
    neo4j start >&2  # its progress and its own env line: stdout holds the environment once
    print_env
    ;;
  env) print_env ;;
  stop)
    neo4j stop || true
    stop_mariadb
    stop_postgres
    ;;
  *) die "usage: services/services.sh [start|env|stop]" ;;
esac
