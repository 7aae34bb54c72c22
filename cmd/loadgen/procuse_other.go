//go:build !unix

package main

import "time"

// processCPU is zero where the platform has no getrusage: the reports
// then leave the CPU figures out.
func processCPU() time.Duration { return 0 }
