package cluster_test

import (
	"fmt"

	"github.com/neardup/neardup/cluster"
)

func Example() {
	u := cluster.NewUnionFind(5)
	u.Union(3, 1) // documents 1 and 3 are duplicates
	u.Union(4, 3) // and 4 duplicates 3
	fmt.Println(cluster.Keep(u, cluster.First, nil))
	// Output: [0 1 2 1 1]
}
