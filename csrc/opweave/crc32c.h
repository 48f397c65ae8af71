// CRC-32C (Castagnoli, the checksum of iSCSI, ext4 metadata and TensorFlow's checkpoints): the
// per-tensor checksum of opweave's checkpoint files (docs/checkpoint_format.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace opweave {

// The CRC-32C of data[0, n) continued from `crc` (the CRC of the bytes before; 0 to start), so
// crc32c(crc32c(0, a, na), b, nb) is the CRC of a followed by b. Uses the SSE4.2 CRC32
// instruction when the CPU has it (about 8 bytes per 3 cycles), a table-driven loop (slicing by
// 8) otherwise; both give the same value. Thread-safe; no allocation.
//   crc32c(0, "123456789", 9) == 0xE3069283
std::uint32_t crc32c(std::uint32_t crc, const void* data, std::size_t n) noexcept;

// The table-driven loop alone (what CPUs without SSE4.2 run), for tests.
std::uint32_t crc32c_portable(std::uint32_t crc, const void* data, std::size_t n) noexcept;

// True when crc32c() uses the CRC32 instruction on this CPU.
bool crc32c_uses_hardware() noexcept;

}  // namespace opweave
