package prover

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	groth16bls "github.com/consensys/gnark/backend/groth16/bls12-381"
	"golang.org/x/sys/unix"
)

// The points file (proving.points, next to the proving key) holds a key
// set's points as the GPU's MSMs read them, at offsets a reader can compute,
// so that the GPU backend can stream them from disk in chunks when no
// memory holds them (gpuprove.TierDisk) and a key set can be loaded without
// them (LoadOptions.PointsOnDisk).
//
// proving.key cannot serve: its Z points are in gnark's bit-reversed order
// (the device's MSM wants them in the order of H's coefficients, natural),
// finding a vector means parsing the dump before it, and only the whole
// file has a checksum. The points file is derived from proving.key (by
// EnsurePoints, or cuzk setup --points-file) and checked against the
// manifest's hash of it as it is written; it is not one of the manifest's
// files, and setup removes it when it writes new keys.
//
// Layout (little-endian):
//
//	0     magic "CUZKPTS\x00", version uint32, points a checksum block uint32
//	16    the key set's content hash (Manifest.Hash, 32 bytes)
//	48    domain uint64, sections uint32 (5), zero uint32
//	64    5 sections of 32 bytes: name [8]byte, points uint64, bytes a point
//	      uint64, offset uint64; in the dump's order A, B, Z, K, G2 B
//	224   offset of the checksums uint64, blocks uint64
//	240   CRC-32C of bytes [0, 240) uint32; zeros to 4096
//	4096  the sections, each on a 4096-byte boundary: the points' bytes as
//	      gnark-crypto holds them in memory (Montgomery form, 64-bit limbs),
//	      as the dump has them, Z in natural order
//	then  the CRC-32C of each block of a section's points (the last of a
//	      section shorter), section by section, and the CRC-32C of those
//
// Every block is checked as it is read, so a corrupt file is found out on
// the read that would use it, without a pass over the whole file first.

// PointsFileName is the points file in a key directory.
const PointsFileName = "proving.points"

const (
	pointsMagic      = "CUZKPTS\x00"
	pointsVersion    = 1
	pointsHeader     = 4096
	pointsAlign      = 4096
	pointsHeaderUsed = 240
	// defaultBlockPoints is the points a checksum covers: as many as the
	// smallest MSM chunk (gpuprove.MinChunkPoints), so that every chunk of
	// a streamed MSM is whole blocks.
	defaultBlockPoints = 1 << 16
	// pointReaders read a chunk's blocks at once: more requests in flight
	// than one pread keeps an NVMe drive busier.
	pointReaders = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sectionNames are the points file's sections in its order (the dump's).
var sectionNames = [...]string{"A", "B", "Z", "K", "G2 B"}

// PointCounts are the points of each of a proving key's vectors.
type PointCounts struct {
	A, B, Z, K, G2B int
}

// Bytes is the points' bytes: the G1 vectors, and G2 B when g2.
func (c PointCounts) Bytes(g2 bool) int64 {
	b := int64(c.A+c.B+c.Z+c.K) * 96
	if g2 {
		b += int64(c.G2B) * 192
	}
	return b
}

// Counts are the points of each of k's vectors: the points file's when the
// keys were loaded without their points, else the proving key's slices.
func (k *Keys) Counts() PointCounts {
	if k.Points != nil {
		return k.Points.Counts()
	}
	pk := k.PK
	return PointCounts{A: len(pk.G1.A), B: len(pk.G1.B), Z: len(pk.G1.Z), K: len(pk.G1.K), G2B: len(pk.G2.B)}
}

// ReadPointCounts reads how many points each vector of the proving key in
// the key directory dir has, from the dump's counts (seeking past the
// points, unhashed): what loading them would take, to decide beforehand
// whether to. A directory without keys is ErrNoKeys.
func ReadPointCounts(dir string) (counts PointCounts, err error) {
	if _, err := ReadManifest(dir); err != nil {
		return counts, err
	}
	path := filepath.Join(dir, pkFile)
	f, err := os.Open(path)
	if err != nil {
		return counts, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	in, err := newDumpInput(f, nil)
	if err != nil {
		return counts, fmt.Errorf("read %s: %w", path, err)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s is corrupt: %v", path, r)
		}
	}()
	var pk groth16bls.ProvingKey
	if err := readDump(in, &pk, func(s dumpSection, in *dumpInput) error {
		*map[string]*int{"A": &counts.A, "B": &counts.B, "Z": &counts.Z, "K": &counts.K, "G2 B": &counts.G2B}[s.name] = s.n
		return in.skip(s.bytes())
	}); err != nil {
		return counts, fmt.Errorf("%s: %w", path, err)
	}
	return counts, nil
}

