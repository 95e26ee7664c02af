package eval

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// labels builds a partition of ids "d0", "d1", ... from cluster numbers.
func labels(clusters []int) *Labels {
	b := newBuilder("test", JSONL)
	for i, c := range clusters {
		b.add(fmt.Sprintf("d%d", i), fmt.Sprint(c))
	}
	return b.done()
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12 }

// TestARIGolden checks hand-computed values, which are also what
// scikit-learn's adjusted_rand_score returns on these inputs (its
// docstring lists the first six).
func TestARIGolden(t *testing.T) {
	tests := []struct {
		truth, pred []int
		want        float64
	}{
		{[]int{0, 0, 1, 1}, []int{0, 0, 1, 1}, 1},
		{[]int{0, 0, 1, 1}, []int{1, 1, 0, 0}, 1},
		{[]int{0, 0, 1, 2}, []int{0, 0, 1, 1}, 4.0 / 7}, // 0.5714285714285714
		{[]int{0, 0, 1, 1}, []int{0, 0, 1, 2}, 4.0 / 7},
		{[]int{0, 0, 0, 0}, []int{0, 1, 2, 3}, 0},
		{[]int{0, 0, 1, 1}, []int{0, 1, 0, 1}, -0.5},
		// T=6, P=3, TP=2, N=15: E=1.2, ARI = 0.8/3.3.
		{[]int{0, 0, 0, 1, 1, 1}, []int{0, 0, 1, 1, 2, 2}, 0.8 / 3.3}, // 0.24242424242424243
		// All singletons on both sides: full agreement.
		{[]int{0, 1, 2}, []int{5, 6, 7}, 1},
		{[]int{0}, []int{0}, 1},
		// One cluster against singletons, n=5: T=10, P=0.
		{[]int{1, 1, 1, 1, 1}, []int{0, 1, 2, 3, 4}, 0},
		// T=4 (3+1), P=2, TP=2, N=15: E=8/15, ARI=(2-8/15)/(3-8/15)=22/37.
		{[]int{0, 0, 0, 1, 1, 2}, []int{0, 0, 3, 1, 1, 2}, 22.0 / 37},
	}
	for _, tt := range tests {
		res, err := Score(labels(tt.truth), labels(tt.pred))
		if err != nil {
			t.Fatal(err)
		}
		if !near(res.ARI, tt.want) {
			t.Errorf("ARI(%v, %v) = %v, want %v", tt.truth, tt.pred, res.ARI, tt.want)
		}
	}
}

// bruteForce scores by enumerating every pair of documents, and computes
// ARI from the Hubert-Arabie expected index, not from the pair confusion
// formula Score uses.
func bruteForce(truth, pred []int) (tp, tt, pp int64, ari float64, dup, non ClassScores, acc float64) {
	n := len(truth)
	tdup := make([]bool, n)
	pdup := make([]bool, n)
	for i := range n {
		for j := i + 1; j < n; j++ {
			st, sp := truth[i] == truth[j], pred[i] == pred[j]
			if st {
				tt++
				tdup[i], tdup[j] = true, true
			}
			if sp {
				pp++
				pdup[i], pdup[j] = true, true
			}
			if st && sp {
				tp++
			}
		}
	}
	all := float64(n) * float64(n-1) / 2
	exp := float64(tt) * float64(pp) / all
	den := (float64(tt)+float64(pp))/2 - exp
	if den == 0 {
		ari = 1
	} else {
		ari = (float64(tp) - exp) / den
	}
	var dd, dn, nd, nn int
	for i := range n {
		switch {
		case tdup[i] && pdup[i]:
			dd++
		case tdup[i]:
			dn++
		case pdup[i]:
			nd++
		default:
			nn++
		}
	}
	cls := func(right, predicted, support int) ClassScores {
		var p, r, f float64
		if predicted > 0 {
			p = float64(right) / float64(predicted)
		}
		if support > 0 {
			r = float64(right) / float64(support)
		}
		if p+r > 0 {
			f = 2 * p * r / (p + r)
		}
		return ClassScores{support, predicted, p, r, f}
	}
	return tp, tt, pp, ari, cls(dd, dd+nd, dd+dn), cls(nn, nn+dn, nn+nd), float64(dd+nn) / float64(n)
}

func closeClass(a, b ClassScores) bool {
	return a.Support == b.Support && a.Predicted == b.Predicted &&
		near(a.Precision, b.Precision) && near(a.Recall, b.Recall) && near(a.F1, b.F1)
}

