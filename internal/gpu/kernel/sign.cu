// sign.cu: neardup's shingle hashing, MinHash (one permutation hashing with
// optimal densification, multiply-shift) and SimHash (set and count
// weights) for NVIDIA GPUs, bit for bit what the Go packages shingle,
// minhash and simhash compute on the CPU.
//
// One warp signs one document. The kernel is written as a sequence of
// phases separated by __syncwarp(): a phase is a function of the lane
// only, and everything that lives from one phase to the next is in the
// warp's shared state or in global memory. So the same source compiles as
// plain C++ (NEARDUP_HOST, scripts/gen-ptx and the Go test
// TestKernelOnHost), where the 32 lanes of each phase run one after the
// other: that proves the arithmetic on any machine; the device run proves
// it on the GPU.
//
// Inputs: the documents' normalised texts, ASCII only (the host routes
// every other document to the CPU), concatenated in text, document d being
// text[off[d]:off[d+1]]. Outputs: per document a status (ST_OK, ST_EMPTY:
// no token, ST_FALLBACK: a shingle longer than 240 bytes, or more than
// MAXSET shingles under SimHash set weights, which the host signs on the
// CPU) and its signature (K slots) or fingerprint (lo, hi).
//
// Regenerate the PTX with scripts/gen-ptx after any change.

#ifdef NEARDUP_HOST
#include <stdint.h>
typedef uint8_t u8;
typedef uint32_t u32;
typedef uint64_t u64;
#define DEVICE static inline
#define GLOBAL static
#define SHARED
static inline u64 umulhi64(u64 a, u64 b) { return (u64)(((unsigned __int128)a * b) >> 64); }
static inline void atomic_min_u32(u32 *p, u32 v) { if (v < *p) *p = v; }
#else
// clang's CUDA mode without the CUDA headers (-nocudainc): the attributes
// and builtins are named directly.
typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __launch_bounds__(n) __attribute__((launch_bounds(n)))
#define DEVICE static __device__ __inline__ __attribute__((always_inline))
#define GLOBAL extern "C" __global__
#define SHARED __shared__
DEVICE u64 umulhi64(u64 a, u64 b) { return __nvvm_mulhi_ull(a, b); }
DEVICE void atomic_min_u32(u32 *p, u32 v) { __nvvm_atom_min_gen_ui(p, v); }
#define __syncwarp() __nvvm_bar_warp_sync(0xffffffffu)
#define THREAD_X __nvvm_read_ptx_sreg_tid_x()
#define BLOCK_X __nvvm_read_ptx_sreg_ctaid_x()
#endif

enum { ST_OK = 0, ST_EMPTY = 1, ST_FALLBACK = 2 };
enum { UNIT_WORD = 0, UNIT_CHAR = 1 };
enum { M_OPH = 0, M_MS = 1, M_SIMSET = 2, M_SIMCOUNT = 3 };
// MAXSHINGLE bounds a shingle's bytes (XXH3's short inputs); MAXSET the
// shingles of a document under SimHash set weights, whose first
// occurrences are found by comparing each hash with those before it.
enum { WARP = 32, MAXSHINGLE = 240, MAXSET = 4096 };

#define EMPTY_SLOT 0xFFFFFFFFu

// Params are the launch's constants (one struct, passed by value).
struct Params {
  const u8 *text;   // the texts
  const u32 *off;   // numDocs+1 offsets into text
  u32 numDocs;
  u32 n;            // n-gram size
  u32 unit;         // UNIT_*
  u32 method;       // M_*
  u32 k;            // MinHash slots; SimHash bits
  u32 pad;
  u64 seed;         // shingle XXH3 seed
  u64 key;          // OPH element key; SimHash seed
  u64 probe;        // OPH densification seed; SimHash second seed
  const u64 *a;     // multiply-shift coefficients (k each)
  const u64 *b;
  u32 *status;      // numDocs
  u32 *sig;         // numDocs*k slots (MinHash)
  u64 *fp;          // numDocs*2 words, lo then hi (SimHash)
  u32 *bounds;      // scratch: off[d]+d onwards, token starts and ends
  u64 *hashes;      // scratch: off[d]+d onwards, shingle hashes
  u32 *filled;      // scratch: d*ceil(k/32) onwards, OPH filled bins
  u32 *count;       // numDocs: each document's shingles (its hashes are
                    // hashes[off[d]+d:][:count[d]], in shingle order)
};

