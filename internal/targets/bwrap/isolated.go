package bwrap

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"

	"github.com/gatehouse-dev/gatehouse/internal/namedns"
)

// isolatedNetns makes an empty network namespace (only lo, no route
// anywhere) for a session the harness gave no namespace. The sandbox then
// never starts in the machine's own namespace, whatever its bubblewrap
// arguments say: an argument list is a weak guarantee (--share-net after
// --unshare-net, an option value that looks like a flag), a namespace of our
// own is not. It is made in-process, as `ip netns add` makes one.
func isolatedNetns(ctx context.Context) (name, path string, err error) {
	if err := ctx.Err(); err != nil {
		return "", "", err
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", "", err
	}
	name = "gh-n" + hex.EncodeToString(b)
	// A crashed run's namespace is removed by the next sweep.
	release, err := namedns.AddRecorded(name)
	if err != nil {
		return "", "", fmt.Errorf("create isolated namespace: %w", err)
	}
	netnsReleases.Store(name, release)
	return name, namedns.Path(name), nil
}

// netnsReleases holds, by name, the ledger release of each isolated
// namespace this process made (names are random, so never shared).
var netnsReleases sync.Map

func deleteNetns(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	if err := namedns.Delete(name); err != nil {
		return fmt.Errorf("delete isolated namespace: %w", err)
	}
	if rel, ok := netnsReleases.LoadAndDelete(name); ok {
		rel.(func())()
	}
	return nil
}
