# cuzk — build, test, run.
GO        ?= go
NVCC      ?= /usr/local/cuda/bin/nvcc
CUDA_ARCH ?= sm_90
CUDA_GENCODE ?= -gencode=arch=compute_$(subst sm_,,$(CUDA_ARCH)),code=$(CUDA_ARCH)
BUILD     ?= build
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X github.com/cuzk/cuzk/cli.Version=$(VERSION)
# Packages whose tests run with the race detector.
TEST_FLAGS ?= -race -count=1 -timeout 15m

.PHONY: build install test run bench lint cuda gpu-test proto clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BUILD)/cuzk ./cmd/cuzk

# cuzk into $(go env GOBIN), or $(go env GOPATH)/bin.
install:
	$(GO) install -ldflags "$(LDFLAGS)" ./cmd/cuzk

test:
	$(GO) vet ./...
	$(GO) test $(TEST_FLAGS) ./...

# A small proving job with its checkpoints: on the GPU where the kernel library
# loads, else on the CPU.
run: build
	$(BUILD)/cuzk prove --circuit porep --partitions 4 --backend auto \
		--keys $(BUILD)/keys --setup-if-missing --out $(BUILD)/proofs --store $(BUILD)/store

bench: build
	$(BUILD)/cuzk bench prove --backend cpu

lint:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)

# The CUDA kernel library (needs nvcc; run on the GPU machine).
cuda:
	mkdir -p $(BUILD)
	$(NVCC) -O3 -std=c++17 -shared -Xcompiler -fPIC $(CUDA_GENCODE) $(EXTRA_NVCC_FLAGS) \
		-o $(BUILD)/libcuzkgpu.so cuda/src/cuzkgpu.cu

# GPU test binaries built here (no CUDA needed), run on the GPU machine.
gpu-test:
	$(GO) test -c -o $(BUILD)/cuda.test ./cuda/

# The protobuf API's Go code (committed; needs protoc and the pinned generators).
proto:
	./proto/gen.sh

clean:
	rm -rf $(BUILD)
