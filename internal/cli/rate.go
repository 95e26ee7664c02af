package cli

import (
	"math"
	"strconv"
	"time"
)

// minRateTime is the shortest time a rate is given over: the summary
// shows a stage's time to the millisecond, and a rate over less than that
// (a stage of a tiny input, a clock's tick) says nothing true.
const minRateTime = time.Millisecond

// docsRate is "R docs/s" for n documents in d, computed from d unrounded
// (rateNumber's precision), or "" when there is no rate to give: no
// document yet, or d under minRateTime. A rate under 1 was printed as
// "0 docs/s" (truncated), and one over a near-zero time was made up of
// the 1 ms the time was raised to.
func docsRate(n int64, d time.Duration) string {
	if n <= 0 || d < minRateTime {
		return ""
	}
	return rateNumber(float64(n)/d.Seconds()) + " docs/s"
}

// rateNumber writes a rate with the precision it has: whole numbers from
// 10 up (thousands separated), one decimal from 1 to 10, two significant
// digits below 1 (0.67, 0.0012), so that a small rate is not rounded to 0.
func rateNumber(x float64) string {
	switch {
	case x >= 10:
		if x >= math.MaxInt64/2 {
			return strconv.FormatFloat(x, 'g', 3, 64)
		}
		return number(int64(math.Round(x)))
	case x >= 1:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case x <= 0 || math.IsNaN(x):
		return "0"
	}
	decimals := min(1-int(math.Floor(math.Log10(x))), 12)
	return strconv.FormatFloat(x, 'f', decimals, 64)
}
