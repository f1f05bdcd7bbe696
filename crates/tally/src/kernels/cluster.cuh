// Cluster-level pieces (sm_90+): the blocks of a thread-block cluster share their shared memory,
// so one histogram can be spread over it and updated with remote shared-memory atomics. The
// addresses are 32-bit shared-window addresses; `cluster_map` turns one of this block's into
// the same offset in block `rank` of the cluster.
#pragma once
#include "common.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
TALLY_DEVICE u32 cluster_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// Every thread of every block of the cluster arrives before any proceeds. Release/acquire: the
// remote atomics issued before it are visible to every block after it.
TALLY_DEVICE void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

TALLY_DEVICE u32 shared_address(const void* p) { return (u32)__cvta_generic_to_shared(p); }

TALLY_DEVICE u32 cluster_map(u32 address, u32 rank) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(address), "r"(rank));
  return remote;
}

// Atomic add on a (possibly remote) cluster shared address; returns the old value.
TALLY_DEVICE u32 cluster_atomic_add(u32 address, u32 v) {
  u32 old;
  asm volatile("atom.shared::cluster.add.u32 %0, [%1], %2;" : "=r"(old) : "r"(address), "r"(v) : "memory");
  return old;
}

// The same without a result: the issuing thread need not wait for the round trip.
TALLY_DEVICE void cluster_red_add(u32 address, u32 v) {
  asm volatile("red.shared::cluster.add.u32 [%0], %1;" ::"r"(address), "r"(v) : "memory");
}
#endif
