package sim

import "math/bits"

// runQueue is the current slot's events in (time, sequence) order, held in
// the wheel's own blocks: runB[rh] is the head block, rb its items, of
// which rb[ri:rn] are pending. A slot becomes the run where it lies and is
// sorted there, so a burst of millions of events at one instant (every
// rank's doorbells, say) is never copied into an array as large beside the
// blocks that held it, and each block goes back to the pool as soon as it
// has run. Events scheduled into the current slot no earlier than the
// run's last join its tail.
type runQueue struct {
	runB   []int32
	rh     int
	rb     *[blockLen]item
	rbi    int32 // rb's block index
	ri, rn int
}

// shortRun is the most events sorted through the scratch array (1.5 MiB
// of it); a longer unsorted slot is split by time across blocks instead.
const shortRun = 1 << 16

// digitBits is how many bits of time one split of a long slot uses.
const digitBits = 8

// runHead makes runB[i] the head block, or leaves the run empty past its
// end.
func (e *Engine) runHead(i int) {
	e.rh, e.ri = i, 0
	if i < len(e.runB) {
		b := e.runB[i]
		e.rb, e.rbi, e.rn = e.blocks[b], b, int(e.blockN[b])
		return
	}
	e.rb, e.rbi, e.rn = nil, -1, 0
}

// runNext moves past a drained head block: to the next block, freeing this
// one, or, when it was the last, keeps it empty for the next appends.
func (e *Engine) runNext() {
	if e.rh+1 < len(e.runB) {
		e.freeBlock(e.runB[e.rh])
		e.runHead(e.rh + 1)
		if e.rh >= 1024 && 2*e.rh >= len(e.runB) {
			// A run that keeps receiving as it drains never empties:
			// drop its consumed entries rather than let them pile up.
			e.runB = e.runB[:copy(e.runB, e.runB[e.rh:])]
			e.rh = 0
		}
		return
	}
	b := e.runB[e.rh]
	e.runB = append(e.runB[:0], b)
	e.rh = 0
	e.blockN[b] = 0
	e.ri, e.rn = 0, 0
}

// runPush puts it after the run's last event, starting a block when the
// tail is full.
func (e *Engine) runPush(it item) {
	k := len(e.runB)
	if k == 0 || e.blockN[e.runB[k-1]] == blockLen {
		e.runB = append(e.runB, e.newBlock())
		k++
	}
	b := e.runB[k-1]
	*e.item(b, e.blockN[b]) = it
	e.blockN[b]++
	if e.blocks[b] == e.rb {
		e.rn++
	}
}

// runAppend puts it last in the run if no event there is later, and
// reports whether it did.
func (e *Engine) runAppend(it item) bool {
	if e.rh == len(e.runB)-1 && e.rn < blockLen {
		// The common case, a run of one block with room.
		if e.rn > 0 && it.at < e.rb[e.rn-1].at {
			return false
		}
		e.rb[e.rn] = it
		e.rn++
		e.blockN[e.rbi]++
		return true
	}
	if k := len(e.runB); k > 0 {
		b := e.runB[k-1]
		if n := e.blockN[b]; n > 0 && it.at < e.item(b, n-1).at {
			return false
		}
		e.runPush(it)
		return true
	}
	e.runPush(it)
	e.runHead(0)
	return true
}

// dropRun frees the run's blocks, pending events and all.
func (e *Engine) dropRun() {
	for _, b := range e.runB[e.rh:] {
		e.freeBlock(b)
	}
	e.runB = e.runB[:0]
	e.runHead(0)
}

func (e *Engine) freeBlock(b int32) {
	e.blockN[b] = 0
	e.freeBlk = append(e.freeBlk, b)
}

// runPending counts the run's pending events.
func (e *Engine) runPending() int {
	n := e.rn - e.ri
	if e.rh < len(e.runB) {
		for _, b := range e.runB[e.rh+1:] {
			n += int(e.blockN[b])
		}
	}
	return n
}

// runEach calls f on each pending event of the run, in order.
func (e *Engine) runEach(f func(*item)) {
	for i := e.ri; i < e.rn; i++ {
		f(&e.rb[i])
	}
	if e.rh < len(e.runB) {
		for _, b := range e.runB[e.rh+1:] {
			for i := range e.blockN[b] {
				f(&e.blocks[b][i])
			}
		}
	}
}

// sortRun sorts the n events in runB by time, stably: they are in schedule
// order, so the result is in (time, sequence) order.
func (e *Engine) sortRun(n int) {
	lo, hi, sorted := e.span(e.runB)
	switch {
	case sorted:
	case n <= shortRun:
		e.sortShort(e.runB, n)
	default:
		e.runB = e.sortLong(e.runB, lo, hi, make([]int32, 0, len(e.runB)+1<<digitBits))
	}
}

