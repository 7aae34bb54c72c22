package main

import (
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"time"
)

// resources is what this process had used at one moment: its CPU time as the
// kernel counts it, and the Go runtime's own accounting of its CPU and of
// the collector. With the embedded target the process is the load
// generator, the NATS server and the processors together; against a URL,
// the load generator alone.
type resources struct {
	at time.Time
	// cpu is user and system time (getrusage); zero where the platform
	// has none.
	cpu time.Duration
	// goBusy and gcCPU are the runtime's estimates, in CPU seconds, of
	// the time its Ps were not idle and of the collector's share of it
	// (runtime/metrics' /cpu/classes); gcCycles counts completed cycles.
	goBusy, gcCPU float64
	gcCycles      uint64
}

var usageMetrics = []string{"/cpu/classes/total:cpu-seconds", "/cpu/classes/idle:cpu-seconds", "/cpu/classes/gc/total:cpu-seconds", "/gc/cycles/total:gc-cycles"}

func readResources() resources {
	s := make([]metrics.Sample, len(usageMetrics))
	for i, name := range usageMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	value := func(i int) float64 {
		if s[i].Value.Kind() == metrics.KindFloat64 {
			return s[i].Value.Float64()
		}
		return 0
	}
	u := resources{at: time.Now(), cpu: processCPU(), goBusy: value(0) - value(1), gcCPU: value(2)}
	if s[3].Value.Kind() == metrics.KindUint64 {
		u.gcCycles = s[3].Value.Uint64()
	}
	return u
}

// processUse is what the process used between two readings: it tells
// whether a run was bound by the machine (CPU busy), how much CPU each
// envelope cost, and how much of it the collector took.
type processUse struct {
	// CPUBusy is the process's CPU time over the wall time and the
	// machine's cores (runtime.NumCPU): 1 is every core busy.
	CPUBusy float64 `json:"cpu_busy,omitempty"`
	// CPUMicrosPer is the process's CPU time per decided envelope (or
	// synchronous call), in microseconds.
	CPUMicrosPer float64 `json:"cpu_us_per_envelope,omitempty"`
	// GCCycles is the collector's completed cycles; GCShare its share of
	// the CPU the Go runtime accounted busy.
	GCCycles uint64  `json:"gc_cycles"`
	GCShare  float64 `json:"gc_cpu_share"`
}

// use reports what the process used from from to to, per one of n.
func use(from, to resources, n float64) processUse {
	var p processUse
	wall := to.at.Sub(from.at).Seconds()
	if cpu := (to.cpu - from.cpu).Seconds(); cpu > 0 && wall > 0 && n > 0 {
		p.CPUBusy = round(cpu/(wall*float64(runtime.NumCPU())), 3)
		p.CPUMicrosPer = round(cpu/n*1e6, 1)
	}
	p.GCCycles = to.gcCycles - from.gcCycles
	if busy := to.goBusy - from.goBusy; busy > 0 {
		p.GCShare = round((to.gcCPU-from.gcCPU)/busy, 3)
	}
	return p
}

func round(v float64, places int) float64 {
	f := math.Pow10(places)
	return math.Round(v*f) / f
}

// String says it in a line: "CPU 76.0 % of 2 cores busy, 163 µs per
// envelope; collector 31 cycles, 12.0 % of the CPU".
func (p processUse) String() string {
	cpu := "CPU not measured on this platform"
	if p.CPUBusy > 0 {
		cpu = fmt.Sprintf("CPU %.1f %% of %d cores busy, %.0f µs per envelope", p.CPUBusy*100, runtime.NumCPU(), p.CPUMicrosPer)
	}
	return fmt.Sprintf("%s; collector %d cycles, %.1f %% of the CPU", cpu, p.GCCycles, p.GCShare*100)
}
