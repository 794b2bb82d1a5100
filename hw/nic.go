package hw

import (
	"fmt"
	"math"
	"slices"
	"unsafe"

	"moebench/internal/prefetch"
	"moebench/profile"
	"moebench/sim"
)

// NICParams are the NIC, PCIe, link and fabric constants resolved from a
// profile.
type NICParams struct {
	MMIO          sim.Time // SM doorbell store to the NIC
	DMARead       sim.Time // WQE fetch / pointer-payload read round trip
	DMAWrite      sim.Time // NIC write into GPU memory until observable
	PCIeBytesPerP float64  // PCIe bytes per picosecond
	Doorbell      sim.Time // per-QP doorbell handling
	WQE           sim.Time // per-QP per-WQE processing
	BBFetch       sim.Time // extra per additional 64 B basic block
	MsgSlot       sim.Time // NIC-wide: one message per slot
	Tx, Rx, Ack   sim.Time
	MaxFetch      int
	LinkBytesPerP float64 // payload+header bytes per picosecond on one link (a plane's share of the port)
	MTU           int
	PktOverhead   int
	Fabric        sim.Time
	RxSlot        sim.Time // pipeline time of one received message
	ConnMiss      sim.Time // fetch of a connection context from host memory
	ConnEntries   int
	ConnWays      int
	PortBuffer    sim.Time // switch buffering per egress port, as time at line rate
	DCSwitch      sim.Time // a DCI changing destination
	DCTarget      sim.Time // responder DCT work per DC message
	// The native engine's emulated NIC, when EmuEngines > 0: warps on
	// reserved SMs, each serially serving a fixed share of the queues of
	// the EmuRanksPerGPU ranks on its GPU. A WQE costs its queue's fetch
	// (GPU or host memory), then a copy (EmuCopy + bytes at EmuWarpBpp) or
	// an atomic (EmuAtomic); it is visible Fabric later.
	EmuEngines     int
	EmuRanksPerGPU int
	EmuPoll        sim.Time
	EmuCopy        sim.Time
	EmuAtomic      sim.Time
	EmuWarpBpp     float64
	// A visit (up to EmuBurst WQEs of one queue) also costs the engine
	// its first read and the consumer index it publishes: EmuDrain for
	// queues in GPU memory, EmuHostDrain for queues in host memory.
	EmuDrain, EmuHostDrain sim.Time
	// The engines' copies share their SM's bandwidth (EmuSMBpp); engines
	// alternate over the NIC's SMs, 32 to an SM.
	EmuSMBpp float64
	Topo     Topology
}

// Topology is the fabric beyond one switch (topo.* in the profile). The
// zero value, like Tiers 1 with one GPU per NIC, is one non-blocking
// switch.
type Topology struct {
	Tiers      int
	GPUsPerNIC int
	// A GPU's own NICs and each NIC's planes: NICsPerGPU × PlanesPerNIC
	// links per rank, each on its own rail (see Links).
	NICsPerGPU   int
	PlanesPerNIC int
	LeafRadix    int
	Oversub      float64
	Hop          sim.Time // each switch traversal beyond the first
	HopBuffer    sim.Time // buffering of one uplink or spine downlink, as time at line rate
	Adaptive     bool     // adaptive routing instead of static ECMP
}

// Ports splits a leaf's radix into NIC downlinks and spine uplinks.
func (t Topology) Ports() (down, up int) {
	o := max(1, t.Oversub)
	down = max(1, int(float64(t.LeafRadix)*o/(o+1)))
	up = max(1, int(float64(down)/o))
	return down, up
}

// NICs is how many NICs of its own a rank has.
func (t Topology) NICs() int { return max(1, t.NICsPerGPU) }

// Links is how many links a rank sends and receives on: a port per plane
// of each of its NICs. A message on queue q takes link q mod Links at
// both ends (queues striped over NICs and planes, as NCCL and DeepEP
// spread channels and QPs), which belongs to NIC q mod NICs.
func (t Topology) Links() int { return t.NICs() * max(1, t.PlanesPerNIC) }

// Validate refuses a topology that cannot be built: GPUs sharing a NIC and
// a GPU with several NICs of its own at once.
func (t Topology) Validate() error {
	if t.GPUsPerNIC > 1 && t.NICsPerGPU > 1 {
		return fmt.Errorf("topo.gpus_per_nic %d and topo.nics_per_gpu %d: GPUs share a NIC or a GPU has several, not both (set one of them to 1)", t.GPUsPerNIC, t.NICsPerGPU)
	}
	return nil
}

// QueuesPerNIC is how many of perRank send queues of each rank one NIC
// holds at most: a rank's queues striped over its NICs, and the queues of
// every rank sharing a NIC.
func (t Topology) QueuesPerNIC(perRank int) int {
	n := t.NICs()
	return (perRank + n - 1) / n * max(1, t.GPUsPerNIC)
}

// NewNICParams resolves the NIC constants of p. Its topology may be one
// that cannot be built (see Topology.Validate).
func NewNICParams(p *profile.Profile) NICParams { return NICParamsOf(p.NIC()) }

// NICParamsOf is the NIC of s on the engine's clock.
func NICParamsOf(s profile.NICSpec) NICParams {
	// A plane is a link of its own at its share of the port's rate; its
	// switch port buffers as much as any.
	rate := s.LinkBytesPerNs / 1000 / max(1, s.Topo.PlanesPerNIC)
	return NICParams{
		MMIO:           sim.Ns(s.MMIONs),
		DMARead:        sim.Ns(s.DMAReadNs),
		DMAWrite:       sim.Ns(s.DMAWriteNs),
		PCIeBytesPerP:  s.PCIeBytesPerNs / 1000,
		Doorbell:       sim.Ns(s.DoorbellNs),
		WQE:            sim.Ns(s.WQENs),
		BBFetch:        sim.Ns(s.BBFetchNs),
		MsgSlot:        sim.Ns(s.MsgNs),
		Tx:             sim.Ns(s.TxNs),
		Rx:             sim.Ns(s.RxNs),
		Ack:            sim.Ns(s.AckNs),
		MaxFetch:       s.MaxFetchWQEs,
		LinkBytesPerP:  rate,
		MTU:            s.MTU,
		PktOverhead:    s.PktOverhead,
		Fabric:         sim.Ns(s.FabricNs),
		RxSlot:         sim.Ns(s.RxSlotNs),
		ConnMiss:       sim.Ns(s.ConnMissNs),
		ConnEntries:    s.ConnEntries,
		ConnWays:       s.ConnWays,
		PortBuffer:     sim.Time(s.PortBufferBytes / rate),
		DCSwitch:       sim.Ns(s.DCSwitchNs),
		DCTarget:       sim.Ns(s.DCTargetNs),
		EmuEngines:     s.Emu.Engines,
		EmuRanksPerGPU: max(1, s.Emu.RanksPerGPU),
		EmuPoll:        sim.Ns(s.Emu.PollNs),
		EmuCopy:        sim.Ns(s.Emu.CopyNs),
		EmuAtomic:      sim.Ns(s.Emu.AtomicNs),
		EmuWarpBpp:     s.Emu.WarpBytesPerNs / 1000,
		EmuDrain:       sim.Ns(s.Emu.DrainNs),
		EmuHostDrain:   sim.Ns(s.Emu.HostDrainNs),
		EmuSMBpp:       s.Emu.SMBytesPerNs / 1000,
		Topo: Topology{
			Tiers:        s.Topo.Tiers,
			GPUsPerNIC:   s.Topo.GPUsPerNIC,
			NICsPerGPU:   s.Topo.NICsPerGPU,
			PlanesPerNIC: int(s.Topo.PlanesPerNIC),
			LeafRadix:    s.Topo.LeafRadix,
			Oversub:      s.Topo.Oversub,
			Hop:          sim.Ns(s.Topo.HopNs),
			HopBuffer:    sim.Time(s.Topo.HopBufferBytes / rate),
			Adaptive:     s.Topo.Adaptive,
		},
	}
}

