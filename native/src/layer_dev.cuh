// Device code of the native layer: the token cast, copies, the posters of
// each path, the per-rank grid sync, and the verification arithmetic the
// kernels and the checks share (so a check recomputes bit for bit what a
// correct kernel wrote).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "layer.cuh"

namespace mbn {

// ------------------------------------------------------------ arithmetic

__device__ __forceinline__ void unpack_bf16x8(uint4 v, float (&f)[8]) {
  const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 p = __bfloat1622float2(h[i]);
    f[2 * i] = p.x;
    f[2 * i + 1] = p.y;
  }
}

__device__ __forceinline__ uint4 pack_bf16x8(const float (&f)[8]) {
  uint4 v;
  __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
  return v;
}

// Token x's chunk c (channels 8c..8c+7) as stored: BF16 of x_value.
__device__ __forceinline__ uint4 x_chunk(int src, int token, int c) {
  float f[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = x_value(src, token, 8 * c + i);
  return pack_bf16x8(f);
}

// FP8 cast of one chunk inside its 128-channel group: the 16 lanes of a
// half-warp hold one group's 16 chunks. Every lane of the warp must call
// (the amax reduction shuffles over the half-warp). Returns the 8 FP8
// bytes; scale is the group's (amax / 448, DeepEP's).
__device__ __forceinline__ uint2 cast_chunk_fp8(const float (&v)[8], float &scale) {
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(v[i]));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 8));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 4));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 2));
  amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, 1));
  amax = fmaxf(amax, 1e-4f);
  scale = amax / 448.f;
  float inv = 448.f / amax;
  uint32_t p[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    p[i] = (uint32_t)__nv_cvt_float2_to_fp8x2(make_float2(v[2 * i] * inv, v[2 * i + 1] * inv), __NV_SATFINITE,
                                              __NV_E4M3);
  }
  return make_uint2(p[0] | p[1] << 16, p[2] | p[3] << 16);
}

// Chunk c of a token (xs, BF16) into message msg: FP8 after the 16 B
// header with its group's scale after the payload, or BF16 as it is. Every
// lane of the warp calls (the cast reduces over half-warps); chunks past
// the hidden size only take part.
__device__ __forceinline__ void cast_chunk_into(const LDims &d, const uint4 *xs, uint8_t *msg, int c) {
  const bool ok = c < d.H / 8;
  const uint4 v = ok ? ld_cg_v4(xs + c) : make_uint4(0, 0, 0, 0);
  if (d.fp8) {
    float f[8];
    unpack_bf16x8(v, f);
    float scale;
    const uint2 q = cast_chunk_fp8(f, scale);
    if (ok) {
      st_b64(msg + 16 + (size_t)c * 8, (uint64_t)q.y << 32 | q.x);
      if ((c & 15) == 0) st_b32(msg + 16 + d.dbytes + (c >> 4) * 4, __float_as_uint(scale));
    }
  } else if (ok) {
    st_v4(msg + 16 + (size_t)c * 16, v.x, v.y, v.z, v.w);
  }
}

__device__ __forceinline__ float fp8_to_float(uint32_t byte) {
  __half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)(byte & 0xffu), __NV_E4M3);
  return __half2float(__half(h));
}

// The expert's output chunk from its dequantized input.
__device__ __forceinline__ uint4 expert_chunk_fp8(uint2 q, float scale, float factor) {
  float f[8];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    f[i] = fp8_to_float(q.x >> (8 * i)) * scale * factor;
    f[4 + i] = fp8_to_float(q.y >> (8 * i)) * scale * factor;
  }
  return pack_bf16x8(f);
}

__device__ __forceinline__ uint4 expert_chunk_bf16(uint4 x, float factor) {
  float f[8];
  unpack_bf16x8(x, f);
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] *= factor;
  return pack_bf16x8(f);
}

