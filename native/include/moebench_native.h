/*
 * moebench_native.h: C ABI of libmoebench_native.so, the CUDA measurements
 * behind `moebench calibrate`.
 *
 * The library measures the GPU side of GPU-initiated RDMA submission on a
 * GPU without an RDMA NIC: it builds real mlx5 RC RDMA-write WQEs in a
 * device-memory send queue, updates the doorbell record and stores the 8 B
 * doorbell to a host-mapped pinned page (the path a UAR store takes across
 * PCIe) or to device memory, and it runs the CPU-proxy handoff against real
 * host rings polled by worker threads inside the library.
 *
 * Conventions: every function returns MBN_OK or an MBN_ERR_* code; after a
 * failure mbn_last_error() describes it. Calls are not reentrant: callers
 * serialize them (the Go wrapper holds a mutex), because the library keeps
 * one CUDA context and one error buffer. Plain C types only: fixed-width
 * integers, doubles, fixed-size char arrays.
 *
 * Bump MBN_ABI_VERSION whenever a struct layout or a signature changes; the
 * Go loader refuses a library whose mbn_abi_version() differs.
 */
#ifndef MOEBENCH_NATIVE_H
#define MOEBENCH_NATIVE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MBN_ABI_VERSION 7

/* Return codes. */
#define MBN_OK 0
#define MBN_ERR_NO_GPU 1  /* no CUDA driver or no device */
#define MBN_ERR_CUDA 2    /* a CUDA call failed */
#define MBN_ERR_ARG 3     /* an argument is out of range */
#define MBN_ERR_TIMEOUT 4 /* a GPU or CPU wait did not finish in time */
#define MBN_ERR_CHECK 5   /* a result failed its correctness check */
#define MBN_ERR_INIT 6    /* mbn_init was not called or failed */

/* Ordering before the doorbell (paper Table 4). */
#define MBN_ORDER_NONE 0         /* no ordering: unsafe control */
#define MBN_ORDER_GPU_FENCE 1    /* fence.acq_rel.gpu before the doorbell */
#define MBN_ORDER_FENCED_DBREC 2 /* fence before the dbrec and before the doorbell */
#define MBN_ORDER_RELEASE_GPU 3  /* st.release.gpu doorbell */
#define MBN_ORDER_THREADFENCE 4  /* __threadfence() before dbrec and doorbell */
#define MBN_ORDER_RELEASE_SYS 5  /* st.release.sys doorbell */
#define MBN_ORDER_FENCE_SYS 6    /* __threadfence_system() before the doorbell */
#define MBN_ORDER_NO_DOORBELL 7  /* WQE + dbrec only: isolates the doorbell store */
#define MBN_ORDER_COUNT 8

/* Where the 8 B doorbell store goes. */
/* WQE formats the issue and build entry points post. */
#define MBN_WQE_MLX5 0 /* mlx5 RC: ctrl/raddr/data segments, doorbell record and 8 B doorbell */
#define MBN_WQE_EFA 1  /* EFA SRD (DP Direct): 64 B TX WQE, 32-bit producer-counter doorbell */

#define MBN_DB_HOST 0   /* pinned host page mapped into the GPU (cudaHostAllocMapped) */
#define MBN_DB_DEVICE 1 /* device memory */

/* Publication styles of the posting-rate experiment (paper §4.3.1). */
#define MBN_STYLE_THREAD 0  /* one thread owns each QP */
#define MBN_STYLE_COOP 1    /* warp reserves 32 slots, lanes build, one lane rings */
#define MBN_STYLE_HANDOFF 2 /* per-thread slots published in reservation order */
#define MBN_STYLE_LOCK 3    /* QP lock held across each WQE and its doorbell */

/* Proxy enqueue variants (paper §4.2). */
#define MBN_ENQ_BASELINE 0 /* device atomic + host progress read + sys release */
#define MBN_ENQ_TUNED 1    /* own ring, cached progress, one 16 B store */

