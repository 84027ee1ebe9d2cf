package engine

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"

	"github.com/consensys/gnark-crypto/ecc"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"
	"github.com/consensys/gnark/backend/groth16"
	"github.com/consensys/gnark/constraint"
	cs "github.com/consensys/gnark/constraint/bls12-381"
	"github.com/consensys/gnark/frontend"
	"github.com/consensys/gnark/frontend/cs/r1cs"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"

	"github.com/cuzk/cuzk/gpuprove"
	"github.com/cuzk/cuzk/keygen"
	"github.com/cuzk/cuzk/prover"
)

// Keys are a circuit's constraint system and Groth16 proving and verifying
// keys, ready to prove. They may be used by several goroutines at once.
type Keys struct {
	k *prover.Keys
}

// ErrNotGroth16 says a constraint system is not one cuzk proves: not an
// R1CS (gnark's PLONK builder makes a SparseR1CS), or not over BLS12-381.
var ErrNotGroth16 = errors.New("not a BLS12-381 R1CS")

// Compile compiles a gnark circuit to an R1CS over BLS12-381's scalar field,
// the constraint system Setup, NewKeys and Prove take.
func Compile(circuit frontend.Circuit, opts ...frontend.CompileOption) (constraint.ConstraintSystem, error) {
	ccs, err := frontend.Compile(ecc.BLS12_381.ScalarField(), r1cs.NewBuilder, circuit, opts...)
	if err != nil {
		return nil, fmt.Errorf("compile circuit: %w", err)
	}
	return ccs, nil
}

// asR1CS checks that ccs is what cuzk proves.
func asR1CS(ccs constraint.ConstraintSystem) (*cs.R1CS, error) {
	if ccs == nil {
		return nil, fmt.Errorf("%w: no constraint system", ErrNotGroth16)
	}
	if f := ccs.Field(); f.Cmp(ecc.BLS12_381.ScalarField()) != 0 {
		return nil, fmt.Errorf("%w: the constraint system is over another field (%s), compile it for BLS12-381's scalar field", ErrNotGroth16, fieldName(f))
	}
	r, ok := ccs.(*cs.R1CS)
	if !ok || r.Type != constraint.SystemR1CS {
		return nil, fmt.Errorf("%w: the constraint system is a %T (gnark's PLONK builder, scs, makes those; Groth16 needs r1cs.NewBuilder)", ErrNotGroth16, ccs)
	}
	if r.ScalarField != fr.Modulus().Text(16) {
		return nil, fmt.Errorf("%w: the constraint system's field is 0x%s", ErrNotGroth16, r.ScalarField)
	}
	return r, nil
}

// Setup makes keys for ccs: cuzk's key generation on the CPU by default,
// on GPU 0 with WithKeygen("gpu"), gnark's groth16.Setup with
// WithKeygen("gnark"). Either way a fresh, local toxic-waste setup: for
// development and tests, not for keys others must trust.
func Setup(ctx context.Context, ccs constraint.ConstraintSystem, opts ...Option) (*Keys, error) {
	r, err := asR1CS(ccs)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o := collect(opts)
	var pk *groth16bls.ProvingKey
	var vk *groth16bls.VerifyingKey
	switch o.keygen {
	case "gnark":
		gpk, gvk, err := groth16.Setup(r)
		if err != nil {
			return nil, fmt.Errorf("gnark's setup: %w", err)
		}
		pk, vk = gpk.(*groth16bls.ProvingKey), gvk.(*groth16bls.VerifyingKey)
	case "cpu", "":
		if pk, vk, err = keygen.Setup(r, keygen.CPUMultiplier{}, o.rnd); err != nil {
			return nil, err
		}
	case "gpu":
		mul, closeMul, err := gpuprove.OpenMultiplier(o.library)
		if err != nil {
			return nil, fmt.Errorf("keygen on the GPU: %w", err)
		}
		defer closeMul()
		if pk, vk, err = keygen.Setup(r, mul, o.rnd); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown keygen %q (cpu, gpu or gnark)", o.keygen)
	}
	return wrap(r, pk, vk, "")
}

// NewKeys wraps gnark's constraint system and keys (from groth16.Setup, or
// read with gnark's ReadFrom). The keys must be BLS12-381's.
func NewKeys(ccs constraint.ConstraintSystem, pk groth16.ProvingKey, vk groth16.VerifyingKey) (*Keys, error) {
	r, err := asR1CS(ccs)
	if err != nil {
		return nil, err
	}
	bpk, ok := pk.(*groth16bls.ProvingKey)
	if !ok {
		return nil, fmt.Errorf("proving key is a %T, not BLS12-381's", pk)
	}
	bvk, ok := vk.(*groth16bls.VerifyingKey)
	if !ok {
		return nil, fmt.Errorf("verifying key is a %T, not BLS12-381's", vk)
	}
	return wrap(r, bpk, bvk, "")
}

