/*
 * efa_fmt.h: EFA's SRD send-queue entry as the layer's GPU posters build it
 * and the emulated NIC parses and executes it. Plain C99, like wqe_fmt.h,
 * so that nvcc (host and device), g++ and cgo compile the same code.
 *
 * A 64 B TX WQE (rdma-core providers/efa/efa_io_defs.h: efa_io_tx_meta_desc,
 * efa_io_remote_mem_addr, efa_io_tx_buf_desc), as 16 little-endian words:
 *   w0  req_id(16) ctrl1(8: op_type 3:0, has_imm 4, meta_desc 7)
 *       ctrl2(8: phase 0, first 2, last 3, comp_req 4)
 *   w1  dest_qp_num(16) length(16: buffer descriptors, 1)
 *   w2  immediate data
 *   w3  ah(16) reserved(16)
 *   w4  remote length(16) ctrl1(8: meta_extension 6, meta_desc 7) ctrl(8)
 *   w5  rkey   w6,w7 remote address
 *   w8  length(16) ctrl1(8) ctrl(8: last 3)   w9 lkey   w10,w11 local address
 *   w12..w15 zero
 * An entry is new to the device when its req_id is the producer counter's
 * low 16 bits and its phase bit the counter's pass over the ring. The SQ
 * doorbell is the producer counter itself (a 32-bit store; the emulated
 * NIC's doorbell word holds it in its low half): WQEs up to pc - 1 are
 * posted.
 *
 * SRD has no RDMA atomics. A flag travels as a write with immediate data;
 * the responder's completion carries the immediate, which an EFA port of
 * a DeepEP-style kernel turns into the count or flag its receiver polls.
 * The emulated NIC does that step itself: it adds the immediate, sign
 * extended, to the 8 B word at the WQE's remote address (a zero-length
 * write names the flag it stands for there).
 */
#ifndef MBN_EFA_FMT_H
#define MBN_EFA_FMT_H

#include "wqe_fmt.h"

#define MBN_EFA_OP_RDMA_WRITE 3u
#define MBN_EFA_HAS_IMM (1u << 4)
#define MBN_EFA_META_DESC (1u << 7)
#define MBN_EFA_PHASE 1u
#define MBN_EFA_FIRST (1u << 2)
#define MBN_EFA_LAST (1u << 3)
#define MBN_EFA_COMP_REQ (1u << 4)
#define MBN_EFA_REMOTE_META ((1u << 6) | (1u << 7))
#define MBN_EFA_MAX_LEN 0xffffu /* a buffer descriptor's 16-bit length */

/* The 16 words of an RDMA write of len bytes from laddr to raddr, at
 * producer counter pc of a ring of entries entries, to address handle ah;
 * with has_imm, carrying imm. */
MBN_HD void mbn_efa_words(uint32_t out[16], uint32_t pc, uint32_t entries, uint32_t dest_qp, uint32_t ah, int has_imm,
                          uint32_t imm, int comp_req, uint64_t raddr, uint32_t rkey, uint32_t len, uint64_t laddr,
                          uint32_t lkey) {
  uint32_t phase = (pc / entries) & 1u;
  uint32_t ctrl1 = MBN_EFA_OP_RDMA_WRITE | MBN_EFA_META_DESC | (has_imm ? MBN_EFA_HAS_IMM : 0u);
  uint32_t ctrl2 = phase | MBN_EFA_FIRST | MBN_EFA_LAST | (comp_req ? MBN_EFA_COMP_REQ : 0u);
  int i;
  out[0] = (pc & 0xffffu) | ctrl1 << 16 | ctrl2 << 24;
  out[1] = (dest_qp & 0xffffu) | 1u << 16;
  out[2] = imm;
  out[3] = ah & 0xffffu;
  out[4] = (len & 0xffffu) | MBN_EFA_REMOTE_META << 16;
  out[5] = rkey;
  out[6] = (uint32_t)raddr;
  out[7] = (uint32_t)(raddr >> 32);
  out[8] = (len & 0xffffu) | MBN_EFA_LAST << 24;
  out[9] = lkey;
  out[10] = (uint32_t)laddr;
  out[11] = (uint32_t)(laddr >> 32);
  for (i = 12; i < 16; ++i) out[i] = 0;
}

