# moebench — see README.md. Only Go is needed for every target but native.

GO        ?= go
BIN       := bin/moebench
VERSION   := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
FUZZTIME  ?= 10000x
# Packages with concurrent code run again under the race detector, less the
# tests that only re-run single-goroutine models (ten times slower under it,
# nothing to find): among them the budget's in-turn placement, whose layers
# must be large enough for in turn to save memory, and the README's
# figures, each re-run by one model (the points' concurrency has tests of
# its own). moe's one concurrency,
# dispatch and combine side by side or in turn with their progress hook,
# checks and a failure under faults stopping a phase, has tests of its own
# there.
RACE_PKGS := ./cmd/... ./internal/... ./traces/... ./native/... ./sizing/...
RACE_SKIP := ^TestValidate|^TestFit(Reproduces|NVLink|ReproducesTheCommittedFragment|BoundsAndLeaveOneOut)$$|^TestTransferRefitPredictsUnfittedRuns$$|^TestReplayMemoryBounded$$|^Test(Run|Replay|Size)InTurnToFitMemory$$|^TestREADME
MOE_RACE  := ^(TestLayerProgress|TestLayerInTurnIsTheSame|TestBreakdownSumsUnderBackground|TestLayerIsDeterministic|TestLLCombineChecksCatchFaults|TestCombineCheckOverflowStartsTheReplay|TestFailedPhaseStopsAndSaysWhy|TestFlapIsOnTheLayersClock)$$

# The HTML report's browser check runs on its own, verbosely, so that a
# skip (no Chromium installed) is seen.
BROWSER_TEST := ^TestReportInBrowser$$

.PHONY: all build run test unit race browser fuzz-smoke bench pgo lint native clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/moebench

# The main job on built-in defaults.
run: build
	./$(BIN) run

test: lint unit race browser fuzz-smoke

unit:
	$(GO) test -count=1 -skip '$(BROWSER_TEST)' ./...

race:
	$(GO) test -count=1 -race -skip '$(BROWSER_TEST)|$(RACE_SKIP)' $(RACE_PKGS)
	$(GO) test -count=1 -race -run '$(MOE_RACE)' ./moe

browser:
	@out=$$($(GO) test -count=1 -run '$(BROWSER_TEST)' -v ./cmd/moebench 2>&1); st=$$?; \
	if [ $$st -ne 0 ]; then printf '%s\n' "$$out"; exit $$st; fi; \
	printf '%s\n' "$$out" | grep -E '^(--- |ok |    report_browser_test)'

# A short coverage-guided fuzzing run for every parser's fuzz target: a fixed
# number of inputs rather than a duration, so a busy machine cannot trip the
# fuzzer's deadline. Targets are found by their source (no test binary is
# built to list them); the log is a temporary file of this run's own.
fuzz-smoke:
	@set -e; log=$$(mktemp "$${TMPDIR:-/tmp}/moebench-fuzz.XXXXXX"); trap 'rm -f "$$log"' EXIT; \
	for f in $$(grep -rl --include='*_test.go' '^func Fuzz' . | sort); do \
		pkg=$$(dirname $$f); \
		for fz in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "fuzz $$pkg $$fz"; \
			$(GO) test -run '^$$' -fuzz "^$$fz\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 100x $$pkg >"$$log" 2>&1 \
				|| { cat "$$log"; exit 1; }; \
		done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# go build optimizes the binary with cmd/moebench/default.pgo, a CPU
# profile of the LL scale benchmark: its 1,024-rank layer spends its time
# where every large run does (the engine, the NIC model, mini-gda, the LL
# layer). pgo records it afresh, after the hot paths change.
pgo:
	@set -e; tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/moebench-pgo.XXXXXX"); \
	out=$$(mktemp cmd/moebench/.default.pgo.XXXXXX); trap 'rm -rf "$$tmp" "$$out"' EXIT; \
	$(GO) test -c -o "$$tmp/moe.test" ./moe; \
	(cd moe && "$$tmp/moe.test" -test.run '^$$' -test.bench LayerLLScale -test.benchtime 1x -test.cpuprofile "$(CURDIR)/$$out"); \
	mv "$$out" cmd/moebench/default.pgo

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# CUDA library for the native engine (needs nvcc); the Go binary loads it at
# run time and builds without it.
native:
	$(MAKE) -C native

clean:
	rm -rf bin native/build
