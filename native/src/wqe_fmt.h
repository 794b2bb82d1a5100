/*
 * wqe_fmt.h: the mlx5 send-queue, CQE and address-vector formats that the
 * layer's posters build (GPU warps, CPU proxy workers) and the emulated NIC
 * parses and executes. Plain C99 so that the same code compiles under
 * nvcc (host and device), g++ and cgo: the CPU tests of native/emunic run
 * exactly these functions.
 *
 * Segments are 16 B, stored as four little-endian 32-bit words holding
 * big-endian fields; WQEs are whole 64 B basic blocks in a power-of-two
 * ring; a WQE that runs past the end continues at the start, segment by
 * segment (native/wqe.go has the Go codec of the same layout).
 *
 *   ctrl   : opmod(8) wqe_idx(16) opcode(8) | qpn(24) ds(8) | sig(8) stream(16) fm_ce_se(8) | imm
 *   av     : dc_key(64) | ext(1) dct(24) | stat_rate_sl(8) fl_mlid(8) rlid(16)   (DC only, compact 16 B)
 *   raddr  : remote_addr(64) | rkey(32) | 0
 *   data   : byte_count(32) | lkey(32) | addr(64)
 *   atomic : swap_add(64) | compare(64)
 *   inline : byte_count | INLINE(32), payload..., padded to 16 B
 *
 * An RDMA write is ctrl [av] raddr (data | inline); a fetch-add is ctrl [av]
 * raddr atomic data (the data segment names where the old value lands).
 */
#ifndef MBN_WQE_FMT_H
#define MBN_WQE_FMT_H

#include <stdint.h>

#ifdef __CUDACC__
#define MBN_HD static __host__ __device__ __forceinline__
#else
#define MBN_HD static inline
#endif

#define MBN_OPCODE_RDMA_WRITE 0x08u
#define MBN_OPCODE_ATOMIC_FA 0x13u
#define MBN_INLINE_SEG 0x80000000u
#define MBN_CQ_UPDATE 0x08u  /* fm_ce_se: generate a CQE */
#define MBN_CQE_REQ 0x0u     /* CQE opcode: requester completion */
#define MBN_CQE_REQ_ERR 0xdu /* CQE opcode: requester error */
#define MBN_SEG 16u
#define MBN_BB 64u

/* Why the NIC refused a WQE (also the CQE syndrome it reports). */
#define MBN_WQE_OK 0
#define MBN_WQE_BAD_DS 1      /* ds too small or too large for the opcode */
#define MBN_WQE_BAD_OPCODE 2  /* neither an RDMA write nor a fetch-add */
#define MBN_WQE_BAD_INLINE 3  /* inline byte count does not fit ds */
#define MBN_WQE_BAD_RKEY 4    /* rkey unknown, or the remote range outside its region */
#define MBN_WQE_BAD_LKEY 5    /* lkey unknown, or the local range outside its region */
#define MBN_WQE_BAD_DEST 6    /* DC: the address vector names no rank */
#define MBN_WQE_BAD_ALIGN 7   /* an atomic's address is not 8 B aligned */

typedef struct {
  uint32_t w[4];
} mbn_seg;

MBN_HD uint32_t mbn_bswap32(uint32_t x) {
#ifdef __CUDA_ARCH__
  return __byte_perm(x, 0, 0x0123);
#else
  return __builtin_bswap32(x);
#endif
}

MBN_HD mbn_seg mbn_seg4(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  mbn_seg s;
  s.w[0] = a;
  s.w[1] = b;
  s.w[2] = c;
  s.w[3] = d;
  return s;
}

/* Big-endian field <-> stored little-endian word. */
MBN_HD uint32_t mbn_be(uint32_t x) { return mbn_bswap32(x); }
MBN_HD uint64_t mbn_be64_get(uint32_t hi_word, uint32_t lo_word) {
  return ((uint64_t)mbn_bswap32(hi_word) << 32) | mbn_bswap32(lo_word);
}

MBN_HD mbn_seg mbn_ctrl_seg(uint32_t opmod, uint32_t wqe_idx, uint32_t opcode, uint32_t qpn, uint32_t ds,
                            uint32_t fm_ce_se, uint32_t imm) {
  return mbn_seg4(mbn_be((opmod & 0xffu) << 24 | (wqe_idx & 0xffffu) << 8 | (opcode & 0xffu)),
                  mbn_be((qpn & 0xffffffu) << 8 | (ds & 0xffu)), mbn_be(fm_ce_se & 0xffu), mbn_be(imm));
}

MBN_HD mbn_seg mbn_raddr_seg(uint64_t raddr, uint32_t rkey) {
  return mbn_seg4(mbn_be((uint32_t)(raddr >> 32)), mbn_be((uint32_t)raddr), mbn_be(rkey), 0u);
}

