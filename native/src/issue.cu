// Single-thread issue time per ordering mode and doorbell target (paper
// Table 3, Table 4, Fig. 3) and the micro-operations the model composes
// issue from.
#include <algorithm>

#include "common.cuh"
#include "efa.cuh"
#include "wqe.cuh"

namespace mbn {

constexpr int kIssueMaxOps = 4096;  // CQ entries: one CQE per operation, no wrap
constexpr uint32_t kIssueSqBBs = 256;

struct IssueArgs {
  DevQP q;
  const uint4 *src;
  uint32_t len;
  uint32_t inl;
  int32_t total;
  int32_t warm;
  uint32_t gap_ns;
  uint32_t pad;
  const uint8_t *cq;  // 64 B CQEs, as the NIC would have written them
  uint32_t *cq_dbrec;
  uint64_t *cyc;      // per timed op
  uint64_t *gt;       // per timed op
  uint64_t *meta;     // [0] timer overhead, [1] clock ticks, [2] globaltimer ns over the run
  int *flag;
};

template <int MODE>
__global__ void issue_kernel(IssueArgs a) {
  uint64_t ov = ~0ull;
  for (int i = 0; i < 64; ++i) {
    uint64_t x = clk();
    uint64_t y = clk();
    if (y - x < ov) ov = y - x;
  }
  uint32_t pi = 0, ci = 0;
  uint32_t nbb = wqe_bbs(wqe_ds(a.len, a.inl != 0));
  uint64_t gs = gtime();
  uint64_t cs = clk();
  for (int it = 0; it < a.total; ++it) {
    spin_ns(a.gap_ns);
    uint64_t g0 = gtime();
    uint64_t c0 = clk();
    Ctrl8 c = build_write(a.q, pi, a.q.raddr, a.src, a.len, a.inl != 0);
    pi += nbb;
    ring_db<MODE>(a.q, pi, c);
    uint64_t c1 = clk();
    uint64_t g1 = gtime();
    // Completion-style consumer-index update, untimed, as the single-op
    // experiment does after each put: read the CQE, check owner and
    // opcode, advance the consumer index and store the CQ doorbell record.
    uint4 cqe = ld_cg_v4(a.cq + (size_t)ci * 64 + 48);
    uint32_t op_own = cqe.w >> 24;
    if ((op_own & 1u) != 0u || (op_own >> 4) != 0u) atomicExch(a.flag, kErrCheck);
    ++ci;
    st_b32(a.cq_dbrec, bswap32(ci & 0xffffffu));
    if (it >= a.warm) {
      a.cyc[it - a.warm] = c1 - c0;
      a.gt[it - a.warm] = g1 - g0;
    }
  }
  uint64_t ce = clk();
  uint64_t ge = gtime();
  a.meta[0] = ov;
  a.meta[1] = ce - cs;
  a.meta[2] = ge - gs;
}

template <int MODE>
static void launch_issue(const IssueArgs &a) {
  MBN_LAUNCH(issue_kernel<MODE>, 1, 1, a);
}

// The same experiment posting EFA WQEs as DP Direct does: the whole 64 B
// WQE copied into the ring, the producer counter advanced, the ordering of
// MODE, the 32-bit doorbell. Untimed after each, the completion side an
// EFA poller does: read the 16 B CQE's common part and count it consumed.
struct EfaIssueArgs {
  EfaQP q;
  uint32_t len;
  int32_t total;
  int32_t warm;
  uint32_t gap_ns;
  const uint8_t *cq;  // 32 B CQEs, zero
  uint32_t *consumed;
  uint64_t *cyc;
  uint64_t *gt;
  uint64_t *meta;
  int *flag;
};

template <int MODE>
__global__ void efa_issue_kernel(EfaIssueArgs a) {
  uint64_t ov = ~0ull;
  for (int i = 0; i < 64; ++i) {
    uint64_t x = clk();
    uint64_t y = clk();
    if (y - x < ov) ov = y - x;
  }
  uint32_t pc = 0, cc = 0;
  uint64_t gs = gtime();
  uint64_t cs = clk();
  for (int it = 0; it < a.total; ++it) {
    spin_ns(a.gap_ns);
    uint64_t g0 = gtime();
    uint64_t c0 = clk();
    efa_build_write(a.q, pc, a.q.raddr, a.len);
    ++pc;
    efa_ring<MODE>(a.q, pc);
    uint64_t c1 = clk();
    uint64_t g1 = gtime();
    uint4 cqe = ld_cg_v4(a.cq + (size_t)cc * 32);
    if ((cqe.x >> 24 & 1u) != 0u) atomicExch(a.flag, kErrCheck);  // phase of an unwritten CQE
    ++cc;
    st_b32(a.consumed, cc);
    if (it >= a.warm) {
      a.cyc[it - a.warm] = c1 - c0;
      a.gt[it - a.warm] = g1 - g0;
    }
  }
  uint64_t ce = clk();
  uint64_t ge = gtime();
  a.meta[0] = ov;
  a.meta[1] = ce - cs;
  a.meta[2] = ge - gs;
}

template <int MODE>
static void launch_efa_issue(const EfaIssueArgs &a) {
  MBN_LAUNCH(efa_issue_kernel<MODE>, 1, 1, a);
}

// ------------------------------------------------------------ micro-ops

struct MicroArgs {
  unsigned int *ctr;     // atomic target
  const uint32_t *chase; // L2 pointer chase
  uint8_t *sbuf;         // 64 KiB store target
  const uint8_t *cq;     // zeroed CQEs (valid, owner 0)
  uint32_t *cq_dbrec;
  const uint64_t *hbuf;  // host-mapped, zero
  uint64_t *hstore;      // host-mapped store target
  unsigned long long *ready;
  int32_t iters;
  int32_t host_iters;
  uint64_t *out;         // cycle totals, see below
  int *flag;
};

// out: [0] overhead, [1] atomic, [2] l2, [3] store16, [4] cq, [5] host load,
// [6] host store, [7] handoff (256 steps), [8] clock ticks, [9] gt ns,
// [10] sink
__global__ void micro_kernel(MicroArgs a) {
  int tid = threadIdx.x;
  uint64_t gs = 0, cs = 0;
  if (tid == 0) {
    gs = gtime();
    cs = clk();
    uint64_t ov = ~0ull;
    for (int i = 0; i < 64; ++i) {
      uint64_t x = clk();
      uint64_t y = clk();
      if (y - x < ov) ov = y - x;
    }
    a.out[0] = ov;
    uint32_t sink = 0;

    // Dependent atomics: the next address depends on the previous result.
    uint32_t v = 0;
    uint64_t t0 = clk();
    for (int i = 0; i < a.iters; ++i) v = atomicAdd(a.ctr + (v >> 30), 1u);
    uint64_t t1 = clk();
    a.out[1] = t1 - t0;
    sink += v;

    // Pointer chase through a buffer larger than L1 with .cg loads (L2).
    uint32_t p = 0;
    for (int i = 0; i < 4096; ++i) p = ld_cg_b32(a.chase + p);  // warm L2
    t0 = clk();
    for (int i = 0; i < a.iters; ++i) p = ld_cg_b32(a.chase + p);
    t1 = clk();
    a.out[2] = t1 - t0;
    sink += p;

    // Back-to-back 16 B stores to distinct lines: issue cost only.
    t0 = clk();
    for (int i = 0; i < a.iters; ++i) st_v4(a.sbuf + ((uint32_t)i * 16u & 65535u), i, i, i, i);
    t1 = clk();
    a.out[3] = t1 - t0;

    // CQE consumption chain: the next CQE is read only after the previous
    // one was found valid.
    uint32_t ci = 0;
    t0 = clk();
    for (int i = 0; i < a.iters; ++i) {
      uint4 cqe = ld_cg_v4(a.cq + (size_t)(ci & 4095u) * 64 + 48);
      uint32_t op_own = cqe.w >> 24;
      if ((op_own & 1u) == 0u && (op_own >> 4) == 0u) ++ci;
      st_b32(a.cq_dbrec, bswap32(ci & 0xffffffu));
    }
    t1 = clk();
    a.out[4] = t1 - t0;
    if (ci != (uint32_t)a.iters) atomicExch(a.flag, kErrCheck);

    // Dependent loads of host-mapped memory: each crosses PCIe.
    uint64_t h = 0;
    t0 = clk();
    for (int i = 0; i < a.host_iters; ++i) h = ld_volatile_b64(a.hbuf + (h & 7u));
    t1 = clk();
    a.out[5] = t1 - t0;
    sink += (uint32_t)h;

    // Posted 8 B stores to host-mapped memory: issue cost only.
    t0 = clk();
    for (int i = 0; i < a.host_iters; ++i) st_volatile_b64(a.hstore + (i & 63), (uint64_t)i);
    t1 = clk();
    a.out[6] = t1 - t0;
    a.out[10] = sink;
  }
  __syncthreads();
  // Ordered publication across the block: thread k waits until k-1 has
  // published, then publishes. Per step = total / blockDim.
  uint64_t t0 = clk();
  uint64_t w0 = gtime();
  while (ld_acquire_gpu_b64(a.ready) != (unsigned long long)tid) {
    if (timed_out(w0, a.flag)) break;
  }
  st_release_gpu_b64(a.ready, (uint64_t)tid + 1);
  if (tid == (int)blockDim.x - 1) {
    uint64_t t1 = clk();
    a.out[7] = t1;
  }
  if (tid == 0) {
    a.out[11] = t0;
  }
  __syncthreads();
  if (tid == 0) {
    a.out[8] = clk() - cs;
    a.out[9] = gtime() - gs;
  }
}

}  // namespace mbn