// WireTime is how long bytes of payload occupy the link, headers included.
func (p *NICParams) WireTime(bytes int) sim.Time {
	pkts := max(1, (bytes+p.MTU-1)/p.MTU)
	return sim.Time(math.Ceil(float64(bytes+pkts*p.PktOverhead) / p.LinkBytesPerP))
}

// PCIeTime is how long bytes take over the NIC's PCIe link.
func (p *NICParams) PCIeTime(bytes int) sim.Time {
	return sim.Time(math.Ceil(float64(bytes) / p.PCIeBytesPerP))
}

// Sink receives the NIC's reports. Both calls run at the reported time;
// m is valid only during the call.
type Sink interface {
	Delivered(e *sim.Engine, nic *NIC, id int32, m *Msg)
	Completed(e *sim.Engine, nic *NIC, id int32, m *Msg)
}

// SinkPrefetcher is a Sink that can name, a few events ahead, the memory a
// report will touch (see sim.Prefetcher): its own state of the queue a
// completion retires (requester nic, queue qp), and what a delivery of the
// message tagged tag from src to dst reads. At a thousand ranks both are
// entries of per-pair tables that no cache holds.
type SinkPrefetcher interface {
	PrefetchCompleted(nic, qp int32)
	PrefetchDelivered(src, dst int32, tag int64)
}

// qpState is one send queue at the NIC. It exists only once the queue is
// first used (see NIC.qp), and its rings are lists threaded through the
// fabric's slabs, so an idle queue costs a few words and a busy one
// allocates nothing per message.
type qpState struct {
	// lastReady keeps a QP's WQEs in order: a WQE may not leave before
	// the one ahead of it, whose payload read may take longer than its own.
	lastReady sim.Time
	posted    int32 // WQEs written into the ring so far
	fetched   int32 // ring entries consumed by the NIC
	// The ring of posted, unfetched WQEs (message ids linked through
	// Msg.next) and the doorbells not yet handled (linked through
	// ringing.next); -1 when empty.
	head, tail     int32
	dbHead, dbTail int32
	rung           int32 // doorbells on their way to the NIC
	// free is qBusy while an event will free the queue; otherwise, when
	// its last doorbell handling ended without one (see freeAt), 1 + how
	// long before lastReady that was: no doorbell may arrive before it.
	free uint32
	// The send scheduler's view (see NIC.ready): the queue's fetched WQEs
	// waiting for the link, in order (rdyHead, rdyTail, through
	// Msg.next), its NIC, and its place in its port's round of queues
	// (nextAct: the next queue's slot, -1 the last, notActive outside).
	rdyHead, rdyTail int32
	nic              int32
	nextAct          int32
}

const notActive = -2

const qBusy = 1 << 31

func (q *qpState) busy() bool { return q.free&qBusy != 0 }

// freeTime is when the queue's doorbell handling ended without an event,
// or 0.
func (q *qpState) freeTime() sim.Time {
	if q.free == 0 || q.busy() {
		return 0
	}
	return q.lastReady - sim.Time(q.free-1)
}

// ringing is a doorbell that reached the NIC: the ring index it announces
// and when it arrived.
type ringing struct {
	at   sim.Time
	idx  int32
	next int32
}

const (
	opDoorbell int32 = iota
	opQPFree
	opDeliver
	opComplete
	opTxReady
	opRx
	opEmuStep
	opPick
	opRetx    // a lost packet's queue sends again (faults)
	opQPError // a queue gives up (faults)
)

// NIC is one rank's adapter: per-QP doorbell queues served in order, a
// send scheduler that takes the queues waiting for the link in turn (per
// port), a processing pipeline shared by sent and received messages, a
// cache of connection contexts, an egress link and an ingress port. A
// rank with several NICs of its own (Topology.Links) stripes its queues
// over them: each NIC has its pipeline and cache, each of its planes a
// link and port. NICs of a fabric share one message slab so that a
// message can be delivered to its peer.
type NIC struct {
	Index int
	P     *NICParams
	fab   *Fabric
	id    sim.HandlerID
	// qpIx maps a QP number to its state in the fabric's slab, plus one;
	// 0 is a QP not used yet, -1 one whose state was retired (see retire).
	qpIx  []int32
	fetch sim.Time // WQE fetch latency of GPU-memory queues
	hostF sim.Time // and of host-memory ones
	host  bool     // every queue is in host memory
	ph    *port    // the physical NIC's pipeline, link and port (link 0's)
	base  int32    // where its links' ports start in the fabric's
	card           // NIC 0's context cache; the others' are the fabric's
	// dci marks the NIC's DC initiators, by QP: a DCI serves one
	// destination at a time, and re-targeting it waits out the previous
	// destination and connects to the new DCT. noDCI for an RC queue,
	// noTarget for a DCI not yet used, else its destination. nil when the
	// NIC has none.
	dci []int32
	// Context-cache misses by role.
	TxMisses, RxMisses int64
}

// card is what each physical NIC of a rank has alone: its cache of
// connection contexts, and the context its receive pipeline used last.
type card struct {
	ctx    *CtxCache
	lastRx int32
	haveRx bool
}

// Ctx is the connection-context cache of the rank's first NIC.
func (n *NIC) Ctx() *CtxCache { return n.ctx }

// CtxCounts are the hits and misses of the context caches of every NIC
// of the rank.
func (n *NIC) CtxCounts() (hits, misses int64) {
	for j := range n.fab.nics {
		c := n.cardOf(j).ctx
		hits += c.Hits
		misses += c.Misses
	}
	return hits, misses
}

