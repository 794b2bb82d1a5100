// mbn_layer: the native layer's host driver, with the kernels that reset
// signals, make tokens, stand in for the experts and check every token.
#include <math.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>

#include "layer_host.h"
#include "layer_kernels.cuh"

namespace mbn {

// ------------------------------------------------------------ aux kernels

__global__ void layer_reset(LayerArgs a, int phase) {
  const LDims &d = a.d;
  const int i0 = blockIdx.x * blockDim.x + threadIdx.x, n = gridDim.x * blockDim.x;
  if (i0 == 0) {
    DevCtl *c = a.dctl;
    c->origin = ~0ull;
    c->rank_done = 0;
    c->bg_done = 0;
    c->abort = 0;
    c->err_code = c->err_rank = c->err_a = c->err_b = c->err_c = 0;
    c->nic_wqes = c->nic_cqes = c->nic_bytes = c->nic_dbs = c->nic_torn = c->nic_switches = c->bg_posts = 0;
  }
  for (int i = i0; i < d.Rd; i += n) {
    RankCtl *r = &a.rctl[i];
    r->t_start = ~0ull;
    r->t_issue = r->t_send = r->t_wait = r->t_ready = 0;
    r->posts = r->copies = r->post_cycles = 0;
    r->bar_count = 0;
  }
  for (int i = i0; i < d.Rd * d.E; i += n) {
    a.counter[i] = 0;
    a.finish[i] = 0;
    a.countsent[i] = 0;
  }
  for (int i = i0; i < d.R; i += n) a.pace_next[i] = 0;
  for (int rl = 0; rl < d.Rd; ++rl) {
    uint8_t *me = a.bases[d.rank0 + rl];
    if (d.mode == MBN_LMODE_NORMAL) {
      const int words = d.C * d.R * kNormalWordStride;
      if (phase == 0) {
        long long *cnt = reinterpret_cast<long long *>(me + d.off_ncnt);
        for (int i = i0; i < d.R * d.C; i += n) cnt[i] = 0;
      }
      unsigned int *tl = reinterpret_cast<unsigned int *>(me + (phase == 0 ? d.off_ntail : d.off_ctail));
      unsigned int *hd = reinterpret_cast<unsigned int *>(me + (phase == 0 ? d.off_nhead : d.off_chead));
      for (int i = i0; i < words; i += n) tl[i] = hd[i] = 0;
      continue;
    }
    if (phase == 0) {
      long long *cnt = reinterpret_cast<long long *>(me + d.off_count);
      for (int i = i0; i < d.nl * d.R; i += n) cnt[i] = 0;
      int *pc = reinterpret_cast<int *>(me + d.off_pcount);
      for (int i = i0; i < d.nl; i += n) pc[i] = 0;
    } else {
      long long *f = reinterpret_cast<long long *>(me + d.off_flag);
      for (int i = i0; i < d.E; i += n) f[i] = 0;
    }
  }
}

__global__ void layer_init_x(LayerArgs a) {
  const LDims &d = a.d;
  const int chunks = d.H / 8;
  const long long total = (long long)d.Rd * d.T * chunks;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const int rl = (int)(i / ((long long)d.T * chunks));
    const long long r = i % ((long long)d.T * chunks);
    const int t = (int)(r / chunks), c = (int)(r % chunks);
    const int rank = d.rank0 + rl;
    const uint4 v = x_chunk(rank, t, c);
    st_v4(a.bases[rank] + d.off_x + ((uint64_t)t * d.H + (uint64_t)c * 8) * 2, v.x, v.y, v.z, v.w);
  }
}

// The experts' stand-in: output = dequantized input x expert_factor.
// One block per (rank, local expert).
__global__ void layer_experts(LayerArgs a) {
  const LDims &d = a.d;
  const int rl = blockIdx.x / d.nl, le = blockIdx.x % d.nl;
  const int rank = d.rank0 + rl;
  uint8_t *me = a.bases[rank];
  const int n = reinterpret_cast<const int *>(me + d.off_pcount)[le];
  const int RT = d.R * d.T, chunks = d.H / 8;
  const float factor = expert_factor(rank * d.nl + le);
  const float *pscales = reinterpret_cast<const float *>(me + d.off_pscales);
  for (long long i = threadIdx.x; i < (long long)n * chunks; i += blockDim.x) {
    const int p = (int)(i / chunks), c = (int)(i % chunks);
    const uint64_t row = (uint64_t)le * RT + p;
    uint4 y;
    if (d.fp8) {
      const uint64_t q = *reinterpret_cast<const uint64_t *>(me + d.off_packed + row * d.dbytes + (uint64_t)c * 8);
      const float scale = pscales[((uint64_t)le * d.nscales + c / 16) * RT + p];
      y = expert_chunk_fp8(make_uint2((uint32_t)q, (uint32_t)(q >> 32)), scale, factor);
    } else {
      const uint4 x = *reinterpret_cast<const uint4 *>(me + d.off_packed + row * d.dbytes + (uint64_t)c * 16);
      y = expert_chunk_bf16(x, factor);
    }
    *reinterpret_cast<uint4 *>(me + d.off_y + row * d.cmsg + (uint64_t)c * 16) = y;
  }
}

__device__ __forceinline__ void add_problem(VerifyOut *v, int kind, int rank, int x, int y, int z, int w) {
  const unsigned long long i = atomicAdd(&v->count, 1ull);
  if (i < (unsigned long long)kMaxProblems) {
    Problem p;
    p.kind = kind;
    p.rank = rank;
    p.a = x;
    p.b = y;
    p.c = z;
    p.d = w;
    v->first[i] = p;
  }
}

// A token's payload as stored (FP8 with per-128 scales, or BF16) against
// the cast of token t of src: wrong and wrong_scale become 1 + a chunk
// that differs (0: none). scale_at(k) reads group k's stored scale. Every
// lane of the warp calls (the cast reduces over half-warps).
template <class ScaleAt>
__device__ __forceinline__ void payload_diff(const LDims &d, int src, int t, const uint8_t *payload, ScaleAt scale_at,
                                             int lane, int &wrong, int &wrong_scale) {
  const int chunks = d.H / 8;
  for (int base = 0; base < chunks; base += 32) {
    const int c = base + lane;
    const bool ok = c < chunks;
    const uint4 x = ok ? x_chunk(src, t, c) : make_uint4(0, 0, 0, 0);
    if (d.fp8) {
      float f[8];
      unpack_bf16x8(x, f);
      float scale;
      const uint2 q = cast_chunk_fp8(f, scale);
      if (ok) {
        const uint64_t got = *reinterpret_cast<const uint64_t *>(payload + (uint64_t)c * 8);
        if (got != ((uint64_t)q.y << 32 | q.x)) wrong = c + 1;
        if ((c & 15) == 0 && scale_at(c >> 4) != __float_as_uint(scale)) wrong_scale = c + 1;
      }
    } else if (ok) {
      const uint4 got = *reinterpret_cast<const uint4 *>(payload + (uint64_t)c * 16);
      if (got.x != x.x || got.y != x.y || got.z != x.z || got.w != x.w) wrong = c + 1;
    }
  }
}

// Chunk c of token t of src as the experts saw it: BF16, and under FP8
// its cast and the group's scale. Every lane of the warp calls.
struct XChunk {
  uint4 x;
  uint2 q;
  float scale;
};

__device__ __forceinline__ XChunk x_seen(const LDims &d, int src, int t, int c, bool ok) {
  XChunk r{ok ? x_chunk(src, t, c) : make_uint4(0, 0, 0, 0), make_uint2(0, 0), 1.f};
  if (d.fp8) {
    float f[8];
    unpack_bf16x8(r.x, f);
    r.q = cast_chunk_fp8(f, r.scale);
  }
  return r;
}

__device__ __forceinline__ uint4 expert_out(const LDims &d, const XChunk &x, int e) {
  const float factor = expert_factor(e);
  return d.fp8 ? expert_chunk_fp8(x.q, x.scale, factor) : expert_chunk_bf16(x.x, factor);
}

