package traces

import (
	"errors"
	"fmt"
	"io"
	"math"
)

// Version is the format version written by this package. Readers accept
// exactly this version; a later version is an error, not a guess.
const Version = 1

// ID spaces a trace's expert ids can live in.
const (
	Logical  = "logical"  // model expert ids, [0, Experts)
	Physical = "physical" // replica ids after redundant-expert placement, [0, PhysicalExperts)
)

// Limits on what a header may claim. They are far above any deployed model
// (DeepSeek-V3: 61 layers, 256 experts + 32 redundant, top-8) and exist so
// that a corrupt or hostile header is an error before anything is sized by it.
const (
	MaxLayers  = 1 << 16
	MaxExperts = 1 << 20
	MaxTopK    = 1 << 10
	// MaxSelections bounds one record's Tokens×TopK (1 GiB of ids).
	MaxSelections = 1 << 28
)

// ErrTruncated and ErrChecksum are wrapped by read errors so callers can tell
// a cut-short file from a damaged one.
var (
	ErrTruncated = errors.New("truncated")
	// ErrOption is wrapped by import errors that an ImportOptions field
	// (a command-line flag) must fix, not the data.
	ErrOption   = errors.New("import option")
	ErrChecksum = errors.New("checksum mismatch")
)

// Header describes a whole trace. It is written once, before the records.
type Header struct {
	Version         int    `json:"version"`
	IDSpace         string `json:"id_space"`
	Experts         int    `json:"experts"`                    // logical experts
	PhysicalExperts int    `json:"physical_experts,omitempty"` // only when IDSpace is physical
	TopK            int    `json:"top_k"`
	EPSize          int    `json:"ep_size,omitempty"`       // ranks; 0 = unknown
	GPUsPerNode     int    `json:"gpus_per_node,omitempty"` // 0 = unknown
	Layers          int    `json:"layers"`
	Steps           int    `json:"steps,omitempty"` // 0 = unknown or streaming
	// PhysicalToLogical[layer][physical] is the logical expert behind each
	// physical id; present exactly when IDSpace is physical.
	PhysicalToLogical [][]int32 `json:"physical_to_logical,omitempty"`
	Provenance        string    `json:"provenance,omitempty"` // free text: tool, model, command
	// Synthesized is true when the tokens were made up to match per-expert
	// counts: such a trace carries no real co-selection of experts.
	Synthesized bool `json:"synthesized,omitempty"`
}

// IDLimit is the exclusive upper bound of the ids records may carry.
func (h *Header) IDLimit() int {
	if h.IDSpace == Physical {
		return h.PhysicalExperts
	}
	return h.Experts
}

