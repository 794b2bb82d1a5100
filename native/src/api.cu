// Library state, error reporting, device facts, the SM clock, statistics,
// and the WQE-building entry point that host tests decode.
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>

#include "common.cuh"
#include "efa.cuh"
#include "wqe.cuh"

namespace mbn {

static pthread_mutex_t g_err_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_err[1024] = "no error";
static bool g_inited = false;
static mbn_device_info g_info;

void set_error(const char *fmt, ...) {
  pthread_mutex_lock(&g_err_mu);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_err, sizeof g_err, fmt, ap);
  va_end(ap);
  pthread_mutex_unlock(&g_err_mu);
}

bool inited() { return g_inited; }
const mbn_device_info &device_info() { return g_info; }

double now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double quantile(const std::vector<double> &sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * (double)(sorted.size() - 1);
  size_t i = (size_t)pos;
  double f = pos - (double)i;
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] * (1 - f) + sorted[i + 1] * f;
}

void fill_stats(std::vector<double> cycles, std::vector<double> gt_ns, double mhz, double overhead,
                mbn_stats *out) {
  memset(out, 0, sizeof *out);
  out->n = (int32_t)cycles.size();
  out->clock_mhz = mhz;
  out->overhead_cycles = overhead;
  if (cycles.empty() || mhz <= 0) return;
  std::sort(cycles.begin(), cycles.end());
  double scale = 1000.0 / mhz;
  double sum = 0;
  for (double c : cycles) sum += c;
  out->median_cycles = quantile(cycles, 0.5);
  out->median_ns = out->median_cycles * scale;
  out->p10_ns = quantile(cycles, 0.1) * scale;
  out->p90_ns = quantile(cycles, 0.9) * scale;
  out->min_ns = cycles.front() * scale;
  out->mean_ns = sum / (double)cycles.size() * scale;
  if (!gt_ns.empty()) {
    std::sort(gt_ns.begin(), gt_ns.end());
    out->median_gt_ns = quantile(gt_ns, 0.5);
  }
}

int32_t read_samples(const DevBuf &cyc, const DevBuf &gt, const DevBuf &meta, int iters, mbn_stats *out) {
  std::vector<uint64_t> hc(iters), hg(iters);
  uint64_t hm[4];
  MBN_CUDA(cudaMemcpy(hc.data(), cyc.p, sizeof(uint64_t) * iters, cudaMemcpyDeviceToHost));
  MBN_CUDA(cudaMemcpy(hg.data(), gt.p, sizeof(uint64_t) * iters, cudaMemcpyDeviceToHost));
  MBN_CUDA(cudaMemcpy(hm, meta.p, sizeof hm, cudaMemcpyDeviceToHost));
  double ov = (double)hm[0];
  double mhz = hm[2] ? (double)hm[1] * 1000.0 / (double)hm[2] : 0;
  std::vector<double> c(iters), g(iters);
  for (int i = 0; i < iters; ++i) {
    c[i] = std::max(0.0, (double)hc[i] - ov);
    g[i] = (double)hg[i];
  }
  fill_stats(c, g, mhz, ov, out);
  return MBN_OK;
}

int32_t sync_and_check(const int *dev_flag, const char *what) {
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e != cudaSuccess) {
    set_error("%s: kernel failed: %s", what, cudaGetErrorString(e));
    return MBN_ERR_CUDA;
  }
  if (dev_flag) {
    int flag = 0;
    e = cudaMemcpy(&flag, dev_flag, sizeof flag, cudaMemcpyDeviceToHost);
    if (e != cudaSuccess) {
      set_error("%s: reading the error flag: %s", what, cudaGetErrorString(e));
      return MBN_ERR_CUDA;
    }
    if (flag == kErrTimeout) {
      set_error("%s: a GPU wait timed out after %.1f s", what, kTimeoutNs / 1e9);
      return MBN_ERR_TIMEOUT;
    }
    if (flag != 0) {
      set_error("%s: the kernel's own check failed (code %d)", what, flag);
      return MBN_ERR_CHECK;
    }
  }
  return MBN_OK;
}

