package gpuprove

import (
	"errors"
	"fmt"

	curve "github.com/consensys/gnark-crypto/ecc/bls12-381"
	"github.com/consensys/gnark-crypto/ecc/bls12-381/fr"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/prover"
)

var _ prover.CommitmentMSMer = (*Backend)(nil)

// commitBases are one key set's Pedersen bases for gnark's commitments
// (BSB22, api.Commit) on the device: every commitment's Basis concatenated,
// and every BasisExpSigma concatenated in the same order, which is the order
// of the folded proof of knowledge's scalars (prover's proveKnowledge).
type commitBases struct {
	basis, sigma pointSet
	at           []int // commitment i's basis is basis[at[i]:at[i+1]]
}

// bytes is what the bases hold on the device.
func (c *commitBases) bytes() int64 {
	var n int64
	for _, p := range []*pointSet{&c.basis, &c.sigma} {
		if p.dev != 0 {
			n += p.bytes()
		}
	}
	return n
}

// of is commitment i's basis, a view of basis.
func (c *commitBases) of(i int) pointSet {
	return pointSet{name: fmt.Sprintf("commitment %d's basis", i), n: c.at[i+1] - c.at[i], size: pointBytes,
		dev: c.basis.dev.Add(int64(c.at[i]) * pointBytes)}
}

// commitDevice is what one device keeps for the commitment MSMs: a buffer
// for one call's scalars and the MSM's scratch, sized by the plans of the
// key sets placed (Plan.CommitScratch, the library's sizing call), and a
// stream of their own. Both are made when the first key set with
// commitments is placed, so they are in the device's ledger (Reserved)
// before any partition is proved; a device whose key sets have no
// commitments has neither.
//
// A commitment MSM holds buf's mutex and nothing else: no lease of the lock
// design. It runs inside synthesis, a CPU stage, from the commitment hint
// in the middle of a solve, and a design's lock would stall that solve
// behind another partition's compute:
//
//  1. Under single, partition P1 holds the device's one lease and computes
//     for a second or more.
//  2. Partition P2's synthesize, on a CPU worker, reaches a commitment hint
//     halfway through its solve.
//  3. Were the hint to take a lease, P2's solve would wait there for the
//     rest of P1's compute, its worker and its half-solved wires held, and
//     its prep, stage and compute would start that much later: seconds lost
//     to an MSM of a few hundred points, a few milliseconds of device time.
//  4. Instead it takes buf's mutex. The bases, the scalars' room and the
//     scratch were all reserved when the key set was placed, outside every
//     design's buffers, so the MSM can neither run out of memory nor take
//     memory a partition was promised; its stream is non-blocking and its
//     own, so it waits for no partition's kernels (it shares the SMs with
//     them for the milliseconds it runs).
//  5. Two MSMs on one device (two partitions solving at once, or one
//     solve's commitments in parallel) take the mutex in turn: the buffer
//     holds one call's scalars and scratch.
type commitDevice struct {
	buf    scratchBuf
	stream cuda.Stream // used by buf's holder
}

// placeCommitments puts k's commitment bases on the device, resident
// whatever the key's tier, and makes the commitment MSMs' buffer as large as
// r's plan asks and their stream: with dk.mu held, while the key set is
// placed. Without commitments it places nothing.
func (dk *deviceKeys) placeCommitments(k *prover.Keys, r *resident) error {
	cks := k.PK.CommitmentKeys
	if len(cks) == 0 {
		return nil
	}
	var basis, sigma []curve.G1Affine
	r.cm.at = make([]int, 1, len(cks)+1)
	for i, ck := range cks {
		if len(ck.BasisExpSigma) != len(ck.Basis) {
			return fmt.Errorf("keys of %s: commitment %d has %d basis points and %d σ-basis points", k.Circuit, i, len(ck.Basis), len(ck.BasisExpSigma))
		}
		basis = append(basis, ck.Basis...)
		sigma = append(sigma, ck.BasisExpSigma...)
		r.cm.at = append(r.cm.at, len(basis))
	}
	if want := 2 * int64(len(basis)) * pointBytes; r.plan.Commitments != want {
		return fmt.Errorf("device %d: keys of %s: the plan counts %d bytes of commitment bases for %d", dk.cd.Index(), k.Circuit, r.plan.Commitments, want)
	}
	var err error
	if r.cm.basis, err = newPointSet(dk.cd, "commitment bases", basis, pointBytes, TierDevice, dk.stream); err != nil {
		return fmt.Errorf("device %d: place commitment bases of %s: %w", dk.cd.Index(), k.Circuit, err)
	}
	if r.cm.sigma, err = newPointSet(dk.cd, "commitment σ-bases", sigma, pointBytes, TierDevice, dk.stream); err != nil {
		return fmt.Errorf("device %d: place commitment σ-bases of %s: %w", dk.cd.Index(), k.Circuit, err)
	}
	if err := dk.commits.buf.ensure(dk.cd, r.plan.CommitScratch); err != nil {
		return fmt.Errorf("device %d: commitment MSM scratch: %w", dk.cd.Index(), err)
	}
	if dk.commits.stream == 0 {
		if dk.commits.stream, err = dk.cd.NewStream(); err != nil {
			return fmt.Errorf("device %d: commitment MSM stream: %w", dk.cd.Index(), err)
		}
	}
	return nil
}