// Warp is what a warp keeps between phases.
struct Warp {
  u32 count[WARP];  // tokens starting in each lane's chunk, then their prefix sums
  u32 ntok;         // tokens of the document
  u32 nsh;          // shingles
  u32 status;
  u32 sums[128];    // SimHash bit counts
  u32 nfeat;        // SimHash features counted
};

// ---- XXH3-64 with a seed, inputs of at most 240 bytes ----

DEVICE u64 rd64(const u8 *p) {
  return (u64)p[0] | (u64)p[1] << 8 | (u64)p[2] << 16 | (u64)p[3] << 24 |
         (u64)p[4] << 32 | (u64)p[5] << 40 | (u64)p[6] << 48 | (u64)p[7] << 56;
}
DEVICE u32 rd32(const u8 *p) { return (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24; }

#ifdef NEARDUP_HOST
static const u8 kSecret[192] = {
#else
__device__ __constant__ u8 kSecret[192] = {
#endif
  0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
  0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
  0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
  0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
  0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
  0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
  0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
  0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
  0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
  0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
  0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
  0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

#define P32_1 0x9E3779B1ull
#define P32_2 0x85EBCA77ull
#define P32_3 0xC2B2AE3Dull
#define P64_1 0x9E3779B185EBCA87ull
#define P64_2 0xC2B2AE3D27D4EB4Full
#define P64_3 0x165667B19E3779F9ull

DEVICE u64 mulfold(u64 a, u64 b) { return (a * b) ^ umulhi64(a, b); }
DEVICE u64 avalanche(u64 h) { h ^= h >> 37; h *= 0x165667919E3779F9ull; return h ^ (h >> 32); }
DEVICE u64 avalanche64(u64 h) { h ^= h >> 33; h *= P64_2; h ^= h >> 29; h *= P64_3; return h ^ (h >> 32); }
DEVICE u64 rotl(u64 x, int r) { return (x << r) | (x >> (64 - r)); }
DEVICE u32 bswap32(u32 x) { return (x >> 24) | ((x >> 8) & 0xff00) | ((x << 8) & 0xff0000) | (x << 24); }
DEVICE u64 bswap64(u64 x) { return ((u64)bswap32((u32)x) << 32) | bswap32((u32)(x >> 32)); }
DEVICE u64 mix16(const u8 *p, const u8 *s, u64 seed) {
  return mulfold(rd64(p) ^ (rd64(s) + seed), rd64(p + 8) ^ (rd64(s + 8) - seed));
}

// xxh3 returns XXH3_64bits_withSeed(p, len, seed) for len <= 240.
DEVICE u64 xxh3(const u8 *p, u32 len, u64 seed) {
  const u8 *s = kSecret;
  if (len <= 16) {
    if (len > 8) {
      u64 lo = rd64(p) ^ ((rd64(s + 24) ^ rd64(s + 32)) + seed);
      u64 hi = rd64(p + len - 8) ^ ((rd64(s + 40) ^ rd64(s + 48)) - seed);
      u64 acc = (u64)len + bswap64(lo) + hi + mulfold(lo, hi);
      return avalanche(acc);
    }
    if (len >= 4) {
      seed ^= (u64)bswap32((u32)seed) << 32;
      u64 in64 = (u64)rd32(p + len - 4) + ((u64)rd32(p) << 32);
      u64 h = in64 ^ ((rd64(s + 8) ^ rd64(s + 16)) - seed);
      h ^= rotl(h, 49) ^ rotl(h, 24);
      h *= 0x9FB21C651E98DF25ull;
      h ^= (h >> 35) + len;
      h *= 0x9FB21C651E98DF25ull;
      return h ^ (h >> 28);
    }
    if (len > 0) {
      u32 c1 = p[0], c2 = p[len >> 1], c3 = p[len - 1];
      u32 combined = (c1 << 16) | (c2 << 24) | c3 | (len << 8);
      u64 flip = (u64)(rd32(s) ^ rd32(s + 4)) + seed;
      return avalanche64((u64)combined ^ flip);
    }
    return avalanche64(seed ^ (rd64(s + 56) ^ rd64(s + 64)));
  }
  u64 acc = (u64)len * P64_1;
  if (len <= 128) {
    if (len > 32) {
      if (len > 64) {
        if (len > 96) {
          acc += mix16(p + 48, s + 96, seed);
          acc += mix16(p + len - 64, s + 112, seed);
        }
        acc += mix16(p + 32, s + 64, seed);
        acc += mix16(p + len - 48, s + 80, seed);
      }
      acc += mix16(p + 16, s + 32, seed);
      acc += mix16(p + len - 32, s + 48, seed);
    }
    acc += mix16(p, s, seed);
    acc += mix16(p + len - 16, s + 16, seed);
    return avalanche(acc);
  }
  for (u32 i = 0; i < 8; i++) acc += mix16(p + 16 * i, s + 16 * i, seed);
  acc = avalanche(acc);
  u32 rounds = len / 16;
  for (u32 i = 8; i < rounds; i++) acc += mix16(p + 16 * i, s + 16 * (i - 8) + 3, seed);
  acc += mix16(p + len - 16, s + 136 - 17, seed);
  return avalanche(acc);
}

DEVICE u64 splitmix64(u64 z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

DEVICE u64 fmix64(u64 x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// isword: an ASCII letter or digit, the ASCII runes shingle.Word keeps.
DEVICE int isword(u32 c) { return (c - '0' < 10u) | ((c | 0x20) - 'a' < 26u); }

// ---- the phases; lane is 0..31, d the document ----

enum { PH_COUNT, PH_SCAN, PH_BOUNDS, PH_HASH, PH_SIGN1, PH_SIGN2, PH_SIGN3, NPHASES };

DEVICE void phase(int ph, u32 lane, const struct Params *P, u32 d, struct Warp *w) {
  const u32 lo = P->off[d], len = P->off[d + 1] - lo;
  const u8 *t = P->text + lo;
  u32 *bounds = P->bounds + lo + d;
  u64 *hashes = P->hashes + lo + d;
  const u32 chunk = (len + WARP - 1) / WARP;
  const u32 c0 = lane * chunk < len ? lane * chunk : len;
  const u32 c1 = c0 + chunk < len ? c0 + chunk : len;
  switch (ph) {
  case PH_COUNT: {
    // Each lane counts the tokens that start in its chunk.
    u32 c = 0;
    if (P->unit == UNIT_WORD) {
      u32 prev = c0 > 0 ? isword(t[c0 - 1]) : 0;
      for (u32 i = c0; i < c1; i++) {
        u32 x = isword(t[i]);
        c += x & (prev ^ 1);
        prev = x;
      }
    }
    w->count[lane] = c;
    if (lane == 0) w->status = ST_OK;
    break;
  }
  case PH_SCAN:
    if (lane == 0) {
      u32 s = 0;
      for (u32 i = 0; i < WARP; i++) {
        u32 c = w->count[i];
        w->count[i] = s;
        s += c;
      }
      w->ntok = P->unit == UNIT_WORD ? s : len;
      u32 k = w->ntok, n = P->n < k ? P->n : k;
      w->nsh = k == 0 ? 0 : k - n + 1;
      if (k == 0) w->status = ST_EMPTY;
      if (P->method == M_SIMSET && w->nsh > MAXSET) w->status = ST_FALLBACK;
      w->nfeat = 0;
    }
    for (u32 i = lane; i < 128; i += WARP) w->sums[i] = 0;
    break;
  case PH_BOUNDS: {
    // Each lane writes the bounds of the tokens that start in its chunk.
    if (P->unit != UNIT_WORD) break;
    u32 tk = w->count[lane];
    u32 prev = c0 > 0 ? isword(t[c0 - 1]) : 0;
    for (u32 i = c0; i < c1; i++) {
      u32 x = isword(t[i]);
      if (x && !prev) {
        u32 e = i + 1;
        while (e < len && isword(t[e])) e++;
        bounds[2 * tk] = i;
        bounds[2 * tk + 1] = e;
        tk++;
      }
      prev = x;
    }
    break;
  }
  case PH_HASH: {
    // Each lane hashes every 32nd shingle: its tokens joined by one space
    // (a substring of the text when they are one space apart).
    if (w->status != ST_OK) break;
    u32 k = w->ntok, n = P->n < k ? P->n : k;
    for (u32 i = lane; i < w->nsh; i += WARP) {
      u64 h;
      if (P->unit == UNIT_CHAR) {
        h = xxh3(t + i, n, P->seed);  // n <= 64 bytes
      } else {
        u32 s = bounds[2 * i], e = bounds[2 * (i + n - 1) + 1];
        int joined = 1;
        for (u32 j = i + 1; j < i + n; j++) {
          u32 pe = bounds[2 * j - 1];
          if (bounds[2 * j] != pe + 1 || t[pe] != ' ') joined = 0;
        }
        if (joined) {
          if (e - s > MAXSHINGLE) { w->status = ST_FALLBACK; break; }
          h = xxh3(t + s, e - s, P->seed);
        } else {
          u8 buf[MAXSHINGLE];
          u32 m = 0, ok = 1;
          for (u32 j = i; j < i + n && ok; j++) {
            u32 a = bounds[2 * j], b = bounds[2 * j + 1];
            if (m + (j > i) + (b - a) > MAXSHINGLE) { ok = 0; break; }
            if (j > i) buf[m++] = ' ';
            for (u32 q = a; q < b; q++) buf[m++] = t[q];
          }
          if (!ok) { w->status = ST_FALLBACK; break; }
          h = xxh3(buf, m, P->seed);
        }
      }
      hashes[i] = h;
    }
    break;
  }
  case PH_SIGN1:
    if (w->status != ST_OK) break;
    if (P->method == M_OPH) {
      // Empty bins, then every shingle's bin keeps its minimum.
      u32 *sig = P->sig + (u64)d * P->k;
      for (u32 j = lane; j < P->k; j += WARP) sig[j] = EMPTY_SLOT;
    } else if (P->method == M_MS) {
      u32 *sig = P->sig + (u64)d * P->k;
      for (u32 j = lane; j < P->k; j += WARP) {
        u64 a = P->a[j], b = P->b[j], m = ~0ull;
        for (u32 i = 0; i < w->nsh; i++) {
          u64 v = a * hashes[i] + b;
          m = v < m ? v : m;
        }
        u32 v = (u32)(m >> 32);
        sig[j] = v == EMPTY_SLOT ? EMPTY_SLOT - 1 : v;
      }
    } else {
      // SimHash: flag each shingle that counts (set weights: the first
      // occurrence of each hash), in the bounds scratch, free by now.
      u32 *keep = bounds;
      for (u32 i = lane; i < w->nsh; i += WARP) {
        u32 k = 1;
        if (P->method == M_SIMSET) {
          u64 x = hashes[i];
          for (u32 q = 0; q < i; q++)
            if (hashes[q] == x) { k = 0; break; }
        }
        keep[i] = k;
      }
    }
    break;
  case PH_SIGN2:
    if (w->status != ST_OK) break;
    if (P->method == M_OPH) {
      u32 *sig = P->sig + (u64)d * P->k;
      u64 kk = P->k;
      for (u32 i = lane; i < w->nsh; i += WARP) {
        u64 v = splitmix64(hashes[i] ^ P->key);
        u32 bin = (u32)(((v >> 32) * kk) >> 32);
        u32 val = (u32)v;
        if (val == EMPTY_SLOT) val = EMPTY_SLOT - 1;
        atomic_min_u32(&sig[bin], val);
      }
    } else {
      // SimHash: lane j counts bits j, j+32, j+64 and j+96 over the
      // features kept.
      const u32 *keep = bounds;
      for (u32 bit = lane; bit < P->k; bit += WARP) {
        u32 c = 0, nf = 0;
        u64 sd = bit < 64 ? P->key : P->probe;
        for (u32 i = 0; i < w->nsh; i++) {
          if (!keep[i]) continue;
          c += (u32)(fmix64(hashes[i] ^ sd) >> (bit & 63)) & 1;
          nf++;
        }
        w->sums[bit] = c;
        if (bit == 0) w->nfeat = nf;
      }
    }
    break;
  case PH_SIGN3:
    // OPH: record the filled bins, then (next phase) densify. SimHash:
    // the fingerprint's bits.
    if (w->status != ST_OK) break;
    if (P->method >= M_SIMSET) {
      if (lane < 2) {
        u64 fp = 0;
        for (u32 bit = lane * 64; bit < P->k && bit < lane * 64 + 64; bit++)
          if (2 * w->sums[bit] > w->nfeat) fp |= 1ull << (bit & 63);
        P->fp[2 * (u64)d + lane] = fp;
      }
    } else if (P->method == M_OPH) {
      u32 *sig = P->sig + (u64)d * P->k;
      u32 words = (P->k + 31) / 32;
      u32 *filled = P->filled + (u64)d * words;
      for (u32 wd = lane; wd < words; wd += WARP) {
        u32 m = 0;
        for (u32 j = 0; j < 32 && wd * 32 + j < P->k; j++)
          if (sig[wd * 32 + j] != EMPTY_SLOT) m |= 1u << j;
        filled[wd] = m;
      }
    }
    break;
  }
}

// densify is the last OPH phase: an empty bin j copies the first filled
// bin along its probe sequence (minhash.signOPH).
DEVICE void densify(u32 lane, const struct Params *P, u32 d, struct Warp *w) {
  if (w->status != ST_OK || P->method != M_OPH) return;
  u32 *sig = P->sig + (u64)d * P->k;
  u32 words = (P->k + 31) / 32;
  const u32 *filled = P->filled + (u64)d * words;
  u64 kk = P->k;
  for (u32 j = lane; j < P->k; j += WARP) {
    if (filled[j / 32] >> (j % 32) & 1) continue;
    for (u64 attempt = 1;; attempt++) {
      u64 src = umulhi64(splitmix64(P->probe ^ ((u64)j << 32) ^ attempt), kk);
      if (filled[src / 32] >> (src % 32) & 1) {
        sig[j] = sig[src];
        break;
      }
    }
  }
}

DEVICE void finish(u32 lane, const struct Params *P, u32 d, struct Warp *w) {
  if (lane == 0) {
    P->status[d] = w->status;
    P->count[d] = w->status == ST_OK ? w->nsh : 0;
  }
}

#ifdef NEARDUP_HOST
// sign_host runs the kernel on the CPU, lanes one after the other.
static void sign_host(const struct Params *P) {
  struct Warp w = {};
  for (u32 d = 0; d < P->numDocs; d++) {
    for (int ph = 0; ph < NPHASES; ph++)
      for (u32 lane = 0; lane < WARP; lane++) phase(ph, lane, P, d, &w);
    for (u32 lane = 0; lane < WARP; lane++) densify(lane, P, d, &w);
    for (u32 lane = 0; lane < WARP; lane++) finish(lane, P, d, &w);
  }
}
#else
enum { WARPS_PER_BLOCK = 4 };

GLOBAL void __launch_bounds__(WARP * WARPS_PER_BLOCK) sign(struct Params P) {
  SHARED struct Warp warps[WARPS_PER_BLOCK];
  u32 lane = THREAD_X % WARP, wi = THREAD_X / WARP;
  u32 d = BLOCK_X * WARPS_PER_BLOCK + wi;
  if (d >= P.numDocs) return;
  struct Warp *w = &warps[wi];
  for (int ph = 0; ph < NPHASES; ph++) {
    phase(ph, lane, &P, d, w);
    __syncwarp();
  }
  densify(lane, &P, d, w);
  __syncwarp();
  finish(lane, &P, d, w);
}
#endif