// One block per (receiving rank, local expert, source): the count, the
// range, every packed token and its payload, recomputed from the source's
// tokens.
__global__ void verify_dispatch(LayerArgs a, const int32_t *expected, int *hits, int *pmark, VerifyOut *v) {
  const LDims &d = a.d;
  const int b = blockIdx.x;
  const int rl = b / (d.nl * d.R), le = (b / d.R) % d.nl, src = b % d.R;
  const int rank = d.rank0 + rl, e = rank * d.nl + le;
  const int RT = d.R * d.T;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, nw = blockDim.x >> 5;
  const uint8_t *me = a.bases[rank];
  const long long rg = reinterpret_cast<const long long *>(me + d.off_range)[le * d.R + src];
  const long long cnt = reinterpret_cast<const long long *>(me + d.off_count)[le * d.R + src];
  int begin = (int)(rg >> 32), n = (int)(rg & 0xffffffffll);
  const int want = expected[src * d.E + e];
  if (tid == 0 && (n != want || cnt != -(long long)(want + 1))) add_problem(v, kPCount, rank, src, le, n, want);
  if (begin < 0 || n < 0 || begin + n > RT) {
    if (tid == 0) add_problem(v, kPRange, rank, src, le, begin, n);
    return;
  }
  for (int j = tid; j < n; j += blockDim.x) atomicAdd(&pmark[((size_t)rl * d.nl + le) * RT + begin + j], 1);
  const int32_t *srcinfo = reinterpret_cast<const int32_t *>(me + d.off_srcinfo);
  const float *pscales = reinterpret_cast<const float *>(me + d.off_pscales);
  for (int j = warp; j < n; j += nw) {
    const int p = begin + j;
    int tok = srcinfo[le * RT + p];
    int bad = 0;
    if (lane == 0) {
      if (tok < 0 || tok >= a.ntok[src]) {
        add_problem(v, kPToken, rank, src, le, p, tok);
        bad = 1;
      } else {
        int k = 0;
        const int32_t *row = a.topk + ((size_t)src * d.T + tok) * d.K;
        while (k < d.K && row[k] != e) ++k;
        if (k == d.K) {
          add_problem(v, kPNotSelected, rank, src, le, tok, e);
          bad = 1;
        } else {
          atomicAdd(&hits[((size_t)src * d.T + tok) * d.K + k], 1);
        }
      }
    }
    if (__shfl_sync(0xffffffffu, bad, 0)) continue;
    tok = __shfl_sync(0xffffffffu, tok, 0);
    const uint8_t *row = me + d.off_packed + ((uint64_t)le * RT + p) * d.dbytes;
    int wrong = 0, wrong_scale = 0;
    payload_diff(
        d, src, tok, row,
        [&](int k) { return __float_as_uint(pscales[((uint64_t)le * d.nscales + k) * RT + p]); }, lane, wrong,
        wrong_scale);
    wrong = __reduce_max_sync(0xffffffffu, (unsigned)wrong);
    wrong_scale = __reduce_max_sync(0xffffffffu, (unsigned)wrong_scale);
    if (lane == 0) {
      if (wrong) add_problem(v, kPPayload, rank, src, le, tok, wrong - 1);
      if (wrong_scale) add_problem(v, kPScale, rank, src, le, tok, wrong_scale - 1);
      atomicAdd(&v->checked, 1ull);
    }
  }
}

// One block per (rank, local expert): packed slots tiled exactly once.
__global__ void verify_slots(LayerArgs a, const int *pmark, VerifyOut *v) {
  const LDims &d = a.d;
  const int rl = blockIdx.x / d.nl, le = blockIdx.x % d.nl;
  const int rank = d.rank0 + rl, RT = d.R * d.T;
  const int n = reinterpret_cast<const int *>(a.bases[rank] + d.off_pcount)[le];
  for (int p = threadIdx.x; p < RT; p += blockDim.x) {
    const int m = pmark[((size_t)rl * d.nl + le) * RT + p];
    if (m != (p < n ? 1 : 0)) add_problem(v, kPSlots, rank, le, p, m, n);
  }
}

// One block per (rank, token): every combine slot holds the expert's
// output, and the combined token equals the weighted sum.
__global__ void verify_combine(LayerArgs a, VerifyOut *v) {
  const LDims &d = a.d;
  const int rl = blockIdx.x / d.T, t = blockIdx.x % d.T;
  const int rank = d.rank0 + rl;
  const uint8_t *me = a.bases[rank];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, nw = blockDim.x >> 5;
  if (t == 0) {
    const long long *f = reinterpret_cast<const long long *>(me + d.off_flag);
    for (int e = tid; e < d.E; e += blockDim.x) {
      if (f[e] != 1) add_problem(v, kPFlag, rank, e, (int)f[e], 0, 0);
    }
  }
  if (t >= a.ntok[rank]) return;
  const int chunks = d.H / 8;
  const int32_t *idx = a.topk + ((size_t)rank * d.T + t) * d.K;
  const float *w = a.weights + ((size_t)rank * d.T + t) * d.K;
  int wrong_slot = 0, wrong_out = 0, slot_e = -1;
  for (int base = warp * 32; base < chunks; base += nw * 32) {
    const int c = base + lane;
    const bool ok = c < chunks;
    const XChunk x = x_seen(d, rank, t, c, ok);
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int k = 0; k < d.K; ++k) {
      const int e = idx[k];
      if (e < 0) continue;
      const uint4 y = expert_out(d, x, e);
      if (ok) {
        const uint4 got = *reinterpret_cast<const uint4 *>(me + d.off_crecv + ((uint64_t)e * d.T + t) * d.cmsg +
                                                          (uint64_t)c * 16);
        if (got.x != y.x || got.y != y.y || got.z != y.z || got.w != y.w) {
          wrong_slot = c + 1;
          slot_e = e;
        }
      }
      reduce_step(acc, y, w[k]);
    }
    if (ok) {
      const uint4 o = pack_bf16x8(acc);
      const uint4 got = *reinterpret_cast<const uint4 *>(me + d.off_out + ((uint64_t)t * d.H + (uint64_t)c * 8) * 2);
      if (got.x != o.x || got.y != o.y || got.z != o.z || got.w != o.w) wrong_out = c + 1;
    }
  }
  if (wrong_slot) add_problem(v, kPCombineSlot, rank, slot_e, t, wrong_slot - 1, 0);
  if (wrong_out) add_problem(v, kPCombined, rank, t, wrong_out - 1, 0, 0);
  if (tid == 0) atomicAdd(&v->checked, 1ull);
}

// Normal mode's input: every token's message, cast once before the timed
// launches (a warp per token).
__global__ void layer_cast_normal(LayerArgs a) {
  const LDims &d = a.d;
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  const int nw = (gridDim.x * blockDim.x) >> 5;
  for (int i = warp; i < d.Rd * d.T; i += nw) {
    const int rl = i / d.T, t = i % d.T, rank = d.rank0 + rl;
    if (t >= a.ntok[rank]) continue;
    normal_message(a, rank, t, a.bases[rank] + d.off_nsend + (uint64_t)t * d.nmsg, lane);
  }
}

// Normal mode's experts: each received row's output is the rank's partial
// (its experts' outputs, weighted). A warp per row.
__global__ void layer_experts_normal(LayerArgs a) {
  const LDims &d = a.d;
  const int per = gridDim.x / d.Rd;
  const int rl = blockIdx.x / per, part = blockIdx.x % per;
  const int rank = d.rank0 + rl;
  uint8_t *me = a.bases[rank];
  const int total = *reinterpret_cast<const int *>(me + d.off_ntotal);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, nw = blockDim.x >> 5;
  const int chunks = d.H / 8;
  for (int p = part * nw + warp; p < total; p += per * nw) {
    const uint8_t *row = me + d.off_nrecv + (uint64_t)p * d.nmsg;
    for (int c = lane; c < chunks; c += 32) {
      const uint4 y = normal_partial(d, row, rank, c);
      *reinterpret_cast<uint4 *>(me + d.off_ny + (uint64_t)p * d.cmsg + (uint64_t)c * 16) = y;
    }
  }
}

// Normal dispatch, one block per (receiving rank, source): per channel the
// count, then every row: the token in the channel's range and in order,
// selecting an expert here, with its payload, scales, ids and weights.
// hits[(src * T + t) * R + rank] counts deliveries.
__global__ void verify_normal_dispatch(LayerArgs a, int *hits, VerifyOut *v) {
  const LDims &d = a.d;
  const int rl = blockIdx.x / d.R, src = blockIdx.x % d.R;
  const int rank = d.rank0 + rl;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, nw = blockDim.x >> 5;
  const uint8_t *me = a.bases[rank];
  const long long *range = reinterpret_cast<const long long *>(me + d.off_nrange);
  const int32_t *idx = a.topk + (size_t)src * d.T * d.K;
  const float *wts = a.weights + (size_t)src * d.T * d.K;
  __shared__ int s_want;
  for (int c = 0; c < d.C; ++c) {
    int t0, t1;
    normal_range(a.ntok[src], d.C, c, t0, t1);
    if (tid == 0) s_want = 0;
    __syncthreads();
    for (int t = t0 + tid; t < t1; t += blockDim.x) {
      if (normal_goes(idx + (size_t)t * d.K, d.K, d.nl, rank)) atomicAdd(&s_want, 1);
    }
    __syncthreads();
    const long long rg = range[src * d.C + c];
    const int begin = (int)(rg >> 32), n = (int)(rg & 0xffffffffll);
    if (tid == 0 && n != s_want) add_problem(v, kPCount, rank, src, c, n, s_want);
    if (begin < 0 || n < 0 || (long long)begin + n > (long long)d.R * d.T) {
      if (tid == 0) add_problem(v, kPRange, rank, src, c, begin, n);
      __syncthreads();
      continue;
    }
    for (int j = warp; j < n; j += nw) {
      const uint8_t *row = me + d.off_nrecv + (uint64_t)(begin + j) * d.nmsg;
      const int t = (int)ld_cg_b32(row);
      const int prev = j > 0 ? (int)ld_cg_b32(row - d.nmsg) : t0 - 1;
      if (t < t0 || t >= t1 || t <= prev || !normal_goes(idx + (size_t)t * d.K, d.K, d.nl, rank)) {
        if (lane == 0) add_problem(v, kPNormalRow, rank, src, c, j, t);
        continue;
      }
      if (lane == 0) atomicAdd(&hits[((size_t)src * d.T + t) * d.R + rank], 1);
      int wrong = 0, wrong_scale = 0, wrong_topk = 0;
      payload_diff(
          d, src, t, row + 16,
          [&](int k) { return *reinterpret_cast<const uint32_t *>(row + nmsg_scales(d) + (uint64_t)k * 4); }, lane, wrong,
          wrong_scale);
      for (int k = lane; k < d.K; k += 32) {
        const uint32_t id = *reinterpret_cast<const uint32_t *>(row + nmsg_topk(d) + k * 4);
        const uint32_t w = *reinterpret_cast<const uint32_t *>(row + nmsg_topk(d) + (d.K + k) * 4);
        if (id != (uint32_t)idx[(size_t)t * d.K + k] || w != __float_as_uint(wts[(size_t)t * d.K + k])) {
          wrong_topk = k + 1;
        }
      }
      wrong = __reduce_max_sync(0xffffffffu, (unsigned)wrong);
      wrong_scale = __reduce_max_sync(0xffffffffu, (unsigned)wrong_scale);
      wrong_topk = __reduce_max_sync(0xffffffffu, (unsigned)wrong_topk);
      if (lane == 0) {
        if (wrong) add_problem(v, kPPayload, rank, src, c, t, wrong - 1);
        if (wrong_scale) add_problem(v, kPScale, rank, src, c, t, wrong_scale - 1);
        if (wrong_topk) add_problem(v, kPNormalTopk, rank, src, c, t, wrong_topk - 1);
        atomicAdd(&v->checked, 1ull);
      }
    }
    __syncthreads();
  }
}

