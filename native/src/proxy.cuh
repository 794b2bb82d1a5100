// GPU -> CPU proxy rings: 16 B descriptors in pinned host memory mapped
// into the GPU, consumed by CPU worker threads of this library.
//
// Descriptor: meta (tag | seq low 32 bits) and ctrl (seq + 1). ctrl doubles
// as the validity mark: the worker expecting sequence s in a slot accepts it
// only when ctrl == s + 1, so a slot never needs clearing and a stale lap
// never passes. meta repeats the sequence so a torn 16 B write is visible.
#pragma once

#include <pthread.h>

#include <atomic>
#include <vector>

#include "common.cuh"

namespace mbn {

struct Desc {
  uint64_t meta;
  uint64_t ctrl;
};

// Per-ring control words, each on its own cache line: head is the worker's
// progress (slots freed), done its completion counter.
struct RingCtl {
  uint64_t head;
  uint64_t pad0[7];
  uint64_t done;
  uint64_t pad1[7];
};

// What a GPU producer needs (device pointers into mapped host memory).
struct GRing {
  Desc *d;
  RingCtl *ctl;
};

struct alignas(64) WorkerStats {
  int64_t consumed = 0;
  int64_t batches = 0;
  int64_t torn = 0;
  double t_first = 0;
  double t_last = 0;
};

// A set of rings and the CPU workers that poll them. Worker w serves rings
// w, w + workers, ...; for each ring it takes up to batch consecutive valid
// descriptors, builds one mlx5 WQE per descriptor in its own host send
// queue (what ibv_post_send does for a chain), writes the doorbell record
// and an 8 B doorbell word once per batch, then publishes progress and
// completion for the ring.
class ProxyHost {
 public:
  ~ProxyHost();
  int32_t setup(int rings, int entries, int workers, int batch);
  int32_t start();
  void stop();
  int64_t consumed() const;
  int64_t torn() const;
  int64_t batches() const;
  double first_ns() const;
  double last_ns() const;
  GRing dev_ring(int r) const;
  int rings() const { return rings_; }
  int entries() const { return entries_; }
  // Wait until the workers have consumed want descriptors in total.
  int32_t wait_consumed(int64_t want, double timeout_s);

 private:
  static void *worker_main(void *arg);
  void work(int id);

  int rings_ = 0, entries_ = 0, workers_ = 0, batch_ = 0;
  HostMapped mem_;
  Desc *hdesc_ = nullptr;
  RingCtl *hctl_ = nullptr;
  Desc *ddesc_ = nullptr;
  RingCtl *dctl_ = nullptr;
  std::vector<uint64_t> expected_;
  std::vector<WorkerStats> stats_;
  std::vector<pthread_t> threads_;
  std::vector<std::pair<ProxyHost *, int>> args_;
  std::atomic<int> stop_{0};
  bool running_ = false;
};

// Baseline enqueue: a device atomic reserves the slot, a load of the
// worker's progress (host memory, a PCIe read) checks for room, and a
// system-scope release store publishes the descriptor after its first half.
__device__ __forceinline__ uint64_t enq_baseline(const GRing &r, uint32_t mask, unsigned long long *tail,
                                                 uint64_t tag, int *flag) {
  uint64_t slot = atomicAdd(tail, 1ull);
  uint64_t t0 = 0;
  while (slot - ld_acquire_sys_b64(&r.ctl->head) > mask) {
    if (t0 == 0) {
      t0 = gtime();
    } else if (timed_out(t0, flag)) {
      break;
    }
  }
  Desc *d = r.d + (slot & mask);
  st_b64(&d->meta, tag | (uint32_t)slot);
  st_release_sys_b64(&d->ctrl, slot + 1);
  return slot;
}

// Tuned enqueue: the only producer of its ring keeps the tail in a register
// and a cached copy of the progress, rereading it over PCIe only when the
// ring looks full; validity rides in the descriptor, so publication is one
// posted 16 B store.
__device__ __forceinline__ uint64_t enq_tuned(const GRing &r, uint32_t mask, uint64_t &tail, uint64_t &cached,
                                              uint64_t tag, int *flag) {
  uint64_t slot = tail++;
  if (slot - cached > mask) {
    uint64_t t0 = gtime();
    do {
      cached = ld_acquire_sys_b64(&r.ctl->head);
    } while (slot - cached > mask && !timed_out(t0, flag));
  }
  st_volatile_v2_b64(r.d + (slot & mask), tag | (uint32_t)slot, slot + 1);
  return slot;
}

// Shared-ring enqueue of the enclosing-kernel experiment (many blocks per
// ring): atomic reservation, progress cached in device memory, one 16 B
// store.
__device__ __forceinline__ uint64_t enq_shared(const GRing &r, uint32_t mask, unsigned long long *tail,
                                               unsigned long long *cached, uint64_t tag, int *flag) {
  uint64_t slot = atomicAdd(tail, 1ull);
  uint64_t c = *(volatile unsigned long long *)cached;
  if (slot - c > mask) {
    uint64_t t0 = gtime();
    do {
      c = ld_acquire_sys_b64(&r.ctl->head);
    } while (slot - c > mask && !timed_out(t0, flag));
    atomicMax(cached, (unsigned long long)c);
  }
  st_volatile_v2_b64(r.d + (slot & mask), tag | (uint32_t)slot, slot + 1);
  return slot;
}

__device__ __forceinline__ bool wait_done(const GRing &r, uint64_t want, int *flag) {
  uint64_t t0 = gtime();
  while (ld_acquire_sys_b64(&r.ctl->done) < want) {
    if (timed_out(t0, flag)) return false;
  }
  return true;
}

}  // namespace mbn
