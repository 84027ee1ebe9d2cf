package sim

import "testing"

// What the scenario format says of device memory beyond the partitions:
// memory taken before the designs start (resident_gib), the headroom the
// designs' ledger leaves (headroom_gib), the bytes staging copies (copy_gib)
// and a kernel's pool scratch (scratch_gib), which a job declares to the
// budget ledger when it says declare_scratch. The budget design trusts
// its ledger; whether that holds follows from the device model alone.
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
	// 16 GiB, 2 resident, 3 of headroom for scratch the job does not
	// declare: the ledger sees 11 GiB, two 4 GiB partitions at a time, and
	// a kernel's 3 GiB of scratch always fits beside them.
	ok := run("budget-headroom")
	// No headroom, the scratch declared: the ledger sees 14 GiB and keeps
	// 3 of it for the one kernel running, so again two partitions at a time.
	declared := run("budget-declared-scratch")
	for name, r := range map[string]*Report{"with headroom": ok, "scratch declared": declared} {
		if r.OOMs != 0 || r.Failed != 0 || !r.Complete {
			t.Errorf("%s: %d OOMs, %d failed, complete %v; want none", name, r.OOMs, r.Failed, r.Complete)
		}
	}
	// Neither: the ledger sees 14 GiB and admits three partitions;
	// 2 + 3×4 + 3 of scratch is more than the card: kernels run out of
	// memory although the ledger counted room.
	bad := run("budget-no-headroom")
	if bad.OOMs == 0 {
		t.Errorf("without headroom: no OOM, want the kernels' scratch to run out of memory")
	}
	if ok.VRAMPeakGiB > 16 || bad.VRAMPeakGiB > 16 || declared.VRAMPeakGiB > 16 {
		t.Errorf("peak %g, %g and %g GiB on a 16 GiB card", ok.VRAMPeakGiB, declared.VRAMPeakGiB, bad.VRAMPeakGiB)
	}
	t.Logf("with headroom: %.3f partitions/s, peak %g GiB; scratch declared: %.3f partitions/s, peak %g GiB; neither: %d OOMs, %d retries, %d failed",
		ok.Throughput, ok.VRAMPeakGiB, declared.Throughput, declared.VRAMPeakGiB, bad.OOMs, bad.Retries, bad.Failed)
}
