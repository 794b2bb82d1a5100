// mbn_nccl_a2a: NCCL's all-to-all, loaded at run time, as the baseline an
// EP layer is compared against. NCCL's types are declared here from its
// stable C API (nccl.h 2.x), so the library builds without NCCL's headers.
#include <dlfcn.h>
#include <stdio.h>

#include <algorithm>
#include <vector>

#include "common.cuh"

namespace mbn {
namespace {

typedef struct ncclComm *ncclComm_t;
typedef int ncclResult_t;  // ncclSuccess = 0
constexpr int kNcclUint8 = 1;  // ncclDataType_t's ncclUint8

struct Nccl {
  void *h = nullptr;
  ncclResult_t (*commInitAll)(ncclComm_t *, int, const int *) = nullptr;
  ncclResult_t (*commDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*groupStart)() = nullptr;
  ncclResult_t (*groupEnd)() = nullptr;
  ncclResult_t (*send)(const void *, size_t, int, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*recv)(void *, size_t, int, int, ncclComm_t, cudaStream_t) = nullptr;
  ncclResult_t (*getVersion)(int *) = nullptr;
  const char *(*errorString)(ncclResult_t) = nullptr;
  ~Nccl() {
    if (h) dlclose(h);
  }
  const char *why(ncclResult_t r) const { return errorString ? errorString(r) : "unknown NCCL error"; }
};

int32_t load(Nccl &n, const char *lib, char *loaded, size_t cap) {
  const char *path = lib && lib[0] ? lib : "libnccl.so.2";
  n.h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!n.h) {
    set_error("NCCL: cannot load %s (%s); give its path (--nccl-lib) or install NCCL", path, dlerror());
    return MBN_ERR_INIT;
  }
  snprintf(loaded, cap, "%s", path);
  struct {
    const char *name;
    void **fn;
  } syms[] = {
      {"ncclCommInitAll", (void **)&n.commInitAll}, {"ncclCommDestroy", (void **)&n.commDestroy},
      {"ncclGroupStart", (void **)&n.groupStart},   {"ncclGroupEnd", (void **)&n.groupEnd},
      {"ncclSend", (void **)&n.send},               {"ncclRecv", (void **)&n.recv},
      {"ncclGetVersion", (void **)&n.getVersion},   {"ncclGetErrorString", (void **)&n.errorString},
  };
  for (auto &s : syms) {
    *s.fn = dlsym(n.h, s.name);
    if (!*s.fn) {
      set_error("NCCL: %s lacks %s (NCCL 2.7 or later has it)", path, s.name);
      return MBN_ERR_INIT;
    }
  }
  return MBN_OK;
}

#define NCCL_CHECK(n, call)                                       \
  do {                                                            \
    ncclResult_t r_ = (call);                                     \
    if (r_ != 0) {                                                \
      set_error("NCCL: %s: %s", #call, (n).why(r_));              \
      return MBN_ERR_CUDA;                                        \
    }                                                             \
  } while (0)

struct Dev {
  int id = 0;
  void *send = nullptr, *recv = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t ev0 = nullptr, ev1 = nullptr;
  ncclComm_t comm = nullptr;
};

}  // namespace

static int32_t a2a(const mbn_a2a_config &c, mbn_a2a_result *out, Nccl &n, std::vector<Dev> &devs) {
  const int G = c.gpus;
  for (int d = 0; d < G; ++d) {
    Dev &v = devs[d];
    v.id = d;
    MBN_CUDA(cudaSetDevice(d));
    size_t sb = 0, rb = 0;
    for (int p = 0; p < G; ++p) {
      sb += (size_t)c.bytes[(size_t)d * G + p];
      rb += (size_t)c.bytes[(size_t)p * G + d];
    }
    MBN_CUDA(cudaMalloc(&v.send, std::max<size_t>(sb, 16)));
    MBN_CUDA(cudaMalloc(&v.recv, std::max<size_t>(rb, 16)));
    MBN_CUDA(cudaMemset(v.send, d + 1, std::max<size_t>(sb, 16)));
    MBN_CUDA(cudaStreamCreateWithFlags(&v.stream, cudaStreamNonBlocking));
    MBN_CUDA(cudaEventCreate(&v.ev0));
    MBN_CUDA(cudaEventCreate(&v.ev1));
  }
  std::vector<ncclComm_t> comms(G);
  std::vector<int> ids(G);
  for (int d = 0; d < G; ++d) ids[d] = d;
  NCCL_CHECK(n, n.commInitAll(comms.data(), G, ids.data()));
  for (int d = 0; d < G; ++d) devs[d].comm = comms[d];
  std::vector<double> times;
  for (int rep = 0; rep < c.warmup + c.reps; ++rep) {
    for (auto &v : devs) {
      MBN_CUDA(cudaSetDevice(v.id));
      MBN_CUDA(cudaEventRecord(v.ev0, v.stream));
    }
    NCCL_CHECK(n, n.groupStart());
    for (auto &v : devs) {
      size_t so = 0, ro = 0;
      for (int p = 0; p < G; ++p) {
        const size_t out_b = (size_t)c.bytes[(size_t)v.id * G + p], in_b = (size_t)c.bytes[(size_t)p * G + v.id];
        if (out_b) NCCL_CHECK(n, n.send((char *)v.send + so, out_b, kNcclUint8, p, v.comm, v.stream));
        if (in_b) NCCL_CHECK(n, n.recv((char *)v.recv + ro, in_b, kNcclUint8, p, v.comm, v.stream));
        so += out_b;
        ro += in_b;
      }
    }
    NCCL_CHECK(n, n.groupEnd());
    double worst = 0;
    for (auto &v : devs) {
      MBN_CUDA(cudaSetDevice(v.id));
      MBN_CUDA(cudaEventRecord(v.ev1, v.stream));
    }
    for (auto &v : devs) {
      MBN_CUDA(cudaSetDevice(v.id));
      MBN_CUDA(cudaEventSynchronize(v.ev1));
      float ms = 0;
      MBN_CUDA(cudaEventElapsedTime(&ms, v.ev0, v.ev1));
      worst = std::max(worst, (double)ms * 1e3);
    }
    if (rep >= c.warmup) times.push_back(worst);
  }
  double sum = 0;
  for (double t : times) sum += t;
  out->mean_us = sum / (double)times.size();
  out->min_us = *std::min_element(times.begin(), times.end());
  out->max_us = *std::max_element(times.begin(), times.end());
  int ver = 0;
  if (n.getVersion(&ver) == 0) out->version = ver;
  return MBN_OK;
}

}  // namespace mbn

