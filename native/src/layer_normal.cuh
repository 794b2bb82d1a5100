// Normal mode on the direct path, after DeepEP's intranode kernels.
//
// Tokens enter as DeepEP's normal dispatch takes them: already cast, with
// their scales. A rank's 2C SMs form C channels: even SMs send, odd SMs receive. Channel
// c owns a contiguous share of every rank's tokens. A token goes once to
// every rank holding one of its top-k experts, as one message (header,
// payload, FP8 scales, top-k ids and weights) into a ring buffer of `buf`
// messages per (channel, source) in the receiver's memory. The sender
// publishes a tail every `chunk` messages; the receiver copies what the
// tail covers into its rows (ordered by source, channel, token) and frees
// the ring with a head the sender reads back across NVLink.
//
// Dispatch begins with the counts: each sender SM counts its channel's
// tokens per destination and stores them in every destination's table;
// each receiver SM waits for the whole table to place its rows. (DeepEP
// runs this as a separate notify kernel and a host wait; here it is part
// of the dispatch launch, so the host's turn-around is not measured.)
//
// Combine runs the rings backwards: the rank that received a token sends
// its experts' weighted output back once; the token's owner adds the
// contributions in rank order as their tails arrive and frees the rings a
// round of buf/2 tokens at a time.
#pragma once

#include "layer_dev.cuh"

namespace mbn {

constexpr int kNormalMaxRanks = 8;  // DeepEP's intranode limit (NVLink peers of a node)
constexpr int kNormalWarps = 24;    // DeepEP's intranode kernels run 768 threads per SM
constexpr int kNormalWordStride = 16;  // head and tail words 64 B apart

__device__ __forceinline__ unsigned int ld_acquire_sys_u32(const unsigned int *p) {
  unsigned int r;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(r) : "l"(p) : "memory");
  return r;
}

__device__ __forceinline__ unsigned int ld_acquire_scoped(const unsigned int *p, int sys) {
  return sys ? ld_acquire_sys_u32(p) : ld_acquire_gpu_u32(p);
}

__device__ __forceinline__ void st_release_scoped(unsigned int *p, unsigned int v, int sys) {
  if (sys) {
    st_release_sys_u32(p, v);
  } else {
    st_release_gpu_u32(p, v);
  }
}

// Channel c's tokens of a rank holding Tr: DeepEP's even split.
__device__ __forceinline__ void normal_range(int Tr, int C, int c, int &t0, int &t1) {
  const int per = (Tr + C - 1) / C;
  t0 = min(c * per, Tr);
  t1 = min(t0 + per, Tr);
}

// Whether token t of a rank (its top-k row) selects an expert of rank dst.
__device__ __forceinline__ bool normal_goes(const int32_t *row, int K, int nl, int dst) {
  for (int k = 0; k < K; ++k) {
    const int e = row[k];
    if (e >= 0 && e / nl == dst) return true;
  }
  return false;
}

__device__ __forceinline__ unsigned int *normal_word(uint8_t *base, uint64_t off, int C, int R, int c, int src) {
  (void)C;
  return reinterpret_cast<unsigned int *>(base + off) + (size_t)(c * R + src) * kNormalWordStride;
}

// Offsets of a normal message's parts.
__device__ __forceinline__ uint64_t nmsg_scales(const LDims &d) { return 16 + (uint64_t)d.dbytes; }
__device__ __forceinline__ uint64_t nmsg_topk(const LDims &d) { return nmsg_scales(d) + (uint64_t)d.nscales * 4; }

