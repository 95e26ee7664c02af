// Package mix holds the 64-bit mixing function the hashing packages share.
package mix

// SplitMix64 is the SplitMix64 finaliser (Steele, Lea and Flood, OOPSLA
// 2014): a bijection of uint64 with good avalanche. Signatures and keys
// depend on it: it must never change.
func SplitMix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Fmix64 is MurmurHash3's 64-bit finaliser (Appleby): a bijection of
// uint64 with full avalanche. SimHash feature bits, Bloom filter probes and
// the SimHash table keys of 128-bit fingerprints stored in indexes depend
// on it: it must never change.
func Fmix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}
