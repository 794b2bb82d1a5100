/*
 * emunic.h: the decisions of the emulated NIC, shared by its GPU warps
 * (layer.cu) and its CPU reference (mbn_nic_host_drain, which the tests of
 * native/emunic run without a GPU): when a doorbell announces work, whether
 * the WQE at the consumer index is the one expected, what it asks for, and
 * whether its keys and ranges are allowed.
 *
 * A queue is a ring of basic blocks that a poster fills and announces with
 * an 8 B doorbell holding the last WQE's ctrl words. The NIC keeps a
 * consumer index ci (basic blocks, free-running) and executes WQEs from ci
 * until it has executed the one whose wqe_idx the doorbell names.
 */
#ifndef MBN_EMUNIC_H
#define MBN_EMUNIC_H

#include <string.h>

#include "efa_fmt.h"
#include "wqe_fmt.h"

/* 1 when doorbell db announces a WQE at or after ci (16-bit indices:
 * after the announced WQE ci has moved past it). 0 for a never-rung 0. */
MBN_HD int mbn_db_pending(uint64_t db, uint32_t ci) {
  if (db == 0) return 0;
  return ((mbn_doorbell_index(db) - ci) & 0xffffu) < 0x8000u;
}

/* 1 when the ctrl segment read at ci is that WQE (its index and a sane
 * size), 0 when the poster's stores are not all visible yet. */
MBN_HD int mbn_ctrl_ready(mbn_seg c, uint32_t ci) {
  mbn_ctrl k = mbn_parse_ctrl(c);
  return k.wqe_idx == (ci & 0xffffu) && k.ds >= 3u && k.ds <= 16u;
}

/* Byte offset of segment seg of the WQE at basic block pi in a ring of
 * ring_bytes (a power of two). */
MBN_HD uint32_t mbn_seg_offset(uint32_t pi, uint32_t seg, uint32_t ring_bytes) {
  return (pi * MBN_BB + seg * MBN_SEG) & (ring_bytes - 1u);
}

/* ---------------------------------------------------------------- CPU
 * The CPU reference: one queue in host memory, addresses are host
 * pointers, ranks' regions given by the caller. Not used on the GPU. */
#ifndef __CUDA_ARCH__

typedef struct {
  const uint8_t *sq;  /* ring */
  uint32_t bbs;       /* ring size in basic blocks, a power of two */
  uint32_t ci;        /* consumer index (basic blocks, free-running) */
  int dc;             /* 1: a DCI, the destination comes from each WQE's address vector */
  int efa;            /* 1: an EFA SRD queue (efa_fmt.h): 64 B entries, the destination from each one's address handle */
  int32_t src;        /* rank that owns the queue */
  int32_t dst;        /* RC: the connected rank */
  uint8_t *cq;        /* CQ ring of cq_entries 64 B CQEs, or NULL */
  uint32_t cq_entries;/* a power of two */
  uint32_t cq_pi;
  int32_t cur;        /* DC: the DCI's current destination, -1 none */
  uint64_t switches;  /* DC: changes of destination */
} mbn_host_queue;

static inline void mbn_host_cqe(mbn_host_queue *q, const mbn_wqe_op *op, uint32_t opcode, uint32_t syndrome) {
  uint32_t w[16];
  if (!q->cq || !q->cq_entries) return;
  uint32_t owner = (q->cq_pi / q->cq_entries) & 1u;
  mbn_cqe_words(op->qpn, op->wqe_idx, op->len, opcode, owner, syndrome, w);
  memcpy(q->cq + (size_t)(q->cq_pi & (q->cq_entries - 1u)) * 64u, w, 64);
  q->cq_pi++;
}

/* Execute every WQE from q->ci through the one doorbell db announces (for
 * an EFA queue: entries up to the producer counter db holds).
 * Returns MBN_WQE_OK, a MBN_WQE_* refusal (after writing an error CQE and
 * leaving ci at the refused WQE), or -1 when the WQE at ci is not the one
 * expected (stale or torn). *executed counts executed WQEs. */
static inline int mbn_nic_host_drain(mbn_host_queue *q, uint64_t db, const mbn_region *regions, int nregions,
                                     uint64_t *executed) {
  uint32_t ring = q->bbs * MBN_BB;
  uint32_t target;
  if (q->efa ? !mbn_efa_db_pending(db, q->ci) : !mbn_db_pending(db, q->ci)) return MBN_WQE_OK;
  target = q->efa ? mbn_efa_db_target(db) : mbn_doorbell_index(db);
  for (;;) {
    mbn_seg s[16];
    uint32_t k, n, err;
    int32_t dst;
    mbn_wqe_op op;
    memcpy(&s[0], q->sq + mbn_seg_offset(q->ci, 0, ring), MBN_SEG);
    if (q->efa) {
      for (k = 1; k < 4; ++k) memcpy(&s[k], q->sq + mbn_seg_offset(q->ci, k, ring), MBN_SEG);
      if (!mbn_efa_ready(s, q->ci, q->bbs)) return -1;
      op = mbn_efa_parse(s);
    } else {
      if (!mbn_ctrl_ready(s[0], q->ci)) return -1;
      n = mbn_parse_ctrl(s[0]).ds;
      for (k = 1; k < n; ++k) memcpy(&s[k], q->sq + mbn_seg_offset(q->ci, k, ring), MBN_SEG);
      op = mbn_parse_wqe(s, n, q->dc);
    }
    dst = q->dc || q->efa ? op.dst : q->dst;
    err = op.err;
    if (!err && (dst < 0 || dst >= nregions)) err = MBN_WQE_BAD_DEST;
    if (!err && (q->src < 0 || q->src >= nregions)) err = MBN_WQE_BAD_LKEY;
    if (!err) err = mbn_check_access(&op, &regions[q->src], &regions[dst]);
    if (err) {
      mbn_host_cqe(q, &op, MBN_CQE_REQ_ERR, err);
      return (int)err;
    }
    if (q->dc && q->cur != dst) {
      if (q->cur >= 0) q->switches++;
      q->cur = dst;
    }
    if (op.kind == MBN_OP_WRITE) {
      uint8_t *to = (uint8_t *)(uintptr_t)op.raddr;
      if (op.inl) {
        uint32_t j;
        for (j = 0; j < op.len; ++j) to[j] = q->sq[(mbn_seg_offset(q->ci, op.inline_seg, ring) + 4u + j) & (ring - 1u)];
      } else {
        memmove(to, (const void *)(uintptr_t)op.laddr, op.len);
      }
    } else {
      uint64_t *at = (uint64_t *)(uintptr_t)op.raddr;
      uint64_t old = *at;
      *at = old + op.add;
      if (op.kind == MBN_OP_ATOMIC) memcpy((void *)(uintptr_t)op.laddr, &old, 8);
    }
    if (op.signaled) mbn_host_cqe(q, &op, MBN_CQE_REQ, 0);
    q->ci += op.bbs;
    if (executed) (*executed)++;
    if (op.wqe_idx == target) return MBN_WQE_OK;
  }
}

#endif /* !__CUDA_ARCH__ */

#endif /* MBN_EMUNIC_H */
