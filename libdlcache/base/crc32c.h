/* SPDX-License-Identifier: MIT */
/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as iSCSI (RFC
 * 3720), ext4 and btrfs use it: the checksum the index records for each
 * sample. The value is the standard one (initial ~0, final xor ~0), so
 * crc32c("123456789") is 0xE3069283, and it chains: pass the result of
 * one call as @crc of the next to checksum a buffer in pieces; start
 * with 0.
 */
#ifndef DLC_CRC32C_H
#define DLC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* The fastest implementation this CPU has (SSE4.2 when present). */
uint32_t dlc_crc32c(uint32_t crc, const void *buf, size_t len);

/* Portable: slicing-by-8 tables. */
uint32_t dlc_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/*
 * The SSE4.2 crc32 instruction. Call only when dlc_crc32c_hw_available();
 * on other architectures it is the portable one.
 */
uint32_t dlc_crc32c_hw(uint32_t crc, const void *buf, size_t len);
int dlc_crc32c_hw_available(void);

#endif /* DLC_CRC32C_H */
