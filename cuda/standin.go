package cuda

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

//go:embed testdata/fakegpu.c
var standInSource []byte

// BuildStandIn compiles the stand-in kernel library (testdata/fakegpu.c:
// host memory behind the C ABI, one host thread a stream, no kernels) into
// dir with the C compiler cgo uses ($CC, else cc) and returns its path, for
// Load. Tests use it to run the layers above the ABI without a GPU; its
// environment: CUZK_FAKE_GPU_BYTES (the device's memory, 1 GiB by default)
// and CUZK_FAKE_GPU_NS_PER_BYTE (how long a memset takes a byte).
func BuildStandIn(dir string) (string, error) {
	src := filepath.Join(dir, "fakegpu.c")
	if err := os.WriteFile(src, standInSource, 0o644); err != nil {
		return "", fmt.Errorf("stand-in library: %w", err)
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	lib := filepath.Join(dir, "libcuzkgpu-standin.so")
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", lib, src, "-lpthread").CombinedOutput(); err != nil {
		return "", fmt.Errorf("stand-in library: %s: %w\n%s", cc, err, out)
	}
	return lib, nil
}