// link is the link (of Topology.Links) a message on queue qp leaves on
// and arrives at.
func (f *Fabric) link(qp int32) int {
	if f.links == 1 {
		return 0
	}
	return int(qp) % f.links
}

// linkPort is the port of n's link k; a NIC's links lie together in the
// fabric's ports.
func (n *NIC) linkPort(k int) *port {
	if k == 0 {
		return n.ph
	}
	return &n.fab.ports[int(n.base)+k]
}

// pipePort is the port that holds the processing pipeline of link k's
// NIC: its first plane's.
func (n *NIC) pipePort(k int) *port {
	if n.fab.nics == 1 {
		return n.ph
	}
	return n.linkPort(k % n.fab.nics)
}

// cardOf is the card of link k's NIC.
func (n *NIC) cardOf(k int) *card {
	f := n.fab
	if f.nics > 1 {
		if j := k % f.nics; j > 0 {
			return &f.cards[n.Index*(f.nics-1)+j-1]
		}
	}
	return &n.card
}

// HostQueues places every send queue of the NIC in host memory, as a CPU
// proxy's queues are: WQE fetches then read host memory, taking fetch.
func (n *NIC) HostQueues(fetch sim.Time) { n.hostF, n.host = fetch, true }

// DCI makes qp a DC initiator.
func (n *NIC) DCI(qp int) {
	if n.dci == nil {
		n.dci = make([]int32, len(n.qpIx))
		for i := range n.dci {
			n.dci[i] = noDCI
		}
	}
	n.dci[qp] = noTarget
}

const (
	noDCI    = -2
	noTarget = -1
)

// qp returns qp's state, creating it on first use.
func (n *NIC) qp(qp int) *qpState {
	f := n.fab
	if i := n.qpIx[qp]; i > 0 {
		return f.qstate.At(i - 1)
	}
	// New, or retired idle: a fresh state is exact (see retire).
	i := f.qstate.Alloc()
	n.qpIx[qp] = i + 1
	q := f.qstate.At(i)
	q.head, q.tail, q.dbHead, q.dbTail = -1, -1, -1, -1
	q.rdyHead, q.rdyTail, q.nic, q.nextAct = -1, -1, int32(n.Index), notActive
	return q
}

// fetchTime is the WQE fetch latency of q: a DMA read of GPU memory, or of
// host memory for queues a CPU owns.
func (n *NIC) fetchTime(*qpState) sim.Time {
	if n.host {
		return n.hostF
	}
	return n.fetch
}

// QPsUsed counts the queues the NIC has created, those used at least once.
func (n *NIC) QPsUsed() int {
	c := 0
	for _, i := range n.qpIx {
		if i != 0 {
			c++
		}
	}
	return c
}

// retire frees qp's state once nothing about it can matter again, so that
// memory follows the queues in use, not every queue ever used (a rank of an
// RC all-to-all touches one per peer, each for a message or two). That is
// when the queue is idle with every posted WQE fetched and no doorbell on
// its way or waiting, and its last WQE's ready time cannot hold back a
// later one: a WQE served at or after now is ready no earlier than
// now+Doorbell+WQE. A fresh state then behaves exactly as the old one
// would: its ring counters restart together (a DC initiator's target is
// the NIC's, kept apart). The emulated NIC's engines hold queues by number.
func (n *NIC) retire(qp int, q *qpState, now sim.Time) {
	p := n.P
	if q.busy() || now < q.freeTime() || q.head >= 0 || q.dbHead >= 0 || q.rung > 0 || p.EmuEngines > 0 || q.nextAct != notActive ||
		q.lastReady > now+p.Doorbell+p.WQE {
		return
	}
	n.fab.qstate.Free(n.qpIx[qp] - 1)
	n.qpIx[qp] = -1
}

// port is what ranks sharing a physical NIC share: its processing pipeline
// (sent and received messages), egress link and ingress port, each as the
// time it is next free; and its send scheduler's round of queues with WQEs
// waiting for the link (slab indices of their states, -1 when empty), with
// whether a pick is scheduled; and the leaf switch it hangs from (two
// tiers). A NIC of several planes has a port per plane, whose pipeline is
// the first plane's.
type port struct {
	pipeAt, linkAt, portAt sim.Time
	actHead, actTail       int32
	leaf                   int32
	picking                bool
}

func newPorts(n int) []port {
	ps := make([]port, n)
	for i := range ps {
		ps[i].actHead, ps[i].actTail = -1, -1
	}
	return ps
}

// Fabric joins NICs through one switch layer of fixed latency, or (after
// Place, with two tiers) through rail-optimized leaves and spines.
type Fabric struct {
	P    NICParams
	NICs []*NIC
	msgs sim.Slab[rec]
	wide sim.Slab[[nStamps]sim.Time] // timelines that outgrew a record's offsets
	view Msg                         // the message a report is about
	dcts int32                       // DCTs per NIC (SetDCTs)
	// peerQPs > 0 numbers a responder's RC contexts by requester and the
	// QP's index among the requester's QPs to it (PeerQPs).
	peerQPs int32
	lead    sim.Time // every doorbell arrives at least this long after it is rung (DoorbellLead)
	leadOf  func(nic, qp int) sim.Time
	qstate  sim.Slab[qpState]
	dbs     sim.Slab[ringing]
	sink    Sink
	sinkPF  SinkPrefetcher // sink, when it is one
	// The emulated NIC's engines: per GPU, EmuEngines of them; qps is the
	// queue count per NIC.
	engines []emuEngine
	smAt    []sim.Time // per NIC SM: when its copy bandwidth is next free
	qps     int
	ports   []port
	// links per rank and NICs among them (Topology); cards holds the
	// context caches of each rank's NICs past its first, nics-1 a rank.
	links, nics int
	cards       []card
	// Two tiers: when each leaf's uplink to each spine (up[leaf·spines +
	// s]) and each spine's downlink to each leaf (down[s·leaves + leaf])
	// is next free.
	up, down       []sim.Time
	spines, leaves int
	// dgram makes every queue a reliable datagram one (Datagram): paths
	// is how many spines a message's packets spray over.
	dgram bool
	paths int
	// flt is the faults applied to the fabric (SetFaults); nil when
	// healthy, which every path checks first.
	flt *faults
}

// EmuBurst is how many WQEs an emulated NIC warp executes from one queue
// per visit before it turns to its next pending queue (the native NIC's
// kNicBurst): queues are served in turn, by queue, as a ConnectX send
// scheduler arbitrates among send queues, not by first-come doorbell.
const EmuBurst = 8

