package lsh

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// Errors returned by the package.
var (
	ErrThreshold = errors.New("lsh: threshold must be in (0, 1]")
	ErrNumPerm   = errors.New("lsh: number of permutations must be at least 1")
	ErrParams    = errors.New("lsh: bands and rows must be at least 1 and bands x rows at most the number of permutations")
	ErrWeights   = errors.New("lsh: false-positive and false-negative weights must be non-negative and not both zero")
	ErrRecall    = errors.New("lsh: target recall must be in (0, 1)")
	ErrLength    = errors.New("lsh: signature length does not match the index")
	ErrExists    = errors.New("lsh: id already in the index")
	ErrNotFound  = errors.New("lsh: id not in the index")
	ErrNoSigs    = errors.New("lsh: the index keeps no signatures (Options.KeepSignatures)")
	ErrID        = errors.New("lsh: id above MaxID")
)

// Params is a banding: Bands bands of Rows slots each. Two signatures are
// candidates when they agree on every slot of at least one band.
type Params struct {
	Bands, Rows int
}

// String returns "BxR", for example "9x13".
func (p Params) String() string { return fmt.Sprintf("%dx%d", p.Bands, p.Rows) }

// Validate checks that p is a banding of signatures of numPerm slots.
func (p Params) Validate(numPerm int) error {
	if numPerm < 1 {
		return fmt.Errorf("%w (got %d)", ErrNumPerm, numPerm)
	}
	if p.Bands < 1 || p.Rows < 1 || p.Bands > numPerm || p.Rows > numPerm || p.Bands*p.Rows > numPerm {
		return fmt.Errorf("%w: %d bands x %d rows with %d permutations", ErrParams, p.Bands, p.Rows, numPerm)
	}
	return nil
}

// Probability returns the probability that two documents of Jaccard
// similarity s become candidates: 1 - (1 - s^r)^b (the S-curve).
func (p Params) Probability(s float64) float64 {
	return probability(s, p.Bands, p.Rows)
}

func probability(s float64, b, r int) float64 {
	if s <= 0 {
		return 0
	}
	if s >= 1 {
		return 1
	}
	// -expm1(b*log1p(-s^r)) keeps precision when s^r is tiny.
	return -math.Expm1(float64(b) * math.Log1p(-math.Pow(s, float64(r))))
}

// Threshold returns the similarity at which the S-curve is steepest,
// approximately (1/b)^(1/r).
func (p Params) Threshold() float64 {
	return math.Pow(1/float64(p.Bands), 1/float64(p.Rows))
}

// FalsePositiveArea returns the integral of the S-curve over [0, t]: the
// weight of pairs below the threshold t that become candidates.
func (p Params) FalsePositiveArea(t float64) float64 {
	return integrate(func(s float64) float64 { return fastProbability(s, p.Bands, p.Rows) }, 0, t)
}

// FalseNegativeArea returns the integral of 1 - S-curve over [t, 1]: the
// weight of pairs at or above t that are missed.
func (p Params) FalseNegativeArea(t float64) float64 {
	return integrate(func(s float64) float64 { return 1 - fastProbability(s, p.Bands, p.Rows) }, t, 1)
}

// fastProbability is probability by integer powers (repeated squaring),
// several times faster than Pow, Log1p and Expm1. Its absolute error is
// about 1e-15, which is all the areas need (TestAreasExact); Probability
// keeps the relative precision of tiny values.
func fastProbability(s float64, b, r int) float64 {
	if s <= 0 {
		return 0
	}
	if s >= 1 {
		return 1
	}
	return 1 - ipow(1-ipow(s, r), b)
}

func ipow(x float64, n int) float64 {
	y := 1.0
	for n > 0 {
		if n&1 != 0 {
			y *= x
		}
		x *= x
		n >>= 1
	}
	return y
}

// Weights weighs the false-positive and false-negative areas in Optimal.
// The zero value means 0.5 and 0.5.
type Weights struct {
	FalsePositive, FalseNegative float64
}

// Optimal returns the banding of at most numPerm slots that minimises
// w.FalsePositive x FalsePositiveArea(t) + w.FalseNegative x
// FalseNegativeArea(t) over every b >= 1, r >= 1 with b*r <= numPerm: the
// rule of datasketch's MinHashLSH (_optimal_param), with the same search
// order (b ascending, then r ascending; the first minimum wins). The areas
// are integrated with composite Gauss-Legendre quadrature, accurate to
// about 1e-12. With weights 0.5/0.5 and 128 permutations it gives 25x5 at
// 0.5, 14x9 at 0.7, 9x13 at 0.8 and 5x25 at 0.9.
func Optimal(threshold float64, numPerm int, w Weights) (Params, error) {
	if err := checkThreshold(threshold, numPerm); err != nil {
		return Params{}, err
	}
	if w == (Weights{}) {
		w = Weights{0.5, 0.5}
	}
	if w.FalsePositive < 0 || w.FalseNegative < 0 || w.FalsePositive+w.FalseNegative == 0 ||
		math.IsNaN(w.FalsePositive) || math.IsNaN(w.FalseNegative) ||
		math.IsInf(w.FalsePositive, 0) || math.IsInf(w.FalseNegative, 0) {
		return Params{}, fmt.Errorf("%w (got %v and %v)", ErrWeights, w.FalsePositive, w.FalseNegative)
	}
	best, bestErr := Params{}, math.Inf(1)
	for b := 1; b <= numPerm; b++ {
		for r := 1; r <= numPerm/b; r++ {
			p := Params{b, r}
			e := w.FalsePositive*p.FalsePositiveArea(threshold) + w.FalseNegative*p.FalseNegativeArea(threshold)
			if e < bestErr {
				best, bestErr = p, e
			}
		}
	}
	return best, nil
}

