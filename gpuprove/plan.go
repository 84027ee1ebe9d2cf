package gpuprove

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cuzk/cuzk/cuda"
	"github.com/cuzk/cuzk/gpu"
	"github.com/cuzk/cuzk/prover"
)

// Key tiers: where a proving key's points live while partitions are proved,
// as in cuzk's SRS manager.
const (
	// TierDevice keeps the points resident on the device: the MSMs read them
	// in place.
	TierDevice = "device"
	// TierPinned keeps them in pinned host memory (cudaHostAlloc) and streams
	// them to the device in chunks, a copy stream filling one chunk buffer
	// while the MSM reads the other.
	TierPinned = "pinned"
	// TierHost streams them from the Go heap, through the driver's own
	// staging: slower than pinned, for when the pinned budget is spent.
	TierHost = "host"
	// TierDisk streams them from the key set's points file
	// (prover.PointsFileName): each chunk is read from disk into one of two
	// host staging buffers while the MSM of the chunk before runs, then
	// copied into a chunk buffer. For key sets whose points no host memory
	// budget can hold; the host holds the staging only.
	TierDisk = "disk"
)

// Partition layouts on the device: how much of a partition's data its
// buffer holds.
const (
	// LayoutWhole stages all six vectors (a, b, c and the A, B, K wires):
	// compute only reads them.
	LayoutWhole = "whole"
	// LayoutCompact stages a and b only, in two vectors of the domain's
	// size; compute copies c into b's vector once A·B is formed, then each
	// wire vector into whichever vector its MSM may overwrite. A third of
	// the whole layout's memory for square circuits, for about 4 vectors'
	// worth of host-to-device copies inside compute.
	LayoutCompact = "compact"
)

// MinChunkPoints and MaxChunkPoints bound the points one MSM call sees. The
// MSM's scratch grows with its points, so a partition larger
// than the chunk is summed over chunks: at most MaxChunkPoints at a time, and
// fewer when the device is small.
const (
	MinChunkPoints = 1 << 16
	MaxChunkPoints = 1 << 22
)

// Plan is how one partition of a key set uses a device's memory: what the
// backend holds for the key set (points, or chunk buffers to stream them;
// MSM scratch; NTT tables) and what each partition's buffer takes beside it.
// It is worked out before anything is proved, so that a partition that
// cannot fit is refused up front and the designs see real numbers.
type Plan struct {
	// Free is the device memory the plan was made against.
	Free int64 `json:"free_bytes"`
	// Partition is one partition's staged buffer (the designs' VRAM
	// demand), laid out as Layout says: LayoutWhole or LayoutCompact.
	Partition int64  `json:"partition_bytes"`
	Layout    string `json:"layout"`
	// NTTInPlace runs the NTTs without a scratch vector: in place, with a
	// bit-reversal pass at the end of each, when a vector of the domain is
	// more than the device can spare.
	NTTInPlace bool `json:"ntt_in_place"`
	// Tier is where the key's points live: TierDevice, TierPinned, TierHost
	// or TierDisk.
	Tier string `json:"tier"`
	// Keys is the key's points on the device (zero when they are streamed);
	// HostKeys the points kept on the host to stream; DiskKeys the points
	// streamed from the points file at PointsPath.
	Keys       int64  `json:"keys_bytes"`
	HostKeys   int64  `json:"host_keys_bytes"`
	DiskKeys   int64  `json:"disk_keys_bytes"`
	PointsPath string `json:"points_path,omitempty"`
	// Staging is the host buffers the disk tier reads chunks into: two per
	// curve group, each a chunk buffer's size; pinned (StagingPinned) when
	// the pinned budget for keys has room, else Go memory.
	Staging       int64 `json:"staging_bytes"`
	StagingPinned bool  `json:"staging_pinned"`
	// ChunkPoints is the most points one MSM call sees; Chunks the device
	// buffers that streamed points pass through (two per curve group).
	ChunkPoints int   `json:"chunk_points"`
	Chunks      int64 `json:"chunk_bytes"`
	// Scratch is the kernels' scratch, as the library sizes it: the NTTs'
	// and a chunk's G1 MSM (one buffer, used in turn on the partition's
	// stream), and the G2 MSM's, in a buffer of its own (ScratchG2) when it
	// runs beside the G1 work, else in the same one.
	Scratch   int64 `json:"scratch_bytes"`
	ScratchG2 int64 `json:"scratch_g2_bytes"`
	// Tables is the NTT domain's tables.
	Tables int64 `json:"tables_bytes"`
	// MSMTables is what precomputed MSM tables of the resident G1 point
	// sets (A, B, K, Z) take beyond the points, each set's table of
	// TableCopies copies (0: one per window, cuda.MSMTableShape); zero
	// without tables. A table MSM sums one set of buckets per copy's
	// windows instead of per window (docs/cuda.md). TableSets is how many
	// sets have one.
	MSMTables   int64 `json:"msm_table_bytes"`
	TableCopies int   `json:"msm_table_copies"`
	TableSets   int   `json:"msm_table_sets"`
	// TableError says why sets the plan gave tables kept their points
	// instead (placing them failed); empty when every table was built.
	TableError string `json:"msm_table_error,omitempty"`
	// Commitments is the Pedersen bases of gnark's commitments (every
	// commitment's Basis and BasisExpSigma), resident on the device whatever
	// Tier says: they are as large as the committed wires. CommitScratch is
	// the buffer of their MSMs, CommitChunk points a call: the call's scalars,
	// then the MSM's scratch. All three are zero without commitments.
	Commitments   int64 `json:"commitment_bytes"`
	CommitScratch int64 `json:"commitment_scratch_bytes"`
	CommitChunk   int   `json:"commitment_chunk_points"`
	// Beside is how many partitions' buffers fit beside what the backend
	// holds; at least one, or the plan does not fit.
	Beside int `json:"partitions_beside"`
}

