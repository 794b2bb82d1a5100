// Posting rate over threads x QPs x WQEs per doorbell x publication style
// (paper Table 5). Every WQE is a real 8 B inline RDMA write; every
// doorbell goes through the full record + fence + doorbell sequence with
// GPU-scope ordering (mini-gda's default). No NIC consumes the queues, so
// producers never wait for slots: the figures are the submission side's
// ceiling, the part the GPU pays.
#include <algorithm>

#include "common.cuh"
#include "wqe.cuh"

namespace mbn {

constexpr uint32_t kRateSqBBs = 1024;

// Shared per-QP state of the shared-QP styles, one 128 B line each.
struct QPState {
  unsigned long long resv;   // slots reserved
  unsigned long long ready;  // slots published, in order
  unsigned int lock;
  unsigned int pi;           // lock style: slots posted
  unsigned long long pad[13];
};

struct RateArgs {
  const DevQP *qps;
  QPState *st;
  const uint4 *src;
  uint32_t len;
  int32_t threads_per_qp;
  int32_t per_db;
  int32_t n;  // WQEs per thread
  int *flag;
};

__device__ __forceinline__ bool wait_ready(QPState *s, unsigned long long want, int *flag) {
  uint64_t t0 = gtime();
  while (ld_acquire_gpu_b64(&s->ready) != want) {
    if (timed_out(t0, flag)) return false;
  }
  return true;
}

template <int STYLE>
__global__ void rate_kernel(RateArgs a) {
  int gtid = blockIdx.x * blockDim.x + threadIdx.x;
  int qi = gtid / a.threads_per_qp;
  DevQP q = a.qps[qi];
  QPState *s = a.st + qi;
  uint32_t nbb = wqe_bbs(wqe_ds(a.len, true));
  if (STYLE == MBN_STYLE_THREAD) {
    // The thread owns the QP: producer index in a register.
    uint32_t pi = 0;
    Ctrl8 c = {0, 0};
    for (int i = 0; i < a.n; i += a.per_db) {
      for (int j = 0; j < a.per_db; ++j) {
        c = build_write(q, pi, q.raddr, a.src, a.len, true);
        pi += nbb;
      }
      ring_db<MBN_ORDER_GPU_FENCE>(q, pi, c);
    }
  } else if (STYLE == MBN_STYLE_COOP) {
    // One atomic reserves 32 slots; lanes build in lockstep; the last lane
    // publishes the group with one record + doorbell, after the previous
    // group of this QP (other warps) has published.
    int lane = threadIdx.x & 31;
    for (int i = 0; i < a.n; ++i) {
      unsigned long long base = 0;
      if (lane == 0) base = atomicAdd(&s->resv, 32ull);
      base = __shfl_sync(0xffffffffu, base, 0);
      unsigned long long slot = base + (unsigned long long)lane;
      Ctrl8 c = build_write(q, (uint32_t)(slot * nbb), q.raddr, a.src, a.len, true);
      __syncwarp();
      if (lane == 31) {
        if (wait_ready(s, base, a.flag)) {
          ring_db<MBN_ORDER_GPU_FENCE>(q, (uint32_t)((base + 32ull) * nbb), c);
          st_release_gpu_b64(&s->ready, base + 32ull);
        }
      }
      __syncwarp();
      if (*(volatile int *)a.flag) break;
    }
  } else if (STYLE == MBN_STYLE_HANDOFF) {
    // Per-thread slots published in reservation order; the thread that
    // completes a group of per_db rings for it.
    for (int i = 0; i < a.n; ++i) {
      unsigned long long slot = atomicAdd(&s->resv, 1ull);
      Ctrl8 c = build_write(q, (uint32_t)(slot * nbb), q.raddr, a.src, a.len, true);
      if (!wait_ready(s, slot, a.flag)) break;
      if ((slot + 1ull) % (unsigned long long)a.per_db == 0ull) {
        ring_db<MBN_ORDER_GPU_FENCE>(q, (uint32_t)((slot + 1ull) * nbb), c);
      }
      st_release_gpu_b64(&s->ready, slot + 1ull);
    }
  } else {
    // A QP lock held across reserve, build and doorbell of each WQE.
    for (int i = 0; i < a.n; ++i) {
      uint64_t t0 = gtime();
      bool ok = true;
      while (atomicCAS(&s->lock, 0u, 1u) != 0u) {
        if (timed_out(t0, a.flag)) {
          ok = false;
          break;
        }
      }
      if (!ok) break;
      fence_acq_rel_gpu();
      uint32_t slot = *(volatile unsigned int *)&s->pi;
      Ctrl8 c = build_write(q, slot * nbb, q.raddr, a.src, a.len, true);
      ring_db<MBN_ORDER_GPU_FENCE>(q, (slot + 1u) * nbb, c);
      *(volatile unsigned int *)&s->pi = slot + 1u;
      fence_acq_rel_gpu();
      atomicExch(&s->lock, 0u);
    }
  }
}

static void launch_rate(int style, int blocks, int tpb, const RateArgs &a) {
  switch (style) {
    case MBN_STYLE_THREAD: MBN_LAUNCH(rate_kernel<MBN_STYLE_THREAD>, blocks, tpb, a); break;
    case MBN_STYLE_COOP: MBN_LAUNCH(rate_kernel<MBN_STYLE_COOP>, blocks, tpb, a); break;
    case MBN_STYLE_HANDOFF: MBN_LAUNCH(rate_kernel<MBN_STYLE_HANDOFF>, blocks, tpb, a); break;
    default: MBN_LAUNCH(rate_kernel<MBN_STYLE_LOCK>, blocks, tpb, a); break;
  }
}

}  // namespace mbn