// msm is Σ scalars[j]·ps[j] on the commitments' stream, chunk points a
// call, in the buffer, whose mutex it holds meanwhile.
func (c *commitDevice) msm(cd *cuda.Device, ps pointSet, scalars []fr.Element, chunk int) (sum curve.G1Jac, err error) {
	if ps.n != len(scalars) {
		return sum, fmt.Errorf("%d scalars for %d points of %s", len(scalars), ps.n, ps.name)
	}
	if ps.n == 0 {
		return sum, nil // the zero value is infinity
	}
	if ps.dev == 0 || chunk <= 0 || c.stream == 0 {
		return sum, fmt.Errorf("%s: not placed on the device (chunk %d, stream %d)", ps.name, chunk, c.stream)
	}
	buf := c.buf.lock()
	defer func() {
		if err != nil {
			// A failed call may leave work queued: nothing may still use the
			// buffer when the next MSM takes it.
			err = errors.Join(err, cd.StreamSync(c.stream))
		}
		c.buf.unlock()
	}()
	at := commitScalarBytes(chunk)
	if buf.Bytes < at {
		return sum, fmt.Errorf("commitment MSM buffer of %d bytes for %d scalars a call", buf.Bytes, chunk)
	}
	scratch := cuda.Scratch{Ptr: buf.Ptr.Add(at), Bytes: buf.Bytes - at}
	for _, rg := range chunkRanges(ps.n, chunk) {
		// CopyIn returns once the scalars are on the device and the MSM
		// once its sum is on the host: the next chunk's scalars overwrite
		// nothing still read.
		if err := cuda.CopyIn(cd, buf.Ptr, scalars[rg[0]:rg[1]], c.stream); err != nil {
			return sum, fmt.Errorf("copy %d scalars of %s: %w", rg[1]-rg[0], ps.name, err)
		}
		part, err := cd.MSM(ps.dev.Add(int64(rg[0])*ps.size), buf.Ptr, rg[1]-rg[0], cuda.Montgomery, cuda.MSMOptions{Scratch: scratch}, c.stream)
		if err != nil {
			return sum, fmt.Errorf("msm of %s: %w", ps.name, err)
		}
		sum.AddAssign(&part)
	}
	return sum, nil
}

func (c *commitDevice) close(cd *cuda.Device) error {
	err := c.buf.free(cd)
	if c.stream != 0 {
		err = errors.Join(err, cd.DestroyStream(c.stream))
		c.stream = 0
	}
	return err
}

// CommitMSM implements prover.CommitmentMSMer: commitment i's Pedersen
// commitment, on a device k is placed on (placing it on the next device in
// turn if none holds it, as a partition's stage would). It takes no lease of
// the lock design (see commitDevice); a failure is an error, not a sum on
// the host.
func (b *Backend) CommitMSM(k *prover.Keys, i int, scalars []fr.Element) (curve.G1Affine, error) {
	cks := k.PK.CommitmentKeys
	if i < 0 || i >= len(cks) {
		return curve.G1Affine{}, fmt.Errorf("gpu commitment %d: the keys have %d commitments", i, len(cks))
	}
	if len(scalars) != len(cks[i].Basis) {
		return curve.G1Affine{}, fmt.Errorf("gpu commitment %d: %d values for %d basis points", i, len(scalars), len(cks[i].Basis))
	}
	return b.commitMSM(k, fmt.Sprintf("commitment %d", i), scalars, func(c *commitBases) pointSet { return c.of(i) })
}

// KnowledgeMSM implements prover.CommitmentMSMer: the commitments' folded
// proof of knowledge over their σ-bases, as CommitMSM runs.
func (b *Backend) KnowledgeMSM(k *prover.Keys, scalars []fr.Element) (curve.G1Affine, error) {
	n := 0
	for _, ck := range k.PK.CommitmentKeys {
		n += len(ck.BasisExpSigma)
	}
	if len(scalars) != n {
		return curve.G1Affine{}, fmt.Errorf("gpu proof of knowledge: %d values for %d σ-basis points", len(scalars), n)
	}
	return b.commitMSM(k, "proof of knowledge", scalars, func(c *commitBases) pointSet { return c.sigma })
}

func (b *Backend) commitMSM(k *prover.Keys, what string, scalars []fr.Element, points func(*commitBases) pointSet) (curve.G1Affine, error) {
	var out curve.G1Affine
	dk := b.commitDeviceFor(k)
	// Held meanwhile, so that the bases are not evicted under the MSM.
	r, _, err := dk.acquire(k)
	if err != nil {
		return out, fmt.Errorf("gpu %s: %w", what, err)
	}
	defer dk.release(r)
	sum, err := dk.commits.msm(dk.cd, points(&r.cm), scalars, r.plan.CommitChunk)
	if err != nil {
		return out, fmt.Errorf("device %d: gpu %s: %w", dk.cd.Index(), what, err)
	}
	b.commitMSMs.Add(1)
	out.FromJacobian(&sum)
	return out, nil
}

// commitDeviceFor is the device for a commitment MSM of k: the first, from
// the next in turn, that k is placed on, else the next in turn.
func (b *Backend) commitDeviceFor(k *prover.Keys) *deviceKeys {
	b.mu.Lock()
	start := b.commitRR
	b.commitRR++
	b.mu.Unlock()
	for j := range b.order {
		dk := b.devs[b.order[(start+j)%len(b.order)]]
		if _, placed := dk.placed(k); placed {
			return dk
		}
	}
	return b.devs[b.order[start%len(b.order)]]
}

// CommitmentMSMs counts the commitment MSMs (commitments and proofs of
// knowledge) the backend's devices have computed.
func (b *Backend) CommitmentMSMs() int64 { return b.commitMSMs.Load() }
