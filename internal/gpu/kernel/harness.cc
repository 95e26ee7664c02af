// harness.cc runs sign.cu's kernel on the CPU for the Go test
// TestKernelOnHost (g++ -O2 -o harness harness.cc). It reads one batch on
// standard input, little-endian:
//
//	u32 method, unit, n, k; u64 seed, key, probe; u32 numDocs;
//	u32 off[numDocs+1]; u8 text[off[numDocs]]; u64 a[k], b[k] (method 1)
//
// and writes u32 status[numDocs], then u32 sig[numDocs*k] (methods 0, 1)
// or u64 fp[numDocs*2] (methods 2, 3), then u32 count[numDocs] and each
// document's count[d] shingle hashes (u64).
#define NEARDUP_HOST 1
#include "sign.cu"

#include <stdio.h>
#include <stdlib.h>

static void must(size_t got, size_t want) {
  if (got != want) {
    fprintf(stderr, "harness: short read\n");
    exit(1);
  }
}

int main(void) {
  u32 hdr[4];
  u64 seeds[3];
  u32 nd;
  must(fread(hdr, 4, 4, stdin), 4);
  must(fread(seeds, 8, 3, stdin), 3);
  must(fread(&nd, 4, 1, stdin), 1);
  u32 *off = (u32 *)malloc(4 * (nd + 1));
  must(fread(off, 4, nd + 1, stdin), nd + 1);
  u32 total = off[nd];
  u8 *text = (u8 *)malloc(total + 1);
  must(fread(text, 1, total, stdin), total);
  struct Params P = {};
  P.text = text;
  P.off = off;
  P.numDocs = nd;
  P.method = hdr[0];
  P.unit = hdr[1];
  P.n = hdr[2];
  P.k = hdr[3];
  P.seed = seeds[0];
  P.key = seeds[1];
  P.probe = seeds[2];
  u64 *a = (u64 *)calloc(P.k + 1, 8), *b = (u64 *)calloc(P.k + 1, 8);
  if (P.method == M_MS) {
    must(fread(a, 8, P.k, stdin), P.k);
    must(fread(b, 8, P.k, stdin), P.k);
  }
  P.a = a;
  P.b = b;
  P.status = (u32 *)calloc(nd + 1, 4);
  P.sig = (u32 *)calloc((size_t)nd * P.k + 1, 4);
  P.fp = (u64 *)calloc(2 * (size_t)nd + 1, 8);
  P.bounds = (u32 *)calloc((size_t)total + nd + 1, 4);
  P.hashes = (u64 *)calloc((size_t)total + nd + 1, 8);
  P.filled = (u32 *)calloc((size_t)nd * ((P.k + 31) / 32) + 1, 4);
  P.count = (u32 *)calloc(nd + 1, 4);
  sign_host(&P);
  fwrite(P.status, 4, nd, stdout);
  if (P.method <= M_MS)
    fwrite(P.sig, 4, (size_t)nd * P.k, stdout);
  else
    fwrite(P.fp, 8, 2 * (size_t)nd, stdout);
  fwrite(P.count, 4, nd, stdout);
  for (u32 d = 0; d < nd; d++) fwrite(P.hashes + off[d] + d, 8, P.count[d], stdout);
  return 0;
}