// PointsInMemory says whether k's proving key holds its points (A, B, Z, K;
// G2 B may be kept either way).
func (k *Keys) PointsInMemory() bool { return k.Points == nil }

// Points is an open points file.
type Points struct {
	Path   string
	Hash   string // the key set's content hash
	Domain uint64
	// BlockPoints is the points one checksum covers.
	BlockPoints int
	Sections    [5]PointSection
	f           *os.File
}

// PointSection is one vector of points in the file.
type PointSection struct {
	Name   string
	N      int   // points
	Size   int   // bytes a point
	Offset int64 // of the first point in the file
	crcs   []uint32
}

// Bytes is the section's points' bytes.
func (s *PointSection) Bytes() int64 { return int64(s.N) * int64(s.Size) }

// Section is the section of the given name (A, B, Z, K, G2 B), or nil.
func (p *Points) Section(name string) *PointSection {
	for i := range p.Sections {
		if p.Sections[i].Name == name {
			return &p.Sections[i]
		}
	}
	return nil
}

// Counts are the points of each section.
func (p *Points) Counts() PointCounts {
	s := &p.Sections
	return PointCounts{A: s[0].N, B: s[1].N, Z: s[2].N, K: s[3].N, G2B: s[4].N}
}

// Close closes the file.
func (p *Points) Close() error { return p.f.Close() }

func align(n int64) int64 { return (n + pointsAlign - 1) &^ (pointsAlign - 1) }

// OpenPoints opens the points file at path and checks its header, its
// size and its table of checksums; hash, when not empty, is the content hash
// of the key set it must have been made from.
func OpenPoints(path, hash string) (*Points, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open points file: %w", err)
	}
	p, err := readPointsHeader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	if hash != "" && p.Hash != hash {
		f.Close()
		return nil, fmt.Errorf("%s was made from key set %s, not %s", path, short(p.Hash), short(hash))
	}
	p.f = f
	fadvise(f, 0, 0, unix.FADV_SEQUENTIAL)
	return p, nil
}

func readPointsHeader(f *os.File, path string) (*Points, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var h [pointsHeaderUsed + 4]byte
	if _, err := f.ReadAt(h[:], 0); err != nil {
		return nil, fmt.Errorf("%s is truncated: %d bytes, not even a header (%w)", path, st.Size(), err)
	}
	le := binary.LittleEndian
	if string(h[:8]) != pointsMagic {
		return nil, fmt.Errorf("%s is not a points file (magic %q)", path, h[:8])
	}
	if v := le.Uint32(h[8:]); v != pointsVersion {
		return nil, fmt.Errorf("%s: points file version %d, this cuzk reads version %d", path, v, pointsVersion)
	}
	if got, want := crc32.Checksum(h[:pointsHeaderUsed], castagnoli), le.Uint32(h[pointsHeaderUsed:]); got != want {
		return nil, fmt.Errorf("%s is corrupt: its header fails its checksum", path)
	}
	p := &Points{Path: path, BlockPoints: int(le.Uint32(h[12:])), Hash: hex.EncodeToString(h[16:48]), Domain: le.Uint64(h[48:])}
	if p.BlockPoints <= 0 || le.Uint32(h[56:]) != uint32(len(sectionNames)) {
		return nil, fmt.Errorf("%s is corrupt: %d points a block, %d sections", path, p.BlockPoints, le.Uint32(h[56:]))
	}
	end := int64(pointsHeader)
	var blocks uint64
	for i := range p.Sections {
		b := h[64+32*i:]
		name := string(bytes.TrimRight(b[:8], "\x00"))
		n, size, off := le.Uint64(b[8:]), le.Uint64(b[16:]), int64(le.Uint64(b[24:]))
		wantSize := uint64(96)
		if i == 4 {
			wantSize = 192
		}
		if name != sectionNames[i] || size != wantSize || off < end || off%pointsAlign != 0 || n > uint64(st.Size())/size {
			return nil, fmt.Errorf("%s is corrupt: section %d is %q, %d points of %d bytes at %d", path, i, name, n, size, off)
		}
		p.Sections[i] = PointSection{Name: name, N: int(n), Size: int(size), Offset: off}
		end = off + int64(n*size)
		blocks += (n + uint64(p.BlockPoints) - 1) / uint64(p.BlockPoints)
	}
	if z := p.Sections[2].N; p.Domain > 0 && uint64(z) != p.Domain-1 {
		return nil, fmt.Errorf("%s is corrupt: %d Z points for a domain of %d", path, z, p.Domain)
	}
	trailer, nb := int64(le.Uint64(h[224:])), le.Uint64(h[232:])
	if nb != blocks || trailer < end {
		return nil, fmt.Errorf("%s is corrupt: %d checksums at %d for %d blocks ending at %d", path, nb, trailer, blocks, end)
	}
	if want := trailer + 4*int64(nb) + 4; st.Size() != want {
		return nil, fmt.Errorf("%s is truncated or has been appended to: %d bytes, its header says %d", path, st.Size(), want)
	}
	tab := make([]byte, 4*nb+4)
	if _, err := f.ReadAt(tab, trailer); err != nil {
		return nil, fmt.Errorf("%s: read its checksums: %w", path, err)
	}
	if crc32.Checksum(tab[:4*nb], castagnoli) != le.Uint32(tab[4*nb:]) {
		return nil, fmt.Errorf("%s is corrupt: its table of checksums fails its own", path)
	}
	at := 0
	for i := range p.Sections {
		s := &p.Sections[i]
		k := (s.N + p.BlockPoints - 1) / p.BlockPoints
		s.crcs = make([]uint32, k)
		for j := range k {
			s.crcs[j] = le.Uint32(tab[4*(at+j):])
		}
		at += k
	}
	return p, nil
}

