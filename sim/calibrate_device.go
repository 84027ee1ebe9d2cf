package sim

import (
	"encoding/json"
	"fmt"
	"math"
)

// DeviceFit is one device or partition figure a trace gave.
type DeviceFit struct {
	Field string  // the profile's JSON field, e.g. "device.h2d_gbps"
	Count int     // the trace events it came from
	Value float64 // in the field's unit
}

// CalibrateDevice returns a copy of p with what a production trace of
// partitions of the given size says of the device and the partition: the
// host→device bandwidth (bytes over time of the synchronous copy_in ops),
// the device memory a partition holds (its allocation) and how much of it
// staging copies. Figures the trace has no ops for keep p's values; fits
// lists the ones it set. The trace may come from any number of workers, but
// the bandwidth is a solo one only with one worker (copies share the bus).
func CalibrateDevice(p *Profile, traceJSON []byte, constraints int, name string) (*Profile, []DeviceFit, error) {
	if constraints <= 0 {
		return nil, nil, fmt.Errorf("calibrate: partition size %d: must be positive", constraints)
	}
	var tr struct {
		TraceEvents []struct {
			Name string         `json:"name"`
			Ph   string         `json:"ph"`
			Args map[string]any `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(traceJSON, &tr); err != nil {
		return nil, nil, fmt.Errorf("calibrate: trace %s: %w", name, err)
	}
	var copyBytes, copyUs float64
	var copies, allocs int
	var allocBytes, copiedBytes float64
	for _, e := range tr.TraceEvents {
		if e.Ph != "i" {
			continue
		}
		bytes, _ := e.Args["bytes"].(float64)
		if errText, _ := e.Args["error"].(string); errText != "" || bytes <= 0 {
			continue
		}
		switch e.Name {
		case "copy_in":
			took, _ := e.Args["took_us"].(float64)
			if took > 0 {
				copyBytes += bytes
				copyUs += took
			}
			copiedBytes = math.Max(copiedBytes, bytes)
			copies++
		case "malloc", "malloc_async":
			allocBytes = math.Max(allocBytes, bytes)
			allocs++
		}
	}
	out := *p
	var fits []DeviceFit
	if copyUs > 0 {
		out.Device.H2DGBps = round(copyBytes/copyUs/1e3, 2)
		fits = append(fits, DeviceFit{"device.h2d_gbps", copies, out.Device.H2DGBps})
	}
	// The partition's figures are given at the reference size, which
	// Calibrate sets to the trace's size.
	scale := math.Pow(float64(p.ReferenceConstraints)/float64(constraints), p.Partition.Exponent)
	if p.Partition.Exponent == 0 {
		scale = float64(p.ReferenceConstraints) / float64(constraints)
	}
	if allocs > 0 {
		out.Partition.VRAMGiB = round(allocBytes/float64(gib)*scale, 4)
		fits = append(fits, DeviceFit{"partition.vram_gib", allocs, out.Partition.VRAMGiB})
		if copies > 0 && copiedBytes < allocBytes {
			out.Partition.CopyGiB = round(copiedBytes/float64(gib)*scale, 4)
			fits = append(fits, DeviceFit{"partition.copy_gib", copies, out.Partition.CopyGiB})
		} else {
			out.Partition.CopyGiB = 0
		}
	}
	if err := out.validate(); err != nil {
		return nil, nil, fmt.Errorf("calibrate: %w", err)
	}
	return &out, fits, nil
}
