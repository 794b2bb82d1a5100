// Host side of the native layer: memory that follows its device, mapped
// host memory, and the CPU workers of the mini-proxy path.
#pragma once

#include <pthread.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "layer.cuh"

namespace mbn {

// Device memory owned by one device, freed there. zero=false leaves it
// uninitialized (large payload buffers every run overwrites).
struct DevMem {
  int dev = -1;
  void *p = nullptr;
  size_t n = 0;
  DevMem() = default;
  DevMem(const DevMem &) = delete;
  DevMem &operator=(const DevMem &) = delete;
  ~DevMem() {
    if (p) {
      cudaSetDevice(dev);
      cudaFree(p);
    }
  }
  cudaError_t alloc(int device, size_t bytes, bool zero = true) {
    dev = device;
    n = bytes;
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess) return e;
    e = cudaMalloc(&p, bytes);
    if (e != cudaSuccess) {
      p = nullptr;
      return e;
    }
    return zero ? cudaMemset(p, 0, bytes) : cudaSuccess;
  }
  template <class T>
  T *as() const {
    return static_cast<T *>(p);
  }
};

// Pinned host memory mapped into every device (portable): with unified
// addressing the device pointer is the host pointer.
struct HostMem {
  void *h = nullptr;
  size_t n = 0;
  HostMem() = default;
  HostMem(const HostMem &) = delete;
  HostMem &operator=(const HostMem &) = delete;
  ~HostMem() {
    if (h) cudaFreeHost(h);
  }
  cudaError_t alloc(size_t bytes) {
    n = bytes;
    cudaError_t e = cudaHostAlloc(&h, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
    if (e != cudaSuccess) {
      h = nullptr;
      return e;
    }
    memset(h, 0, bytes);
    return cudaSuccess;
  }
  template <class T>
  T *as() const {
    return static_cast<T *>(h);
  }
};

// One worker-owned queue pair: its send queue, doorbell, CQ and the
// consumer index the NIC publishes, all in mapped host memory.
struct WorkerQP {
  uint8_t *sq = nullptr;
  uint64_t *db = nullptr;
  uint32_t *dbrec = nullptr;
  uint32_t *ci = nullptr;
  uint8_t *cq = nullptr;
  uint32_t bbs = 0, pi = 0, qpn = 0;
};

// The mini-proxy's CPU side for the ranks of one device: per rank, rings
// of 32 B descriptors the GPU fills and workers that drain them. Worker w
// of a rank serves rings w, w + workers, ...; it takes up to batch
// descriptors from a ring, builds one mlx5 WQE each in its own queue to
// the destination (a chain), rings each touched queue's doorbell once,
// then publishes the ring's progress.
class LayerProxy {
 public:
  struct Setup {
    int R = 0, rank0 = 0, Rd = 0;
    int workers = 1, rings = 1, entries = 1024, batch = 1, sq_bbs = 512, cq_entries = 64, cqe_every = 64;
    int core0 = 1;  // first CPU core to pin workers to
    // Rings at or above reserved0 (when > 0) post on worker queues of their
    // own, so reserved traffic never queues in front of the layer's.
    int reserved0 = 0;
    std::vector<uint64_t> bases;  // [R] region base addresses
    std::vector<uint32_t> keys;   // [R]
    uint64_t off_fetch = 0;
    double timeout_s = 2.0;
  };
  ~LayerProxy();
  int32_t setup(const Setup &s);
  int32_t start();
  void stop();
  Desc32 *ring(int rl, int r) const { return descs_ + ((size_t)rl * s_.rings + r) * s_.entries; }
  PRingHost *ctl(int rl, int r) const { return ctls_ + (size_t)rl * s_.rings + r; }
  int classes() const { return s_.reserved0 > 0 ? 2 : 1; }
  WorkerQP &qp(int rl, int w, int dst, int cls) {
    return qps_[(((size_t)rl * s_.workers + w) * classes() + cls) * s_.R + dst];
  }
  int nqps() const { return (int)qps_.size(); }
  int64_t consumed() const;
  int64_t torn() const;
  // The first worker failure (empty when none).
  std::string failure() const;
  size_t host_bytes() const { return ringmem_.n + qpmem_.n; }

 private:
  struct alignas(64) Worker {
    LayerProxy *p = nullptr;
    int rl = 0, w = 0;
    std::atomic<int64_t> consumed{0};
    int64_t torn = 0;
    std::vector<uint64_t> expected;  // per ring it serves
  };
  static void *main(void *arg);
  void work(Worker &wk);
  void fail(const char *fmt, ...);

  Setup s_;
  HostMem ringmem_, qpmem_;
  Desc32 *descs_ = nullptr;
  PRingHost *ctls_ = nullptr;
  std::vector<WorkerQP> qps_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<pthread_t> threads_;
  std::atomic<int> stop_{0};
  std::atomic<int> failed_{0};
  char failure_[512] = {0};
  bool running_ = false;
};

}  // namespace mbn