// KeyTier is where the key's points live (prover.DevicePlan).
func (p Plan) KeyTier() string { return p.Tier }

// Reserved is what the backend holds on the device for the key set.
func (p Plan) Reserved() int64 {
	return p.Keys + p.Chunks + p.Scratch + p.Tables + p.Commitments + p.CommitScratch + p.MSMTables
}

// Fits reports whether one partition fits beside what the backend holds.
func (p Plan) Fits() bool { return p.Reserved()+p.Partition <= p.Free }

// String is the plan in one line per item, as cuzk prove --plan prints it.
func (p Plan) String() string {
	var b strings.Builder
	row := func(name string, n int64, note string) {
		fmt.Fprintf(&b, "  %-22s %12s  %s\n", name, gpu.FormatBytes(n), note)
	}
	fmt.Fprintf(&b, "device memory plan (%s free):\n", gpu.FormatBytes(p.Free))
	switch p.Tier {
	case TierDevice:
		row("key points", p.Keys, "resident on the device")
	case TierDisk:
		staging := "pinned"
		if !p.StagingPinned {
			staging = "Go-heap"
		}
		row("key points", p.DiskKeys, fmt.Sprintf("on disk (%s), streamed in chunks of %d points through %s of %s staging",
			cmp.Or(p.PointsPath, prover.PointsFileName), p.ChunkPoints, gpu.FormatBytes(p.Staging), staging))
		row("chunk buffers", p.Chunks, "two per curve group, filled by a copy stream from the staging")
	default:
		row("key points", p.HostKeys, fmt.Sprintf("on the host (%s), streamed in chunks of %d points", p.Tier, p.ChunkPoints))
		row("chunk buffers", p.Chunks, "two per curve group, filled by a copy stream")
	}
	kernels := fmt.Sprintf("NTTs and MSMs of up to %d points a call", p.ChunkPoints)
	if p.NTTInPlace {
		kernels = fmt.Sprintf("MSMs of up to %d points a call; the NTTs run in place", p.ChunkPoints)
	}
	if p.MSMTables > 0 {
		copies := fmt.Sprintf("%d copies", p.TableCopies)
		if p.TableCopies == 0 {
			copies = "one copy per window"
		}
		row("MSM tables", p.MSMTables, fmt.Sprintf("precomputed multiples of %d G1 point sets (%s), beyond the points", p.TableSets, copies))
	}
	if p.TableError != "" {
		fmt.Fprintf(&b, "  MSM tables not built: %s\n", p.TableError)
	}
	row("kernel scratch", p.Scratch, kernels)
	row("NTT tables", p.Tables, "")
	if p.Commitments > 0 {
		row("commitment bases", p.Commitments, "resident: each commitment's basis and basis·σ")
		row("commitment scratch", p.CommitScratch, fmt.Sprintf("their MSMs, on a stream of their own, up to %d points a call", p.CommitChunk))
	}
	what := "a, b, c and the wire vectors"
	if p.Layout == LayoutCompact {
		what = "two vectors: a staged (and b, copies in order), the rest copied in by compute"
	}
	row("one partition", p.Partition, what)
	free := p.Free - p.Reserved()
	note := fmt.Sprintf("room for %d partitions at once", max(free/max(p.Partition, 1), 0))
	if !p.Fits() {
		note = fmt.Sprintf("DOES NOT FIT: one partition needs %s beside the %s the key set holds",
			gpu.FormatBytes(p.Partition), gpu.FormatBytes(p.Reserved()))
	}
	row("left for partitions", max(free, 0), note)
	return b.String()
}