// PointStream reads one section of a points file, chunk after chunk, and
// checks every block it reads against its checksum. It is not safe for
// concurrent use: one MSM streams a section at a time.
type PointStream struct {
	p *Points
	s *PointSection
	// A block that the last read ended inside: where the next read must
	// start, and the checksum so far of the block's points before it.
	next    int
	partial uint32
}

// Stream returns a reader of the named section.
func (p *Points) Stream(name string) (*PointStream, error) {
	s := p.Section(name)
	if s == nil {
		return nil, fmt.Errorf("%s has no section %q", p.Path, name)
	}
	return &PointStream{p: p, s: s}, nil
}

// Section is the section the stream reads.
func (r *PointStream) Section() *PointSection { return r.s }

// Read fills dst with points [from, to) of the section and checks the
// checksums of the blocks it completes. A read starts at a block's first
// point, or where the previous read ended (a chunk smaller than a block):
// a block is checked once all of it has been read. It then drops those
// pages from the page cache: the stream's host memory is dst.
func (r *PointStream) Read(dst []byte, from, to int) error {
	s, block := r.s, r.p.BlockPoints
	if from < 0 || to > s.N || from > to || int64(len(dst)) < int64(to-from)*int64(s.Size) {
		return fmt.Errorf("%s: read of points [%d, %d) of section %s (%d points) into %d bytes", r.p.Path, from, to, s.Name, s.N, len(dst))
	}
	if from%block != 0 && from != r.next {
		return fmt.Errorf("%s: read of section %s from point %d, inside a block the stream did not read from its start", r.p.Path, s.Name, from)
	}
	size := int64(s.Size)
	type piece struct{ from, to int }
	var whole []piece
	// Blocks read in part go in order, through r's running checksum; whole
	// blocks are read and checked at once.
	partial := func(pc piece) error {
		buf := dst[int64(pc.from-from)*size : int64(pc.to-from)*size]
		if err := r.readAt(buf, pc.from); err != nil {
			return err
		}
		if pc.from%block == 0 {
			r.partial = 0
		}
		r.partial = crc32.Update(r.partial, castagnoli, buf)
		if b := pc.from / block; pc.to == min((b+1)*block, s.N) {
			return r.check(b, r.partial)
		}
		return nil
	}
	var tail *piece
	for at := from; at < to; {
		b := at / block
		end := min((b+1)*block, s.N)
		pc := piece{at, min(end, to)}
		switch {
		case at == b*block && pc.to == end:
			whole = append(whole, pc)
		case at == from:
			if err := partial(pc); err != nil {
				return err
			}
		default:
			tail = &pc
		}
		at = pc.to
	}
	var wg sync.WaitGroup
	errs := make([]error, len(whole))
	work := make(chan int, len(whole))
	for i := range whole {
		work <- i
	}
	close(work)
	for range min(pointReaders, len(whole)) {
		wg.Go(func() {
			for i := range work {
				pc := whole[i]
				buf := dst[int64(pc.from-from)*size : int64(pc.to-from)*size]
				if errs[i] = r.readAt(buf, pc.from); errs[i] == nil {
					errs[i] = r.check(pc.from/block, crc32.Checksum(buf, castagnoli))
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if tail != nil {
		if err := partial(*tail); err != nil {
			return err
		}
	}
	r.next = to
	fadvise(r.p.f, s.Offset+int64(from)*size, int64(to-from)*size, unix.FADV_DONTNEED)
	return nil
}

func (r *PointStream) readAt(buf []byte, from int) error {
	off := r.s.Offset + int64(from)*int64(r.s.Size)
	if _, err := r.p.f.ReadAt(buf, off); err != nil {
		return fmt.Errorf("read %s: section %s, %d bytes at %d: %w", r.p.Path, r.s.Name, len(buf), off, err)
	}
	return nil
}

func (r *PointStream) check(b int, got uint32) error {
	if got != r.s.crcs[b] {
		bp := r.p.BlockPoints
		return fmt.Errorf("%s is corrupt: section %s, block %d (points [%d, %d)) fails its checksum",
			r.p.Path, r.s.Name, b, b*bp, min((b+1)*bp, r.s.N))
	}
	return nil
}

// fadvise passes advice on a range of f to the kernel; it is only advice,
// and a file system that does not take it changes nothing.
func fadvise(f *os.File, off, n int64, advice int) {
	if c, err := f.SyscallConn(); err == nil {
		_ = c.Control(func(fd uintptr) { _ = unix.Fadvise(int(fd), off, n, advice) })
	}
}

// EnsurePoints opens the points file of the key directory dir, writing it
// from the proving key first when there is none. A points file that is
// there but does not check out (truncated, corrupt, another key set's) is
// an error that names it: it is not overwritten behind the user's back.
func EnsurePoints(dir string) (*Points, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, PointsFileName)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := writePoints(dir, m, defaultBlockPoints); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("points file: %w", err)
	}
	p, err := OpenPoints(path, m.Hash)
	if err != nil {
		return nil, fmt.Errorf("%w (remove it to have it written again from %s)", err, pkFile)
	}
	return p, nil
}

// writePoints writes dir's points file from its proving key, in one pass
// over proving.key (hashed, and refused unless the manifest's hash is its
// own) and a second over its Z points, bit-reversed in tiles
// (bitReverseCopy). It holds a block of points, a tile and the proving
// key's fields other than points, never the points: the file can be made
// on a host that could not load the key. It goes to a temporary file,
// renamed into place once complete.
func writePoints(dir string, m *Manifest, block int) (err error) {
	path := filepath.Join(dir, PointsFileName)
	src := filepath.Join(dir, pkFile)
	hash, err := hex.DecodeString(m.Hash)
	if err != nil || len(hash) != 32 {
		return fmt.Errorf("write %s: key hash %q is not a sha256", path, m.Hash)
	}
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer f.Close()
	out, err := os.CreateTemp(dir, ".proving.points-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			out.Close()
			os.Remove(out.Name())
		}
	}()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s is corrupt: %v", src, r)
			out.Close()
			os.Remove(out.Name())
		}
	}()
	h := sha256.New()
	in, err := newDumpInput(f, h)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	var secs [5]PointSection
	var zdump dumpSection
	at := int64(pointsHeader)
	buf := make([]byte, block*192)
	i := 0
	var pk groth16bls.ProvingKey
	derr := readDump(in, &pk, func(s dumpSection, in *dumpInput) error {
		ps := PointSection{Name: s.name, N: s.n, Size: s.size, Offset: at}
		if s.name == "Z" {
			zdump = s
			if err := in.skip(s.bytes()); err != nil {
				return err
			}
		} else {
			for from := 0; from < s.n; from += block {
				b := buf[:min(block, s.n-from)*s.size]
				if _, err := io.ReadFull(in, b); err != nil {
					return err
				}
				if _, err := out.WriteAt(b, at+int64(from)*int64(s.size)); err != nil {
					return fmt.Errorf("write %s: %w", path, err)
				}
				ps.crcs = append(ps.crcs, crc32.Checksum(b, castagnoli))
			}
		}
		secs[i] = ps
		i++
		at = align(at + s.bytes())
		return nil
	})
	if derr == nil {
		derr = in.drain()
	}
	if got, want := hex.EncodeToString(h.Sum(nil)), m.Files[pkFile]; got != want {
		return fmt.Errorf("%s is corrupt or was replaced: sha256 %s, manifest says %s", src, short(got), short(want))
	}
	if derr != nil {
		return fmt.Errorf("%s: %w", src, derr)
	}
	n := int(pk.Domain.Cardinality)
	logN := bits.Len(uint(n)) - 1
	if n < 1 || n&(n-1) != 0 || zdump.n != n-1 {
		return fmt.Errorf("%s: %d Z points for a domain of %d: want n−1", src, zdump.n, n)
	}
	z := &secs[2]
	if err := bitReverseCopy(f, zdump.offset, out, z.Offset, logN, z.N, z.Size); err != nil {
		return fmt.Errorf("write %s: Z: %w", path, err)
	}
	for from := 0; from < z.N; from += block {
		b := buf[:min(block, z.N-from)*z.Size]
		if _, err := out.ReadAt(b, z.Offset+int64(from)*int64(z.Size)); err != nil {
			return fmt.Errorf("write %s: read Z back: %w", path, err)
		}
		z.crcs = append(z.crcs, crc32.Checksum(b, castagnoli))
	}
	le := binary.LittleEndian
	var tab []byte
	for _, s := range secs {
		for _, c := range s.crcs {
			tab = le.AppendUint32(tab, c)
		}
	}
	blocks := len(tab) / 4
	tab = le.AppendUint32(tab, crc32.Checksum(tab, castagnoli))
	if _, err := out.WriteAt(tab, at); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	hdr := make([]byte, pointsHeader)
	copy(hdr, pointsMagic)
	le.PutUint32(hdr[8:], pointsVersion)
	le.PutUint32(hdr[12:], uint32(block))
	copy(hdr[16:48], hash)
	le.PutUint64(hdr[48:], uint64(n))
	le.PutUint32(hdr[56:], uint32(len(secs)))
	for i, s := range secs {
		b := hdr[64+32*i:]
		copy(b[:8], s.Name)
		le.PutUint64(b[8:], uint64(s.N))
		le.PutUint64(b[16:], uint64(s.Size))
		le.PutUint64(b[24:], uint64(s.Offset))
	}
	le.PutUint64(hdr[224:], uint64(at))
	le.PutUint64(hdr[232:], uint64(blocks))
	le.PutUint32(hdr[pointsHeaderUsed:], crc32.Checksum(hdr[:pointsHeaderUsed], castagnoli))
	if _, err := out.WriteAt(hdr, 0); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := out.Chmod(0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := out.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(out.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// bitReverseCopy writes count points of size bytes from src (at srcOff, in
// bit-reversed order over a domain of 2^logN, the last point, its own
// reversal, absent) to dst (at dstOff) in natural order: out[i] =
// in[rev(i)]. It works in tiles of 2^(2s) points, s ≤ 9 (24 MiB of G1
// points): write i = p·2^(logN−s) + q·2^s + r with p, r of s bits; then
// rev(i) = rev(r)·2^(logN−s) + rev(q)·2^s + rev(p), so for one q the tile's
// input is 2^s runs of 2^s contiguous points (one per r) and its output 2^s
// runs of 2^s contiguous points (one per p): reads and writes of 48 KiB
// instead of one seek a point.
func bitReverseCopy(src io.ReaderAt, srcOff int64, dst io.WriterAt, dstOff int64, logN, count, size int) error {
	s := min(9, logN/2)
	side, mid := 1<<s, logN-2*s
	rev := func(x, nbits int) int { return int(bits.Reverse64(uint64(x)) >> (64 - nbits) & (1<<nbits - 1)) }
	tile := make([]byte, side*side*size)
	run := make([]byte, side*size)
	for q := range 1 << mid {
		rq := rev(q, mid)
		for r := range side {
			j0 := rev(r, s)<<(logN-s) | rq<<s
			k := min(side, count-j0)
			if k <= 0 {
				continue
			}
			row := tile[r*side*size:]
			if _, err := src.ReadAt(row[:k*size], srcOff+int64(j0)*int64(size)); err != nil {
				return err
			}
		}
		for p := range side {
			i0 := p<<(logN-s) | q<<s
			k := min(side, count-i0)
			if k <= 0 {
				continue
			}
			col := rev(p, s)
			for r := range k {
				copy(run[r*size:(r+1)*size], tile[(r*side+col)*size:])
			}
			if _, err := dst.WriteAt(run[:k*size], dstOff+int64(i0)*int64(size)); err != nil {
				return err
			}
		}
	}
	return nil
}

// bytesOf is the memory of a slice of plain values (points) as bytes.
func bytesOf[T any](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(zero)))
}
