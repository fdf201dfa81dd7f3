package main

import (
	"context"
	"fmt"
	"io"

	"github.com/gatehouse-dev/gatehouse/evidence"
)

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fmt.Fprintln(stdout, "gatehouse", evidence.HarnessVersion())
	return nil
}
