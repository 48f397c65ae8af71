// Interpreter exit vs. runs in flight: Python's finalization kills (pthread_exit) any thread that
// takes the GIL after it started, and that unwinding through C++ frames aborts the process
// ("FATAL: exception not rethrown"). So opweave's atexit hook (opweave.session) closes a gate:
// runs no longer start, py_function kernels and signal polls no longer take the GIL, and it
// waits (GIL released) until the runs in flight have returned to Python. Only then does Python
// set its finalizing flag, so no thread of ours meets it.
#pragma once

#include <pybind11/pybind11.h>

namespace opweave::bindings {

// True once the gate is closed. Thread-safe. Checked before every GIL acquisition of a run.
bool interpreter_exiting() noexcept;

// Counts one Session.run from before it releases the GIL until after it has it back. Construct
// with the GIL held; throws OpError(kCancelled) when the gate is closed. Thread-safe.
class RunInFlight {
 public:
  RunInFlight();
  ~RunInFlight();
  RunInFlight(const RunInFlight&) = delete;
  RunInFlight& operator=(const RunInFlight&) = delete;
};

}  // namespace opweave::bindings
