#include "interpreter_exit.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>

#include "opweave/errors.h"
#include "opweave/fork_guard.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

struct Gate {
  std::mutex mutex;  // guards in_flight and the closing of the gate
  std::condition_variable idle;
  int in_flight = 0;
};

// Leaked, and built at load time: it must outlive static teardown (a daemon thread may still
// leave a run then), and a lazy initialiser could be caught mid-way by fork() (fork_guard.h).
Gate* g_gate = nullptr;
std::atomic<bool> g_exiting{false};
// Calls the calling thread is inside (a py_function calling Session.run nests them).
thread_local int t_in_flight = 0;

// In a forked child only the forking thread exists: the runs of the parent's other threads will
// never return, so they must not be waited for at the child's exit. Runs in the child only.
void forget_other_threads_runs() { g_gate->in_flight = t_in_flight; }
constexpr ForkHandler kForgetOtherThreadsRuns{nullptr, nullptr, forget_other_threads_runs};

[[maybe_unused]] const bool g_gate_ready = [] {
  g_gate = new Gate;
  // A leaf lock (nothing is locked or waited for while it is held: the condition wait releases
  // it), so it may be held across fork and the child finds it free.
  hold_across_fork(&g_gate->mutex);
  at_fork(&kForgetOtherThreadsRuns);
  return true;
}();

}  // namespace

// acquire: pairs with the release store in close_runs_for_exit (the flag guards no other data,
// but this keeps the gate's order obvious).
bool interpreter_exiting() noexcept { return g_exiting.load(std::memory_order_acquire); }

CallInFlight::CallInFlight() {
  std::lock_guard<std::mutex> lock(g_gate->mutex);
  // Under the mutex: a run either is counted before the gate closes or sees it closed.
  if (g_exiting.load(std::memory_order_relaxed)) {
    throw OpError(ErrorCode::kCancelled, "Run was cancelled: the interpreter is exiting");
  }
  ++g_gate->in_flight;
  ++t_in_flight;
}

CallInFlight::~CallInFlight() {
  std::lock_guard<std::mutex> lock(g_gate->mutex);
  --t_in_flight;
  if (--g_gate->in_flight == 0) g_gate->idle.notify_all();
}

void register_interpreter_exit(py::module_& m) {
  m.def(
      "close_runs_for_exit",
      [](double timeout_s) {
        {
          std::lock_guard<std::mutex> lock(g_gate->mutex);
          g_exiting.store(true, std::memory_order_release);
        }
        bool idle = false;
        {
          // Released: the runs in flight need the GIL to finish their py_functions and return.
          py::gil_scoped_release release;
          std::unique_lock<std::mutex> lock(g_gate->mutex);
          idle = g_gate->idle.wait_for(lock, std::chrono::duration<double>(timeout_s),
                                       [] { return g_gate->in_flight == t_in_flight; });
        }
        if (!idle) {
          std::fputs(
              "opweave: runs still in flight at interpreter exit (a py_function did not "
              "return); the process may abort\n",
              stderr);
        }
        return idle;
      },
      py::arg("timeout_s"),
      "Interpreter exit: refuse new runs, cancel those in flight and wait for them to return "
      "(True) or for timeout_s (False: a py_function did not finish).");
}

}  // namespace opweave::bindings
