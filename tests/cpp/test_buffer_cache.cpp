#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "opweave/buffer_cache.h"
#include "opweave/sanitizers.h"
#include "opweave/tensor.h"
#include "testing.h"

using namespace opweave;

namespace {
constexpr std::size_t kKiB = 1024;
constexpr std::size_t kMiB = 1024 * 1024;
}  // namespace

OPWEAVE_TEST(size_classes_cover_the_request_waste_at_most_an_eighth_and_are_stable) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100000; ++i) {
    const std::size_t bytes = kMinCachedBytes + rng() % (std::size_t{1} << (17 + i % 20));
    const std::size_t size_class = buffer_size_class(bytes);
    OPWEAVE_CHECK(size_class >= bytes);
    OPWEAVE_CHECK(size_class - bytes <= bytes / 8);
    OPWEAVE_CHECK_EQ(size_class % 64, std::size_t{0});
    OPWEAVE_CHECK_EQ(buffer_size_class(size_class), size_class);
    OPWEAVE_CHECK(buffer_size_class(bytes + 1) >= size_class);
  }
}

OPWEAVE_TEST(the_cache_is_off_under_address_sanitizer_and_on_otherwise) {
  const BufferCacheInfo info = buffer_cache_info();
  if (kAddressSanitizer) {
    OPWEAVE_CHECK_EQ(info.cap_bytes, std::size_t{0});
  } else {
    OPWEAVE_CHECK_EQ(info.cap_bytes, kDefaultCapBytes);  // ctest runs without the variable
    OPWEAVE_CHECK(info.cap_source == "default");
  }
}

OPWEAVE_TEST(a_freed_buffer_serves_the_next_request_of_its_size_class) {
  if (kAddressSanitizer) return;  // off by design (previous test)
  empty_buffer_cache();
  void* a = allocate_buffer(300 * kKiB);
  std::memset(a, 1, 300 * kKiB);
  release_buffer(a, 300 * kKiB);
  OPWEAVE_CHECK_EQ(buffer_cache_info().held_bytes, buffer_size_class(300 * kKiB));
  const std::size_t hits = buffer_cache_info().hits;
  void* b = allocate_buffer(300 * kKiB + 100);  // same class
  OPWEAVE_CHECK(b == a);
  OPWEAVE_CHECK_EQ(buffer_cache_info().hits, hits + 1);
  OPWEAVE_CHECK_EQ(buffer_cache_info().held_bytes, std::size_t{0});
  void* c = allocate_buffer(600 * kKiB);  // another class: a fresh block
  OPWEAVE_CHECK(c != b);
  release_buffer(b, 300 * kKiB + 100);
  release_buffer(c, 600 * kKiB);
  OPWEAVE_CHECK_EQ(empty_buffer_cache(),
                   buffer_size_class(300 * kKiB) + buffer_size_class(600 * kKiB));
  OPWEAVE_CHECK_EQ(buffer_cache_info().held_bytes, std::size_t{0});
}

OPWEAVE_TEST(small_buffers_bypass_the_cache_and_blocks_are_64_byte_aligned) {
  empty_buffer_cache();
  for (std::size_t bytes :
       {std::size_t{65}, std::size_t{4096}, kMinCachedBytes - 1, kMinCachedBytes, 3 * kMiB + 7}) {
    void* p = allocate_buffer(bytes);
    OPWEAVE_CHECK(p != nullptr);
    OPWEAVE_CHECK_EQ(reinterpret_cast<std::uintptr_t>(p) % 64, std::uintptr_t{0});
    std::memset(p, 0xCD, bytes);
    release_buffer(p, bytes);
  }
  const std::size_t expected =
      kAddressSanitizer ? 0 : buffer_size_class(kMinCachedBytes) + buffer_size_class(3 * kMiB + 7);
  OPWEAVE_CHECK_EQ(buffer_cache_info().held_bytes, expected);
  empty_buffer_cache();
}