// keyShape is what the planner needs to know of a key set.
type keyShape struct {
	n          int // FFT domain
	na, nb, nk int // wire MSMs' points
	nz         int // H's points
	g2         bool
	g2Beside   bool
	split      bool // the wire MSMs split off their 0/1 scalars
	// onDisk: the points are in no memory (the keys were loaded without
	// them): every tier but the disk's reads them into memory it allocates.
	onDisk bool
	// pinned: the keys moved A, B, K and G2 B into pinned memory
	// (prover.Keys.PinPoints): the pinned tier copies only Z, and nothing
	// when zMoved (Z moved too, in the device's order).
	pinned, zMoved bool
	// sharedWires: the A and B wire vectors are one (prover.Keys.SharedWires).
	sharedWires bool
	// commits are the points of each commitment's basis (none: no
	// commitments); the proof of knowledge's MSM is over all of them.
	commits []int
}

func shapeOf(k *prover.Keys, g2, g2Beside, split bool) keyShape {
	pk, c := k.PK, k.Counts()
	s := keyShape{n: int(pk.Domain.Cardinality), na: c.A, nb: c.B, nk: c.K, nz: c.Z,
		g2: g2, g2Beside: g2Beside, split: split, onDisk: !k.PointsInMemory(), pinned: k.PointsPinned(), zMoved: k.ZInDeviceOrder(),
		sharedWires: k.SharedWires()}
	for _, ck := range pk.CommitmentKeys {
		s.commits = append(s.commits, len(ck.Basis))
	}
	return s
}

// partition is one partition's device buffer in the given layout.
func (s keyShape) partition(layout string) int64 {
	if layout == LayoutCompact {
		return newCompactLayout(s.n, s.na, s.nb, s.nk).total
	}
	return newLayout(s.n, s.na, s.nb, s.nk, s.sharedWires).total
}

func (s keyShape) g1Points() int64 { return int64(s.na + s.nb + s.nk + s.nz) }

func (s keyShape) keyBytes() int64 {
	b := s.g1Points() * pointBytes
	if s.g2 {
		b += int64(s.nb) * g2PointBytes
	}
	return b
}

// pinnedCopy is what streaming the key set from pinned memory copies there:
// every point, or only Z when the keys moved the others there already.
func (s keyShape) pinnedCopy() int64 {
	if s.pinned && s.zMoved {
		return 0
	}
	if s.pinned {
		return int64(s.nz) * pointBytes
	}
	return s.keyBytes()
}

func (s keyShape) largest() int { return max(s.na, s.nb, s.nk, s.nz, 1) }

// scratch is the kernels' scratch for MSM calls of at most chunk points:
// the buffer the partition's stream uses in turn for the NTTs, Z's MSM and
// the wire MSMs (and the G2 MSM when it runs after them), and the G2 MSM's
// own when it runs beside them.
func (s keyShape) scratch(chunk int, nttInPlace bool, sz sizes) (main, g2 int64) {
	wires := max(s.na, s.nb, s.nk)
	main = max(sz.msm(min(chunk, s.nz), false, false), sz.msm(min(chunk, wires), false, s.split))
	if !nttInPlace {
		main = max(main, sz.nttScratch(log2(s.n)))
	}
	if !s.g2 {
		return main, 0
	}
	g2 = sz.msm(min(chunk, s.nb), true, s.split)
	if s.g2Beside {
		return main, g2
	}
	return max(main, g2), 0
}