/* 1 when the entry read at consumer index ci (s: its four segments) is the
 * one the poster wrote there on this pass of the ring. */
MBN_HD int mbn_efa_ready(const mbn_seg *s, uint32_t ci, uint32_t entries) {
  uint32_t w0 = s[0].w[0];
  uint32_t ctrl2 = w0 >> 24;
  return (w0 & 0xffffu) == (ci & 0xffffu) && (ctrl2 & MBN_EFA_PHASE) == ((ci / entries) & 1u);
}

/* 1 when doorbell db (the producer counter) announces an entry at or
 * after consumer index ci; 0 for a never-rung 0. */
MBN_HD int mbn_efa_db_pending(uint64_t db, uint32_t ci) {
  return db != 0 && (((uint32_t)db - ci) & 0xffffu) != 0;
}

/* The req_id of the last entry doorbell db announces. */
MBN_HD uint32_t mbn_efa_db_target(uint64_t db) { return ((uint32_t)db - 1u) & 0xffffu; }

/* Parse the entry in s (four segments) as the NIC executes it: a write, or
 * a flag (MBN_OP_IMM, 8 B at the remote address). op.dst is the address
 * handle, which the layer gives as the destination rank. */
MBN_HD mbn_wqe_op mbn_efa_parse(const mbn_seg *s) {
  mbn_wqe_op op;
  uint32_t w0 = s[0].w[0], ctrl1 = (w0 >> 16) & 0xffu, ctrl2 = w0 >> 24;
  uint32_t rlen = s[1].w[0] & 0xffffu, llen = s[2].w[0] & 0xffffu;
  op.kind = 0;
  op.err = MBN_WQE_OK;
  op.wqe_idx = w0 & 0xffffu;
  op.qpn = s[0].w[1] & 0xffffu;
  op.ds = 4;
  op.bbs = 1;
  op.signaled = (ctrl2 & MBN_EFA_COMP_REQ) ? 1u : 0u;
  op.inl = op.inline_seg = 0;
  op.add = 0;
  op.dct = 0;
  op.dst = (int32_t)(s[0].w[3] & 0xffffu);
  op.rkey = s[1].w[1];
  op.raddr = (uint64_t)s[1].w[3] << 32 | s[1].w[2];
  op.lkey = s[2].w[1];
  op.laddr = (uint64_t)s[2].w[3] << 32 | s[2].w[2];
  op.len = rlen;
  if ((ctrl1 & 0x0fu) != MBN_EFA_OP_RDMA_WRITE || !(ctrl1 & MBN_EFA_META_DESC) ||
      ((s[1].w[0] >> 16) & 0xffu) != MBN_EFA_REMOTE_META) {
    op.err = MBN_WQE_BAD_OPCODE;
    return op;
  }
  if ((s[0].w[1] >> 16) != 1u || rlen != llen || (ctrl2 & (MBN_EFA_FIRST | MBN_EFA_LAST)) != (MBN_EFA_FIRST | MBN_EFA_LAST)) {
    op.err = MBN_WQE_BAD_DS;
    return op;
  }
  if (ctrl1 & MBN_EFA_HAS_IMM) {
    if (rlen != 0u) {
      op.err = MBN_WQE_BAD_DS; /* the layer's flags carry no payload */
      return op;
    }
    if (op.raddr & 7u) {
      op.err = MBN_WQE_BAD_ALIGN;
      return op;
    }
    op.add = (uint64_t)(int64_t)(int32_t)s[0].w[2];
    op.len = 8;
    op.kind = MBN_OP_IMM;
    return op;
  }
  op.kind = MBN_OP_WRITE;
  return op;
}

#endif /* MBN_EFA_FMT_H */