func TestScoreAgainstBruteForce(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 6))
		n := 2 + r.IntN(60)
		kt, kp := 1+r.IntN(n), 1+r.IntN(n)
		truth, pred := make([]int, n), make([]int, n)
		for i := range n {
			truth[i] = r.IntN(kt)
			switch r.IntN(3) {
			case 0: // agree with the truth, to get high scores too
				pred[i] = truth[i]
			default:
				pred[i] = r.IntN(kp)
			}
		}
		res, err := Score(labels(truth), labels(pred))
		if err != nil {
			t.Fatal(err)
		}
		tp, tt, pp, ari, dup, non, acc := bruteForce(truth, pred)
		p := res.Pairs
		if p.Correct != tp || p.True != tt || p.Predicted != pp || p.Total != int64(n*(n-1)/2) {
			t.Fatalf("seed %d: pairs %+v, want TP=%d T=%d P=%d", seed, p, tp, tt, pp)
		}
		wantP, wantR := 0.0, 0.0
		if pp > 0 {
			wantP = float64(tp) / float64(pp)
		}
		if tt > 0 {
			wantR = float64(tp) / float64(tt)
		}
		if !near(p.Precision, wantP) || !near(p.Recall, wantR) {
			t.Fatalf("seed %d: precision %v recall %v, want %v %v", seed, p.Precision, p.Recall, wantP, wantR)
		}
		if wantP+wantR > 0 && !near(p.F1, 2*wantP*wantR/(wantP+wantR)) {
			t.Fatalf("seed %d: F1 %v, want %v", seed, p.F1, 2*wantP*wantR/(wantP+wantR))
		}
		if !near(res.ARI, ari) {
			t.Fatalf("seed %d: ARI %v, want %v (truth %v pred %v)", seed, res.ARI, ari, truth, pred)
		}
		d := res.Docs
		var f1s []float64 // classes present in the truth or the prediction
		for _, c := range []ClassScores{dup, non} {
			if c.Support+c.Predicted > 0 {
				f1s = append(f1s, c.F1)
			}
		}
		macro := f1s[0]
		if len(f1s) == 2 {
			macro = (f1s[0] + f1s[1]) / 2
		}
		if !closeClass(d.Duplicate, dup) || !closeClass(d.NonDuplicate, non) || !near(d.Accuracy, acc) ||
			!near(d.MacroF1, macro) {
			t.Fatalf("seed %d: documents %+v, want dup %+v non %+v accuracy %v", seed, d, dup, non, acc)
		}
		if res.Missing.Count != 0 || res.Extra.Count != 0 {
			t.Fatalf("seed %d: missing %v extra %v on identical id sets", seed, res.Missing, res.Extra)
		}
	}
}

func TestScoreIdentityAndSymmetry(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for range 50 {
		n := 1 + r.IntN(100)
		a, b := make([]int, n), make([]int, n)
		for i := range n {
			a[i], b[i] = r.IntN(1+n/3), r.IntN(1+n/2)
		}
		same, _ := Score(labels(a), labels(a))
		if same.ARI != 1 || same.Pairs.Correct != same.Pairs.True || same.Docs.Accuracy != 1 {
			t.Fatalf("Score(a, a) = ARI %v pairs %+v accuracy %v, want 1, all correct, 1", same.ARI, same.Pairs, same.Docs.Accuracy)
		}
		ab, _ := Score(labels(a), labels(b))
		ba, _ := Score(labels(b), labels(a))
		if !near(ab.ARI, ba.ARI) || !near(ab.Pairs.Precision, ba.Pairs.Recall) {
			t.Fatalf("not symmetric: ARI %v vs %v, precision %v vs recall %v", ab.ARI, ba.ARI, ab.Pairs.Precision, ba.Pairs.Recall)
		}
	}
}

// TestScoreHugeCluster checks that counts of pairs in a big cluster do not
// overflow and that nothing is quadratic.
func TestScoreHugeCluster(t *testing.T) {
	const n = 100000
	truth, pred := make([]int, n), make([]int, n)
	for i := range n {
		pred[i] = i % 2 // two clusters of n/2
	}
	res, err := Score(labels(truth), labels(pred))
	if err != nil {
		t.Fatal(err)
	}
	const all = int64(n) * (n - 1) / 2
	const half = int64(n/2) * (n/2 - 1) / 2
	if res.Pairs.True != all || res.Pairs.Predicted != 2*half || res.Pairs.Correct != 2*half {
		t.Fatalf("pairs %+v, want T=%d P=TP=%d", res.Pairs, all, 2*half)
	}
	if res.ARI != 0 || !near(res.Pairs.Precision, 1) {
		t.Errorf("ARI %v precision %v, want 0 and 1", res.ARI, res.Pairs.Precision)
	}
}