// Normal combine, one block per (rank, token): the sum over ranks, in rank
// order, of each rank's partial recomputed from the token.
__global__ void verify_normal_combine(LayerArgs a, VerifyOut *v) {
  const LDims &d = a.d;
  const int rl = blockIdx.x / d.T, t = blockIdx.x % d.T;
  const int rank = d.rank0 + rl;
  if (t >= a.ntok[rank]) return;
  const uint8_t *me = a.bases[rank];
  const int chunks = d.H / 8, tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, nw = blockDim.x >> 5;
  const int32_t *idx = a.topk + ((size_t)rank * d.T + t) * d.K;
  const float *w = a.weights + ((size_t)rank * d.T + t) * d.K;
  int wrong = 0;
  for (int base = warp * 32; base < chunks; base += nw * 32) {
    const int c = base + lane;
    const bool ok = c < chunks;
    const XChunk x = x_seen(d, rank, t, c, ok);
    float sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int r = 0; r < d.R; ++r) {
      if (!normal_goes(idx, d.K, d.nl, r)) continue;
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int k = 0; k < d.K; ++k) {
        const int e = idx[k];
        if (e < 0 || e / d.nl != r) continue;
        reduce_step(acc, expert_out(d, x, e), w[k]);
      }
      sum_step(sum, pack_bf16x8(acc));
    }
    if (ok) {
      const uint4 o = pack_bf16x8(sum);
      const uint4 got = *reinterpret_cast<const uint4 *>(me + d.off_out + ((uint64_t)t * d.H + (uint64_t)c * 8) * 2);
      if (got.x != o.x || got.y != o.y || got.z != o.z || got.w != o.w) wrong = c + 1;
    }
  }
  wrong = __reduce_max_sync(0xffffffffu, (unsigned)wrong);
  if (lane == 0 && wrong) add_problem(v, kPCombined, rank, t, wrong - 1, 0, 0);
  if (tid == 0) atomicAdd(&v->checked, 1ull);
}

__global__ void layer_clock(uint32_t spin_ns, unsigned long long *out) {
  const uint64_t g0 = gtime(), c0 = clk();
  while (gtime() - g0 < spin_ns) {
  }
  out[0] = clk() - c0;
  out[1] = gtime() - g0;
}

// ------------------------------------------------------------------ host

using KernelFn = void (*)(LayerArgs);

static KernelFn kernel_for(int phase, int path) {
  static const KernelFn table[2][5] = {
      {layer_kernel<0, MBN_LPATH_DIRECT>, layer_kernel<0, MBN_LPATH_GDA>, layer_kernel<0, MBN_LPATH_PROXY>,
       layer_kernel<0, MBN_LPATH_DC>, layer_kernel<0, MBN_LPATH_EFA>},
      {layer_kernel<1, MBN_LPATH_DIRECT>, layer_kernel<1, MBN_LPATH_GDA>, layer_kernel<1, MBN_LPATH_PROXY>,
       layer_kernel<1, MBN_LPATH_DC>, layer_kernel<1, MBN_LPATH_EFA>},
  };
  return table[phase][path];
}

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

static const char *path_name(int p) {
  switch (p) {
    case MBN_LPATH_DIRECT: return "direct";
    case MBN_LPATH_GDA: return "mini-gda";
    case MBN_LPATH_PROXY: return "mini-proxy";
    case MBN_LPATH_DC: return "dc";
    case MBN_LPATH_EFA: return "srd";
  }
  return "?";
}

static const char *phase_name(int phase) { return phase == 0 ? "dispatch" : "combine"; }

static const char *wqe_err_name(int e) {
  switch (e) {
    case MBN_WQE_BAD_DS: return "bad ds";
    case MBN_WQE_BAD_OPCODE: return "bad opcode";
    case MBN_WQE_BAD_INLINE: return "bad inline size";
    case MBN_WQE_BAD_RKEY: return "remote key or range";
    case MBN_WQE_BAD_LKEY: return "local key or range";
    case MBN_WQE_BAD_DEST: return "no such destination";
    case MBN_WQE_BAD_ALIGN: return "unaligned atomic";
  }
  return "?";
}

// Everything of one device.
struct LayerDev {
  int id = 0, rank0 = 0;
  cudaStream_t stream = nullptr;
  cudaEvent_t ev0 = nullptr, ev1 = nullptr;
  DevMem regions, ctl, work, routing, tables, queues, ringctl, verify, flush;
  LayerArgs args;
  std::unique_ptr<LayerProxy> proxy;
  int32_t *expected = nullptr;
  int *hits = nullptr, *pmark = nullptr;
  VerifyOut *vout = nullptr;
  size_t hits_bytes = 0, pmark_bytes = 0;
  ~LayerDev() {
    proxy.reset();
    cudaSetDevice(id);
    if (ev0) cudaEventDestroy(ev0);
    if (ev1) cudaEventDestroy(ev1);
    if (stream) cudaStreamDestroy(stream);
  }
};

class LayerRun {
 public:
  LayerRun(const mbn_layer_config &c, const mbn_layer_routing &r, mbn_rank_phase *t, mbn_layer_result *o)
      : c_(c), rt_(r), times_(t), out_(o) {}
  int32_t run();

 private:
  int32_t validate();
  int32_t plan();
  int32_t setup_device(LayerDev &dv, int device);
  int32_t setup_gda(LayerDev &dv);
  int32_t setup_proxy(LayerDev &dv);
  int32_t launch(int phase, int rep);
  int32_t collect(int phase, int rep);
  int32_t check_dispatch();
  int32_t check_normal_dispatch();
  int32_t check_combine();
  int32_t gather_checks(LayerDev &dv, int phase, std::vector<int> *sum);
  void note(const Problem &p, int phase);

  const mbn_layer_config c_;
  const mbn_layer_routing rt_;
  mbn_rank_phase *times_;
  mbn_layer_result *out_;
  LDims d_;
  int Rd_ = 0, qs_ = 0, nq_ = 0, workers_ = 0;
  size_t dyn_smem_ = 0;
  uint64_t sq_bytes_ = 0;
  std::vector<std::unique_ptr<LayerDev>> devs_;
  std::vector<uint64_t> bases_;
  std::vector<mbn_region> regions_;
  long long problems_ = 0;
  std::string problem_text_;
};

