// Kernels of the native layer: one launch per device runs a phase
// (dispatch or combine) for the device's ranks, with the emulated NIC and
// the background posters in the same grid.
#pragma once

#include "layer_dev.cuh"
#include "layer_normal.cuh"

namespace mbn {

// ------------------------------------------------------------- dispatch

// Cast token t of rank `rank` into its dispatch message: 16 B header,
// payload, FP8 scales. Run by the kCastWarps cast warps.
__device__ __forceinline__ void cast_token(const LayerArgs &a, int rank, int t, const uint8_t *x, uint8_t *msg,
                                           int warp, int lane) {
  const LDims &d = a.d;
  const int chunks = d.H / 8;
  if (warp == 0 && lane == 0) {
    st_v4(msg, (uint32_t)t, 0u, 0u, 0u);
  }
  const uint4 *xs = reinterpret_cast<const uint4 *>(x);
  for (int base = warp * 32; base < chunks; base += kCastWarps * 32) cast_chunk_into(d, xs, msg, base + lane);
}

template <int PATH>
__device__ void dispatch_rank(const LayerArgs &a, int rl, int s) {
  const LDims &d = a.d;
  const int rank = d.rank0 + rl;
  RankCtl *rc = &a.rctl[rl];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = warp / d.wpg, sub = warp % d.wpg;
  __shared__ int s_cnt[kMaxGroups];
  __shared__ int s_begin[kMaxGroups], s_n[kMaxGroups];
  __shared__ unsigned int s_round[kMaxGroups], s_ack[kMaxGroups];
  if (tid < kMaxGroups) {
    s_round[tid] = 0;
    s_ack[tid] = 0;
  }
  if (tid == 0) atomicMin(&rc->t_start, gtime());
  __syncthreads();

  uint8_t *me = a.bases[rank];
  const int32_t *idx = a.topk + (size_t)rank * d.T * d.K;
  const int Tr = a.ntok[rank];
  int *counter = a.counter + (size_t)rl * d.E;
  unsigned int *finish = a.finish + (size_t)rl * d.E;
  int *countsent = a.countsent + (size_t)rl * d.E;
  PostStats st;

  if (warp < kCastWarps) {
    for (int t = s; t < Tr; t += d.S) {
      uint8_t *msg = me + d.off_send + (size_t)t * d.msg;
      cast_token(a, rank, t, me + d.off_x + (size_t)t * d.H * 2, msg, warp, lane);
      bar_named(1, kCastWarps * 32);
      if (warp < d.K) {
        const int e = idx[t * d.K + warp];
        if (e >= 0) {
          const int dst = e / d.nl, le = e % d.nl;
          int slot = 0;
          if (lane == 0) slot = atomicAdd(&counter[e], 1);
          slot = __shfl_sync(0xffffffffu, slot, 0);
          Post p;
          p.dst = dst;
          p.ch = le;
          p.atomic = 0;
          p.flush = 0;
          p.roff = d.off_recv + ((uint64_t)(le * d.R + rank) * d.T + slot) * d.msg;
          p.loff = d.off_send + (uint64_t)t * d.msg;
          p.len = (uint32_t)d.msg;
          p.add = 0;
          send_op<PATH>(a, rl, rank, p, lane, st);
          if (lane == 0) atom_add_release_gpu(&finish[e], 1u);
        }
      }
    }
  } else {
    // The count warp: tokens per expert for the experts this SM signals,
    // known before the sends finish (DeepEP's last warp does the same).
    for (int e0 = s * d.G; e0 < d.E; e0 += d.S * d.G) {
      if (lane < d.G) s_cnt[lane] = 0;
      __syncwarp();
      for (int i = lane; i < Tr * d.K; i += 32) {
        const int e = idx[i];
        if (e >= e0 && e < e0 + d.G) atomicAdd(&s_cnt[e - e0], 1);
      }
      __syncwarp();
      if (lane < d.G && e0 + lane < d.E) {
        countsent[e0 + lane] = s_cnt[lane];
        atom_add_release_gpu(&finish[e0 + lane], kFinishTag - (unsigned int)s_cnt[lane]);
      }
      __syncwarp();
    }
  }
  __syncthreads();

  // Counts: the first warp of each group signals each of its experts once
  // every write to it has been posted, on the same queue.
  if (g < d.G && sub == 0) {
    for (int e = s * d.G + g; e < d.E; e += d.S * d.G) {
      int n = 0;
      if (lane == 0) {
        Spin sp;
        while (ld_acquire_gpu_u32(&finish[e]) != kFinishTag) {
          if (!sp.ok(a, kLErrFinish, rank, e, 0, 0)) break;
        }
        n = countsent[e];
      }
      n = __shfl_sync(0xffffffffu, n, 0);
      const int dst = e / d.nl, le = e % d.nl;
      Post p;
      p.dst = dst;
      p.ch = le;
      p.atomic = 1;
      p.flush = 1;
      p.roff = d.off_count + (uint64_t)(le * d.R + rank) * 8;
      p.loff = 0;
      p.len = 8;
      p.add = (uint64_t)(-(long long)(n + 1));
      send_op<PATH>(a, rl, rank, p, lane, st);
    }
  }
  flush_stats(rc, st, lane);

  rank_barrier(a, rc, rank);
  if (tid == 0) atomicMax(&rc->t_send, gtime());

  // Receive: group g of SM s owns (local expert, source) pairs i = s*G+g,
  // then every S*G further; its first warp waits for the count and claims
  // the packed range, every warp of the group copies tokens.
  if (g < d.G) {
    int *pcount = reinterpret_cast<int *>(me + d.off_pcount);
    long long *range = reinterpret_cast<long long *>(me + d.off_range);
    int32_t *srcinfo = reinterpret_cast<int32_t *>(me + d.off_srcinfo);
    float *pscales = reinterpret_cast<float *>(me + d.off_pscales);
    const int RT = d.R * d.T;
    int j = 0;
    for (int i = s * d.G + g; i < d.nl * d.R; i += d.S * d.G, ++j) {
      const int le = i / d.R, src = i % d.R;
      const long long *cnt = reinterpret_cast<const long long *>(me + d.off_count + (uint64_t)(le * d.R + src) * 8);
      int n = 0, begin = 0;
      if (lane == 0) {
        if (sub == 0) {
          Spin sp;
          long long v;
          while ((v = ld_acquire_sys_s64(cnt)) == 0) {
            if (!sp.ok(a, kLErrWaitCount, rank, le, src, 0)) break;
          }
          n = v ? (int)(-v - 1) : 0;
          begin = atomicAdd(&pcount[le], n);
          range[le * d.R + src] = (long long)begin << 32 | (unsigned int)n;
          atomicMax(&rc->t_wait, gtime());
          if (d.wpg > 1) {
            Spin sp2;
            while (*(volatile unsigned int *)&s_ack[g] != (unsigned int)((d.wpg - 1) * j)) {
              if (!sp2.ok(a, kLErrGroup, rank, g, j, 0)) break;
            }
            s_begin[g] = begin;
            s_n[g] = n;
            __threadfence_block();
            *(volatile unsigned int *)&s_round[g] = (unsigned int)(j + 1);
          }
        } else {
          Spin sp;
          while (*(volatile unsigned int *)&s_round[g] != (unsigned int)(j + 1)) {
            if (!sp.ok(a, kLErrGroup, rank, g, j, 1)) break;
          }
          __threadfence_block();
          begin = *(volatile int *)&s_begin[g];
          n = *(volatile int *)&s_n[g];
          __threadfence_block();
          atomicAdd(&s_ack[g], 1u);
        }
      }
      n = __shfl_sync(0xffffffffu, n, 0);
      begin = __shfl_sync(0xffffffffu, begin, 0);
      if (n > 0 && sub < n) (void)ld_acquire_sys_s64(cnt);  // every lane acquires before reading payloads
      for (int tok = sub; tok < n; tok += d.wpg) {
        const uint8_t *m = me + d.off_recv + ((uint64_t)(le * d.R + src) * d.T + tok) * d.msg;
        const int p = begin + tok;
        if (lane == 0) srcinfo[le * RT + p] = (int32_t)ld_cg_b32(m);
        warp_copy(me + d.off_packed + ((uint64_t)le * RT + p) * d.dbytes, m + 16, (uint32_t)d.dbytes, lane);
        if (d.fp8) {
          const uint32_t *sc = reinterpret_cast<const uint32_t *>(m + 16 + d.dbytes);
          for (int k = lane; k < d.nscales; k += 32) {
            pscales[((uint64_t)le * d.nscales + k) * RT + p] = __uint_as_float(ld_cg_b32(sc + k));
          }
        }
      }
    }
  }
  __syncthreads();
  if (tid == 0) {
    atomicMax(&rc->t_ready, gtime());
    __threadfence();
    atomicAdd(&a.dctl->rank_done, 1u);
  }
}

// -------------------------------------------------------------- combine

template <int PATH>
__device__ void combine_rank(const LayerArgs &a, int rl, int s) {
  const LDims &d = a.d;
  const int rank = d.rank0 + rl;
  RankCtl *rc = &a.rctl[rl];
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int g = warp / d.wpg, sub = warp % d.wpg;
  __shared__ unsigned int s_done[kMaxGroups];
  if (tid < kMaxGroups) s_done[tid] = 0;
  if (tid == 0) atomicMin(&rc->t_start, gtime());
  __syncthreads();

  uint8_t *me = a.bases[rank];
  const long long *range = reinterpret_cast<const long long *>(me + d.off_range);
  const int32_t *srcinfo = reinterpret_cast<const int32_t *>(me + d.off_srcinfo);
  const int RT = d.R * d.T;
  PostStats st;

  // Send: group g of SM s owns (local expert, destination) pairs; its
  // warps send the tokens back, then its first warp raises the expert's
  // flag at the destination.
  if (g < d.G) {
    int j = 0;
    for (int i = s * d.G + g; i < d.nl * d.R; i += d.S * d.G, ++j) {
      const int le = i / d.R, dst = i % d.R;
      const long long rg = range[le * d.R + dst];
      const int begin = (int)(rg >> 32), n = (int)(rg & 0xffffffffll);
      for (int tok = sub; tok < n; tok += d.wpg) {
        const int p = begin + tok;
        const int src_tok = srcinfo[le * RT + p];
        const uint64_t yoff = d.off_y + ((uint64_t)le * RT + p) * d.cmsg;
        Post q;
        q.dst = dst;
        q.ch = le;
        q.atomic = 0;
        q.flush = 0;
        q.roff = d.off_crecv + ((uint64_t)(rank * d.nl + le) * d.T + src_tok) * d.cmsg;
        q.len = (uint32_t)d.cmsg;
        q.add = 0;
        if (PATH == MBN_LPATH_DIRECT || dst == rank) {
          q.loff = yoff;
        } else {
          // Stage into the send buffer, as DeepEP does before a put.
          q.loff = d.off_csend + ((uint64_t)le * RT + p) * d.cmsg;
          warp_copy(me + q.loff, me + yoff, (uint32_t)d.cmsg, lane);
        }
        send_op<PATH>(a, rl, rank, q, lane, st);
      }
      __syncwarp();
      if (lane == 0) {
        fence_layer(d.sys_scope);
        atomicAdd(&s_done[g], 1u);
      }
      if (sub == 0) {
        if (lane == 0) {
          Spin sp;
          while (*(volatile unsigned int *)&s_done[g] != (unsigned int)(d.wpg * (j + 1))) {
            if (!sp.ok(a, kLErrGroup, rank, g, j, 2)) break;
          }
          fence_layer(d.sys_scope);
        }
        __syncwarp();
        Post f;
        f.dst = dst;
        f.ch = le;
        f.atomic = 1;
        f.flush = 1;
        f.roff = d.off_flag + (uint64_t)(rank * d.nl + le) * 8;
        f.loff = 0;
        f.len = 8;
        f.add = 1;
        send_op<PATH>(a, rl, rank, f, lane, st);
      }
    }
  }
  flush_stats(rc, st, lane);
  __syncthreads();
  if (tid == 0) atomicMax(&rc->t_send, gtime());

  // Receive: wait for every expert's flag, meet, reduce.
  if (g < d.G && sub == 0 && lane == 0) {
    for (int e = s * d.G + g; e < d.E; e += d.S * d.G) {
      const long long *f = reinterpret_cast<const long long *>(me + d.off_flag + (uint64_t)e * 8);
      Spin sp;
      while (ld_acquire_sys_s64(f) == 0) {
        if (!sp.ok(a, kLErrWaitFlag, rank, e, 0, 0)) break;
      }
    }
  }
  rank_barrier(a, rc, rank);
  if (tid == 0) atomicMax(&rc->t_wait, gtime());

  const int Tr = a.ntok[rank];
  const int chunks = d.H / 8;
  const int32_t *idx = a.topk + (size_t)rank * d.T * d.K;
  const float *w = a.weights + (size_t)rank * d.T * d.K;
  for (int t = s; t < Tr; t += d.S) {
    for (int c = tid; c < chunks; c += kLayerThreads) {
      float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int k = 0; k < d.K; ++k) {
        const int e = idx[t * d.K + k];
        if (e < 0) continue;
        const uint4 y = ld_cg_v4(me + d.off_crecv + ((uint64_t)e * d.T + t) * d.cmsg + (uint64_t)c * 16);
        reduce_step(acc, y, w[t * d.K + k]);
      }
      const uint4 o = pack_bf16x8(acc);
      st_v4(me + d.off_out + ((uint64_t)t * d.H + (uint64_t)c * 8) * 2, o.x, o.y, o.z, o.w);
    }
  }
  __syncthreads();
  if (tid == 0) {
    atomicMax(&rc->t_ready, gtime());
    __threadfence();
    atomicAdd(&a.dctl->rank_done, 1u);
  }
}