func TestScoreMissingAndExtra(t *testing.T) {
	truth := mustRead(t, `{"id":"a","cluster":"x"}
{"id":"b","cluster":"x"}
{"id":"c","cluster":"y"}
{"id":"d","cluster":"z"}
`)
	// c missing (a singleton), e and f extra: e would make b's cluster
	// larger if it counted.
	pred := mustRead(t, `{"id":"a","cluster":"a","kept":true}
{"id":"b","cluster":"a","kept":false}
{"id":"d","cluster":"d","kept":true}
{"id":"e","cluster":"d","kept":false}
{"id":"f","cluster":"f","kept":true}
`)
	res, err := Score(truth, pred)
	if err != nil {
		t.Fatal(err)
	}
	if res.Missing.Count != 1 || res.Missing.Examples[0] != "c" || res.Extra.Count != 2 ||
		strings.Join(res.Extra.Examples, ",") != "e,f" {
		t.Fatalf("missing %+v extra %+v, want [c] and [e f]", res.Missing, res.Extra)
	}
	// With c a singleton and e left out, the prediction equals the truth.
	if res.ARI != 1 || res.Pairs.Precision != 1 || res.Pairs.Recall != 1 || res.Docs.Accuracy != 1 {
		t.Errorf("scores %+v ARI %v, want perfect", res.Pairs, res.ARI)
	}
	if res.PredClusters != 3 || res.TruthClusters != 3 {
		t.Errorf("clusters truth %d pred %d, want 3 and 3", res.TruthClusters, res.PredClusters)
	}
	probs := res.Problems("truth.jsonl", "pred.jsonl")
	if len(probs) != 2 || !strings.Contains(probs[0], `"c"`) || !strings.Contains(probs[1], `"e", "f"`) {
		t.Errorf("Problems = %q", probs)
	}

	// Empty prediction: everything a singleton.
	empty := mustRead(t, "")
	res, err = Score(truth, empty)
	if err != nil {
		t.Fatal(err)
	}
	if res.Missing.Count != 4 || res.Pairs.Predicted != 0 || res.Pairs.Recall != 0 || !res.PredIssues.Empty {
		t.Errorf("empty prediction: %+v", res)
	}
	if _, err := Score(empty, truth); !errors.Is(err, ErrEmptyTruth) {
		t.Errorf("Score(empty truth) error = %v, want ErrEmptyTruth", err)
	}
}

func TestScoreLabelledPairs(t *testing.T) {
	truth := mustReadOpts(t, "id1\tid2\tlabel\nq\ta\tcut\nr\ta\tlight\ns\ta\theavy\nu\ta\tnon\nv\tw\tnon\n",
		ReadOptions{Positive: []string{"cut", "light"}})
	pred := mustRead(t, `{"id":"a","cluster":"1"}
{"id":"q","cluster":"1"}
{"id":"s","cluster":"1"}
{"id":"v","cluster":"2"}
{"id":"w","cluster":"2"}
`)
	res, err := Score(truth, pred)
	if err != nil {
		t.Fatal(err)
	}
	want := []LabelScore{
		{"cut", true, 1, 1, 1},
		{"light", true, 1, 0, 0},
		{"heavy", false, 1, 1, 1},
		{"non", false, 2, 1, 0.5},
	}
	if fmt.Sprint(res.Labels) != fmt.Sprint(want) {
		t.Errorf("Labels = %+v, want %+v", res.Labels, want)
	}
	// Truth {q,r,a} {s} {u} {v} {w}; pred {a,q,s} {v,w} {r} {u}:
	// T=3, P=4, TP=1.
	if p := res.Pairs; p.True != 3 || p.Predicted != 4 || p.Correct != 1 {
		t.Errorf("pairs %+v, want T=3 P=4 TP=1", p)
	}
	if res.Missing.Count != 2 { // r and u
		t.Errorf("missing %+v, want r and u", res.Missing)
	}
}

func mustRead(t *testing.T, s string) *Labels {
	t.Helper()
	return mustReadOpts(t, s, ReadOptions{})
}

func mustReadOpts(t *testing.T, s string, opts ReadOptions) *Labels {
	t.Helper()
	l, err := Read(strings.NewReader(s), "test", opts)
	if err != nil {
		t.Fatalf("Read(%q): %v", s, err)
	}
	return l
}

func BenchmarkScore(b *testing.B) {
	const n = 200000
	r := rand.New(rand.NewPCG(1, 1))
	truth, pred := make([]int, n), make([]int, n)
	for i := range n {
		truth[i] = r.IntN(n / 8)
		pred[i] = truth[i]
		if r.IntN(10) == 0 {
			pred[i] = r.IntN(n)
		}
	}
	lt, lp := labels(truth), labels(pred)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Score(lt, lp); err != nil {
			b.Fatal(err)
		}
	}
}

func TestNewLabels(t *testing.T) {
	l, err := NewLabels("mem", []string{"a", "b", "a", "c"}, []string{"1", "1", "2", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 3 || l.NumClusters != 2 || l.Index("c") != 2 || l.Issues.Duplicates != 1 {
		t.Errorf("NewLabels = %d ids, %d clusters, Index(c) %d, issues %+v; want 3, 2, 2, one duplicate",
			l.Len(), l.NumClusters, l.Index("c"), l.Issues)
	}
	if _, err := NewLabels("mem", []string{"a"}, nil); err == nil {
		t.Error("NewLabels accepted slices of different lengths")
	}
}
