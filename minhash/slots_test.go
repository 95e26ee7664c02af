package minhash

import "testing"

func TestSlots(t *testing.T) {
	a := Signature{1, 0x10002, 3, 4}
	b := Signature{1, 0x20002, 5, 4, 9}
	if n := Matches16(a, b); n != 3 {
		t.Errorf("Matches16 = %d, want 3 (equal low 16 bits in slots 0, 1, 3)", n)
	}
	if n := Matches(a, b); n != 2 {
		t.Errorf("Matches = %d, want 2", n)
	}
	for _, c := range []struct {
		f    Family
		sig  Signature
		want int
	}{
		{OPH, Signature{0, 0, 5, 5, 7}, 3},
		{OPH, Signature{9, 9, 9}, 1},
		{OPH, nil, 0},
		{MultiplyShift, Signature{1, 1, 1}, 3},
	} {
		if got := EffectiveSlots(c.f, c.sig); got != c.want {
			t.Errorf("EffectiveSlots(%s, %v) = %d, want %d", c.f, c.sig, got, c.want)
		}
	}
	sig := make(Signature, 128)
	for i := range sig {
		sig[i] = uint32(i * 2654435761)
	}
	if a := testing.AllocsPerRun(100, func() { EffectiveSlots(OPH, sig) }); a != 0 {
		t.Errorf("EffectiveSlots allocates %v times a call", a)
	}
}
