package gpuprove

import (
	"fmt"
	"strings"
	"testing"
)

const gib = int64(1) << 30

// shape of a circuit with about n wires per MSM on a domain of n, as the
// example circuits have, with b_g2 on the device beside the G1 MSMs.
func squareShape(logN int) keyShape {
	n := 1 << logN
	return keyShape{n: n, na: n - 3, nb: n - 5, nk: n - 7, nz: n - 1, g2: true, g2Beside: true, split: true}
}

func partitionOf(s keyShape) int64 { return newLayout(s.n, s.na, s.nb, s.nk, s.sharedWires).total }

func TestPlanPlacesKeysByWhatFits(t *testing.T) {
	for _, c := range []struct {
		name      string
		logN      int
		free      int64
		o         planOptions
		tier      string
		layout    string // "": not checked
		fits      bool
		maxChunk  int // the chunk is at most this
		minBeside int
	}{
		{"2^24 on the whole card", 24, 140 * gib, planOptions{beside: 3}, TierDevice, LayoutWhole, true, 1 << 24, 3},
		{"2^24 on 16 GiB", 24, 16 * gib, planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: unlimited}, TierPinned, LayoutWhole, true, MaxChunkPoints, 2},
		{"2^25 on 16 GiB", 25, 16 * gib, planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: unlimited}, TierPinned, "", true, MaxChunkPoints, 1},
		{"2^24 on 16 GiB, pinned budget spent", 24, 16 * gib, planOptions{beside: 2, pinnedFree: gib, hostFree: unlimited}, TierHost, LayoutWhole, true, MaxChunkPoints, 2},
		{"2^20 on 1 GiB", 20, gib, planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: unlimited}, TierPinned, "", true, 1 << 19, 1},
		{"2^20 forced to stream in chunks of 2^16", 20, 140 * gib, planOptions{tier: TierPinned, beside: 2, chunkPoints: 1 << 16, pinnedFree: 64 * gib, hostFree: unlimited}, TierPinned, LayoutWhole, true, 1 << 16, 2},
		{"2^20 forced compact", 20, 140 * gib, planOptions{beside: 2, layout: LayoutCompact, pinnedFree: 64 * gib, hostFree: unlimited}, TierDevice, LayoutCompact, true, 1 << 20, 2},
		// The whole layout is 24 GiB there: two vectors (8 GiB), NTTs in
		// place (no 4 GiB scratch vector), smaller MSM chunks.
		{"2^27 on 16 GiB", 27, 16 * gib, planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: unlimited}, TierHost, LayoutCompact, true, 1 << 21, 1},
		{"2^27 on 16 GiB, whole layout forced", 27, 16 * gib, planOptions{beside: 2, layout: LayoutWhole, pinnedFree: 64 * gib, hostFree: unlimited}, TierHost, "", false, 0, 0},
		{"2^28 on 16 GiB", 28, 16 * gib, planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: unlimited}, TierHost, "", false, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := squareShape(c.logN)
			p := planFor(s, c.free, c.o, estimatedSizes{})
			t.Logf("\n%s", p)
			if p.Tier != c.tier || p.Fits() != c.fits || (c.layout != "" && p.Layout != c.layout) {
				t.Fatalf("tier %s, layout %s, fits %v; want %s, %q, %v", p.Tier, p.Layout, p.Fits(), c.tier, c.layout, c.fits)
			}
			if !c.fits {
				if !strings.Contains(p.String(), "DOES NOT FIT") {
					t.Errorf("a plan that does not fit does not say so")
				}
				return
			}
			if p.ChunkPoints > c.maxChunk || p.Beside < c.minBeside {
				t.Errorf("chunk %d (want at most %d), room for %d partitions (want at least %d)", p.ChunkPoints, c.maxChunk, p.Beside, c.minBeside)
			}
			if p.Reserved()+int64(p.Beside)*p.Partition > p.Free {
				t.Errorf("plan overcommits: %d reserved + %d × %d > %d", p.Reserved(), p.Beside, p.Partition, p.Free)
			}
			if (p.Tier == TierDevice) != (p.Keys > 0) || (p.Tier == TierDevice) == (p.Chunks > 0) {
				t.Errorf("keys %d and chunk buffers %d for tier %s", p.Keys, p.Chunks, p.Tier)
			}
		})
	}
}

