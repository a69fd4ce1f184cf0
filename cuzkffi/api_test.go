package cuzkffi

// The exported API, the same in both builds: api_test.go compiles in both, so a function of the
// cuzk build without its stub in stub.go (or the other way round) fails the build that lacks it.

import (
	"context"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/filecoin-project/go-state-types/abi"
	"github.com/filecoin-project/go-state-types/proof"
	"github.com/ipfs/go-cid"
)

// Every exported function of the package (TestAPIListIsComplete checks that none is missing).
var api = []any{
	// Engine and library.
	Version, LibraryABIVersion, DefaultConfig, Init, Close, SetLogger, ReadEngineStatus,
	PreloadKey, EvictKey, PreloadPoStKey, EvictPoStKey, PreloadUpdateKey, EvictUpdateKey, ReleaseMemory,
	EstimateMemory, EstimatePoStMemory, EstimateUpdateMemory,
	// PoRep C2.
	SealCommitPhase2, SealCommitPhase2WithOptions, SealCommitPhase2Batch, ParseC1Info, VerifySeal,
	// PoSt.
	GenerateSinglePartitionWindowPoStWithVanilla, GenerateSinglePartitionWindowPoStWithVanillaWithOptions,
	GenerateWinningPoStWithVanilla, GenerateWinningPoStWithVanillaWithOptions,
	VerifyWindowPoSt, VerifyWinningPoSt,
	// SnapDeals updates.
	GenerateUpdateProofWithVanilla, GenerateUpdateProofWithVanillaWithOptions, GenerateUpdateProofBatch,
	VerifyUpdateProof,
	// Pure Go in both builds.
	ProverID, MergeWindowPoStPartitionProofs, WithPriority, WithDevice, WithPartitionTimings,
}

// filecoin-ffi's (v1) signatures, exactly: a service switches by changing the import.
var _ func([]byte, abi.SectorNumber, abi.ActorID) ([]byte, error) = SealCommitPhase2
var _ func(proof.SealVerifyInfo) (bool, error) = VerifySeal
var _ func(abi.RegisteredPoStProof, abi.ActorID, abi.PoStRandomness, [][]byte, uint) (*PartitionProof, error) = GenerateSinglePartitionWindowPoStWithVanilla
var _ func(abi.RegisteredPoStProof, []PartitionProof) (*proof.PoStProof, error) = MergeWindowPoStPartitionProofs
var _ func(abi.RegisteredPoStProof, abi.ActorID, abi.PoStRandomness, [][]byte) ([]proof.PoStProof, error) = GenerateWinningPoStWithVanilla
var _ func(proof.WindowPoStVerifyInfo) (bool, error) = VerifyWindowPoSt
var _ func(proof.WinningPoStVerifyInfo) (bool, error) = VerifyWinningPoSt
var _ func(abi.RegisteredUpdateProof, cid.Cid, cid.Cid, cid.Cid, [][]byte) ([]byte, error) = GenerateUpdateProofWithVanilla
var _ func(proof.ReplicaUpdateInfo) (bool, error) = VerifyUpdateProof

// filecoin-ffi's type PartitionProof proof.PoStProof: the same underlying type.
var _ = PartitionProof(proof.PoStProof{})

// The ...WithOptions variants: a context, filecoin-ffi's parameters, the options; the result
// and the timings.
var _ func(context.Context, []byte, abi.SectorNumber, abi.ActorID, ...ProveOption) ([]byte, Timings, error) = SealCommitPhase2WithOptions
var _ func(context.Context, abi.RegisteredPoStProof, abi.ActorID, abi.PoStRandomness, [][]byte, uint,
	...ProveOption) (*PartitionProof, Timings, error) = GenerateSinglePartitionWindowPoStWithVanillaWithOptions
var _ func(context.Context, abi.RegisteredPoStProof, abi.ActorID, abi.PoStRandomness, [][]byte,
	...ProveOption) ([]proof.PoStProof, Timings, error) = GenerateWinningPoStWithVanillaWithOptions
var _ func(context.Context, abi.RegisteredUpdateProof, cid.Cid, cid.Cid, cid.Cid, [][]byte,
	...ProveOption) ([]byte, Timings, error) = GenerateUpdateProofWithVanillaWithOptions

// apiFile is one Go file of the package: which build it is in, its exported functions by name
// with their signatures (parameter and result types, names left out).
type apiFile struct {
	name  string
	cuzk  bool // in the cuzk build
	stub  bool // in the stub build
	funcs map[string]string
}

func parseAPI(t *testing.T) []apiFile {
	t.Helper()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []apiFile
	fset := token.NewFileSet()
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		af := apiFile{name: path, cuzk: true, stub: true, funcs: map[string]string{}}
		for _, group := range f.Comments {
			for _, c := range group.List {
				if constraint.IsGoBuild(c.Text) {
					expr, err := constraint.Parse(c.Text)
					if err != nil {
						t.Fatalf("%s: %v", path, err)
					}
					af.cuzk = expr.Eval(func(tag string) bool { return tag == "cuzk" })
					af.stub = expr.Eval(func(string) bool { return false })
				}
			}
		}
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.IsExported() {
				af.funcs[fn.Name.Name] = signature(fn.Type)
			}
		}
		files = append(files, af)
	}
	return files
}

func signature(ft *ast.FuncType) string {
	list := func(fields *ast.FieldList) []string {
		var out []string
		if fields == nil {
			return out
		}
		for _, f := range fields.List {
			for range max(len(f.Names), 1) {
				out = append(out, types.ExprString(f.Type))
			}
		}
		return out
	}
	return "(" + strings.Join(list(ft.Params), ", ") + ") (" + strings.Join(list(ft.Results), ", ") + ")"
}

// The stub build has every function of the cuzk build, with the same signature, and no other.
func TestStubsMatchLibrary(t *testing.T) {
	cuzk, stub := map[string]string{}, map[string]string{}
	for _, f := range parseAPI(t) {
		for name, sig := range f.funcs {
			if f.cuzk {
				cuzk[name] = sig
			}
			if f.stub {
				stub[name] = sig
			}
		}
	}
	if len(cuzk) == 0 || len(stub) == 0 {
		t.Fatalf("%d functions in the cuzk build, %d in the stub build", len(cuzk), len(stub))
	}
	for name, sig := range cuzk {
		if got, ok := stub[name]; !ok {
			t.Errorf("%s is in the cuzk build, not in stub.go", name)
		} else if got != sig {
			t.Errorf("%s: %s in the cuzk build, %s in stub.go", name, sig, got)
		}
	}
	for name := range stub {
		if _, ok := cuzk[name]; !ok {
			t.Errorf("%s is in stub.go, not in the cuzk build", name)
		}
	}
}

// The api list above names every exported function of the package.
func TestAPIListIsComplete(t *testing.T) {
	src, err := os.ReadFile("api_test.go")
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "api_test.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	ast.Inspect(f, func(n ast.Node) bool {
		if spec, ok := n.(*ast.ValueSpec); ok && len(spec.Names) == 1 && spec.Names[0].Name == "api" {
			for _, e := range spec.Values[0].(*ast.CompositeLit).Elts {
				listed = append(listed, e.(*ast.Ident).Name)
			}
			return false
		}
		return true
	})
	if len(listed) != len(api) {
		t.Fatalf("parsed %d names of the api list, it has %d", len(listed), len(api))
	}
	for _, file := range parseAPI(t) {
		for name := range file.funcs {
			if !slices.Contains(listed, name) {
				t.Errorf("%s (%s) is not in api_test.go's api list", name, file.name)
			}
		}
	}
}
