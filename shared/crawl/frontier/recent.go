package frontier

import "sync"

// recentSet is the exact set of the keys of the URLs the table confirmed last, bounded: once it
// holds its capacity, each key added evicts the oldest one. It holds no pointers (a map from a
// fixed-size key to the count of adds at its add, and a ring of the keys in their order), so the
// collector never scans it. It replaced hashicorp/golang-lru, whose list of 100,000 keys was a third
// of a 100,000-page crawl's live heap, 132 bytes a key, all of it scanned at every collection:
// without it such a crawl spent half the collector's CPU (gctrace) and 7.6% less CPU in all
// (docs/bench-history.md, round twenty-one). Its eviction is by age alone, as the LRU's was in effect: the
// frontier looks with Contains, which never made a key younger, and adds a key once the table has
// confirmed it, that is when the set did not hold it.
type recentSet struct {
	mu   sync.Mutex
	at   map[recentKey]uint64
	ring []recentKey
	max  int
	adds uint64
}

func newRecentSet(capacity int) *recentSet {
	return &recentSet{at: map[recentKey]uint64{}, max: max(capacity, 1)}
}

// Contains reports whether k is in the set.
func (s *recentSet) Contains(k recentKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.at[k]
	return ok
}

// Add puts k in the set, as its newest key, unless it is there already (it keeps its place).
func (s *recentSet) Add(k recentKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.at[k]; ok {
		return
	}
	if len(s.ring) < s.max {
		s.ring = append(s.ring, k)
	} else {
		i := s.adds % uint64(s.max)
		// The oldest add's key goes, unless it was removed since (and maybe added again later).
		if n, ok := s.at[s.ring[i]]; ok && n == s.adds-uint64(s.max) {
			delete(s.at, s.ring[i])
		}
		s.ring[i] = k
	}
	s.at[k] = s.adds
	s.adds++
}

// Remove takes k out of the set.
func (s *recentSet) Remove(k recentKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.at, k)
}
