package results

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"

	"moebench/internal/report"
	"moebench/microbench"
	"moebench/native"
	"moebench/native/calib"
	"moebench/profile"
	"moebench/transport/gda"
	"moebench/transport/proxy"
)

// GPUCalibration is calibrate's document: the GPU side of GPU-initiated
// submission as measured on one GPU, and the constants fitted to it.
type GPUCalibration struct {
	Header    report.Header      `json:"-"`
	Measured  gda.Measured       `json:"measured"`
	Constants []profile.Constant `json:"constants"`
	// Out is where the constants were written; Rates are the posting
	// rates' rows in the order measured, with the paper's figure of each.
	Out   string          `json:"-"`
	Rates []calib.RateRow `json:"-"`
}

// Head is the document's header.
func (d *GPUCalibration) Head() report.Header { return d.Header }

// paperIssueNs is Table 4's P-IB issue time of an ordering mode, ns.
func paperIssueNs(mode string) float64 {
	o, _ := gda.ParseOrdering(mode)
	return 1000 * microbench.Table4(false)[o].Issue
}

// paperProxyNs is Table 3's P-IB enqueue (issue) and round trip of a
// handoff variant, ns, cold as the paper measures them.
func paperProxyNs(variant string) (enqueue, rtt float64) {
	h, _ := proxy.ParseHandoff(variant)
	for _, c := range microbench.Table3Proxy() {
		if c.Handoff == h {
			return 1000 * c.Issue[0], 1000 * c.RTT[0]
		}
	}
	return math.NaN(), math.NaN()
}

// WriteText writes the measurements section by section with the paper's
// figures beside them, then the constants fitted.
func (d *GPUCalibration) WriteText(w io.Writer) error {
	m := d.Measured
	t := &calibTable{w: w, tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight), m: &m}
	fmt.Fprintf(w, "moebench calibrate: %s, driver %s, CUDA %s, %d SMs, SM clock %.0f MHz (clock64/globaltimer)\n", m.GPU, m.Driver, m.CUDA, m.SMs, m.ClockMHz)
	fmt.Fprintf(w, "host: %s\n", m.Host)
	fmt.Fprintf(w, "WQE check: %d GPU-built mlx5 RDMA-write WQEs decoded and matched field by field\n\n", m.WQEsVerified)
	t.issue()
	t.inline()
	t.micro()
	t.rates(d.Rates)
	t.proxy()
	t.capacity()
	t.kernels()
	fmt.Fprintf(w, "\nConstants written to %s\n", d.Out)
	t.p("name\tvalue\tunit\t\n")
	for _, c := range d.Constants {
		if strings.HasSuffix(c.Name, ".ns") && c.Value == 0 {
			continue
		}
		t.p("%s\t%s\t%s\t\n", c.Name, fmt3(c.Value), c.Unit)
	}
	return t.tw.Flush()
}

// calibTable renders measurements section by section: a title on w, then
// the section's rows aligned through tw.
type calibTable struct {
	w  io.Writer
	tw *tabwriter.Writer
	m  *gda.Measured
}

func (t *calibTable) p(format string, a ...any) { fmt.Fprintf(t.tw, format, a...) }

// issue is one thread's issue per ordering, mlx5 and then EFA's.
func (t *calibTable) issue() {
	m := t.m
	fmt.Fprintln(t.w, "Issue, one thread, 8 B inline RDMA write, median ns (paper P-IB: Table 4)")
	t.p("mode\thost-mapped doorbell\tdevice doorbell\tpaper P-IB\t\n")
	for _, mode := range native.OrderingModes {
		t.p("%s\t%.0f\t%.0f\t%.0f\t\n", mode, m.IssueNs[mode], m.IssueDeviceDoorbellNs[mode], paperIssueNs(mode))
	}
	t.p("%s\t%.0f\t\t\t\n", native.NoDoorbell, m.IssueNoDoorbellNs)
	t.tw.Flush()
	if len(m.EFAIssueNs) == 0 {
		return
	}
	fmt.Fprintf(t.w, "\nIssue posting EFA's SRD WQEs as DP Direct does (64 B WQE, 32-bit producer-counter doorbell; %d checked byte for byte) beside mlx5's, one thread, 8 B RDMA write, median ns\n", m.EFAWQEsVerified)
	t.p("mode\tEFA pointer, host-mapped\tEFA pointer, device\tmlx5 pointer, host-mapped\tmlx5 8 B inline, host-mapped\t\n")
	for _, mode := range native.EFAOrderingModes {
		t.p("%s\t%.0f\t%.0f\t%.0f\t%.0f\t\n", mode, m.EFAIssueNs[mode], m.EFAIssueDeviceDoorbellNs[mode], m.PointerIssueNs[mode], m.IssueNs[mode])
	}
	t.p("%s\t%.0f\t\t\t%.0f\t\n", native.NoDoorbell, m.EFAIssueNoDoorbellNs, m.IssueNoDoorbellNs)
	t.tw.Flush()
}