// emuEngine is one warp of the emulated NIC: the doorbells rung to its
// queues that it has yet to notice (in the order rung, which with one poll
// delay is the order noticed), its queues with noticed WQEs left (in queue
// order), and the visit under way: the queue (by key; -1 none), the ring
// index it ends at and the WQEs its burst has left. last is the key of the
// queue visited last, where its turns go on from.
type emuEngine struct {
	work    []emuWork
	pending []emuQueue
	visit   int
	vEnd    int
	vLeft   int
	last    int
	busy    bool
}

// emuWork is a doorbell rung to qp of nic: every WQE up to ring index idx,
// noticed no earlier than ready.
type emuWork struct {
	nic, qp, idx int
	ready        sim.Time
}

// emuQueue is a queue with noticed WQEs left: its key (its place among the
// GPU's queues, the order the warp visits them in) and its noticed
// doorbells, oldest first (a WQE's is the first whose idx passes it).
type emuQueue struct {
	key, nic, qp int
	dbs          []emuWork
}

// NewFabric builds n NICs with qps queue pairs each.
func NewFabric(e *sim.Engine, p NICParams, n, qps int, sink Sink) *Fabric {
	if n > MaxNICs || qps > MaxQPs {
		// Transports check their sizes against these limits first.
		panic(fmt.Sprintf("hw: %d NICs of %d queues each, beyond %d of %d", n, qps, MaxNICs, MaxQPs))
	}
	f := &Fabric{P: p, sink: sink, qps: qps, dcts: 1}
	f.sinkPF, _ = sink.(SinkPrefetcher)
	if p.EmuEngines > 0 {
		gpus := (n + p.EmuRanksPerGPU - 1) / p.EmuRanksPerGPU
		f.engines = make([]emuEngine, gpus*p.EmuEngines)
		f.smAt = make([]sim.Time, gpus*max(1, p.EmuEngines/32))
	}
	f.links, f.nics = p.Topo.Links(), p.Topo.NICs()
	f.ports = newPorts(n * f.links)
	if f.nics > 1 {
		f.cards = make([]card, n*(f.nics-1))
		for i := range f.cards {
			f.cards[i].ctx = NewCtxCache(p.ConnEntries, p.ConnWays)
		}
	}
	for i := range n {
		nic := &NIC{Index: i, P: &f.P, fab: f, qpIx: make([]int32, qps), fetch: p.DMARead, ph: &f.ports[i*f.links], base: int32(i * f.links),
			card: card{ctx: NewCtxCache(p.ConnEntries, p.ConnWays)}}
		nic.id = e.Register(nic)
		f.NICs = append(f.NICs, nic)
	}
	return f
}

// Place lays the NICs out as the profile's topology says, ranks in order
// gpusPerNode to a node: ranks sharing a NIC (topo.gpus_per_nic) share its
// pipeline, link and port; with two tiers, link k of each node (a rank's
// NICs and planes each a link, see Topology.Links) sits on rail k's
// leaves, as many nodes to a leaf as it has downlinks, and every leaf has
// one uplink to each spine. Without Place (or with the reference
// topology) every NIC is its own and one switch joins them all.
func (f *Fabric) Place(gpusPerNode int) {
	t := &f.P.Topo
	g, gpn, l := max(1, t.GPUsPerNIC), max(1, gpusPerNode), f.links
	if err := t.Validate(); err != nil {
		// Transports validate the topology before they open a fabric.
		panic("hw: " + err.Error())
	}
	if t.Tiers < 2 && g == 1 {
		return
	}
	// Ports of one node, a rail each, a NIC's links together.
	perNode := (gpn + g - 1) / g * l
	nodes := (len(f.NICs) + gpn - 1) / gpn
	f.ports = newPorts(nodes * perNode)
	down, up := t.Ports()
	perRail := (nodes + down - 1) / down
	for i, n := range f.NICs {
		node, rail := i/gpn, i%gpn/g*l
		n.base = int32(node*perNode + rail)
		n.ph = &f.ports[n.base]
		for k := range l {
			f.ports[node*perNode+rail+k].leaf = int32((rail+k)*perRail + node/down)
		}
	}
	if t.Tiers < 2 {
		return
	}
	f.spines, f.leaves = up, perNode*perRail
	f.up = make([]sim.Time, f.leaves*f.spines)
	f.down = make([]sim.Time, f.spines*f.leaves)
}

// spine picks the spine a message from n to dst crosses, from leaf to
// leaf dleaf: a hash of its flow (static ECMP), or the one whose uplink and
// downlink free first (adaptive).
func (f *Fabric) spine(n, dst *NIC, m *rec, leaf, dleaf int32) int {
	if !f.P.Topo.Adaptive {
		h := uint64(n.Index)<<40 ^ uint64(dst.Index)<<20 ^ uint64(uint32(m.qp()))
		h ^= h >> 33
		h *= 0xff51afd7ed558ccd
		h ^= h >> 33
		h *= 0xc4ceb9fe1a85ec53
		h ^= h >> 33
		return int(h % uint64(f.spines))
	}
	best, at := 0, sim.Never
	for s := range f.spines {
		t := max(f.up[int(leaf)*f.spines+s], f.down[s*f.leaves+int(dleaf)])
		if t < at {
			best, at = s, t
		}
	}
	return best
}

// Msg returns the message with id.
func (f *Fabric) Msg(id int32) Msg { return f.msgs.At(id).decode() }

// SetMsg writes the message with id, as its requester builds it.
func (f *Fabric) SetMsg(id int32, m Msg) { f.msgs.At(id).encode(&m) }

// SetDCTs sets the DCTs per NIC that DC messages spread over, by
// requester: a responder caches one context per DCT.
func (f *Fabric) SetDCTs(n int) { f.dcts = int32(max(1, n)) }

// DoorbellLead declares that every doorbell reaches its NIC at least d
// after the event that rings it (an SM's MMIO store takes pcie.mmio_ns).
// A queue that finishes a doorbell's handling within d of starting it,
// with no other doorbell on its way, then needs no event to mark it free:
// no doorbell can find it busy.
func (f *Fabric) DoorbellLead(d sim.Time) { f.lead = d }

// DoorbellLeadOf is DoorbellLead per queue, asked as the NIC begins a
// doorbell: the requester knows, for instance, that a queue with no WQE
// reserved and unpublished cannot be rung before a new post has reserved
// one and built it.
func (f *Fabric) DoorbellLeadOf(lead func(nic, qp int) sim.Time) { f.leadOf = lead }

// PeerQPs makes queue q of a NIC its (q mod n)-th QP to NIC q/n, as a
// responder numbers its contexts: requester·n + q mod n.
func (f *Fabric) PeerQPs(n int) { f.peerQPs = int32(n) }

// Post writes a WQE into qp's ring: the GPU built it, the NIC learns of it
// only at the next doorbell.
func (n *NIC) Post(qp int, m Msg) int32 {
	id := n.fab.msgs.Alloc()
	n.fab.msgs.At(id).encode(&m)
	n.Enqueue(qp, id)
	return id
}

