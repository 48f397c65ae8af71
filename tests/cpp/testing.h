// A minimal test harness for the C++ unit tests (no third-party framework to fetch):
//
//   OPWEAVE_TEST(deque_pops_in_lifo_order) { OPWEAVE_CHECK(x == 1); OPWEAVE_CHECK_EQ(a, b); }
//   int main() { return opweave::testing::run_all(); }
//
// Each test runs in order; a failed check prints file:line and the expression, marks the test
// failed, and continues with the next test. The exit code is the number of failed tests (capped).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace opweave::testing {

struct TestCase {
  const char* name;
  std::function<void()> body;
};

inline std::vector<TestCase>& registry() {
  static std::vector<TestCase> tests;
  return tests;
}

inline bool& current_failed() {
  static bool failed = false;
  return failed;
}

struct Registrar {
  Registrar(const char* name, std::function<void()> body) {
    registry().push_back({name, std::move(body)});
  }
};

inline void report_failure(const char* file, int line, const std::string& what) {
  std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what.c_str());
  current_failed() = true;
}

// Runs every registered test whose name contains the optional filter (argv[1]).
inline int run_all(int argc = 0, char** argv = nullptr) {
  const char* filter = argc > 1 ? argv[1] : nullptr;
  int failed = 0, run = 0;
  for (const auto& test : registry()) {
    if (filter && std::string(test.name).find(filter) == std::string::npos) continue;
    current_failed() = false;
    std::fprintf(stderr, "[ RUN  ] %s\n", test.name);
    try {
      test.body();
    } catch (const std::exception& e) {
      report_failure(__FILE__, __LINE__, std::string("unexpected exception: ") + e.what());
    } catch (...) {
      report_failure(__FILE__, __LINE__, "unexpected non-std exception");
    }
    ++run;
    if (current_failed()) ++failed;
    std::fprintf(stderr, "[ %s ] %s\n", current_failed() ? "FAIL" : " OK ", test.name);
  }
  std::fprintf(stderr, "%d passed, %d failed\n", run - failed, failed);
  return failed > 100 ? 100 : failed;
}

}  // namespace opweave::testing

#define OPWEAVE_TEST_CONCAT_(a, b) a##b
#define OPWEAVE_TEST_CONCAT(a, b) OPWEAVE_TEST_CONCAT_(a, b)
#define OPWEAVE_TEST(name)                                                                 \
  static void name();                                                                      \
  static ::opweave::testing::Registrar OPWEAVE_TEST_CONCAT(registrar_, name)(#name, name); \
  static void name()

#define OPWEAVE_CHECK(cond)                                                     \
  do {                                                                          \
    if (!(cond)) ::opweave::testing::report_failure(__FILE__, __LINE__, #cond); \
  } while (0)

#define OPWEAVE_CHECK_EQ(a, b)                                                        \
  do {                                                                                \
    const auto& opweave_a_ = (a);                                                     \
    const auto& opweave_b_ = (b);                                                     \
    if (!(opweave_a_ == opweave_b_)) {                                                \
      std::ostringstream opweave_msg_;                                                \
      opweave_msg_ << #a " == " #b " (" << opweave_a_ << " vs " << opweave_b_ << ")"; \
      ::opweave::testing::report_failure(__FILE__, __LINE__, opweave_msg_.str());     \
    }                                                                                 \
  } while (0)

#define OPWEAVE_CHECK_THROWS(stmt)                                                \
  do {                                                                            \
    bool opweave_threw_ = false;                                                  \
    try {                                                                         \
      stmt;                                                                       \
    } catch (...) {                                                               \
      opweave_threw_ = true;                                                      \
    }                                                                             \
    if (!opweave_threw_)                                                          \
      ::opweave::testing::report_failure(__FILE__, __LINE__, "no throw: " #stmt); \
  } while (0)

#define OPWEAVE_TEST_MAIN() \
  int main(int argc, char** argv) { return ::opweave::testing::run_all(argc, argv); }