int32_t LayerRun::validate() {
  const mbn_layer_config &c = c_;
  MBN_ARG(c.path >= MBN_LPATH_DIRECT && c.path <= MBN_LPATH_EFA, "path %d out of range", c.path);
  MBN_ARG(c.ranks >= 1 && c.ranks <= 4096, "ranks %d out of range (1..4096)", c.ranks);
  MBN_ARG(c.gpus >= 1 && c.ranks % c.gpus == 0, "ranks %d do not spread evenly over %d GPUs", c.ranks, c.gpus);
  int ndev = 0;
  MBN_CUDA(cudaGetDeviceCount(&ndev));
  MBN_ARG(c.gpus <= ndev, "gpus %d: this host has %d", c.gpus, ndev);
  MBN_ARG(c.tokens >= 1 && c.tokens <= 65536, "tokens %d out of range (1..65536)", c.tokens);
  MBN_ARG(c.hidden >= 8 && c.hidden % 8 == 0 && c.hidden <= 65536, "hidden %d must be a multiple of 8 up to 65536",
          c.hidden);
  MBN_ARG(c.topk >= 1 && c.topk <= kCastWarps, "topk %d out of range (1..%d: one posting warp per selection)",
          c.topk, kCastWarps);
  MBN_ARG(c.experts >= c.ranks && c.experts % c.ranks == 0, "experts %d must be a positive multiple of ranks %d",
          c.experts, c.ranks);
  MBN_ARG(c.topk <= c.experts, "topk %d exceeds experts %d", c.topk, c.experts);
  MBN_ARG(c.sms_per_rank >= 1, "sms_per_rank %d must be at least 1", c.sms_per_rank);
  MBN_ARG(c.nic_sms >= 0 && c.bg_sms >= 0, "nic_sms %d and bg_sms %d must not be negative", c.nic_sms, c.bg_sms);
  MBN_ARG(c.path == MBN_LPATH_DIRECT || c.nic_sms >= 1, "path %s needs at least one SM for the emulated NIC",
          path_name(c.path));
  MBN_ARG(c.warmup >= 0 && c.reps >= 1 && c.warmup + c.reps <= 100000, "warmup %d / reps %d out of range", c.warmup,
          c.reps);
  MBN_ARG(c.timeout_ms >= 10 && c.timeout_ms <= 3600000, "timeout_ms %d out of range (10..3600000)", c.timeout_ms);
  if (c.path == MBN_LPATH_GDA || c.path == MBN_LPATH_DC || c.path == MBN_LPATH_EFA) {
    MBN_ARG(c.sq_bbs >= 8 && c.sq_bbs <= 65536 && (c.sq_bbs & (c.sq_bbs - 1)) == 0,
            "sq_bbs %d must be a power of two in 8..65536", c.sq_bbs);
    MBN_ARG(c.ordering >= MBN_ORDER_GPU_FENCE && c.ordering <= MBN_ORDER_FENCE_SYS,
            "ordering %d: the layer needs an ordered doorbell (gpu-fence .. fence-sys)", c.ordering);
    MBN_ARG(c.per_doorbell >= 1 && c.per_doorbell <= c.sq_bbs / 2, "per_doorbell %d out of range (1..%d)",
            c.per_doorbell, c.sq_bbs / 2);
    if (c.path == MBN_LPATH_GDA) {
      MBN_ARG(c.qps_per_peer >= 1 && c.qps_per_peer <= 4096, "qps_per_peer %d out of range (1..4096)",
              c.qps_per_peer);
    } else {
      MBN_ARG(c.dcis >= 1 && c.dcis <= 4096, "dcis %d out of range (1..4096)", c.dcis);
    }
  }
  if (c.path == MBN_LPATH_EFA) {
    // 16-bit request ids and buffer lengths; no doorbell record.
    MBN_ARG(c.sq_bbs <= 32768, "sq_bbs %d: an SRD queue's 16-bit request ids allow at most 32768 entries", c.sq_bbs);
    MBN_ARG(c.ordering != MBN_ORDER_FENCED_DBREC, "ordering fenced-dbrec: EFA has no doorbell record to fence");
    MBN_ARG(c.hidden * 2 + 64 <= (int)MBN_EFA_MAX_LEN, "hidden %d: a message past EFA's 64 KiB write", c.hidden);
    MBN_ARG(c.bg_warps == 0 || c.bg_bytes <= (int)MBN_EFA_MAX_LEN, "bg_bytes %d: past EFA's 64 KiB write", c.bg_bytes);
  }
  if (c.path == MBN_LPATH_PROXY) {
    MBN_ARG(c.workers >= 1 && c.rings >= c.workers, "workers %d and rings %d: need 1 <= workers <= rings", c.workers,
            c.rings);
    MBN_ARG(c.batch >= 1 && c.batch <= 256, "batch %d out of range (1..256)", c.batch);
    MBN_ARG(c.handoff >= MBN_HANDOFF_BASELINE && c.handoff <= MBN_HANDOFF_FIFO, "handoff %d out of range", c.handoff);
    MBN_ARG(c.ring_entries >= 2 && c.ring_entries <= (1 << 20) && (c.ring_entries & (c.ring_entries - 1)) == 0,
            "ring_entries %d must be a power of two in 2..2^20", c.ring_entries);
  }
  if (c.bg_warps > 0) {
    MBN_ARG(c.ranks >= 2, "background traffic needs at least 2 ranks");
    MBN_ARG(c.bg_bytes >= 16 && c.bg_bytes <= (64 << 20) && c.bg_bytes % 16 == 0,
            "bg_bytes %d must be a multiple of 16 in 16..64 MiB", c.bg_bytes);
    MBN_ARG(c.bg_channels >= 1 && c.bg_channel0 >= 0, "bg_channels %d / bg_channel0 %d out of range", c.bg_channels,
            c.bg_channel0);
    MBN_ARG(c.bg_sms >= 1 && (long long)c.bg_sms * kLayerWarps >= (long long)c.bg_warps * (c.ranks / c.gpus),
            "bg_warps %d per rank need %d SMs per GPU for background (have bg_sms %d)", c.bg_warps,
            (c.bg_warps * (c.ranks / c.gpus) + kLayerWarps - 1) / kLayerWarps, c.bg_sms);
    MBN_ARG(c.bg_head_us >= 0 && c.bg_head_us <= 1000000, "bg_head_us %d out of range", c.bg_head_us);
  }
  if (c.pace) MBN_ARG(c.line_gbs > 0 && c.msg_mps > 0, "pacing needs line_gbs and msg_mps above 0");
  MBN_ARG(c.mode == MBN_LMODE_LL || c.mode == MBN_LMODE_NORMAL, "mode %d out of range", c.mode);
  if (c.mode == MBN_LMODE_NORMAL) {
    MBN_ARG(c.path == MBN_LPATH_DIRECT, "normal mode runs on the direct path, not %s", path_name(c.path));
    MBN_ARG(c.ranks <= kNormalMaxRanks, "normal mode: %d ranks exceed the %d NVLink peers of DeepEP's intranode kernels",
            c.ranks, kNormalMaxRanks);
    MBN_ARG(c.sms_per_rank >= 2 && c.sms_per_rank % 2 == 0,
            "normal mode: sms_per_rank %d must be even (a sender and a receiver SM per channel)", c.sms_per_rank);
    MBN_ARG(c.bg_warps == 0, "normal mode runs without background traffic");
    MBN_ARG(c.buf_tokens >= 2 && c.buf_tokens <= 65536, "buf_tokens %d out of range (2..65536)", c.buf_tokens);
    MBN_ARG(c.chunk >= 1 && c.chunk <= c.buf_tokens / 2, "chunk %d out of range (1..buf_tokens/2 = %d)", c.chunk,
            c.buf_tokens / 2);
  }
  MBN_ARG(rt_.tokens_per_rank && rt_.topk_idx && rt_.topk_weights && rt_.expected_counts, "routing arrays missing");
  for (int r = 0; r < c.ranks; ++r) {
    MBN_ARG(rt_.tokens_per_rank[r] >= 0 && rt_.tokens_per_rank[r] <= c.tokens, "rank %d holds %d tokens (max %d)", r,
            rt_.tokens_per_rank[r], c.tokens);
    for (int t = 0; t < rt_.tokens_per_rank[r]; ++t) {
      for (int k = 0; k < c.topk; ++k) {
        const int e = rt_.topk_idx[((size_t)r * c.tokens + t) * c.topk + k];
        MBN_ARG(e >= -1 && e < c.experts, "rank %d token %d slot %d: expert %d out of range", r, t, k, e);
      }
    }
  }
  return MBN_OK;
}

