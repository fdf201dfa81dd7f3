package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/gatehouse-dev/gatehouse/evidence/keys"
)

const keysHelp = `Usage: gatehouse keys generate [--out PREFIX]

Makes a cosign-format key pair: PREFIX.key (the private key, encrypted with
the password in COSIGN_PASSWORD, mode 0600) and PREFIX.pub. It refuses to
overwrite either file. Keys made with 'cosign generate-key-pair' work the
same way with 'gatehouse run --key' and 'gatehouse verify --key'.

Example:
  COSIGN_PASSWORD=... gatehouse keys generate --out ci/cosign

Flags:
`

func runKeys(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(stderr, keysHelp)
		fmt.Fprintln(stderr, "  -out string\n    \tpath prefix: writes PREFIX.key and PREFIX.pub (default \"cosign\")")
		return nil
	}
	if len(args) == 0 || args[0] != "generate" {
		fmt.Fprint(stderr, keysHelp)
		return usagef("keys: want 'keys generate'")
	}
	fl := newFlagSet(ctx, "keys generate")
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, keysHelp); fl.PrintDefaults() }
	prefix := fl.String("out", "cosign", "path prefix: writes PREFIX.key and PREFIX.pub")
	shortFlags(fl)
	if err := fl.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &usageError{err}
	}
	if fl.NArg() > 0 {
		return usagef("keys generate: unexpected argument %q", fl.Arg(0))
	}
	pw, err := keys.Password()
	if err != nil {
		return usagef("keys generate: %w", err)
	}
	keyPath, pubPath, err := keys.GenerateFiles(*prefix, pw)
	if err != nil {
		return usagef("keys generate: %w", err)
	}
	v, err := keys.LoadVerifierFile(pubPath)
	if err != nil {
		return fmt.Errorf("keys generate: read back %s: %w", pubPath, err)
	}
	fmt.Fprintf(stdout, "private key: %s (encrypted with COSIGN_PASSWORD; keep it secret)\n", keyPath)
	fmt.Fprintf(stdout, "public key:  %s (give it to auditors and to 'gatehouse gate')\n", pubPath)
	fmt.Fprintf(stdout, "fingerprint: %s\n", v.Fingerprint())
	return nil
}