// ---------------------------------------------------------- emulated NIC

__device__ __forceinline__ uint64_t nic_load_db(const NicQ &q) {
  return q.host ? ld_acquire_sys_b64(q.db) : ld_acquire_gpu_b64(q.db);
}

// Pace a rank's NIC: the op may start once the rank's previous ops have
// left at line and message rate.
__device__ __forceinline__ void nic_pace(const LayerArgs &a, int src, uint32_t bytes) {
  unsigned long long *next = &a.pace_next[src];
  const unsigned long long dur = (unsigned long long)(bytes * a.ns_per_byte + a.ns_per_msg);
  unsigned long long now = gtime(), old = *(volatile unsigned long long *)next, want;
  do {
    want = (old > now ? old : now) + dur;
    const unsigned long long seen = atomicCAS(next, old, want);
    if (seen == old) break;
    old = seen;
  } while (true);
  const unsigned long long start = want - dur;
  while (gtime() < start) {
  }
}

// WQEs an engine executes from one queue per visit. A ConnectX send
// scheduler gives each ready send queue a bounded turn; draining a queue to
// its doorbell held every other queue of the warp behind a deep backlog (a
// reserved background queue's). Eight: a write WQE is one 64 B basic
// block, so a turn is about what one 512 B window read brings, and a queue
// holding one or two WQEs waits for at most eight of each other queue's.
constexpr uint32_t kNicBurst = 8;

