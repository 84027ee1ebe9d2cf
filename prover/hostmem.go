package prover

// HostFootprint is the host memory one partition of k holds from the start of
// its synthesis until it leaves the host (proved, failed or cancelled): the
// figure the scheduler's host-memory gate counts (actors.JobSpec.HostBytes).
// See HostBytes; keys whose A and B wire vectors are one (SharedWires) count
// that vector once.
func HostFootprint(k *Keys) int64 {
	n, wires := int64(k.PK.Domain.Cardinality), int64(len(k.PK.InfinityA))
	if k.SharedWires() {
		// One vector for the A and B wires (SharedWires).
		return HostBytes(n, wires) - 32*(wires-int64(k.PK.NbInfinityA))
	}
	return HostBytes(n, wires)
}

// HostBytes is the host memory of one partition whose FFT domain has n points
// and whose circuit has wires wires, at its peak: the end of prep, when its
// Solution and its Prepared are both alive.
//
//   - Solution: the wire values (wires elements) and A·w, B·w, C·w (at most n
//     each);
//   - Prepared: a, b, c padded to the domain (n each) and the A, B and K wire
//     vectors (at most wires each).
//
// That is 32·(6n + 4·wires) bytes, 32 bytes an element of Fr. The gate keeps
// the peak for the partition's whole stay, although a prepared partition
// holds only its Prepared (32·(3n + 3·wires)) once a backend that gives prep
// its memory (the GPU's pinned buffers) has let the Solution go: the solver
// keeps a released Solution for the next synthesis, so the host holds it all
// the same. Not counted: the keys (shared by every partition), the witness
// and the public inputs (small beside the vectors), the MSM results. A
// partition whose solver wrote A, B and C into its backend's prep memory
// (SynthesizeOn) holds 3n elements less, and one whose wires went there too
// (WireMemory) holds no wire vector outside it; the figure stays the
// larger, for the partitions the backend's pinned pool had no room for.
func HostBytes(n, wires int64) int64 {
	const elem = 32
	return elem * (6*n + 4*wires)
}
