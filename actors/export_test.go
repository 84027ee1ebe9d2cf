package actors

// SetWorkerHook sets (nil: clears) a function every worker runs at the start
// of each message it handles, for tests that inject panics into Receive.
func SetWorkerHook(h *func(device, worker int, p *PartitionID, msg any)) { testHookWorker.Store(h) }

// LeaseGrantedFor returns the lock a lease grant message is for.
func LeaseGrantedFor(msg any) (string, bool) {
	g, ok := msg.(leaseGranted)
	return g.lock, ok
}
