package ksentence_test

import (
	"fmt"

	"github.com/neardup/neardup/ksentence"
)

func Example() {
	h, _ := ksentence.New(ksentence.Options{K: 2})
	a := "滚滚长江东逝水，浪花淘尽英雄。是非成败转头空！青山依旧在。"
	b := "滚滚长江东逝水，浪花淘尽英雄。\n是非成败转头空！"
	fmt.Printf("%q\n", h.AppendLongest(nil, []byte(a)))
	fmt.Println(h.Sum([]byte(a)) == h.Sum([]byte(b)))
	// Output:
	// "滚滚长江东逝水，浪花淘尽英雄\n是非成败转头空"
	// true
}