// Validate checks the header's fields against each other and the limits.
func (h *Header) Validate() error {
	switch {
	case h.Version != Version:
		return fmt.Errorf("version %d is not supported (want %d)", h.Version, Version)
	case h.IDSpace != Logical && h.IDSpace != Physical:
		return fmt.Errorf("id_space %q is neither %q nor %q", h.IDSpace, Logical, Physical)
	case h.Experts < 1 || h.Experts > MaxExperts:
		return fmt.Errorf("experts = %d is out of range [1, %d]", h.Experts, MaxExperts)
	case h.TopK < 1 || h.TopK > MaxTopK:
		return fmt.Errorf("top_k = %d is out of range [1, %d]", h.TopK, MaxTopK)
	case h.Layers < 1 || h.Layers > MaxLayers:
		return fmt.Errorf("layers = %d is out of range [1, %d]", h.Layers, MaxLayers)
	case h.EPSize < 0 || h.EPSize > MaxExperts:
		return fmt.Errorf("ep_size = %d is out of range [0, %d]", h.EPSize, MaxExperts)
	case h.GPUsPerNode < 0 || h.GPUsPerNode > MaxExperts:
		return fmt.Errorf("gpus_per_node = %d is out of range [0, %d]", h.GPUsPerNode, MaxExperts)
	case h.Steps < 0 || h.Steps > math.MaxInt32:
		return fmt.Errorf("steps = %d is out of range [0, %d]", h.Steps, math.MaxInt32)
	case h.EPSize > 0 && h.GPUsPerNode > 0 && h.EPSize%h.GPUsPerNode != 0:
		return fmt.Errorf("ep_size = %d does not fill whole nodes of gpus_per_node = %d", h.EPSize, h.GPUsPerNode)
	}
	if h.IDSpace == Logical {
		if h.PhysicalExperts != 0 || h.PhysicalToLogical != nil {
			return errors.New("physical_experts and physical_to_logical are only allowed with id_space physical")
		}
		return nil
	}
	if h.PhysicalExperts < 1 || h.PhysicalExperts > MaxExperts {
		return fmt.Errorf("physical_experts = %d is out of range [1, %d]", h.PhysicalExperts, MaxExperts)
	}
	if len(h.PhysicalToLogical) != h.Layers {
		return fmt.Errorf("physical_to_logical has %d layers, header says %d", len(h.PhysicalToLogical), h.Layers)
	}
	for l, row := range h.PhysicalToLogical {
		if len(row) != h.PhysicalExperts {
			return fmt.Errorf("physical_to_logical[%d] has %d entries, want physical_experts = %d", l, len(row), h.PhysicalExperts)
		}
		for p, e := range row {
			if e < 0 || int(e) >= h.Experts {
				return fmt.Errorf("physical_to_logical[%d,%d] = %d is out of range [0, %d)", l, p, e, h.Experts)
			}
		}
	}
	return nil
}

// Record is one routing decision: the top-k experts of every token one rank
// sent through one MoE layer in one step.
type Record struct {
	Step  int
	Layer int
	Rank  int // −1 = not recorded
	// TopkIdx holds Tokens()×TopK expert ids, row-major; −1 = no selection.
	TopkIdx []int32
	// TopkWeights is parallel to TopkIdx, or nil when the source had none.
	TopkWeights []float32
}

// Tokens returns how many tokens the record routes under top-k k.
func (r *Record) Tokens(k int) int {
	if k <= 0 {
		return 0
	}
	return len(r.TopkIdx) / k
}

// Validate checks a record against its header. The error names the first
// offending field and, for ids, the [token, slot] position.
func (r *Record) Validate(h *Header) error {
	if r.Layer < 0 || r.Layer >= h.Layers {
		return fmt.Errorf("layer = %d is out of range [0, %d)", r.Layer, h.Layers)
	}
	if r.Step < 0 || r.Step > math.MaxInt32 || (h.Steps > 0 && r.Step >= h.Steps) {
		hi := h.Steps
		if hi == 0 {
			hi = math.MaxInt32 + 1
		}
		return fmt.Errorf("step = %d is out of range [0, %d)", r.Step, hi)
	}
	if r.Rank < -1 || r.Rank > math.MaxInt32 || (h.EPSize > 0 && r.Rank >= h.EPSize) {
		hi := h.EPSize
		if hi == 0 {
			hi = math.MaxInt32 + 1
		}
		return fmt.Errorf("rank = %d is out of range [-1, %d)", r.Rank, hi)
	}
	k := h.TopK
	if len(r.TopkIdx)%k != 0 {
		return fmt.Errorf("topk_idx has %d entries, not a multiple of top_k = %d", len(r.TopkIdx), k)
	}
	if len(r.TopkIdx) > MaxSelections {
		return fmt.Errorf("topk_idx has %d entries, more than the limit %d", len(r.TopkIdx), MaxSelections)
	}
	lim := int32(h.IDLimit())
	for i, e := range r.TopkIdx {
		if e < -1 || e >= lim {
			return fmt.Errorf("topk_idx[%d,%d] = %d is out of range [-1, %d)", i/k, i%k, e, lim)
		}
	}
	if err := distinctRows(r.TopkIdx, k); err != nil {
		return err
	}
	if r.TopkWeights != nil {
		if len(r.TopkWeights) != len(r.TopkIdx) {
			return fmt.Errorf("topk_weights has %d entries, topk_idx has %d", len(r.TopkWeights), len(r.TopkIdx))
		}
		for i, w := range r.TopkWeights {
			if math.IsNaN(float64(w)) || math.IsInf(float64(w), 0) {
				return fmt.Errorf("topk_weights[%d,%d] = %v is not finite", i/k, i%k, w)
			}
		}
	}
	return nil
}

