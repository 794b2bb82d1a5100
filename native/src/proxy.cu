// CPU-proxy handoff (paper §4.2): GPU enqueue cost (baseline and tuned),
// the GPU -> CPU -> GPU round trip, and what CPU workers can consume.
#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include "proxy.cuh"

namespace mbn {

// ------------------------------------------------------------- host side

ProxyHost::~ProxyHost() { stop(); }

int32_t ProxyHost::setup(int rings, int entries, int workers, int batch) {
  MBN_ARG(rings >= 1 && rings <= 1024, "rings %d out of range (1..1024)", rings);
  MBN_ARG(entries >= 2 && entries <= (1 << 20) && (entries & (entries - 1)) == 0,
          "ring entries %d must be a power of two in 2..2^20", entries);
  MBN_ARG(workers >= 1 && workers <= 64 && workers <= rings, "workers %d must be 1..64 and at most rings %d",
          workers, rings);
  MBN_ARG(batch >= 1 && batch <= 256, "batch %d out of range (1..256)", batch);
  rings_ = rings;
  entries_ = entries;
  workers_ = workers;
  batch_ = batch;
  size_t desc_bytes = (size_t)rings * entries * sizeof(Desc);
  MBN_CUDA(mem_.alloc(desc_bytes + (size_t)rings * sizeof(RingCtl)));
  hdesc_ = mem_.hp<Desc>();
  ddesc_ = mem_.dp<Desc>();
  hctl_ = reinterpret_cast<RingCtl *>(mem_.hp<uint8_t>() + desc_bytes);
  dctl_ = reinterpret_cast<RingCtl *>(mem_.dp<uint8_t>() + desc_bytes);
  expected_.assign(rings, 0);
  stats_.assign(workers, WorkerStats());
  return MBN_OK;
}

GRing ProxyHost::dev_ring(int r) const {
  GRing g;
  g.d = ddesc_ + (size_t)r * entries_;
  g.ctl = dctl_ + r;
  return g;
}

void *ProxyHost::worker_main(void *arg) {
  auto *p = static_cast<std::pair<ProxyHost *, int> *>(arg);
  p->first->work(p->second);
  return nullptr;
}

int32_t ProxyHost::start() {
  stop_.store(0);
  threads_.assign(workers_, pthread_t());
  args_.clear();
  for (int w = 0; w < workers_; ++w) args_.push_back({this, w});
  for (int w = 0; w < workers_; ++w) {
    if (pthread_create(&threads_[w], nullptr, worker_main, &args_[w]) != 0) {
      stop_.store(1);
      for (int k = 0; k < w; ++k) pthread_join(threads_[k], nullptr);
      set_error("proxy: starting worker %d failed", w);
      return MBN_ERR_CUDA;
    }
  }
  running_ = true;
  return MBN_OK;
}

void ProxyHost::stop() {
  if (!running_) return;
  stop_.store(1);
  for (auto &t : threads_) pthread_join(t, nullptr);
  running_ = false;
}

int64_t ProxyHost::consumed() const {
  int64_t n = 0;
  for (auto &s : stats_) n += __atomic_load_n(&s.consumed, __ATOMIC_RELAXED);
  return n;
}
int64_t ProxyHost::torn() const {
  int64_t n = 0;
  for (auto &s : stats_) n += s.torn;
  return n;
}
int64_t ProxyHost::batches() const {
  int64_t n = 0;
  for (auto &s : stats_) n += s.batches;
  return n;
}
double ProxyHost::first_ns() const {
  double t = 0;
  for (auto &s : stats_)
    if (s.t_first > 0 && (t == 0 || s.t_first < t)) t = s.t_first;
  return t;
}
double ProxyHost::last_ns() const {
  double t = 0;
  for (auto &s : stats_) t = std::max(t, s.t_last);
  return t;
}

int32_t ProxyHost::wait_consumed(int64_t want, double timeout_s) {
  double t0 = now_ns();
  while (consumed() < want) {
    if (now_ns() - t0 > timeout_s * 1e9) {
      set_error("proxy: workers consumed %lld of %lld descriptors in %.1f s", (long long)consumed(),
                (long long)want, timeout_s);
      return MBN_ERR_TIMEOUT;
    }
    usleep(50);
  }
  return MBN_OK;
}

static inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

void ProxyHost::work(int id) {
  // Pin each worker to its own core, away from core 0 where the launching
  // thread usually runs; a dedicated core is what the tuned proxy assumes.
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (ncpu > 1) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)((1 + id) % ncpu), &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
  WorkerStats &st = stats_[id];
  // The worker's own send queue, doorbell record and doorbell word: the
  // host-side half of posting (no NIC consumes them here).
  const uint32_t sq_bbs = 1024;
  std::vector<uint8_t> sq(sq_bbs * 64);
  uint32_t pi = 0;
  volatile uint32_t dbrec = 0;
  volatile uint64_t doorbell = 0;
  const uint32_t qpn = 0x200u + (uint32_t)id;
  const uint64_t mask = (uint64_t)entries_ - 1;
  while (!stop_.load(std::memory_order_relaxed)) {
    bool any = false;
    for (int r = id; r < rings_; r += workers_) {
      uint64_t s = expected_[r];
      Desc *ring = hdesc_ + (size_t)r * entries_;
      int n = 0;
      uint64_t ctrl8 = 0;
      while (n < batch_) {
        Desc *d = ring + ((s + n) & mask);
        uint64_t ctrl = __atomic_load_n(&d->ctrl, __ATOMIC_ACQUIRE);
        if (ctrl != s + n + 1) break;
        uint64_t meta = __atomic_load_n(&d->meta, __ATOMIC_ACQUIRE);
        if ((uint32_t)meta != (uint32_t)(s + n)) {
          // The validity half arrived before the other half: count it and
          // wait for the rest of the write.
          ++st.torn;
          for (int k = 0; k < 100000 && (uint32_t)meta != (uint32_t)(s + n); ++k) {
            cpu_relax();
            meta = __atomic_load_n(&d->meta, __ATOMIC_ACQUIRE);
          }
        }
        // mlx5 RDMA write with the descriptor's 8 B inline, big-endian.
        uint8_t *w = sq.data() + (size_t)(pi & (sq_bbs - 1)) * 64;
        uint32_t c[4] = {__builtin_bswap32((pi & 0xffffu) << 8 | 0x08u), __builtin_bswap32(qpn << 8 | 3u),
                         0x08u << 24, 0};
        uint64_t raddr = 0x7f0000000000ull + ((meta >> 32) << 12);
        uint32_t ra[4] = {__builtin_bswap32((uint32_t)(raddr >> 32)), __builtin_bswap32((uint32_t)raddr),
                          __builtin_bswap32(0x1000u), 0};
        uint32_t il[4] = {__builtin_bswap32(8u | 0x80000000u), (uint32_t)meta, (uint32_t)(meta >> 32), 0};
        memcpy(w, c, 16);
        memcpy(w + 16, ra, 16);
        memcpy(w + 32, il, 16);
        ctrl8 = (uint64_t)c[1] << 32 | c[0];
        ++pi;
        ++n;
      }
      if (n > 0) {
        std::atomic_thread_fence(std::memory_order_release);
        dbrec = __builtin_bswap32(pi & 0xffffu);
        std::atomic_thread_fence(std::memory_order_release);
        doorbell = ctrl8;
        expected_[r] = s + n;
        __atomic_store_n(&hctl_[r].head, s + n, __ATOMIC_RELEASE);
        __atomic_store_n(&hctl_[r].done, s + n, __ATOMIC_RELEASE);
        double t = now_ns();
        if (st.t_first == 0) st.t_first = t;
        st.t_last = t;
        __atomic_store_n(&st.consumed, st.consumed + n, __ATOMIC_RELAXED);
        ++st.batches;
        any = true;
      }
    }
    if (!any) cpu_relax();
  }
  (void)dbrec;
  (void)doorbell;
}

