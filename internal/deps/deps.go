//go:build tools

// Package deps pins the modules chosen in the design card until code imports them.
package deps

import (
	_ "github.com/cucumber/godog"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/in-toto/attestation/go/v1"
	_ "github.com/miekg/dns"
	_ "github.com/sigstore/cosign/v2/pkg/cosign"
	_ "github.com/sigstore/sigstore-go/pkg/sign"
	_ "github.com/stretchr/testify/require"
	_ "github.com/testcontainers/testcontainers-go"
	_ "golang.org/x/net/icmp"
	_ "golang.org/x/sys/unix"
	_ "gopkg.in/yaml.v3"
	_ "modernc.org/sqlite"
)