using namespace mbn;

extern "C" int32_t mbn_nccl_a2a(const mbn_a2a_config *cfg, mbn_a2a_result *out) {
  MBN_REQUIRE_INIT();
  MBN_ARG(cfg && out && cfg->bytes, "cfg, cfg->bytes and out must be set");
  const mbn_a2a_config &c = *cfg;
  int ndev = 0;
  MBN_CUDA(cudaGetDeviceCount(&ndev));
  MBN_ARG(c.gpus >= 1 && c.gpus <= ndev, "gpus %d: this host has %d", c.gpus, ndev);
  MBN_ARG(c.warmup >= 0 && c.reps >= 1 && c.warmup + c.reps <= 100000, "warmup %d / reps %d out of range", c.warmup,
          c.reps);
  for (int i = 0; i < c.gpus * c.gpus; ++i) {
    MBN_ARG(c.bytes[i] >= 0 && c.bytes[i] <= (1ll << 40), "bytes[%d] = %lld out of range", i, (long long)c.bytes[i]);
  }
  memset(out, 0, sizeof *out);
  Nccl n;
  int32_t rc = load(n, c.lib, out->lib, sizeof out->lib);
  if (rc) return rc;
  std::vector<Dev> devs(c.gpus);
  rc = a2a(c, out, n, devs);
  for (auto &v : devs) {
    cudaSetDevice(v.id);
    if (v.comm) n.commDestroy(v.comm);
    if (v.ev0) cudaEventDestroy(v.ev0);
    if (v.ev1) cudaEventDestroy(v.ev1);
    if (v.stream) cudaStreamDestroy(v.stream);
    if (v.send) cudaFree(v.send);
    if (v.recv) cudaFree(v.recv);
  }
  cudaSetDevice(0);
  return rc;
}
