#include "interpreter_exit.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "opweave/errors.h"
#include "register.h"

namespace py = pybind11;

namespace opweave::bindings {

namespace {

std::mutex g_mutex;  // guards g_in_flight and the closing of the gate
std::condition_variable g_idle;
int g_in_flight = 0;
std::atomic<bool> g_exiting{false};

}  // namespace

bool interpreter_exiting() noexcept { return g_exiting.load(std::memory_order_acquire); }

RunInFlight::RunInFlight() {
  std::lock_guard<std::mutex> lock(g_mutex);
  // Under the mutex: a run either is counted before the gate closes or sees it closed.
  if (g_exiting.load(std::memory_order_relaxed)) {
    throw OpError(ErrorCode::kCancelled, "Run was cancelled: the interpreter is exiting");
  }
  ++g_in_flight;
}

RunInFlight::~RunInFlight() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_in_flight == 0) g_idle.notify_all();
}

void register_interpreter_exit(py::module_& m) {
  m.def(
      "close_runs_for_exit",
      [](double timeout_s) {
        {
          std::lock_guard<std::mutex> lock(g_mutex);
          g_exiting.store(true, std::memory_order_release);
        }
        // Released: the runs in flight need the GIL to finish their py_functions and return.
        py::gil_scoped_release release;
        std::unique_lock<std::mutex> lock(g_mutex);
        return g_idle.wait_for(lock, std::chrono::duration<double>(timeout_s),
                               [] { return g_in_flight == 0; });
      },
      py::arg("timeout_s"),
      "Interpreter exit: refuse new runs, cancel those in flight and wait for them to return "
      "(True) or for timeout_s (False: a py_function did not finish).");
}

}  // namespace opweave::bindings