/* Enclosing-kernel experiment (paper §4.3.2). */
#define MBN_CALLER_COMPUTE 0
#define MBN_CALLER_STREAM 1
#define MBN_PATH_ABSENT 0
#define MBN_PATH_GDA 1
#define MBN_PATH_PROXY 2

typedef struct {
  char name[256];
  char driver[64];       /* kernel driver version, e.g. "580.159.04" */
  int32_t cuda_driver;   /* cudaDriverGetVersion, e.g. 13000 */
  int32_t cuda_runtime;  /* cudaRuntimeGetVersion */
  int32_t sms;
  int32_t cc_major;
  int32_t cc_minor;
  int32_t l2_bytes;
  int64_t mem_bytes;
  int32_t regs_per_sm;
  int32_t max_threads_per_sm;
  int32_t can_map_host;
  int32_t pad;
} mbn_device_info;

/* Per-operation timing. Samples are clock64 deltas of the issuing thread,
 * with the timer-read overhead subtracted, converted to ns at the clock the
 * same kernel measured (clock64 ticks per globaltimer ns over its run). */
typedef struct {
  int32_t n;
  int32_t pad;
  double median_ns;
  double p10_ns;
  double p90_ns;
  double mean_ns;
  double min_ns;
  double median_cycles;
  double clock_mhz;
  double overhead_cycles; /* subtracted timer-read cost */
  double median_gt_ns;    /* globaltimer median, for cross-checking (coarse) */
} mbn_stats;

typedef struct {
  int32_t mode;         /* MBN_ORDER_* */
  int32_t target;       /* MBN_DB_* */
  int32_t inline_bytes; /* >0: inline payload of that size (multiple of 4, <= 220); 0: pointer data segment of 8 B */
  int32_t iters;        /* timed operations */
  int32_t warmup;       /* discarded operations first */
  int32_t gap_ns;       /* idle time before each operation (lets posted writes drain, as a real CQE wait does) */
  int32_t wqe_format;   /* MBN_WQE_*; EFA: pointer payload only, no FENCED_DBREC (no doorbell record) */
} mbn_issue_config;

/* One WQE layout to build on the GPU, for checking against a host decoder. */
typedef struct {
  uint64_t raddr;      /* remote address of WQE 0; WQE k writes raddr + k * length */
  uint64_t laddr;      /* local address for a pointer data segment */
  uint32_t qpn;        /* 24 bits */
  uint32_t rkey;
  uint32_t lkey;
  uint32_t imm;
  uint32_t length;     /* payload bytes (inline when use_inline) */
  uint32_t use_inline; /* 1: inline segment carrying payload; 0: data segment */
  uint32_t sq_bbs;     /* send-queue size in 64 B basic blocks, power of two */
  uint32_t start_pi;   /* producer index (in basic blocks) of the first WQE */
  uint32_t opmod;      /* 8 bits */
  uint32_t fm_ce_se;   /* 8 bits; EFA: nonzero asks for a completion */
  uint32_t wqe_format; /* MBN_WQE_*; EFA: sq_bbs counts 64 B WQEs, start_pi is the producer counter,
                          qpn's low 16 bits the destination QP, length at most 65535, no inline */
  uint32_t ah;         /* EFA: address handle, 16 bits */
} mbn_wqe_params;

typedef struct {
  int32_t threads;        /* total threads */
  int32_t qps;            /* queue pairs; threads are split into equal contiguous groups per QP */
  int32_t blocks;         /* thread blocks, at most one per SM ("SMs" in Table 5) */
  int32_t per_doorbell;   /* WQEs announced by one doorbell (coop: 32) */
  int32_t style;          /* MBN_STYLE_* */
  int32_t target;         /* MBN_DB_* */
  int32_t inline_bytes;   /* payload of each WQE, inline */
  int32_t wqes_per_thread;/* 0: chosen to run about 20 ms */
} mbn_rate_config;

