// Command capi is the C interface of neardup for the Python binding
// (python/neardup): built with -buildmode=c-shared into
// libneardup.so, which the Python package loads with ctypes.
//
// The layer is thin: each exported function takes and returns plain C
// values (integers, pointers to buffers the caller owns, NUL-terminated
// strings) and calls the library: dedup.Run with the command line's flag
// parsing (cli.DedupConfig), minhash.Hasher and lsh.Index. Conventions:
//
//   - Nothing panics across the boundary: every export recovers and turns
//     a panic into an error.
//   - An error is returned as a C string in *err (or as the result where
//     the function returns a string); the caller frees it with nd_free.
//     Strings returned are malloc'd and freed by the caller with nd_free;
//     buffers passed in are only read (or written, where documented)
//     during the call and never kept.
//   - Stateful objects (a dedup run, an LSH index) are handles: int64 keys
//     of a table, freed by their *_free function; a handle already freed
//     is an error, never a crash.
//
// Hash values: MinHash signatures use the multiply-shift family of
// package minhash over the xxh3 hashes of the byte strings given, so they
// differ from datasketch's (SHA-1 and a*x+b mod p); the estimator and its
// variance are the same.
package main
