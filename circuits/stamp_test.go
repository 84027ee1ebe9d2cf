package circuits

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/groth16"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
)

// A stamped porep-sha system is the one gnark compiles, instruction for
// instruction and level for level, at shapes with and without fill, with one
// and several parent blocks, cut and full rounds; and a partition's witness
// satisfies it.
func TestStampedEqualsCompiled(t *testing.T) {
	shapes := []porepSHAShape{
		{challenges: 3, depth: 1, parents: 1, rounds: 1},
		{challenges: 3, depth: 2, parents: 2, rounds: 2, fill: 3},
		{challenges: 5, depth: 3, parents: 1, rounds: 4, fill: 1},
		{challenges: 4, depth: 2, parents: 3, rounds: 8, fill: 2},
		{challenges: 3, depth: 1, parents: 1, rounds: 20, fill: 1}, // past 16 rounds: the message schedule
		{challenges: 3, depth: 1, parents: 1, rounds: 1, links: true},
		{challenges: 4, depth: 3, parents: 2, rounds: 4, fill: 2, links: true}, // links of both kinds, beside the fill's words
	}
	if !raceEnabled {
		// SHA-256's rounds, as layouts from 2^19 on: half a million
		// constraints, which gnark compiles several times slower under
		// the race detector.
		shapes = append(shapes, porepSHAShape{challenges: 3, depth: 2, parents: 1, rounds: 64, fill: 2, links: true})
	}
	for _, sh := range shapes {
		got, err := stampPoRepSHA(sh) // not compilePoRepSHA: it would fall back to gnark
		if err != nil {
			t.Fatalf("%s: %v", sh.layout(), err)
		}
		want, err := compileShape(sh)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameSystem(got, want); err != nil {
			t.Errorf("%s: stamped system differs from gnark's: %v", sh.layout(), err)
		}
		if _, _, err := porepSHASolve(t, got, sh.layout(), "stamp", 1); err != nil {
			t.Errorf("%s: the stamped system refuses a partition: %v", sh.layout(), err)
		}
		t.Logf("%s: %d constraints, %d wires, %d levels: same as gnark's", sh.layout(), got.GetNbConstraints(), got.NbInternalVariables, len(got.Levels))
	}
}

// The check before stamping catches a template whose sections are not what
// they are said to be, and sameSystem catches a change of one word.
func TestStampRefusesWrongSections(t *testing.T) {
	sh := porepSHAShape{challenges: 1, depth: 2, parents: 1, rounds: 2}
	one, err := compileShape(sh)
	if err != nil {
		t.Fatal(err)
	}
	two := sh
	two.challenges = 2
	want, err := compileShape(two)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := porepSHASections(one, want, one, sh)
	if err != nil {
		t.Fatal(err)
	}
	got, err := stamp(one, sec, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameSystem(got, want); err != nil {
		t.Fatalf("right sections: %v", err)
	}
	got.CallData[len(got.CallData)/2]++
	if sameSystem(got, want) == nil {
		t.Error("a changed call data word went unnoticed")
	}
	// A prelude one instruction short puts the challenge's first
	// instruction, which reads the prelude's wires, into the prelude.
	bad := sec
	bad.preludeInst--
	bad.blockInst++
	if got, err := stamp(one, bad, 2); err == nil {
		if sameSystem(got, want) == nil {
			t.Error("wrong sections gave gnark's system")
		}
	} else if !errors.Is(err, errNotStampable) {
		t.Errorf("wrong sections: %v", err)
	}
}

// BenchmarkCompilePoRepSHA compares gnark's compile of porep-sha with the
// stamped one at CUZK_STAMP_LOG (default 22: seven challenges):
//
//	go test -run - -bench CompilePoRepSHA -benchtime 1x ./circuits/
func BenchmarkCompilePoRepSHA(b *testing.B) {
	logN := 22
	if v := os.Getenv("CUZK_STAMP_LOG"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("CUZK_STAMP_LOG=%q: %v", v, err)
		}
		logN = n
	}
	l, err := PoRepSHA{}.Layout(1 << logN)
	if err != nil {
		b.Fatal(err)
	}
	sh, err := porepSHAShapeOf(l)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name    string
		compile func(porepSHAShape) (*cs.R1CS, error)
	}{{"gnark", compileShape}, {"stamped", compilePoRepSHA}} {
		b.Run(fmt.Sprintf("%s/2^%d", bc.name, logN), func(b *testing.B) {
			for b.Loop() {
				s, err := bc.compile(sh)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(s.GetNbConstraints()), "constraints")
			}
		})
	}
}

// A stamped system proves and verifies with gnark's Groth16, a partition's
// public inputs and all.
func TestStampedSystemProves(t *testing.T) {
	sh := porepSHAShape{challenges: 3, depth: 1, parents: 1, rounds: 1, fill: 1}
	s, err := stampPoRepSHA(sh)
	if err != nil {
		t.Fatal(err)
	}
	pk, vk, err := groth16.Setup(s)
	if err != nil {
		t.Fatal(err)
	}
	for part := range 2 {
		a, err := PoRepSHA{}.Assign(sh.layout(), []byte("stamp"), part)
		if err != nil {
			t.Fatal(err)
		}
		w, err := frontend.NewWitness(a, ecc.BLS12_381.ScalarField())
		if err != nil {
			t.Fatal(err)
		}
		proof, err := groth16.Prove(s, pk, w)
		if err != nil {
			t.Fatalf("partition %d: %v", part, err)
		}
		pub, err := w.Public()
		if err != nil {
			t.Fatal(err)
		}
		if err := groth16.Verify(proof, vk, pub); err != nil {
			t.Errorf("partition %d: %v", part, err)
		}
	}
	t.Logf("%s: %d constraints, 2 partitions proved and verified", sh.layout(), s.GetNbConstraints())
}
