#include "opweave/pools/global_pools.h"

#include <atomic>
#include <mutex>
#include <string>

#include "opweave/errors.h"
#include "opweave/fork_guard.h"
#include "opweave/pools/environment.h"

namespace opweave {
namespace {

struct Setting {
  int value = 0;  // 0: not resolved yet
  std::string source;
  bool fixed = false;  // rule 1 chose it (ParallelismSetting::fixed)
  int requested = 0;   // the n of the set_* call that chose it, else 0 (ParallelismSetting)
};

struct GlobalPool {
  GlobalPool(const char* n, bool i) : name(n), intra(i) {}
  const char* name;
  bool intra;  // intra: workers = size - 1; inter: workers = size
  std::atomic<ThreadPool*> pool{nullptr};
  // Serializes set_size() on this pool. Held while the resize waits for the pool's uses to drain,
  // which g_mutex must not be: a use (a kernel inside a parallel_for) may read a size meanwhile.
  // Lock order: resize_mutex before g_mutex.
  std::mutex resize_mutex;
  Setting setting;  // guarded by g_mutex
};

std::mutex g_mutex;  // guards every GlobalPool's settings and pool creation/resizing
GlobalPool g_intra("intra-op", true);
GlobalPool g_inter("inter-op", false);
bool g_forked_child = false;  // guarded by g_mutex

// Rules 2-4 of global_pools.h.
Setting default_setting(bool intra) {
  Setting s;
  s.value = environment_pool_size(intra, &s.source);
  return s;
}

void resolve_locked(GlobalPool& g) {
  if (g.setting.value == 0) g.setting = default_setting(g.intra);
}

// An explicit spin time (set_spin_time_us, or the first Session's ConfigProto).
struct SpinSetting {
  bool is_explicit = false;
  std::int64_t us = 0;
  std::string source;
};
SpinSetting g_spin;  // guarded by g_mutex

std::int64_t spin_time_locked(std::string* source) {
  if (!g_spin.is_explicit) return environment_spin_time_us(source);
  if (source) *source = g_spin.source;
  return g_spin.us;
}

int workers_for(const GlobalPool& g) { return g.intra ? g.setting.value - 1 : g.setting.value; }

// Fork steps (fork_guard.h). No pool is half-created or half-resized at fork(): the forking
// thread takes every lock of this file, in the lock order of install().
void atfork_prepare() {
  g_intra.resize_mutex.lock();
  g_inter.resize_mutex.lock();
  g_mutex.lock();
}
void atfork_parent() {
  g_mutex.unlock();
  g_inter.resize_mutex.unlock();
  g_intra.resize_mutex.unlock();
}
// The child keeps the sizes and sources and forgets the pools: the next use creates fresh ones.
void atfork_child() {
  // The child is single-threaded: the forking thread holds g_mutex (taken in prepare).
  for (GlobalPool* g : {&g_intra, &g_inter}) {
    // relaxed: nobody else runs in the child. The old pool is leaked: its threads are gone.
    if (g->pool.load(std::memory_order_relaxed) != nullptr) {
      g->pool.store(nullptr, std::memory_order_relaxed);
      g_forked_child = true;
    }
  }
  g_mutex.unlock();
  g_inter.resize_mutex.unlock();
  g_intra.resize_mutex.unlock();
}

// Registered at load time: a lazy registration (call_once) could itself be caught half done by a
// fork.
constexpr ForkHandler kForgetGlobalPools{atfork_prepare, atfork_parent, atfork_child};
[[maybe_unused]] const bool g_fork_registered = (at_fork(&kForgetGlobalPools), true);

ThreadPool* create_locked(GlobalPool& g) {
  resolve_locked(g);
  PoolOptions options;
  options.num_workers = workers_for(g);
  options.name = g.name;
  options.spin_time_us = spin_time_locked(nullptr);  // explicit, else environment
  options.affinity = environment_affinity(nullptr);
  // Pinned, the inter-op workers take the first CPUs and the intra-op workers the next ones.
  options.pin_group = g.intra ? PinGroup::kGlobalIntraOp : PinGroup::kGlobalInterOp;
  auto* pool = new ThreadPool(std::move(options));  // process lifetime; see atfork_child
  // release: a thread that loads the pointer with acquire sees a fully built pool.
  g.pool.store(pool, std::memory_order_release);
  return pool;
}

ThreadPool* get_pool(GlobalPool& g) {
  // acquire: pairs with the release store in create_locked.
  if (ThreadPool* p = g.pool.load(std::memory_order_acquire)) return p;
  std::lock_guard<std::mutex> lock(g_mutex);  // one creator; settings stay consistent
  if (ThreadPool* p = g.pool.load(std::memory_order_relaxed)) return p;  // created meanwhile
  return create_locked(g);
}

void check_size(int n, const char* what) {
  if (n < 0 || n > kMaxThreads) {
    throw_invalid_argument(std::string(what) + ": expected 0 (system picks) .. " +
                           std::to_string(kMaxThreads) + ", got " + std::to_string(n));
  }
}

// Installs the setting that make_next() returns (called under g_mutex) and resizes the pool to
// it if the pool exists. The whole setting changes in one step under g_mutex, so a reader (or a
// save for a later restore) never sees the size of one call with the source of another.
template <typename MakeNext>
void install(GlobalPool& g, MakeNext make_next) {
  // acquire: pairs with create_locked's release store (we may call into the pool below).
  if (ThreadPool* p = g.pool.load(std::memory_order_acquire); p != nullptr && p->in_own_work()) {
    // Refuse before taking resize_mutex: a resize of this pool running on another thread waits
    // for this thread's work, so waiting for its resize_mutex here would never end.
    throw OpError(ErrorCode::kFailedPrecondition,
                  std::string("cannot resize the ") + g.name +
                      " pool from inside its own work (an op, a py_function or a parallel loop "
                      "running on that pool): the resize would wait for itself. Resize it "
                      "between runs, or give the session its own pools "
                      "(ConfigProto(use_per_session_threads=True))");
  }
  std::lock_guard<std::mutex> resizing(g.resize_mutex);  // one install per pool at a time
  std::unique_lock<std::mutex> lock(g_mutex);            // guards the settings and creation
  Setting next = make_next();
  // relaxed: g_mutex orders creation and this read.
  ThreadPool* p = g.pool.load(std::memory_order_relaxed);
  if (p != nullptr) {
    // The pool exists and stays (only fork's child drops it, and fork waits for resize_mutex);
    // resize_mutex keeps other installs out. Resize without g_mutex: it waits for the pool's
    // uses, which may read settings. If it throws, nothing changed.
    lock.unlock();
    p->resize(g.intra ? next.value - 1 : next.value);
    lock.lock();
  }
  g.setting = std::move(next);
}

void set_size(GlobalPool& g, int n, std::string source, const char* what) {
  check_size(n, what);
  install(g, [&] {
    return n == 0 ? default_setting(g.intra) : Setting{n, std::move(source), true, n};
  });
}

void restore_size(GlobalPool& g, const ParallelismSetting& saved, const char* what) {
  if (saved.size < 1 || saved.size > kMaxThreads || saved.requested < 0 ||
      saved.requested > kMaxThreads) {
    throw_invalid_argument(std::string("restore ") + what + ": size " + std::to_string(saved.size) +
                           " / requested " + std::to_string(saved.requested) + " out of range");
  }
  install(g, [&] { return Setting{saved.size, saved.source, saved.fixed, saved.requested}; });
}

ParallelismSetting setting_of(GlobalPool& g) {
  std::lock_guard<std::mutex> lock(g_mutex);  // one consistent copy of the setting
  resolve_locked(g);
  return {g.setting.value, g.setting.source, g.setting.fixed, g.setting.requested};
}

std::string source_of(GlobalPool& g) {
  std::lock_guard<std::mutex> lock(g_mutex);  // guards the setting
  resolve_locked(g);
  return g.setting.source;
}

int size_of(GlobalPool& g) {
  std::lock_guard<std::mutex> lock(g_mutex);  // guards the setting
  resolve_locked(g);
  return g.setting.value;
}

}  // namespace

ThreadPool* global_intra_pool() { return get_pool(g_intra); }
ThreadPool* global_inter_pool() { return get_pool(g_inter); }

int intra_op_parallelism() { return size_of(g_intra); }
int inter_op_parallelism() { return size_of(g_inter); }
std::string intra_op_parallelism_source() { return source_of(g_intra); }
std::string inter_op_parallelism_source() { return source_of(g_inter); }

void set_intra_op_parallelism(int n, std::string source) {
  set_size(g_intra, n, std::move(source), "intra_op_parallelism");
}
void set_inter_op_parallelism(int n, std::string source) {
  set_size(g_inter, n, std::move(source), "inter_op_parallelism");
}

ParallelismSetting intra_op_parallelism_setting() { return setting_of(g_intra); }
ParallelismSetting inter_op_parallelism_setting() { return setting_of(g_inter); }
void restore_intra_op_parallelism(const ParallelismSetting& saved) {
  restore_size(g_intra, saved, "intra_op_parallelism");
}
void restore_inter_op_parallelism(const ParallelismSetting& saved) {
  restore_size(g_inter, saved, "inter_op_parallelism");
}

ParallelismInEffect configure_parallelism_if_unset(int intra, int inter, std::string source) {
  if (intra > kMaxThreads) check_size(intra, "intra_op_parallelism");
  if (inter > kMaxThreads) check_size(inter, "inter_op_parallelism");
  ParallelismInEffect out;
  std::lock_guard<std::mutex> lock(g_mutex);  // decide and create atomically w.r.t. set_*
  auto apply = [&source](GlobalPool& g, int n) {
    // relaxed: g_mutex orders creation and this read.
    const bool unset = !g.setting.fixed && g.pool.load(std::memory_order_relaxed) == nullptr;
    const bool applied = unset && n > 0;
    if (applied) g.setting = {n, source, true, 0};
    if (g.pool.load(std::memory_order_relaxed) == nullptr) create_locked(g);
    return applied;
  };
  out.intra_applied = apply(g_intra, intra);
  out.inter_applied = apply(g_inter, inter);
  out.intra = g_intra.setting.value;
  out.intra_source = g_intra.setting.source;
  out.inter = g_inter.setting.value;
  out.inter_source = g_inter.setting.source;
  return out;
}

RuntimeInfo runtime_info() {
  RuntimeInfo info;
  info.affinity = environment_affinity(&info.affinity_source);
  info.cpu = cpu_info();
  std::lock_guard<std::mutex> lock(g_mutex);  // one consistent snapshot of both pools
  info.spin_time_us = spin_time_locked(&info.spin_time_source);  // g_spin is under g_mutex
  for (GlobalPool* g : {&g_intra, &g_inter}) resolve_locked(*g);
  const std::string fork_note = g_forked_child ? " (rebuilt lazily after fork)" : "";
  info.intra_op_parallelism = g_intra.setting.value;
  info.intra_source = g_intra.setting.source + fork_note;
  // relaxed: under g_mutex, which orders creation.
  info.intra_pool_created = g_intra.pool.load(std::memory_order_relaxed) != nullptr;
  info.inter_op_parallelism = g_inter.setting.value;
  info.inter_source = g_inter.setting.source + fork_note;
  info.inter_pool_created = g_inter.pool.load(std::memory_order_relaxed) != nullptr;
  return info;
}

void set_spin_time_us(std::int64_t us, std::string source) {
  for (GlobalPool* g : {&g_intra, &g_inter}) {
    // acquire: pairs with create_locked's release store. Refused before taking resize_mutex: a
    // resize running on another thread may be waiting for this thread's work.
    ThreadPool* p = g->pool.load(std::memory_order_acquire);
    if (p != nullptr && p->in_own_work()) {
      throw OpError(ErrorCode::kFailedPrecondition,
                    std::string("cannot change the spin time from inside the work of the ") +
                        g->name + " pool: rebuilding its workers would wait for itself");
    }
  }
  // Both resize_mutexes (lock order as in atfork_prepare): no resize runs meanwhile, and the
  // pools stay. g_mutex is held only to change the setting: the rebuilds below wait for the
  // pools' work, which may read settings.
  std::lock_guard<std::mutex> intra_resizing(g_intra.resize_mutex);
  std::lock_guard<std::mutex> inter_resizing(g_inter.resize_mutex);
  std::int64_t effective = 0;
  ThreadPool* pools[2] = {nullptr, nullptr};
  {
    std::lock_guard<std::mutex> lock(g_mutex);  // guards g_spin and pool creation
    g_spin = us < 0 ? SpinSetting{} : SpinSetting{true, us, std::move(source)};
    effective = spin_time_locked(nullptr);
    // relaxed: g_mutex orders creation and these reads.
    pools[0] = g_intra.pool.load(std::memory_order_relaxed);
    pools[1] = g_inter.pool.load(std::memory_order_relaxed);
  }
  for (ThreadPool* p : pools) {
    if (p != nullptr && p->options().spin_time_us != effective) p->set_spin_time_us(effective);
  }
}

bool configure_spin_time_if_unset(std::int64_t us, std::string source) {
  std::lock_guard<std::mutex> lock(g_mutex);  // decide atomically w.r.t. pool creation
  // relaxed: g_mutex orders creation and these reads.
  const bool created = g_intra.pool.load(std::memory_order_relaxed) != nullptr ||
                       g_inter.pool.load(std::memory_order_relaxed) != nullptr;
  if (us < 0 || g_spin.is_explicit || created) return false;
  g_spin = SpinSetting{true, us, std::move(source)};
  return true;
}

}  // namespace opweave
