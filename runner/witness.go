package runner

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark/backend/witness"

	"github.com/cuzk/cuzk/prover"
)

// ParamWitnesses records the witness files of a job of a user's circuit
// (JSON, a list of WitnessFile): resume reads them again, and refuses a file
// whose content changed.
const ParamWitnesses = "witnesses"

// witnessesInMemory is ParamWitnesses of a job whose witnesses were held in
// memory (JobRequest.Inputs).
const witnessesInMemory = "memory"

// ErrBadWitnessFile: a witness file cannot be read, is not gnark's binary
// witness encoding, or does not fit the keys' circuit.
var ErrBadWitnessFile = errors.New("bad witness file")

// WitnessFile is one partition's witness of a user's circuit: a file in
// gnark's binary witness encoding (witness.MarshalBinary of the full
// witness), its SHA-256 and its size (0 in records made before sizes were
// kept).
type WitnessFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size,omitempty"`
}

// MaxLeasedWitness is the largest witness file a cluster sends to a member
// in a lease (package cluster): a job with a larger one, or one of unknown
// size, is proved on the member that accepted it.
const MaxLeasedWitness = 16 << 20

// CheckWitnessFiles reads each file, checks that it is a full witness over
// BLS12-381's scalar field with the public and secret values k's circuit
// takes, and returns the files with absolute paths and their hashes. The
// first bad file is an error naming it; nothing is returned then.
func CheckWitnessFiles(k *prover.Keys, paths []string) ([]WitnessFile, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: no witness file", ErrBadWitnessFile)
	}
	out := make([]WitnessFile, len(paths))
	for i, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("witness %s: %w", p, err)
		}
		b, err := os.ReadFile(abs)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadWitnessFile, err)
		}
		sum := sha256.Sum256(b)
		wf := WitnessFile{Path: abs, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(b))}
		if _, err := DecodeWitness(k, wf.Path, b); err != nil {
			return nil, err
		}
		out[i] = wf
	}
	return out, nil
}

// load reads the file again, checks its hash and decodes it.
func (f WitnessFile) load(k *prover.Keys) (witness.Witness, error) {
	b, err := f.Read()
	if err != nil {
		return nil, err
	}
	return DecodeWitness(k, f.Path, b)
}

// Read returns the file's bytes, refused if they are not those recorded
// (the hash differs).
func (f WitnessFile) Read() ([]byte, error) {
	b, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadWitnessFile, err)
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != f.SHA256 {
		return nil, fmt.Errorf("%w: %s changed since the job was submitted (sha256 %.16s, recorded %.16s)",
			ErrBadWitnessFile, f.Path, hex.EncodeToString(sum[:]), f.SHA256)
	}
	return b, nil
}

// DecodeWitness decodes gnark's binary witness encoding and checks it
// against k's circuit; name says where b came from, for errors.
func DecodeWitness(k *prover.Keys, name string, b []byte) (witness.Witness, error) {
	nbPub, nbSec := k.CS.GetNbPublicVariables()-1, k.CS.GetNbSecretVariables()
	// gnark's encoding is the public and secret counts, the vector's length
	// (4 bytes each, big-endian), then 32 bytes a value. The header is
	// checked before gnark reads it: its decoder sizes the vector from the
	// length alone, so a file of another kind could ask for gigabytes.
	const header, elem = 12, 32
	if len(b) < header {
		return nil, fmt.Errorf("%w: %s is not a gnark witness over BLS12-381 (witness.MarshalBinary): %d bytes", ErrBadWitnessFile, name, len(b))
	}
	hp, hs, hn := binary.BigEndian.Uint32(b[0:4]), binary.BigEndian.Uint32(b[4:8]), binary.BigEndian.Uint32(b[8:12])
	if uint64(hp)+uint64(hs) != uint64(hn) || uint64(len(b)) != header+elem*uint64(hn) {
		return nil, fmt.Errorf("%w: %s is not a gnark witness over BLS12-381 (witness.MarshalBinary): header says %d public and %d secret values in %d, file has %d bytes",
			ErrBadWitnessFile, name, hp, hs, hn, len(b))
	}
	if int(hp) != nbPub || int(hs) != nbSec {
		return nil, fmt.Errorf("%w: %s has %d public and %d secret values; the circuit of %s takes %d and %d",
			ErrBadWitnessFile, name, hp, hs, k.Dir, nbPub, nbSec)
	}
	w, err := witness.New(ecc.BLS12_381.ScalarField())
	if err != nil {
		return nil, err
	}
	if err := w.UnmarshalBinary(b); err != nil {
		return nil, fmt.Errorf("%w: %s is not a gnark witness over BLS12-381 (witness.MarshalBinary): %v", ErrBadWitnessFile, name, err)
	}
	pub, err := w.Public()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadWitnessFile, name, err)
	}
	vec, ok := w.Vector().(interface{ Len() int })
	pv, pok := pub.Vector().(interface{ Len() int })
	if !ok || !pok || vec.Len() != nbPub+nbSec || pv.Len() != nbPub {
		got, gotPub := -1, -1
		if ok {
			got = vec.Len()
		}
		if pok {
			gotPub = pv.Len()
		}
		return nil, fmt.Errorf("%w: %s has %d values (%d public); the circuit of %s takes %d (%d public, %d secret)",
			ErrBadWitnessFile, name, got, gotPub, k.Dir, nbPub+nbSec, nbPub, nbSec)
	}
	return w, nil
}

func encodeWitnessFiles(fs []WitnessFile) string {
	b, _ := json.Marshal(fs)
	return string(b)
}

func decodeWitnessFiles(s string) ([]WitnessFile, error) {
	var fs []WitnessFile
	if err := json.Unmarshal([]byte(s), &fs); err != nil {
		return nil, fmt.Errorf("recorded witness files: %w", err)
	}
	return fs, nil
}
