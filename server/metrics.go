package server

import (
	"bufio"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// latencyBuckets are the upper bounds, in seconds, of the request latency
// histogram.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10}

type histogram struct {
	counts []uint64 // per bucket, not cumulative; last is +Inf
	sum    float64
	n      uint64
}

type routeCode struct {
	route string
	code  int
}

// metrics are the server's counters, written in the Prometheus text
// exposition format (version 0.0.4) by hand.
type metrics struct {
	mu       sync.Mutex
	requests map[routeCode]uint64
	latency  map[string]*histogram

	inflight                            atomic.Int64
	checked, added, duplicates, removed atomic.Uint64
	diskFull                            atomic.Uint64 // writes refused with 507
}

func newMetrics() *metrics {
	return &metrics{requests: map[routeCode]uint64{}, latency: map[string]*histogram{}}
}

func (m *metrics) observe(route string, code int, d time.Duration) {
	if code == 0 {
		code = http.StatusOK
	}
	sec := d.Seconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[routeCode{route, code}]++
	h := m.latency[route]
	if h == nil {
		h = &histogram{counts: make([]uint64, len(latencyBuckets)+1)}
		m.latency[route] = h
	}
	i, _ := slices.BinarySearch(latencyBuckets, sec)
	h.counts[i]++
	h.sum += sec
	h.n++
}

func (s *Server) metrics(w http.ResponseWriter, _ *http.Request) error {
	st, err := s.st.Stats()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	bw := bufio.NewWriter(w)
	m := s.met
	m.mu.Lock()
	keys := make([]routeCode, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b routeCode) int {
		if a.route != b.route {
			if a.route < b.route {
				return -1
			}
			return 1
		}
		return a.code - b.code
	})
	fmt.Fprintln(bw, "# HELP neardup_http_requests_total HTTP requests served, by route and status code.")
	fmt.Fprintln(bw, "# TYPE neardup_http_requests_total counter")
	for _, k := range keys {
		fmt.Fprintf(bw, "neardup_http_requests_total{route=%q,code=\"%d\"} %d\n", k.route, k.code, m.requests[k])
	}
	routes := make([]string, 0, len(m.latency))
	for r := range m.latency {
		routes = append(routes, r)
	}
	slices.Sort(routes)
	fmt.Fprintln(bw, "# HELP neardup_http_request_duration_seconds Time to serve a request, by route.")
	fmt.Fprintln(bw, "# TYPE neardup_http_request_duration_seconds histogram")
	for _, r := range routes {
		h := m.latency[r]
		var cum uint64
		for i, ub := range latencyBuckets {
			cum += h.counts[i]
			fmt.Fprintf(bw, "neardup_http_request_duration_seconds_bucket{route=%q,le=%q} %d\n", r, strconv.FormatFloat(ub, 'g', -1, 64), cum)
		}
		cum += h.counts[len(latencyBuckets)]
		fmt.Fprintf(bw, "neardup_http_request_duration_seconds_bucket{route=%q,le=\"+Inf\"} %d\n", r, cum)
		fmt.Fprintf(bw, "neardup_http_request_duration_seconds_sum{route=%q} %s\n", r, strconv.FormatFloat(h.sum, 'g', -1, 64))
		fmt.Fprintf(bw, "neardup_http_request_duration_seconds_count{route=%q} %d\n", r, h.n)
	}
	m.mu.Unlock()
	counter := func(name, help string, v uint64) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", name, help, name, name, v)
	}
	gauge := func(name, help string, v float64) {
		fmt.Fprintf(bw, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", name, help, name, name, strconv.FormatFloat(v, 'g', -1, 64))
	}
	counter("neardup_documents_checked_total", "Documents checked for near-duplicates (check, check-and-add and batches).", m.checked.Load())
	counter("neardup_documents_added_total", "Documents added to the index.", m.added.Load())
	counter("neardup_documents_duplicate_total", "Checked documents found to near-duplicate an indexed one.", m.duplicates.Load())
	counter("neardup_documents_removed_total", "Documents removed from the index.", m.removed.Load())
	counter("neardup_writes_refused_disk_full_total", "Writes refused (507) because the index's disk was full.", m.diskFull.Load())
	writable := 1.0
	if s.st.Health() != nil {
		writable = 0
	}
	gauge("neardup_index_disk_free_bytes", "Free space of the index's file system.", float64(st.DiskFreeBytes))
	gauge("neardup_index_min_free_bytes", "Free space writes must leave (--min-free-mb); below it they get 507.", float64(st.MinFreeBytes))
	gauge("neardup_index_writable", "1 when the index accepts writes, 0 when its disk is full or a write failed.", writable)
	gauge("neardup_http_requests_in_flight", "Requests being served.", float64(m.inflight.Load()))
	a := s.adm
	gauge("neardup_http_request_bytes_in_flight", "Body bytes of the requests admitted and being served (Content-Length, or the body limit when undeclared).", float64(a.inflightBytes.Load()))
	gauge("neardup_http_max_request_bytes_in_flight", "The limit of neardup_http_request_bytes_in_flight (--max-inflight-bytes).", float64(a.maxBytes))
	gauge("neardup_http_max_concurrent_requests", "The most requests served at once (--max-concurrent).", float64(a.maxConc))
	fmt.Fprintln(bw, "# HELP neardup_http_requests_rejected_total Requests refused with 503 for want of room, by the limit reached.")
	fmt.Fprintln(bw, "# TYPE neardup_http_requests_rejected_total counter")
	fmt.Fprintf(bw, "neardup_http_requests_rejected_total{limit=\"concurrent\"} %d\n", a.rejectedConc.Load())
	fmt.Fprintf(bw, "neardup_http_requests_rejected_total{limit=\"bytes\"} %d\n", a.rejectedMem.Load())
	gauge("neardup_index_documents", "Documents in the index.", float64(st.Docs))
	gauge("neardup_index_disk_bytes", "Disk space used by the index, including the write-ahead log.", float64(st.DiskBytes))
	gauge("neardup_index_postings_bytes", "Memory of the in-memory band/table postings (grows with the documents).", float64(st.PostingsBytes))
	gauge("neardup_index_memtable_bytes", "Bytes held by the index's memtables.", float64(st.MemTableBytes))
	gauge("neardup_index_cache_bytes", "Bytes held by the index's block cache.", float64(st.CacheBytes))
	counter("neardup_index_cache_hits_total", "Block cache hits.", uint64(st.CacheHits))
	counter("neardup_index_cache_misses_total", "Block cache misses.", uint64(st.CacheMisses))
	counter("neardup_index_compactions_total", "Compactions run by the index.", uint64(st.Compactions))
	return bw.Flush()
}
