package actors

// splitFirst is cuzk's Phase 10 as first written: the gpu lock split into
// mem_mtx (allocation and pre-staging) and compute_mtx (kernels), a pool
// trim without any synchronization before pre-staging, and a fallback under
// compute_mtx that asks cudaMemGetInfo again, without a trim.
//
//	lock mem → TrimPool(0) → MemInfo → MallocAsync → CopyIn → unlock mem
//	lock compute → launch → FreeAsync → StreamSync → unlock compute
//
//	on too little free under mem:
//	unlock mem → lock compute → MemInfo → MallocAsync → CopyIn → launch → FreeAsync → StreamSync → unlock compute
//
// What it met on a 16 GiB card with 12 GiB partitions, step by step:
//  1. A holds compute_mtx; its kernel runs, and the cudaFreeAsync of its
//     12 GiB is enqueued behind the kernel: pending.
//  2. B takes mem_mtx and trims the pool: a pending free cannot be
//     released, so cudaMemGetInfo finds ~4 GiB free. B falls back.
//  3. A's stream sync returns: its free is observed, and the block stays
//     cached in the pool (the release threshold keeps everything).
//  4. B takes compute_mtx and asks cudaMemGetInfo again: the cached block
//     is not free memory, and nothing trimmed it. B runs out of memory
//     there too; the attempt fails and the partition is retried, until its
//     attempts are spent.
var splitFirst = splitVariant{fallbackCheck: true}
