package eval_test

import (
	"fmt"
	"strings"

	"github.com/neardup/neardup/eval"
)

func ExampleScore() {
	truth := `{"id":"a","cluster":"poem-1"}
{"id":"b","cluster":"poem-1"}
{"id":"c","cluster":"poem-1"}
{"id":"d","cluster":"poem-2"}
{"id":"e","cluster":"poem-3"}
`
	// The --clusters output of neardup dedup: b was found as a duplicate
	// of a, c was missed, and e was wrongly joined with d.
	pred := `{"id":"a","cluster":"a","kept":true}
{"id":"b","cluster":"a","kept":false}
{"id":"c","cluster":"c","kept":true}
{"id":"d","cluster":"d","kept":true}
{"id":"e","cluster":"d","kept":false}
`
	t, _ := eval.Read(strings.NewReader(truth), "truth.jsonl", eval.ReadOptions{})
	p, _ := eval.Read(strings.NewReader(pred), "clusters.jsonl", eval.ReadOptions{})
	res, err := eval.Score(t, p)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("pairs: true %d, predicted %d, correct %d\n", res.Pairs.True, res.Pairs.Predicted, res.Pairs.Correct)
	fmt.Printf("precision %.3f recall %.3f F1 %.3f\n", res.Pairs.Precision, res.Pairs.Recall, res.Pairs.F1)
	fmt.Printf("ARI %.4f\n", res.ARI)
	fmt.Printf("documents: macro F1 %.3f accuracy %.2f\n", res.Docs.MacroF1, res.Docs.Accuracy)
	// Output:
	// pairs: true 3, predicted 2, correct 1
	// precision 0.500 recall 0.333 F1 0.400
	// ARI 0.2105
	// documents: macro F1 0.286 accuracy 0.40
}
