// Shared helpers of libmoebench_native: error reporting, RAII buffers,
// timers and the PTX memory operations whose exact form the measurements
// depend on (each written as inline asm so the compiler can neither merge,
// hoist nor weaken them).
#pragma once

#include <cuda_runtime.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <type_traits>
#include <vector>

#include "moebench_native.h"

// Kernel launches go through this macro so the host code also parses as
// plain C++ (see Makefile target `check-syntax`).
#ifndef MBN_LAUNCH
#define MBN_LAUNCH(kernel, grid, block, ...) kernel<<<(grid), (block)>>>(__VA_ARGS__)
#endif

namespace mbn {

void set_error(const char *fmt, ...);
bool inited();
const mbn_device_info &device_info();

// How long any GPU or CPU wait may spin before the experiment gives up:
// a wait that never ends would otherwise hang the calling process.
constexpr uint64_t kTimeoutNs = 2000000000ull;

// Error flag values written by kernels.
constexpr int kErrTimeout = 1;
constexpr int kErrCheck = 2;

}  // namespace mbn

#define MBN_CUDA(call)                                                                              \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      mbn::set_error("%s:%d: %s: %s", __FILE__, __LINE__, #call, cudaGetErrorString(e_));          \
      return MBN_ERR_CUDA;                                                                          \
    }                                                                                               \
  } while (0)

#define MBN_REQUIRE_INIT()                                     \
  do {                                                         \
    if (!mbn::inited()) {                                      \
      mbn::set_error("mbn_init was not called or failed");    \
      return MBN_ERR_INIT;                                     \
    }                                                          \
  } while (0)

#define MBN_ARG(cond, ...)             \
  do {                                 \
    if (!(cond)) {                     \
      mbn::set_error(__VA_ARGS__);     \
      return MBN_ERR_ARG;              \
    }                                  \
  } while (0)

namespace mbn {

// Device memory, zeroed, freed on scope exit.
struct DevBuf {
  void *p = nullptr;
  size_t n = 0;
  DevBuf() = default;
  DevBuf(const DevBuf &) = delete;
  DevBuf &operator=(const DevBuf &) = delete;
  ~DevBuf() {
    if (p) cudaFree(p);
  }
  cudaError_t alloc(size_t bytes) {
    n = bytes;
    cudaError_t e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
      p = nullptr;
      return e;
    }
    return cudaMemset(p, 0, bytes);
  }
  template <class T>
  T *as() const {
    return static_cast<T *>(p);
  }
};

// Pinned host memory mapped into the GPU's address space, zeroed: h is the
// host pointer, d the device pointer to the same bytes.
struct HostMapped {
  void *h = nullptr;
  void *d = nullptr;
  size_t n = 0;
  HostMapped() = default;
  HostMapped(const HostMapped &) = delete;
  HostMapped &operator=(const HostMapped &) = delete;
  ~HostMapped() {
    if (h) cudaFreeHost(h);
  }
  cudaError_t alloc(size_t bytes) {
    n = bytes;
    cudaError_t e = cudaHostAlloc(&h, bytes, cudaHostAllocMapped);
    if (e != cudaSuccess) {
      h = nullptr;
      return e;
    }
    memset(h, 0, bytes);
    return cudaHostGetDevicePointer(&d, h, 0);
  }
  template <class T>
  T *hp() const {
    return static_cast<T *>(h);
  }
  template <class T>
  T *dp() const {
    return static_cast<T *>(d);
  }
};

// A doorbell target (MBN_DB_*): a pinned host page mapped into the GPU, as
// a NIC's doorbell page would be, or device memory.
struct DoorbellPage {
  DevBuf dev;
  HostMapped host;
  int target = MBN_DB_HOST;
  cudaError_t alloc(int t) {
    target = t;
    return t == MBN_DB_HOST ? host.alloc(4096) : dev.alloc(64);
  }
  template <class T>
  T *ptr() const {
    return target == MBN_DB_HOST ? host.dp<T>() : dev.as<T>();
  }
  // read copies the first n bytes (at most 64) of what the GPU stored.
  cudaError_t read(void *out, size_t n) const {
    if (target == MBN_DB_HOST) {
      memcpy(out, host.h, n);
      return cudaSuccess;
    }
    return cudaMemcpy(out, dev.p, n, cudaMemcpyDeviceToHost);
  }
};

// with_ordering calls f with mode (MBN_ORDER_*; anything else is
// NO_DOORBELL) as a compile-time std::integral_constant, so that one
// switch serves every kernel templated on the ordering.
template <class F>
void with_ordering(int mode, F &&f) {
  switch (mode) {
    case MBN_ORDER_NONE: f(std::integral_constant<int, MBN_ORDER_NONE>{}); break;
    case MBN_ORDER_GPU_FENCE: f(std::integral_constant<int, MBN_ORDER_GPU_FENCE>{}); break;
    case MBN_ORDER_FENCED_DBREC: f(std::integral_constant<int, MBN_ORDER_FENCED_DBREC>{}); break;
    case MBN_ORDER_RELEASE_GPU: f(std::integral_constant<int, MBN_ORDER_RELEASE_GPU>{}); break;
    case MBN_ORDER_THREADFENCE: f(std::integral_constant<int, MBN_ORDER_THREADFENCE>{}); break;
    case MBN_ORDER_RELEASE_SYS: f(std::integral_constant<int, MBN_ORDER_RELEASE_SYS>{}); break;
    case MBN_ORDER_FENCE_SYS: f(std::integral_constant<int, MBN_ORDER_FENCE_SYS>{}); break;
    default: f(std::integral_constant<int, MBN_ORDER_NO_DOORBELL>{}); break;
  }
}