void payload_pattern(uint8_t *buf, size_t cap, uint32_t len, uint32_t seed) {
  memset(buf, 0, cap);
  for (uint32_t i = 0; i < len && i < cap; ++i) buf[i] = (uint8_t)(seed * 31u + i * 7u + 1u);
}

// The kernel driver's version string: /proc first, NVML as a fallback, both
// optional so the library never needs NVML to load.
static void driver_version(char *out, size_t n) {
  snprintf(out, n, "unknown");
  FILE *f = fopen("/proc/driver/nvidia/version", "r");
  if (f) {
    // "NVRM version: NVIDIA UNIX ... Kernel Module [for x86_64]  580.159.04  ...":
    // take the first token made of digits and dots with at least one dot.
    char line[512];
    bool found = false;
    if (fgets(line, sizeof line, f)) {
      for (char *tok = strtok(line, " \t\n"); tok && !found; tok = strtok(nullptr, " \t\n")) {
        bool digits = tok[0] >= '0' && tok[0] <= '9';
        bool dot = false;
        for (const char *c = tok; *c && digits; ++c) {
          if (*c == '.') dot = true;
          else if (*c < '0' || *c > '9') digits = false;
        }
        if (digits && dot) {
          snprintf(out, n, "%s", tok);
          found = true;
        }
      }
    }
    fclose(f);
    if (found) return;
  }
  void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  typedef int (*init_fn)(void);
  typedef int (*ver_fn)(char *, unsigned);
  init_fn init = (init_fn)dlsym(h, "nvmlInit_v2");
  ver_fn ver = (ver_fn)dlsym(h, "nvmlSystemGetDriverVersion");
  init_fn shut = (init_fn)dlsym(h, "nvmlShutdown");
  if (init && ver && init() == 0) {
    char buf[96] = {0};
    if (ver(buf, sizeof buf) == 0) snprintf(out, n, "%s", buf);
    if (shut) shut();
  }
  dlclose(h);
}

__global__ void clock_kernel(uint32_t spin_ns, uint64_t *out) {
  uint64_t g0 = gtime();
  uint64_t c0 = clk();
  while (gtime() - g0 < spin_ns) {
  }
  uint64_t c1 = clk();
  uint64_t g1 = gtime();
  out[0] = c1 - c0;
  out[1] = g1 - g0;
}

struct WqeKernelArgs {
  DevQP q;
  const uint4 *src;
  uint32_t len;
  uint32_t inl;
  uint32_t start_pi;
  int32_t count;
};

template <int MODE>
__global__ void build_kernel(WqeKernelArgs a) {
  uint32_t pi = a.start_pi;
  uint32_t nbb = wqe_bbs(wqe_ds(a.len, a.inl != 0));
  for (int k = 0; k < a.count; ++k) {
    Ctrl8 c = build_write(a.q, pi, a.q.raddr + (uint64_t)k * a.len, a.src, a.len, a.inl != 0);
    pi += nbb;
    ring_db<MODE>(a.q, pi, c);
  }
}

template <int MODE>
static void launch_build(const WqeKernelArgs &a) {
  MBN_LAUNCH(build_kernel<MODE>, 1, 1, a);
}

struct EfaBuildArgs {
  EfaQP q;
  uint32_t len;
  uint32_t start_pc;
  int32_t count;
};

template <int MODE>
__global__ void efa_build_kernel(EfaBuildArgs a) {
  uint32_t pc = a.start_pc;
  for (int k = 0; k < a.count; ++k) {
    efa_build_write(a.q, pc, a.q.raddr + (uint64_t)k * a.len, a.len);
    ++pc;
    efa_ring<MODE>(a.q, pc);
  }
}

template <int MODE>
static void launch_efa_build(const EfaBuildArgs &a) {
  MBN_LAUNCH(efa_build_kernel<MODE>, 1, 1, a);
}

