package cli

import (
	"fmt"

	"github.com/neardup/neardup/dedup"
)

// writeReport writes the HTML report of a dedup run.
func writeReport(path string, _ dedup.Config, _ *dedup.Stats) error {
	return fmt.Errorf("--report %s: %w", path, errNotBuilt)
}
