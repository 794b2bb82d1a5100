package hw

// CtxCache is the NIC's cache of connection contexts (QP, DCI and DCT
// state kept in ICM and cached on the adapter): set-associative with LRU
// replacement inside each set. Connections hash to sets, so as the active
// set grows past the capacity some sets overflow first and the miss rate
// climbs gradually, the shape Fig. 10 shows, instead of falling off a cliff.
type CtxCache struct {
	ways  int
	sets  uint32
	slots []int32 // sets × ways, most recent first; -1 empty
	// Counters.
	Hits, Misses int64
}

// NewCtxCache returns a cache of about entries contexts in sets of ways.
func NewCtxCache(entries, ways int) *CtxCache {
	ways = max(1, ways)
	sets := ctxSets(entries, ways)
	c := &CtxCache{ways: ways, sets: uint32(sets), slots: make([]int32, sets*ways)}
	for i := range c.slots {
		c.slots[i] = -1
	}
	return c
}

// set is the set key hashes to.
func (c *CtxCache) set(key int32) int { return setOf(key, c.sets) }

func setOf(key int32, sets uint32) int {
	h := uint32(key) * 2654435761
	return int((h ^ h>>16) % sets)
}

func ctxSets(entries, ways int) int { return max(1, (entries+ways/2)/ways) }

// Touch looks key up, inserting it on a miss, and reports a hit. A context
// that finds a free way was never evicted: it is loaded as the connection
// was set up (and the workload's warm-up iterations keep it there), so only
// capacity misses, contexts evicted by others, cost a fetch.
func (c *CtxCache) Touch(key int32) bool {
	set := c.set(key)
	s := c.slots[set*c.ways : (set+1)*c.ways]
	for i, k := range s {
		if k == key {
			copy(s[1:i+1], s[:i])
			s[0] = key
			c.Hits++
			return true
		}
	}
	free := s[len(s)-1] == -1
	copy(s[1:], s[:len(s)-1])
	s[0] = key
	if free {
		c.Hits++
		return true
	}
	c.Misses++
	return false
}