using namespace mbn;

extern "C" int32_t mbn_rate(const mbn_rate_config *cfg, mbn_rate_result *out) {
  MBN_REQUIRE_INIT();
  MBN_ARG(cfg && out, "cfg and out must be set");
  const mbn_device_info &di = device_info();
  mbn_rate_config c = *cfg;
  MBN_ARG(c.style >= MBN_STYLE_THREAD && c.style <= MBN_STYLE_LOCK, "style %d out of range", c.style);
  MBN_ARG(c.target == MBN_DB_HOST || c.target == MBN_DB_DEVICE, "target %d out of range", c.target);
  MBN_ARG(c.threads >= 1 && c.qps >= 1 && c.qps <= 4096 && c.threads % c.qps == 0,
          "threads %d must be a positive multiple of qps %d (qps <= 4096)", c.threads, c.qps);
  MBN_ARG(c.blocks >= 1 && c.blocks <= di.sms && c.threads % c.blocks == 0 && c.threads / c.blocks <= 1024,
          "blocks %d must divide threads %d, at most %d SMs and 1024 threads per block", c.blocks, c.threads,
          di.sms);
  if (c.inline_bytes == 0) c.inline_bytes = 8;
  MBN_ARG(c.inline_bytes > 0 && c.inline_bytes <= 220 && c.inline_bytes % 4 == 0,
          "inline_bytes %d must be a multiple of 4 in 4..220", c.inline_bytes);
  int tpq = c.threads / c.qps;
  int tpb = c.threads / c.blocks;
  if (c.style == MBN_STYLE_THREAD) {
    MBN_ARG(tpq == 1, "style thread needs one thread per QP (threads %d, qps %d)", c.threads, c.qps);
  }
  if (c.style == MBN_STYLE_COOP) {
    MBN_ARG(tpq % 32 == 0 && tpb % 32 == 0, "style coop needs whole warps per QP and per block");
    c.per_doorbell = 32;
  }
  if (c.style == MBN_STYLE_LOCK) c.per_doorbell = 1;
  MBN_ARG(c.per_doorbell >= 1 && c.per_doorbell <= 256, "per_doorbell %d out of range (1..256)", c.per_doorbell);
  // Blocks that wait on each other must all be resident: one per SM.
  uint32_t nbb = wqe_bbs(wqe_ds((uint32_t)c.inline_bytes, true));

  DevBuf sq, dbrec, qps, st, src, flag, dbdev;
  HostMapped dbhost;
  MBN_CUDA(sq.alloc((size_t)c.qps * kRateSqBBs * 64));
  MBN_CUDA(dbrec.alloc((size_t)c.qps * 8));
  MBN_CUDA(qps.alloc(sizeof(DevQP) * c.qps));
  MBN_CUDA(st.alloc(sizeof(QPState) * c.qps));
  MBN_CUDA(src.alloc(256));
  MBN_CUDA(flag.alloc(sizeof(int)));
  uint64_t *db;
  const size_t db_stride = 256;  // one doorbell region per QP, as UAR pages give
  if (c.target == MBN_DB_HOST) {
    MBN_CUDA(dbhost.alloc((size_t)c.qps * db_stride));
    db = dbhost.dp<uint64_t>();
  } else {
    MBN_CUDA(dbdev.alloc((size_t)c.qps * db_stride));
    db = dbdev.as<uint64_t>();
  }
  uint8_t pay[256];
  payload_pattern(pay, sizeof pay, (uint32_t)c.inline_bytes, 2);
  MBN_CUDA(cudaMemcpy(src.p, pay, sizeof pay, cudaMemcpyHostToDevice));
  std::vector<DevQP> hq(c.qps);
  for (int i = 0; i < c.qps; ++i) {
    DevQP &q = hq[i];
    memset(&q, 0, sizeof q);
    q.sq = sq.as<uint8_t>() + (size_t)i * kRateSqBBs * 64;
    q.dbrec = dbrec.as<uint32_t>() + 2 * i;
    q.db = db + i * (db_stride / 8);
    q.bb_mask = kRateSqBBs - 1;
    q.qpn = 0x100u + (uint32_t)i;
    q.rkey = 0x1000u + (uint32_t)i;
    q.lkey = 0x2000u + (uint32_t)i;
    q.raddr = 0x7f0000000000ull + ((uint64_t)i << 20);
  }
  MBN_CUDA(cudaMemcpy(qps.p, hq.data(), sizeof(DevQP) * c.qps, cudaMemcpyHostToDevice));

  RateArgs a;
  a.qps = qps.as<DevQP>();
  a.st = st.as<QPState>();
  a.src = src.as<uint4>();
  a.len = (uint32_t)c.inline_bytes;
  a.threads_per_qp = tpq;
  a.per_db = c.per_doorbell;
  a.flag = flag.as<int>();

  // WQEs per thread: a multiple of what one doorbell covers for this
  // thread's share, so every posted WQE is announced.
  int unit = c.per_doorbell;
  if (c.style == MBN_STYLE_COOP) unit = 1;  // each thread posts one WQE per warp group
  if (c.style == MBN_STYLE_HANDOFF) {
    // The QP's total (tpq * n) must be a multiple of per_db.
    int g = c.per_doorbell;
    int t = tpq;
    while (t % 2 == 0 && g % 2 == 0) {
      t /= 2;
      g /= 2;
    }
    unit = g;
  }
  auto run = [&](int n, double *ms) -> int32_t {
    MBN_CUDA(cudaMemset(st.p, 0, sizeof(QPState) * c.qps));
    MBN_CUDA(cudaMemset(dbrec.p, 0, (size_t)c.qps * 8));
    a.n = n;
    cudaEvent_t e0, e1;
    MBN_CUDA(cudaEventCreate(&e0));
    MBN_CUDA(cudaEventCreate(&e1));
    cudaEventRecord(e0);
    launch_rate(c.style, c.blocks, tpb, a);
    cudaEventRecord(e1);
    int32_t rc = sync_and_check(flag.as<int>(), "rate");
    float f = 0;
    cudaEventElapsedTime(&f, e0, e1);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    *ms = f;
    return rc;
  };
  int n = c.wqes_per_thread;
  double ms = 0;
  if (n <= 0) {
    int pilot = std::max(unit, (64 / unit) * unit);
    int32_t rc = run(pilot, &ms);
    if (rc) return rc;
    double per = ms / pilot;
    n = per > 0 ? (int)(20.0 / per) : pilot;
    n = std::max(pilot, std::min(n, 1 << 20));
  }
  n = std::max(unit, n / unit * unit);
  int32_t rc = run(n, &ms);
  if (rc) return rc;

  // Check what the last doorbell of each QP announced.
  std::vector<uint32_t> rec(2 * c.qps);
  MBN_CUDA(cudaMemcpy(rec.data(), dbrec.p, (size_t)c.qps * 8, cudaMemcpyDeviceToHost));
  std::vector<uint64_t> dbv(c.qps);
  for (int i = 0; i < c.qps; ++i) {
    if (c.target == MBN_DB_HOST) {
      dbv[i] = dbhost.hp<uint64_t>()[i * (db_stride / 8)];
    } else {
      MBN_CUDA(cudaMemcpy(&dbv[i], db + i * (db_stride / 8), 8, cudaMemcpyDeviceToHost));
    }
  }
  int fails = 0;
  uint64_t per_qp = (uint64_t)tpq * (uint64_t)n;
  for (int i = 0; i < c.qps; ++i) {
    uint32_t want_pi = (uint32_t)(per_qp * nbb);
    uint32_t got = __builtin_bswap32(rec[2 * i + MLX5_SND_DBR]);
    uint32_t w0 = __builtin_bswap32((uint32_t)dbv[i]);
    uint32_t idx = (w0 >> 8) & 0xffffu;
    uint32_t want_idx = (uint32_t)((per_qp - 1) * nbb) & 0xffffu;
    uint32_t qpn = __builtin_bswap32((uint32_t)(dbv[i] >> 32)) >> 8;
    if (got != (want_pi & 0xffffu) || idx != want_idx || qpn != hq[i].qpn) ++fails;
  }
  memset(out, 0, sizeof *out);
  out->wqes = (int64_t)c.threads * n;
  out->doorbells = out->wqes / c.per_doorbell;
  out->elapsed_ms = ms;
  out->mmsg_per_s = ms > 0 ? (double)out->wqes / (ms * 1e3) : 0;
  out->check_failures = fails;
  out->wqes_per_thread = n;
  if (fails) {
    set_error("rate: %d of %d QPs ended with a wrong doorbell record or doorbell", fails, c.qps);
    return MBN_ERR_CHECK;
  }
  return MBN_OK;
}