// commitPoints is the points of every commitment's basis together.
func (s keyShape) commitPoints() int {
	n := 0
	for _, c := range s.commits {
		n += c
	}
	return n
}

// commitBases is the commitments' bases on the device: Basis and
// BasisExpSigma of each.
func (s keyShape) commitBases() int64 { return 2 * int64(s.commitPoints()) * pointBytes }

// commitScratch is the buffer of the commitment MSMs for calls of at most
// chunk points (none without commitments): the scalars of one call, then
// the scratch of the largest of their calls (each commitment's, and the
// proof of knowledge's over all the σ-bases, each in chunks).
func (s keyShape) commitScratch(chunk int, sz sizes) (bytes int64, points int) {
	total := s.commitPoints()
	if total == 0 {
		return 0, 0
	}
	points = min(chunk, total)
	var scratch int64
	for _, n := range append(slices.Clone(s.commits), total) {
		for _, call := range []int{min(n, points), n % points} {
			if call > 0 {
				scratch = max(scratch, sz.msm(call, false, false))
			}
		}
	}
	return commitScalarBytes(points) + scratch, points
}

// commitScalarBytes is the scalars' part of the commitment MSMs' buffer for
// calls of n points, on a 256-byte boundary, the MSM's scratch after it.
func commitScalarBytes(n int) int64 { return (int64(n)*scalarBytes + 255) &^ 255 }

// sizes is what the kernels take from the device beside their operands:
// the library's own answers (librarySizes), or the package's estimate of
// them where no library is loaded (estimatedSizes).
type sizes interface {
	msm(n int, g2, split bool) int64
	nttScratch(logN int) int64
	tables(logN int) int64
	// msmTable is the device memory of a precomputed table of n G1
	// points for ask (cuda.MSMTableShape's copies: 0, one per window) and
	// the scratch of an MSM over it; ok is false where tables cannot be
	// made (a library built before them).
	msmTable(n, ask int, split bool) (table, scratch int64, ok bool)
	// failed is the first sizing call that failed, whose answer an
	// estimate stood in for.
	failed() error
}

// estimatedSizes are this package's formulas for the kernels' scratch
// (MSMScratch, MSMScratchG2): an upper bound, for planning without a GPU.
type estimatedSizes struct{}

func (estimatedSizes) msm(n int, g2, _ bool) int64 {
	if g2 {
		return MSMScratchG2(n)
	}
	return MSMScratch(n)
}

func (estimatedSizes) nttScratch(logN int) int64 { return int64(1) << logN * scalarBytes }

func (estimatedSizes) tables(logN int) int64 { return domainTableBytes(logN) }

func (estimatedSizes) msmTable(n, ask int, _ bool) (int64, int64, bool) {
	t, s := msmTableEstimate(n, ask)
	return t, s, true
}

func (estimatedSizes) failed() error { return nil }

// librarySizes asks the kernel library (its sizing calls), so that the plan
// reserves what the kernels really take. The first failed call is kept in
// err, and the estimate stands in for it.
type librarySizes struct {
	cd  *cuda.Device
	err error
}

func (l *librarySizes) keep(b int64, err error, estimate int64) int64 {
	if err != nil {
		l.err = cmp.Or(l.err, err)
		return estimate
	}
	return b
}

func (l *librarySizes) failed() error { return l.err }

func (l *librarySizes) msm(n int, g2, split bool) int64 {
	b, err := l.cd.MSMScratchBytes(n, g2, cuda.MSMOptions{Split: split})
	return l.keep(b, err, estimatedSizes{}.msm(n, g2, split))
}

func (l *librarySizes) msmTable(n, ask int, split bool) (int64, int64, bool) {
	t, err := l.cd.MSMTableShape(n, false, 0, ask)
	if errors.Is(err, cuda.ErrNoTables) {
		return 0, 0, false
	}
	et, es := msmTableEstimate(n, ask)
	if err != nil {
		l.keep(0, err, 0)
		return et, es, false
	}
	s, err := l.cd.MSMScratchBytes(n, false, t.Options(cuda.MSMOptions{Split: split}))
	return t.Bytes, l.keep(s, err, es), err == nil
}

