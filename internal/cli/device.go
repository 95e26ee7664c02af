package cli

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/neardup/neardup/dedup"
)

// registerDevice adds --device, which sign and dedup share.
func registerDevice(fs *pflag.FlagSet, p *string) {
	fs.StringVar(p, "device", "cpu", "where to sketch: cpu; gpu (an NVIDIA GPU through the CUDA driver, for minhash oph or\n"+
		"multiply-shift and simhash set or count weights; exit 2 when none is usable; docs/gpu.md); or auto (the GPU\n"+
		"when usable, else the CPU; the JSON summary's \"device\" says which and why)")
}

// parseDevice sets cfg.Device from the flag's value.
func parseDevice(cfg *dedup.Options, s string) error {
	if s == "" { // a command without the flag
		return nil
	}
	d, err := dedup.ParseDevice(s)
	if err != nil {
		return usageErr("--device: %v", err)
	}
	cfg.Device = d
	return nil
}

// printDevice writes where the documents were sketched, when --device
// was given.
func printDevice(w io.Writer, d *dedup.DeviceStats) {
	if d == nil {
		return
	}
	if d.Used != "gpu" {
		fmt.Fprintf(w, "sketched on the CPU (--device %s: %s)\n", d.Requested, d.Reason)
		return
	}
	fmt.Fprintf(w, "sketched on the GPU, %s: %d documents there, %d on the CPU (%d launches)\n", d.Name, d.GPUDocs, d.CPUFallbackDocs, d.GPUBatches)
}
