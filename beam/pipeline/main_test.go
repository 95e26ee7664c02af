package pipeline

import (
	"flag"
	"os"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Verbose() {
		beamlog.LogLevel = "warn"
	}
	beam.Init()
	os.Exit(m.Run())
}