// ------------------------------------------------------------ device side

struct EnqArgs {
  GRing r;
  uint32_t mask;
  int32_t total;
  int32_t warm;
  uint32_t gap_ns;
  unsigned long long *tail;  // baseline: device-memory reservation counter
  uint64_t *cyc;
  uint64_t *gt;
  uint64_t *meta;  // [0] overhead, [1] ticks, [2] ns
  int *flag;
};

template <int VARIANT, bool RTT>
__global__ void enqueue_kernel(EnqArgs a) {
  uint64_t ov = ~0ull;
  for (int i = 0; i < 64; ++i) {
    uint64_t x = clk();
    uint64_t y = clk();
    if (y - x < ov) ov = y - x;
  }
  uint64_t tail = 0, cached = 0;
  uint64_t gs = gtime();
  uint64_t cs = clk();
  for (int it = 0; it < a.total; ++it) {
    spin_ns(a.gap_ns);
    uint64_t g0 = gtime();
    uint64_t c0 = clk();
    uint64_t slot;
    if (VARIANT == MBN_ENQ_BASELINE) {
      slot = enq_baseline(a.r, a.mask, a.tail, 1ull << 32, a.flag);
    } else {
      slot = enq_tuned(a.r, a.mask, tail, cached, 1ull << 32, a.flag);
    }
    if (RTT) wait_done(a.r, slot + 1, a.flag);
    uint64_t c1 = clk();
    uint64_t g1 = gtime();
    if (it >= a.warm) {
      a.cyc[it - a.warm] = c1 - c0;
      a.gt[it - a.warm] = g1 - g0;
    }
    if (*(volatile int *)a.flag) break;
  }
  a.meta[0] = ov;
  a.meta[1] = clk() - cs;
  a.meta[2] = gtime() - gs;
}

