#include "opweave/pools/environment.h"

#include <cstdio>
#include <cstdlib>

#include "opweave/cpu_info.h"
#include "opweave/cpu_pressure.h"
#include "opweave/pools/global_pools.h"

namespace opweave {
namespace {

// Parses a positive integer (the first entry of a comma list). 0 when invalid.
int parse_threads(const char* text) {
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || (*end != '\0' && *end != ',') || v <= 0 || v > kMaxThreads) return 0;
  return static_cast<int>(v);
}

std::string cpu_rule(const CpuInfo& cpu) {
  std::string s = "available CPUs (affinity " + std::to_string(cpu.affinity_cpus);
  if (cpu.cgroup_quota_cpus > 0) {
    char quota[32];
    std::snprintf(quota, sizeof(quota), "%.2f", cpu.cgroup_quota_cpus);
    s += std::string(", cgroup quota ") + quota;
  } else if (!cpu.cgroup_error.empty()) {
    s += ", no cgroup quota: " + cpu.cgroup_error;
  } else {
    s += ", no cgroup quota";
  }
  return s + " -> " + std::to_string(cpu.available_cpus) + ")";
}

}  // namespace

int environment_pool_size(bool intra, std::string* source) {
  std::string ignored;
  const char* vars[2] = {intra ? "OPWEAVE_NUM_INTRAOP_THREADS" : "OPWEAVE_NUM_INTEROP_THREADS",
                         intra ? "OMP_NUM_THREADS" : nullptr};
  for (const char* var : vars) {
    if (var == nullptr) continue;
    const char* text = std::getenv(var);
    if (text == nullptr) continue;
    if (const int n = parse_threads(text)) {
      *source = std::string(var) + "=" + text + ignored;
      return n;
    }
    ignored += std::string("; ") + var + "='" + text + "' ignored (not a positive integer)";
  }
  const CpuInfo cpu = cpu_info();
  *source = cpu_rule(cpu) + ignored;
  set_cpu_budget(cpu.available_cpus);  // re-read here: affinity and quota may have changed
  return cpu.available_cpus;
}

std::int64_t environment_spin_time_us(std::string* source) {
  const char* text = std::getenv("OPWEAVE_SPIN_TIME_US");
  if (text != nullptr && *text != '\0') {
    char* end = nullptr;
    const long long v = std::strtoll(text, &end, 10);
    if (*end == '\0' && v >= 0) {
      if (source) *source = std::string("OPWEAVE_SPIN_TIME_US=") + text;
      return v;
    }
    if (source) *source = std::string("default; OPWEAVE_SPIN_TIME_US='") + text + "' ignored";
    return 50;
  }
  if (source) *source = "default";
  return 50;
}

Affinity environment_affinity(std::string* source) {
  const char* text = std::getenv("OPWEAVE_AFFINITY");
  if (text == nullptr || *text == '\0') {
    if (source) *source = "default";
    return Affinity::kNone;
  }
  const std::string v = text;
  Affinity a = Affinity::kNone;
  if (v == "compact") {
    a = Affinity::kCompact;
  } else if (v == "scatter") {
    a = Affinity::kScatter;
  } else if (v != "none") {
    if (source) *source = "default; OPWEAVE_AFFINITY='" + v + "' ignored";
    return Affinity::kNone;
  }
  if (source) *source = "OPWEAVE_AFFINITY=" + v;
  return a;
}

}  // namespace opweave
