// A Redis Cluster's key routing (remote_cluster.cpp), as its specification
// defines it: exposed for the tests, which compare it with a server's own
// CLUSTER KEYSLOT.
#pragma once

#include <cstdint>
#include <string>

namespace hotlink::cache {

constexpr unsigned kClusterSlots = 16384;

// CRC-16/XMODEM, the cluster's key hash.
std::uint16_t cluster_crc16(const std::string &s);
// The slot of a key: the CRC16 of its hash tag ("{...}", when not empty),
// else of the whole key, modulo 16384.
unsigned cluster_slot(const std::string &key);

} // namespace hotlink::cache
