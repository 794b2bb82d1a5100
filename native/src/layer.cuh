// The native layer: DeepEP-style low-latency dispatch and combine run by
// real kernels, with every message going through a transport's GPU-side
// mechanism and, for the RDMA paths, an emulated NIC executing the WQEs.
//
// Ranks. R ranks are spread over the devices, Rd on each; a rank owns S
// blocks of 1,024 threads, one per SM (the launch asks for more than half
// an SM's shared memory, so no two blocks share an SM), and one region of
// device memory laid out identically on every rank (a symmetric heap), so
// a peer's buffer is its base plus the same offset. Several ranks on one
// device are virtual ranks: their own SMs, their own buffers, one GPU.
//
// One launch per device runs a phase: the ranks' blocks, then the emulated
// NIC's blocks (paths through a NIC), then background posters. Every wait
// is bounded: a wait that runs past the timeout records what it waited for
// and raises an abort flag that ends every other wait of the launch.
#pragma once

#include "common.cuh"
#include "emunic.h"
#include "wqe.cuh"

namespace mbn {

constexpr int kLayerThreads = 1024;
constexpr int kLayerWarps = kLayerThreads / 32;
constexpr int kCastWarps = kLayerWarps - 1;  // the last warp counts tokens per expert
constexpr uint32_t kFinishTag = 1u << 24;    // finish counter: data posts + (tag - expected) == tag
constexpr int kMaxGroups = 32;

// Error codes a launch records (the first one wins).
enum LayerErr : int {
  kLErrNone = 0,
  kLErrWaitCount = 1,    // dispatch receiver: a count never arrived
  kLErrWaitFlag = 2,     // combine receiver: a flag never arrived
  kLErrBarrier = 3,      // the rank's grid sync
  kLErrSQSpace = 4,      // a send queue stayed full
  kLErrPublish = 5,      // a poster's publication turn never came
  kLErrRingSpace = 6,    // a proxy ring stayed full
  kLErrFinish = 7,       // the count sender waited for the expert's data posts
  kLErrTornWQE = 8,      // the NIC never saw the announced WQE
  kLErrBadWQE = 9,       // the NIC refused a WQE (detail: MBN_WQE_*)
  kLErrGroup = 10,       // a warp group's internal handoff
  kLErrHead = 11,        // background head start
  kLErrRoom = 12,        // normal: a ring buffer's head never advanced
  kLErrTail = 13,        // normal: a ring buffer's tail never advanced
  kLErrCounts = 14,      // normal: a source's per-channel count never arrived
};

// Dispatch message: 16 B header (source token index, 3 reserved ints),
// the hidden vector (FP8 or BF16), FP8 scales.
struct LDims {
  int32_t R, T, H, K, E, nl;  // ranks, max tokens, hidden, top-k, experts, local experts
  int32_t S, G, wpg;          // blocks per rank, warp groups per block, warps per group
  int32_t Rd, rank0;          // ranks on this device, the first of them
  int32_t fp8, nscales;
  int32_t msg;                // dispatch message bytes
  int32_t dbytes;             // dispatch payload bytes (hidden x 1 or 2)
  int32_t cmsg;               // combine message bytes (hidden x 2)
  int32_t path;               // MBN_LPATH_*
  int32_t nic_blocks, bg_blocks, rank_blocks;
  int32_t sys_scope;          // 1: peers on other devices (system-scope ordering)
  int32_t mode;               // MBN_LMODE_*
  // normal mode: channels, tokens per published tail, ring tokens, message bytes
  int32_t C, chunk, buf, nmsg;
  // symmetric region offsets (bytes)
  uint64_t off_x, off_send, off_recv, off_count, off_packed, off_pscales, off_srcinfo, off_range, off_pcount,
      off_y, off_csend, off_crecv, off_flag, off_out, off_bg, off_fetch, region;
  // normal mode (zero-sized otherwise): counts [src][C] and ranges [src][C]
  // at the receiver; dispatch and combine rings [C][src][buf] with their
  // tail and head words [C][src]; ring slot of each (token, peer) at the
  // sender [T][R]; received rows; the experts' per-row output; the
  // rank's messages, cast before the launch [T]
  uint64_t off_ncnt, off_nrange, off_ntotal, off_ntail, off_nhead, off_nring, off_nslot, off_nrecv, off_ny,
      off_ctail, off_chead, off_cring, off_nsend;
  uint64_t bg_area;
};

// Per-rank control words (device memory of the rank's device).
struct alignas(128) RankCtl {
  unsigned long long t_start;  // atomicMin of block entries (after the head start)
  unsigned long long t_issue;  // atomicMax: last post returned
  unsigned long long t_send;   // atomicMax: send part done (dispatch: after the grid sync)
  unsigned long long t_wait;   // atomicMax: last count or flag observed (combine: after its grid sync)
  unsigned long long t_ready;  // atomicMax: block end
  unsigned long long posts, copies, post_cycles;
  unsigned int bar_count;
  unsigned int pad0[31];
  unsigned int bar_gen;
  unsigned int pad1[31];
};

// Per-device control words.
struct alignas(128) DevCtl {
  unsigned long long origin;      // atomicMin of every block's entry
  unsigned int rank_done;         // rank blocks finished
  unsigned int bg_done;           // background blocks finished
  int abort;
  int err_code, err_rank, err_a, err_b, err_c;
  unsigned long long nic_wqes, nic_cqes, nic_bytes, nic_dbs, nic_torn, nic_switches, bg_posts;
};

// A GPU-posted send queue (mini-gda RC QP or DCI) as the posting warps see
// it: the WQE ring and doorbell (DevQP) and the sharing protocol.
struct alignas(128) SendQ {
  DevQP q;
  unsigned int reserved;  // next basic block to hand out (atomic)
  unsigned int pad0[31];
  unsigned int published; // basic blocks published, in reservation order
  unsigned int since_db;  // WQEs published since the last doorbell (publisher only)
  unsigned int pad1[30];
  unsigned int nic_ci;    // the NIC's consumer index, for room checks
  unsigned int pad2[31];
};

// One queue as the emulated NIC sees it (device memory; the owning NIC
// warp is the only writer of ci, cq_pi and cur).
struct NicQ {
  const uint8_t *sq;     // ring (device memory, or mapped host memory for proxy queues)
  const uint64_t *db;    // doorbell word
  uint8_t *cq;           // CQ ring of cq_mask + 1 CQEs
  unsigned int *ci_pub;  // where the NIC publishes ci
  uint32_t bb_mask, cq_mask;
  uint32_t ci, cq_pi;
  int32_t src, dst;      // owning rank; RC: connected rank (-1 for DC)
  int32_t dc, cur;       // DC queue; its current destination
  int32_t host;          // 1: sq, db, cq and ci_pub are host memory
  int32_t efa;           // 1: an EFA SRD queue (efa_fmt.h): 64 B entries, the producer counter as doorbell
};

// Proxy descriptor: 32 B, published by its last word.
//   a    = remote offset (40 bits) | destination rank << 40 | op << 56
//   b    = local offset (write) or addend (atomic)
//   c    = bytes | (seq ^ mix(a, b)) << 32, so a torn descriptor shows
//   ctrl = seq + 1
struct Desc32 {
  uint64_t a, b, c, ctrl;
};

struct alignas(64) PRingHost {
  uint64_t head;  // descriptors consumed (worker progress)
  uint64_t pad[7];
};

struct PRing {
  Desc32 *d;                   // mapped host memory
  PRingHost *ctl;              // mapped host memory
  unsigned long long *tail;    // device memory: reservations
  unsigned long long *cached;  // device memory: last progress read
};

constexpr uint64_t kDescWrite = 1, kDescAtomic = 2;

__host__ __device__ __forceinline__ uint32_t desc_mix(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
  x ^= x >> 29;
  x *= 0xbf58476d1ce4e5b9ull;
  return (uint32_t)(x ^ (x >> 32));
}

// A verification finding.
struct Problem {
  int kind, rank, a, b, c, d;
};
constexpr int kMaxProblems = 16;

struct VerifyOut {
  unsigned long long count;  // findings
  unsigned long long checked;
  Problem first[kMaxProblems];
};

enum ProblemKind : int {
  kPCount = 1,       // rank a's count from src b for local expert c: got d
  kPToken = 2,       // a packed slot names a token out of range
  kPNotSelected = 3, // a packed slot holds a token that did not select the expert
  kPPayload = 4,     // payload bytes differ
  kPScale = 5,       // an FP8 scale differs
  kPSlots = 6,       // packed slots not tiled exactly once
  kPCombineSlot = 7, // a combine receive slot differs from the expert's output
  kPCombined = 8,    // a combined token differs from the reference
  kPFlag = 9,        // a combine flag is not exactly 1
  kPRange = 10,      // a layout range disagrees with its count
  kPNormalRow = 11,  // normal: received row c from (source a, channel b) names token d, out of order or range
  kPNormalTopk = 12, // normal: a received row's top-k ids or weights differ
  kPNormalMiss = 13, // normal: (source a, token b) reached the rank c times
};

struct LayerArgs {
  LDims d;
  uint8_t *const *bases;          // [R] every rank's region (peers through UVA)
  const mbn_region *regions;      // [R]
  RankCtl *rctl;                  // [Rd]
  int *counter;                   // [Rd][E] slot counters
  unsigned int *finish;           // [Rd][E]
  int *countsent;                 // [Rd][E]
  DevCtl *dctl;
  const int32_t *topk;            // [R][T][K]
  const float *weights;           // [R][T][K]
  const int32_t *ntok;            // [R]
  SendQ *sq;                      // gda/dc: [Rd][qs_per_rank]
  int32_t qs_per_rank, qpp, dcis;
  NicQ *nq;                       // queues this device's NIC serves
  int32_t nnq;
  PRing *rings;                   // proxy: [Rd][nrings]
  int32_t nrings;
  int32_t layer_rings;            // proxy: rings the layer's channels use (the rest: reserved background)
  uint32_t ring_mask;
  int32_t handoff, ordering, per_db, cqe_every;
  int32_t bg_warps, bg_bytes, bg_ch0, bg_nch;
  uint64_t bg_head_ns;
  int32_t pace, phase;
  double ns_per_byte, ns_per_msg;
  unsigned long long *pace_next;  // [R] (this device's ranks used)
  uint64_t timeout_ns;
};

// ---------------------------------------------------------------- helpers

__device__ __forceinline__ unsigned int ld_acquire_gpu_u32(const unsigned int *p) {
  unsigned int r;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(r) : "l"(p) : "memory");
  return r;
}