// NewMsg returns a zeroed message for a requester to fill (SetMsg) while
// it builds the WQE, then Enqueue: a requester that would otherwise keep
// the same fields in its own record until the WQE is written keeps only
// the id.
func (f *Fabric) NewMsg() int32 { return f.msgs.Alloc() }

// Enqueue is Post of message id, from NewMsg: its QP and requester are
// set here.
func (n *NIC) Enqueue(qp int, id int32) {
	f := n.fab
	m := f.msgs.At(id)
	m.setEnds(int32(n.Index), m.dst(), int32(qp))
	if m.has(fUnsignaled) {
		m.setRefs(1)
	} else {
		m.setRefs(2)
	}
	m.next = -1
	q := n.qp(qp)
	if q.tail >= 0 {
		f.msgs.At(q.tail).next = id
	} else {
		q.head = id
	}
	q.tail = id
	q.posted++
	if f.flt != nil {
		f.flt.numbered(id, int32(n.Index), int32(qp))
	}
}

// Doorbell records a doorbell store that leaves the SM at `at`, announcing
// every WQE posted to qp so far. It reaches the NIC one MMIO later.
func (n *NIC) Doorbell(e *sim.Engine, at sim.Time, qp int) { n.Ring(e, at, qp, n.P.MMIO) }

// Ring is Doorbell with the writer's own MMIO latency (a host thread's
// doorbell store takes a different path than an SM's).
func (n *NIC) Ring(e *sim.Engine, at sim.Time, qp int, mmio sim.Time) {
	q := n.qp(qp)
	if f := q.freeTime(); at+mmio < f {
		panic(fmt.Sprintf("hw: NIC %d QP %d rung at %v arrives at %v, before %v, while its doorbell handling was taken to end unrung (the declared doorbell lead is wrong)",
			n.Index, qp, at, at+mmio, f))
	}
	q.rung++
	e.At(at+mmio, n.id, opDoorbell, int64(qp)|int64(q.posted)<<24)
}

// Prefetch asks for the message record or the queue index an event reads
// first, then for the queue's state or the responder's context set.
func (n *NIC) Prefetch(op int32, arg int64, near bool) {
	f := n.fab
	switch op {
	case opTxReady, opRx, opDeliver, opComplete:
		if !near {
			f.PrefetchMsg(int32(arg))
			return
		}
		m := f.msgs.At(int32(arg))
		switch op {
		case opTxReady:
			if i := n.qpIx[m.qp()]; i > 0 {
				prefetch.Line(unsafe.Pointer(f.qstate.At(i - 1)))
			}
		case opRx:
			ctx := n.cardOf(f.link(m.qp())).ctx
			set := ctx.set(f.rxCtx(m))
			prefetch.Line(unsafe.Pointer(&ctx.slots[set*ctx.ways]))
		case opDeliver:
			if f.sinkPF != nil {
				f.sinkPF.PrefetchDelivered(m.src(), m.dst(), m.tag)
			}
		case opComplete:
			if f.sinkPF != nil {
				f.sinkPF.PrefetchCompleted(int32(n.Index), m.qp())
			}
		}
	case opDoorbell, opQPFree:
		qp := arg & (1<<24 - 1)
		if !near {
			prefetch.Line(unsafe.Pointer(&n.qpIx[qp]))
		} else if i := n.qpIx[qp]; i > 0 {
			prefetch.Line(unsafe.Pointer(f.qstate.At(i - 1)))
		}
	}
}

// Handle runs the NIC's events.
func (n *NIC) Handle(e *sim.Engine, op int32, arg int64) {
	switch op {
	case opDoorbell:
		qp := int(arg & (1<<24 - 1))
		q := n.qp(qp)
		q.rung--
		if n.P.EmuEngines > 0 {
			n.emuDoorbell(e, qp, int(arg>>24))
			return
		}
		f := n.fab
		d := f.dbs.Alloc()
		*f.dbs.At(d) = ringing{at: e.Now(), idx: int32(arg >> 24), next: -1}
		if q.dbTail >= 0 {
			f.dbs.At(q.dbTail).next = d
		} else {
			q.dbHead = d
		}
		q.dbTail = d
		if !q.busy() {
			n.serve(e, qp)
		}
	case opQPFree:
		q := n.fab.qstate.At(n.qpIx[arg] - 1)
		q.free = 0
		if q.dbHead >= 0 {
			n.serve(e, int(arg))
		} else {
			n.retire(int(arg), q, e.Now())
		}
	case opTxReady:
		n.ready(e, int32(arg))
	case opPick:
		n.pick(e, int(arg))
	case opRetx:
		n.retx(e, int32(arg))
	case opQPError:
		if n.fab.dgram {
			n.datagramGiveUp(e, int32(arg))
		} else {
			n.qpError(e, int32(arg))
		}
	case opEmuStep:
		n.fab.emuStep(e, int(arg))
	case opRx:
		n.receive(e, int32(arg))
	case opDeliver:
		f := n.fab
		id := int32(arg)
		f.view = f.msgs.At(id).decode()
		f.sink.Delivered(e, n, id, &f.view)
		f.release(id)
	case opComplete:
		f := n.fab
		id := int32(arg)
		f.view = f.msgs.At(id).decode()
		f.sink.Completed(e, n, id, &f.view)
		f.release(id)
	}
}

func (f *Fabric) release(id int32) {
	m := f.msgs.At(id)
	m.setRefs(m.refs() - 1)
	if m.refs() == 0 {
		if m.has(fWide) {
			f.wide.Free(int32(m.off[0]))
		}
		f.msgs.Free(id)
	}
}

