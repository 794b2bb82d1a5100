package moe

// combineCheck checks LL combine's tokens on a goroutine of its own: that
// each came back once and before its expert's flag, and that the weighted
// sums of every token's expert outputs are right. None of it feeds the
// phase's timing, so it need not hold up the simulation: the simulation
// logs each delivery (8 bytes) and the goroutine replays the log in
// delivery order, so the checks see what they saw inline and each
// token's terms are added in the order they arrived. It starts once a core
// is idle: when free is closed, as the other phase is done with its core
// (at once when the phases run in turn), or when combine's own simulation
// ends, so that on two cores it takes an idle one instead of a share of
// two busy ones.
type combineCheck struct {
	chunk []uint64 // being filled, see logFlag and logToken
	full  chan []uint64
	spare chan []uint64
	ended chan struct{} // the simulation's
	done  chan struct{}
	probs problemList
	// partial is set, before wait, when the phase failed under faults:
	// the tokens it never sent back and the sums they leave short are
	// not problems then.
	partial bool
}

// checkChunk is the deliveries handed over at a time: large enough that the
// channel is no cost, small enough that a few spare ones recycle.
const checkChunk = 1 << 14

// logFlagBit marks a flag's entry (its index expert·R + destination); a
// token's entry is destination<<32 | message.
const logFlagBit = 1 << 63

// newCombineCheck starts the check of a layer's combine over routing.
func newCombineCheck(l *LLLayout, routing *Routing, free <-chan struct{}) *combineCheck {
	// A correct transport delivers each token and each flag once: the
	// channel holds the whole log (see hand for one that does not).
	n := (len(l.Msgs)+l.Shape.Physical()*l.Shape.Ranks)/checkChunk + 2
	c := &combineCheck{
		chunk: make([]uint64, 0, checkChunk),
		full:  make(chan []uint64, n),
		spare: make(chan []uint64, 4),
		ended: make(chan struct{}),
		done:  make(chan struct{}),
	}
	ended := c.ended
	go func() {
		defer close(c.done)
		select {
		case <-free:
		case <-ended:
		}
		c.replay(l, routing)
	}()
	return c
}

func (c *combineCheck) replay(l *LLLayout, routing *Routing) {
	s := l.Shape
	R, k, nl := s.Ranks, s.TopK, s.LocalExperts()
	flags := make([]uint64, (s.Physical()*R+63)/64)
	seen := make([]bool, len(l.Msgs))
	out := make([][]float64, R)
	for r := range R {
		out[r] = make([]float64, routing.Tokens[r])
	}
	for ch := range c.full {
		for _, v := range ch {
			if v&logFlagBit != 0 {
				f := v &^ logFlagBit
				flags[f/64] |= 1 << (f % 64)
				continue
			}
			dst, tag := int(v>>32), uint32(v)
			m := &l.Msgs[tag]
			ex := int(m.DstRank)*nl + int(m.LocalExpert)
			if f := ex*R + dst; flags[f/64]&(1<<(f%64)) != 0 {
				c.probs.add("combine: token %d of rank %d came back from expert %d after the expert's flag", m.Token, dst, ex)
			}
			if seen[tag] {
				c.probs.add("combine: token %d of rank %d came back from expert %d twice", m.Token, dst, ex)
				continue
			}
			seen[tag] = true
			w := routing.Weights[dst][int(m.Token)*k+int(m.Slot)]
			out[dst][m.Token] += float64(w) * ExpertOutput(dst, int(m.Token), s.LogicalOf(ex))
		}
		select {
		case c.spare <- ch[:0]:
		default:
		}
	}
	if c.partial {
		return
	}
	for i, ok := range seen {
		if !ok {
			m := l.Msgs[i]
			c.probs.add("combine: the output of token %d (slot %d) from expert %d never came back", m.Token, m.Slot, m.Expert(s))
		}
	}
	for r := range R {
		c.probs.addErr(routing.CheckCombine(r, out[r]))
	}
}

// logFlag logs the delivery of flag f, expert·R + destination.
func (c *combineCheck) logFlag(f int64) { c.log(logFlagBit | uint64(f)) }

// logToken logs message msg's delivery back to rank dst.
func (c *combineCheck) logToken(dst int, msg int64) { c.log(uint64(dst)<<32 | uint64(msg)) }

func (c *combineCheck) log(v uint64) {
	c.chunk = append(c.chunk, v)
	if len(c.chunk) == checkChunk {
		c.hand()
	}
}

// hand passes the chunk on. A correct transport fills at most the
// channel's capacity; one that delivers tokens twice may fill it, and
// then the simulation waits for the replay rather than lose an entry.
func (c *combineCheck) hand() {
	select {
	case c.full <- c.chunk:
	default:
		c.start() // the replay must drain the channel
		c.full <- c.chunk
	}
	select {
	case c.chunk = <-c.spare:
	default:
		c.chunk = make([]uint64, 0, checkChunk)
	}
}

// start lets the replay start if it has not.
func (c *combineCheck) start() {
	if c.ended != nil {
		close(c.ended)
		c.ended = nil
	}
}

// wait hands over the last deliveries and returns the problems the replay
// found once it has checked them all.
func (c *combineCheck) wait() *problemList {
	c.start()
	if len(c.chunk) > 0 {
		c.full <- c.chunk
	}
	c.chunk = nil
	close(c.full)
	<-c.done
	return &c.probs
}