OPWEAVE_TEST(blocks_of_4_mib_and_more_start_on_huge_page_boundaries) {
  // So the kernel can back them with 2 MiB pages (they are offered as NumPy offers its arrays).
  for (const std::size_t bytes : {4 * kMiB, 5 * kMiB + 3, 300 * kMiB}) {
    void* p = allocate_buffer(bytes);
    OPWEAVE_CHECK(p != nullptr);
    OPWEAVE_CHECK_EQ(reinterpret_cast<std::uintptr_t>(p) % (2 * kMiB), std::uintptr_t{0});
    std::memset(p, 1, bytes);  // the whole request is usable
    release_buffer(p, bytes);
  }
  empty_buffer_cache();
}

OPWEAVE_TEST(the_cache_never_holds_more_than_its_cap) {
  empty_buffer_cache();
  // Blocks this big are mapped, not touched: 320 MiB of them cost no RSS.
  std::vector<void*> blocks;
  for (int i = 0; i < 5; ++i) blocks.push_back(allocate_buffer(64 * kMiB));
  for (void* p : blocks) release_buffer(p, 64 * kMiB);
  const BufferCacheInfo info = buffer_cache_info();
  OPWEAVE_CHECK(info.held_bytes <= info.cap_bytes);
  if (!kAddressSanitizer) OPWEAVE_CHECK_EQ(info.held_bytes, 4 * 64 * kMiB);  // 256 MiB cap
  // Larger than the whole cap: never cached.
  void* huge = allocate_buffer(kDefaultCapBytes + 1);
  OPWEAVE_CHECK(huge != nullptr);
  empty_buffer_cache();
  release_buffer(huge, kDefaultCapBytes + 1);
  OPWEAVE_CHECK_EQ(buffer_cache_info().held_bytes, std::size_t{0});
}

OPWEAVE_TEST(tensors_reuse_their_buffers_across_allocations) {
  empty_buffer_cache();
  const void* first = nullptr;
  {
    Tensor t = Tensor::empty(DType::kFloat32, Shape{256, 512});
    first = t.raw_data();
  }
  Tensor again = Tensor::empty(DType::kFloat32, Shape{512, 256});
  OPWEAVE_CHECK_EQ(again.raw_data() == first, !kAddressSanitizer);
}

OPWEAVE_TEST(threads_racing_on_the_cache_never_share_a_live_block) {
  // Each thread allocates blocks of a few sizes, stamps them with its id, checks the stamp is
  // intact before it frees them: two live blocks sharing memory would overwrite a stamp.
  empty_buffer_cache();
  const std::size_t sizes[] = {kMinCachedBytes, 70 * kKiB, 300 * kKiB, 1 * kMiB};
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  for (int id = 1; id <= 4; ++id) {
    threads.emplace_back([&, id] {
      std::mt19937 rng(static_cast<unsigned>(id));
      std::vector<std::pair<unsigned char*, std::size_t>> live;
      for (int i = 0; i < 20000; ++i) {
        if (live.size() < 8 && (live.empty() || rng() % 2 == 0)) {
          const std::size_t bytes = sizes[rng() % 4];
          auto* p = static_cast<unsigned char*>(allocate_buffer(bytes));
          p[0] = p[bytes - 1] = static_cast<unsigned char>(id);
          live.emplace_back(p, bytes);
        } else {
          const std::size_t k = rng() % live.size();
          auto [p, bytes] = live[k];
          if (p[0] != id || p[bytes - 1] != id) corrupted.fetch_add(1);
          release_buffer(p, bytes);
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        }
      }
      for (auto [p, bytes] : live) release_buffer(p, bytes);
    });
  }
  for (std::thread& t : threads) t.join();
  OPWEAVE_CHECK_EQ(corrupted.load(), 0);
  const BufferCacheInfo info = buffer_cache_info();
  OPWEAVE_CHECK(info.held_bytes <= info.cap_bytes);
  empty_buffer_cache();
}

OPWEAVE_TEST_MAIN()
