package server_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/neardup/neardup/server"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
)

// Serve an index and check-and-add two near-identical news items.
func Example() {
	dir, err := os.MkdirTemp("", "neardup-serve")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := store.Create(dir, sketch.Default(sketch.MinHash), store.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	srv, err := server.New(st, server.Config{})
	if err != nil {
		log.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler()) // 127.0.0.1
	defer ts.Close()

	for _, body := range []string{
		`{"id":"a1","text":"The central bank raised interest rates by a quarter point on Tuesday"}`,
		`{"id":"a2","text":"THE CENTRAL BANK RAISED INTEREST RATES BY A QUARTER POINT ON TUESDAY!"}`,
		`{"id":"a3","text":42}`,
	} {
		resp, err := http.Post(ts.URL+"/v1/check-and-add", "application/json", strings.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Print(resp.StatusCode, " ", string(b))
	}
	// Output:
	// 201 {"id":"a1","added":true,"duplicate":false,"matches":[]}
	// 200 {"id":"a2","added":false,"duplicate":true,"matches":[{"id":"a1","similarity":1,"distance":-1,"exact":true}]}
	// 400 {"error":"malformed request: text must be a string, not number"}
}