// serve handles qp's oldest pending doorbell: the QP is busy for the
// doorbell handling plus its WQEs' in-order processing; the WQEs
// themselves proceed once fetched, through the NIC-wide message slot and
// the link.
func (n *NIC) serve(e *sim.Engine, qp int) {
	f := n.fab
	q := f.qstate.At(n.qpIx[qp] - 1)
	dbi := q.dbHead
	db := *f.dbs.At(dbi)
	cnt := int(db.idx - q.fetched)
	if cnt > n.P.MaxFetch {
		// A fetch reads at most MaxFetch WQEs; the rest wait for the next
		// round, as if announced by a doorbell right behind this one: the
		// doorbell stays at the head.
		cnt = n.P.MaxFetch
	} else {
		q.dbHead = db.next
		if q.dbHead < 0 {
			q.dbTail = -1
		}
		f.dbs.Free(dbi)
	}
	now := e.Now()
	p := n.P
	q.free = qBusy
	if cnt <= 0 {
		n.freeAt(e, qp, q, now+p.Doorbell)
		return
	}
	bbs := 0
	id := q.head
	for range cnt {
		m := f.msgs.At(id)
		bbs += int(m.bbs())
		id = m.next
	}
	// The QP's context must be in the NIC's cache before its WQEs run; a
	// miss fetches it from host memory first (latency, not occupancy: the
	// requester prefetches on the doorbell).
	var miss sim.Time
	if f.dgram {
		// A datagram queue serves every peer: each WQE names its own
		// address handle, looked up as the WQE runs (below).
	} else if ctx := f.msgs.At(q.head).txCtx(); !n.cardOf(f.link(int32(qp))).ctx.Touch(ctx) {
		miss = p.ConnMiss
		n.TxMisses++
	}
	fetched := now + p.Doorbell + miss + n.fetchTime(q) + sim.Time(bbs-cnt)*p.BBFetch + p.PCIeTime(64*bbs)
	t := now + p.Doorbell
	id = q.head
	for range cnt {
		m := f.msgs.At(id)
		f.stamp(m, sRung, db.at)
		f.stamp(m, sServed, now)
		if miss > 0 {
			m.addConnMiss()
		}
		t += p.WQE
		if tgt := n.dci; tgt != nil && tgt[qp] != noDCI && tgt[qp] != m.dst() {
			if tgt[qp] != noTarget {
				// The DCI drains its previous destination and connects
				// to the new DCT before this WQE can go; later WQEs of
				// the DCI queue behind it.
				t = max(t, fetched) + p.DCSwitch
				m.set(fDCISwitch, true)
			}
			tgt[qp] = m.dst()
		}
		ready := max(t, fetched)
		if f.dgram && !n.cardOf(f.link(int32(qp))).ctx.Touch(m.dst()) {
			// The destination's address handle (and its peer state) was
			// evicted: the WQE waits for it, later ones need not.
			ready += p.ConnMiss
			m.addConnMiss()
			n.TxMisses++
		}
		if m.has(fPointer) {
			ready += p.DMARead + p.PCIeTime(int(m.bytes))
		}
		if f.dgram {
			// No in-order rule: a WQE whose payload is read sooner
			// leaves before those ahead of it.
			q.lastReady = max(ready, q.lastReady)
		} else {
			ready = max(ready, q.lastReady)
			q.lastReady = ready
		}
		e.At(ready, n.id, opTxReady, int64(id))
		id = m.next
	}
	q.fetched += int32(cnt)
	q.head = id
	if id < 0 {
		q.tail = -1
	}
	n.freeAt(e, qp, q, t)
}

// freeAt frees qp's queue at t, once its doorbell's handling is done. When
// nothing can arrive for it before then (no doorbell waiting or on its
// way, and t within the doorbell lead), the event is needed neither to
// serve one nor to free the queue's state, which the transmit of its last
// WQE (at or after t) does: it is marked free now, and the order of every
// other event stays as it was.
func (n *NIC) freeAt(e *sim.Engine, qp int, q *qpState, t sim.Time) {
	if q.dbHead < 0 && q.rung == 0 {
		lead := n.fab.lead
		if n.fab.leadOf != nil && t > e.Now()+lead {
			lead = max(lead, n.fab.leadOf(n.Index, qp))
		}
		// The offset below lastReady fits 31 bits; lastReady is at least
		// t once a WQE was served.
		if d := q.lastReady - t; t <= e.Now()+lead && d >= 0 && d < qBusy-1 {
			q.free = uint32(d) + 1
			return
		}
	}
	q.free = qBusy
	e.At(t, n.id, opQPFree, int64(qp))
}

// ready runs when a fetched WQE could leave: it takes a slot of its NIC's
// processing pipeline (shared with received messages), then its queue's
// link. On an idle link it goes at once. On a busy one it waits in its
// queue, and the port's send scheduler takes one WQE from each waiting
// queue in turn, as a ConnectX send scheduler arbitrates among the send queues of
// a traffic class (round robin by queue), not in the order the WQEs
// became ready: ranks that ring many queues at once (a flush of every
// expert's batch) each drain them in an order set by their own backlog,
// rather than all in the order of the doorbells, which the kernels ring
// alike on every rank.
func (n *NIC) ready(e *sim.Engine, id int32) {
	p := n.P
	f := n.fab
	m := f.msgs.At(id)
	k := f.link(m.qp())
	ph := n.linkPort(k)
	pp := n.pipePort(k)
	now := e.Now()
	slot := max(now, pp.pipeAt)
	pp.pipeAt = slot + p.MsgSlot
	// Whether the pipeline held it; transmit keeps this only if the
	// pipeline, not the link, then set when it left.
	m.set(fMsgRate, slot > now)
	if ph.actHead < 0 && ph.linkAt <= slot+p.Tx {
		n.transmit(e, id, slot)
		return
	}
	f.stamp(m, sSent, slot) // its pipeline slot, until it is sent
	// Its queue's state may have been retired since the fetch (see
	// retire); a fresh one is exact.
	q := n.qp(int(m.qp()))
	qi := n.qpIx[m.qp()] - 1
	m.next = -1
	if q.rdyTail >= 0 {
		f.msgs.At(q.rdyTail).next = id
	} else {
		q.rdyHead = id
	}
	q.rdyTail = id
	if q.nextAct == notActive {
		f.activate(ph, qi, q)
	}
	if !ph.picking {
		ph.picking = true
		e.At(max(now, ph.linkAt-p.Tx), n.id, opPick, int64(k))
	}
}

// activate puts queue qi at the end of its port's round.
func (f *Fabric) activate(ph *port, qi int32, q *qpState) {
	q.nextAct = -1
	if ph.actTail >= 0 {
		f.qstate.At(ph.actTail).nextAct = qi
	} else {
		ph.actHead = qi
	}
	ph.actTail = qi
}

// pick sends the oldest waiting WQE of the queue whose turn it is on link
// k, and takes the next pick when the link can take another message.
func (n *NIC) pick(e *sim.Engine, k int) {
	f := n.fab
	ph := n.linkPort(k)
	qi := ph.actHead
	q := f.qstate.At(qi)
	ph.actHead = q.nextAct
	if ph.actHead < 0 {
		ph.actTail = -1
	}
	// A turn sends what the queue has waiting, up to one fetch's WQEs: the
	// scheduler hands the link a queue's burst, not single messages (at
	// 4,096 QPs of 32-write visits, sending and receiving costs small
	// writes no more than sending alone, Table 16: a receiver sees each
	// connection's writes together). The queue stays marked in its turn
	// meanwhile, so that no transmit retires it.
	// A pipeline that feeds several planes runs ahead of each plane's
	// link, so a queue's waiting WQEs may hold slots the pipeline reaches
	// only well after the link frees: the turn ends at such a WQE, and the
	// link takes the next queue's, already through the pipeline, rather
	// than idling for it. (With a link to each pipeline a turn takes the
	// whole burst, as it always has: WQEs wait for a busy link there only
	// once through the pipeline, bar those that queue behind others.)
	nic := f.NICs[q.nic]
	planes := f.links > f.nics
	qp := 0
	for j := range n.P.MaxFetch {
		id := q.rdyHead
		if id < 0 {
			break
		}
		m := f.msgs.At(id)
		slot := f.stampAt(m, sSent)
		if planes && j > 0 && slot+n.P.Tx > ph.linkAt {
			break
		}
		q.rdyHead = m.next
		qp = int(m.qp())
		nic.transmit(e, id, slot)
	}
	q.nextAct = notActive
	if q.rdyHead < 0 {
		q.rdyTail = -1
		nic.retire(qp, q, e.Now())
	} else {
		f.activate(ph, qi, q)
	}
	if ph.actHead < 0 {
		ph.picking = false
		return
	}
	e.At(max(e.Now(), ph.linkAt-n.P.Tx), n.id, opPick, int64(k))
}

