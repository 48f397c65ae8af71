// cgroup CPU quota (cgroup_quota_cpus, cpu_info) read from fake cgroup trees: v1 and v2,
// unlimited, nested limits, the process's own cgroup, missing files, files that must not be read
// (devices, FIFOs, oversized files).
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "opweave/cpu_info.h"
#include "testing.h"

using namespace opweave;

namespace {

// A scratch directory holding one fake tree per test: <dir>/sys (the cgroup root) and
// <dir>/cgroup (the /proc/self/cgroup stand-in).
class FakeTree {
 public:
  FakeTree() {
    char pattern[] = "/tmp/opweave-cgroup-XXXXXX";
    const char* made = mkdtemp(pattern);
    dir_ = made != nullptr ? made : "/tmp";
    root_ = dir_ + "/sys";
    mkdir(root_.c_str(), 0755);
  }
  ~FakeTree() {
    const std::string rm = "rm -rf '" + dir_ + "'";
    (void)std::system(rm.c_str());
  }
  FakeTree(const FakeTree&) = delete;
  FakeTree& operator=(const FakeTree&) = delete;

  // Writes <root>/<rel> (creating its directories) with `text`.
  void file(const std::string& rel, const std::string& text) const {
    std::string path = root_;
    std::size_t start = 0;
    for (std::size_t slash; (slash = rel.find('/', start)) != std::string::npos;
         start = slash + 1) {
      path += "/" + rel.substr(start, slash - start);
      mkdir(path.c_str(), 0755);
    }
    std::ofstream(root_ + "/" + rel) << text;
  }
  void dir(const std::string& rel) const { file(rel + "/.keep", ""); }
  void self(const std::string& text) const { std::ofstream(self_path()) << text; }

  const std::string& root() const { return root_; }
  std::string self_path() const { return dir_ + "/cgroup"; }
  double quota() const { return cgroup_quota_cpus(root_, self_path()); }

 private:
  std::string dir_, root_;
};

bool near(double a, double b) { return std::fabs(a - b) < 1e-9; }

}  // namespace

OPWEAVE_TEST(v2_max_means_no_quota) {
  FakeTree t;
  t.file("cpu.max", "max 100000\n");
  t.self("0::/\n");
  OPWEAVE_CHECK_EQ(t.quota(), 0.0);
}

OPWEAVE_TEST(v2_quota_of_the_processs_own_cgroup_below_the_root_is_found) {
  // systemd CPUQuota=150% on a non-namespaced cgroup v2: nothing at the root.
  FakeTree t;
  t.file("system.slice/app.service/cpu.max", "150000 100000\n");
  t.file("system.slice/cpu.max", "max 100000\n");
  t.self("0::/system.slice/app.service\n");
  OPWEAVE_CHECK(near(t.quota(), 1.5));
}

OPWEAVE_TEST(v2_the_smallest_quota_on_the_way_to_the_root_applies) {
  FakeTree t;
  t.file("a/cpu.max", "100000 100000\n");  // 1 CPU for the parent
  t.file("a/b/cpu.max", "300000 100000\n");
  t.file("a/b/c/cpu.max", "max 100000\n");
  t.self("0::/a/b/c\n");
  OPWEAVE_CHECK(near(t.quota(), 1.0));
  t.file("a/b/c/cpu.max", "50000 100000\n");  // the leaf is tighter now
  OPWEAVE_CHECK(near(t.quota(), 0.5));
}

OPWEAVE_TEST(v2_a_namespaced_container_reads_its_quota_at_the_mount_root) {
  FakeTree t;
  t.file("cpu.max", "200000 100000\n");
  t.self("0::/\n");
  OPWEAVE_CHECK(near(t.quota(), 2.0));
}

OPWEAVE_TEST(v1_cpu_controller_line_finds_the_quota_and_minus_one_is_none) {
  FakeTree t;
  t.file("cpu,cpuacct/user.slice/cpu.cfs_quota_us", "-1\n");
  t.file("cpu,cpuacct/user.slice/cpu.cfs_period_us", "100000\n");
  t.file("cpu,cpuacct/user.slice/job/cpu.cfs_quota_us", "250000\n");
  t.file("cpu,cpuacct/user.slice/job/cpu.cfs_period_us", "100000\n");
  t.self("12:memory:/user.slice\n4:cpuacct,cpu:/user.slice/job\n0::/user.slice\n");
  OPWEAVE_CHECK(near(t.quota(), 2.5));
  t.file("cpu,cpuacct/user.slice/job/cpu.cfs_quota_us", "-1\n");
  OPWEAVE_CHECK_EQ(t.quota(), 0.0);
}

OPWEAVE_TEST(v1_nested_limits_take_the_smallest) {
  FakeTree t;
  t.file("cpu/outer/cpu.cfs_quota_us", "50000\n");
  t.file("cpu/outer/cpu.cfs_period_us", "100000\n");
  t.file("cpu/outer/inner/cpu.cfs_quota_us", "400000\n");
  t.file("cpu/outer/inner/cpu.cfs_period_us", "100000\n");
  t.self("3:cpu:/outer/inner\n");
  OPWEAVE_CHECK(near(t.quota(), 0.5));
}