// One step of the weighted top-k reduction, shared by combine and its
// check so both round alike.
__device__ __forceinline__ void reduce_step(float (&acc)[8], uint4 y, float w) {
  float f[8];
  unpack_bf16x8(y, f);
#pragma unroll
  for (int i = 0; i < 8; ++i) acc[i] = __fmaf_rn(w, f[i], acc[i]);
}

// ------------------------------------------------------------------ copy

// A warp copies bytes: 16 B vectors four deep per lane when both ends and
// the size allow, bytes otherwise. Loads go to L2 (.cg): the source may
// have been written by another SM during this launch.
__device__ __forceinline__ void warp_copy(uint8_t *dst, const uint8_t *src, uint32_t bytes, int lane) {
  if ((((uintptr_t)dst | (uintptr_t)src | bytes) & 15u) == 0) {
    const uint4 *s = reinterpret_cast<const uint4 *>(src);
    uint4 *d = reinterpret_cast<uint4 *>(dst);
    uint32_t n = bytes >> 4;
    uint32_t i = (uint32_t)lane;
    for (; i + 96 < n; i += 128) {
      uint4 v0 = ld_cg_v4(s + i), v1 = ld_cg_v4(s + i + 32), v2 = ld_cg_v4(s + i + 64), v3 = ld_cg_v4(s + i + 96);
      st_v4(d + i, v0.x, v0.y, v0.z, v0.w);
      st_v4(d + i + 32, v1.x, v1.y, v1.z, v1.w);
      st_v4(d + i + 64, v2.x, v2.y, v2.z, v2.w);
      st_v4(d + i + 96, v3.x, v3.y, v3.z, v3.w);
    }
    for (; i < n; i += 32) {
      uint4 v = ld_cg_v4(s + i);
      st_v4(d + i, v.x, v.y, v.z, v.w);
    }
  } else {
    for (uint32_t i = (uint32_t)lane; i < bytes; i += 32) {
      dst[i] = *(const volatile uint8_t *)(src + i);
    }
  }
}

// ---------------------------------------------------------------- ring_db

__device__ __forceinline__ void ring_db_mode(int mode, const DevQP &q, uint32_t pi, Ctrl8 c) {
  switch (mode) {
    case MBN_ORDER_GPU_FENCE: ring_db<MBN_ORDER_GPU_FENCE>(q, pi, c); break;
    case MBN_ORDER_FENCED_DBREC: ring_db<MBN_ORDER_FENCED_DBREC>(q, pi, c); break;
    case MBN_ORDER_RELEASE_GPU: ring_db<MBN_ORDER_RELEASE_GPU>(q, pi, c); break;
    case MBN_ORDER_THREADFENCE: ring_db<MBN_ORDER_THREADFENCE>(q, pi, c); break;
    case MBN_ORDER_RELEASE_SYS: ring_db<MBN_ORDER_RELEASE_SYS>(q, pi, c); break;
    default: ring_db<MBN_ORDER_FENCE_SYS>(q, pi, c); break;
  }
}

// ----------------------------------------------------------------- posts

// One operation a rank posts: an RDMA write of len bytes from its own
// region at loff to dst's region at roff, or a fetch-add of add there.
struct Post {
  int dst, ch;
  int atomic, flush;
  uint64_t roff, loff;
  uint32_t len;
  uint64_t add;
};

