package sim

import "testing"

// What the scenario format says of device memory beyond the partitions:
// memory taken before the designs start (resident_gib), the headroom the
// designs' ledger leaves (headroom_gib), the bytes staging copies (copy_gib)
// and a kernel's pool scratch (scratch_gib). The budget design trusts its
// ledger; whether that holds follows from the device model alone.
func TestDeviceMemoryBeyondThePartitions(t *testing.T) {
	t.Chdir("..")
	run := func(name string) *Report {
		t.Helper()
		s, err := LoadScenario("sim/testdata/memory/" + name + ".json")
		if err != nil {
			t.Fatal(err)
		}
		res, err := Run(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Report
	}
	// 16 GiB, 2 resident, 3 of headroom: the ledger sees 11 GiB, two 4 GiB
	// partitions at a time, and a kernel's 3 GiB of scratch always fits
	// beside them.
	ok := run("budget-headroom")
	if ok.OOMs != 0 || ok.Failed != 0 || !ok.Complete {
		t.Errorf("with headroom: %d OOMs, %d failed, complete %v; want none", ok.OOMs, ok.Failed, ok.Complete)
	}
	// Without headroom the ledger sees 14 GiB and admits three partitions;
	// 2 + 3×4 + 3 of scratch is more than the card: kernels run out of
	// memory although the ledger counted room.
	bad := run("budget-no-headroom")
	if bad.OOMs == 0 {
		t.Errorf("without headroom: no OOM, want the kernels' scratch to run out of memory")
	}
	if ok.VRAMPeakGiB > 16 || bad.VRAMPeakGiB > 16 {
		t.Errorf("peak %g and %g GiB on a 16 GiB card", ok.VRAMPeakGiB, bad.VRAMPeakGiB)
	}
	t.Logf("with headroom: %.3f partitions/s, peak %g GiB; without: %d OOMs, %d retries, %d failed",
		ok.Throughput, ok.VRAMPeakGiB, bad.OOMs, bad.Retries, bad.Failed)
}