OPWEAVE_TEST(v1_a_container_mounted_at_its_own_cgroup_reads_the_mount_root) {
  // Docker on cgroup v1: the file says /docker/<id>, the mount is that cgroup.
  FakeTree t;
  t.file("cpu/cpu.cfs_quota_us", "150000\n");
  t.file("cpu/cpu.cfs_period_us", "100000\n");
  t.self("5:cpu,cpuacct:/docker/0123abcd\n");
  OPWEAVE_CHECK(near(t.quota(), 1.5));
}

OPWEAVE_TEST(missing_files_mean_no_quota) {
  FakeTree t;
  OPWEAVE_CHECK_EQ(t.quota(), 0.0);  // no proc file, empty root
  t.self("0::/gone\n");
  OPWEAVE_CHECK_EQ(t.quota(), 0.0);  // a cgroup that does not exist, nothing at the root
  t.dir("a/b");
  t.self("0::/a/b\n");
  OPWEAVE_CHECK_EQ(t.quota(), 0.0);             // directories without cpu.max
  t.file("cpu/x/cpu.cfs_quota_us", "50000\n");  // v1 quota without a period
  t.self("2:cpu:/x\n");
  OPWEAVE_CHECK_EQ(t.quota(), 0.0);
}

OPWEAVE_TEST(without_the_proc_file_only_the_roots_are_read) {
  FakeTree t;
  t.file("cpu.max", "300000 100000\n");
  t.file("deeper/cpu.max", "100000 100000\n");  // not ours: nothing says we are there
  OPWEAVE_CHECK(near(t.quota(), 3.0));
}

OPWEAVE_TEST(garbage_is_no_quota) {
  FakeTree t;
  t.file("a/cpu.max", "lots 100000\n");
  t.file("cpu/a/cpu.cfs_quota_us", "12abc\n");
  t.file("cpu/a/cpu.cfs_period_us", "100000\n");
  t.self("not a cgroup line\n0::/a\n3:cpu:/a\n");
  OPWEAVE_CHECK_EQ(t.quota(), 0.0);
}

OPWEAVE_TEST(cpu_info_reads_the_trees_the_testing_variables_name_and_rounds_up) {
  FakeTree t;
  t.file("svc/cpu.max", "50000 100000\n");  // half a CPU
  t.self("0::/svc\n");
  setenv("OPWEAVE_CGROUP_ROOT", t.root().c_str(), 1);
  setenv("OPWEAVE_PROC_SELF_CGROUP", t.self_path().c_str(), 1);
  CpuInfo info = cpu_info();
  OPWEAVE_CHECK(near(info.cgroup_quota_cpus, 0.5));
  OPWEAVE_CHECK_EQ(info.available_cpus, 1);  // ceil(0.5), never 0
  t.file("svc/cpu.max", "110000 100000\n");  // 1.1 CPUs: 2 threads may run
  info = cpu_info();
  OPWEAVE_CHECK(near(info.cgroup_quota_cpus, 1.1));
  OPWEAVE_CHECK_EQ(info.available_cpus, info.affinity_cpus < 2 ? info.affinity_cpus : 2);
  unsetenv("OPWEAVE_CGROUP_ROOT");
  unsetenv("OPWEAVE_PROC_SELF_CGROUP");
}

OPWEAVE_TEST(a_device_a_fifo_or_a_directory_in_place_of_a_cgroup_file_is_ignored_with_a_reason) {
  FakeTree t;
  const std::string fifo = t.root() + "/fifo";
  OPWEAVE_CHECK_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // /dev/zero never ends and a FIFO without a writer blocks on open: neither may be read.
  for (const std::string& path : {std::string("/dev/zero"), fifo, t.root()}) {
    std::string error;
    OPWEAVE_CHECK_EQ(cgroup_quota_cpus(t.root(), path, &error), 0.0);
    OPWEAVE_CHECK(error == path + " is not a regular file; ignored");
  }
}

OPWEAVE_TEST(a_cgroup_file_over_64_kib_is_not_read_past_the_cap) {
  FakeTree t;
  t.file("cpu.max", "50000 100000\n");
  t.self("0::/" + std::string(70 * 1024, 'a') + "\n");
  std::string error;
  // The root's quota is still found; the oversized self file is reported.
  OPWEAVE_CHECK(near(cgroup_quota_cpus(t.root(), t.self_path(), &error), 0.5));
  OPWEAVE_CHECK(error == t.self_path() + " is larger than 64 KiB; ignored");
  t.file("cpu.max", std::string(65 * 1024, '1'));
  t.self("0::/\n");
  error.clear();
  OPWEAVE_CHECK_EQ(cgroup_quota_cpus(t.root(), t.self_path(), &error), 0.0);
  OPWEAVE_CHECK(error == t.root() + "/cpu.max is larger than 64 KiB; ignored");
}

OPWEAVE_TEST_MAIN()
