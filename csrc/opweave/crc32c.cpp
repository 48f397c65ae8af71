#include "opweave/crc32c.h"

#if defined(OPWEAVE_X86_64) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <nmmintrin.h>
#define OPWEAVE_CRC32C_SSE42 1
#endif

#include <array>
#include <cstring>

namespace opweave {
namespace {

constexpr std::uint32_t kPoly = 0x82F63B78u;  // Castagnoli's polynomial, bit-reflected

// tables[k][b]: the CRC of byte b followed by k zero bytes; slicing by 8 folds 8 bytes per step.
using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr Tables make_tables() {
  Tables t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t c = b;
    for (int i = 0; i < 8; ++i) c = (c & 1u) != 0 ? (c >> 1) ^ kPoly : c >> 1;
    t[0][b] = c;
  }
  for (std::size_t k = 1; k < 8; ++k) {
    for (std::size_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFFu];
  }
  return t;
}

constexpr Tables kTables = make_tables();

std::uint32_t extend_portable(std::uint32_t c, const unsigned char* p, std::size_t n) noexcept {
  while (n >= 8) {
    // Bytes are combined explicitly, so the loop gives the same CRC on any byte order.
    const std::uint32_t lo = c ^ (std::uint32_t{p[0]} | std::uint32_t{p[1]} << 8 |
                                  std::uint32_t{p[2]} << 16 | std::uint32_t{p[3]} << 24);
    c = kTables[7][lo & 0xFFu] ^ kTables[6][(lo >> 8) & 0xFFu] ^ kTables[5][(lo >> 16) & 0xFFu] ^
        kTables[4][lo >> 24] ^ kTables[3][p[4]] ^ kTables[2][p[5]] ^ kTables[1][p[6]] ^
        kTables[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = (c >> 8) ^ kTables[0][(c ^ *p++) & 0xFFu];
  return c;
}

#ifdef OPWEAVE_CRC32C_SSE42
// Compiled for SSE4.2 by attribute rather than by a file-wide flag, so the rest of this file stays
// baseline x86-64; it runs only when cpuid says the CPU has SSE4.2 (kHardware).
__attribute__((target("sse4.2,crc32"))) std::uint32_t extend_sse42(std::uint32_t c,
                                                                   const unsigned char* p,
                                                                   std::size_t n) noexcept {
  std::uint64_t c64 = c;
  while (n >= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);  // unaligned load; x86 is little-endian, as the CRC expects
    c64 = _mm_crc32_u64(c64, word);
    p += 8;
    n -= 8;
  }
  c = static_cast<std::uint32_t>(c64);
  while (n-- > 0) c = _mm_crc32_u8(c, *p++);
  return c;
}

bool cpu_has_sse42() noexcept {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return false;
  return ((ecx >> 20) & 1u) != 0;  // CPUID.(EAX=1):ECX.SSE4_2
}

// Read once at load time (a CPU does not lose SSE4.2), so each call only branches.
const bool kHardware = cpu_has_sse42();
#else
constexpr bool kHardware = false;
#endif

}  // namespace

std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t n) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
#ifdef OPWEAVE_CRC32C_SSE42
  if (kHardware) return ~extend_sse42(~crc, p, n);
#endif
  return ~extend_portable(~crc, p, n);
}

std::uint32_t crc32c_portable(std::uint32_t crc, const void* data, std::size_t n) noexcept {
  return ~extend_portable(~crc, static_cast<const unsigned char*>(data), n);
}

bool crc32c_uses_hardware() noexcept { return kHardware; }

}  // namespace opweave