// wrap checks that the keys fit the system and gives them an identity: the
// GPU backend keeps keys on the device by it.
func wrap(r *cs.R1CS, pk *groth16bls.ProvingKey, vk *groth16bls.VerifyingKey, hash string) (*Keys, error) {
	if pk == nil || vk == nil {
		return nil, errors.New("missing proving or verifying key")
	}
	nbWires := r.GetNbPublicVariables() + r.GetNbSecretVariables() + r.NbInternalVariables
	if len(pk.InfinityA) != nbWires || pk.Domain.Cardinality < uint64(r.GetNbConstraints()) {
		return nil, fmt.Errorf("proving key is for another circuit: %d wires and a domain of %d, the circuit has %d wires and %d constraints",
			len(pk.InfinityA), pk.Domain.Cardinality, nbWires, r.GetNbConstraints())
	}
	info, _ := r.CommitmentInfo.(constraint.Groth16Commitments)
	if want := r.GetNbPublicVariables() + len(info); len(vk.G1.K) != want {
		return nil, fmt.Errorf("verifying key is for another circuit: %d K points, the circuit has %d public wires and %d commitments",
			len(vk.G1.K), r.GetNbPublicVariables(), len(info))
	}
	if hash == "" {
		// The verifying key differs between setups (its α, β, γ, δ are
		// drawn afresh): its hash names the key set.
		h := sha256.New()
		if _, err := vk.WriteRawTo(h); err != nil {
			return nil, fmt.Errorf("hash verifying key: %w", err)
		}
		fmt.Fprintf(h, "%d %d", r.GetNbConstraints(), nbWires)
		hash = hex.EncodeToString(h.Sum(nil))
	}
	return &Keys{k: &prover.Keys{Circuit: "gnark", CS: r, PK: pk, VK: vk, Hash: hash}}, nil
}

// LoadKeys reads a key directory as cuzk setup writes it (circuit.r1cs,
// proving.key, verifying.key, manifest.json), checking every file against
// the manifest's hashes; a mismatch names the file.
func LoadKeys(dir string) (*Keys, error) {
	m, err := prover.ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	k, err := prover.Load(dir, m.Circuit, nil)
	if err != nil {
		return nil, err
	}
	return &Keys{k: k}, nil
}

// LoadGnarkKeys reads gnark's serialized files: the R1CS (WriteTo), the
// proving key (WriteTo, WriteRawTo or WriteDump) and the verifying key
// (WriteTo or WriteRawTo). A file that does not decode as what it should
// be, or keys for another circuit or curve, is an error naming the file.
func LoadGnarkKeys(r1csPath, pkPath, vkPath string) (*Keys, error) {
	ccs, err := ReadR1CS(r1csPath)
	if err != nil {
		return nil, err
	}
	r := ccs.(*cs.R1CS)
	pk := &groth16bls.ProvingKey{}
	if err := readFile(pkPath, func(f io.ReadSeeker, _ int64) error {
		if err := pk.ReadDump(bufio.NewReader(f)); err == nil {
			return nil
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		*pk = groth16bls.ProvingKey{}
		_, err := pk.ReadFrom(bufio.NewReader(f))
		return err
	}); err != nil {
		return nil, err
	}
	vk := &groth16bls.VerifyingKey{}
	if err := readFile(vkPath, func(f io.ReadSeeker, _ int64) error { _, err := vk.ReadFrom(bufio.NewReader(f)); return err }); err != nil {
		return nil, err
	}
	k, err := wrap(r, pk, vk, "")
	if err != nil {
		return nil, fmt.Errorf("%s, %s: %w", pkPath, vkPath, err)
	}
	return k, nil
}

// ReadR1CS reads a constraint system gnark serialized (WriteTo), and checks
// that it is a BLS12-381 R1CS; errors name the file.
func ReadR1CS(path string) (constraint.ConstraintSystem, error) {
	r := &cs.R1CS{}
	if err := readFile(path, func(f io.ReadSeeker, size int64) error { return readR1CS(r, f, size) }); err != nil {
		return nil, err
	}
	if _, err := asR1CS(r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// readR1CS decodes gnark's R1CS encoding, whose first 8 bytes are the length
// of what follows: checked against the file before the decoder allocates it.
func readR1CS(r *cs.R1CS, f io.ReadSeeker, size int64) error {
	var hdr [8]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return fmt.Errorf("not a gnark R1CS: %w", err)
	}
	if n := binary.LittleEndian.Uint64(hdr[:]); n > uint64(size) {
		return fmt.Errorf("not a gnark R1CS: it claims %d bytes, the file has %d", n, size)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	_, err := r.ReadFrom(bufio.NewReader(f))
	return err
}

// readFile opens path and decodes it with read; errors and decoder panics
// (gnark's decoders panic on some damaged input) name the file.
func readFile(path string, read func(f io.ReadSeeker, size int64) error) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%s is corrupt or not what it should be: %v", path, v)
		}
	}()
	if err := read(f, st.Size()); err != nil {
		return fmt.Errorf("%s is corrupt or not what it should be: %w", path, err)
	}
	return nil
}

// Save writes the keys to dir as cuzk setup does, which LoadKeys and
// cuzk's commands read.
func (k *Keys) Save(dir string) error { return k.k.Save(dir) }

// ConstraintSystem is the circuit's R1CS.
func (k *Keys) ConstraintSystem() constraint.ConstraintSystem { return k.k.CS }

// ProvingKey is gnark's proving key.
func (k *Keys) ProvingKey() groth16.ProvingKey { return k.k.PK }

// VerifyingKey is gnark's verifying key: what a verifier needs.
func (k *Keys) VerifyingKey() groth16.VerifyingKey { return k.k.VK }

// Prover is the keys as cuzk's staged prover and runner take them.
func (k *Keys) Prover() *prover.Keys { return k.k }

// Hash names the key set: the manifest's content hash for keys loaded from
// a key directory, else a hash of the verifying key.
func (k *Keys) Hash() string { return k.k.Hash }

// Constraints is the circuit's number of constraints.
func (k *Keys) Constraints() int { return k.k.Constraints() }

// fieldName names a field by the curve whose scalar field it is.
func fieldName(f *big.Int) string {
	for _, id := range []ecc.ID{ecc.BN254, ecc.BLS12_377, ecc.BLS12_381, ecc.BW6_761, ecc.BLS24_315, ecc.BLS24_317, ecc.BW6_633} {
		if id.ScalarField().Cmp(f) == 0 {
			return id.String() + "'s scalar field"
		}
	}
	return "0x" + f.Text(16)
}
