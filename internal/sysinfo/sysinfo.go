// Package sysinfo reads what neardup needs to know of the machine: its
// physical memory (for the default memory budgets of dedup and serve) and
// the process's CPU time (for the run summary and bench). Each function
// returns 0 where the system does not say; callers then fall back to a
// stated default. Every supported system builds (linux, darwin, windows on
// amd64 and arm64: scripts/cross).
package sysinfo