// mini-gda and DC, by one lane: reserve basic blocks on the queue (atomic),
// wait for room, build the WQE, publish in reservation order, ring every
// per_db-th WQE (and on a flush) with the configured ordering.
__device__ __forceinline__ void gda_post(const LayerArgs &a, int rl, int rank, const Post &p) {
  const LDims &d = a.d;
  const int dc = d.path == MBN_LPATH_DC;
  const int qi = dc ? (p.ch % a.dcis) : (p.dst * a.qpp + p.ch % a.qpp);
  SendQ *s = &a.sq[(size_t)rl * a.qs_per_rank + qi];
  const uint32_t ds = p.atomic ? mbn_atomic_ds(dc) : mbn_write_ds(0, 0, dc);
  const uint32_t nbb = mbn_bbs(ds);
  const uint32_t slot = atomicAdd(&s->reserved, nbb);
  const uint32_t size = s->q.bb_mask + 1;
  Spin sp;
  while (slot + nbb - ld_acquire_gpu_u32(&s->nic_ci) > size) {
    if (!sp.ok(a, kLErrSQSpace, rank, qi, (int)slot, 0)) return;
  }
  const uint64_t raddr = (uint64_t)(uintptr_t)a.bases[p.dst] + p.roff;
  const uint32_t rkey = a.regions[p.dst].key, lkey = a.regions[rank].key;
  const uint32_t every = (uint32_t)a.cqe_every;
  const bool sig = p.flush || (slot / every) != ((slot + nbb) / every);
  const mbn_seg ctrl = mbn_ctrl_seg(0, slot, p.atomic ? MBN_OPCODE_ATOMIC_FA : MBN_OPCODE_RDMA_WRITE, s->q.qpn, ds,
                                    sig ? MBN_CQ_UPDATE : 0u, 0);
  uint32_t k = 0;
  st_seg(seg_ptr(s->q, slot, k++), ctrl);
  if (dc) st_seg(seg_ptr(s->q, slot, k++), mbn_av_seg(0x4d4f45ull, (uint32_t)p.dst, (uint32_t)p.dst));
  st_seg(seg_ptr(s->q, slot, k++), mbn_raddr_seg(raddr, rkey));
  if (p.atomic) {
    st_seg(seg_ptr(s->q, slot, k++), mbn_atomic_seg(p.add, 0));
    const uint64_t fetch = (uint64_t)(uintptr_t)a.bases[rank] + d.off_fetch + (uint64_t)(slot & 1023u) * 8u;
    st_seg(seg_ptr(s->q, slot, k++), mbn_data_seg(8, lkey, fetch));
  } else {
    st_seg(seg_ptr(s->q, slot, k++), mbn_data_seg(p.len, lkey, (uint64_t)(uintptr_t)a.bases[rank] + p.loff));
  }
  Spin sp2;
  while (ld_acquire_gpu_u32(&s->published) != slot) {
    if (!sp2.ok(a, kLErrPublish, rank, qi, (int)slot, 0)) return;
  }
  uint32_t since = *(volatile unsigned int *)&s->since_db + 1;
  if (since >= (uint32_t)a.per_db || p.flush) {
    Ctrl8 c;
    c.w0 = ctrl.w[0];
    c.w1 = ctrl.w[1];
    ring_db_mode(a.ordering, s->q, slot + nbb, c);
    since = 0;
  }
  *(volatile unsigned int *)&s->since_db = since;
  st_release_gpu_u32(&s->published, slot + nbb);
}

// EFA's doorbell: the producer counter, stored with the configured
// ordering after the entries (DP Direct's is fence-sys; there is no
// doorbell record to fence).
__device__ __forceinline__ void ring_efa(int mode, uint64_t *db, uint32_t pc) {
  const uint64_t v = pc;
  switch (mode) {
    case MBN_ORDER_GPU_FENCE: fence_acq_rel_gpu(); st_mmio_b64(db, v); break;
    case MBN_ORDER_RELEASE_GPU: st_release_gpu_b64(db, v); break;
    case MBN_ORDER_THREADFENCE: fence_sc_gpu(); st_mmio_b64(db, v); break;
    case MBN_ORDER_RELEASE_SYS: st_release_sys_b64(db, v); break;
    default: fence_sc_sys(); st_mmio_b64(db, v); break;
  }
}

