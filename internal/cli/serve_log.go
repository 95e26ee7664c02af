package cli

import (
	"fmt"
	"io"
	"log"
	"strings"
	"sync"
	"time"
)

// httpLog is the ErrorLog of serve's http.Server: Go's HTTP server logs
// connection-level failures there in its own words ("http: TLS handshake
// error from ADDR: ..."), which said nothing a serve operator could act
// on. It writes them as serve's other lines are written (timestamped,
// "neardup: ..."), says what a plain-HTTP client on the HTTPS port did,
// drops the handshakes a client closed before saying anything (TCP health
// checks and port scans make one a probe), and lets handshake lines
// through at most handshakeBurst at once and one a second after that,
// counting the rest into the next line written, so that a scanner cannot
// flood the log.
type httpLog struct {
	mu         sync.Mutex
	out        *log.Logger
	tokens     float64   // handshake lines that may be written now
	at         time.Time // when tokens was counted
	suppressed int       // handshake lines dropped since the last one written
	now        func() time.Time
}

// handshakeBurst is the most handshake lines written at once.
const handshakeBurst = 10

func newHTTPLog(w io.Writer) *log.Logger {
	return log.New(&httpLog{out: log.New(w, "", log.LstdFlags), tokens: handshakeBurst, now: time.Now}, "", 0)
}

// handshakePrefix starts the net/http server's line for a failed TLS
// handshake: "http: TLS handshake error from ADDR: ERR".
const handshakePrefix = "http: TLS handshake error from "

// Write receives one line of the HTTP server's log (log.Logger writes
// each Printf with one Write).
func (l *httpLog) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	l.mu.Lock()
	defer l.mu.Unlock()
	rest, ok := strings.CutPrefix(msg, handshakePrefix)
	if !ok {
		l.out.Print("neardup: " + strings.TrimPrefix(msg, "http: "))
		return len(p), nil
	}
	addr, why, _ := strings.Cut(rest, ": ")
	switch {
	case why == "EOF" || strings.HasSuffix(why, "connection reset by peer"):
		return len(p), nil
	case strings.Contains(why, "client sent an HTTP request to an HTTPS server"):
		msg = fmt.Sprintf("neardup: %s sent plain HTTP to this HTTPS server (answered 400): the client must use https://", addr)
	default:
		msg = fmt.Sprintf("neardup: TLS handshake with %s failed: %s", addr, why)
	}
	now := l.now()
	if !l.at.IsZero() {
		l.tokens = min(handshakeBurst, l.tokens+now.Sub(l.at).Seconds())
	}
	l.at = now
	if l.tokens < 1 {
		l.suppressed++
		return len(p), nil
	}
	l.tokens--
	if l.suppressed > 0 {
		msg += fmt.Sprintf(" (and %d more failed handshakes not logged before it)", l.suppressed)
	}
	l.suppressed = 0
	l.out.Print(msg)
	return len(p), nil
}
