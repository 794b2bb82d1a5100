// mlx5 RC RDMA-write WQE construction and doorbell publication on the GPU.
//
// Layout (all multi-byte fields big-endian, 16 B segments in 64 B basic
// blocks, the send queue a power-of-two ring of basic blocks):
//   ctrl  : opmod(8) | wqe_idx(16) | opcode(8) ; qpn(24) | ds(8) ;
//           signature(8) dci_stream(16) fm_ce_se(8) ; imm(32)
//   raddr : remote_addr(64) ; rkey(32) ; reserved(32)
//   data  : byte_count(32) ; lkey(32) ; addr(64)
//   inline: byte_count | MLX5_INLINE_SEG (32) ; payload ..., padded to 16 B
// ds counts 16 B units of the whole WQE; the doorbell record (SQ word of the
// dbrec pair) holds the next free basic-block index, 16 bits big-endian; the
// 8 B doorbell carries the ctrl segment's first 8 bytes as stored.
// native/wqe.go encodes and decodes the same layout on the host.
#pragma once

#include "common.cuh"

#define MLX5_OPCODE_RDMA_WRITE 0x08u
#define MLX5_INLINE_SEG 0x80000000u
#define MLX5_SND_DBR 1

namespace mbn {

struct DevQP {
  uint8_t *sq;      // device memory, (bb_mask + 1) * 64 bytes
  uint32_t *dbrec;  // device memory; [MLX5_SND_DBR] is the send record
  uint64_t *db;     // doorbell target: host-mapped page or device memory
  uint32_t bb_mask; // basic blocks - 1
  uint32_t qpn;
  uint32_t rkey;
  uint32_t lkey;
  uint32_t imm;
  uint32_t opmod;
  uint32_t fm_ce_se;
  uint32_t pad;
  uint64_t raddr;
  uint64_t laddr;
};

// First 8 bytes of a ctrl segment as stored (little-endian words).
struct Ctrl8 {
  uint32_t w0, w1;
};

__host__ __device__ __forceinline__ uint32_t wqe_ds(uint32_t len, bool inl) {
  return 2u + (inl ? (4u + len + 15u) / 16u : 1u);
}

__host__ __device__ __forceinline__ uint32_t wqe_bbs(uint32_t ds) { return (ds + 3u) / 4u; }

__device__ __forceinline__ uint8_t *seg_ptr(const DevQP &q, uint32_t pi, uint32_t seg) {
  // A WQE that runs past the ring's end continues at its start, segment by
  // segment, as the NIC fetches it.
  uint32_t off = (pi * 64u + seg * 16u) & (q.bb_mask * 64u + 63u);
  return q.sq + off;
}

// Build one RDMA write at producer index pi (basic blocks). src is a 16 B
// aligned payload padded with zeros to whole 16 B chunks plus one.
__device__ __forceinline__ Ctrl8 build_write(const DevQP &q, uint32_t pi, uint64_t raddr, const uint4 *src,
                                             uint32_t len, bool inl) {
  uint32_t ds = wqe_ds(len, inl);
  Ctrl8 c;
  c.w0 = bswap32((q.opmod << 24) | ((pi & 0xffffu) << 8) | MLX5_OPCODE_RDMA_WRITE);
  c.w1 = bswap32((q.qpn << 8) | ds);
  st_v4(seg_ptr(q, pi, 0), c.w0, c.w1, q.fm_ce_se << 24, bswap32(q.imm));
  st_v4(seg_ptr(q, pi, 1), bswap32((uint32_t)(raddr >> 32)), bswap32((uint32_t)raddr), bswap32(q.rkey), 0u);
  if (inl) {
    // The 4 B byte count shifts the payload by one word: each output chunk
    // takes the previous source chunk's last word.
    uint32_t chunks = ds - 2u;
    uint32_t carry = bswap32(len | MLX5_INLINE_SEG);
    for (uint32_t k = 0; k < chunks; ++k) {
      uint4 v = ld_v4(src + k);
      st_v4(seg_ptr(q, pi, 2u + k), carry, v.x, v.y, v.z);
      carry = v.w;
    }
  } else {
    st_v4(seg_ptr(q, pi, 2), bswap32(len), bswap32(q.lkey), bswap32((uint32_t)(q.laddr >> 32)),
          bswap32((uint32_t)q.laddr));
  }
  return c;
}

// Publish WQEs up to new_pi: doorbell record, then the 8 B doorbell, with
// the ordering of MODE (MBN_ORDER_*).
template <int MODE>
__device__ __forceinline__ void ring_db(const DevQP &q, uint32_t new_pi, Ctrl8 c) {
  uint32_t rec = bswap32(new_pi & 0xffffu);
  uint64_t dbv = ((uint64_t)c.w1 << 32) | c.w0;
  uint32_t *r = q.dbrec + MLX5_SND_DBR;
  if (MODE == MBN_ORDER_FENCED_DBREC) fence_acq_rel_gpu();
  if (MODE == MBN_ORDER_THREADFENCE) fence_sc_gpu();
  st_b32(r, rec);
  if (MODE == MBN_ORDER_NONE) {
    st_mmio_b64(q.db, dbv);
  } else if (MODE == MBN_ORDER_GPU_FENCE || MODE == MBN_ORDER_FENCED_DBREC) {
    fence_acq_rel_gpu();
    st_mmio_b64(q.db, dbv);
  } else if (MODE == MBN_ORDER_RELEASE_GPU) {
    st_release_gpu_b64(q.db, dbv);
  } else if (MODE == MBN_ORDER_THREADFENCE) {
    fence_sc_gpu();
    st_mmio_b64(q.db, dbv);
  } else if (MODE == MBN_ORDER_RELEASE_SYS) {
    st_release_sys_b64(q.db, dbv);
  } else if (MODE == MBN_ORDER_FENCE_SYS) {
    fence_sc_sys();
    st_mmio_b64(q.db, dbv);
  }
  // MBN_ORDER_NO_DOORBELL: the record only.
}

// Fill a 16 B-aligned payload buffer: len bytes of data followed by zeros.
void payload_pattern(uint8_t *buf, size_t cap, uint32_t len, uint32_t seed);

}  // namespace mbn