func TestChunkRanges(t *testing.T) {
	for _, c := range []struct {
		n, chunk int
		want     string
	}{
		{0, 4, "[[0 0]]"},
		{3, 4, "[[0 3]]"},
		{4, 4, "[[0 4]]"},
		{9, 4, "[[0 4] [4 8] [8 9]]"},
		{8, 0, "[[0 8]]"},
	} {
		if got := fmt.Sprint(chunkRanges(c.n, c.chunk)); got != c.want {
			t.Errorf("chunkRanges(%d, %d) = %s, want %s", c.n, c.chunk, got, c.want)
		}
	}
}

// A key set's commitment bases and their MSMs' buffer are part of what it
// reserves: they decide whether a partition fits, and are absent without
// commitments.
func TestPlanCountsCommitments(t *testing.T) {
	s := squareShape(20)
	bare := planFor(s, 16*gib, planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: unlimited}, estimatedSizes{})
	s.commits = []int{1 << 10, 1 << 12}
	p := planFor(s, 16*gib, planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: unlimited}, estimatedSizes{})
	t.Logf("\n%s", p)
	if bare.Commitments != 0 || bare.CommitScratch != 0 || strings.Contains(bare.String(), "commitment") {
		t.Fatalf("a plan without commitments counts %d and %d for them", bare.Commitments, bare.CommitScratch)
	}
	want := int64(2*(1<<10+1<<12)) * pointBytes
	if p.Commitments != want || p.CommitChunk != 1<<10+1<<12 || p.CommitScratch < commitScalarBytes(p.CommitChunk)+MSMScratch(p.CommitChunk) {
		t.Fatalf("bases %d (want %d), chunk %d, buffer %d", p.Commitments, want, p.CommitChunk, p.CommitScratch)
	}
	if p.Reserved() != bare.Reserved()+p.Commitments+p.CommitScratch {
		t.Fatalf("reserved %d, %d without commitments", p.Reserved(), bare.Reserved())
	}
	// Bases larger than the device: the key set is refused, not placed to
	// fail later.
	s.commits = []int{1 << 26}
	if p := planFor(s, 4*gib, planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: unlimited}, estimatedSizes{}); p.Fits() {
		t.Fatalf("12 GiB of commitment bases fit on 4 GiB:\n%s", p)
	}
}

// Keys loaded without their points stream from disk when the host budget
// for keys cannot hold a copy of them, in chunks of at most MaxChunkPoints
// (the host stages two of them per curve group), and take a tier in memory
// when it can; keys in memory never go to disk unless it is forced.
func TestPlanStreamsFromDiskBeyondTheHostBudget(t *testing.T) {
	onDisk := func(logN int) keyShape { s := squareShape(logN); s.onDisk = true; return s }
	for _, c := range []struct {
		name      string
		s         keyShape
		free      int64
		o         planOptions
		tier      string
		maxChunk  int
		pinnedBuf bool // the disk tier's staging pinned
	}{
		{"2^27 on 16 GiB, 32 GiB for keys", onDisk(27), 16 * gib, planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: 32 * gib}, TierDisk, 1 << 21, true},
		{"2^27 on 16 GiB, no pinned memory", onDisk(27), 16 * gib, planOptions{beside: 2, pinnedFree: -1, hostFree: 32 * gib}, TierDisk, 1 << 21, false},
		{"2^24 on 16 GiB, 64 GiB for keys", onDisk(24), 16 * gib, planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: 64 * gib}, TierPinned, MaxChunkPoints, false},
		{"2^24 on 16 GiB, pinned budget spent", onDisk(24), 16 * gib, planOptions{beside: 2, pinnedFree: gib, hostFree: 16 * gib}, TierHost, MaxChunkPoints, false},
		{"2^24 on 16 GiB, 1 GiB for keys", onDisk(24), 16 * gib, planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: gib}, TierDisk, MaxChunkPoints, true},
		{"2^24 in memory, 1 GiB for keys", squareShape(24), 16 * gib, planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: gib}, TierHost, MaxChunkPoints, false},
		{"2^24 on the whole card, no memory for keys", onDisk(24), 140 * gib, planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: -1}, TierDevice, 1 << 24, false},
		{"2^24 on the whole card, disk forced", squareShape(24), 140 * gib, planOptions{tier: TierDisk, beside: 2, pinnedFree: 64 * gib, hostFree: unlimited}, TierDisk, MaxChunkPoints, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := planFor(c.s, c.free, c.o, estimatedSizes{})
			t.Logf("\n%s", p)
			if p.Tier != c.tier || !p.Fits() || p.ChunkPoints > c.maxChunk {
				t.Fatalf("tier %s, fits %v, chunks of %d; want %s, fits, at most %d", p.Tier, p.Fits(), p.ChunkPoints, c.tier, c.maxChunk)
			}
			if p.Tier != TierDisk {
				if p.DiskKeys != 0 || p.Staging != 0 {
					t.Fatalf("tier %s with %d bytes on disk, %d of staging", p.Tier, p.DiskKeys, p.Staging)
				}
				return
			}
			if p.DiskKeys != c.s.keyBytes() || p.HostKeys != 0 || p.Keys != 0 || p.Staging != p.Chunks || p.StagingPinned != c.pinnedBuf {
				t.Fatalf("disk plan: %+v", p)
			}
			if p.Reserved() != p.Chunks+p.Scratch+p.Tables {
				t.Fatalf("reserved %d counts more than the chunk buffers, scratch and tables", p.Reserved())
			}
			if !strings.Contains(p.String(), "on disk (") {
				t.Fatalf("the plan does not say the points are on disk:\n%s", p)
			}
		})
	}
}