// EFA (DP Direct), by one lane: the rank's SRD queue of the channel
// (shared by every peer, as a DCI is), an entry reserved (atomic), room
// waited for, the 64 B entry written with the destination's address
// handle, published in reservation order, and every per_db-th entry (and
// a flush) announced by the producer counter. A flag is a zero-length
// write with its addend as immediate data.
__device__ __forceinline__ void efa_post(const LayerArgs &a, int rl, int rank, const Post &p) {
  const int qi = p.ch % a.dcis;
  SendQ *s = &a.sq[(size_t)rl * a.qs_per_rank + qi];
  const uint32_t slot = atomicAdd(&s->reserved, 1u);
  const uint32_t size = s->q.bb_mask + 1;
  Spin sp;
  while (slot + 1u - ld_acquire_gpu_u32(&s->nic_ci) > size) {
    if (!sp.ok(a, kLErrSQSpace, rank, qi, (int)slot, 0)) return;
  }
  const uint64_t raddr = (uint64_t)(uintptr_t)a.bases[p.dst] + p.roff;
  const uint64_t laddr = p.atomic ? 0 : (uint64_t)(uintptr_t)a.bases[rank] + p.loff;
  uint32_t w[16];
  mbn_efa_words(w, slot, size, 0x100u + (uint32_t)qi, (uint32_t)p.dst, p.atomic, p.atomic ? (uint32_t)p.add : 0u,
                p.flush, raddr, a.regions[p.dst].key, p.atomic ? 0u : p.len, laddr, a.regions[rank].key);
  uint8_t *e = s->q.sq + (size_t)(slot & s->q.bb_mask) * 64u;
#pragma unroll
  for (int k = 0; k < 4; ++k) st_v4(e + 16 * k, w[4 * k], w[4 * k + 1], w[4 * k + 2], w[4 * k + 3]);
  Spin sp2;
  while (ld_acquire_gpu_u32(&s->published) != slot) {
    if (!sp2.ok(a, kLErrPublish, rank, qi, (int)slot, 0)) return;
  }
  uint32_t since = *(volatile unsigned int *)&s->since_db + 1;
  if (since >= (uint32_t)a.per_db || p.flush) {
    ring_efa(a.ordering, s->q.db, slot + 1u);
    since = 0;
  }
  *(volatile unsigned int *)&s->since_db = since;
  st_release_gpu_u32(&s->published, slot + 1u);
}

// mini-proxy, by one lane: reserve a ring slot (atomic), check room
// against the worker's progress (a PCIe read; FIFO keeps a cached copy),
// write the 32 B descriptor and publish it by its last word.
// The ring of channel ch. Reserved background (channels from bg_ch0 on,
// when rings past layer_rings exist) has rings of its own; the layer's
// channels share the first layer_rings, as they would with no background.
__device__ __forceinline__ int proxy_ring(const LayerArgs &a, int ch) {
  if (a.layer_rings < a.nrings) {
    return ch >= a.bg_ch0 ? a.layer_rings + (ch - a.bg_ch0) % (a.nrings - a.layer_rings) : ch % a.layer_rings;
  }
  return ch % a.nrings;
}

__device__ __forceinline__ void proxy_post(const LayerArgs &a, int rl, int rank, const Post &p) {
  const int ring = proxy_ring(a, p.ch);
  const PRing r = a.rings[(size_t)rl * a.nrings + ring];
  const unsigned long long slot = atomicAdd(r.tail, 1ull);
  Spin sp;
  if (a.handoff == MBN_HANDOFF_FIFO) {
    unsigned long long c = *(volatile unsigned long long *)r.cached;
    if (slot - c > a.ring_mask) {
      do {
        c = ld_acquire_sys_b64(&r.ctl->head);
      } while (slot - c > a.ring_mask && sp.ok(a, kLErrRingSpace, rank, ring, (int)slot, 0));
      atomicMax(r.cached, c);
    }
  } else {
    while (slot - ld_acquire_sys_b64(&r.ctl->head) > a.ring_mask) {
      if (!sp.ok(a, kLErrRingSpace, rank, ring, (int)slot, 0)) return;
    }
  }
  Desc32 *dd = r.d + (slot & a.ring_mask);
  const uint64_t av = p.roff | (uint64_t)p.dst << 40 | (p.atomic ? kDescAtomic : kDescWrite) << 56;
  const uint64_t b = p.atomic ? p.add : p.loff;
  const uint64_t c = (uint64_t)p.len | (uint64_t)((uint32_t)slot ^ desc_mix(av, b)) << 32;
  st_v2_b64(&dd->a, av, b);
  if (a.handoff == MBN_HANDOFF_FIFO) {
    __threadfence();
    st_volatile_v2_b64(&dd->c, c, slot + 1);
  } else {
    st_b64(&dd->c, c);
    st_release_sys_b64(&dd->ctrl, slot + 1);
  }
}

