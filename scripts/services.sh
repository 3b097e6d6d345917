#!/usr/bin/env bash
# What the tests need besides node_modules, started or installed when missing (`make services`; `make test` runs it
# first). Arguments pick the parts; none means all of them:
#   mariadb   MariaDB on 127.0.0.1:3306 (root, empty password) with the database `test` (integration-mysql)
#   postgres  PostgreSQL 15 on 127.0.0.1:5432 (role postgres, trust authentication) with the database `test`
#             (integration-pg)
#   redis     Redis on 127.0.0.1:6379 (integration: processes sharing rate limits)
#   chromium  /usr/bin/chromium, Debian's `chromium` package, or CHROMIUM_PATH (e2e)
#   haproxy   /usr/sbin/haproxy, Debian's `haproxy` package, or HAPROXY_PATH (cluster: nodes behind a load balancer)
# Something that is missing and cannot be installed here ends the script with one line saying what to install.
set -euo pipefail

fail() { echo "services: $*" >&2; exit 1; }

mariadb_up() { mariadb-admin -uroot -h127.0.0.1 ping >/dev/null 2>&1; }

ensure_mariadb() {
  command -v mariadb-admin >/dev/null || fail "MariaDB is not installed: install Debian's mariadb-server (or run a MariaDB on 127.0.0.1:3306, root with an empty password)"
  if ! mariadb_up; then
    [ -x /usr/sbin/mariadbd ] || fail "MariaDB is down and /usr/sbin/mariadbd is missing: install Debian's mariadb-server (or start MariaDB on 127.0.0.1:3306)"
    echo "services: starting MariaDB"
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd
    for _ in $(seq 1 60); do mariadb_up && break; sleep 1; done
    mariadb_up || fail "MariaDB did not answer on 127.0.0.1:3306 within 60 s after starting /usr/sbin/mariadbd"
  fi
  mariadb -uroot -h127.0.0.1 -e 'CREATE DATABASE IF NOT EXISTS test' ||
    fail "could not create the database test as root@127.0.0.1 (the tests expect root with an empty password)"
}

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432; }

# Debian's postgresql package makes one cluster, /etc/postgresql/<version>/main, with trust authentication for local
# TCP connections in the image used here; the tests connect as the role postgres.
ensure_postgres() {
  command -v pg_isready >/dev/null ||
    fail "PostgreSQL is not installed: install Debian's postgresql (15) package (or run a PostgreSQL on 127.0.0.1:5432, role postgres, trust authentication)"
  if ! pg_up; then
    local version
    version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n 1)
    [ -n "$version" ] && command -v pg_ctlcluster >/dev/null ||
      fail "PostgreSQL is down and no cluster is in /etc/postgresql: install Debian's postgresql package (or start PostgreSQL on 127.0.0.1:5432)"
    echo "services: starting PostgreSQL $version"
    pg_ctlcluster --skip-systemctl-redirect "$version" main start ||
      fail "pg_ctlcluster could not start the PostgreSQL $version cluster 'main' (see /var/log/postgresql)"
    for _ in $(seq 1 60); do pg_up && break; sleep 1; done
    pg_up || fail "PostgreSQL did not answer on 127.0.0.1:5432 within 60 s after pg_ctlcluster start"
  fi
  local exists
  exists=$(psql -h 127.0.0.1 -U postgres -d postgres -Atc "SELECT 1 FROM pg_database WHERE datname = 'test'") ||
    fail "could not connect to PostgreSQL on 127.0.0.1 as the role postgres without a password: the tests expect trust authentication for it (pg_hba.conf: host all all 127.0.0.1/32 trust)"
  [ "$exists" = 1 ] || psql -h 127.0.0.1 -U postgres -d postgres -qc 'CREATE DATABASE test' ||
    fail "could not create the PostgreSQL database test as the role postgres"
}

# PING over bash's /dev/tcp, so that redis-cli is not needed.
redis_up() {
  local reply
  { exec 3<>/dev/tcp/127.0.0.1/6379; } 2>/dev/null || return 1
  printf 'PING\r\n' >&3
  IFS= read -r -t 2 reply <&3 || true
  exec 3<&-
  [[ $reply == +PONG* ]]
}

ensure_redis() {
  redis_up && return
  command -v redis-server >/dev/null || fail "Redis is down and redis-server is missing: install Debian's redis-server (or start Redis on 127.0.0.1:6379)"
  echo "services: starting Redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
  for _ in $(seq 1 30); do redis_up && break; sleep 1; done
  redis_up || fail "Redis did not answer on 127.0.0.1:6379 within 30 s after starting redis-server"
}

# The browser tests drive Debian's Chromium: playwright-core cannot download a browser of its own here.
ensure_chromium() {
  if [ -n "${CHROMIUM_PATH:-}" ]; then
    [ -x "$CHROMIUM_PATH" ] || fail "CHROMIUM_PATH=$CHROMIUM_PATH is not an executable: point it at a Chromium, or unset it to use Debian's chromium package"
    return
  fi
  [ -x /usr/bin/chromium ] && return
  local how="install Debian's chromium package (apt-get install chromium) or set CHROMIUM_PATH to a Chromium"
  command -v apt-get >/dev/null || fail "Chromium is missing (/usr/bin/chromium): $how"
  [ "$(id -u)" = 0 ] || fail "Chromium is missing (/usr/bin/chromium) and installing it needs root: $how"
  echo "services: installing Chromium (Debian's chromium package)"
  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null ||
    fail "apt-get could not install chromium: $how"
  [ -x /usr/bin/chromium ] || fail "apt-get installed chromium but /usr/bin/chromium is missing: $how"
}

# The cluster test puts gateway nodes behind a real HAProxy; it starts its own (the package's service stays off).
ensure_haproxy() {
  if [ -n "${HAPROXY_PATH:-}" ]; then
    [ -x "$HAPROXY_PATH" ] || fail "HAPROXY_PATH=$HAPROXY_PATH is not an executable: point it at an HAProxy, or unset it to use Debian's haproxy package"
    return
  fi
  [ -x /usr/sbin/haproxy ] && return
  local how="install Debian's haproxy package (apt-get install haproxy) or set HAPROXY_PATH to an HAProxy (2.2 or later)"
  command -v apt-get >/dev/null || fail "HAProxy is missing (/usr/sbin/haproxy): $how"
  [ "$(id -u)" = 0 ] || fail "HAProxy is missing (/usr/sbin/haproxy) and installing it needs root: $how"
  echo "services: installing HAProxy (Debian's haproxy package)"
  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q haproxy >/dev/null ||
    fail "apt-get could not install haproxy: $how"
  [ -x /usr/sbin/haproxy ] || fail "apt-get installed haproxy but /usr/sbin/haproxy is missing: $how"
}

[ $# -gt 0 ] || set -- mariadb postgres redis chromium haproxy
for part in "$@"; do
  case $part in
    mariadb | postgres | redis | chromium | haproxy) "ensure_$part" ;;
    *) fail "unknown part '$part' (mariadb, postgres, redis, chromium, haproxy)" ;;
  esac
done
