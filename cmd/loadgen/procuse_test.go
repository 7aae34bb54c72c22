package main

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestUse(t *testing.T) {
	at := time.Unix(1000, 0)
	cores := float64(runtime.NumCPU())
	from := resources{at: at, cpu: time.Second, goBusy: 10, gcCPU: 1, gcCycles: 7}
	for _, tc := range []struct {
		name string
		to   resources
		n    float64
		want processUse
	}{
		{"busy", resources{at: at.Add(2 * time.Second), cpu: 3 * time.Second, goBusy: 14, gcCPU: 1.5, gcCycles: 10}, 1000,
			processUse{CPUBusy: round(2/(2*cores), 3), CPUMicrosPer: 2000, GCCycles: 3, GCShare: 0.125}},
		{"no CPU reading", resources{at: at.Add(time.Second), goBusy: 10, gcCPU: 1, gcCycles: 7}, 10,
			processUse{}},
		{"nothing decided", resources{at: at.Add(time.Second), cpu: 2 * time.Second, goBusy: 12, gcCPU: 1, gcCycles: 8}, 0,
			processUse{GCCycles: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := use(from, tc.to, tc.n); got != tc.want {
				t.Fatalf("use = %+v, want %+v", got, tc.want)
			}
		})
	}
	if s := (processUse{}).String(); !strings.Contains(s, "not measured") {
		t.Fatalf("without a CPU reading: %q", s)
	}
	if r := readResources(); r.gcCycles == 0 && r.goBusy <= 0 {
		t.Fatalf("nothing read of the runtime: %+v", r)
	}
}