__device__ __forceinline__ void st_release_gpu_u32(unsigned int *p, unsigned int v) {
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ void st_release_sys_u32(unsigned int *p, unsigned int v) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ long long ld_acquire_sys_s64(const void *p) {
  long long r;
  asm volatile("ld.acquire.sys.global.s64 %0, [%1];" : "=l"(r) : "l"(p) : "memory");
  return r;
}

__device__ __forceinline__ void st_release_sys_s64(void *p, long long v) {
  asm volatile("st.release.sys.global.s64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ unsigned int atom_add_release_gpu(unsigned int *p, unsigned int v) {
  unsigned int r;
  asm volatile("atom.add.release.gpu.global.u32 %0, [%1], %2;" : "=r"(r) : "l"(p), "r"(v) : "memory");
  return r;
}

__device__ __forceinline__ unsigned long long atom_add_sys_u64(unsigned long long *p, unsigned long long v) {
  unsigned long long r;
  asm volatile("atom.add.sys.global.u64 %0, [%1], %2;" : "=l"(r) : "l"(p), "l"(v) : "memory");
  return r;
}

__device__ __forceinline__ void st_v2_b64(void *p, uint64_t a, uint64_t b) {
  asm volatile("st.global.v2.b64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}

__device__ __forceinline__ mbn_seg ld_seg_volatile(const void *p) {
  mbn_seg s;
  asm volatile("ld.volatile.global.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(s.w[0]), "=r"(s.w[1]), "=r"(s.w[2]), "=r"(s.w[3])
               : "l"(p)
               : "memory");
  return s;
}

__device__ __forceinline__ void st_seg(void *p, mbn_seg s) { st_v4(p, s.w[0], s.w[1], s.w[2], s.w[3]); }

__device__ __forceinline__ void fence_layer(int sys) {
  if (sys) {
    asm volatile("fence.acq_rel.sys;" ::: "memory");
  } else {
    asm volatile("fence.acq_rel.gpu;" ::: "memory");
  }
}

// Record the launch's first error and raise the abort flag.
__device__ __forceinline__ void raise_err(const LayerArgs &a, int code, int rank, int x, int y, int z) {
  DevCtl *c = a.dctl;
  if (atomicCAS(&c->err_code, 0, code) == 0) {
    c->err_rank = rank;
    c->err_a = x;
    c->err_b = y;
    c->err_c = z;
  }
  __threadfence();
  atomicExch(&c->abort, 1);
}

// A bounded spin: ok() is false once the launch aborted or the wait ran
// past the timeout (which it then records).
struct Spin {
  uint64_t t0 = 0;
  uint32_t n = 0;
  __device__ __forceinline__ bool ok(const LayerArgs &a, int code, int rank, int x, int y, int z) {
    if ((++n & 31u) != 0) return true;
    if (*(volatile int *)&a.dctl->abort) return false;
    uint64_t now = gtime();
    if (t0 == 0) {
      t0 = now;
      return true;
    }
    if (now - t0 > a.timeout_ns) {
      raise_err(a, code, rank, x, y, z);
      return false;
    }
    return true;
  }
};

__device__ __forceinline__ bool aborted(const LayerArgs &a) { return *(volatile int *)&a.dctl->abort != 0; }

// ------------------------------------------------------------- token data

// Token x of rank src: channel c's BF16 value from a hash, scaled per
// 128-channel group so that FP8 scales differ from group to group.
__device__ __forceinline__ float x_value(int src, int token, int c) {
  uint32_t h = (uint32_t)src * 0x9e3779b1u ^ (uint32_t)token * 0x85ebca77u ^ (uint32_t)c * 0xc2b2ae3du;
  h ^= h >> 15;
  h *= 0x2c1b3c6du;
  h ^= h >> 12;
  float u = (float)(h >> 8) * (1.0f / 16777216.0f) * 2.0f - 1.0f;  // [-1, 1)
  int e = (token + c / 128) % 7 - 3;
  return ldexpf(u, e);
}

// An expert's stand-in computation: its output is its input times a
// per-expert factor, so a token sent back by the wrong expert shows.
__device__ __forceinline__ float expert_factor(int e) { return 1.0f + (float)(e & 7) * 0.125f; }

}  // namespace mbn
