package service

import (
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/cuzk/cuzk/actors"
	cuzkv1 "github.com/cuzk/cuzk/gen/cuzk/v1"
	"github.com/cuzk/cuzk/runner"
)

var jobStates = map[string]cuzkv1.JobState{
	runner.StateRunning:    cuzkv1.JobState_JOB_STATE_RUNNING,
	runner.StateDone:       cuzkv1.JobState_JOB_STATE_DONE,
	runner.StateFailed:     cuzkv1.JobState_JOB_STATE_FAILED,
	runner.StateUnfinished: cuzkv1.JobState_JOB_STATE_UNFINISHED,
	runner.StateCancelled:  cuzkv1.JobState_JOB_STATE_CANCELLED,
}

func priorityOf(s string) cuzkv1.Priority {
	p, err := actors.ParsePriority(s)
	if err != nil {
		return cuzkv1.Priority_PRIORITY_UNSPECIFIED
	}
	return cuzkv1.Priority(int(p) + 1)
}

// jobStatus converts a runner status; withParts adds the partitions.
func jobStatus(js runner.JobStatus, withParts bool) *cuzkv1.JobStatus {
	out := &cuzkv1.JobStatus{JobId: js.ID, Circuit: js.Circuit, Constraints: uint64(max(js.Constraints, 0)),
		KeyHash: js.KeyHash, Priority: priorityOf(js.Priority), NumPartitions: uint32(js.NumPartitions),
		State: jobStates[strings.ToLower(js.State)], Proved: uint32(js.Proved), Failed: uint32(js.Failed),
		Pending: uint32(max(js.Pending, 0)), InFlight: uint32(js.InFlight), Attempts: uint32(js.Attempts),
		Error: js.Error}
	if !js.Created.IsZero() {
		out.Created = timestamppb.New(js.Created)
	}
	if !withParts {
		return out
	}
	for _, p := range js.Partitions {
		ps := &cuzkv1.PartitionStatus{Index: uint32(p.Index), State: p.State, Attempts: uint32(p.Attempts),
			LastError: p.LastError, StagesMs: p.StagesMS}
		if p.Running != nil {
			ps.Running, ps.Stage, ps.Device, ps.Worker = true, p.Running.Stage, int32(p.Running.Device), int32(p.Running.Worker)
			ps.Member = p.Running.Member
		} else if p.Ran != nil && p.Ran.Member != "" {
			// In a cluster: where it ran, on which member.
			ps.Device, ps.Worker, ps.Member = int32(p.Ran.Device), int32(p.Ran.Worker), p.Ran.Member
		}
		out.Partitions = append(out.Partitions, ps)
	}
	return out
}