// transmit sends a WQE whose pipeline slot was slot onto the link.
func (n *NIC) transmit(e *sim.Engine, id int32, slot sim.Time) {
	p := n.P
	f := n.fab
	m := f.msgs.At(id)
	if i := n.qpIx[m.qp()]; i > 0 {
		n.retire(int(m.qp()), f.qstate.At(i-1), e.Now())
	}
	// The message leaves on its queue's link and arrives at the
	// responder's link of the same number (the same rail or plane).
	k := f.link(m.qp())
	ph := n.linkPort(k)
	bytes := int(m.bytes)
	if f.flt != nil {
		bytes = f.flt.sendBytes(f, id, m)
	}
	wire := p.WireTime(bytes)
	dst := f.NICs[m.dst()]
	dp := dst.linkPort(k)
	if f.up != nil && ph.leaf != dp.leaf {
		if f.dgram && f.paths > 1 {
			n.spray(e, id, m, dst, slot, ph, dp, bytes)
			return
		}
		n.crossLeaf(e, id, m, dst, slot, wire, ph, dp, bytes)
		return
	}
	ws, wr := wire, wire
	if x := f.flt; x != nil {
		ws, wr = x.scale(wire, int(n.base)+k), x.scale(wire, int(dst.base)+k)
	}
	// Credit flow control: the switch holds only PortBuffer of traffic
	// waiting for an egress port, so a message whose destination is backed
	// up beyond that waits at the head of its sender's link, blocking the
	// messages behind it to other destinations too (head-of-line).
	start := max(slot+p.Tx, ph.linkAt, dp.portAt-p.PortBuffer-p.Fabric)
	ph.linkAt = start + ws
	if !f.resending(id) {
		m.set(fMsgRate, rateBound(m, slot, start, p))
		f.stamp(m, sSent, start)
	}
	// The responder's port serializes arrivals from every sender; a
	// slower sender's link paces it (equal rates: the first term).
	arrive := max(max(start+p.Fabric, dp.portAt)+wr, start+ws+p.Fabric)
	dp.portAt = arrive
	if f.flt != nil {
		f.landed(e, id, m, flight{src: int(n.base) + k, dst: int(dst.base) + k, start: start, ws: ws, arrive: arrive, wr: wr, bytes: bytes, sender: n, target: dst})
		return
	}
	f.stamp(m, sArrived, arrive)
	e.At(arrive, dst.id, opRx, int64(id))
}

// rateBound reports whether a message was held by the NIC's message
// pipeline rather than by the link, the switch port or a spine: its slot
// came after it was ready (ready marks that) and the slot alone set start.
func rateBound(m *rec, slot, start sim.Time, p *NICParams) bool {
	return m.has(fMsgRate) && start == slot+p.Tx
}

// crossLeaf sends a message between leaves: up to a spine, down to the
// responder's leaf, each link serializing what crosses it, two switch hops
// more than within a leaf. A backed-up link beyond its buffer stalls the
// sender's link, as the responder's port does. ph and dp are the ports of
// the message's link at either end.
func (n *NIC) crossLeaf(e *sim.Engine, id int32, m *rec, dst *NIC, slot, wire sim.Time, ph, dp *port, bytes int) {
	p := n.P
	f := n.fab
	t := &p.Topo
	s := f.spine(n, dst, m, ph.leaf, dp.leaf)
	up := &f.up[int(ph.leaf)*f.spines+s]
	down := &f.down[s*f.leaves+int(dp.leaf)]
	half := p.Fabric / 2
	// Each link's time for the message: its own rate under faults (a
	// degraded NIC link, a congested spine); the slowest paces the rest.
	ws, wu, wr := wire, wire, wire
	k := f.link(m.qp())
	if x := f.flt; x != nil {
		ws, wu, wr = x.scale(wire, int(n.base)+k), x.spineTime(wire), x.scale(wire, int(dst.base)+k)
	}
	start := max(slot+p.Tx, ph.linkAt, dp.portAt-p.PortBuffer-p.Fabric-2*t.Hop,
		*up-t.HopBuffer-half, *down-t.HopBuffer-half-t.Hop)
	ph.linkAt = start + ws
	if !f.resending(id) {
		m.set(fMsgRate, rateBound(m, slot, start, p))
		f.stamp(m, sSent, start)
	}
	s1 := max(start+half, *up)
	*up = max(s1+wu, start+half+ws)
	s2 := max(s1+t.Hop, *down)
	*down = max(s2+wu, *up+t.Hop)
	arrive := max(max(s2+t.Hop+p.Fabric-half, dp.portAt)+wr, *down+t.Hop+p.Fabric-half)
	dp.portAt = arrive
	if f.flt != nil {
		f.landed(e, id, m, flight{src: int(n.base) + k, dst: int(dst.base) + k, start: start, ws: ws, arrive: arrive, wr: wr, bytes: bytes, crossSpine: true, sender: n, target: dst})
		return
	}
	f.stamp(m, sArrived, arrive)
	e.At(arrive, dst.id, opRx, int64(id))
}