typedef struct {
  double mmsg_per_s;
  double elapsed_ms;
  int64_t wqes;
  int64_t doorbells;
  int32_t check_failures; /* QPs whose final doorbell record or doorbell is wrong */
  int32_t wqes_per_thread;
} mbn_rate_result;

/* Micro-operations, each the per-operation time of a dependent chain (or,
 * for stores, of back-to-back issue) in one thread. */
typedef struct {
  double clock_mhz;
  double atomic_ns;      /* device-scope atomicAdd round trip */
  double l2_load_ns;     /* dependent ld.global.cg hitting L2 */
  double store16_ns;     /* one 16 B st.global.v4, issue only */
  double handoff_ns;     /* ordered publication step between threads of a block */
  double cq_consume_ns;  /* CQE load + owner/opcode check + consumer-index store */
  double host_load_ns;   /* dependent load of host-mapped memory (PCIe read) */
  double host_store_ns;  /* 8 B store to host-mapped memory, issue only */
  double timer_overhead_cycles;
} mbn_micro_result;

typedef struct {
  int32_t variant;      /* MBN_ENQ_* */
  int32_t iters;
  int32_t warmup;
  int32_t gap_ns;
  int32_t ring_entries; /* power of two; 0: 1024 */
  int32_t pad;
} mbn_enqueue_config;

typedef struct {
  mbn_stats stats;
  int64_t consumed; /* descriptors the CPU worker took */
  int64_t torn;     /* descriptors whose halves disagreed */
} mbn_proxy_result;

typedef struct {
  int32_t workers;      /* CPU worker threads */
  int32_t batch;        /* most descriptors one worker posts per doorbell */
  int32_t rings;        /* GPU->CPU rings, one GPU producer each; 0: 32 */
  int32_t per_ring;     /* descriptors per ring; 0: chosen to run about 150 ms */
  int32_t ring_entries; /* 0: 4096 */
  int32_t pad;
} mbn_capacity_config;

typedef struct {
  double mdesc_per_s; /* descriptors consumed per second, millions */
  double elapsed_ms;
  int64_t consumed;
  int64_t batches;
  double mean_batch;
  int64_t torn;
} mbn_capacity_result;

typedef struct {
  int32_t caller;         /* MBN_CALLER_* */
  int32_t path;           /* MBN_PATH_* */
  int32_t wait;           /* 1: wait for each message's completion (proxy only) */
  int32_t msgs_per_block; /* 0 (dormant when path != absent), 1, 2, 4, 8, 16 */
  int32_t blocks;         /* 0: 528 */
  int32_t threads;        /* 0: 256 */
  int32_t reps;           /* timed launches; 0: 7 */
  int32_t pad;
} mbn_kernel_config;

typedef struct {
  int32_t regs;              /* registers per thread */
  int32_t max_blocks_per_sm; /* occupancy at the launch's block size */
  int32_t local_bytes;       /* local memory (spill) bytes per thread */
  int32_t pad;
  double median_ms;
  double min_ms;
  int64_t messages;          /* messages sent per launch */
} mbn_kernel_result;

/* ------------------------------------------------------------------ layer
 *
 * mbn_layer runs DeepEP-style low-latency dispatch and combine on the GPUs
 * of this host: ranks are spread evenly over `gpus` devices (several ranks
 * on one device are "virtual ranks", each with its own SMs and buffers).
 * Every message goes through the chosen path's real GPU-side mechanism:
 * direct stores into the peer's buffer, or WQEs (built on the GPU for
 * mini-gda and DC, by CPU worker threads for mini-proxy) that an emulated
 * NIC executes: warps on SMs reserved for it poll doorbells, read the
 * mlx5 WQEs, perform the writes and atomics and write CQEs. */

/* Paths. */
#define MBN_LPATH_DIRECT 0 /* warps store into the peer's buffer (NVLink, or the same GPU) */
#define MBN_LPATH_GDA 1    /* GPU-built WQEs on RC QPs, doorbells from the GPU */
#define MBN_LPATH_PROXY 2  /* descriptors to CPU workers, which build WQEs in host memory */
#define MBN_LPATH_DC 3     /* GPU-built WQEs on DCIs, an address vector in every WQE */
#define MBN_LPATH_EFA 4    /* GPU-built EFA SRD entries on queues every peer shares (EFA DP Direct) */

