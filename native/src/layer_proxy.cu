// The mini-proxy's CPU workers of the native layer.
#include <sched.h>
#include <stdarg.h>
#include <unistd.h>

#include "layer_host.h"

namespace mbn {

static inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

LayerProxy::~LayerProxy() { stop(); }

int32_t LayerProxy::setup(const Setup &s) {
  MBN_ARG(s.workers >= 1 && s.workers <= 64, "proxy: workers %d out of range (1..64)", s.workers);
  MBN_ARG(s.rings >= s.workers && s.rings <= 4096, "proxy: rings %d must be at least workers %d and at most 4096",
          s.rings, s.workers);
  MBN_ARG(s.entries >= 2 && (s.entries & (s.entries - 1)) == 0, "proxy: ring entries %d must be a power of two",
          s.entries);
  MBN_ARG(s.batch >= 1 && s.batch <= s.sq_bbs / 2, "proxy: batch %d out of range (1..%d)", s.batch, s.sq_bbs / 2);
  MBN_ARG(s.sq_bbs >= 2 && (s.sq_bbs & (s.sq_bbs - 1)) == 0, "proxy: sq_bbs %d must be a power of two", s.sq_bbs);
  s_ = s;
  const size_t nr = (size_t)s.Rd * s.rings;
  const size_t desc_bytes = nr * s.entries * sizeof(Desc32);
  MBN_CUDA(ringmem_.alloc(desc_bytes + nr * sizeof(PRingHost)));
  descs_ = ringmem_.as<Desc32>();
  ctls_ = reinterpret_cast<PRingHost *>(ringmem_.as<uint8_t>() + desc_bytes);
  const size_t nq = (size_t)s.Rd * s.workers * (s.reserved0 > 0 ? 2 : 1) * s.R;
  const size_t per = (size_t)s.sq_bbs * 64 + (size_t)s.cq_entries * 64 + 64;  // sq, cq, db|dbrec|ci line
  MBN_CUDA(qpmem_.alloc(nq * per));
  qps_.resize(nq);
  for (size_t i = 0; i < nq; ++i) {
    uint8_t *b = qpmem_.as<uint8_t>() + i * per;
    WorkerQP &q = qps_[i];
    q.sq = b;
    q.cq = b + (size_t)s.sq_bbs * 64;
    uint8_t *line = q.cq + (size_t)s.cq_entries * 64;
    q.db = reinterpret_cast<uint64_t *>(line);
    q.dbrec = reinterpret_cast<uint32_t *>(line + 8);
    q.ci = reinterpret_cast<uint32_t *>(line + 16);
    q.bbs = (uint32_t)s.sq_bbs;
    q.qpn = 0x40000u + (uint32_t)i;
  }
  workers_.clear();
  for (int rl = 0; rl < s.Rd; ++rl) {
    for (int w = 0; w < s.workers; ++w) {
      std::unique_ptr<Worker> wk(new Worker());
      wk->p = this;
      wk->rl = rl;
      wk->w = w;
      for (int r = w; r < s.rings; r += s.workers) wk->expected.push_back(0);
      workers_.push_back(std::move(wk));
    }
  }
  return MBN_OK;
}

void *LayerProxy::main(void *arg) {
  Worker *wk = static_cast<Worker *>(arg);
  wk->p->work(*wk);
  return nullptr;
}

int32_t LayerProxy::start() {
  stop_.store(0);
  threads_.assign(workers_.size(), pthread_t());
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (pthread_create(&threads_[i], nullptr, main, workers_[i].get()) != 0) {
      stop_.store(1);
      for (size_t k = 0; k < i; ++k) pthread_join(threads_[k], nullptr);
      threads_.clear();
      set_error("proxy: starting worker %zu failed", i);
      return MBN_ERR_CUDA;
    }
  }
  running_ = true;
  return MBN_OK;
}

void LayerProxy::stop() {
  if (!running_) return;
  stop_.store(1);
  for (auto &t : threads_) pthread_join(t, nullptr);
  threads_.clear();
  running_ = false;
}

int64_t LayerProxy::consumed() const {
  int64_t n = 0;
  for (auto &w : workers_) n += w->consumed.load(std::memory_order_relaxed);
  return n;
}

int64_t LayerProxy::torn() const {
  int64_t n = 0;
  for (auto &w : workers_) n += w->torn;
  return n;
}

std::string LayerProxy::failure() const {
  if (!failed_.load()) return std::string();
  return std::string(failure_);
}

void LayerProxy::fail(const char *fmt, ...) {
  int expect = 0;
  if (!failed_.compare_exchange_strong(expect, 1)) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(failure_, sizeof failure_, fmt, ap);
  va_end(ap);
}

static inline void put_seg(uint8_t *sq, uint32_t bbs, uint32_t pi, uint32_t k, mbn_seg s) {
  memcpy(sq + mbn_seg_offset(pi, k, bbs * MBN_BB), s.w, MBN_SEG);
}

