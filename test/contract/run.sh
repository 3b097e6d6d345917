#!/usr/bin/env bash
# Contract tests: Dredd sends every documented request of openapi/openapi.yaml to a real server (built dist/, a
# fresh SQLite database, the mock provider, the admin API on, card payments against a fake Stripe API on loopback)
# and test/contract/hooks.js validates every answer against the schemas.
set -euo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
pid=
stripe_pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
  [ -n "$stripe_pid" ] && kill "$stripe_pid" 2>/dev/null; wait "$stripe_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

export DATABASE_URL="sqlite:$tmp/contract.db" SWITCHYARD_CONFIG=test/contract/switchyard.contract.yaml LOG_LEVEL=warn
export SWITCHYARD_SECRET_KEY=$(node -e 'console.log(require("crypto").randomBytes(32).toString("base64"))')
cli() { node dist/cli.js "$@"; }
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[process.argv[1]]))' "$1"; }
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

account=$(cli accounts create --email contract@example.com --credits 100 | field id)
export CONTRACT_KEY=$(cli keys create --account "$account" --name contract | field key)
export CONTRACT_LIMITED_KEY=$(cli keys create --account "$account" --name limited --scopes embeddings | field key)
# One request a minute: its second Messages request is the documented 429 rate_limit_error.
export CONTRACT_RPM_KEY=$(cli keys create --account "$account" --name rpm --rpm 1 | field key)
# Operators, with one password: an owner, a viewer, one that will only start TOTP enrolment, one whose enrolment a
# transaction confirms (hooks.js signs them in and enrols them with real codes).
export SWITCHYARD_OPERATOR_PASSWORD="contract operator $(node -e 'console.log(require("crypto").randomBytes(8).toString("hex"))')"
for who in owner viewer pending confirm; do
  role=$([ "$who" = owner ] && echo owner || echo viewer)
  cli operators create --email "operator-$who@example.com" --role "$role" > /dev/null
  export "CONTRACT_OPERATOR_${who^^}=operator-$who@example.com"
done
broke=$(cli accounts create --email broke@example.com | field id)
export CONTRACT_BROKE_KEY=$(cli keys create --account "$broke" --name broke | field key)

# The console and admin operations: an admin token, and Stripe keys for the library pointed at a fake Stripe.
stripe_port=$(free_port)
PORT=$stripe_port node --import tsx test/fakes/stripeApi.ts > "$tmp/stripe.log" 2>&1 &
stripe_pid=$!
export ADMIN_TOKEN="contract-admin-token-$(node -e 'console.log(require("crypto").randomBytes(16).toString("hex"))')"
export STRIPE_SECRET_KEY=sk_test_contract STRIPE_WEBHOOK_SECRET=whsec_contract STRIPE_API_BASE="http://127.0.0.1:$stripe_port"

port=$(free_port)
node dist/cli.js serve --port "$port" > "$tmp/server.log" 2>&1 & # not through cli(): $! must be the server itself, for cleanup to stop it
pid=$!
for _ in $(seq 1 100); do
  curl -fs -o /dev/null "http://127.0.0.1:$port/v1/models" -H "Authorization: Bearer $CONTRACT_KEY" && break
  kill -0 "$pid" 2>/dev/null || { cat "$tmp/server.log"; exit 1; }
  sleep 0.2
done
for _ in $(seq 1 50); do
  curl -s -o /dev/null "$STRIPE_API_BASE/" && break
  kill -0 "$stripe_pid" 2>/dev/null || { cat "$tmp/stripe.log"; exit 1; }
  sleep 0.2
done
export CONTRACT_URL="http://127.0.0.1:$port" CONTRACT_SERVER_LOG="$tmp/server.log"

node_modules/.bin/dredd openapi/openapi.yaml "$CONTRACT_URL" --hookfiles=test/contract/hooks.js --loglevel=warning