/* Modes. Low-latency: one message per (token, expert), every rank's S
 * SMs send and receive. Normal (direct path only): DeepEP's intranode
 * kernels; sms_per_rank / 2 channels, each a sender SM and a receiver SM;
 * a token goes once to every rank holding one of its experts, through a
 * ring buffer per (channel, source) at the receiver, published by a tail
 * counter every `chunk` tokens and freed by a head counter. */
#define MBN_LMODE_LL 0
#define MBN_LMODE_NORMAL 1

/* Proxy handoffs (as the model's mini-proxy). TUNED needs one producer
 * per ring; layer rings are shared by warps, so it runs as BASELINE. */
#define MBN_HANDOFF_BASELINE 0
#define MBN_HANDOFF_TUNED 1
#define MBN_HANDOFF_FIFO 2

typedef struct {
  int32_t path;          /* MBN_LPATH_* */
  int32_t ranks;         /* R, a multiple of gpus */
  int32_t gpus;          /* devices 0..gpus-1, ranks / gpus ranks on each */
  int32_t tokens;        /* T: max tokens per rank */
  int32_t hidden;
  int32_t topk;
  int32_t experts;       /* physical experts, a multiple of ranks */
  int32_t fp8;           /* 1: FP8 dispatch with one float scale per 128 channels; 0: BF16 */
  int32_t sms_per_rank;  /* S: blocks (one per SM) of each rank */
  int32_t nic_sms;       /* SMs per device reserved for the emulated NIC (0 for the direct path) */
  int32_t bg_sms;        /* SMs per device posting background writes (0: none) */
  int32_t qps_per_peer;  /* gda: RC QPs to each peer; channel c uses QP c % qps_per_peer */
  int32_t sq_bbs;        /* send-queue basic blocks, a power of two */
  int32_t ordering;      /* MBN_ORDER_* before each doorbell (not NONE or NO_DOORBELL) */
  int32_t per_doorbell;  /* ring on every n-th WQE of a QP; flushes ring at once */
  int32_t dcis;          /* dc: DCIs per rank; channel c uses DCI c % dcis (efa: SRD queues per rank, alike) */
  int32_t workers;       /* proxy: CPU worker threads per rank */
  int32_t rings;         /* proxy: descriptor rings per rank; channel c uses ring c % rings */
  int32_t batch;         /* proxy: most descriptors a worker chains per doorbell */
  int32_t handoff;       /* proxy: MBN_HANDOFF_* */
  int32_t ring_entries;  /* proxy: descriptors per ring, a power of two */
  int32_t bg_warps;      /* background posting warps per rank (0: none) */
  int32_t bg_bytes;      /* bytes per background write */
  int32_t bg_channel0;   /* first background channel: 0 shares the layer's queues */
  int32_t bg_channels;   /* background channels, used in turn */
  int32_t bg_head_us;    /* background runs this long before the layer starts */
  int32_t pace;          /* 1: the emulated NIC paces each rank to line_gbs and msg_mps */
  int32_t warmup;        /* untimed repetitions first */
  int32_t reps;          /* timed repetitions */
  int32_t flush_l2;      /* 1: overwrite the L2 before every launch, as DeepEP's bench does */
  int32_t verify;        /* 1: check every token of every repetition */
  int32_t timeout_ms;    /* any GPU or CPU wait longer than this fails the run */
  int32_t reserved_ring0;/* proxy: rings at or above it (when > 0) get worker queues of their own */
  int32_t mode;          /* MBN_LMODE_* */
  int32_t chunk;         /* normal: tokens written before the tail is published */
  int32_t buf_tokens;    /* normal: tokens per (channel, peer) ring buffer */
  int32_t pad;
  double line_gbs;       /* pacing: per-rank NIC line rate */
  double msg_mps;        /* pacing: per-rank NIC message rate */
} mbn_layer_config;