void LayerProxy::work(Worker &wk) {
  const long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  const int id = wk.rl * s_.workers + wk.w;
  if (ncpu > 1) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)((s_.core0 + id) % ncpu), &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  }
  const int rank = s_.rank0 + wk.rl;
  const uint64_t mask = (uint64_t)s_.entries - 1;
  const uint64_t offmask = (1ull << 40) - 1;
  const double limit_ns = s_.timeout_s * 1e9;
  std::vector<int> touched;
  std::vector<uint64_t> last_ctrl(s_.R, 0);
  // Per ring it serves: since when its next descriptor's queue has been
  // full with nothing of the ring written (0: it is not waiting).
  std::vector<double> full_since(wk.expected.size(), 0.0);
  while (!stop_.load(std::memory_order_relaxed)) {
    bool any = false;
    size_t slot_i = 0;
    for (int r = wk.w; r < s_.rings; r += s_.workers, ++slot_i) {
      Desc32 *ring = this->ring(wk.rl, r);
      const int cls = s_.reserved0 > 0 && r >= s_.reserved0 ? 1 : 0;
      const uint64_t s = wk.expected[slot_i];
      int n = 0;
      bool full = false;
      touched.clear();
      while (n < s_.batch) {
        Desc32 *d = ring + ((s + n) & mask);
        if (__atomic_load_n(&d->ctrl, __ATOMIC_ACQUIRE) != s + n + 1) break;
        uint64_t a = __atomic_load_n(&d->a, __ATOMIC_ACQUIRE);
        uint64_t b = __atomic_load_n(&d->b, __ATOMIC_ACQUIRE);
        uint64_t c = __atomic_load_n(&d->c, __ATOMIC_ACQUIRE);
        const uint32_t want = (uint32_t)(s + n);
        if ((uint32_t)(c >> 32) != (want ^ desc_mix(a, b))) {
          // The publishing word arrived before the rest: wait for it.
          ++wk.torn;
          const double t0 = now_ns();
          do {
            relax();
            a = __atomic_load_n(&d->a, __ATOMIC_ACQUIRE);
            b = __atomic_load_n(&d->b, __ATOMIC_ACQUIRE);
            c = __atomic_load_n(&d->c, __ATOMIC_ACQUIRE);
            if (now_ns() - t0 > limit_ns) {
              fail("proxy worker %d of rank %d: descriptor %llu of ring %d stayed torn", wk.w, rank,
                   (unsigned long long)(s + n), r);
              return;
            }
          } while ((uint32_t)(c >> 32) != (want ^ desc_mix(a, b)));
        }
        const uint64_t op = a >> 56;
        const int dst = (int)((a >> 40) & 0xffffu);
        const uint64_t roff = a & offmask;
        const uint32_t len = (uint32_t)c;
        if (dst >= s_.R || (op != kDescWrite && op != kDescAtomic)) {
          fail("proxy worker %d of rank %d: descriptor %llu of ring %d names op %llu to rank %d", wk.w, rank,
               (unsigned long long)(s + n), r, (unsigned long long)op, dst);
          return;
        }
        WorkerQP &q = qp(wk.rl, wk.w, dst, cls);
        const uint32_t ds = op == kDescAtomic ? mbn_atomic_ds(0) : mbn_write_ds(0, 0, 0);
        const uint32_t nbb = mbn_bbs(ds);
        if (q.pi + nbb - __atomic_load_n(q.ci, __ATOMIC_ACQUIRE) > q.bbs) {
          // A real proxy rings what it has and moves on: spinning here
          // would hold every other ring this worker serves. The batch
          // ends before this descriptor, which the next pass takes.
          full = true;
          if (n == 0) {
            const double t = now_ns();
            if (full_since[slot_i] == 0) {
              full_since[slot_i] = t;
            } else if (t - full_since[slot_i] > limit_ns) {
              fail("proxy worker %d of rank %d: its queue to rank %d stayed full", wk.w, rank, dst);
              return;
            }
          }
          break;
        }
        const bool sig = ((q.pi + nbb) / (uint32_t)s_.cqe_every) != (q.pi / (uint32_t)s_.cqe_every);
        const mbn_seg ctrl = mbn_ctrl_seg(0, q.pi, op == kDescAtomic ? MBN_OPCODE_ATOMIC_FA : MBN_OPCODE_RDMA_WRITE,
                                          q.qpn, ds, sig ? MBN_CQ_UPDATE : 0u, 0);
        put_seg(q.sq, q.bbs, q.pi, 0, ctrl);
        put_seg(q.sq, q.bbs, q.pi, 1, mbn_raddr_seg(s_.bases[dst] + roff, s_.keys[dst]));
        if (op == kDescAtomic) {
          put_seg(q.sq, q.bbs, q.pi, 2, mbn_atomic_seg(b, 0));
          put_seg(q.sq, q.bbs, q.pi, 3,
                  mbn_data_seg(8, s_.keys[rank], s_.bases[rank] + s_.off_fetch + (uint64_t)(q.pi & 1023u) * 8u));
        } else {
          put_seg(q.sq, q.bbs, q.pi, 2, mbn_data_seg(len, s_.keys[rank], s_.bases[rank] + b));
        }
        q.pi += nbb;
        last_ctrl[dst] = (uint64_t)ctrl.w[1] << 32 | ctrl.w[0];
        bool seen = false;
        for (int t : touched) seen = seen || t == dst;
        if (!seen) touched.push_back(dst);
        ++n;
      }
      if (n > 0 || !full) full_since[slot_i] = 0;
      if (n > 0) {
        // One doorbell per queue the chain touched, then the ring's
        // progress: the NIC may read it as soon as the doorbell lands.
        for (int dst : touched) {
          WorkerQP &q = qp(wk.rl, wk.w, dst, cls);
          std::atomic_thread_fence(std::memory_order_release);
          __atomic_store_n(q.dbrec, mbn_bswap32(q.pi & 0xffffu), __ATOMIC_RELEASE);
          __atomic_store_n(q.db, last_ctrl[dst], __ATOMIC_RELEASE);
        }
        wk.expected[slot_i] = s + n;
        __atomic_store_n(&ctl(wk.rl, r)->head, s + n, __ATOMIC_RELEASE);
        wk.consumed.fetch_add(n, std::memory_order_relaxed);
        any = true;
      }
    }
    if (!any) relax();
  }
}

}  // namespace mbn