// One warp writes token t's normal message: header, cast payload, scales,
// top-k ids and weights. DeepEP's normal dispatch takes x already cast
// (FP8 and its scales), so this runs before the timed launches.
__device__ __forceinline__ void normal_message(const LayerArgs &a, int rank, int t, uint8_t *msg, int lane) {
  const LDims &d = a.d;
  const int chunks = d.H / 8;
  const uint4 *xs = reinterpret_cast<const uint4 *>(a.bases[rank] + d.off_x + (uint64_t)t * d.H * 2);
  if (lane == 0) st_v4(msg, (uint32_t)t, 0u, 0u, 0u);
  for (int base = 0; base < chunks; base += 32) cast_chunk_into(d, xs, msg, base + lane);
  const size_t row = ((size_t)rank * d.T + t) * d.K;
  for (int k = lane; k < d.K; k += 32) {
    st_b32(msg + nmsg_topk(d) + k * 4, (uint32_t)a.topk[row + k]);
    st_b32(msg + nmsg_topk(d) + (d.K + k) * 4, __float_as_uint(a.weights[row + k]));
  }
}

// A rank's partial combine output for one chunk of a received row: its
// experts' outputs weighted, in top-k order (the expert kernel and the
// check share it).
__device__ __forceinline__ uint4 normal_partial(const LDims &d, const uint8_t *row, int rank, int c) {
  const int32_t *ids = reinterpret_cast<const int32_t *>(row + nmsg_topk(d));
  const float *w = reinterpret_cast<const float *>(row + nmsg_topk(d) + (uint64_t)d.K * 4);
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  uint4 x = make_uint4(0, 0, 0, 0);
  uint2 q = make_uint2(0, 0);
  float scale = 1.f;
  if (d.fp8) {
    const uint64_t v = *reinterpret_cast<const uint64_t *>(row + 16 + (uint64_t)c * 8);
    q = make_uint2((uint32_t)v, (uint32_t)(v >> 32));
    scale = *reinterpret_cast<const float *>(row + nmsg_scales(d) + (uint64_t)(c / 16) * 4);
  } else {
    x = *reinterpret_cast<const uint4 *>(row + 16 + (uint64_t)c * 16);
  }
  for (int k = 0; k < d.K; ++k) {
    const int e = ids[k];
    if (e < 0 || e / d.nl != rank) continue;
    const float factor = expert_factor(e);
    const uint4 y = d.fp8 ? expert_chunk_fp8(q, scale, factor) : expert_chunk_bf16(x, factor);
    reduce_step(acc, y, w[k]);
  }
  return pack_bf16x8(acc);
}

// The owner's sum of the partials, in rank order.
__device__ __forceinline__ void sum_step(float (&acc)[8], uint4 y) {
  float f[8];
  unpack_bf16x8(y, f);
#pragma unroll
  for (int i = 0; i < 8; ++i) acc[i] = __fadd_rn(acc[i], f[i]);
}

// Wait until *w exceeds `past`; returns what was read (or past + 1 after
// an abort, so callers stop).
__device__ __forceinline__ unsigned int normal_wait_above(const LayerArgs &a, const unsigned int *w, unsigned int past,
                                                          int code, int rank, int x, int y) {
  Spin sp;
  unsigned int v;
  while ((v = ld_acquire_scoped(w, a.d.sys_scope)) <= past) {
    if (!sp.ok(a, code, rank, x, y, (int)past)) return past + 1;
  }
  return v;
}

// One sender warp group's part of a ring: message j (when this warp's
// turn) waits for room, then is copied from src; at a chunk's end (or the
// last message) the group meets and its first warp publishes the tail.
struct RingSend {
  uint8_t *ring;
  unsigned int *tail;
  const unsigned int *head;
  uint32_t bytes;       // per message
  int n, g, wpd, sub;   // messages; group, its warps, this warp's index
  int rank, c, dst;     // for a stalled wait's report
  unsigned int seen;    // lane 0: the head last read
  __device__ __forceinline__ void put(const LayerArgs &a, int j, const uint8_t *src, PostStats &st, int lane) {
    const LDims &d = a.d;
    if (j % wpd == sub) {
      if (lane == 0 && (unsigned int)j - seen >= (unsigned int)d.buf) {
        seen = normal_wait_above(a, head, (unsigned int)(j - d.buf), kLErrRoom, rank, c, dst);
      }
      __syncwarp();
      warp_copy(ring + (uint64_t)(j % d.buf) * bytes, src, bytes, lane);
      if (lane == 0) {
        st.copies++;
        st.last = gtime();
      }
    }
    if ((j + 1) % d.chunk == 0 || j + 1 == n) {
      bar_named(1 + g, wpd * 32);
      if (sub == 0 && lane == 0) {
        fence_layer(d.sys_scope);
        st_release_scoped(tail, (unsigned int)(j + 1), d.sys_scope);
      }
    }
  }
};