// span is the earliest and latest time of the events in list, and
// whether they are in time order.
func (e *Engine) span(list []int32) (lo, hi Time, sorted bool) {
	lo, hi, sorted = Never, 0, true
	for _, b := range list {
		for _, it := range e.blocks[b][:e.blockN[b]] {
			sorted = sorted && it.at >= hi
			lo, hi = min(lo, it.at), max(hi, it.at)
		}
	}
	return lo, hi, sorted
}

// sortShort sorts list's n events, all of one slot, in their blocks: an
// insertion sort for a few, else two passes of a counting sort on the low
// slotShift bits of their times (the others are the slot's). A single
// block is sorted where it is, several through the scratch array.
func (e *Engine) sortShort(list []int32, n int) {
	if cap(e.tmp) < 2*n {
		e.tmp = make([]item, 2*n)
	}
	var src []item
	if len(list) == 1 {
		src = e.blocks[list[0]][:n]
	} else {
		src = e.tmp[n : 2*n]
		k := 0
		for _, b := range list {
			k += copy(src[k:], e.blocks[b][:e.blockN[b]])
		}
	}
	if n <= 64 {
		for i := 1; i < n; i++ {
			x := src[i]
			j := i
			for ; j > 0 && x.at < src[j-1].at; j-- {
				src[j] = src[j-1]
			}
			src[j] = x
		}
	} else {
		const lo = slotShift / 2
		radixPass(src, e.tmp[:n], 0, lo)
		radixPass(e.tmp[:n], src, lo, slotShift-lo)
	}
	if len(list) > 1 {
		k := 0
		for _, b := range list {
			k += copy(e.blocks[b][:e.blockN[b]], src[k:])
		}
	}
}

// sortLong sorts list's events, too many for the scratch array and
// spanning lo to hi (lo < hi), by splitting them stably on the top
// digitBits bits of that span into buckets of fresh blocks, freeing each
// source block once read, then sorting each bucket that is out of order
// the same way or, once short, with sortShort. It appends the sorted
// blocks to out. A slot spans at most slotShift bits of time, so this
// recurses at most three deep, and the blocks in use never exceed the
// source's by more than a partial block per bucket.
func (e *Engine) sortLong(list []int32, lo, hi Time, out []int32) []int32 {
	shift := uint(max(0, bits.Len64(uint64(hi-lo))-digitBits))
	var bucket [1 << digitBits][]int32
	type stats struct {
		tail     *[blockLen]item // the bucket's last block, n events in it
		n, all   int
		lo, hi   Time
		unsorted bool
	}
	var st [1 << digitBits]stats
	for _, b := range list {
		for _, it := range e.blocks[b][:e.blockN[b]] {
			k := (it.at - lo) >> shift
			s := &st[k]
			if s.tail == nil || s.n == blockLen {
				if s.tail != nil {
					e.blockN[bucket[k][len(bucket[k])-1]] = blockLen
				}
				nb := e.newBlock()
				bucket[k] = append(bucket[k], nb)
				s.tail, s.n = e.blocks[nb], 0
			}
			s.tail[s.n] = it
			s.n++
			if s.all == 0 {
				s.lo, s.hi = it.at, it.at
			}
			// In order so far, the last event is the latest.
			s.unsorted = s.unsorted || it.at < s.hi
			s.lo, s.hi = min(s.lo, it.at), max(s.hi, it.at)
			s.all++
		}
		e.freeBlock(b)
	}
	for k, l := range bucket {
		if len(l) > 0 {
			e.blockN[l[len(l)-1]] = int32(st[k].n)
		}
	}
	for k, l := range bucket {
		s := &st[k]
		switch {
		case s.all == 0:
			continue
		case !s.unsorted:
		case s.all > shortRun:
			out = e.sortLong(l, s.lo, s.hi, out)
			continue
		default:
			e.sortShort(l, s.all)
		}
		out = append(out, l...)
	}
	return out
}

// radixPass stably moves src into dst ordered by bits [shift, shift+bits)
// of the time.
func radixPass(src, dst []item, shift, bits uint) {
	var count [1 << (slotShift - slotShift/2)]int
	mask := Time(1)<<bits - 1
	for i := range src {
		count[src[i].at>>shift&mask]++
	}
	sum := 0
	for i := range count[:1<<bits] {
		sum, count[i] = sum+count[i], sum
	}
	for i := range src {
		k := src[i].at >> shift & mask
		dst[count[k]] = src[i]
		count[k]++
	}
}