func (l *librarySizes) nttScratch(logN int) int64 {
	b, err := l.cd.NTTScratchBytes(logN)
	return l.keep(b, err, estimatedSizes{}.nttScratch(logN))
}

func (l *librarySizes) tables(logN int) int64 {
	b, err := l.cd.DomainBytes(logN)
	return l.keep(b, err, estimatedSizes{}.tables(logN))
}

// chunkBuffers is the device memory that streamed points pass through.
func (s keyShape) chunkBuffers(chunk int) int64 {
	b := 2 * int64(min(chunk, s.largest())) * pointBytes
	if s.g2 {
		b += 2 * int64(min(chunk, s.nb)) * g2PointBytes
	}
	return b
}

// planOptions are the backend's choices that bear on a plan.
type planOptions struct {
	tier        string // "" or "auto": chosen; else forced
	beside      int    // partitions wanted beside the key set (at least 1)
	chunkPoints int    // 0: chosen; else forced (a power of two)
	pinnedFree  int64  // pinned host memory the key set may take
	hostFree    int64  // host memory (pinned or not) its points may take
	layout      string // "" or "auto": chosen; else forced (LayoutWhole, LayoutCompact)
	nttInPlace  bool   // forced on
	tables      string // MSM tables: "auto" where they fit; "" or "off": none
}

// streamTier is where a key set of shape s streams from when its points are
// not resident: pinned memory when both budgets have room for a copy; else
// the Go heap, where points loaded into memory already are (no copy), and
// where points on disk are read to when the host budget has room for them;
// else the disk.
func streamTier(s keyShape, o planOptions) string {
	b := s.keyBytes()
	switch {
	case s.pinnedCopy() <= o.pinnedFree && s.pinnedCopy() <= o.hostFree:
		return TierPinned
	case !s.onDisk || b <= o.hostFree:
		return TierHost
	}
	return TierDisk
}

// planFor works out how a key set of shape s uses free bytes of device memory.
// It takes the largest MSM chunk (whole MSMs first) for which the points fit
// resident, or else streamed (streamTier: from pinned memory, the Go heap or
// the disk), with room for the partitions wanted beside them;
// for a chunk, the whole layout with out-of-place NTTs first, then the NTTs
// in place, then the compact layout (in that order of cost); failing all
// that, the same with room for one partition. A plan that cannot fit even
// one partition is returned with Fits false.
func planFor(s keyShape, free int64, o planOptions, sz sizes) Plan {
	beside := max(o.beside, 1)
	tables := sz.tables(log2(s.n))
	var chunks []int
	if o.chunkPoints > 0 {
		chunks = []int{o.chunkPoints}
	} else {
		// Whole MSMs first (the fastest, when the card is large), then
		// chunks from the largest down.
		chunks = append(chunks, s.largest())
		for c := MaxChunkPoints; c >= MinChunkPoints; c /= 2 {
			if c < s.largest() {
				chunks = append(chunks, c)
			}
		}
	}
	var tiers []string
	switch o.tier {
	case "", "auto":
		tiers = []string{TierDevice, streamTier(s, o)}
	case TierPinned:
		// Forced: pinned unless its budget is short, whatever the host's.
		tiers = []string{TierPinned}
		if s.pinnedCopy() > o.pinnedFree {
			tiers = []string{TierHost}
		}
	default:
		tiers = []string{o.tier}
	}
	type shape struct {
		layout  string
		inPlace bool
	}
	var shapes []shape
	for _, l := range []string{LayoutWhole, LayoutCompact} {
		if o.layout == "" || o.layout == "auto" || o.layout == l {
			if !o.nttInPlace {
				shapes = append(shapes, shape{l, false})
			}
			shapes = append(shapes, shape{l, true})
		}
	}
	make1 := func(tier string, chunk int, sh shape) Plan {
		if tier == TierDisk {
			// The host stages two chunks per curve group: whole MSMs
			// would stage whole vectors.
			chunk = min(chunk, MaxChunkPoints)
		}
		main, g2 := s.scratch(chunk, sh.inPlace, sz)
		p := Plan{Free: free, Partition: s.partition(sh.layout), Layout: sh.layout, NTTInPlace: sh.inPlace,
			Tier: tier, ChunkPoints: min(chunk, s.largest()), Scratch: main + g2, ScratchG2: g2, Tables: tables}
		p.Commitments = s.commitBases()
		p.CommitScratch, p.CommitChunk = s.commitScratch(chunk, sz)
		switch tier {
		case TierDevice:
			p.Keys = s.keyBytes()
		case TierDisk:
			p.DiskKeys = s.keyBytes()
			p.Chunks = s.chunkBuffers(chunk)
			p.Staging = p.Chunks
			p.StagingPinned = p.Staging <= o.pinnedFree
		default:
			p.HostKeys = s.keyBytes()
			p.Chunks = s.chunkBuffers(chunk)
		}
		if p.Partition > 0 {
			p.Beside = int(max(free-p.Reserved(), 0) / p.Partition)
		}
		return p
	}
	// Larger chunks first: an MSM summed over small chunks costs more than
	// streaming its points over the link (about 55 GB/s pinned, overlapped
	// with the MSM), so a key set is streamed rather than made to run its
	// MSMs in chunks a quarter the size.
	var last Plan
	for _, want := range []int{beside, 1} {
		for _, c := range chunks {
			for _, tier := range tiers {
				for _, sh := range shapes {
					p := make1(tier, c, sh)
					last = p
					if p.Reserved()+int64(want)*p.Partition <= free {
						if want == beside {
							return withTables(p, s, free, want, o, sz)
						}
						return p
					}
				}
			}
		}
	}
	return last
}

