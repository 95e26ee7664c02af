// Package suggest finds the known name nearest to a mistyped one, for the
// "did you mean" hints of neardup's and neardup-beam's command lines.
package suggest

// Nearest returns the name in names closest to name by edit distance, if
// it is at most maxDist edits away; ties go to the name that sorts first.
// It returns "" when none is that close.
func Nearest(name string, names []string, maxDist int) string {
	best, bestD := "", maxDist+1
	for _, n := range names {
		if d := editDistance(name, n); d < bestD || d == bestD && n < best {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
