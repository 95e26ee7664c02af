package cli

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestOnSignals: the first signal cancels the run and the second ends it,
// even when both arrived before the goroutine that watches them ran (a
// busy machine): the second is not swallowed.
func TestOnSignals(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	sigs <- os.Interrupt
	sigs <- syscall.SIGTERM
	cancelled := make(chan struct{})
	died := make(chan os.Signal, 1)
	go onSignals(sigs, make(chan struct{}), func() { close(cancelled) }, func(s os.Signal) { died <- s })
	select {
	case <-cancelled:
	case <-time.After(time.Minute):
		t.Fatal("the first signal did not cancel the run")
	}
	select {
	case s := <-died:
		if s != syscall.SIGTERM {
			t.Errorf("died of %v, want the second signal, %v", s, syscall.SIGTERM)
		}
	case <-time.After(time.Minute):
		t.Fatal("the second signal did not end the process")
	}
}

// TestOnSignalsDone: one signal only cancels; after done, nothing more.
func TestOnSignalsDone(t *testing.T) {
	sigs := make(chan os.Signal, 2)
	sigs <- os.Interrupt
	done := make(chan struct{})
	cancelled := make(chan struct{})
	returned := make(chan struct{})
	go func() {
		onSignals(sigs, done, func() { close(cancelled) }, func(s os.Signal) { t.Errorf("died of %v after one signal", s) })
		close(returned)
	}()
	<-cancelled
	close(done)
	select {
	case <-returned:
	case <-time.After(time.Minute):
		t.Fatal("onSignals did not return after done")
	}
}