// Execute queue qi's WQEs from its consumer index towards the one doorbell
// db announces, at most kNicBurst of them: the rest stay pending (ci short
// of the doorbell's index) for the warp's next visit. The whole warp runs
// it. Like a NIC's prefetch, one read brings a window of 32 segments (8
// basic blocks): lane l loads segment l, and WQEs are parsed from the
// window while they fit in it. dirty: writes executed since the warp's
// last fence; an atomic fences first only then. True when the visit
// reached the doorbell's index (the doorbell is served).
__device__ bool nic_drain(const LayerArgs &a, int qi, int lane, bool &dirty, unsigned long long &wqes,
                          unsigned long long &bytes, unsigned long long &cqes, unsigned long long &torn,
                          unsigned long long &switches) {
  NicQ &q = a.nq[qi];
  const uint64_t db = nic_load_db(q);  // every lane acquires the doorbell
  const uint32_t target = q.efa ? mbn_efa_db_target(db) : mbn_doorbell_index(db);
  const uint32_t need = q.efa ? 4u : 5u;  // segments parsed from the window
  const uint32_t ring = (q.bb_mask + 1) * MBN_BB;
  uint32_t ci = q.ci;
  int32_t cur = q.cur;
  uint32_t cq_pi = q.cq_pi;
  uint32_t wbase = 0;
  bool have = false;
  mbn_seg win = mbn_seg4(0, 0, 0, 0);
  uint32_t done = 0;
  bool served = false;
  Spin sp;
  for (;;) {
    // The WQE at ci from the window, re-read while it is not the
    // announced one (its stores not yet visible) or runs past the window.
    mbn_seg s[5];
    uint32_t rel = 0;
    for (;;) {
      rel = (ci - wbase) * 4u;
      if (!have || rel + need > 32u) {
        wbase = ci;
        rel = 0;
        win = ld_seg_volatile(q.sq + mbn_seg_offset(wbase, (uint32_t)lane, ring));
        have = true;
      }
#pragma unroll
      for (int k = 0; k < 5; ++k) {
#pragma unroll
        for (int w = 0; w < 4; ++w) s[k].w[w] = __shfl_sync(0xffffffffu, win.w[w], (int)rel + k);
      }
      if (q.efa ? mbn_efa_ready(s, ci, q.bb_mask + 1u) : mbn_ctrl_ready(s[0], ci)) break;
      have = false;
      if (lane == 0) torn++;
      int stop = 0;
      if (lane == 0) stop = !sp.ok(a, kLErrTornWQE, q.src, qi, (int)ci, (int)target);
      if (__shfl_sync(0xffffffffu, stop, 0)) return false;
    }
    const uint32_t ds = mbn_parse_ctrl(s[0]).ds;
    const uint32_t n = ds < 5u ? ds : 5u;
    const mbn_wqe_op op = q.efa ? mbn_efa_parse(s) : mbn_parse_wqe(s, n, q.dc);
    const int32_t dst = q.dc || q.efa ? op.dst : q.dst;
    uint32_t err = op.err;
    if (!err && (dst < 0 || dst >= a.d.R)) err = MBN_WQE_BAD_DEST;
    if (!err) err = mbn_check_access(&op, &a.regions[q.src], &a.regions[dst]);
    if (err) {
      if (lane == 0) raise_err(a, kLErrBadWQE, q.src, qi, (int)ci, (int)err);
      return false;
    }
    if (q.dc && cur != dst) {
      if (cur >= 0 && lane == 0) switches++;
      cur = dst;
    }
    if (a.pace) {
      if (lane == 0) nic_pace(a, q.src, op.len);
      __syncwarp();
    }
    if (op.kind == MBN_OP_WRITE) {
      uint8_t *to = reinterpret_cast<uint8_t *>((uintptr_t)op.raddr);
      if (op.inl) {
        const uint32_t o = mbn_seg_offset(ci, op.inline_seg, ring) + 4u;
        for (uint32_t j = (uint32_t)lane; j < op.len; j += 32) to[j] = *(const volatile uint8_t *)(q.sq + ((o + j) & (ring - 1u)));
      } else {
        warp_copy(to, reinterpret_cast<const uint8_t *>((uintptr_t)op.laddr), op.len, lane);
      }
      dirty = true;
    } else {
      // RC and DC execute in order: the writes before an atomic on this
      // queue are visible before it. So does an SRD queue here, where a
      // real one does not: an EFA port posts a flag only once the writes
      // it covers completed, which in-order execution stands for.
      if (dirty) {
        fence_layer(a.d.sys_scope);
        __syncwarp();
        dirty = false;
      }
      if (lane == 0) {
        fence_layer(a.d.sys_scope);
        const unsigned long long old =
            atom_add_sys_u64(reinterpret_cast<unsigned long long *>((uintptr_t)op.raddr), op.add);
        if (op.kind == MBN_OP_ATOMIC) *reinterpret_cast<unsigned long long *>((uintptr_t)op.laddr) = old;
      }
    }
    __syncwarp();
    if (op.signaled && q.cq) {
      if (lane == 0) {
        uint32_t w[16];
        const uint32_t entries = q.cq_mask + 1;
        mbn_cqe_words(op.qpn, op.wqe_idx, op.len, MBN_CQE_REQ, (cq_pi / entries) & 1u, 0, w);
        uint8_t *cqe = q.cq + (uint64_t)(cq_pi & q.cq_mask) * 64u;
        for (int k = 0; k < 3; ++k) st_v4(cqe + 16 * k, w[4 * k], w[4 * k + 1], w[4 * k + 2], w[4 * k + 3]);
        st_b64(cqe + 48, (uint64_t)w[13] << 32 | w[12]);
        st_b32(cqe + 56, w[14]);
        __threadfence();
        st_b32(cqe + 60, w[15]);
        cqes++;
      }
      cq_pi++;
    }
    if (lane == 0) {
      wqes++;
      bytes += op.len;
    }
    ci += op.bbs;
    served = op.wqe_idx == target;
    if (served || ++done == kNicBurst) break;
  }
  __syncwarp();
  if (lane == 0) {
    q.ci = ci;
    q.cur = cur;
    q.cq_pi = cq_pi;
    if (q.host) {
      st_release_sys_u32(q.ci_pub, ci);
    } else {
      st_release_gpu_u32(q.ci_pub, ci);
    }
  }
  __syncwarp();
  return served;
}