int32_t LayerRun::plan() {
  const mbn_layer_config &c = c_;
  LDims &d = d_;
  memset(&d, 0, sizeof d);
  d.R = c.ranks;
  d.T = c.tokens;
  d.H = c.hidden;
  d.K = c.topk;
  d.E = c.experts;
  d.nl = c.experts / c.ranks;
  d.S = c.sms_per_rank;
  // The model's launch (moe.llLaunch): G warp groups cover the experts
  // over S SMs, at most one per warp.
  d.G = std::min(kMaxGroups, (d.E + d.S - 1) / d.S);
  d.wpg = kLayerWarps / d.G;
  Rd_ = c.ranks / c.gpus;
  d.Rd = Rd_;
  d.fp8 = c.fp8 ? 1 : 0;
  d.nscales = d.fp8 ? (d.H + 127) / 128 : 0;
  d.dbytes = d.H * (d.fp8 ? 1 : 2);
  d.msg = 16 + d.dbytes + d.nscales * 4;
  MBN_ARG(d.msg % 16 == 0,
          "hidden %d: a %d B dispatch message is not a whole number of 16 B vectors (DeepEP asserts the same)", d.H,
          d.msg);
  d.cmsg = d.H * 2;
  d.path = c.path;
  d.nic_blocks = c.path == MBN_LPATH_DIRECT ? 0 : c.nic_sms;
  d.bg_blocks = c.bg_warps > 0 ? c.bg_sms : 0;
  d.rank_blocks = Rd_ * d.S;
  d.sys_scope = c.gpus > 1 ? 1 : 0;
  d.mode = c.mode;
  const bool normal = c.mode == MBN_LMODE_NORMAL;
  const uint64_t RT = (uint64_t)d.R * d.T, A = 256;
  uint64_t o = 0;
  auto take = [&](uint64_t bytes) {
    const uint64_t at = o;
    o = align_up(o + bytes, A);
    return at;
  };
  if (normal) {
    d.C = d.S / 2;
    d.chunk = c.chunk;
    d.buf = c.buf_tokens;
    d.nmsg = (int32_t)align_up(16 + (uint64_t)d.dbytes + (uint64_t)d.nscales * 4 + (uint64_t)d.K * 8, 16);
    const uint64_t words = (uint64_t)d.C * d.R * kNormalWordStride * 4;
    const uint64_t ring = (uint64_t)d.C * d.R * d.buf;
    d.off_x = take((uint64_t)d.T * d.H * 2);
    d.off_out = take((uint64_t)d.T * d.H * 2);
    d.off_ncnt = take((uint64_t)d.R * d.C * 8);
    d.off_nrange = take((uint64_t)d.R * d.C * 8);
    d.off_ntotal = take(8);
    d.off_ntail = take(words);
    d.off_nhead = take(words);
    d.off_ctail = take(words);
    d.off_chead = take(words);
    d.off_nslot = take((uint64_t)d.T * d.R * 4);
    d.off_nring = take(ring * d.nmsg);
    d.off_cring = take(ring * d.cmsg);
    d.off_nrecv = take(RT * d.nmsg);
    d.off_ny = take(RT * d.cmsg);
    d.off_nsend = take((uint64_t)d.T * d.nmsg);
    d.off_fetch = take(1024 * 8);
    d.region = align_up(o, 1 << 21);
    out_->warp_groups = d.C;
    out_->warps_per_group = kNormalWarps / d.R;
    out_->buffer_bytes = (int64_t)d.region;
    return MBN_OK;
  }
  d.off_x = take((uint64_t)d.T * d.H * 2);
  d.off_send = take((uint64_t)d.T * d.msg);
  d.off_recv = take((uint64_t)d.nl * RT * d.msg);
  d.off_count = take((uint64_t)d.nl * d.R * 8);
  d.off_packed = take((uint64_t)d.nl * RT * d.dbytes);
  d.off_pscales = take((uint64_t)d.nl * d.nscales * RT * 4);
  d.off_srcinfo = take((uint64_t)d.nl * RT * 4);
  d.off_range = take((uint64_t)d.nl * d.R * 8);
  d.off_pcount = take((uint64_t)d.nl * 4);
  d.off_y = take((uint64_t)d.nl * RT * d.cmsg);
  d.off_csend = take(c.path == MBN_LPATH_DIRECT ? 0 : (uint64_t)d.nl * RT * d.cmsg);
  d.off_crecv = take((uint64_t)d.E * d.T * d.cmsg);
  d.off_flag = take((uint64_t)d.E * 8);
  d.off_out = take((uint64_t)d.T * d.H * 2);
  d.bg_area = c.bg_warps > 0 ? align_up((uint64_t)c.bg_bytes, A) : 0;
  d.off_bg = take(d.bg_area);
  d.off_fetch = take(1024 * 8);
  d.region = align_up(o, 1 << 21);
  if (c.path == MBN_LPATH_GDA) qs_ = d.R * c.qps_per_peer;
  if (c.path == MBN_LPATH_DC || c.path == MBN_LPATH_EFA) qs_ = c.dcis;
  // Per rank: each queue's ring, 64 CQEs and its doorbell line.
  sq_bytes_ = (uint64_t)qs_ * ((uint64_t)c.sq_bbs * 64 + 64 * 64 + 128);
  if (c.path == MBN_LPATH_PROXY) {
    // Worker threads spin: no more of them than cores to run on.
    const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    const int budget = std::max(1, (int)ncpu - 2);
    workers_ = std::max(1, std::min(c.workers, budget / c.ranks));
  }
  out_->warp_groups = d.G;
  out_->warps_per_group = d.wpg;
  out_->workers = workers_;
  out_->buffer_bytes = (int64_t)d.region;
  return MBN_OK;
}

int32_t LayerRun::setup_gda(LayerDev &dv) {
  const mbn_layer_config &c = c_;
  const int dc = c.path == MBN_LPATH_DC, efa = c.path == MBN_LPATH_EFA;
  const int nq = Rd_ * qs_;
  const uint32_t cq_entries = 64;
  const uint64_t per = (uint64_t)c.sq_bbs * 64 + cq_entries * 64 + 128;
  MBN_CUDA(dv.queues.alloc(dv.id, per * nq + sizeof(SendQ) * nq + sizeof(NicQ) * nq));
  uint8_t *base = dv.queues.as<uint8_t>();
  SendQ *sq = reinterpret_cast<SendQ *>(base + per * nq);
  NicQ *nqp = reinterpret_cast<NicQ *>(base + per * nq + sizeof(SendQ) * nq);
  std::vector<SendQ> hs(nq);
  std::vector<NicQ> hn(nq);
  for (int i = 0; i < nq; ++i) {
    const int rl = i / qs_, qi = i % qs_;
    const int rank = dv.rank0 + rl;
    uint8_t *q = base + per * i;
    uint8_t *cq = q + (uint64_t)c.sq_bbs * 64;
    uint8_t *line = cq + cq_entries * 64;
    SendQ &s = hs[i];
    memset(&s, 0, sizeof s);
    s.q.sq = q;
    s.q.dbrec = reinterpret_cast<uint32_t *>(line);
    s.q.db = reinterpret_cast<uint64_t *>(line + 8);
    s.q.bb_mask = (uint32_t)c.sq_bbs - 1;
    s.q.qpn = 0x1000u + (uint32_t)(rank * qs_ + qi);
    NicQ &n = hn[i];
    memset(&n, 0, sizeof n);
    n.sq = q;
    n.db = s.q.db;
    n.cq = efa ? nullptr : cq;  // the layer asks no completion of an SRD queue
    n.ci_pub = &sq[i].nic_ci;
    n.bb_mask = s.q.bb_mask;
    n.cq_mask = cq_entries - 1;
    n.src = rank;
    n.dst = dc || efa ? -1 : qi / c.qps_per_peer;
    n.dc = dc;
    n.efa = efa;
    n.cur = -1;
  }
  MBN_CUDA(cudaMemcpy(sq, hs.data(), sizeof(SendQ) * nq, cudaMemcpyHostToDevice));
  MBN_CUDA(cudaMemcpy(nqp, hn.data(), sizeof(NicQ) * nq, cudaMemcpyHostToDevice));
  dv.args.sq = sq;
  dv.args.qs_per_rank = qs_;
  dv.args.qpp = c.qps_per_peer > 0 ? c.qps_per_peer : 1;
  dv.args.dcis = c.dcis > 0 ? c.dcis : 1;
  dv.args.nq = nqp;
  dv.args.nnq = nq;
  dv.args.ordering = c.ordering;
  dv.args.per_db = c.per_doorbell;
  dv.args.cqe_every = std::max(1, std::min(64, c.sq_bbs / 4));
  nq_ = nq;
  return MBN_OK;
}

int32_t LayerRun::setup_proxy(LayerDev &dv) {
  const mbn_layer_config &c = c_;
  LayerProxy::Setup s;
  s.R = c.ranks;
  s.rank0 = dv.rank0;
  s.Rd = Rd_;
  s.workers = workers_;
  s.rings = c.rings;
  s.entries = c.ring_entries;
  s.batch = c.batch;
  s.sq_bbs = 512;
  s.cq_entries = 64;
  s.cqe_every = 64;
  s.core0 = 1 + dv.id * Rd_ * workers_;
  s.reserved0 = c.reserved_ring0 > 0 && c.reserved_ring0 < c.rings ? c.reserved_ring0 : 0;
  s.bases = bases_;
  for (auto &r : regions_) s.keys.push_back(r.key);
  s.off_fetch = d_.off_fetch;
  s.timeout_s = c.timeout_ms / 1000.0;
  dv.proxy.reset(new LayerProxy());
  int32_t rc = dv.proxy->setup(s);
  if (rc) return rc;
  const int nr = Rd_ * c.rings;
  const int nq = dv.proxy->nqps();
  MBN_CUDA(dv.ringctl.alloc(dv.id, sizeof(PRing) * nr + sizeof(unsigned long long) * 2 * nr + sizeof(NicQ) * nq));
  PRing *rings = dv.ringctl.as<PRing>();
  unsigned long long *tails = reinterpret_cast<unsigned long long *>(rings + nr);
  NicQ *nqp = reinterpret_cast<NicQ *>(tails + 2 * nr);
  std::vector<PRing> hr(nr);
  for (int i = 0; i < nr; ++i) {
    hr[i].d = dv.proxy->ring(i / c.rings, i % c.rings);
    hr[i].ctl = dv.proxy->ctl(i / c.rings, i % c.rings);
    hr[i].tail = tails + 2 * i;
    hr[i].cached = tails + 2 * i + 1;
  }
  std::vector<NicQ> hn(nq);
  const int cls_n = dv.proxy->classes();
  for (int i = 0; i < nq; ++i) {
    const int rl = i / (workers_ * cls_n * c.ranks), w = (i / (cls_n * c.ranks)) % workers_;
    const int cls = (i / c.ranks) % cls_n, dst = i % c.ranks;
    WorkerQP &q = dv.proxy->qp(rl, w, dst, cls);
    NicQ &n = hn[i];
    memset(&n, 0, sizeof n);
    n.sq = q.sq;
    n.db = q.db;
    n.cq = q.cq;
    n.ci_pub = q.ci;
    n.bb_mask = q.bbs - 1;
    n.cq_mask = 63;
    n.src = dv.rank0 + rl;
    n.dst = dst;
    n.cur = -1;
    n.host = 1;
  }
  MBN_CUDA(cudaMemcpy(rings, hr.data(), sizeof(PRing) * nr, cudaMemcpyHostToDevice));
  MBN_CUDA(cudaMemcpy(nqp, hn.data(), sizeof(NicQ) * nq, cudaMemcpyHostToDevice));
  dv.args.rings = rings;
  dv.args.nrings = c.rings;
  dv.args.layer_rings = s.reserved0 > 0 ? s.reserved0 : c.rings;
  dv.args.ring_mask = (uint32_t)c.ring_entries - 1;
  dv.args.handoff = c.handoff;
  dv.args.nq = nqp;
  dv.args.nnq = nq;
  nq_ = nq;
  sq_bytes_ = dv.proxy->host_bytes() / Rd_;
  return dv.proxy->start();
}

