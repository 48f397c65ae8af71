#include "opweave/cpu_info.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>

namespace opweave {
namespace {

bool is_directory(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The files read here are a few bytes long; a larger one is not a cgroup file.
constexpr std::size_t kMaxCgroupFileBytes = 64 * 1024;

// The whole of a small regular file. Missing: false with no error. Anything else that is not a
// regular file of at most kMaxCgroupFileBytes (a device such as /dev/zero, a FIFO, which would
// block, a huge file): false with *error saying why, so a path named by the environment can
// neither hang the process nor make it read without bound.
bool read_small_file(const std::string& path, std::string* text, std::string* error) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st{};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!ok) {
    if (error != nullptr) *error = path + " is not a regular file; ignored";
  } else {
    // Files under /proc and /sys report size 0, so read up to the cap instead of trusting it.
    char buffer[4096];
    text->clear();
    for (;;) {
      const ssize_t n = ::read(fd, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ok = n == 0;
        break;
      }
      text->append(buffer, static_cast<std::size_t>(n));
      if (text->size() > kMaxCgroupFileBytes) {
        ok = false;
        if (error != nullptr) {
          *error = path + " is larger than " + std::to_string(kMaxCgroupFileBytes / 1024) +
                   " KiB; ignored";
        }
        break;
      }
    }
  }
  ::close(fd);
  return ok;
}

// A whole number or decimal at the start of a file; false when missing or not a number.
bool read_number(const std::string& path, double* out, std::string* error) {
  std::string contents;
  if (!read_small_file(path, &contents, error)) return false;
  std::istringstream in(contents);
  std::string text;
  if (!(in >> text)) return false;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') return false;
  *out = v;
  return true;
}

// cgroup v2 cpu.max: "<quota> <period>" (a limit) or "max <period>" (none). 0 when none.
double read_cpu_max(const std::string& dir, std::string* error) {
  std::string contents;
  if (!read_small_file(dir + "/cpu.max", &contents, error)) return 0;
  std::istringstream in(contents);
  std::string quota, period;
  if (!(in >> quota >> period) || quota == "max") return 0;
  char* qend = nullptr;
  char* pend = nullptr;
  const double q = std::strtod(quota.c_str(), &qend);
  const double p = std::strtod(period.c_str(), &pend);
  if (*qend != '\0' || *pend != '\0' || q <= 0 || p <= 0) return 0;
  return q / p;
}

// cgroup v1: cpu.cfs_quota_us (-1 = none) over cpu.cfs_period_us. 0 when none.
double read_cfs_quota(const std::string& dir, std::string* error) {
  double quota = 0, period = 0;
  if (!read_number(dir + "/cpu.cfs_quota_us", &quota, error) ||
      !read_number(dir + "/cpu.cfs_period_us", &period, error) || quota <= 0 || period <= 0) {
    return 0;
  }
  return quota / period;
}

// The smallest positive quota read by `read` from <mount><path> up to <mount> itself.
template <typename Read>
double smallest_quota_up_to_the_root(const std::string& mount, std::string path, Read read,
                                     std::string* error) {
  if (path.empty() || path[0] != '/') path = "/" + path;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  // Not under this mount (a container whose mount is its own cgroup, or a path outside the
  // cgroup namespace, shown with ".."): the mount's root is the closest we can read.
  if (path.find("/..") != std::string::npos || !is_directory(mount + path)) path = "/";
  double smallest = 0;
  for (;;) {
    const double q = read(path == "/" ? mount : mount + path, error);
    if (q > 0 && (smallest == 0 || q < smallest)) smallest = q;
    if (path == "/") break;
    const std::size_t slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
  return smallest;
}

double smaller_quota(double a, double b) {
  if (a <= 0) return b;
  if (b <= 0) return a;
  return a < b ? a : b;
}

bool lists_cpu_controller(const std::string& controllers) {
  std::stringstream list(controllers);
  std::string c;
  while (std::getline(list, c, ',')) {
    if (c == "cpu") return true;
  }
  return false;
}

}  // namespace

double cgroup_quota_cpus(const std::string& cgroup_root, const std::string& proc_self_cgroup,
                         std::string* error) {
  // The v1 cpu controller's mount: "cpu" (usually a link to "cpu,cpuacct") or the joint name.
  std::string v1_mount = cgroup_root + "/cpu";
  for (const char* name : {"cpu", "cpu,cpuacct", "cpuacct,cpu"}) {
    if (is_directory(cgroup_root + "/" + name)) {
      v1_mount = cgroup_root + "/" + name;
      break;
    }
  }
  std::string contents;
  std::string self_error;
  if (!read_small_file(proc_self_cgroup, &contents, &self_error)) {
    if (!self_error.empty() && error != nullptr) *error = self_error;
    // Unknown cgroup: read the roots alone (where a container's own cgroup is mounted).
    return smaller_quota(read_cpu_max(cgroup_root, error), read_cfs_quota(v1_mount, error));
  }
  std::istringstream in(contents);
  double quota = 0;
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string id = line.substr(0, first);
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (id == "0" && controllers.empty()) {
      quota = smaller_quota(quota,
                            smallest_quota_up_to_the_root(cgroup_root, path, read_cpu_max, error));
    } else if (lists_cpu_controller(controllers)) {
      quota = smaller_quota(quota,
                            smallest_quota_up_to_the_root(v1_mount, path, read_cfs_quota, error));
    }
  }
  return quota;
}

