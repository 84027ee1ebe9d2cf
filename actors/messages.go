package actors

import "fmt"

// Stage is one step of a partition's proof.
type Stage uint8

// The stages of one partition, in order. Stage and Compute run on a device
// (under the lock design); the others run on the CPU.
const (
	StageSynthesize Stage = iota + 1
	StagePrep
	StageStage
	StageCompute
	StageBG2
	StageFinalize
)

var stageNames = [...]string{"", "synthesize", "prep", "stage", "compute", "b_g2", "finalize"}

func (s Stage) String() string {
	if int(s) < len(stageNames) && s > 0 {
		return stageNames[s]
	}
	return fmt.Sprintf("stage(%d)", uint8(s))
}

// PartitionID names one partition of one job.
type PartitionID struct {
	Job       string
	Partition int
}

func (p PartitionID) String() string { return fmt.Sprintf("%s/%d", p.Job, p.Partition) }
