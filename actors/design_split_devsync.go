package actors

// splitDevsync is cuzk's Phase 10 second attempt, in cuzk's order: under
// mem_mtx the device is synchronized and the pool trimmed *before*
// pre-staging, so that every free is observed and returned first; the
// fallback allocation stays under compute_mtx.
//
//	lock mem → DeviceSync → TrimPool(0) → MemInfo → MallocAsync → CopyIn → unlock mem
//	lock compute → launch → FreeAsync → StreamSync → unlock compute
//
//	on too little free under mem:
//	unlock mem → lock compute → MallocAsync → CopyIn → launch → FreeAsync → StreamSync → unlock compute
//
// The hazard it walked into, step by step:
//  1. Worker A holds compute_mtx; its kernel runs for ~1.8 s.
//  2. Worker B takes mem_mtx and calls DeviceSync, to make A's pending
//     free observable so that the trim can return it.
//  3. DeviceSync is device-global: it returns only when A's kernel is done.
//  4. So B holds mem_mtx for as long as A computes, its copy cannot overlap
//     A's kernel, and worker C, which only wants to pre-stage, waits behind
//     B: the two locks are serialized again.
//
// Nothing here names that outcome: it follows from the device's DeviceSync
// semantics (emulated device, simulator model, or the real GPU).
var splitDevsync = splitVariant{deviceSync: true}
