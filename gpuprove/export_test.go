package gpuprove

// StagedAlone is how many whole-layout partitions b staged with a alone,
// leaving the rest to Compute's copies ahead.
func StagedAlone(b *Backend) int64 { return b.stagedAlone.Load() }