// Sender SM of channel c: counts, then messages to every destination from
// 24 / R warps each, a tail every chunk.
__device__ void normal_dispatch_send(const LayerArgs &a, int rl, int c) {
  const LDims &d = a.d;
  const int rank = d.rank0 + rl, R = d.R, wpd = kNormalWarps / R;
  RankCtl *rc = &a.rctl[rl];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  __shared__ int s_n[kNormalMaxRanks];
  uint8_t *me = a.bases[rank];
  const int32_t *idx = a.topk + (size_t)rank * d.T * d.K;
  int t0, t1;
  normal_range(a.ntok[rank], d.C, c, t0, t1);
  int32_t *slot = reinterpret_cast<int32_t *>(me + d.off_nslot);
  PostStats st;

  if (warp < R) {
    const int dst = warp;
    int n = 0;
    for (int base = t0; base < t1; base += 32) {
      const int t = base + lane;
      const bool go = t < t1 && normal_goes(idx + (size_t)t * d.K, d.K, d.nl, dst);
      const unsigned int m = __ballot_sync(0xffffffffu, go);
      if (t < t1) slot[(size_t)t * R + dst] = go ? n + __popc(m & ((1u << lane) - 1u)) : -1;
      n += __popc(m);
    }
    if (lane == 0) {
      s_n[dst] = n;
      long long *cnt = reinterpret_cast<long long *>(a.bases[dst] + d.off_ncnt) + (size_t)rank * d.C + c;
      st_release_sys_s64(cnt, (long long)n + 1);
    }
  }
  __syncthreads();

  const int g = warp / wpd, sub = warp % wpd;
  if (g < R) {
    const int dst = g, n = s_n[dst];
    uint8_t *peer = a.bases[dst];
    RingSend rs{peer + d.off_nring + (uint64_t)(c * R + rank) * d.buf * d.nmsg,
                normal_word(peer, d.off_ntail, d.C, R, c, rank),
                normal_word(peer, d.off_nhead, d.C, R, c, rank),
                (uint32_t)d.nmsg, n, g, wpd, sub, rank, c, dst, 0};
    for (int t = t0; t < t1; ++t) {
      const int j = slot[(size_t)t * R + dst];
      if (j >= 0) rs.put(a, j, me + d.off_nsend + (uint64_t)t * d.nmsg, st, lane);
    }
  }
  flush_stats(rc, st, lane);
  __syncthreads();
  if (tid == 0) atomicMax(&rc->t_send, gtime());
}

