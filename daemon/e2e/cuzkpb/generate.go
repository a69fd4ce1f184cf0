// Package cuzkpb is the Go client of Curio's cuzk.v1.ProvingEngine, generated from Curio's
// proving.proto (daemon/tests/fixtures/curio) as Curio generates lib/cuzk: protoc-gen-go
// v1.36.11 and protoc-gen-go-grpc. The end-to-end test drives cuzk-daemon with it, as Curio would.
//
// To regenerate, with protoc (the protoc-bin-vendored crate's, 3.x) and both plugins on PATH:
//
//	go generate ./cuzkpb
package cuzkpb

//go:generate protoc -I ../../tests/fixtures/curio --go_out=. --go_opt=paths=source_relative --go_opt=Mproving.proto=github.com/cuzk-dev/cuzk/daemon/e2e/cuzkpb --go-grpc_out=. --go-grpc_opt=paths=source_relative --go-grpc_opt=Mproving.proto=github.com/cuzk-dev/cuzk/daemon/e2e/cuzkpb proving.proto
