// Every SQLite connection of the server reads the database file through a memory map (issue 31).
// Linux drops file pages that no process maps first when they sit in the page cache unused: under
// memory pressure, and on the virtual machines measured all the time, where the kernel's DAMON
// pages out unmapped file cache idle for a minute (/sys/kernel/mm/damon/admin: a `pageout` scheme
// that spares anonymous and mapped pages), about 30 MB a minute. A read that then missed SQLite's
// own cache went to the disk on the event loop: under 20,000 osquery-perf hosts `perf trace` saw
// 4 KiB reads of main.db take 114-334 ms on the loop's thread, while every agent waited. Read
// through a map, a page stays in memory once touched, and a read costs no system call.
// Writes still go through pwrite (this build of SQLite has no SQLITE_MMAP_READWRITE), so a write
// that fails, a full disk, stays an error code and never becomes a signal from a mapped page.

/** PRAGMA mmap_size: the whole file up to 2 GiB (the build's limit, SQLITE_MAX_MMAP_SIZE, caps it). */
export const SQLITE_MMAP_BYTES = 2 * 1024 * 1024 * 1024;
