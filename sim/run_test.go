package sim

import (
	"bytes"
	"testing"
)

func runScenario(t testing.TB, name string, o Options) *Report {
	t.Helper()
	s, err := LoadScenario(name)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(s, o)
	if err != nil {
		t.Fatal(err)
	}
	return res.Report
}

func TestScenariosRun(t *testing.T) {
	for _, name := range ScenarioNames() {
		t.Run(name, func(t *testing.T) {
			r := runScenario(t, name, Options{})
			var b bytes.Buffer
			r.WriteText(&b)
			t.Log("\n" + b.String())
		})
	}
}
