package sim

import (
	"fmt"
	"testing"
)

// BenchmarkSimulate10kPartitions simulates 10,000 partitions (1,000 jobs of
// 10) on 8 GPUs with 3 workers each, budget design, seed profile on 48 GiB
// cards so that every design keeps its workers busy.
func BenchmarkSimulate10kPartitions(b *testing.B) {
	data := []byte(`{"name": "bench-10k", "profile": "seed-16g", "seed": 1, "devices": 8, "vram_gib": 48,
		"design": "budget", "workers_per_device": 3,
		"jobs": [{"id": "job", "count": 1000, "partitions": 10}]}`)
	s, err := ParseScenario("bench-10k", data)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(s, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if res.Report.Partitions != 10000 {
			b.Fatalf("proved %d partitions, want 10000", res.Report.Partitions)
		}
		b.ReportMetric(float64(res.Report.Events), "events/op")
		b.ReportMetric(res.Report.SimulatedS, "sim-s/op")
	}
	_ = fmt.Sprint
}
