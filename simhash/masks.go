package simhash

// TableMasks returns the key mask of each of the design's Tables permuted
// tables, in table order: every fingerprint within Distance of another
// agrees with it on all the bits of at least one mask (the pigeonhole
// principle over Blocks blocks). External indexes (a spill to disk, a
// store) key their tables by the masked fingerprint.
func (d Design) TableMasks() []Fingerprint {
	l := newLayout(d)
	masks := make([]Fingerprint, len(l.tables))
	for i, t := range l.tables {
		masks[i] = t.mask
	}
	return masks
}