// All descriptors of this device's proxy rings consumed by the workers.
__device__ __forceinline__ bool rings_drained(const LayerArgs &a, int lane) {
  bool ok = true;
  const int n = a.d.Rd * a.nrings;
  for (int i = lane; i < n; i += 32) {
    const PRing r = a.rings[i];
    if (*(volatile unsigned long long *)r.tail != ld_acquire_sys_b64(&r.ctl->head)) ok = false;
  }
  return __all_sync(0xffffffffu, ok);
}

__device__ void nic_block(const LayerArgs &a, int nb) {
  const int lane = threadIdx.x & 31;
  const int NW = a.d.nic_blocks * kLayerWarps;
  // Engines alternate over the NIC's SMs, so that a run with few queues
  // still spreads them over every SM.
  const int gw = (threadIdx.x >> 5) * a.d.nic_blocks + nb;
  const int per = (a.nnq + NW - 1) / NW;
  const int q0 = gw * per, q1 = min(q0 + per, a.nnq);
  unsigned long long wqes = 0, bytes = 0, cqes = 0, torn = 0, switches = 0, dbs = 0;
  bool dirty = false;
  int quiet = 0;
  for (;;) {
    bool any = false;
    for (int base = q0; base < q1; base += 32) {
      const int qi = base + lane;
      bool pend = false;
      uint64_t db = 0;
      if (qi < q1) {
        const NicQ &q = a.nq[qi];
        db = ld_volatile_b64(q.db);
        const uint32_t ci = *(volatile uint32_t *)&q.ci;
        pend = q.efa ? mbn_efa_db_pending(db, ci) : mbn_db_pending(db, ci);
      }
      unsigned int m = __ballot_sync(0xffffffffu, pend);
      while (m) {
        const int l = __ffs(m) - 1;
        m &= m - 1;
        const bool served = nic_drain(a, base + l, lane, dirty, wqes, bytes, cqes, torn, switches);
        if (lane == 0 && served) dbs++;
        any = true;
      }
    }
    if (any) {
      quiet = 0;
      continue;
    }
    // Decisions below are lane 0's, so the warp stays converged.
    int stop = 0, done = 0;
    if (lane == 0) {
      stop = aborted(a);
      done = ld_acquire_gpu_u32(&a.dctl->rank_done) >= (unsigned int)a.d.rank_blocks &&
             ld_acquire_gpu_u32(&a.dctl->bg_done) >= (unsigned int)a.d.bg_blocks;
    }
    if (__shfl_sync(0xffffffffu, stop, 0)) break;
    if (__shfl_sync(0xffffffffu, done, 0) && (a.d.path != MBN_LPATH_PROXY || rings_drained(a, lane))) {
      // Two quiet passes after everything was posted: nothing is left.
      if (++quiet >= 2) break;
    }
  }
  if (lane == 0) {
    DevCtl *c = a.dctl;
    atomicAdd(&c->nic_wqes, wqes);
    atomicAdd(&c->nic_bytes, bytes);
    atomicAdd(&c->nic_cqes, cqes);
    atomicAdd(&c->nic_torn, torn);
    atomicAdd(&c->nic_switches, switches);
    atomicAdd(&c->nic_dbs, dbs);
  }
}