// build_efa is mbn_build_wqes for EFA WQEs (arguments checked by it).
static int32_t build_efa(const mbn_wqe_params *p, int32_t count, int32_t mode, int32_t target, uint8_t *sq_out,
                         size_t sq_len, uint8_t dbrec_out[4], uint8_t db_out[8]) {
  MBN_ARG(!p->use_inline, "EFA RDMA writes carry no inline data");
  MBN_ARG(p->length <= 0xffff, "EFA length %u exceeds the 16-bit descriptor field", p->length);
  MBN_ARG(mode != MBN_ORDER_FENCED_DBREC, "EFA has no doorbell record to fence");
  DevBuf sq;
  DoorbellPage db;
  MBN_CUDA(db.alloc(target));
  MBN_CUDA(sq.alloc(sq_len));
  EfaBuildArgs a;
  memset(&a, 0, sizeof a);
  a.q.db = db.ptr<uint32_t>();
  a.q.sq = sq.as<uint8_t>();
  a.q.mask = p->sq_bbs - 1;
  a.q.dest_qp = p->qpn & 0xffffu;
  a.q.ah = p->ah & 0xffffu;
  a.q.rkey = p->rkey;
  a.q.lkey = p->lkey;
  a.q.imm = p->imm;
  a.q.comp_req = p->fm_ce_se != 0 ? 1u : 0u;
  a.q.raddr = p->raddr;
  a.q.laddr = p->laddr;
  a.len = p->length;
  a.start_pc = p->start_pi;
  a.count = count;
  with_ordering(mode, [&](auto m) { launch_efa_build<decltype(m)::value>(a); });
  int32_t rc = sync_and_check(nullptr, "build_wqes");
  if (rc) return rc;
  MBN_CUDA(cudaMemcpy(sq_out, sq.p, sq_len, cudaMemcpyDeviceToHost));
  if (dbrec_out) memset(dbrec_out, 0, 4);
  if (db_out) {
    memset(db_out, 0, 8);
    MBN_CUDA(db.read(db_out, 4));
  }
  return MBN_OK;
}

}  // namespace mbn

using namespace mbn;

extern "C" int32_t mbn_abi_version(void) { return MBN_ABI_VERSION; }

extern "C" const char *mbn_last_error(void) { return g_err; }

extern "C" int32_t mbn_init(int32_t device, mbn_device_info *out) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    set_error("no CUDA device: %s", e != cudaSuccess ? cudaGetErrorString(e) : "device count is 0");
    return MBN_ERR_NO_GPU;
  }
  MBN_ARG(device >= 0 && device < n, "device %d out of range (have %d)", device, n);
  MBN_CUDA(cudaSetDevice(device));
  // Mapped pinned memory needs the flag before the context exists; an
  // already active context (UVA maps it anyway) answers with an error we
  // can ignore.
  cudaSetDeviceFlags(cudaDeviceMapHost);
  cudaGetLastError();
  MBN_CUDA(cudaFree(0));
  cudaDeviceProp p;
  MBN_CUDA(cudaGetDeviceProperties(&p, device));
  memset(&g_info, 0, sizeof g_info);
  snprintf(g_info.name, sizeof g_info.name, "%s", p.name);
  driver_version(g_info.driver, sizeof g_info.driver);
  int v = 0;
  cudaDriverGetVersion(&v);
  g_info.cuda_driver = v;
  cudaRuntimeGetVersion(&v);
  g_info.cuda_runtime = v;
  g_info.sms = p.multiProcessorCount;
  g_info.cc_major = p.major;
  g_info.cc_minor = p.minor;
  g_info.l2_bytes = p.l2CacheSize;
  g_info.mem_bytes = (int64_t)p.totalGlobalMem;
  g_info.regs_per_sm = p.regsPerMultiprocessor;
  g_info.max_threads_per_sm = p.maxThreadsPerMultiProcessor;
  g_info.can_map_host = p.canMapHostMemory;
  g_inited = true;
  if (out) *out = g_info;
  return MBN_OK;
}

extern "C" int32_t mbn_clock_mhz(int32_t spin_us, double *out) {
  MBN_REQUIRE_INIT();
  MBN_ARG(spin_us > 0 && spin_us <= 1000000, "spin_us %d out of range (1..1000000)", spin_us);
  DevBuf buf;
  MBN_CUDA(buf.alloc(2 * sizeof(uint64_t)));
  MBN_LAUNCH(clock_kernel, 1, 1, (uint32_t)spin_us * 1000u, buf.as<uint64_t>());
  int32_t rc = sync_and_check(nullptr, "clock");
  if (rc) return rc;
  uint64_t h[2];
  MBN_CUDA(cudaMemcpy(h, buf.p, sizeof h, cudaMemcpyDeviceToHost));
  if (h[1] == 0) {
    set_error("clock: globaltimer did not advance");
    return MBN_ERR_CHECK;
  }
  *out = (double)h[0] * 1000.0 / (double)h[1];
  return MBN_OK;
}