/* The routing: per rank, rows [tokens][topk] of physical expert ids (-1:
 * no selection) and weights, rows at or beyond tokens_per_rank[r] ignored;
 * expected_counts[src * experts + e] is what src sends expert e (the
 * dispatch oracle's counts). */
typedef struct {
  const int32_t *tokens_per_rank; /* [ranks] */
  const int32_t *topk_idx;        /* [ranks][tokens][topk] */
  const float *topk_weights;      /* [ranks][tokens][topk] */
  const int32_t *expected_counts; /* [ranks][experts] */
} mbn_layer_routing;

/* One rank's view of one phase in one repetition, ns from the first block
 * of its device's launch (after the background head start, if any). */
typedef struct {
  double issue_done_ns; /* the rank's last post returned */
  double send_done_ns;  /* the rank's grid sync after its sends passed */
  double wait_done_ns;  /* the rank had observed every count (dispatch) or flag (combine) */
  double ready_ns;      /* the rank's last block finished: tokens packed, or reduced */
  double kernel_ns;     /* CUDA-event time of the device's launch */
  double post_ns;       /* summed issue time of the rank's posts (clock64 of the posting lane) */
  int64_t posts;        /* operations posted (writes and atomics; local copies excluded) */
  int64_t copies;       /* messages moved by the posting warp itself (self, or the direct path) */
} mbn_rank_phase;

typedef struct {
  int32_t warp_groups;     /* G: warp groups per SM (normal: channels) */
  int32_t warps_per_group; /* 32 / G (normal: warps per peer in a channel SM) */
  int32_t workers;         /* proxy workers per rank actually run */
  int32_t nic_queues;      /* queues the emulated NIC serves */
  int64_t wqes;            /* WQEs the emulated NIC executed */
  int64_t cqes;
  int64_t nic_bytes;       /* payload bytes it moved */
  int64_t doorbells;       /* doorbells served through their index */
  int64_t torn;            /* WQE reads retried because the WQE was not yet visible */
  int64_t dci_switches;    /* DC: changes of a DCI's destination */
  int64_t descriptors;     /* proxy: descriptors the workers consumed */
  int64_t bg_posts;        /* background operations posted */
  int64_t checked;         /* (token, expert) deliveries and combined tokens verified */
  int64_t problems;        /* verification failures (problem holds the first few) */
  int64_t buffer_bytes;    /* per rank: the layer's symmetric buffer */
  int64_t queue_bytes;     /* per rank: send queues, CQs and rings */
  double clock_mhz;
  double setup_ms;
  double run_ms;
  char problem[1024];
} mbn_layer_result;

/* ------------------------------------------------------------- NCCL
 *
 * mbn_nccl_a2a times NCCL's all-to-all (grouped ncclSend/ncclRecv, one
 * communicator over devices 0..gpus-1, one rank each) with the given
 * per-peer byte counts: the baseline an EP layer is compared against.
 * NCCL is loaded at run time (lib, or libnccl.so.2 from the loader's
 * path); without it the call fails with MBN_ERR_INIT and says so. */
typedef struct {
  int32_t gpus;         /* ranks, one per device */
  int32_t warmup;       /* untimed all-to-alls first */
  int32_t reps;         /* timed all-to-alls */
  int32_t pad;
  const int64_t *bytes; /* [gpus][gpus]: bytes[src * gpus + dst] */
  const char *lib;      /* NCCL library path, or NULL for libnccl.so.2 */
} mbn_a2a_config;

typedef struct {
  double mean_us; /* per all-to-all: the slowest device's CUDA-event time, mean over reps */
  double min_us;
  double max_us;
  int32_t version; /* ncclGetVersion, e.g. 22803 */
  int32_t pad;
  char lib[256];   /* the library that was loaded */
} mbn_a2a_result;

typedef int32_t (*mbn_nccl_a2a_fn)(const mbn_a2a_config *cfg, mbn_a2a_result *out);