using namespace mbn;

// issue_efa is mbn_issue for EFA WQEs (common arguments checked by it).
static int32_t issue_efa(const mbn_issue_config *cfg, mbn_stats *out) {
  MBN_ARG(cfg->inline_bytes == 0, "EFA RDMA writes carry no inline data (inline_bytes %d)", cfg->inline_bytes);
  MBN_ARG(cfg->mode != MBN_ORDER_FENCED_DBREC, "EFA has no doorbell record to fence");
  int total = cfg->iters + cfg->warmup;
  DevBuf sq, cq, consumed, cyc, gt, meta, flag;
  DoorbellPage db;
  MBN_CUDA(db.alloc(cfg->target));
  MBN_CUDA(sq.alloc(kIssueSqBBs * 64));
  MBN_CUDA(cq.alloc((size_t)kIssueMaxOps * 32));
  MBN_CUDA(consumed.alloc(64));
  MBN_CUDA(cyc.alloc(sizeof(uint64_t) * cfg->iters));
  MBN_CUDA(gt.alloc(sizeof(uint64_t) * cfg->iters));
  MBN_CUDA(meta.alloc(sizeof(uint64_t) * 4));
  MBN_CUDA(flag.alloc(sizeof(int)));
  EfaIssueArgs a;
  memset(&a, 0, sizeof a);
  a.q.db = db.ptr<uint32_t>();
  a.q.sq = sq.as<uint8_t>();
  a.q.mask = kIssueSqBBs - 1;
  a.q.dest_qp = 0x1234;
  a.q.ah = 0x42;
  a.q.rkey = 0x5678;
  a.q.lkey = 0x9abc;
  a.q.comp_req = 1;  // a single put waits for its completion
  a.q.raddr = 0x7f0000001000ull;
  a.q.laddr = 0x7f0000002000ull;
  a.len = 8;
  a.total = total;
  a.warm = cfg->warmup;
  a.gap_ns = (uint32_t)cfg->gap_ns;
  a.cq = cq.as<uint8_t>();
  a.consumed = consumed.as<uint32_t>();
  a.cyc = cyc.as<uint64_t>();
  a.gt = gt.as<uint64_t>();
  a.meta = meta.as<uint64_t>();
  a.flag = flag.as<int>();
  with_ordering(cfg->mode, [&](auto m) { launch_efa_issue<decltype(m)::value>(a); });
  int32_t rc = sync_and_check(flag.as<int>(), "issue");
  if (rc) return rc;
  return read_samples(cyc, gt, meta, cfg->iters, out);
}