// tableAsks are the tables a plan tries, most copies first: one copy per
// window, then 6 and 3 copies. At 2^24 a G1 MSM took 93.0, 95.7 and 102.5
// ms over them against 106.8 ms without (runs/h200-2026-12-01h h1); 2
// copies at the model's window were slower (109.0 ms).
var tableAsks = []int{0, 6, 3}

// tableRoom is how many times the partitions wanted the room left beside
// a key set's tables must hold: tables take only memory the partitions
// could spare, so that under a tight budget the designs keep it (16 GiB
// with a 2^22 key set would otherwise give 3 copies and halve the room
// for partitions, for a few percent of an MSM).
const tableRoom = 4

// withTables gives plan p precomputed MSM tables of the G1 point sets when
// o asks for them, the points are resident and the MSMs whole, and the
// largest of tableAsks whose tables leave room for tableRoom × want
// partitions. The G1 scratch grows to hold an MSM over a table as well as
// over the plain points, which a set whose table cannot be built falls
// back to.
func withTables(p Plan, s keyShape, free int64, want int, o planOptions, sz sizes) Plan {
	if o.tables != "auto" || p.Tier != TierDevice || p.ChunkPoints < s.largest() || p.Partition <= 0 {
		return p
	}
	sets := []struct {
		n     int
		split bool
	}{{s.na, s.split}, {s.nb, s.split}, {s.nk, s.split}, {s.nz, false}}
	for _, ask := range tableAsks {
		var extra, scratch int64
		n := 0
		for _, set := range sets {
			if set.n < minTablePoints {
				continue
			}
			tb, sc, ok := sz.msmTable(set.n, ask, set.split)
			if !ok {
				return p
			}
			extra += tb - int64(set.n)*pointBytes
			scratch = max(scratch, sc)
			n++
		}
		if n == 0 {
			return p
		}
		q := p
		q.MSMTables, q.TableCopies, q.TableSets = extra, ask, n
		q.Scratch = max(p.Scratch-p.ScratchG2, scratch) + p.ScratchG2
		if q.Reserved()+int64(tableRoom*want)*q.Partition <= free {
			q.Beside = int(max(free-q.Reserved(), 0) / q.Partition)
			return q
		}
	}
	return p
}

// minTablePoints is the smallest point set a plan makes a table of: below
// it an MSM is bound by its launches, not its bucket sums.
const minTablePoints = 1 << 12

func log2(n int) int {
	l := 0
	for 1<<l < n {
		l++
	}
	return l
}

// chunkRanges splits n points into calls of at most chunk points.
func chunkRanges(n, chunk int) [][2]int {
	if chunk <= 0 || n <= chunk {
		return [][2]int{{0, n}}
	}
	var out [][2]int
	for at := 0; at < n; at += chunk {
		out = append(out, [2]int{at, min(at+chunk, n)})
	}
	return out
}