MBN_HD mbn_seg mbn_data_seg(uint32_t len, uint32_t lkey, uint64_t laddr) {
  return mbn_seg4(mbn_be(len), mbn_be(lkey), mbn_be((uint32_t)(laddr >> 32)), mbn_be((uint32_t)laddr));
}

MBN_HD mbn_seg mbn_atomic_seg(uint64_t add, uint64_t compare) {
  return mbn_seg4(mbn_be((uint32_t)(add >> 32)), mbn_be((uint32_t)add), mbn_be((uint32_t)(compare >> 32)),
                  mbn_be((uint32_t)compare));
}

/* Compact DC address vector: the destination's DCT number and the rank it
 * lives on (as its LID). */
MBN_HD mbn_seg mbn_av_seg(uint64_t dc_key, uint32_t dct, uint32_t rlid) {
  return mbn_seg4(mbn_be((uint32_t)(dc_key >> 32)), mbn_be((uint32_t)dc_key), mbn_be(dct & 0xffffffu),
                  mbn_be(rlid & 0xffffu));
}

/* Segments and basic blocks of the WQEs the layer posts. */
MBN_HD uint32_t mbn_write_ds(uint32_t inline_len, int inl, int dc) {
  return 2u + (dc ? 1u : 0u) + (inl ? (4u + inline_len + 15u) / 16u : 1u);
}
MBN_HD uint32_t mbn_atomic_ds(int dc) { return 4u + (dc ? 1u : 0u); }
MBN_HD uint32_t mbn_bbs(uint32_t ds) { return (ds + 3u) / 4u; }

/* What a parsed ctrl segment says. */
typedef struct {
  uint32_t opmod, wqe_idx, opcode, qpn, ds, fm_ce_se, imm;
} mbn_ctrl;

MBN_HD mbn_ctrl mbn_parse_ctrl(mbn_seg c) {
  mbn_ctrl r;
  uint32_t w0 = mbn_be(c.w[0]), w1 = mbn_be(c.w[1]);
  r.opmod = w0 >> 24;
  r.wqe_idx = (w0 >> 8) & 0xffffu;
  r.opcode = w0 & 0xffu;
  r.qpn = w1 >> 8;
  r.ds = w1 & 0xffu;
  r.fm_ce_se = mbn_be(c.w[2]) & 0xffu;
  r.imm = mbn_be(c.w[3]);
  return r;
}

/* The index a doorbell announces: its 8 bytes are the ctrl segment's first
 * two words, as stored. */
MBN_HD uint32_t mbn_doorbell_index(uint64_t db) { return (mbn_be((uint32_t)db) >> 8) & 0xffffu; }

/* A WQE the NIC is to execute. */
#define MBN_OP_WRITE 1
#define MBN_OP_ATOMIC 2
#define MBN_OP_IMM 3 /* EFA: a flag as a write with immediate data, its addend in add (efa_fmt.h) */

typedef struct {
  uint32_t kind;       /* MBN_OP_* */
  uint32_t err;        /* MBN_WQE_*; kind is 0 when err != 0 */
  uint32_t wqe_idx;
  uint32_t qpn;
  uint32_t ds, bbs;
  uint32_t signaled;
  uint32_t rkey, lkey;
  uint32_t len;        /* payload bytes (8 for an atomic) */
  uint32_t inl;        /* 1: payload inline, starting 4 B into segment inline_seg */
  uint32_t inline_seg;
  uint64_t raddr, laddr;
  uint64_t add;        /* fetch-add operand */
  int32_t dst;         /* DC: the rank the address vector names; -1 for RC */
  uint32_t dct;
} mbn_wqe_op;

/* Parse a WQE from its first segments: s[0] is ctrl; n segments are
 * available (at least min(ds, 5) are needed; inline payload beyond them is
 * read by the caller). dc: the queue is a DCI (an address vector follows
 * ctrl). */