// Per-warp statistics of a rank's posting warps, kept by lane 0.
struct PostStats {
  unsigned long long last = 0, cycles = 0;
  long long posts = 0, copies = 0;
};

// Post p through the path from the whole warp. Writes to the rank itself,
// and every write on the direct path, are copies the warp makes (DeepEP's
// P2P path); control words there are release stores. Returns after the
// post returned control to the warp.
template <int PATH>
__device__ __forceinline__ void send_op(const LayerArgs &a, int rl, int rank, const Post &p, int lane, PostStats &st) {
  const LDims &d = a.d;
  if (PATH == MBN_LPATH_DIRECT || p.dst == rank) {
    if (p.atomic) {
      // Each control word has one writer: a release store of the value.
      __syncwarp();
      if (lane == 0) {
        fence_layer(d.sys_scope);
        st_release_sys_s64(a.bases[p.dst] + p.roff, (long long)p.add);
      }
    } else {
      warp_copy(a.bases[p.dst] + p.roff, a.bases[rank] + p.loff, p.len, lane);
      __syncwarp();
      if (lane == 0) st.copies++;
    }
    if (lane == 0) st.last = gtime();
    __syncwarp();
    return;
  }
  __syncwarp();
  if (lane == 0) {
    const uint64_t c0 = clk();
    if (PATH == MBN_LPATH_PROXY) {
      proxy_post(a, rl, rank, p);
    } else if (PATH == MBN_LPATH_EFA) {
      efa_post(a, rl, rank, p);
    } else {
      gda_post(a, rl, rank, p);
    }
    st.cycles += clk() - c0;
    st.posts++;
    st.last = gtime();
  }
  __syncwarp();
}

__device__ __forceinline__ void flush_stats(RankCtl *rc, const PostStats &st, int lane) {
  if (lane == 0 && (st.posts || st.copies)) {
    atomicMax(&rc->t_issue, st.last);
    atomicAdd(&rc->posts, (unsigned long long)st.posts);
    atomicAdd(&rc->copies, (unsigned long long)st.copies);
    atomicAdd(&rc->post_cycles, st.cycles);
  }
}

// ------------------------------------------------------------- grid sync

// The rank's S blocks meet (cooperative groups' grid sync, over one rank's
// blocks only).
__device__ __forceinline__ void rank_barrier(const LayerArgs &a, RankCtl *rc, int rank) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned int gen = ld_acquire_gpu_u32(&rc->bar_gen);
    __threadfence();
    if (atomicAdd(&rc->bar_count, 1u) == (unsigned int)a.d.S - 1) {
      atomicExch(&rc->bar_count, 0u);
      __threadfence();
      st_release_gpu_u32(&rc->bar_gen, gen + 1);
    } else {
      Spin sp;
      while (ld_acquire_gpu_u32(&rc->bar_gen) == gen) {
        if (!sp.ok(a, kLErrBarrier, rank, (int)gen, 0, 0)) break;
      }
    }
    __threadfence();
  }
  __syncthreads();
}

__device__ __forceinline__ void bar_named(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

}  // namespace mbn