// receive runs at the responder when the last byte arrived: the message
// takes a slot of the processing pipeline, after fetching its connection's
// context on a miss, which stalls the pipeline (head of line).
func (n *NIC) receive(e *sim.Engine, id int32) {
	p := n.P
	f := n.fab
	m := f.msgs.At(id)
	k := f.link(m.qp())
	pp, c := n.pipePort(k), n.cardOf(k)
	start := max(e.Now(), pp.pipeAt)
	if rx := f.rxCtx(m); rx != c.lastRx || !c.haveRx {
		c.lastRx, c.haveRx = rx, true
		if !c.ctx.Touch(rx) {
			n.RxMisses++
			start += p.ConnMiss
			m.addConnMiss()
		}
	}
	pp.pipeAt = start + p.RxSlot
	done := start + p.RxSlot + p.Rx
	dc := m.has(fDC)
	if dc {
		// The DCT checks the address vector's key and state per message.
		done += p.DCTarget
	}
	visible := done + p.DMAWrite
	if m.has(fAtomic) {
		// The responder NIC reads, modifies and writes GPU memory.
		visible += p.DMARead
	}
	f.stamp(m, sVisible, visible)
	// The ACK leaves once the message is processed; it does not wait for
	// the write into GPU memory.
	cqe := start + p.RxSlot + p.Ack + p.Fabric + p.DMAWrite
	if dc {
		cqe += p.DCTarget
	}
	e.At(visible, n.id, opDeliver, int64(id))
	if !m.has(fUnsignaled) {
		e.At(cqe, f.NICs[m.src()].id, opComplete, int64(id))
	}
}

// engine is the emulated NIC engine that owns qp of nic: the queues of a
// GPU's ranks, in order, split into equal contiguous shares (as the native
// NIC's warps take them).
func (f *Fabric) engine(nic, qp int) int {
	p := &f.P
	rpg := p.EmuRanksPerGPU
	nq := rpg * f.qps
	per := (nq + p.EmuEngines - 1) / p.EmuEngines
	return nic/rpg*p.EmuEngines + (nic%rpg*f.qps+qp)/per
}

// emuDoorbell hands a doorbell to the engine owning the queue: it notices
// it a poll later.
func (n *NIC) emuDoorbell(e *sim.Engine, qp, idx int) {
	f := n.fab
	i := f.engine(n.Index, qp)
	g := &f.engines[i]
	g.work = append(g.work, emuWork{nic: n.Index, qp: qp, idx: idx, ready: e.Now() + n.P.EmuPoll})
	if !g.busy {
		g.busy = true
		g.visit = -1
		e.At(e.Now()+n.P.EmuPoll, n.id, opEmuStep, int64(i))
	}
}

// emuNotice moves the doorbells whose poll has come to their queues'
// pending lists.
func (f *Fabric) emuNotice(g *emuEngine, now sim.Time) {
	k := 0
	for ; k < len(g.work) && g.work[k].ready <= now; k++ {
		w := g.work[k]
		key := w.nic%f.P.EmuRanksPerGPU*f.qps + w.qp
		j, found := slices.BinarySearchFunc(g.pending, key, func(q emuQueue, key int) int { return q.key - key })
		if !found {
			g.pending = slices.Insert(g.pending, j, emuQueue{key: key, nic: w.nic, qp: w.qp})
		}
		g.pending[j].dbs = append(g.pending[j].dbs, w)
	}
	g.work = g.work[k:]
}

// emuTurn is the index in g.pending of the queue the engine serves next:
// the one it is visiting while the visit lasts, else the first pending
// queue after the one visited last, in queue order and round again; -1
// when none has noticed WQEs left. Queues with none left leave the list.
func (f *Fabric) emuTurn(g *emuEngine) int {
	if g.visit >= 0 {
		j, found := slices.BinarySearchFunc(g.pending, g.visit, func(q emuQueue, key int) int { return q.key - key })
		if found && g.vLeft > 0 && int(f.NICs[g.pending[j].nic].qp(g.pending[j].qp).fetched) < g.vEnd {
			return j
		}
		g.visit = -1
	}
	for len(g.pending) > 0 {
		j, _ := slices.BinarySearchFunc(g.pending, g.last+1, func(q emuQueue, key int) int { return q.key - key })
		if j == len(g.pending) {
			j = 0
		}
		pq := &g.pending[j]
		q := f.NICs[pq.nic].qp(pq.qp)
		if last := pq.dbs[len(pq.dbs)-1].idx; int(q.fetched) < last && q.head >= 0 {
			g.visit, g.vEnd, g.vLeft, g.last = pq.key, last, EmuBurst, pq.key
			return j
		}
		g.pending = slices.Delete(g.pending, j, j+1)
	}
	return -1
}

// emuStep runs one WQE on engine i: its fetch (GPU or host memory), the
// rank's link when paced, then the copy or the atomic; the payload is
// visible a fabric latency later. The engine then takes its next WQE: the
// visited queue's next while its burst and the doorbell it read last
// allow, else the next pending queue's first, which starts a visit and
// pays the visit's first read and the consumer index it publishes.
func (f *Fabric) emuStep(e *sim.Engine, i int) {
	g := &f.engines[i]
	p := &f.P
	now := e.Now()
	f.emuNotice(g, now)
	j := f.emuTurn(g)
	if j < 0 {
		if len(g.work) > 0 {
			e.At(g.work[0].ready, f.NICs[g.work[0].nic].id, opEmuStep, int64(i))
			return
		}
		g.busy = false
		g.work = g.work[:0:0]
		g.pending = g.pending[:0:0]
		return
	}
	begin := g.vLeft == EmuBurst // a visit's first WQE
	pq := &g.pending[j]
	n := f.NICs[pq.nic]
	q := n.qp(pq.qp)
	id := q.head
	m := f.msgs.At(id)
	q.head = m.next
	if q.head < 0 {
		q.tail = -1
	}
	for int(q.fetched) >= pq.dbs[0].idx {
		pq.dbs = pq.dbs[1:]
	}
	q.fetched++
	g.vLeft--
	f.stamp(m, sRung, pq.dbs[0].ready-p.EmuPoll)
	f.stamp(m, sServed, now)
	t := now + n.fetchTime(q)
	if begin {
		if n.host {
			t += p.EmuHostDrain
		} else {
			t += p.EmuDrain
		}
	}
	ph := n.linkPort(f.link(m.qp()))
	t = max(t, ph.linkAt)
	ph.linkAt = t + p.MsgSlot + p.WireTime(int(m.bytes))
	f.stamp(m, sSent, t)
	if m.has(fAtomic) {
		t += p.EmuAtomic
	} else {
		own := t + p.EmuCopy + sim.Time(math.Ceil(float64(m.bytes)/p.EmuWarpBpp))
		sms := max(1, p.EmuEngines/32)
		sm := i/p.EmuEngines*sms + i%p.EmuEngines%sms
		s := max(t, f.smAt[sm])
		f.smAt[sm] = s + sim.Time(math.Ceil(float64(m.bytes)/p.EmuSMBpp))
		t = max(own, f.smAt[sm])
	}
	f.stamp(m, sArrived, t)
	visible := t + p.Fabric
	f.stamp(m, sVisible, visible)
	e.At(visible, f.NICs[m.dst()].id, opDeliver, int64(id))
	if !m.has(fUnsignaled) {
		e.At(visible, n.id, opComplete, int64(id))
	}
	e.At(t, n.id, opEmuStep, int64(i))
}