// ------------------------------------------------------------ background

// Background posters: warp w streams writes of bg_bytes from its rank to
// the other ranks in turn, on channels bg_ch0 + (w mod bg_nch), until the
// layer's ranks are done.
template <int PATH>
__device__ void bg_block(const LayerArgs &a, int bb) {
  const LDims &d = a.d;
  const int lane = threadIdx.x & 31;
  const int bw = bb * kLayerWarps + (threadIdx.x >> 5);
  const int rl = bw % d.Rd, wi = bw / d.Rd;
  PostStats st;
  if (wi < a.bg_warps && d.R > 1) {
    const int rank = d.rank0 + rl;
    for (int i = 0;; ++i) {
      int stop = 0;
      if (lane == 0) stop = aborted(a) || *(volatile unsigned int *)&a.dctl->rank_done >= (unsigned int)d.rank_blocks;
      if (__shfl_sync(0xffffffffu, stop, 0)) break;
      Post p;
      p.dst = (rank + 1 + (wi + i) % (d.R - 1)) % d.R;
      p.ch = a.bg_ch0 + wi % a.bg_nch;
      p.atomic = 0;
      p.flush = 1;
      p.roff = d.off_bg;
      p.loff = d.off_bg;
      p.len = (uint32_t)a.bg_bytes;
      p.add = 0;
      send_op<PATH>(a, rl, rank, p, lane, st);
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    atomicAdd(&a.dctl->bg_done, 1u);
  }
  if (lane == 0 && (st.posts || st.copies)) atomicAdd(&a.dctl->bg_posts, (unsigned long long)(st.posts + st.copies));
}

// ---------------------------------------------------------------- launch

template <int PHASE, int PATH>
__global__ void __launch_bounds__(kLayerThreads, 1) layer_kernel(LayerArgs a) {
  extern __shared__ uint8_t mbn_layer_smem[];  // sized to keep one block per SM
  (void)mbn_layer_smem;
  const int b = blockIdx.x;
  if (threadIdx.x == 0) atomicMin(&a.dctl->origin, gtime());
  const LDims &d = a.d;
  if (b < d.rank_blocks) {
    if (a.bg_head_ns) {
      // Let the background reach its steady state first.
      if (threadIdx.x == 0) {
        Spin sp;
        while (gtime() - *(volatile unsigned long long *)&a.dctl->origin < a.bg_head_ns) {
          if (!sp.ok(a, kLErrHead, -1, 0, 0, 0)) break;
        }
      }
      __syncthreads();
    }
    if constexpr (PATH == MBN_LPATH_DIRECT) {
      if (d.mode == MBN_LMODE_NORMAL) {
        normal_rank<PHASE>(a, b / d.S, b % d.S);
        return;
      }
    }
    if (PHASE == 0) {
      dispatch_rank<PATH>(a, b / d.S, b % d.S);
    } else {
      combine_rank<PATH>(a, b / d.S, b % d.S);
    }
  } else if (b < d.rank_blocks + d.nic_blocks) {
    nic_block(a, b - d.rank_blocks);
  } else {
    bg_block<PATH>(a, b - d.rank_blocks - d.nic_blocks);
  }
}

}  // namespace mbn