MBN_HD mbn_wqe_op mbn_parse_wqe(const mbn_seg *s, uint32_t n, int dc) {
  mbn_wqe_op op;
  mbn_ctrl c = mbn_parse_ctrl(s[0]);
  uint32_t k = 1, body;
  op.kind = 0;
  op.err = MBN_WQE_OK;
  op.wqe_idx = c.wqe_idx;
  op.qpn = c.qpn;
  op.ds = c.ds;
  op.bbs = mbn_bbs(c.ds);
  op.signaled = (c.fm_ce_se & MBN_CQ_UPDATE) ? 1u : 0u;
  op.rkey = op.lkey = op.len = op.inl = op.inline_seg = 0;
  op.raddr = op.laddr = op.add = 0;
  op.dst = -1;
  op.dct = 0;
  body = dc ? 2u : 1u; /* ctrl [av] */
  if (c.ds < body + 2u || c.ds > 16u || n < 2u) {
    op.err = MBN_WQE_BAD_DS;
    return op;
  }
  if (dc) {
    uint32_t lid = mbn_be(s[1].w[3]) & 0xffffu;
    op.dct = mbn_be(s[1].w[2]) & 0xffffffu;
    op.dst = (int32_t)lid;
    k = 2;
  }
  if (n < k + 2u) {
    op.err = MBN_WQE_BAD_DS;
    return op;
  }
  op.raddr = mbn_be64_get(s[k].w[0], s[k].w[1]);
  op.rkey = mbn_be(s[k].w[2]);
  k++;
  if (c.opcode == MBN_OPCODE_RDMA_WRITE) {
    uint32_t bc = mbn_be(s[k].w[0]);
    if (bc & MBN_INLINE_SEG) {
      uint32_t len = bc & ~MBN_INLINE_SEG;
      if (c.ds != k + (4u + len + 15u) / 16u) {
        op.err = MBN_WQE_BAD_INLINE;
        return op;
      }
      op.inl = 1;
      op.inline_seg = k;
      op.len = len;
    } else {
      if (c.ds != k + 1u) {
        op.err = MBN_WQE_BAD_DS;
        return op;
      }
      op.len = bc;
      op.lkey = mbn_be(s[k].w[1]);
      op.laddr = mbn_be64_get(s[k].w[2], s[k].w[3]);
    }
    op.kind = MBN_OP_WRITE;
    return op;
  }
  if (c.opcode == MBN_OPCODE_ATOMIC_FA) {
    if (c.ds != k + 2u || n < k + 2u) {
      op.err = MBN_WQE_BAD_DS;
      return op;
    }
    op.add = mbn_be64_get(s[k].w[0], s[k].w[1]);
    k++;
    op.len = 8;
    op.lkey = mbn_be(s[k].w[1]);
    op.laddr = mbn_be64_get(s[k].w[2], s[k].w[3]);
    if (op.raddr & 7u) {
      op.err = MBN_WQE_BAD_ALIGN;
      return op;
    }
    op.kind = MBN_OP_ATOMIC;
    return op;
  }
  op.err = MBN_WQE_BAD_OPCODE;
  return op;
}

/* A registered memory region: what a key lets the NIC touch. */
typedef struct {
  uint64_t base;
  uint64_t len;
  uint32_t key;
  int32_t rank;
} mbn_region;

/* 1 when [addr, addr+len) lies in region r under key. */
MBN_HD int mbn_region_ok(const mbn_region *r, uint32_t key, uint64_t addr, uint64_t len) {
  return r->key == key && addr >= r->base && len <= r->len && addr - r->base <= r->len - len;
}

/* Check a parsed op's keys and ranges against the source rank's region
 * (local) and the destination's (remote); returns MBN_WQE_*. */
MBN_HD uint32_t mbn_check_access(const mbn_wqe_op *op, const mbn_region *local, const mbn_region *remote) {
  if (!mbn_region_ok(remote, op->rkey, op->raddr, op->len)) return MBN_WQE_BAD_RKEY;
  if (op->kind == MBN_OP_IMM) return MBN_WQE_OK; /* nothing read locally */
  if (op->kind == MBN_OP_ATOMIC || !op->inl) {
    uint64_t l = op->kind == MBN_OP_ATOMIC ? 8u : op->len;
    if (!mbn_region_ok(local, op->lkey, op->laddr, l)) return MBN_WQE_BAD_LKEY;
  }
  return MBN_WQE_OK;
}

/* A 64 B CQE as 16 stored words: byte_cnt at byte 44, qpn at 56,
 * wqe_counter at 60, signature 62, and op_own (opcode << 4 | owner) last
 * at byte 63, which the writer stores after the rest. For an error CQE
 * the syndrome sits at byte 55. */
MBN_HD void mbn_cqe_words(uint32_t qpn, uint32_t wqe_counter, uint32_t byte_cnt, uint32_t opcode, uint32_t owner,
                          uint32_t syndrome, uint32_t out[16]) {
  int i;
  for (i = 0; i < 16; ++i) out[i] = 0;
  out[11] = mbn_be(byte_cnt);
  out[13] = mbn_be(syndrome & 0xffu); /* bytes 52..55: syndrome in byte 55 */
  out[14] = mbn_be(qpn & 0xffffffu);
  out[15] = mbn_be((wqe_counter & 0xffffu) << 16 | ((opcode & 0xfu) << 4 | (owner & 1u)));
}

#endif /* MBN_WQE_FMT_H */
