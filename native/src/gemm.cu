// mbn_gemm: an expert group's GEMM through cuBLASLt, loaded at run time,
// so that the model's compute costs are fitted to what the GPU's own
// library achieves at each per-expert token count. cuBLASLt's header comes
// with the toolkit; its library is opened here so that the rest of
// libmoebench_native needs only the driver.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "common.cuh"

#ifndef MBN_LAUNCH_ON
#define MBN_LAUNCH_ON(kernel, grid, block, stream, ...) kernel<<<(grid), (block), 0, (stream)>>>(__VA_ARGS__)
#endif

namespace mbn {
namespace {

struct Lt {
  void *h = nullptr;
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtGetVersion) version = nullptr;
  decltype(&cublasLtMatmulDescCreate) descCreate = nullptr;
  decltype(&cublasLtMatmulDescDestroy) descDestroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) descSet = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layoutCreate = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layoutDestroy = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) layoutSet = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) prefCreate = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) prefDestroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) prefSet = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  ~Lt() {
    if (h) dlclose(h);
  }
};

int32_t load(Lt &l, const char *lib, char *loaded, size_t cap) {
  const char *tries[] = {lib, "libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so",
                         "/usr/local/cuda/lib64/libcublasLt.so"};
  const char *why = "";
  for (const char *p : tries) {
    if (!p || !p[0]) continue;
    l.h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    if (l.h) {
      snprintf(loaded, cap, "%s", p);
      break;
    }
    why = dlerror();
    if (p == lib) break;  // a path asked for is the only one tried
  }
  if (!l.h) {
    set_error("cuBLASLt: cannot load %s (%s); give its path or install the CUDA toolkit's cuBLAS",
              lib && lib[0] ? lib : "libcublasLt.so.13", why ? why : "");
    return MBN_ERR_INIT;
  }
  struct {
    const char *name;
    void **fn;
  } syms[] = {
      {"cublasLtCreate", (void **)&l.create},
      {"cublasLtDestroy", (void **)&l.destroy},
      {"cublasLtGetVersion", (void **)&l.version},
      {"cublasLtMatmulDescCreate", (void **)&l.descCreate},
      {"cublasLtMatmulDescDestroy", (void **)&l.descDestroy},
      {"cublasLtMatmulDescSetAttribute", (void **)&l.descSet},
      {"cublasLtMatrixLayoutCreate", (void **)&l.layoutCreate},
      {"cublasLtMatrixLayoutDestroy", (void **)&l.layoutDestroy},
      {"cublasLtMatrixLayoutSetAttribute", (void **)&l.layoutSet},
      {"cublasLtMatmulPreferenceCreate", (void **)&l.prefCreate},
      {"cublasLtMatmulPreferenceDestroy", (void **)&l.prefDestroy},
      {"cublasLtMatmulPreferenceSetAttribute", (void **)&l.prefSet},
      {"cublasLtMatmulAlgoGetHeuristic", (void **)&l.heuristic},
      {"cublasLtMatmul", (void **)&l.matmul},
  };
  for (auto &s : syms) {
    *s.fn = dlsym(l.h, s.name);
    if (!*s.fn) {
      set_error("cuBLASLt: %s lacks %s", loaded, s.name);
      return MBN_ERR_INIT;
    }
  }
  return MBN_OK;
}

#define LT_CHECK(call)                                                    \
  do {                                                                    \
    cublasStatus_t s_ = (call);                                           \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                    \
      set_error("cuBLASLt: %s:%d: %s: status %d", __FILE__, __LINE__, #call, (int)s_); \
      return MBN_ERR_CUDA;                                                \
    }                                                                     \
  } while (0)

// The descriptors of one batched matmul, destroyed on scope exit.
struct Plan {
  const Lt *lt = nullptr;
  cublasLtHandle_t h = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulHeuristicResult_t algo;
  ~Plan() {
    if (!lt) return;
    if (pref) lt->prefDestroy(pref);
    if (d) lt->layoutDestroy(d);
    if (b) lt->layoutDestroy(b);
    if (a) lt->layoutDestroy(a);
    if (op) lt->descDestroy(op);
    if (h) lt->destroy(h);
  }
};

constexpr size_t kWorkspace = 32u << 20;