// Summarize per-operation samples (cycles after overhead subtraction).
void fill_stats(std::vector<double> cycles, std::vector<double> gt_ns, double mhz, double overhead,
                mbn_stats *out);

// Read a timing kernel's per-operation samples back (clock64 deltas in
// cyc, globaltimer deltas in gt, and meta: timer overhead, clock ticks and
// globaltimer ns of the clock measurement) and summarize them into out.
int32_t read_samples(const DevBuf &cyc, const DevBuf &gt, const DevBuf &meta, int iters, mbn_stats *out);

// Wait for the device and turn a kernel's error flag into a return code.
int32_t sync_and_check(const int *dev_flag, const char *what);

double now_ns();

}  // namespace mbn

// ---------------------------------------------------------------- device

namespace mbn {

__device__ __forceinline__ uint64_t clk() {
  uint64_t r;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(r)::"memory");
  return r;
}

__device__ __forceinline__ uint64_t gtime() {
  uint64_t r;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(r)::"memory");
  return r;
}

__device__ __forceinline__ uint32_t bswap32(uint32_t x) { return __byte_perm(x, 0, 0x0123); }

__device__ __forceinline__ void st_v4(void *p, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(a), "r"(b), "r"(c), "r"(d)
               : "memory");
}

__device__ __forceinline__ void st_b32(void *p, uint32_t v) {
  asm volatile("st.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ void st_b64(void *p, uint64_t v) {
  asm volatile("st.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// The doorbell store of the unordered and fence-ordered modes: a relaxed
// system-scope MMIO store, the form DOCA uses for the UAR.
__device__ __forceinline__ void st_mmio_b64(void *p, uint64_t v) {
#ifdef MBN_NO_ST_MMIO
  asm volatile("st.relaxed.sys.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#else
  asm volatile("st.mmio.relaxed.sys.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
#endif
}

__device__ __forceinline__ void st_release_gpu_b64(void *p, uint64_t v) {
  asm volatile("st.release.gpu.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void st_release_sys_b64(void *p, uint64_t v) {
  asm volatile("st.release.sys.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

// One 16 B store that reaches host memory as a single posted write.
__device__ __forceinline__ void st_volatile_v2_b64(void *p, uint64_t a, uint64_t b) {
  asm volatile("st.volatile.global.v2.b64 [%0], {%1, %2};" ::"l"(p), "l"(a), "l"(b) : "memory");
}

__device__ __forceinline__ void st_volatile_b64(void *p, uint64_t v) {
  asm volatile("st.volatile.global.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ uint4 ld_v4(const void *p) {
  uint4 r;
  asm volatile("ld.global.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p)
               : "memory");
  return r;
}

__device__ __forceinline__ uint4 ld_cg_v4(const void *p) {
  uint4 r;
  asm volatile("ld.global.cg.v4.b32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p)
               : "memory");
  return r;
}

__device__ __forceinline__ uint32_t ld_cg_b32(const void *p) {
  uint32_t r;
  asm volatile("ld.global.cg.b32 %0, [%1];" : "=r"(r) : "l"(p) : "memory");
  return r;
}

__device__ __forceinline__ uint64_t ld_acquire_sys_b64(const void *p) {
  uint64_t r;
  asm volatile("ld.acquire.sys.global.b64 %0, [%1];" : "=l"(r) : "l"(p) : "memory");
  return r;
}

__device__ __forceinline__ uint64_t ld_acquire_gpu_b64(const void *p) {
  uint64_t r;
  asm volatile("ld.acquire.gpu.global.b64 %0, [%1];" : "=l"(r) : "l"(p) : "memory");
  return r;
}

__device__ __forceinline__ uint64_t ld_volatile_b64(const void *p) {
  uint64_t r;
  asm volatile("ld.volatile.global.b64 %0, [%1];" : "=l"(r) : "l"(p) : "memory");
  return r;
}

__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
__device__ __forceinline__ void fence_sc_gpu() { asm volatile("fence.sc.gpu;" ::: "memory"); }
__device__ __forceinline__ void fence_sc_sys() { asm volatile("fence.sc.sys;" ::: "memory"); }

// Spin until globaltimer has advanced by ns.
__device__ __forceinline__ void spin_ns(uint32_t ns) {
  uint64_t t = gtime();
  while (gtime() - t < ns) {
  }
}

// Bounded-wait bookkeeping: returns true (and raises the flag) once the
// wait that started at t0 has lasted too long.
__device__ __forceinline__ bool timed_out(uint64_t t0, int *flag) {
  if (gtime() - t0 > kTimeoutNs) {
    atomicExch(flag, kErrTimeout);
    return true;
  }
  return false;
}

}  // namespace mbn
