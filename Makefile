# temco — the two set-up commands are `make run` and `make test`.
SHELL := bash
BIN   := $(CURDIR)/.bin
GO    ?= go

.PHONY: run test tools build unit bench bench-scale bench-agents bench-rollouts bench-restart bench-drift bench-probes bench-artifacts chaos histories generate fmt clean fuzz emco-example chromium

## run: build what is missing, then start the full local stack (temco dev)
run: tools build
	$(BIN)/temco dev

## test: build what is missing, then run every test (unit, API, workflow, end-to-end, browser)
test: tools chromium
	$(GO) vet ./...
	cd contract && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd hubapi && $(GO) vet ./... && $(GO) test -count=1 ./...
	cd client && $(GO) vet ./... && $(GO) test -count=1 ./...
	GO=$(GO) tests/run.sh

## tools: build the pinned dev binaries into .bin (idempotent)
tools:
	@BIN=$(BIN) tools/build.sh

## chromium: Debian's chromium for the dashboard's browser tests (tests/browser), unless
## /usr/bin/chromium is there already; waits for a dpkg lock another apt holds
APT := $(if $(filter 0,$(shell id -u)),,sudo) env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600
chromium:
	@test -x /usr/bin/chromium || { $(APT) update && $(APT) install -y --no-install-recommends chromium; }
	@/usr/bin/chromium --version 2>/dev/null