extern "C" int32_t mbn_issue(const mbn_issue_config *cfg, mbn_stats *out) {
  MBN_REQUIRE_INIT();
  MBN_ARG(cfg && out, "cfg and out must be set");
  MBN_ARG(cfg->mode >= 0 && cfg->mode < MBN_ORDER_COUNT, "mode %d out of range", cfg->mode);
  MBN_ARG(cfg->target == MBN_DB_HOST || cfg->target == MBN_DB_DEVICE, "target %d out of range", cfg->target);
  MBN_ARG(cfg->inline_bytes >= 0 && cfg->inline_bytes <= 220 && cfg->inline_bytes % 4 == 0,
          "inline_bytes %d must be a multiple of 4 in 0..220", cfg->inline_bytes);
  MBN_ARG(cfg->iters > 0 && cfg->warmup >= 0 && cfg->iters + cfg->warmup <= kIssueMaxOps,
          "iters + warmup must be 1..%d", kIssueMaxOps);
  MBN_ARG(cfg->gap_ns >= 0 && cfg->gap_ns <= 1000000, "gap_ns %d out of range", cfg->gap_ns);
  MBN_ARG(cfg->wqe_format == MBN_WQE_MLX5 || cfg->wqe_format == MBN_WQE_EFA, "wqe_format %d out of range", cfg->wqe_format);
  if (cfg->wqe_format == MBN_WQE_EFA) return issue_efa(cfg, out);
  int total = cfg->iters + cfg->warmup;

  DevBuf sq, dbrec, src, cq, cqdb, cyc, gt, meta, flag;
  DoorbellPage db;
  MBN_CUDA(db.alloc(cfg->target));
  MBN_CUDA(sq.alloc(kIssueSqBBs * 64));
  MBN_CUDA(dbrec.alloc(64));
  MBN_CUDA(src.alloc(256));
  MBN_CUDA(cq.alloc((size_t)kIssueMaxOps * 64));  // zero: opcode REQ, owner 0 = valid on the first pass
  MBN_CUDA(cqdb.alloc(64));
  MBN_CUDA(cyc.alloc(sizeof(uint64_t) * cfg->iters));
  MBN_CUDA(gt.alloc(sizeof(uint64_t) * cfg->iters));
  MBN_CUDA(meta.alloc(sizeof(uint64_t) * 4));
  MBN_CUDA(flag.alloc(sizeof(int)));
  uint8_t pay[256];
  uint32_t len = cfg->inline_bytes > 0 ? (uint32_t)cfg->inline_bytes : 8u;
  payload_pattern(pay, sizeof pay, len, 1);
  MBN_CUDA(cudaMemcpy(src.p, pay, sizeof pay, cudaMemcpyHostToDevice));
  IssueArgs a;
  memset(&a, 0, sizeof a);
  a.q.db = db.ptr<uint64_t>();
  a.q.sq = sq.as<uint8_t>();
  a.q.dbrec = dbrec.as<uint32_t>();
  a.q.bb_mask = kIssueSqBBs - 1;
  a.q.qpn = 0x1234;
  a.q.rkey = 0x5678;
  a.q.lkey = 0x9abc;
  a.q.fm_ce_se = 0x08;  // CQ update: signaled, as a single put waits for its CQE
  a.q.raddr = 0x7f0000001000ull;
  a.q.laddr = 0x7f0000002000ull;
  a.src = src.as<uint4>();
  a.len = len;
  a.inl = cfg->inline_bytes > 0 ? 1 : 0;
  a.total = total;
  a.warm = cfg->warmup;
  a.gap_ns = (uint32_t)cfg->gap_ns;
  a.cq = cq.as<uint8_t>();
  a.cq_dbrec = cqdb.as<uint32_t>();
  a.cyc = cyc.as<uint64_t>();
  a.gt = gt.as<uint64_t>();
  a.meta = meta.as<uint64_t>();
  a.flag = flag.as<int>();
  with_ordering(cfg->mode, [&](auto m) { launch_issue<decltype(m)::value>(a); });
  int32_t rc = sync_and_check(flag.as<int>(), "issue");
  if (rc) return rc;
  return read_samples(cyc, gt, meta, cfg->iters, out);
}

