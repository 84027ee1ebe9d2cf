#!/bin/sh
# Regenerates gen/cuzk/v1 from proto/cuzk/v1/*.proto with pinned generators.
# Needs protoc and its well-known types (Debian: apt-get install -y
# protobuf-compiler libprotobuf-dev); the generated code is committed, so
# building cuzk never does.
set -eu
cd "$(dirname "$0")/.."
bin="$(pwd)/build/protoc-bin"
mkdir -p "$bin"
GOBIN="$bin" go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
GOBIN="$bin" go install connectrpc.com/connect/cmd/protoc-gen-connect-go@v1.21.1
PATH="$bin:$PATH" protoc -I proto \
	--go_out=. --go_opt=module=github.com/cuzk/cuzk \
	--connect-go_out=. --connect-go_opt=module=github.com/cuzk/cuzk \
	proto/cuzk/v1/*.proto