// ForRecall returns the cheapest banding of at most numPerm slots under
// which a pair of similarity exactly threshold becomes a candidate with
// probability at least recall. Cheapest means the fewest false positives:
// the smallest FalsePositiveArea(threshold), then the fewest bands. The area
// rule of Optimal misses many pairs at high thresholds (5x25 at 0.9 with 128
// permutations catches only 31% of pairs of similarity 0.9); this mode
// bounds that loss. When no banding reaches the recall, the one with the
// highest probability at the threshold is returned with an error wrapping
// ErrRecall.
func ForRecall(threshold float64, numPerm int, recall float64) (Params, error) {
	if err := checkThreshold(threshold, numPerm); err != nil {
		return Params{}, err
	}
	if !(recall > 0 && recall < 1) {
		return Params{}, fmt.Errorf("%w (got %v)", ErrRecall, recall)
	}
	best, bestFP := Params{}, math.Inf(1)
	for r := 1; r <= numPerm; r++ {
		// The fewest bands reaching the recall for this r; more bands only
		// add false positives.
		q := math.Pow(threshold, float64(r))
		var b int
		if q >= 1 {
			b = 1
		} else {
			fb := math.Ceil(math.Log1p(-recall) / math.Log1p(-q))
			if !(fb <= float64(numPerm/r)+1) {
				continue // needs more bands than fit (or the ratio overflowed)
			}
			b = int(fb)
			for b > 1 && probability(threshold, b-1, r) >= recall {
				b--
			}
			for b*r <= numPerm && probability(threshold, b, r) < recall {
				b++
			}
		}
		if b < 1 || b*r > numPerm {
			continue
		}
		p := Params{b, r}
		fp := p.FalsePositiveArea(threshold)
		if fp < bestFP || (fp == bestFP && b < best.Bands) {
			best, bestFP = p, fp
		}
	}
	if best.Bands == 0 {
		p := Params{numPerm, 1}
		return p, fmt.Errorf("%w: %v is out of reach at threshold %v with %d permutations (best %s gives %.4f)",
			ErrRecall, recall, threshold, numPerm, p, p.Probability(threshold))
	}
	return best, nil
}

func checkThreshold(t float64, numPerm int) error {
	if !(t > 0 && t <= 1) {
		return fmt.Errorf("%w (got %v)", ErrThreshold, t)
	}
	if numPerm < 1 {
		return fmt.Errorf("%w (got %d)", ErrNumPerm, numPerm)
	}
	return nil
}

// Gauss-Legendre quadrature: glPoints nodes on each of glPanels equal
// panels. The integrands are polynomials of degree b*r <= numPerm with one
// steep step; TestAreasExact checks 1e-12 against exact integrals.
const (
	glPoints = 16
	glPanels = 32
)

var (
	glOnce    sync.Once
	glNodes   [glPoints]float64
	glWeights [glPoints]float64
)

// legendre computes the nodes and weights on [-1, 1] by Newton's method on
// the Legendre polynomial P_n.
func legendre() {
	n := glPoints
	for i := range (n + 1) / 2 {
		x := math.Cos(math.Pi * (float64(i) + 0.75) / (float64(n) + 0.5))
		var dp float64
		for range 100 {
			p0, p1 := 1.0, x
			for k := 2; k <= n; k++ {
				p0, p1 = p1, ((2*float64(k)-1)*x*p1-(float64(k)-1)*p0)/float64(k)
			}
			dp = float64(n) * (x*p1 - p0) / (x*x - 1)
			dx := p1 / dp
			x -= dx
			if math.Abs(dx) < 1e-16 {
				break
			}
		}
		// Recompute the derivative at the converged node.
		p0, p1 := 1.0, x
		for k := 2; k <= n; k++ {
			p0, p1 = p1, ((2*float64(k)-1)*x*p1-(float64(k)-1)*p0)/float64(k)
		}
		dp = float64(n) * (x*p1 - p0) / (x*x - 1)
		w := 2 / ((1 - x*x) * dp * dp)
		glNodes[i], glNodes[n-1-i] = -x, x
		glWeights[i], glWeights[n-1-i] = w, w
	}
}

func integrate(f func(float64) float64, a, b float64) float64 {
	glOnce.Do(legendre)
	if b <= a {
		return 0
	}
	h := (b - a) / glPanels
	sum := 0.0
	for p := range glPanels {
		mid := a + (float64(p)+0.5)*h
		s := 0.0
		for i, x := range glNodes {
			s += glWeights[i] * f(mid+x*h/2)
		}
		sum += s * h / 2
	}
	return sum
}
