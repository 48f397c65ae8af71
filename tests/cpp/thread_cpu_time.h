// CPU time one thread of this process has used, for the idle-CPU test (test_pool) and bench
// (bench/cpp/pool_bench).
#pragma once

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace opweave::testing {

// Nanoseconds on the CPU of thread `tid` of this process: /proc/self/task/<tid>/schedstat, else
// utime + stime from .../stat (clock ticks); -1 when neither can be read.
inline long long thread_cpu_ns(long tid) {
  const std::string dir = "/proc/self/task/" + std::to_string(tid);
  std::ifstream sched(dir + "/schedstat");
  long long ns = 0;
  if (sched >> ns) return ns;
  std::ifstream stat(dir + "/stat");
  std::string line;
  std::getline(stat, line);
  const std::size_t close = line.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoll(field);
    if (i == 15) stime = std::stoll(field);
  }
  return (utime + stime) * (1000000000LL / sysconf(_SC_CLK_TCK));
}

}  // namespace opweave::testing
