# The two commands of the README, plus conveniences.
.PHONY: run test bench bench-hydrate bench-pg soak
run:   ## set up what is missing and run the console with demo data
	scripts/run.sh
test:  ## set up what is missing and run every test
	scripts/test.sh
bench: ## build release and run the benchmark suite (docs/BENCHMARKS.md)
	scripts/bench.sh suite
bench-hydrate: ## the queue's cold load in Chromium, 10 Mbit/s 40 ms, CPU x4, release build
	scripts/bench.sh hydrate
bench-pg: ## intake, poll and scale-out on PostgreSQL with one and two instances (a throwaway durable cluster)
	scripts/bench.sh pg
soak:  ## build release and run the 10-minute soak test (docs/BENCHMARKS.md)
	scripts/bench.sh soak --minutes 10