struct CapArgs {
  GRing *rings;
  uint32_t mask;
  int32_t per_ring;
  int *flag;
};

__global__ void capacity_kernel(CapArgs a) {
  GRing r = a.rings[blockIdx.x];
  uint64_t tail = 0, cached = 0;
  uint64_t tag = (uint64_t)blockIdx.x << 32;
  for (int i = 0; i < a.per_ring; ++i) {
    enq_tuned(r, a.mask, tail, cached, tag, a.flag);
    if ((i & 1023) == 0 && *(volatile int *)a.flag) break;
  }
}

static int32_t run_enqueue(const mbn_enqueue_config *cfg, mbn_proxy_result *out, bool rtt) {
  MBN_REQUIRE_INIT();
  MBN_ARG(cfg && out, "cfg and out must be set");
  MBN_ARG(cfg->variant == MBN_ENQ_BASELINE || cfg->variant == MBN_ENQ_TUNED, "variant %d out of range",
          cfg->variant);
  MBN_ARG(cfg->iters > 0 && cfg->warmup >= 0 && cfg->iters + cfg->warmup <= 1000000, "iters out of range");
  MBN_ARG(cfg->gap_ns >= 0 && cfg->gap_ns <= 1000000, "gap_ns %d out of range", cfg->gap_ns);
  int entries = cfg->ring_entries > 0 ? cfg->ring_entries : 1024;
  ProxyHost px;
  int32_t rc = px.setup(1, entries, 1, 1);
  if (rc) return rc;
  DevBuf tail, cyc, gt, meta, flag;
  MBN_CUDA(tail.alloc(64));
  MBN_CUDA(cyc.alloc(sizeof(uint64_t) * cfg->iters));
  MBN_CUDA(gt.alloc(sizeof(uint64_t) * cfg->iters));
  MBN_CUDA(meta.alloc(sizeof(uint64_t) * 4));
  MBN_CUDA(flag.alloc(sizeof(int)));
  EnqArgs a;
  a.r = px.dev_ring(0);
  a.mask = (uint32_t)(entries - 1);
  a.total = cfg->iters + cfg->warmup;
  a.warm = cfg->warmup;
  a.gap_ns = (uint32_t)cfg->gap_ns;
  a.tail = tail.as<unsigned long long>();
  a.cyc = cyc.as<uint64_t>();
  a.gt = gt.as<uint64_t>();
  a.meta = meta.as<uint64_t>();
  a.flag = flag.as<int>();
  rc = px.start();
  if (rc) return rc;
  void (*kern)(EnqArgs);
  if (cfg->variant == MBN_ENQ_BASELINE) {
    kern = rtt ? enqueue_kernel<MBN_ENQ_BASELINE, true> : enqueue_kernel<MBN_ENQ_BASELINE, false>;
  } else {
    kern = rtt ? enqueue_kernel<MBN_ENQ_TUNED, true> : enqueue_kernel<MBN_ENQ_TUNED, false>;
  }
  MBN_LAUNCH(kern, 1, 1, a);
  rc = sync_and_check(flag.as<int>(), rtt ? "handoff_rtt" : "enqueue");
  if (rc == MBN_OK) rc = px.wait_consumed(a.total, 5.0);
  px.stop();
  if (rc) return rc;
  memset(out, 0, sizeof *out);
  rc = read_samples(cyc, gt, meta, cfg->iters, &out->stats);
  if (rc) return rc;
  out->consumed = px.consumed();
  out->torn = px.torn();
  return MBN_OK;
}

}  // namespace mbn

