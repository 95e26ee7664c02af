package cli

import (
	"bufio"
	"fmt"
	"strings"
	"time"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/atomicfile"
	"github.com/neardup/neardup/internal/sample"
	"github.com/neardup/neardup/internal/staged"
	"github.com/neardup/neardup/report"
)

// writeReportFrom writes the HTML report of a dedup run, atomically;
// source describes the input in words ("" leaves it out; see
// reportSource).
func writeReportFrom(path string, cfg dedup.Options, stats *dedup.Stats, source string, removed *removedIDs) error {
	run := &report.Run{
		Options:   cfg,
		Stats:     stats,
		Source:    source,
		Memory:    report.ReadMemory(),
		Generated: time.Now(),
	}
	if removed != nil {
		run.RemovedIDs, run.RemovedOmitted = removed.ids, removed.omitted
	}
	return writeReportRun(path, run)
}

// writeStagedReport writes the HTML report of a staged job, atomically:
// its Stats and, from the finish task (staged.ReportFile), the examples
// and the removed ids; in place of one process's stage times and memory,
// what its tasks used (usage.json).
func writeStagedReport(path string, cfg dedup.Options, stats *dedup.Stats, source string, rf *staged.ReportFile, usage []stageUsage) error {
	stats.Examples = rf.Examples
	run := &report.Run{Options: cfg, Stats: stats, Source: source, Generated: time.Now(),
		RemovedIDs: rf.RemovedIDs, RemovedOmitted: rf.RemovedOmitted}
	for _, u := range usage {
		run.Tasks = append(run.Tasks, report.StageUsage{Stage: u.Stage, Tasks: u.Tasks, CPUSeconds: u.CPUSeconds, LargestRSS: u.LargestRSS})
	}
	return writeReportRun(path, run)
}

// checkReportPath says now, before a long job, when --report cannot be
// written, as dedup checks its --stats and --report (checkOutputPath): it
// creates the report's temporary file beside it and removes it, never
// opening the target itself; a pipe or device (a process substitution,
// /dev/null) is left alone, as opening and closing it would end the
// reader's input before the report is written.
func checkReportPath(path string) error {
	return checkOutputPath("--report", path)
}

// writeReportRun renders run to path, atomically.
func writeReportRun(path string, run *report.Run) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return outputErr("--report", path, err)
	}
	defer f.Abort()
	w := bufio.NewWriter(f)
	if err := report.Write(w, run, report.Options{}); err != nil {
		return fmt.Errorf("--report %s: %w", path, err)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Commit()
}

// removedIDs collects the removed ids for the report, up to
// report.MaxRemovedBytes: past it they are dropped, and omitted says so.
type removedIDs struct {
	ids     []string
	bytes   int
	omitted bool
}

func (r *removedIDs) add(id string) {
	if r.omitted {
		return
	}
	r.bytes += len(id) + 1
	if r.bytes > report.MaxRemovedBytes {
		r.ids, r.omitted = nil, true
		return
	}
	r.ids = append(r.ids, id)
}

// reportSource describes the input of a run for the report: the embedded
// sample corpus, or the input files (the first few, then how many more).
func reportSource(sampleRun bool, files []string) string {
	if sampleRun {
		return "the embedded sample corpus (" + sample.Name + ")"
	}
	names := make([]string, 0, len(files))
	for _, f := range files {
		if f == "-" {
			f = "standard input"
		}
		names = append(names, f)
	}
	const show = 5
	if len(names) > show {
		return strings.Join(names[:show], ", ") + fmt.Sprintf(" and %d more files", len(names)-show)
	}
	return strings.Join(names, ", ")
}
