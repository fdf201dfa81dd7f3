package main

import (
	"context"
	"fmt"
	"io"

	"gatehouse/evidence"
)

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fmt.Fprintln(stdout, "gatehouse", evidence.HarnessVersion())
	return nil
}