/* ------------------------------------------------------------- GEMM
 *
 * mbn_gemm times an expert group's GEMM through cuBLASLt, loaded at run
 * time (lib, else libcublasLt from the loader's path or the toolkit's
 * lib64): for each of groups experts, out[tokens x n] = x[tokens x k] .
 * w[k x n], all experts in one batched call, as a grouped GEMM runs them.
 * FP8 is E4M3 in, BF16 out, FP32 accumulation with one scale per tensor;
 * BF16 is BF16 throughout. Weights rotate over enough copies to cover
 * twice the L2, so each call reads them from HBM as a layer does.
 * op MBN_GEMM_ACT times the SwiGLU activation instead: rows = groups x
 * tokens of 2n BF16 values in, n out.
 *
 * With layer set, the GEMMs run back to back on a stream of their own
 * while mbn_layer runs the given layer beside them (the same arguments as
 * mbn_layer); the result then holds the GEMMs timed while the layer ran
 * and the layer's own figures land in layer_out and times. */
#define MBN_GEMM_FP8 0
#define MBN_GEMM_BF16 1
#define MBN_GEMM_MATMUL 0
#define MBN_GEMM_ACT 1

typedef struct {
  int32_t op;        /* MBN_GEMM_MATMUL or MBN_GEMM_ACT */
  int32_t dtype;     /* MBN_GEMM_FP8 or MBN_GEMM_BF16 (matmul only) */
  int32_t groups;    /* experts, one batched call */
  int32_t tokens;    /* rows per expert */
  int32_t k;         /* reduction dimension (matmul) */
  int32_t n;         /* output columns */
  int32_t sm_target; /* 0: the library's choice; else cuBLASLt's SM count target */
  int32_t warmup;    /* untimed graph launches */
  int32_t reps;      /* timed graph launches */
  int32_t inner;     /* calls per graph launch */
  const char *lib;   /* cuBLASLt path, or NULL */
  const mbn_layer_config *layer;   /* NULL: alone; else run beside this layer */
  const mbn_layer_routing *routing;
  mbn_rank_phase *times;
  mbn_layer_result *layer_out;
} mbn_gemm_config;

typedef struct {
  double mean_us;  /* per call: graph launch time / inner, mean over reps */
  double min_us;
  double max_us;
  double flops;    /* per call */
  double bytes;    /* per call: weights, activations in and out */
  int64_t calls;   /* timed calls */
  int64_t wcopies; /* weight copies rotated through */
  int32_t version; /* cublasLtGetVersion */
  int32_t layer_rc;/* mbn_layer's return code when run beside a layer */
  char lib[256];
} mbn_gemm_result;

typedef int32_t (*mbn_gemm_fn)(const mbn_gemm_config *cfg, mbn_gemm_result *out);

typedef int32_t (*mbn_device_count_fn)(int32_t *out);
typedef int32_t (*mbn_layer_fn)(const mbn_layer_config *cfg, const mbn_layer_routing *rt, mbn_rank_phase *times,
                                mbn_layer_result *out);

typedef int32_t (*mbn_abi_version_fn)(void);
typedef const char *(*mbn_last_error_fn)(void);
typedef int32_t (*mbn_init_fn)(int32_t device, mbn_device_info *out);
typedef int32_t (*mbn_clock_mhz_fn)(int32_t spin_us, double *out);
typedef int32_t (*mbn_issue_fn)(const mbn_issue_config *cfg, mbn_stats *out);
typedef int32_t (*mbn_build_wqes_fn)(const mbn_wqe_params *p, int32_t count, int32_t mode, int32_t target,
                                     const uint8_t *payload, uint8_t *sq_out, size_t sq_len,
                                     uint8_t dbrec_out[4], uint8_t db_out[8]);
