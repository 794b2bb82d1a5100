package transport

import (
	"moebench/hw"
	"moebench/sim"
)

// NVLinkPath carries a Conn's ops to same-node peers over NVLink as every
// transport that does so models it (hw.NVLink): the posting warp copies
// the payload itself, resumes once its copy ends, and the op is delivered
// once the peer can see it. A Conn makes one in Open and posts through it
// the ops it Takes.
type NVLinkPath struct {
	nv    *hw.NVLink
	env   *Env
	id    sim.HandlerID
	ops   sim.Slab[nvCopy]
	warps sim.Slab[*Warp]
}

// nvCopy is an op between its copy and its delivery.
type nvCopy struct {
	op    Op
	times Times
}

// Events of the path's handler.
const (
	nvDeliver int32 = iota // arg: the copy
	nvResume               // arg: the warp
)

// NewNVLinkPath is env's NVLink path, on env's engine.
func NewNVLinkPath(env *Env) *NVLinkPath {
	p := &NVLinkPath{nv: hw.NewNVLink(env.Profile, env.NVLink, domainGPUs(env.NVLDomain, env.GPUsPerNode), env.Ranks, env.Mem), env: env}
	p.id = env.E.Register(p)
	return p
}

// Takes reports whether op goes over NVLink: NVLink is on, its peer is in
// the same NVLink domain, and it does not ask for the NIC.
func (p *NVLinkPath) Takes(op Op) bool { return !op.NIC && p.nv.Local(op.Src, op.Dst) }

// Post has w copy op to its peer, from w's local time on.
func (p *NVLinkPath) Post(e *sim.Engine, w *Warp, op Op) {
	issue := max(w.T.T, e.Now())
	w.T.T = issue
	if op.Flush {
		// A flag to a peer's memory is a system-scope release store
		// (DeepEP's st_release_sys_global through the peer pointer).
		p.nv.Release(&w.T, op.Src, op.Dst, w.T.C().ReleaseSys)
	}
	start, visible := p.nv.Copy(&w.T, op.Bytes, op.Src, op.Dst)
	i := p.ops.Alloc()
	*p.ops.At(i) = nvCopy{op: op, times: Times{IssueStart: issue, IssueEnd: w.T.T, Posted: start, Served: start, Sent: start,
		Arrived: w.T.T, Visible: visible, NVLink: true}}
	e.At(visible, p.id, nvDeliver, int64(i))
	j := p.warps.Alloc()
	*p.warps.At(j) = w
	e.At(w.T.T, p.id, nvResume, int64(j))
}

// Handle delivers a copy, or hands a warp back control.
func (p *NVLinkPath) Handle(e *sim.Engine, op int32, arg int64) {
	i := int32(arg)
	switch op {
	case nvDeliver:
		c := *p.ops.At(i)
		p.ops.Free(i)
		p.env.Delivered(e, Delivery{Op: c.op, Times: c.times})
	case nvResume:
		w := *p.warps.At(i)
		*p.warps.At(i) = nil
		p.warps.Free(i)
		if w.Resume != nil {
			w.Resume(e, w)
		}
	}
}