// distinctRows checks that no token (row of k ids) picks an expert twice,
// as a router's top-k cannot; -1 (no selection) may repeat.
func distinctRows(ids []int32, k int) error {
	var seen map[int32]int
	for t := 0; t < len(ids); t += k {
		row := ids[t : t+k]
		if k > 64 {
			if seen == nil {
				seen = make(map[int32]int, k)
			}
			clear(seen)
		}
		for j, e := range row {
			if e < 0 {
				continue
			}
			prev := -1
			if seen != nil {
				if p, ok := seen[e]; ok {
					prev = p
				}
				seen[e] = j
			} else {
				for i := range j {
					if row[i] == e {
						prev = i
						break
					}
				}
			}
			if prev >= 0 {
				return fmt.Errorf("topk_idx[%d,%d] = %d: the token already picked expert %d in slot %d", t/k, j, e, e, prev)
			}
		}
	}
	return nil
}

// Reader streams a trace. Next returns io.EOF after the last record; the
// slices of a returned Record are reused by the following call to Next, so
// a caller that keeps a record must copy it (Clone).
type Reader interface {
	Header() Header
	Next() (Record, error)
}

// Memory is a trace held in memory, as a Reader: its header, and its
// records read once each, in order (a trace a program built or filtered).
type Memory struct {
	H       Header
	Records []Record
}

func (m *Memory) Header() Header { return m.H }

// Next is the first record not yet read, io.EOF after the last.
func (m *Memory) Next() (Record, error) {
	if len(m.Records) == 0 {
		return Record{}, io.EOF
	}
	rec := m.Records[0]
	m.Records = m.Records[1:]
	return rec, nil
}

// ReadCloser is a Reader over a file that must be closed.
type ReadCloser interface {
	Reader
	io.Closer
}

// Writer writes records after a header. Close writes whatever ends the
// stream and flushes; it does not close the underlying io.Writer.
type Writer interface {
	Write(r Record) error
	Close() error
}

// Clone returns a copy of r that does not share memory with it.
func (r Record) Clone() Record {
	c := r
	if r.TopkIdx != nil {
		c.TopkIdx = append([]int32(nil), r.TopkIdx...)
	}
	if r.TopkWeights != nil {
		c.TopkWeights = append(make([]float32, 0, len(r.TopkWeights)), r.TopkWeights...)
	}
	return c
}

// Equal reports whether two records are identical, weights compared bit for
// bit (so −0 ≠ +0 and a round trip must preserve both).
func (r Record) Equal(o Record) bool {
	if r.Step != o.Step || r.Layer != o.Layer || r.Rank != o.Rank ||
		len(r.TopkIdx) != len(o.TopkIdx) || (r.TopkWeights == nil) != (o.TopkWeights == nil) ||
		len(r.TopkWeights) != len(o.TopkWeights) {
		return false
	}
	for i := range r.TopkIdx {
		if r.TopkIdx[i] != o.TopkIdx[i] {
			return false
		}
	}
	for i := range r.TopkWeights {
		if math.Float32bits(r.TopkWeights[i]) != math.Float32bits(o.TopkWeights[i]) {
			return false
		}
	}
	return true
}

// Copy writes every record of r to w and returns how many it wrote. It does
// not call w.Close.
func Copy(w Writer, r Reader) (int64, error) {
	var n int64
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if err := w.Write(rec); err != nil {
			return n, err
		}
		n++
	}
}