typedef int32_t (*mbn_micro_fn)(int32_t iters, mbn_micro_result *out);
typedef int32_t (*mbn_rate_fn)(const mbn_rate_config *cfg, mbn_rate_result *out);
typedef int32_t (*mbn_enqueue_fn)(const mbn_enqueue_config *cfg, mbn_proxy_result *out);
typedef int32_t (*mbn_handoff_rtt_fn)(const mbn_enqueue_config *cfg, mbn_proxy_result *out);
typedef int32_t (*mbn_worker_capacity_fn)(const mbn_capacity_config *cfg, mbn_capacity_result *out);
typedef int32_t (*mbn_kernel_cost_fn)(const mbn_kernel_config *cfg, mbn_kernel_result *out);

/* ABI version the library was built with (MBN_ABI_VERSION). */
int32_t mbn_abi_version(void);
/* Description of the last failure; never NULL. */
const char *mbn_last_error(void);
/* Select the device, create its context, fill out. MBN_ERR_NO_GPU when
 * there is no driver or device. Must precede every call below. */
int32_t mbn_init(int32_t device, mbn_device_info *out);
/* Effective SM clock: clock64 ticks per globaltimer microsecond while one
 * thread spins for spin_us. */
int32_t mbn_clock_mhz(int32_t spin_us, double *out);
/* Single-thread issue time of one RDMA write (paper Table 3/4, Fig. 3). */
int32_t mbn_issue(const mbn_issue_config *cfg, mbn_stats *out);
/* Post count WQEs from one GPU thread with the given ordering and copy back
 * the send queue (sq_len = sq_bbs * 64 bytes), the SQ doorbell record and
 * the last 8 B doorbell value exactly as stored. payload holds p->length
 * bytes (inline only; may be NULL otherwise). */
int32_t mbn_build_wqes(const mbn_wqe_params *p, int32_t count, int32_t mode, int32_t target,
                       const uint8_t *payload, uint8_t *sq_out, size_t sq_len, uint8_t dbrec_out[4],
                       uint8_t db_out[8]);
int32_t mbn_micro(int32_t iters, mbn_micro_result *out);
/* Posting rate over threads x QPs x WQEs per doorbell x style (Table 5). */
int32_t mbn_rate(const mbn_rate_config *cfg, mbn_rate_result *out);
/* GPU-side proxy enqueue time with a CPU worker consuming the ring. */
int32_t mbn_enqueue(const mbn_enqueue_config *cfg, mbn_proxy_result *out);
/* GPU enqueue -> CPU worker -> completion counter in mapped host memory ->
 * GPU observes it. */
int32_t mbn_handoff_rtt(const mbn_enqueue_config *cfg, mbn_proxy_result *out);
/* Descriptors per second that CPU workers consume from GPU-fed rings. */
int32_t mbn_worker_capacity(const mbn_capacity_config *cfg, mbn_capacity_result *out);
/* Registers, occupancy and run time of a caller kernel carrying a
 * communication path (Fig. 9, Table 14). */
int32_t mbn_kernel_cost(const mbn_kernel_config *cfg, mbn_kernel_result *out);
/* Number of CUDA devices. */
int32_t mbn_device_count(int32_t *out);
/* Run the layer: warmup + reps repetitions of dispatch then combine.
 * times holds reps * 2 * ranks records, [rep][phase: 0 dispatch, 1
 * combine][rank]. A verification failure returns MBN_ERR_CHECK with the
 * first problems in out->problem (times and counts are still filled). */
int32_t mbn_layer(const mbn_layer_config *cfg, const mbn_layer_routing *rt, mbn_rank_phase *times,
                  mbn_layer_result *out);
/* NCCL's all-to-all at the given per-peer bytes (see mbn_a2a_config). */
int32_t mbn_nccl_a2a(const mbn_a2a_config *cfg, mbn_a2a_result *out);
/* An expert group's GEMM or activation through cuBLASLt (see mbn_gemm_config). */
int32_t mbn_gemm(const mbn_gemm_config *cfg, mbn_gemm_result *out);

#ifdef __cplusplus
}
#endif

#endif /* MOEBENCH_NATIVE_H */