int32_t LayerRun::setup_device(LayerDev &dv, int device) {
  const mbn_layer_config &c = c_;
  dv.id = device;
  dv.rank0 = device * Rd_;
  MBN_CUDA(cudaSetDevice(device));
  cudaSetDeviceFlags(cudaDeviceMapHost);
  cudaGetLastError();
  cudaDeviceProp p;
  MBN_CUDA(cudaGetDeviceProperties(&p, device));
  MBN_ARG(p.cooperativeLaunch, "device %d cannot launch cooperative kernels", device);
  const int blocks = d_.rank_blocks + d_.nic_blocks + d_.bg_blocks;
  MBN_ARG(blocks <= p.multiProcessorCount,
          "%d ranks x %d SMs + %d NIC SMs + %d background SMs = %d blocks exceed device %d's %d SMs", Rd_, d_.S,
          d_.nic_blocks, d_.bg_blocks, blocks, device, p.multiProcessorCount);
  for (int other = 0; other < c.gpus; ++other) {
    if (other == device) continue;
    int can = 0;
    MBN_CUDA(cudaDeviceCanAccessPeer(&can, device, other));
    MBN_ARG(can, "device %d cannot access device %d's memory (no peer access)", device, other);
    cudaError_t e = cudaDeviceEnablePeerAccess(other, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();
    } else if (e != cudaSuccess) {
      set_error("enabling peer access %d -> %d: %s", device, other, cudaGetErrorString(e));
      return MBN_ERR_CUDA;
    }
  }
  // One block per SM: more than half of an SM's shared memory each.
  dyn_smem_ = p.sharedMemPerMultiprocessor / 2 + 1024;
  if (dyn_smem_ > p.sharedMemPerBlockOptin) dyn_smem_ = p.sharedMemPerBlockOptin;
  for (int ph = 0; ph < 2; ++ph) {
    KernelFn f = kernel_for(ph, c.path);
    MBN_CUDA(cudaFuncSetAttribute((const void *)f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn_smem_));
    int nb = 0;
    MBN_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&nb, f, kLayerThreads, dyn_smem_));
    MBN_ARG(nb >= 1, "the layer kernel does not fit an SM (registers or shared memory)");
  }
  size_t free_b = 0, total_b = 0;
  MBN_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const uint64_t need = d_.region * Rd_ + (uint64_t)(sq_bytes_ ? sq_bytes_ : 0) * Rd_ + (128u << 20);
  MBN_ARG(need < free_b, "device %d: the layer needs %.1f GiB (%d ranks x %.2f GiB buffers), %.1f GiB are free",
          device, need / 1073741824.0, Rd_, d_.region / 1073741824.0, free_b / 1073741824.0);
  MBN_CUDA(cudaStreamCreateWithFlags(&dv.stream, cudaStreamNonBlocking));
  MBN_CUDA(cudaEventCreate(&dv.ev0));
  MBN_CUDA(cudaEventCreate(&dv.ev1));
  MBN_CUDA(dv.regions.alloc(device, d_.region * Rd_, false));
  // Signals and ranges start at zero; payload areas are written before
  // they are read.
  MBN_CUDA(cudaMemset(dv.regions.p, 0, d_.region * Rd_));
  if (c.flush_l2) MBN_CUDA(dv.flush.alloc(device, 128u << 20, false));
  return MBN_OK;
}

int32_t LayerRun::run() {
  const mbn_layer_config &c = c_;
  const double t_setup = now_ns();
  int32_t rc = validate();
  if (rc) return rc;
  memset(out_, 0, sizeof *out_);
  rc = plan();
  if (rc) return rc;
  devs_.clear();
  for (int g = 0; g < c.gpus; ++g) devs_.emplace_back(new LayerDev());
  for (int g = 0; g < c.gpus; ++g) {
    rc = setup_device(*devs_[g], g);
    if (rc) return rc;
  }
  bases_.assign(c.ranks, 0);
  regions_.assign(c.ranks, mbn_region());
  for (int r = 0; r < c.ranks; ++r) {
    LayerDev &dv = *devs_[r / Rd_];
    bases_[r] = (uint64_t)(uintptr_t)(dv.regions.as<uint8_t>() + d_.region * (r % Rd_));
    regions_[r].base = bases_[r];
    regions_[r].len = d_.region;
    regions_[r].key = 0x100u + (uint32_t)r;
    regions_[r].rank = r;
  }
  const size_t tk = (size_t)c.ranks * c.tokens * c.topk;
  const int RT = c.ranks * c.tokens;
  for (int g = 0; g < c.gpus; ++g) {
    LayerDev &dv = *devs_[g];
    MBN_CUDA(cudaSetDevice(dv.id));
    LayerArgs &a = dv.args;
    memset(&a, 0, sizeof a);
    a.d = d_;
    a.d.rank0 = dv.rank0;
    // control words and workspaces
    const size_t ctl_bytes = sizeof(RankCtl) * Rd_ + sizeof(DevCtl) + sizeof(unsigned long long) * c.ranks;
    MBN_CUDA(dv.ctl.alloc(dv.id, ctl_bytes));
    a.rctl = dv.ctl.as<RankCtl>();
    a.dctl = reinterpret_cast<DevCtl *>(a.rctl + Rd_);
    a.pace_next = reinterpret_cast<unsigned long long *>(a.dctl + 1);
    MBN_CUDA(dv.work.alloc(dv.id, sizeof(int) * 3 * Rd_ * c.experts));
    a.counter = dv.work.as<int>();
    a.finish = reinterpret_cast<unsigned int *>(a.counter + Rd_ * c.experts);
    a.countsent = a.counter + 2 * Rd_ * c.experts;
    // routing and tables
    MBN_CUDA(dv.routing.alloc(dv.id, tk * 4 * 2 + sizeof(int32_t) * c.ranks + sizeof(int32_t) * c.ranks * c.experts));
    int32_t *topk = dv.routing.as<int32_t>();
    float *wts = reinterpret_cast<float *>(topk + tk);
    int32_t *ntok = reinterpret_cast<int32_t *>(wts + tk);
    dv.expected = ntok + c.ranks;
    MBN_CUDA(cudaMemcpy(topk, rt_.topk_idx, tk * 4, cudaMemcpyHostToDevice));
    MBN_CUDA(cudaMemcpy(wts, rt_.topk_weights, tk * 4, cudaMemcpyHostToDevice));
    MBN_CUDA(cudaMemcpy(ntok, rt_.tokens_per_rank, sizeof(int32_t) * c.ranks, cudaMemcpyHostToDevice));
    MBN_CUDA(cudaMemcpy(dv.expected, rt_.expected_counts, sizeof(int32_t) * c.ranks * c.experts,
                        cudaMemcpyHostToDevice));
    a.topk = topk;
    a.weights = wts;
    a.ntok = ntok;
    MBN_CUDA(dv.tables.alloc(dv.id, sizeof(uint8_t *) * c.ranks + sizeof(mbn_region) * c.ranks));
    MBN_CUDA(cudaMemcpy(dv.tables.p, bases_.data(), sizeof(uint64_t) * c.ranks, cudaMemcpyHostToDevice));
    MBN_CUDA(cudaMemcpy(dv.tables.as<uint8_t>() + sizeof(uint8_t *) * c.ranks, regions_.data(),
                        sizeof(mbn_region) * c.ranks, cudaMemcpyHostToDevice));
    a.bases = dv.tables.as<uint8_t *const>();
    a.regions = reinterpret_cast<const mbn_region *>(dv.tables.as<uint8_t>() + sizeof(uint8_t *) * c.ranks);
    dv.hits_bytes = sizeof(int) * std::max(tk, (size_t)RT * c.ranks);
    dv.pmark_bytes = sizeof(int) * (size_t)Rd_ * d_.nl * RT;
    MBN_CUDA(dv.verify.alloc(dv.id, dv.hits_bytes + dv.pmark_bytes + sizeof(VerifyOut)));
    dv.hits = dv.verify.as<int>();
    dv.pmark = reinterpret_cast<int *>(dv.verify.as<uint8_t>() + dv.hits_bytes);
    dv.vout = reinterpret_cast<VerifyOut *>(dv.verify.as<uint8_t>() + dv.hits_bytes + dv.pmark_bytes);
    a.bg_warps = c.bg_warps;
    a.bg_bytes = c.bg_bytes;
    a.bg_ch0 = c.bg_channel0;
    a.bg_nch = std::max(1, c.bg_channels);
    a.bg_head_ns = c.bg_warps > 0 ? (uint64_t)c.bg_head_us * 1000u : 0;
    a.pace = c.pace;
    a.ns_per_byte = c.pace ? 1.0 / c.line_gbs : 0;
    a.ns_per_msg = c.pace ? 1000.0 / c.msg_mps : 0;
    a.timeout_ns = (uint64_t)c.timeout_ms * 1000000ull;
    a.qpp = 1;
    a.dcis = 1;
    a.nrings = 1;
    a.layer_rings = 1;
    if (c.path == MBN_LPATH_GDA || c.path == MBN_LPATH_DC || c.path == MBN_LPATH_EFA) {
      rc = setup_gda(dv);
      if (rc) return rc;
    } else if (c.path == MBN_LPATH_PROXY) {
      rc = setup_proxy(dv);
      if (rc) return rc;
    }
    MBN_LAUNCH(layer_init_x, 264, 256, a);
    MBN_CUDA(cudaGetLastError());
    if (d_.mode == MBN_LMODE_NORMAL) {
      MBN_LAUNCH(layer_cast_normal, 264, 256, a);
      MBN_CUDA(cudaGetLastError());
    }
  }
  for (auto &dv : devs_) {
    MBN_CUDA(cudaSetDevice(dv->id));
    MBN_CUDA(cudaDeviceSynchronize());
  }
  // The SM clock, to turn posting lanes' cycles into time.
  {
    DevMem ck;
    MBN_CUDA(ck.alloc(0, 16));
    MBN_CUDA(cudaSetDevice(0));
    MBN_LAUNCH(layer_clock, 1, 1, 20000000u, ck.as<unsigned long long>());
    MBN_CUDA(cudaDeviceSynchronize());
    unsigned long long h[2];
    MBN_CUDA(cudaMemcpy(h, ck.p, sizeof h, cudaMemcpyDeviceToHost));
    out_->clock_mhz = h[1] ? (double)h[0] * 1000.0 / (double)h[1] : 0;
  }
  out_->nic_queues = nq_;
  out_->queue_bytes = (int64_t)sq_bytes_;
  out_->setup_ms = (now_ns() - t_setup) / 1e6;
  const double t_run = now_ns();
  for (int rep = 0; rep < c.warmup + c.reps; ++rep) {
    for (int phase = 0; phase < 2; ++phase) {
      rc = launch(phase, rep);
      if (rc) return rc;
      rc = collect(phase, rep);
      if (rc) return rc;
      if (phase == 0) {
        for (auto &dv : devs_) {
          MBN_CUDA(cudaSetDevice(dv->id));
          if (d_.mode == MBN_LMODE_NORMAL) {
            MBN_LAUNCH(layer_experts_normal, Rd_ * 64, 256, dv->args);
          } else {
            MBN_LAUNCH(layer_experts, Rd_ * d_.nl, 256, dv->args);
          }
          MBN_CUDA(cudaGetLastError());
        }
        if (c.verify) rc = check_dispatch();
      } else if (c.verify) {
        rc = check_combine();
      }
      if (rc) return rc;
    }
  }
  out_->run_ms = (now_ns() - t_run) / 1e6;
  for (auto &dv : devs_) {
    if (dv->proxy) {
      out_->descriptors += dv->proxy->consumed();
      out_->torn += dv->proxy->torn();
      dv->proxy->stop();
    }
  }
  out_->problems = problems_;
  snprintf(out_->problem, sizeof out_->problem, "%s", problem_text_.c_str());
  if (problems_ > 0) {
    set_error("layer (%s): %lld verification problems: %s", path_name(c.path), problems_, problem_text_.c_str());
    return MBN_ERR_CHECK;
  }
  return MBN_OK;
}

