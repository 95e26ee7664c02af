package executor

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Print runs nothing: it writes the stages' task commands, a shell script
// that runs them in order, to Out, and a Kubernetes Indexed Job manifest a
// stage to Manifest(name, bytes) (each pod gets its index from
// JOB_COMPLETION_INDEX, which `neardup task` reads). The stages must run
// in order, each after every task of the one before it succeeded.
type Print struct {
	Out io.Writer
	// Manifest receives each stage's manifest, named NN-STAGE.yaml; nil
	// writes none.
	Manifest func(name string, b []byte) error
	// Program replaces the command's program (the path of this binary)
	// in what is written: "neardup", as in a container image.
	Program string
	// Image is the manifests' container image.
	Image string
	// Job names the manifests' Jobs, Job-STAGE, and is their
	// app.kubernetes.io/instance label: a DNS-1123 label of at most 50
	// characters, different for each job that may share a namespace (the
	// command derives it from the work folder). "neardup" when empty.
	Job string
}

func (p *Print) Run(ctx context.Context, stages []Stage) error {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# The tasks of a staged neardup job. Within a stage the tasks are\n# independent (run them anywhere, in any order, at once); a stage starts\n# when every task of the one before it has succeeded. A task that is done\n# does nothing when run again.\nset -e\n")
	for k, st := range stages {
		args := p.args(st)
		fmt.Fprintf(&b, "\n# stage %d: %s, %d task(s)\n", k+1, st.Name, st.Tasks)
		fmt.Fprintf(&b, "for i in $(seq 0 %d); do %s \"$i\"; done\n", st.Tasks-1, shellJoin(args))
		if p.Manifest != nil {
			if err := p.Manifest(fmt.Sprintf("%02d-%s.yaml", k+1, st.Name), p.manifest(st, args)); err != nil {
				return err
			}
		}
	}
	_, err := io.WriteString(p.Out, b.String())
	return err
}

func (p *Print) args(st Stage) []string {
	args := append([]string(nil), st.Args...)
	if p.Program != "" && len(args) > 0 {
		args[0] = p.Program
	}
	return args
}

// manifest is st's Indexed Job: one pod an index, the index from
// JOB_COMPLETION_INDEX. The memory request and limit are st.Memory (the
// task's --task-memory, which is also its garbage collector's limit); the
// CPU request st.CPUs, with no CPU limit (a limit throttles the garbage
// collector's threads). Credentials come from the optional secret
// neardup-storage (its keys become environment variables: AWS_*,
// GOOGLE_APPLICATION_CREDENTIALS...) or from the pod's service account
// (IRSA, GKE Workload Identity).
func (p *Print) manifest(st Stage, args []string) []byte {
	image := p.Image
	if image == "" {
		image = "neardup:latest"
	}
	job := p.Job
	if job == "" {
		job = "neardup"
	}
	name := jobName(st.Name)
	var b strings.Builder
	fmt.Fprintf(&b, "# Stage %s of a staged neardup job: apply it when the job of the stage\n# before it is complete (kubectl wait --for=condition=complete job/...).\n", st.Name)
	b.WriteString("apiVersion: batch/v1\nkind: Job\nmetadata:\n")
	fmt.Fprintf(&b, "  name: %s-%s\n", job, name)
	fmt.Fprintf(&b, "  labels:\n    app.kubernetes.io/name: neardup\n    app.kubernetes.io/instance: %s\n    app.kubernetes.io/component: %s\n", job, name)
	b.WriteString("spec:\n  completionMode: Indexed\n")
	fmt.Fprintf(&b, "  completions: %d\n  parallelism: %d\n", st.Tasks, st.Tasks)
	b.WriteString("  # a failed index is retried 3 times (Kubernetes 1.29 or later), then the job fails\n")
	b.WriteString("  backoffLimitPerIndex: 3\n  maxFailedIndexes: 0\n")
	b.WriteString("  template:\n    metadata:\n")
	fmt.Fprintf(&b, "      labels:\n        app.kubernetes.io/name: neardup\n        app.kubernetes.io/instance: %s\n        app.kubernetes.io/component: %s\n", job, name)
	b.WriteString("    spec:\n      restartPolicy: Never\n      containers:\n      - name: task\n")
	fmt.Fprintf(&b, "        image: %q\n", image)
	b.WriteString("        # the task index comes from JOB_COMPLETION_INDEX\n        command: [")
	for k, a := range args {
		if k > 0 {
			b.WriteString(", ")
		}
		// Kubernetes expands $(VAR) in a container's command and
		// reduces $$ to $: every $ doubled comes back as written (a
		// work folder such as s3://b/$$run or /data/$(date) included).
		fmt.Fprintf(&b, "%q", strings.ReplaceAll(a, "$", "$$"))
	}
	b.WriteString("]\n")
	b.WriteString("        envFrom:\n        - secretRef:\n            name: neardup-storage\n            optional: true\n")
	if st.Memory > 0 || st.CPUs > 0 {
		b.WriteString("        resources:\n          requests:\n")
		if st.Memory > 0 {
			fmt.Fprintf(&b, "            memory: \"%d\"\n", st.Memory)
		}
		if st.CPUs > 0 {
			fmt.Fprintf(&b, "            cpu: \"%d\"\n", st.CPUs)
		}
		if st.Memory > 0 {
			fmt.Fprintf(&b, "          limits:\n            memory: \"%d\"\n", st.Memory)
		}
	}
	return []byte(b.String())
}

var unsafeName = regexp.MustCompile(`[^a-z0-9-]+`)

func jobName(s string) string { return unsafeName.ReplaceAllString(strings.ToLower(s), "-") }

// shellJoin quotes args for sh, each in single quotes unless it is made of
// safe characters only; inside single quotes only the quote itself is
// special, and is written as '\” (close, escaped quote, reopen).
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for k, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
			q[k] = a
		} else {
			q[k] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}
