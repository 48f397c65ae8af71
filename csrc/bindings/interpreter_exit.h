// Interpreter exit vs. calls in flight: Python's finalization kills (pthread_exit) any thread that
// takes the GIL after it started. When that thread is inside opweave's C++ (a daemon thread
// taking the GIL back after a kernel or a run, or a pool thread running a py_function), the
// forced unwinding meets a noexcept frame and aborts the process ("FATAL: exception not
// rethrown", "terminate called without an active exception"). So opweave's atexit hook
// (opweave.session) closes a gate: calls that would release the GIL no longer start, py_function
// kernels and signal polls no longer take the GIL, runs in flight are cancelled, and it waits
// (GIL released) until every call in flight has the GIL back. Only then does Python set its
// finalizing flag, so no thread of ours meets it inside C++.
#pragma once

#include <pybind11/pybind11.h>

namespace opweave::bindings {

// True once the gate is closed. Thread-safe. Checked before every GIL acquisition of a run.
bool interpreter_exiting() noexcept;

// Counts one call from before it releases the GIL until after it has it back. Construct with the
// GIL held; throws OpError(kCancelled) when the gate is closed. Thread-safe.
class CallInFlight {
 public:
  CallInFlight();
  ~CallInFlight();
  CallInFlight(const CallInFlight&) = delete;
  CallInFlight& operator=(const CallInFlight&) = delete;
};

// py::gil_scoped_release for opweave's calls: counted (CallInFlight) while the GIL is released,
// and the count drops only after the GIL is back, so interpreter exit waits for this call
// instead of killing its thread inside C++. Usable as py::call_guard<CountedGilRelease>.
class CountedGilRelease {
 public:
  CountedGilRelease() = default;

 private:
  CallInFlight counted_;  // declared first: counted before the release, uncounted after re-acquire
  pybind11::gil_scoped_release release_;
};

}  // namespace opweave::bindings