// Receiver SM of channel c: the count table, then each source's ring from
// 24 / R warps.
__device__ void normal_dispatch_recv(const LayerArgs &a, int rl, int c) {
  const LDims &d = a.d;
  const int rank = d.rank0 + rl, R = d.R, wpd = kNormalWarps / R;
  RankCtl *rc = &a.rctl[rl];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  __shared__ int s_begin[kNormalMaxRanks], s_n[kNormalMaxRanks];
  __shared__ unsigned int s_tail[kNormalMaxRanks];
  uint8_t *me = a.bases[rank];
  PostStats st;
  unsigned long long waited = 0;

  if (warp == 0) {
    const long long *cnt = reinterpret_cast<const long long *>(me + d.off_ncnt);
    for (int i = lane; i < R * d.C; i += 32) {
      Spin sp;
      while (ld_acquire_sys_s64(cnt + i) == 0) {
        if (!sp.ok(a, kLErrCounts, rank, i / d.C, i % d.C, 0)) break;
      }
    }
    __syncwarp();
    if (lane == 0) {
      long long pos = 0;
      long long *range = reinterpret_cast<long long *>(me + d.off_nrange);
      for (int src = 0; src < R; ++src) {
        for (int cc = 0; cc < d.C; ++cc) {
          const long long v = ld_acquire_sys_s64(cnt + src * d.C + cc);
          const long long n = v > 0 ? v - 1 : 0;
          if (cc == c) {
            s_begin[src] = (int)pos;
            s_n[src] = (int)n;
            range[src * d.C + c] = pos << 32 | n;
          }
          pos += n;
        }
      }
      if (c == 0) *reinterpret_cast<int *>(me + d.off_ntotal) = (int)pos;
      waited = gtime();
    }
  }
  __syncthreads();

  const int g = warp / wpd, sub = warp % wpd;
  if (g < R) {
    const int src = g, n = s_n[src], begin = s_begin[src];
    const uint8_t *ring = me + d.off_nring + (uint64_t)(c * R + src) * d.buf * d.nmsg;
    const unsigned int *tail = normal_word(me, d.off_ntail, d.C, R, c, src);
    unsigned int *head = normal_word(me, d.off_nhead, d.C, R, c, src);
    int done = 0;
    while (done < n) {
      if (sub == 0 && lane == 0) {
        const unsigned int tl = normal_wait_above(a, tail, (unsigned int)done, kLErrTail, rank, c, src);
        s_tail[g] = min(tl, (unsigned int)n);
        waited = gtime();
      }
      bar_named(1 + g, wpd * 32);
      const int tl = (int)*(volatile unsigned int *)&s_tail[g];
      if (lane == 0) (void)ld_acquire_scoped(tail, d.sys_scope);
      __syncwarp();
      for (int j = done + sub; j < tl; j += wpd) {
        warp_copy(me + d.off_nrecv + (uint64_t)(begin + j) * d.nmsg, ring + (uint64_t)(j % d.buf) * d.nmsg,
                  (uint32_t)d.nmsg, lane);
        if (lane == 0) st.copies++;
      }
      bar_named(1 + g, wpd * 32);
      if (sub == 0 && lane == 0) st_release_scoped(head, (unsigned int)tl, d.sys_scope);
      done = tl;
    }
  }
  if (lane == 0 && waited) atomicMax(&rc->t_wait, waited);
  if (lane == 0 && st.copies) atomicAdd(&rc->copies, (unsigned long long)st.copies);
}

// Sender SM of channel c in combine: the rows this rank received from each
// owner through channel c go back, in order, from 24 / R warps each.
__device__ void normal_combine_send(const LayerArgs &a, int rl, int c) {
  const LDims &d = a.d;
  const int rank = d.rank0 + rl, R = d.R, wpd = kNormalWarps / R;
  RankCtl *rc = &a.rctl[rl];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  uint8_t *me = a.bases[rank];
  PostStats st;
  const int g = warp / wpd, sub = warp % wpd;
  if (g < R) {
    const int dst = g;
    const long long rg = reinterpret_cast<const long long *>(me + d.off_nrange)[dst * d.C + c];
    const int begin = (int)(rg >> 32), n = (int)(rg & 0xffffffffll);
    uint8_t *peer = a.bases[dst];
    RingSend rs{peer + d.off_cring + (uint64_t)(c * R + rank) * d.buf * d.cmsg,
                normal_word(peer, d.off_ctail, d.C, R, c, rank),
                normal_word(peer, d.off_chead, d.C, R, c, rank),
                (uint32_t)d.cmsg, n, g, wpd, sub, rank, c, dst, 0};
    for (int j = 0; j < n; ++j) rs.put(a, j, me + d.off_ny + (uint64_t)(begin + j) * d.cmsg, st, lane);
  }
  flush_stats(rc, st, lane);
  __syncthreads();
  if (tid == 0) atomicMax(&rc->t_send, gtime());
}

