package pipeline

import (
	"flag"
	"log/slog"
	"os"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
)

func TestMain(m *testing.M) {
	flag.Parse()
	beam.Init()
	if !testing.Verbose() {
		slog.SetLogLoggerLevel(slog.LevelWarn)
	}
	os.Exit(m.Run())
}
