// EFA SRD RDMA-write WQE construction and doorbell publication on the GPU,
// as EFA DP Direct posts from CUDA: the GPU writes a 64 B TX WQE into the
// send queue and stores the queue's 32-bit producer counter to the SQ
// doorbell, with the ordering of MODE between them.
//
// Layout (rdma-core providers/efa/efa_io_defs.h; little-endian, 64 B):
//   meta   : req_id(16) ctrl1(8: op_type 3:0, has_imm 4, meta_desc 7)
//            ctrl2(8: phase 0, first 2, last 3, comp_req 4) ; dest_qp(16)
//            length(16, SGL entries) ; imm(32) ; ah(16) reserved(16)
//   remote : length(16) ctrl1(8: meta_extension 6, meta_desc 7) ctrl(8) ;
//            rkey(32) ; addr_lo(32) ; addr_hi(32)
//   sgl[0] : length(16) ctrl1(8) ctrl(8: last 3) ; lkey(32) ; addr(64)
//   sgl[1] : unused, zero
// The WQE's phase bit flips each time the producer counter wraps the ring;
// EFA's RDMA write carries no inline data and there is no doorbell record.
// native/efa.go encodes and decodes the same layout on the host.
#pragma once

#include "common.cuh"

#define EFA_OP_RDMA_WRITE 3u

namespace mbn {

struct EfaQP {
  uint8_t *sq;      // (mask + 1) * 64 bytes
  uint32_t *db;     // SQ doorbell: host-mapped page or device memory
  uint32_t mask;    // entries - 1
  uint32_t dest_qp; // 16 bits
  uint32_t ah;      // 16 bits
  uint32_t rkey;
  uint32_t lkey;
  uint32_t imm;
  uint32_t comp_req;
  uint32_t pad;
  uint64_t raddr;
  uint64_t laddr;
};

// Build one RDMA write of len bytes at producer counter pc.
__device__ __forceinline__ void efa_build_write(const EfaQP &q, uint32_t pc, uint64_t raddr, uint32_t len) {
  uint32_t phase = (pc / (q.mask + 1u)) & 1u;
  uint32_t ctrl1 = EFA_OP_RDMA_WRITE | (q.imm != 0u ? 1u << 4 : 0u) | 1u << 7;
  uint32_t ctrl2 = phase | 1u << 2 | 1u << 3 | (q.comp_req != 0u ? 1u << 4 : 0u);
  uint8_t *w = q.sq + (size_t)(pc & q.mask) * 64u;
  st_v4(w, (pc & 0xffffu) | ctrl1 << 16 | ctrl2 << 24, (q.dest_qp & 0xffffu) | 1u << 16, q.imm, q.ah & 0xffffu);
  st_v4(w + 16, (len & 0xffffu) | (1u << 6 | 1u << 7) << 16, q.rkey, (uint32_t)raddr, (uint32_t)(raddr >> 32));
  st_v4(w + 32, (len & 0xffffu) | (1u << 3) << 24, q.lkey, (uint32_t)q.laddr, (uint32_t)(q.laddr >> 32));
  st_v4(w + 48, 0u, 0u, 0u, 0u);
}

__device__ __forceinline__ void st_mmio_b32(void *p, uint32_t v) {
#ifdef MBN_NO_ST_MMIO
  asm volatile("st.relaxed.sys.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#else
  asm volatile("st.mmio.relaxed.sys.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
#endif
}

// Publish the WQEs up to producer counter pc: the 32-bit doorbell with the
// ordering of MODE (MBN_ORDER_*; FENCED_DBREC has no record to fence and
// is refused before launch).
template <int MODE>
__device__ __forceinline__ void efa_ring(const EfaQP &q, uint32_t pc) {
  uint32_t v = pc & 0xffffu;
  if (MODE == MBN_ORDER_NONE) {
    st_mmio_b32(q.db, v);
  } else if (MODE == MBN_ORDER_GPU_FENCE) {
    fence_acq_rel_gpu();
    st_mmio_b32(q.db, v);
  } else if (MODE == MBN_ORDER_RELEASE_GPU) {
    asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(q.db), "r"(v) : "memory");
  } else if (MODE == MBN_ORDER_THREADFENCE) {
    fence_sc_gpu();
    st_mmio_b32(q.db, v);
  } else if (MODE == MBN_ORDER_RELEASE_SYS) {
    asm volatile("st.release.sys.global.b32 [%0], %1;" ::"l"(q.db), "r"(v) : "memory");
  } else if (MODE == MBN_ORDER_FENCE_SYS) {
    // DP Direct's own ordering: __threadfence_system() before the store.
    fence_sc_sys();
    st_mmio_b32(q.db, v);
  }
  // MBN_ORDER_NO_DOORBELL: the WQE only.
}

}  // namespace mbn