// Receiver SM of channel c in combine: each warp reduces tokens of the
// current round once every contribution's tail covers it; after a round
// the rings' heads move on.
__device__ void normal_combine_recv(const LayerArgs &a, int rl, int c) {
  const LDims &d = a.d;
  const int rank = d.rank0 + rl, R = d.R;
  RankCtl *rc = &a.rctl[rl];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  uint8_t *me = a.bases[rank];
  const int32_t *slot = reinterpret_cast<const int32_t *>(me + d.off_nslot);
  const int chunks = d.H / 8;
  const int round = max(1, d.buf / 2);
  int t0, t1;
  normal_range(a.ntok[rank], d.C, c, t0, t1);
  unsigned int freed = 0;  // thread r < R: ring r's head
  unsigned long long waited = 0;
  for (int base = t0; base < t1; base += round) {
    const int end = min(base + round, t1);
    for (int t = base + warp; warp < kNormalWarps && t < end; t += kNormalWarps) {
      int j = -1;
      if (lane < R) {
        j = slot[(size_t)t * R + lane];
        if (j >= 0) {
          (void)normal_wait_above(a, normal_word(me, d.off_ctail, d.C, R, c, lane), (unsigned int)j, kLErrTail, rank,
                                  c, lane);
          waited = gtime();
        }
      }
      __syncwarp();
      int js[kNormalMaxRanks];
#pragma unroll
      for (int r = 0; r < kNormalMaxRanks; ++r) js[r] = __shfl_sync(0xffffffffu, j, r);
      const uint8_t *rows[kNormalMaxRanks];
#pragma unroll
      for (int r = 0; r < kNormalMaxRanks; ++r) {
        rows[r] = js[r] >= 0 ? me + d.off_cring + ((uint64_t)(c * R + r) * d.buf + js[r] % d.buf) * d.cmsg : nullptr;
      }
      for (int cc = lane; cc < chunks; cc += 32) {
        // Every source's chunk loads before any is added (DeepEP unrolls
        // over its ranks the same way), then the sum runs in rank order.
        uint4 v[kNormalMaxRanks];
#pragma unroll
        for (int r = 0; r < kNormalMaxRanks; ++r) {
          v[r] = rows[r] ? ld_cg_v4(rows[r] + (uint64_t)cc * 16) : make_uint4(0, 0, 0, 0);
        }
        float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
        for (int r = 0; r < kNormalMaxRanks; ++r) {
          if (rows[r]) sum_step(acc, v[r]);
        }
        const uint4 o = pack_bf16x8(acc);
        st_v4(me + d.off_out + ((uint64_t)t * d.H + (uint64_t)cc * 8) * 2, o.x, o.y, o.z, o.w);
      }
    }
    __syncthreads();
    if (tid < R) {
      for (int t = base; t < end; ++t) freed += slot[(size_t)t * R + tid] >= 0 ? 1u : 0u;
      st_release_scoped(normal_word(me, d.off_chead, d.C, R, c, tid), freed, d.sys_scope);
    }
  }
  if (waited) atomicMax(&rc->t_wait, waited);
}

// A rank's block s in normal mode.
template <int PHASE>
__device__ void normal_rank(const LayerArgs &a, int rl, int s) {
  RankCtl *rc = &a.rctl[rl];
  if (threadIdx.x == 0) atomicMin(&rc->t_start, gtime());
  __syncthreads();
  const int c = s / 2;
  if (PHASE == 0) {
    if (s % 2 == 0) {
      normal_dispatch_send(a, rl, c);
    } else {
      normal_dispatch_recv(a, rl, c);
    }
  } else {
    if (s % 2 == 0) {
      normal_combine_send(a, rl, c);
    } else {
      normal_combine_recv(a, rl, c);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    if (s % 2 == 1) atomicMax(&rc->t_ready, gtime());
    __threadfence();
    atomicAdd(&a.dctl->rank_done, 1u);
  }
}

}  // namespace mbn