func (t *calibTable) inline() {
	m := t.m
	fmt.Fprintln(t.w, "\nInline payload, host-mapped doorbell, median ns (paper Fig. 3: about 100 ns per 16 B)")
	t.p("bytes\t16 B chunks\tgpu-fence\tnone\t\n")
	for _, b := range calib.InlineSizes {
		if v, ok := m.InlineIssueNs[b]; ok {
			t.p("%d\t%d\t%.0f\t%.0f\t\n", b, gda.InlineChunks(b), v, m.InlineIssueNoneNs[b])
		}
	}
	t.tw.Flush()
	sf, _ := gda.InlineSlope(m.InlineIssueNs)
	sn, _ := gda.InlineSlope(m.InlineIssueNoneNs)
	fmt.Fprintf(t.w, "slope: %.1f ns per 16 B with gpu-fence, %.1f ns without ordering\n", sf, sn)
}

func (t *calibTable) micro() {
	m := t.m
	fmt.Fprintln(t.w, "\nMicro-operations, one thread, ns")
	t.p("atomic\tL2 load\tstore16\thandoff\tCQ consume\thost load (PCIe)\thost store\t\n")
	t.p("%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.0f\t%.1f\t\n", m.AtomicNs, m.L2LoadNs, m.Store16Ns, m.HandoffNs, m.CQConsumeNs, m.HostLoadNs, m.HostStoreNs)
	t.tw.Flush()
}

// rates are the posting rates beside the paper's figure of the row
// measured in the same place.
func (t *calibTable) rates(rows []calib.RateRow) {
	fmt.Fprintln(t.w, "\nPosting rate, 8 B inline, gpu-fence ordering, M msg/s (paper P-IB: Table 5, with a NIC)")
	t.p("threads\tQPs\tSMs\tWQEs/doorbell\tstyle\tdoorbell\tmeasured\tpaper P-IB\t\n")
	for i, r := range t.m.Rates {
		paper := ""
		if i < len(rows) && rows[i].Paper > 0 {
			paper = fmt.Sprintf("%.3g", rows[i].Paper)
		}
		target := r.Target
		if target == "" {
			target = t.m.DoorbellTarget
		}
		t.p("%d\t%d\t%d\t%d\t%s\t%s\t%.3g\t%s\t\n", r.Threads, r.QPs, r.SMs, r.PerDoorbell, r.Style, target, r.Mps, paper)
	}
	t.tw.Flush()
}

func (t *calibTable) proxy() {
	fmt.Fprintln(t.w, "\nProxy handoff, one GPU thread, CPU worker thread on mapped host rings, median ns")
	t.p("variant\tenqueue\tpaper issue\tGPU->CPU->GPU round trip\tpaper RTT (with NIC)\t\n")
	for _, v := range native.EnqueueVariants {
		enq, rtt := paperProxyNs(v)
		t.p("%s\t%.0f\t%.0f\t%.0f\t%.0f\t\n", v, t.m.EnqueueNs[v], enq, t.m.HandoffRTTNs[v], rtt)
	}
	t.tw.Flush()
}

// capacity is the workers' rate, a row per worker count and a column per
// batch, in the order measured.
func (t *calibTable) capacity() {
	caps := t.m.WorkerCapacity
	if len(caps) == 0 {
		return
	}
	fmt.Fprintln(t.w, "\nCPU worker capacity, M descriptors/s consumed (32 GPU-fed rings; paper Table 10 includes ibv_post_send)")
	var batches, ws []int
	byW := map[int]map[int]float64{}
	for _, c := range caps {
		if !slices.Contains(batches, c.Batch) {
			batches = append(batches, c.Batch)
		}
		if byW[c.Workers] == nil {
			byW[c.Workers] = map[int]float64{}
			ws = append(ws, c.Workers)
		}
		byW[c.Workers][c.Batch] = c.Mps
	}
	t.p("workers")
	for _, b := range batches {
		t.p("\tB=%d", b)
	}
	t.p("\t\n")
	for _, wk := range ws {
		t.p("%d", wk)
		for _, b := range batches {
			t.p("\t%.3g", byW[wk][b])
		}
		t.p("\t\n")
	}
	t.tw.Flush()
}

func (t *calibTable) kernels() {
	if len(t.m.KernelCost) == 0 {
		return
	}
	fmt.Fprintln(t.w, "\nEnclosing kernel, 256 threads per block (paper Fig. 9, Table 14)")
	t.p("caller\tblocks\tpath\tmessages/block\tregs\tblocks/SM\tms\tloss %%\t\n")
	for _, k := range t.m.KernelCost {
		what := k.Path
		if k.Path != "absent" && k.Msgs == 0 {
			what += " (dormant)"
		} else if k.Wait {
			what += " + wait"
		}
		t.p("%s\t%d\t%s\t%d\t%d\t%d\t%.3f\t%.1f\t\n", k.Caller, k.Blocks, what, k.Msgs, k.Regs, k.MaxBlocksPerSM, k.Ms, k.LossPct)
	}
	t.tw.Flush()
}

func fmt3(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e6 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.4g", v)
}