IsaFlags decode_isa_flags(unsigned leaf1_ecx, unsigned leaf7_ebx,
                          unsigned long long xcr0) noexcept {
  auto bit = [](unsigned reg, int b) { return ((reg >> b) & 1u) != 0; };
  // XGETBV exists (and xcr0 means something) only when the OS set CR4.OSXSAVE.
  const bool osxsave = bit(leaf1_ecx, 27);
  // XCR0 bits: 1 SSE, 2 AVX (upper YMM); 5 opmask, 6 ZMM_Hi256, 7 Hi16_ZMM.
  const bool os_ymm = osxsave && (xcr0 & 0x6) == 0x6;
  const bool os_zmm = os_ymm && (xcr0 & 0xE0) == 0xE0;
  IsaFlags f;
  f.popcnt = bit(leaf1_ecx, 23);
  const bool avx = os_ymm && bit(leaf1_ecx, 28);
  f.fma = avx && bit(leaf1_ecx, 12);
  f.f16c = avx && bit(leaf1_ecx, 29);
  f.avx2 = avx && bit(leaf7_ebx, 5);
  f.avx512f = os_zmm && bit(leaf7_ebx, 16);
  f.avx512dq = f.avx512f && bit(leaf7_ebx, 17);
  f.avx512bw = f.avx512f && bit(leaf7_ebx, 30);
  f.avx512vl = f.avx512f && bit(leaf7_ebx, 31);
  return f;
}

IsaFlags isa_flags() noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  unsigned eax = 0, ebx = 0, ecx1 = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx1, &edx) == 0) return {};
  unsigned ebx7 = 0, ecx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx7, &ecx, &edx) == 0) ebx7 = 0;  // no leaf 7: no AVX2
  unsigned long long xcr0 = 0;
  if ((ecx1 >> 27) & 1u) {  // OSXSAVE: XGETBV is available (it faults otherwise)
    unsigned lo = 0, hi = 0;
    // Encoded as a plain instruction: the _xgetbv intrinsic would need -mxsave on this file.
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  return decode_isa_flags(ecx1, ebx7, xcr0);
#else
  return {};
#endif
}

CpuInfo cpu_info() {
  const IsaFlags isa = isa_flags();
  CpuInfo info;
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  info.online_cpus = online > 0 ? static_cast<int>(online) : 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  info.affinity_cpus =
      sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : info.online_cpus;
  if (info.affinity_cpus < 1) info.affinity_cpus = 1;
  // Testing only (cpu_info.h): fake trees stand in for the machine's.
  const char* root = std::getenv("OPWEAVE_CGROUP_ROOT");
  const char* self = std::getenv("OPWEAVE_PROC_SELF_CGROUP");
  info.cgroup_quota_cpus =
      cgroup_quota_cpus(root != nullptr ? root : "/sys/fs/cgroup",
                        self != nullptr ? self : "/proc/self/cgroup", &info.cgroup_error);
  info.available_cpus = info.affinity_cpus;
  if (info.cgroup_quota_cpus > 0) {
    const int quota = static_cast<int>(std::ceil(info.cgroup_quota_cpus));
    if (quota < info.available_cpus) info.available_cpus = quota < 1 ? 1 : quota;
  }
  info.has_avx2 = isa.avx2;
  info.has_fma = isa.fma;
  info.has_avx512f = isa.avx512f;
  info.isa = isa.can_run_avx512_files() ? "avx512"
             : isa.can_run_avx2_files() ? "avx2+fma"
                                        : "portable";
  return info;
}

}  // namespace opweave
