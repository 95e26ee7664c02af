// Package slurmtest starts a real Slurm cluster for tests: munged,
// slurmctld and two slurmd nodes (n1 and n2, `slurmd -N NAME` on their own
// loopback ports) with a generated slurm.conf, all under one temporary
// folder. cluster.sh (embedded here, and run by scripts/slurm-up and
// scripts/slurm-down) does the work; its comment says what the
// configuration chooses and why.
//
// A test that needs Slurm calls Start. When the daemons or the client
// commands are not on PATH, or the test does not run as root (slurmd must),
// the test is skipped with a message saying so, unless the environment sets
// NEARDUP_REQUIRE_SLURM=1 (CI does), in which case it fails: a CI run must
// never pass by skipping the Slurm tests.
//
// The daemons outlive a test binary that dies without its cleanups (a
// go test timeout) by a second at most: a watcher brings them down.
//
// Each Start makes its own cluster (about half a second on 2 cores) on its
// own ports, so test packages that run at once do not collide.
package slurmtest

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Require is the environment variable that turns missing Slurm (or a test
// not running as root) into a test failure instead of a skip.
const Require = "NEARDUP_REQUIRE_SLURM"

// Script is cluster.sh, the script that starts and stops a cluster.
//
//go:embed cluster.sh
var Script []byte

// binaries the cluster and its clients need.
var binaries = []string{"munged", "mungekey", "munge", "slurmctld", "slurmd", "slurmstepd",
	"sbatch", "squeue", "scontrol", "scancel", "sinfo"}

// Missing returns why a cluster cannot start here ("" when it can): a
// binary not on PATH (the daemons are looked up in /usr/sbin too), or not
// running as root.
func Missing() string {
	for _, b := range binaries {
		if _, err := lookPath(b); err != nil {
			return b + " not found on PATH: install the Debian packages slurmctld slurmd slurm-client munge"
		}
	}
	if os.Geteuid() != 0 {
		return "slurmd must run as root, and the tests do not"
	}
	return ""
}

func lookPath(b string) (string, error) {
	p, err := exec.LookPath(b)
	if err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		if st, serr := os.Stat(filepath.Join(d, b)); serr == nil && !st.IsDir() {
			return filepath.Join(d, b), nil
		}
	}
	return "", err
}

// need skips (or fails, under Require) the test when a cluster cannot
// start here.
func need(t testing.TB) {
	t.Helper()
	why := Missing()
	if why == "" {
		return
	}
	if os.Getenv(Require) == "1" {
		t.Fatalf("%s and %s=1", why, Require)
	}
	t.Skipf("%s (set %s=1 to fail instead of skipping)", why, Require)
}

// Cluster is one running test cluster.
type Cluster struct {
	// Dir is its state folder: slurm.conf, the daemons' logs
	// (slurmctld.log, slurmd-n1.log, slurmd-n2.log, munge/munged.log),
	// jobcomp.log (a line per finished job) and the spool folders.
	Dir string
	// Conf is the path of its slurm.conf: the value of SLURM_CONF for
	// sbatch, squeue, scontrol and scancel.
	Conf   string
	script string
}

// Start starts a cluster in a new temporary folder, waits until both nodes
// are idle, and sets SLURM_CONF for the rest of the test (so the test
// cannot be parallel). The cluster's jobs are cancelled and its daemons
// stopped when the test ends.
func Start(t testing.TB) *Cluster {
	t.Helper()
	need(t)
	// Not t.TempDir: unix socket paths (munge's, slurmd's) must stay
	// under 108 bytes, and test names make t.TempDir paths long.
	root, err := os.MkdirTemp("", "slurm")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: filepath.Join(root, "c"), script: filepath.Join(root, "cluster.sh")}
	c.Conf = filepath.Join(c.Dir, "slurm.conf")
	t.Cleanup(func() {
		if err := c.Down(); err != nil {
			t.Errorf("slurmtest: %v", err)
		}
		os.RemoveAll(root)
	})
	if err := os.WriteFile(c.script, Script, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// A port chosen as free may be taken before the daemon binds it (by
	// another test package's cluster): try again with new ports.
	for try := 1; ; try++ {
		err := c.run("up")
		if err == nil {
			break
		}
		if try == 3 {
			t.Fatalf("slurmtest: %v", err)
		}
		t.Logf("slurmtest: try %d: %v", try, err)
		c.Down()
		os.Remove(filepath.Join(c.Dir, "ports"))
	}
	t.Logf("slurmtest: cluster of n1, n2 up in %v (state in %s)", time.Since(start).Round(time.Millisecond), c.Dir)
	t.Setenv("SLURM_CONF", c.Conf)
	return c
}

// Down cancels the cluster's jobs and stops its daemons; the state folder
// stays until the test ends. Up starts them again.
func (c *Cluster) Down() error { return c.run("down") }

// Up starts the cluster again after Down, with the same ports and state.
func (c *Cluster) Up() error { return c.run("up") }

func (c *Cluster) run(action string) error {
	cmd := exec.Command("bash", c.script, action, c.Dir)
	cmd.Env = append(os.Environ(), "PATH="+os.Getenv("PATH")+":/usr/sbin:/sbin",
		"NEARDUP_SLURM_OWNER="+strconv.Itoa(os.Getpid()))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("cluster.sh %s: %v\n%s", action, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Logs returns the last lines of the daemons' logs, for a test's failure
// message.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, f := range []string{"slurmctld.log", "slurmd-n1.log", "slurmd-n2.log", "jobcomp.log"} {
		data, err := os.ReadFile(filepath.Join(c.Dir, f))
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", f, strings.Join(lines, "\n"))
	}
	return b.String()
}
