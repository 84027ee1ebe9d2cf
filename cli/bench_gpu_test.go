package cli

import "testing"

// bench prove's rows of several sizes write a trace each.
func TestBenchTraceNames(t *testing.T) {
	a, b := benchTraceName("split", 3, 0, 20), benchTraceName("split", 3, 0, 22)
	if a == b || a != "trace-split-w3-card-log20.json" || benchTraceName("budget", 1, 16<<30, 27) != "trace-budget-w1-16.00GiB-log27.json" {
		t.Fatalf("trace names %q, %q, %q", a, b, benchTraceName("budget", 1, 16<<30, 27))
	}
}