// MSM tables: the most copies that fit beside the partitions wanted, on
// resident keys with whole MSMs only, counted in what the key set reserves.
func TestPlanMSMTables(t *testing.T) {
	s := squareShape(20)
	o := planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: unlimited, tables: "auto"}
	off := o
	off.tables = "off"
	bare := planFor(s, 140*gib, off, estimatedSizes{})
	if bare.MSMTables != 0 || strings.Contains(bare.String(), "MSM tables") {
		t.Fatalf("tables off, and the plan has %d bytes of them", bare.MSMTables)
	}
	full := planFor(s, 140*gib, o, estimatedSizes{})
	t.Logf("\n%s", full)
	wantFull := int64(0)
	for _, n := range []int{s.na, s.nb, s.nk, s.nz} {
		tb, _ := msmTableEstimate(n, 0)
		wantFull += tb - int64(n)*pointBytes
	}
	if full.MSMTables != wantFull || full.TableCopies != 0 || full.TableSets != 4 || full.Tier != TierDevice {
		t.Fatalf("140 GiB: tables %d (want %d), copies %d, sets %d, tier %s", full.MSMTables, wantFull, full.TableCopies, full.TableSets, full.Tier)
	}
	if full.Reserved() != bare.Reserved()-bare.Scratch+full.Scratch+full.MSMTables || full.Scratch < bare.Scratch {
		t.Fatalf("reserved %d: the bare plan's %d with scratch %d (bare %d) and the tables", full.Reserved(), bare.Reserved(), full.Scratch, bare.Scratch)
	}
	if !strings.Contains(full.String(), "one copy per window") {
		t.Fatalf("the plan does not print its tables:\n%s", full)
	}
	// Room for 6 copies but not one per window (13 at 2^20): fewer copies.
	six := planFor(s, 140*gib, o, estimatedSizes{})
	for free := full.Reserved() + tableRoom*2*full.Partition - 1; ; free -= gib / 4 {
		six = planFor(s, free, o, estimatedSizes{})
		if six.MSMTables == 0 || six.TableCopies != 0 {
			break
		}
	}
	if six.MSMTables > 0 && (six.TableCopies != 6 && six.TableCopies != 3) {
		t.Fatalf("short of one copy per window: %d copies", six.TableCopies)
	}
	if six.MSMTables > 0 && six.Reserved()+tableRoom*2*six.Partition > six.Free {
		t.Fatalf("tables leave no room for the partitions wanted:\n%s", six)
	}
	// Streamed keys and chunked MSMs have none.
	for _, c := range []struct {
		name string
		o    planOptions
	}{
		{"pinned", planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: unlimited, tables: "auto", tier: TierPinned}},
		{"chunked", planOptions{beside: 2, pinnedFree: 64 * gib, hostFree: unlimited, tables: "auto", chunkPoints: 1 << 16}},
	} {
		if p := planFor(s, 140*gib, c.o, estimatedSizes{}); p.MSMTables != 0 {
			t.Fatalf("%s: tables of %d bytes", c.name, p.MSMTables)
		}
	}
	// On 16 GiB a 2^22 key set's partitions keep the memory: no tables
	// (3 copies would fit beside 5 partitions, under tableRoom × 2).
	s22 := squareShape(22)
	if p := planFor(s22, 16*gib, o, estimatedSizes{}); !p.Fits() || p.MSMTables != 0 || p.Tier != TierDevice {
		t.Fatalf("2^22 on 16 GiB: tables crowd out the partitions:\n%s", p)
	}
}
