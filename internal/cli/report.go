package cli

import (
	"bufio"
	"time"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/atomicfile"
	"github.com/neardup/neardup/report"
)

// writeReport writes the HTML report of a dedup run, atomically.
func writeReport(path string, cfg dedup.Config, stats *dedup.Stats) error {
	return writeReportFrom(path, cfg, stats, "")
}

// writeReportFrom writes the HTML report of a dedup run whose input
// source describes ("" leaves it out), atomically.
func writeReportFrom(path string, cfg dedup.Config, stats *dedup.Stats, source string) error {
	run := &report.Run{
		Config:    cfg,
		Stats:     stats,
		Source:    source,
		Memory:    report.ReadMemory(),
		Generated: time.Now(),
	}
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	w := bufio.NewWriter(f)
	if err := report.Write(w, run, report.Options{}); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Commit()
}
