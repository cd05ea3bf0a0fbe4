#pragma once
// How the process's allocator hands memory back to the system.

namespace apollo11 {

// Fixes glibc's mmap threshold at its starting value, 128 KiB, and its trim
// threshold at 4 MiB (glibc starts it at 128 KiB). Left dynamic, glibc
// raises the mmap threshold to the size of each large block freed (up to 32
// MiB) and the trim threshold to twice that: after a large run's snapshot
// text and task list were freed, blocks up to 32 MiB came from the arenas
// and stayed there as RSS once freed. An embedded 100k-task run peaked at 168 MB with the dynamic
// thresholds and at 132.5 MB with fixed ones (docs/PERFORMANCE.md). Call at
// the start of main, before other threads exist. No-op off glibc.
void FixMallocThresholds();

}  // namespace apollo11
