package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/hostenv"
)

const netnsDir = "/run/netns/"

// sealedNetns makes the daemon's own namespace: gh-d<5 hex> (a name the
// lab's cleanup, `gatehouse lab down`, also removes after a crash), with
// only lo up, and proves it has no route to an outside address of either
// family before anything runs in it.
func sealedNetns(ctx context.Context) (string, error) {
	name := "gh-d" + randHex(3)[:5]
	if out, err := hostenv.Command(ctx, "ip", "netns", "add", name).CombinedOutput(); err != nil {
		return "", fmt.Errorf("ip netns add %s: %v: %s", name, err, out)
	}
	steps := [][]string{{"-n", name, "link", "set", "lo", "up"}}
	for _, args := range steps {
		if out, err := hostenv.Command(ctx, "ip", args...).CombinedOutput(); err != nil {
			_ = deleteNetns(context.WithoutCancel(ctx), name)
			return "", fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	for _, dst := range []string{"192.0.2.1", "2001:db8::1", "169.254.169.254"} {
		// `ip route get` only asks the routing table: nothing is sent.
		out, err := hostenv.Command(ctx, "ip", "-n", name, "route", "get", dst).CombinedOutput()
		if err == nil {
			_ = deleteNetns(context.WithoutCancel(ctx), name)
			return "", fmt.Errorf("namespace %s has a route to %s (%s): refusing to run dockerd in it", name, dst, strings.TrimSpace(string(out)))
		}
	}
	return name, nil
}

func deleteNetns(ctx context.Context, name string) error {
	if _, err := os.Stat(netnsDir + name); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if out, err := hostenv.Command(ctx, "ip", "netns", "del", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns del %s: %v: %s", name, err, out)
	}
	return nil
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
