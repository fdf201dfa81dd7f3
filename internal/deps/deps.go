//go:build tools

// Package deps pins the modules chosen in the design card until code imports them.
package deps

import (
	_ "github.com/cucumber/godog"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/miekg/dns"
	_ "github.com/stretchr/testify/require"
	_ "gopkg.in/yaml.v3"
	_ "golang.org/x/net/icmp"
	_ "golang.org/x/sys/unix"
	_ "modernc.org/sqlite"
	_ "github.com/sigstore/sigstore-go/pkg/sign"
	_ "github.com/sigstore/cosign/v2/pkg/cosign"
	_ "github.com/in-toto/attestation/go/v1"
	_ "github.com/testcontainers/testcontainers-go"
)
