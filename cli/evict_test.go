package cli

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cuzk/cuzk/metrics"
	"github.com/cuzk/cuzk/prover"
)

// holdingBackend keeps keys on two devices; they go idle after a while.
type holdingBackend struct {
	prover.CPU
	mu       sync.Mutex
	resident map[int]int64
	idleAt   time.Time
	calls    int
}

func (b *holdingBackend) Devices() []int { return []int{0, 1} }

func (b *holdingBackend) Resident(i int) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.resident[i]
}

func (b *holdingBackend) EvictIdleOn(i int, idle time.Duration) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls++
	if time.Since(b.idleAt) < idle {
		return 0, nil
	}
	freed := b.resident[i]
	b.resident[i] = 0
	return freed, nil
}

func (b *holdingBackend) Pinned() int64 { return 1 << 20 }

func (b *holdingBackend) Held(i int) prover.Held { return prover.Held{Keys: b.Resident(i)} }

func (b *holdingBackend) Preload(*prover.Keys) error            { return nil }
func (b *holdingBackend) ReservePinned(*prover.Keys, int) error { return nil }
func (b *holdingBackend) DevicePlan(int, *prover.Keys) (prover.DevicePlan, error) {
	return nil, errors.New("no plan")
}

// Keys on the devices show in the metrics; once idle long enough they are
// evicted, and the metrics say so.
func TestIdleKeysAreEvictedAndReported(t *testing.T) {
	b := &holdingBackend{resident: map[int]int64{0: 3 << 30, 1: 2 << 30}, idleAt: time.Now()}
	m := metrics.New()
	reportKeys(b, m)
	s := m.Summary()
	if len(s.Devices) != 2 || s.Devices[0].Keys != 3<<30 || s.Devices[1].Keys != 2<<30 {
		t.Fatalf("resident keys in the summary: %+v", s.Devices)
	}
	var mu sync.Mutex
	logged := map[int]int64{}
	stop := evictIdleKeys(b, m, 50*time.Millisecond, func(d int, freed int64, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			t.Errorf("device %d: %v", d, err)
		}
		logged[d] += freed
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		s = m.Summary()
		if s.Devices[0].Evicted == 3<<30 && s.Devices[1].Evicted == 2<<30 && s.Devices[0].Keys == 0 && s.Devices[1].Keys == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys not evicted: %+v", s.Devices)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	if logged[0] != 3<<30 || logged[1] != 2<<30 {
		t.Errorf("logged evictions %v", logged)
	}
	// Nothing is evicted with eviction off, and the CPU backend holds no keys.
	evictIdleKeys(b, m, 0, nil)()
	evictIdleKeys(prover.CPU{}, m, time.Millisecond, nil)()
	reportKeys(prover.CPU{}, metrics.New())
}