int32_t LayerRun::launch(int phase, int rep) {
  const mbn_layer_config &c = c_;
  for (auto &dvp : devs_) {
    LayerDev &dv = *dvp;
    MBN_CUDA(cudaSetDevice(dv.id));
    dv.args.phase = phase;
    MBN_LAUNCH(layer_reset, 32, 256, dv.args, phase);
    MBN_CUDA(cudaGetLastError());
    MBN_CUDA(cudaStreamSynchronize(0));
    if (c.flush_l2) MBN_CUDA(cudaMemsetAsync(dv.flush.p, rep & 0xff, dv.flush.n, dv.stream));
  }
  for (auto &dvp : devs_) {
    LayerDev &dv = *dvp;
    MBN_CUDA(cudaSetDevice(dv.id));
    void *args[] = {&dv.args};
    const int blocks = d_.rank_blocks + d_.nic_blocks + d_.bg_blocks;
    MBN_CUDA(cudaEventRecord(dv.ev0, dv.stream));
    MBN_CUDA(cudaLaunchCooperativeKernel((const void *)kernel_for(phase, c.path), blocks, kLayerThreads, args,
                                         dyn_smem_, dv.stream));
    MBN_CUDA(cudaEventRecord(dv.ev1, dv.stream));
  }
  for (auto &dvp : devs_) {
    LayerDev &dv = *dvp;
    MBN_CUDA(cudaSetDevice(dv.id));
    cudaError_t e = cudaStreamSynchronize(dv.stream);
    if (e != cudaSuccess) {
      set_error("layer %s (%s), repetition %d: the kernel on device %d failed: %s", phase_name(phase),
                path_name(c.path), rep, dv.id, cudaGetErrorString(e));
      return MBN_ERR_CUDA;
    }
  }
  return MBN_OK;
}

int32_t LayerRun::collect(int phase, int rep) {
  const mbn_layer_config &c = c_;
  for (auto &dvp : devs_) {
    LayerDev &dv = *dvp;
    MBN_CUDA(cudaSetDevice(dv.id));
    DevCtl dc;
    MBN_CUDA(cudaMemcpy(&dc, dv.args.dctl, sizeof dc, cudaMemcpyDeviceToHost));
    if (dv.proxy) {
      const std::string f = dv.proxy->failure();
      if (!f.empty()) {
        set_error("layer %s (mini-proxy), repetition %d: %s", phase_name(phase), rep, f.c_str());
        return MBN_ERR_TIMEOUT;
      }
    }
    if (dc.err_code) {
      const double s = c.timeout_ms / 1000.0;
      char what[256];
      switch (dc.err_code) {
        case kLErrWaitCount:
          snprintf(what, sizeof what, "rank %d waited %.1f s for the count of local expert %d from rank %d",
                   dc.err_rank, s, dc.err_a, dc.err_b);
          break;
        case kLErrWaitFlag:
          snprintf(what, sizeof what, "rank %d waited %.1f s for the flag of expert %d", dc.err_rank, s, dc.err_a);
          break;
        case kLErrBarrier:
          snprintf(what, sizeof what, "rank %d's grid sync did not complete in %.1f s", dc.err_rank, s);
          break;
        case kLErrSQSpace:
          snprintf(what, sizeof what, "rank %d's send queue %d stayed full for %.1f s (slot %d)", dc.err_rank,
                   dc.err_a, s, dc.err_b);
          break;
        case kLErrPublish:
          snprintf(what, sizeof what, "rank %d waited %.1f s to publish slot %d of queue %d", dc.err_rank, s,
                   dc.err_b, dc.err_a);
          break;
        case kLErrRingSpace:
          snprintf(what, sizeof what, "rank %d's proxy ring %d stayed full for %.1f s", dc.err_rank, dc.err_a, s);
          break;
        case kLErrFinish:
          snprintf(what, sizeof what, "rank %d waited %.1f s for the writes to expert %d to be posted", dc.err_rank,
                   s, dc.err_a);
          break;
        case kLErrTornWQE:
          snprintf(what, sizeof what,
                   "the emulated NIC waited %.1f s for WQE %d of queue %d (rank %d) announced by doorbell %d", s,
                   dc.err_b, dc.err_a, dc.err_rank, dc.err_c);
          break;
        case kLErrBadWQE:
          snprintf(what, sizeof what, "the emulated NIC refused WQE %d of queue %d (rank %d): %s", dc.err_b,
                   dc.err_a, dc.err_rank, wqe_err_name(dc.err_c));
          break;
        case kLErrRoom:
          snprintf(what, sizeof what, "rank %d waited %.1f s for room in channel %d's ring at rank %d (slot %d)",
                   dc.err_rank, s, dc.err_a, dc.err_b, dc.err_c);
          break;
        case kLErrTail:
          snprintf(what, sizeof what, "rank %d waited %.1f s for channel %d's tail from rank %d past %d", dc.err_rank,
                   s, dc.err_a, dc.err_b, dc.err_c);
          break;
        case kLErrCounts:
          snprintf(what, sizeof what, "rank %d waited %.1f s for rank %d's count of channel %d", dc.err_rank, s,
                   dc.err_a, dc.err_b);
          break;
        case kLErrGroup:
          snprintf(what, sizeof what, "rank %d's warp group %d stalled in round %d", dc.err_rank, dc.err_a, dc.err_b);
          break;
        default:
          snprintf(what, sizeof what, "wait %d timed out after %.1f s", dc.err_code, s);
      }
      set_error("layer %s (%s), repetition %d, device %d: %s", phase_name(phase), path_name(c.path), rep, dv.id, what);
      return dc.err_code == kLErrBadWQE ? MBN_ERR_CHECK : MBN_ERR_TIMEOUT;
    }
    if (rep >= c.warmup) {
      out_->wqes += (int64_t)dc.nic_wqes;
      out_->cqes += (int64_t)dc.nic_cqes;
      out_->nic_bytes += (int64_t)dc.nic_bytes;
      out_->doorbells += (int64_t)dc.nic_dbs;
      out_->torn += (int64_t)dc.nic_torn;
      out_->dci_switches += (int64_t)dc.nic_switches;
      out_->bg_posts += (int64_t)dc.bg_posts;
    }
    float ms = 0;
    MBN_CUDA(cudaEventElapsedTime(&ms, dv.ev0, dv.ev1));
    std::vector<RankCtl> rcs(Rd_);
    MBN_CUDA(cudaMemcpy(rcs.data(), dv.args.rctl, sizeof(RankCtl) * Rd_, cudaMemcpyDeviceToHost));
    if (rep < c.warmup) continue;
    const double origin = (double)dc.origin + (double)dv.args.bg_head_ns;
    auto rel = [&](unsigned long long t) { return t ? std::max(0.0, (double)t - origin) : 0.0; };
    for (int rl = 0; rl < Rd_; ++rl) {
      const RankCtl &r = rcs[rl];
      mbn_rank_phase &o = times_[((size_t)(rep - c.warmup) * 2 + phase) * c.ranks + dv.rank0 + rl];
      o.issue_done_ns = rel(r.t_issue);
      o.send_done_ns = rel(r.t_send);
      o.wait_done_ns = rel(r.t_wait);
      o.ready_ns = rel(r.t_ready);
      o.kernel_ns = ms * 1e6;
      o.post_ns = out_->clock_mhz > 0 ? (double)r.post_cycles * 1000.0 / out_->clock_mhz : 0;
      o.posts = (int64_t)r.posts;
      o.copies = (int64_t)r.copies;
    }
  }
  return MBN_OK;
}

