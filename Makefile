# Switchyard. `make run` and `make test` do all the set-up on a fresh machine.
SHELL := /bin/bash
NPM ?= npm
PORT ?= 8080
HOST ?= 127.0.0.1
MYSQL_URL ?= mysql://root@127.0.0.1:3306/test
export SWITCHYARD_CONFIG ?= $(if $(wildcard switchyard.yaml),switchyard.yaml,switchyard.example.yaml)

.PHONY: install generate generate-check build run serve test typecheck lint unit integration integration-mysql contract e2e mock migrate bench clean

# npm 11.19 refuses `npm ci` on lockfiles without other platforms' optional binaries ("Missing: @swc/core-darwin-arm64
# from lock file"); `npm install` then installs the same pinned tree without changing the lockfile.
node_modules/.installed: package.json package-lock.json
	$(NPM) ci --no-audit --no-fund || $(NPM) install --no-audit --no-fund
	@touch $@

install: node_modules/.installed

generate: install
	$(NPM) run -s generate

generate-check: install
	@$(NPM) run -s generate:check || { echo "generated/ is stale: run 'make generate' and commit it"; exit 1; }

build: install
	$(NPM) run -s build
	$(NPM) run -s build:console

migrate: install
	node bin/switchyard.js migrate

# Embedded SQLite, a demo account and key printed, serving on :8080.
run: build
	@node dist/cli.js demo | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const d=JSON.parse(s);console.log("\nDemo account %s (%s USD). API key, shown once:\n\n  %s\n\nTry:\n  curl http://$(HOST):$(PORT)/v1/chat/completions -H \"Authorization: Bearer %s\" -H \"Content-Type: application/json\" -d '"'"'{\"model\":\"mock-chat\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}]}'"'"'\n",d.account.email,d.account.balance_usd,d.key,d.key)})'
	node dist/cli.js serve --port $(PORT) --host $(HOST)

typecheck: install
	$(NPM) exec -- tsc --noEmit -p tsconfig.json

lint: install
	$(NPM) run -s lint

unit: install
	$(NPM) exec -- jest test/unit

integration: install
	$(NPM) exec -- jest test/integration

integration-mysql: install
	DATABASE_URL=$(MYSQL_URL) $(NPM) exec -- jest test/integration

contract: build
	bash test/contract/run.sh

# The web console in headless Chromium (/usr/bin/chromium, Debian's package) against a real gateway.
e2e: build
	$(NPM) exec -- jest test/e2e

# Prism serves the contract's examples on :4010, offline; no database or upstream needed.
mock: install
	node_modules/.bin/prism mock -h 127.0.0.1 -p 4010 openapi/openapi.yaml

test: typecheck lint generate-check unit integration integration-mysql contract e2e

bench: build
	node test/bench/overhead.mjs

clean:
	rm -rf dist data console/dist
