package index_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/evidence/index"
)

// writerEnv makes the test binary act as one writer process.
const writerEnv = "GATEHOUSE_INDEX_TEST_WRITER"

func TestMain(m *testing.M) {
	if spec := os.Getenv(writerEnv); spec != "" {
		os.Exit(writer(spec))
	}
	os.Exit(m.Run())
}

// writer records 40 runs into the index named in spec ("name=path").
func writer(spec string) int {
	var name, path string
	if _, err := fmt.Sscanf(spec, "%s %s", &name, &path); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	ix, err := index.Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer ix.Close()
	for i := 0; i < 40; i++ {
		if err := ix.Record(ctx, row(fmt.Sprintf("%s-%d", name, i), "p", "", t0.Add(time.Duration(i)*time.Second))); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// TestTwoProcesses runs two writer processes on one new index file at once.
func TestTwoProcesses(t *testing.T) {
	path := filepath.Join(t.TempDir(), index.DefaultName)
	var cmds []*exec.Cmd
	for _, name := range []string{"one", "two"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), writerEnv+"="+name+" "+path)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("writer process: %v", err)
		}
	}
	ix := open(t, path)
	hist, err := ix.History(context.Background(), 0)
	if err != nil || len(hist) != 80 {
		t.Fatalf("History = %d runs (%v), want 80", len(hist), err)
	}
}