## generate: hubapi's deepcopy functions and CRDs (hubapi/crds), from its Go types; the
## chart ships the same CRDs (deploy/temco/crds, installed by Helm before its templates).
## hubapi is a module of its own: controller-gen loads it from its folder
generate:
	@BIN=$(BIN) tools/build.sh controllergen
	cd hubapi && $(BIN)/controller-gen object paths=./... crd:crdVersions=v1 output:crd:artifacts:config=crds
	mkdir -p deploy/temco/crds && rm -f deploy/temco/crds/*.yaml && cp hubapi/crds/*.yaml deploy/temco/crds/

## build: the temco binary
build:
	$(GO) build -o $(BIN)/temco ./cmd/temco

## unit: the fast tests only (no local clusters or Temporal server)
unit: tools
	cd contract && $(GO) test -count=1 -short ./...
	cd hubapi && $(GO) test -count=1 -short ./...
	cd client && $(GO) test -count=1 -short ./...
	$(GO) test -count=1 -short ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf .data

## histories: record a new set of workflow histories for tests/replay (runs the e2e suite)
## and append its sums to SHA256SUMS; earlier sets stay as they are: they prove workflow
## changes compatible with runs in flight, so a set already in git is refused;
## HISTORIES_RUN='TestA|TestB' records from those e2e tests only
HISTORIES ?= $(shell date +%Y-%m-%d)
histories: tools
	GO=$(GO) HISTORIES_RUN='$(HISTORIES_RUN)' tests/replay/record.sh $(HISTORIES)

## bench: instantiate 3 apps x 10 resources onto 3 local clusters vs a raw parallel server-side
## apply, then the same with gac and hpa on the DIG (the controllers' share of the time),
## BENCHN times each (medians are reported); BENCH='Instantiate$' runs the first alone;
## then one GitOps commit (30 files) into a repository of 1000 clusters' deployments
## and the dashboard's answers for a DIG on 10,000 clusters and the fleet of 1,000 DIGs (api), the cost of dropping
## undeclared fields (a schema parsed, an object pruned), of sealing a context's Secrets,
## and of rendering a chart, or evaluating a policy, in its sandbox (a child process) rather than in the worker,
## and of a cluster's span with traces off
BENCHN ?= 10
BENCH ?= Instantiate
bench: tools
	TEMCO_E2E_MONGO_BACKEND=postgresql TEMCO_E2E_CLUSTERS_PER_BATCH=50 \
	  $(GO) test -count=1 -run '^$$' -bench '$(BENCH)' -benchtime $(BENCHN)x -timeout 30m ./tests/e2e/
	$(GO) test -count=1 -run '^$$' -bench Commit -benchtime 100x ./internal/adapters/gitops/
	$(GO) test -count=1 -run '^$$' -bench "Dashboard|Fleet" -benchtime 10x ./api/
	$(GO) test -count=1 -run '^$$' -bench . -benchmem ./internal/adapters/kubeschema/
	$(GO) test -count=1 -run '^$$' -bench SecretsAtRest -benchtime 100x -benchmem ./internal/core/appctx/
	$(GO) test -count=1 -run '^$$' -bench Sandbox -benchtime 20x ./activities/render/
	$(GO) test -count=1 -run '^$$' -bench SpanOff -benchmem ./internal/adapters/tracing/
	$(GO) test -count=1 -run '^$$' -bench PolicySandbox -benchtime 20x ./internal/adapters/policyengine/

## bench-scale: register CLUSTERS clusters (namespaces of three local API servers) through
## cluster imports, instantiate and terminate a 3-chart app on them, twice (TEMCO_SCALE_RUNS),
## with 50 API clients for 20 s (TEMCO_SCALE_API_SECONDS) after the first instantiate, in a
## closed loop and then at each offered rate of TEMCO_SCALE_API_RATES (requests/s, "50 100 200"),
## against a raw parallel server-side apply; prints the ratios on a line of their own
## (TEMPORAL=postgresql: on temporal-server with PostgreSQL and 4 history shards, with
## REPLICAS api and worker processes, 2 by default there)
CLUSTERS ?= 100
TEMPORAL ?=
REPLICAS ?= $(if $(TEMPORAL),2,1)
bench-scale: tools
	TEMCO_E2E_MONGO_BACKEND=postgresql TEMCO_E2E_CLUSTERS_PER_BATCH=0 TEMCO_SCALE_CLUSTERS=$(CLUSTERS) \
	  TEMCO_E2E_TEMPORAL_BACKEND=$(TEMPORAL) TEMCO_E2E_REPLICAS=$(REPLICAS) \
	  $(GO) test -count=1 -run '^$$' -bench Scale -benchtime 1x -timeout 180m ./tests/e2e/

## bench-agents: AGENTS agent clusters (namespaces of the three local API servers), each with its
## own temco agent, run in the benchmark's process: instantiate and terminate beside the push
## path on the same namespaces and the raw apply; the api's, Temporal's and the store's CPU per
## agent per minute while the agents only poll; the time for the agents, offline for
## AGENTS_OFFLINE across an update, to bring it to its end once back
AGENTS ?= 100
AGENTS_OFFLINE ?= 10m
bench-agents: tools
	TEMCO_E2E_MONGO_BACKEND=postgresql TEMCO_E2E_CLUSTERS_PER_BATCH=0 TEMCO_AGENTS=$(AGENTS) TEMCO_AGENTS_OFFLINE=$(AGENTS_OFFLINE) \
	  $(GO) test -count=1 -run '^$$' -bench '^BenchmarkAgents$$' -benchtime 1x -timeout 180m ./tests/e2e/

## bench-rollouts: DIGS DIGs (100) with 3-stage rollout strategies over FLEET clusters
## (1000) instantiated at once, and one DIG placed by label on a tenth of them, ten times:
## p50/p90/p99 beside KubeFleet's published figures (BENCHMARKS.md)
DIGS ?= 100
FLEET ?= 1000
bench-rollouts: tools
	TEMCO_E2E_MONGO_BACKEND=postgresql TEMCO_E2E_CLUSTERS_PER_BATCH=0 TEMCO_SCALE_CLUSTERS=$(FLEET) \
	  TEMCO_ROLLOUT_DIGS=$(DIGS) TEMCO_E2E_TEMPORAL_BACKEND=$(TEMPORAL) TEMCO_E2E_REPLICAS=$(REPLICAS) \
	  $(GO) test -count=1 -run '^$$' -bench RolloutFleet -benchtime 1x -timeout 120m ./tests/e2e/

## bench-restart: the scale DIG on FLEET clusters (1000) instantiated uninterrupted, then
## with the worker killed a third of the way, then with the Temporal server killed, in
## ROUNDS rounds (3): times, their medians, and the API servers' count of server-side
## applies (BENCHMARKS.md)
ROUNDS ?= 3
bench-restart: tools
	TEMCO_E2E_MONGO_BACKEND=postgresql TEMCO_E2E_CLUSTERS_PER_BATCH=0 TEMCO_SCALE_CLUSTERS=$(FLEET) \
	  TEMCO_RESTART_ROUNDS=$(ROUNDS) TEMCO_E2E_TEMPORAL_BACKEND=$(TEMPORAL) TEMCO_E2E_REPLICAS=$(REPLICAS) \
	  $(GO) test -count=1 -run '^$$' -bench Restart -benchtime 1x -timeout 60m ./tests/e2e/

## bench-drift: one drift check of a 3-chart DIG over CLUSTERS clusters (as bench-scale's),
## then one with correctDrift after a ConfigMap was deleted on every tenth (BENCHMARKS.md)
bench-drift: tools
	TEMCO_E2E_MONGO_BACKEND=postgresql TEMCO_E2E_CLUSTERS_PER_BATCH=0 TEMCO_SCALE_CLUSTERS=$(CLUSTERS) \
	  $(GO) test -count=1 -run '^$$' -bench DriftCheck -benchtime 1x -timeout 60m ./tests/e2e/

## bench-probes: the clusters of bench-scale (CLUSTERS) probed by the ClusterHealth
## workflow: a first round and a steady one, each timed with the CPU of the worker,
## Temporal, the store and the API servers (BENCHMARKS.md)
bench-probes: tools
	TEMCO_E2E_MONGO_BACKEND=postgresql TEMCO_E2E_CLUSTERS_PER_BATCH=0 TEMCO_SCALE_CLUSTERS=$(CLUSTERS) \
	  $(GO) test -count=1 -run '^$$' -bench ClusterProbes -benchtime 1x -timeout 60m ./tests/e2e/

## bench-artifacts: one chart pushed to the stack's OCI registry and named by reference by
## the app of ARTIFACT_DIGS DIGs (3, a project each) on CLUSTERS clusters (as bench-scale's;
## 200 unless CLUSTERS is given), instantiated one after another after the same DIG with the
## chart uploaded; a counting proxy before the registry: fails unless the chart's blob was
## downloaded once in all (BENCHMARKS.md)
ARTIFACT_DIGS ?= 3
bench-artifacts: tools
	TEMCO_E2E_MONGO_BACKEND=postgresql TEMCO_E2E_CLUSTERS_PER_BATCH=0 \
	  TEMCO_SCALE_CLUSTERS=$(if $(filter file,$(origin CLUSTERS)),200,$(CLUSTERS)) TEMCO_ARTIFACT_DIGS=$(ARTIFACT_DIGS) \
	  $(GO) test -count=1 -run '^$$' -bench ArtifactFleet -benchtime 1x -timeout 60m ./tests/e2e/

## chaos: random lifecycle operations (DIGs with updates, rollbacks, staged rollouts, stops;
## logical clouds) from CHAOS_CLIENTS clients for CHAOS_DURATION while the worker, the api,
## Temporal, FerretDB, a cluster's kube-apiserver, the git server and the agent cluster's
## temco agent are SIGKILLed at random, then every invariant checked (docs/chaos.md); CHAOS_SEED repeats a run's
## choices. make test runs a short one (90 s, 2 clients with 2 DIGs each, logical clouds)
CHAOS_SEED     ?= 1
CHAOS_DURATION ?= 10m
CHAOS_CLIENTS  ?= 4
CHAOS_DIGS     ?= 3
CHAOS_CLOUDS   ?= true
chaos: tools
	CHAOS_SEED=$(CHAOS_SEED) CHAOS_DURATION=$(CHAOS_DURATION) CHAOS_CLIENTS=$(CHAOS_CLIENTS) CHAOS_DIGS=$(CHAOS_DIGS) CHAOS_CLOUDS=$(CHAOS_CLOUDS) \
	  $(GO) test -count=1 -run TestChaos -timeout 120m -v ./tests/chaos/

## fuzz: run every fuzz target for FUZZTIME each (their seed corpora, hostile archives
## included, also run in `make test`); a crash leaves its input under testdata/fuzz
FUZZTIME ?= 60s
FUZZ_TARGETS := ./api:FuzzJSONRequests ./api:FuzzMultipartRequests ./api:FuzzChartArchive ./api:FuzzCodecRequests ./api:FuzzCrossSiteHeaders \
	./internal/adapters/profile:FuzzParse ./internal/adapters/kubeconfig:FuzzParse ./internal/adapters/auth:FuzzAuthenticate
fuzz: tools
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "== $${t#*:} in $${t%%:*} for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}"; \
	done

## emco-example: repack tests/emco's charts and profiles as EMCO's examples pack them
## (a chart in a folder named like its app; a profile's files at the root, "./" first)
EMCO_TAR := tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=2026-01-01T00:00:00Z -cf -
emco-example:
	cd tests/emco && for app in web cache; do \
	  $(EMCO_TAR) -C charts $$app | gzip -n > packed/$$app.tgz; \
	  $(EMCO_TAR) -C profiles/$$app . | gzip -n > packed/$$app-profile.tar.gz; \
	done
