package frontier

import (
	"math/rand/v2"
	"sync"
	"testing"
)

func testKey(i int) recentKey { return recentKey{byte(i), byte(i >> 8)} }

// TestRecentSetKeepsTheLastAddsAsAModelDoes runs random adds, removes and looks against a model
// that keeps the whole history: a key is in the set when one of the last capacity adds (adds of
// a key already in the set do not count) added it and no remove came after.
func TestRecentSetKeepsTheLastAddsAsAModelDoes(t *testing.T) {
	for _, capacity := range []int{1, 2, 7, 64} {
		s := newRecentSet(capacity)
		var adds []recentKey                // the adds that counted, in order
		removedAfter := map[recentKey]int{} // key -> len(adds) at its last remove
		in := func(k recentKey) bool {
			for i := len(adds) - 1; i >= max(len(adds)-capacity, 0); i-- {
				if adds[i] == k {
					r, ok := removedAfter[k]
					return !ok || r <= i
				}
			}
			return false
		}
		rng := rand.New(rand.NewPCG(1, uint64(capacity)))
		for op := range 20_000 {
			k := testKey(rng.IntN(3 * capacity))
			switch rng.IntN(3) {
			case 0:
				if !in(k) {
					adds = append(adds, k)
				}
				s.Add(k)
			case 1:
				removedAfter[k] = len(adds)
				s.Remove(k)
			}
			if got, want := s.Contains(k), in(k); got != want {
				t.Fatalf("capacity %d, op %d: Contains(%v) = %v, the model says %v", capacity, op, k[:2], got, want)
			}
			if len(s.at) > capacity {
				t.Fatalf("capacity %d, op %d: %d keys held", capacity, op, len(s.at))
			}
		}
	}
}

// TestRecentSetEvictsInTheOrderOfAdds: a key added again while in the set keeps its place, as
// none of the frontier's adds of a key it holds should make it younger.
func TestRecentSetEvictsInTheOrderOfAdds(t *testing.T) {
	s := newRecentSet(3)
	for i := 1; i <= 3; i++ {
		s.Add(testKey(i))
	}
	s.Add(testKey(1)) // held already: no change
	s.Add(testKey(4)) // evicts 1, the oldest
	for i, want := range map[int]bool{1: false, 2: true, 3: true, 4: true} {
		if s.Contains(testKey(i)) != want {
			t.Errorf("Contains(%d) = %v, want %v", i, !want, want)
		}
	}
	s.Remove(testKey(2))
	s.Add(testKey(2)) // back as the newest: the slot it takes held its own removed add, so it evicts none
	s.Add(testKey(5)) // evicts 3, now the oldest
	for i, want := range map[int]bool{2: true, 3: false, 4: true, 5: true} {
		if s.Contains(testKey(i)) != want {
			t.Errorf("after the remove: Contains(%d) = %v, want %v", i, !want, want)
		}
	}
}

// TestRecentSetIsSafeForConcurrentUse: the admissions of a message run at once (go test -race).
func TestRecentSetIsSafeForConcurrentUse(t *testing.T) {
	s := newRecentSet(100)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1_000 {
				k := testKey(g*1_000 + i)
				s.Add(k)
				if i%3 == 0 {
					s.Remove(k)
				}
				s.Contains(testKey(i))
			}
		})
	}
	wg.Wait()
	if len(s.at) > 100 {
		t.Fatalf("%d keys held, capacity 100", len(s.at))
	}
}