int32_t batched(const Lt &lt, cudaDataType_t in, int64_t rows, int64_t cols, int64_t ld,
                int32_t groups, int64_t stride, cublasLtMatrixLayout_t *out) {
  LT_CHECK(lt.layoutCreate(out, in, (uint64_t)rows, (uint64_t)cols, ld));
  LT_CHECK(lt.layoutSet(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &groups, sizeof groups));
  LT_CHECK(lt.layoutSet(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  return MBN_OK;
}

// plan builds out = x . w per group in cuBLASLt's column-major terms:
// D (n x tokens) = op(A) (n x k) . B (k x tokens) with A the weights
// stored k-contiguous and transposed, the layout FP8 requires (TN); the
// token count is then the GEMM's free dimension, which may be any size.
int32_t plan(const Lt &lt, Plan &p, const mbn_gemm_config &c) {
  p.lt = &lt;
  LT_CHECK(lt.create(&p.h));
  LT_CHECK(lt.descCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  int32_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  LT_CHECK(lt.descSet(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  LT_CHECK(lt.descSet(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  if (c.sm_target > 0) {
    int32_t sms = c.sm_target;
    LT_CHECK(lt.descSet(p.op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sms, sizeof sms));
  }
  cudaDataType_t in = c.dtype == MBN_GEMM_FP8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  int32_t rc;
  if ((rc = batched(lt, in, c.k, c.n, c.k, c.groups, (int64_t)c.k * c.n, &p.a)) != MBN_OK) return rc;
  if ((rc = batched(lt, in, c.k, c.tokens, c.k, c.groups, (int64_t)c.k * c.tokens, &p.b)) != MBN_OK) return rc;
  if ((rc = batched(lt, CUDA_R_16BF, c.n, c.tokens, c.n, c.groups, (int64_t)c.n * c.tokens, &p.d)) != MBN_OK)
    return rc;
  LT_CHECK(lt.prefCreate(&p.pref));
  uint64_t ws = kWorkspace;
  LT_CHECK(lt.prefSet(p.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  int found = 0;
  LT_CHECK(lt.heuristic(p.h, p.op, p.a, p.b, p.d, p.d, p.pref, 1, &p.algo, &found));
  if (found < 1) {
    set_error("cuBLASLt: no algorithm for %d x (%d x %d . %d x %d) %s", c.groups, c.tokens, c.k, c.k, c.n,
              c.dtype == MBN_GEMM_FP8 ? "FP8" : "BF16");
    return MBN_ERR_ARG;
  }
  return MBN_OK;
}

// SwiGLU over rows of [gate | up], 2n BF16 values in, n out: what runs
// between the two GEMMs of an expert.
__global__ void swiglu(const __nv_bfloat162 *in, __nv_bfloat162 *out, int64_t rows, int32_t half2s) {
  int64_t total = rows * half2s;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total; i += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = i / half2s, j = i % half2s;
    float2 g = __bfloat1622float2(in[r * 2 * half2s + j]);
    float2 u = __bfloat1622float2(in[r * 2 * half2s + half2s + j]);
    float2 o;
    o.x = g.x / (1.f + __expf(-g.x)) * u.x;
    o.y = g.y / (1.f + __expf(-g.y)) * u.y;
    out[i] = __float22bfloat162_rn(o);
  }
}

struct Bufs {
  std::vector<std::unique_ptr<DevBuf>> w;
  DevBuf x, y, ws, one;
};

int32_t alloc(const mbn_gemm_config &c, Bufs &b, int64_t &copies, double &flops, double &bytes) {
  const mbn_device_info &di = device_info();
  int64_t rows = (int64_t)c.groups * c.tokens;
  if (c.op == MBN_GEMM_ACT) {
    MBN_CUDA(b.x.alloc((size_t)rows * 2 * c.n * 2));
    MBN_CUDA(b.y.alloc((size_t)rows * c.n * 2));
    copies = 0;
    flops = 0;
    bytes = (double)rows * 3 * c.n * 2;
    return MBN_OK;
  }
  int64_t esz = c.dtype == MBN_GEMM_FP8 ? 1 : 2;
  int64_t wbytes = (int64_t)c.groups * c.k * c.n * esz;
  copies = std::max<int64_t>(1, (2 * (int64_t)di.l2_bytes + wbytes - 1) / wbytes);
  copies = std::min<int64_t>(copies, c.inner);
  for (int64_t i = 0; i < copies; ++i) {
    b.w.push_back(std::make_unique<DevBuf>());
    MBN_CUDA(b.w.back()->alloc((size_t)wbytes));
  }
  MBN_CUDA(b.x.alloc((size_t)(rows * c.k * esz)));
  MBN_CUDA(b.y.alloc((size_t)(rows * c.n * 2)));
  MBN_CUDA(b.ws.alloc(kWorkspace));
  flops = 2.0 * rows * c.k * c.n;
  bytes = (double)wbytes + rows * c.k * esz + rows * c.n * 2;
  return MBN_OK;
}

// record captures c.inner calls on s into a graph.
int32_t record(const Lt &lt, const Plan &p, const Bufs &b, const mbn_gemm_config &c, cudaStream_t s,
               cudaGraphExec_t *exec) {
  cudaGraph_t g = nullptr;
  MBN_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  float alpha = 1.f, beta = 0.f;
  for (int i = 0; i < c.inner; ++i) {
    if (c.op == MBN_GEMM_ACT) {
      int32_t h2 = c.n / 2;
      MBN_LAUNCH_ON(swiglu, 4 * device_info().sms, 256, s, b.x.as<__nv_bfloat162>(), b.y.as<__nv_bfloat162>(),
                        (int64_t)c.groups * c.tokens, h2);
      continue;
    }
    const void *w = b.w[(size_t)i % b.w.size()]->p;
    cublasStatus_t st = lt.matmul(p.h, p.op, &alpha, w, p.a, b.x.p, p.b, &beta, b.y.p, p.d, b.y.p, p.d, &p.algo.algo,
                                  b.ws.p, kWorkspace, s);
    if (st != CUBLAS_STATUS_SUCCESS) {
      cudaStreamEndCapture(s, &g);
      if (g) cudaGraphDestroy(g);
      set_error("cuBLASLt: cublasLtMatmul: status %d", (int)st);
      return MBN_ERR_CUDA;
    }
  }
  MBN_CUDA(cudaStreamEndCapture(s, &g));
  cudaError_t e = cudaGraphInstantiate(exec, g, 0);
  cudaGraphDestroy(g);
  MBN_CUDA(e);
  return MBN_OK;
}

struct Timing {
  std::vector<double> us;      // per call, one entry per graph launch
  std::vector<double> t0, t1;  // host clock around each launch, ns
};

// loop launches the graph until reps launches are timed or, when stop is
// set, until it is raised (and at least one was timed).
int32_t loop(cudaGraphExec_t exec, cudaStream_t s, const mbn_gemm_config &c, Timing &t,
             const std::atomic<bool> *stop) {
  cudaEvent_t e0, e1;
  MBN_CUDA(cudaEventCreate(&e0));
  MBN_CUDA(cudaEventCreate(&e1));
  int32_t rc = MBN_OK;
  for (int i = 0;; ++i) {
    if (stop ? (stop->load() && !t.us.empty()) : i >= c.warmup + c.reps) break;
    double h0 = now_ns();
    cudaEventRecord(e0, s);
    cudaError_t e = cudaGraphLaunch(exec, s);
    cudaEventRecord(e1, s);
    if (e == cudaSuccess) e = cudaEventSynchronize(e1);
    if (e != cudaSuccess) {
      set_error("GEMM graph launch: %s", cudaGetErrorString(e));
      rc = MBN_ERR_CUDA;
      break;
    }
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (stop || i >= c.warmup) {
      t.us.push_back(ms * 1e3 / c.inner);
      t.t0.push_back(h0);
      t.t1.push_back(now_ns());
    }
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return rc;
}

int32_t check(const mbn_gemm_config &c) {
  MBN_ARG(c.op == MBN_GEMM_MATMUL || c.op == MBN_GEMM_ACT, "op %d out of range", c.op);
  MBN_ARG(c.dtype == MBN_GEMM_FP8 || c.dtype == MBN_GEMM_BF16, "dtype %d out of range", c.dtype);
  MBN_ARG(c.groups >= 1 && c.groups <= 1024, "groups %d out of range (1..1024)", c.groups);
  MBN_ARG(c.tokens >= 1 && c.tokens <= 65536, "tokens %d out of range (1..65536)", c.tokens);
  MBN_ARG(c.n >= 16 && c.n % 16 == 0 && c.n <= 65536, "n %d must be a multiple of 16 up to 65536", c.n);
  MBN_ARG(c.op == MBN_GEMM_ACT || (c.k >= 16 && c.k % 16 == 0 && c.k <= 65536),
          "k %d must be a multiple of 16 up to 65536", c.k);
  MBN_ARG(c.sm_target >= 0 && c.sm_target <= device_info().sms, "sm_target %d out of range (0..%d)", c.sm_target,
          device_info().sms);
  MBN_ARG(c.warmup >= 0 && c.reps >= 1 && c.reps <= 10000 && c.inner >= 1 && c.inner <= 1000,
          "warmup %d / reps %d / inner %d out of range", c.warmup, c.reps, c.inner);
  MBN_ARG(!c.layer || (c.routing && c.times && c.layer_out), "a layer beside needs its routing, times and result");
  return MBN_OK;
}

void summarize(const Timing &t, mbn_gemm_result *out, int inner) {
  double sum = 0, lo = 1e300, hi = 0;
  for (double v : t.us) {
    sum += v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  out->calls = (int64_t)t.us.size() * inner;
  if (!t.us.empty()) {
    out->mean_us = sum / t.us.size();
    out->min_us = lo;
    out->max_us = hi;
  }
}

}  // namespace
}  // namespace mbn

extern "C" int32_t mbn_gemm(const mbn_gemm_config *cfg, mbn_gemm_result *out) {
  using namespace mbn;
  MBN_REQUIRE_INIT();
  MBN_ARG(cfg && out, "cfg and out must be set");
  mbn_gemm_config c = *cfg;
  if (c.inner <= 0) c.inner = 16;
  if (c.reps <= 0) c.reps = 10;
  if (c.warmup < 0) c.warmup = 0;
  int32_t rc;
  if ((rc = check(c)) != MBN_OK) return rc;
  memset(out, 0, sizeof *out);
  Lt lt;
  if (c.op == MBN_GEMM_MATMUL && (rc = load(lt, c.lib, out->lib, sizeof out->lib)) != MBN_OK) return rc;
  if (lt.version) out->version = (int32_t)lt.version();
  Plan p;
  if (c.op == MBN_GEMM_MATMUL && (rc = plan(lt, p, c)) != MBN_OK) return rc;
  Bufs b;
  if ((rc = alloc(c, b, out->wcopies, out->flops, out->bytes)) != MBN_OK) return rc;
  cudaStream_t s;
  MBN_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaGraphExec_t exec = nullptr;
  rc = record(lt, p, b, c, s, &exec);
  Timing t;
  if (rc == MBN_OK && !c.layer) {
    rc = loop(exec, s, c, t, nullptr);
  } else if (rc == MBN_OK) {
    // Warm the GEMM up alone, then keep it running until the layer is done.
    Timing warm;
    mbn_gemm_config w = c;
    w.reps = 1;
    rc = loop(exec, s, w, warm, nullptr);
    std::atomic<bool> stop{false};
    int32_t grc = MBN_OK;
    int dev = 0;
    cudaGetDevice(&dev);
    if (rc == MBN_OK) {
      std::thread th([&] {
        cudaSetDevice(dev);
        grc = loop(exec, s, c, t, &stop);
      });
      double start = now_ns();
      out->layer_rc = mbn_layer(c.layer, c.routing, c.times, c.layer_out);
      stop.store(true);
      th.join();
      rc = grc;
      // Only the launches wholly inside the layer's repetitions count:
      // its set-up ran beside GEMMs that had the GPU to themselves.
      double from = start + c.layer_out->setup_ms * 1e6, to = from + c.layer_out->run_ms * 1e6;
      Timing in;
      for (size_t i = 0; i < t.us.size(); ++i) {
        if (t.t0[i] >= from && t.t1[i] <= to) in.us.push_back(t.us[i]);
      }
      t = in;
    }
  }
  summarize(t, out, c.inner);
  if (exec) cudaGraphExecDestroy(exec);
  cudaStreamSynchronize(s);
  cudaStreamDestroy(s);
  if (rc == MBN_OK) MBN_CUDA(cudaGetLastError());
  return rc;
}