using namespace mbn;

extern "C" int32_t mbn_enqueue(const mbn_enqueue_config *cfg, mbn_proxy_result *out) {
  return run_enqueue(cfg, out, false);
}

extern "C" int32_t mbn_handoff_rtt(const mbn_enqueue_config *cfg, mbn_proxy_result *out) {
  return run_enqueue(cfg, out, true);
}

static int32_t capacity_once(const mbn_capacity_config &c, int per_ring, mbn_capacity_result *out) {
  ProxyHost px;
  int32_t rc = px.setup(c.rings, c.ring_entries, c.workers, c.batch);
  if (rc) return rc;
  DevBuf rings, flag;
  MBN_CUDA(rings.alloc(sizeof(GRing) * c.rings));
  MBN_CUDA(flag.alloc(sizeof(int)));
  std::vector<GRing> hr(c.rings);
  for (int i = 0; i < c.rings; ++i) hr[i] = px.dev_ring(i);
  MBN_CUDA(cudaMemcpy(rings.p, hr.data(), sizeof(GRing) * c.rings, cudaMemcpyHostToDevice));
  CapArgs a;
  a.rings = rings.as<GRing>();
  a.mask = (uint32_t)(c.ring_entries - 1);
  a.per_ring = per_ring;
  a.flag = flag.as<int>();
  rc = px.start();
  if (rc) return rc;
  MBN_LAUNCH(capacity_kernel, c.rings, 1, a);
  rc = sync_and_check(flag.as<int>(), "worker_capacity");
  int64_t want = (int64_t)c.rings * per_ring;
  if (rc == MBN_OK) rc = px.wait_consumed(want, 20.0);
  px.stop();
  if (rc) return rc;
  double el = px.last_ns() - px.first_ns();
  memset(out, 0, sizeof *out);
  out->consumed = px.consumed();
  out->batches = px.batches();
  out->torn = px.torn();
  out->elapsed_ms = el / 1e6;
  out->mdesc_per_s = el > 0 ? (double)out->consumed / el * 1e3 : 0;
  out->mean_batch = out->batches ? (double)out->consumed / (double)out->batches : 0;
  return MBN_OK;
}

extern "C" int32_t mbn_worker_capacity(const mbn_capacity_config *cfg, mbn_capacity_result *out) {
  MBN_REQUIRE_INIT();
  MBN_ARG(cfg && out, "cfg and out must be set");
  mbn_capacity_config c = *cfg;
  if (c.rings <= 0) c.rings = 32;
  if (c.ring_entries <= 0) c.ring_entries = 4096;
  MBN_ARG(c.rings <= device_info().sms * 16, "rings %d: too many producer blocks", c.rings);
  int per_ring = c.per_ring;
  if (per_ring <= 0) {
    mbn_capacity_result pilot;
    int32_t rc = capacity_once(c, 8192, &pilot);
    if (rc) return rc;
    double rate = pilot.mdesc_per_s * 1e6;  // desc/s
    per_ring = (int)(rate * 0.15 / c.rings);
    per_ring = std::max(8192, std::min(per_ring, 4 << 20));
  }
  return capacity_once(c, per_ring, out);
}