extern "C" int32_t mbn_micro(int32_t iters, mbn_micro_result *out) {
  MBN_REQUIRE_INIT();
  MBN_ARG(out, "out must be set");
  MBN_ARG(iters >= 16 && iters <= 1000000, "iters %d out of range (16..1000000)", iters);
  const int chase_n = 1 << 18;  // 1 MiB: past L1, well inside L2
  DevBuf ctr, chase, sbuf, cq, cqdb, ready, outb, flag;
  HostMapped hbuf;
  MBN_CUDA(ctr.alloc(64));
  MBN_CUDA(chase.alloc(sizeof(uint32_t) * chase_n));
  MBN_CUDA(sbuf.alloc(65536));
  MBN_CUDA(cq.alloc(4096 * 64));
  MBN_CUDA(cqdb.alloc(64));
  MBN_CUDA(ready.alloc(64));
  MBN_CUDA(outb.alloc(sizeof(uint64_t) * 16));
  MBN_CUDA(flag.alloc(sizeof(int)));
  MBN_CUDA(hbuf.alloc(4096));
  // A single cycle through the chase buffer with a stride that defeats
  // prefetching and spreads over L2 slices.
  std::vector<uint32_t> nx(chase_n);
  const uint32_t stride = 40503u;  // odd, so the cycle covers every entry
  for (uint32_t i = 0; i < (uint32_t)chase_n; ++i) nx[i] = (i + stride) & (uint32_t)(chase_n - 1);
  MBN_CUDA(cudaMemcpy(chase.p, nx.data(), sizeof(uint32_t) * chase_n, cudaMemcpyHostToDevice));
  MicroArgs a;
  a.ctr = ctr.as<unsigned int>();
  a.chase = chase.as<uint32_t>();
  a.sbuf = sbuf.as<uint8_t>();
  a.cq = cq.as<uint8_t>();
  a.cq_dbrec = cqdb.as<uint32_t>();
  a.hbuf = hbuf.dp<uint64_t>();
  a.hstore = hbuf.dp<uint64_t>() + 64;
  a.ready = ready.as<unsigned long long>();
  a.iters = iters;
  a.host_iters = std::min(iters, 512);
  a.out = outb.as<uint64_t>();
  a.flag = flag.as<int>();
  MBN_LAUNCH(micro_kernel, 1, 256, a);
  int32_t rc = sync_and_check(flag.as<int>(), "micro");
  if (rc) return rc;
  uint64_t h[16];
  MBN_CUDA(cudaMemcpy(h, outb.p, sizeof h, cudaMemcpyDeviceToHost));
  double mhz = h[9] ? (double)h[8] * 1000.0 / (double)h[9] : 0;
  if (mhz <= 0) {
    set_error("micro: no clock reading");
    return MBN_ERR_CHECK;
  }
  double ns = 1000.0 / mhz;
  double ov = (double)h[0];
  memset(out, 0, sizeof *out);
  out->clock_mhz = mhz;
  out->timer_overhead_cycles = ov;
  out->atomic_ns = ((double)h[1] - ov) / iters * ns;
  out->l2_load_ns = ((double)h[2] - ov) / iters * ns;
  out->store16_ns = ((double)h[3] - ov) / iters * ns;
  out->cq_consume_ns = ((double)h[4] - ov) / iters * ns;
  out->host_load_ns = ((double)h[5] - ov) / a.host_iters * ns;
  out->host_store_ns = ((double)h[6] - ov) / a.host_iters * ns;
  out->handoff_ns = h[7] > h[11] ? (double)(h[7] - h[11]) / 256.0 * ns : 0;
  return MBN_OK;
}