extern "C" int32_t mbn_build_wqes(const mbn_wqe_params *p, int32_t count, int32_t mode, int32_t target,
                                  const uint8_t *payload, uint8_t *sq_out, size_t sq_len, uint8_t dbrec_out[4],
                                  uint8_t db_out[8]) {
  MBN_REQUIRE_INIT();
  MBN_ARG(p != nullptr && sq_out != nullptr, "params and sq_out must be set");
  MBN_ARG(p->sq_bbs >= 1 && p->sq_bbs <= 65536 && (p->sq_bbs & (p->sq_bbs - 1)) == 0,
          "sq_bbs %u must be a power of two in 1..65536", p->sq_bbs);
  MBN_ARG(sq_len == (size_t)p->sq_bbs * 64, "sq_len %zu, want sq_bbs*64 = %u", sq_len, p->sq_bbs * 64);
  MBN_ARG(count >= 1 && count <= 65536, "count %d out of range (1..65536)", count);
  MBN_ARG(mode >= 0 && mode < MBN_ORDER_COUNT, "mode %d out of range", mode);
  MBN_ARG(target == MBN_DB_HOST || target == MBN_DB_DEVICE, "target %d out of range", target);
  MBN_ARG(p->wqe_format == MBN_WQE_MLX5 || p->wqe_format == MBN_WQE_EFA, "wqe_format %u out of range", p->wqe_format);
  if (p->wqe_format == MBN_WQE_EFA) return build_efa(p, count, mode, target, sq_out, sq_len, dbrec_out, db_out);
  MBN_ARG(!p->use_inline || (p->length <= 220 && p->length % 4 == 0 && p->length > 0),
          "inline length %u must be a positive multiple of 4, at most 220", p->length);
  MBN_ARG(!p->use_inline || payload != nullptr, "inline payload is NULL");

  DevBuf sq, dbrec, src;
  DoorbellPage db;
  MBN_CUDA(db.alloc(target));
  MBN_CUDA(sq.alloc(sq_len));
  MBN_CUDA(dbrec.alloc(64));
  MBN_CUDA(src.alloc(256));
  if (p->use_inline) MBN_CUDA(cudaMemcpy(src.p, payload, p->length, cudaMemcpyHostToDevice));
  WqeKernelArgs a;
  memset(&a, 0, sizeof a);
  a.q.sq = sq.as<uint8_t>();
  a.q.dbrec = dbrec.as<uint32_t>();
  a.q.db = db.ptr<uint64_t>();
  a.q.bb_mask = p->sq_bbs - 1;
  a.q.qpn = p->qpn & 0xffffffu;
  a.q.rkey = p->rkey;
  a.q.lkey = p->lkey;
  a.q.imm = p->imm;
  a.q.opmod = p->opmod & 0xffu;
  a.q.fm_ce_se = p->fm_ce_se & 0xffu;
  a.q.raddr = p->raddr;
  a.q.laddr = p->laddr;
  a.src = src.as<uint4>();
  a.len = p->length;
  a.inl = p->use_inline ? 1 : 0;
  a.start_pi = p->start_pi;
  a.count = count;
  with_ordering(mode, [&](auto m) { launch_build<decltype(m)::value>(a); });
  int32_t rc = sync_and_check(nullptr, "build_wqes");
  if (rc) return rc;
  MBN_CUDA(cudaMemcpy(sq_out, sq.p, sq_len, cudaMemcpyDeviceToHost));
  uint8_t rec[8];
  MBN_CUDA(cudaMemcpy(rec, dbrec.p, 8, cudaMemcpyDeviceToHost));
  if (dbrec_out) memcpy(dbrec_out, rec + 4 * MLX5_SND_DBR, 4);
  if (db_out) MBN_CUDA(db.read(db_out, 8));
  return MBN_OK;
}