void LayerRun::note(const Problem &p, int phase) {
  char b[256];
  switch (p.kind) {
    case kPCount:
      snprintf(b, sizeof b, "rank %d: %d tokens from rank %d for local expert %d, want %d", p.rank, p.c, p.a, p.b,
               p.d);
      break;
    case kPToken:
      snprintf(b, sizeof b, "rank %d local expert %d slot %d names token %d of rank %d, out of range", p.rank, p.b,
               p.c, p.d, p.a);
      break;
    case kPNotSelected:
      snprintf(b, sizeof b, "rank %d local expert %d holds token %d of rank %d, which did not select expert %d",
               p.rank, p.b, p.c, p.a, p.d);
      break;
    case kPPayload:
      snprintf(b, sizeof b, "rank %d local expert %d: token %d of rank %d differs at chunk %d", p.rank, p.b, p.c, p.a,
               p.d);
      break;
    case kPScale:
      snprintf(b, sizeof b, "rank %d local expert %d: token %d of rank %d has a wrong scale at chunk %d", p.rank, p.b,
               p.c, p.a, p.d);
      break;
    case kPSlots:
      snprintf(b, sizeof b, "rank %d local expert %d: packed slot %d written %d times (%d tokens)", p.rank, p.a, p.b,
               p.c, p.d);
      break;
    case kPCombineSlot:
      snprintf(b, sizeof b, "rank %d: expert %d's output for token %d differs at chunk %d", p.rank, p.a, p.b, p.c);
      break;
    case kPCombined:
      snprintf(b, sizeof b, "rank %d: combined token %d differs at chunk %d", p.rank, p.a, p.b);
      break;
    case kPFlag:
      snprintf(b, sizeof b, "rank %d: expert %d's flag is %d, want 1", p.rank, p.a, p.b);
      break;
    case kPNormalRow:
      snprintf(b, sizeof b, "rank %d: row %d from rank %d channel %d names token %d, outside the channel or out of order",
               p.rank, p.c, p.a, p.b, p.d);
      break;
    case kPNormalTopk:
      snprintf(b, sizeof b, "rank %d: token %d of rank %d (channel %d) carries a wrong top-k id or weight at %d",
               p.rank, p.c, p.a, p.b, p.d);
      break;
    case kPNormalMiss:
      snprintf(b, sizeof b, "token %d of rank %d reached rank %d %d times, want %d", p.b, p.a, p.rank, p.c, p.d);
      break;
    case kPRange:
      snprintf(b, sizeof b, "rank %d local expert %d: range from rank %d is [%d, +%d), outside the buffer", p.rank,
               p.b, p.a, p.c, p.d);
      break;
    default:
      snprintf(b, sizeof b, "problem %d", p.kind);
  }
  if (problem_text_.size() < 700) {
    if (!problem_text_.empty()) problem_text_ += "; ";
    problem_text_ += phase_name(phase);
    problem_text_ += ": ";
    problem_text_ += b;
  }
}

int32_t LayerRun::check_dispatch() {
  const mbn_layer_config &c = c_;
  if (d_.mode == MBN_LMODE_NORMAL) return check_normal_dispatch();
  std::vector<int> sum((size_t)c.ranks * c.tokens * c.topk, 0);
  for (auto &dvp : devs_) {
    LayerDev &dv = *dvp;
    MBN_CUDA(cudaSetDevice(dv.id));
    MBN_CUDA(cudaMemset(dv.verify.p, 0, dv.verify.n));
    MBN_LAUNCH(verify_dispatch, Rd_ * d_.nl * c.ranks, 256, dv.args, dv.expected, dv.hits, dv.pmark, dv.vout);
    MBN_LAUNCH(verify_slots, Rd_ * d_.nl, 256, dv.args, dv.pmark, dv.vout);
    const int32_t rc = gather_checks(dv, 0, &sum);
    if (rc) return rc;
  }
  // Every selection delivered exactly once, nothing else.
  for (int r = 0; r < c.ranks; ++r) {
    for (int t = 0; t < c.tokens; ++t) {
      for (int k = 0; k < c.topk; ++k) {
        const size_t i = ((size_t)r * c.tokens + t) * c.topk + k;
        const int want = t < rt_.tokens_per_rank[r] && rt_.topk_idx[i] >= 0 ? 1 : 0;
        if (sum[i] != want) {
          problems_++;
          if (problem_text_.size() < 700) {
            char b[160];
            snprintf(b, sizeof b, "dispatch: token %d of rank %d reached expert %d %d times", t, r, rt_.topk_idx[i],
                     sum[i]);
            if (!problem_text_.empty()) problem_text_ += "; ";
            problem_text_ += b;
          }
        }
      }
    }
  }
  return MBN_OK;
}

int32_t LayerRun::check_normal_dispatch() {
  const mbn_layer_config &c = c_;
  std::vector<int> sum((size_t)c.ranks * c.tokens * c.ranks, 0);
  for (auto &dvp : devs_) {
    LayerDev &dv = *dvp;
    MBN_CUDA(cudaSetDevice(dv.id));
    MBN_CUDA(cudaMemset(dv.verify.p, 0, dv.verify.n));
    MBN_LAUNCH(verify_normal_dispatch, Rd_ * c.ranks, 256, dv.args, dv.hits, dv.vout);
    const int32_t rc = gather_checks(dv, 0, &sum);
    if (rc) return rc;
  }
  // Every token reached each rank holding one of its experts exactly once.
  for (int src = 0; src < c.ranks; ++src) {
    for (int t = 0; t < rt_.tokens_per_rank[src]; ++t) {
      const int32_t *row = rt_.topk_idx + ((size_t)src * c.tokens + t) * c.topk;
      for (int r = 0; r < c.ranks; ++r) {
        int want = 0;
        for (int k = 0; k < c.topk; ++k) want |= row[k] >= 0 && row[k] / d_.nl == r;
        const int got = sum[((size_t)src * c.tokens + t) * c.ranks + r];
        if (got != want) {
          Problem p = {kPNormalMiss, r, src, t, got, want};
          problems_++;
          note(p, 0);
        }
      }
    }
  }
  return MBN_OK;
}

int32_t LayerRun::check_combine() {
  for (auto &dvp : devs_) {
    LayerDev &dv = *dvp;
    MBN_CUDA(cudaSetDevice(dv.id));
    MBN_CUDA(cudaMemset(dv.vout, 0, sizeof(VerifyOut)));
    if (d_.mode == MBN_LMODE_NORMAL) {
      MBN_LAUNCH(verify_normal_combine, Rd_ * d_.T, 256, dv.args, dv.vout);
    } else {
      MBN_LAUNCH(verify_combine, Rd_ * d_.T, 256, dv.args, dv.vout);
    }
    const int32_t rc = gather_checks(dv, 1, nullptr);
    if (rc) return rc;
  }
  return MBN_OK;
}

// gather_checks waits for a device's check kernels and takes in what they
// found; with sum, it adds the device's delivery counts (sum->size() of
// them) to it.
int32_t LayerRun::gather_checks(LayerDev &dv, int phase, std::vector<int> *sum) {
  MBN_CUDA(cudaGetLastError());
  MBN_CUDA(cudaDeviceSynchronize());
  VerifyOut v;
  MBN_CUDA(cudaMemcpy(&v, dv.vout, sizeof v, cudaMemcpyDeviceToHost));
  if (sum) {
    std::vector<int> part(sum->size());
    MBN_CUDA(cudaMemcpy(part.data(), dv.hits, sizeof(int) * part.size(), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < part.size(); ++i) (*sum)[i] += part[i];
  }
  problems_ += (long long)v.count;
  out_->checked += (int64_t)v.checked;
  for (unsigned long long i = 0; i < v.count && i < (unsigned long long)kMaxProblems; ++i) note(v.first[i], phase);
  return MBN_OK;
}

}  // namespace mbn

using namespace mbn;

extern "C" int32_t mbn_device_count(int32_t *out) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    set_error("cudaGetDeviceCount: %s", cudaGetErrorString(e));
    return MBN_ERR_NO_GPU;
  }
  if (out) *out = n;
  return MBN_OK;
}

extern "C" int32_t mbn_layer(const mbn_layer_config *cfg, const mbn_layer_routing *rt, mbn_rank_phase *times,
                             mbn_layer_result *out) {
  MBN_REQUIRE_INIT();
  MBN_ARG(cfg && rt && times && out, "cfg, rt, times and out must be set");
  int32_t rc;
  {
    LayerRun run(*cfg, *rt, times, out);
    rc = run.run();
  }
  // Leave device 0 current for the library's other calls.
  cudaSetDevice(0);
  return rc;
}
