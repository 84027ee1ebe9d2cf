package runner

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPureLayersDoNotLinkCUDA keeps cgo and the kernel library's bridge out
// of the layers below the GPU backend: the actors, the simulator, the store,
// the prover and this package build and test without the cuda package.
func TestPureLayersDoNotLinkCUDA(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list imports")
	}
	for _, pkg := range []string{"actors", "sim", "store", "prover", "keygen", "solve", "runner"} {
		out, err := exec.Command("go", "list", "-deps", "github.com/cuzk/cuzk/"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "github.com/cuzk/cuzk/cuda" || dep == "github.com/cuzk/cuzk/gpuprove" {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}
