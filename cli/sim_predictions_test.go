package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The proving predictions in docs/predictions were committed before the card
// ran them; the simulator must still say what they say, or the docs'
// comparisons with the card no longer describe this code. Each table there
// that starts with `scenario NAME, ...` is `cuzk sim --scenario
// docs/predictions/NAME-job.json --compare`; every line of it must be in what
// that command prints now. A table whose first line the command does not print
// was made with flags the file does not record (an older device size) and is
// left out; the test's log names each one left out. All of them were made,
// and run on the card, with the runtime before free mutexes were taken in
// place, which `--lock-hops` runs.
func TestCommittedProvingPredictionsReproduce(t *testing.T) {
	t.Chdir("..") // the scenarios' profile paths are relative to the repository root
	files, err := filepath.Glob("docs/predictions/*-predicted.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no predictions: %v", err)
	}
	checked, skipped := 0, []string{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, table := range predictionTables(string(raw)) {
			name := strings.TrimSuffix(strings.TrimSuffix(strings.Fields(table[0])[1], ","), "-job")
			job := filepath.Join("docs/predictions", name+"-job.json")
			if _, err := os.Stat(job); err != nil {
				skipped = append(skipped, f+": "+name+" (no job file)")
				continue
			}
			out, stderr, err := run(t, "sim", "--scenario", job, "--compare", "--lock-hops")
			if err != nil {
				t.Errorf("%s: sim --scenario %s --compare --lock-hops: %v\n%s", f, job, err, stderr)
				continue
			}
			got := strings.Split(out, "\n")
			if !slices.Contains(got, table[0]) {
				skipped = append(skipped, f+": "+table[0])
				continue
			}
			checked++
			for _, line := range table[1:] {
				if !slices.Contains(got, line) {
					t.Errorf("%s: %s no longer predicts\n  %s\nnow:\n%s", f, name, line, out)
					break
				}
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d prediction tables checked; left out: %v", checked, skipped)
	}
	t.Logf("%d tables reproduce; left out: %v", checked, skipped)
}

// predictionTables splits a predictions file into its --compare tables: each
// from a `scenario NAME, profile ...` line to the next blank, comment or
// section line (a single run's report, `scenario    NAME: design ...`, is not
// one).
func predictionTables(s string) [][]string {
	var tables [][]string
	var cur []string
	for _, line := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(line, "scenario ") && strings.HasSuffix(strings.Fields(line)[1], ","):
			if cur != nil {
				tables = append(tables, cur)
			}
			cur = []string{line}
		case cur != nil && (line == "" || strings.HasPrefix(line, "#")):
			tables = append(tables, cur)
			cur = nil
		case cur != nil:
			cur = append(cur, line)
		}
	}
	if cur != nil {
		tables = append(tables, cur)
	}
	return tables
}

// The proving predictions made in the runtime with free mutexes taken in place
// give each row as `cuzk sim --scenario JOB --design D --workers W --seeds 16`
// prints it, under a section line that names the seeds, the scenario being
// the last docs/predictions/NAME-job.json its comments or section lines name.
// Each such row must come out the same now (the text after the table's
// columns, such as a row's s/job, is the file's own).
func TestInPlaceProvingPredictionsReproduce(t *testing.T) {
	t.Chdir("..")
	files, err := filepath.Glob("docs/predictions/*-predicted.txt")
	if err != nil {
		t.Fatal(err)
	}
	job := regexp.MustCompile(`docs/predictions/\S+-job\.json`)
	row := regexp.MustCompile(`^(single|split-first|split-devsync|split|budget) +(\d) +\S+ +\S+ +\S+ +\S+ +\S+ +\S+ +\S+`)
	checked := 0
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		scenario, inSeeds := "", false
		for _, line := range strings.Split(string(raw), "\n") {
			if strings.HasPrefix(line, "#") {
				if m := job.FindString(line); m != "" {
					scenario = strings.TrimSuffix(m, ",")
				}
				inSeeds = strings.HasPrefix(line, "## ") && strings.Contains(line, "seeds 1 to 16")
				continue
			}
			m := row.FindStringSubmatch(line)
			if !inSeeds || m == nil || scenario == "" {
				continue
			}
			out, stderr, err := run(t, "sim", "--scenario", scenario, "--design", m[1], "--workers", m[2], "--seeds", "16")
			if err != nil {
				t.Errorf("%s: sim --scenario %s --design %s --workers %s --seeds 16: %v\n%s", f, scenario, m[1], m[2], err, stderr)
				continue
			}
			if !slices.Contains(strings.Split(out, "\n"), m[0]) {
				t.Errorf("%s: %s no longer predicts\n  %s\nnow:\n%s", f, scenario, m[0], out)
			}
			checked++
		}
	}
	if checked < 30 {
		t.Errorf("only %d rows checked", checked)
	}
	t.Logf("%d rows reproduce", checked)
}
