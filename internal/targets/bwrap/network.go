package bwrap

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/internal/hostsession"
	"github.com/gatehouse-dev/gatehouse/internal/targets/profile"
	"github.com/gatehouse-dev/gatehouse/targets"
)

// ErrSharedNetwork means the session would run in the machine's own network
// namespace. It is never allowed: packets from there reach real networks.
var ErrSharedNetwork = errors.New("refusing to run a sandbox in the machine's own network namespace")

// checkNetwork decides, before anything is created, whether the profile and
// the harness's network together keep the sandbox off the machine's network.
func checkNetwork(p *profile.Profile, n targets.Network) error {
	own := unsharesNet(SectionOf(p).Args)
	switch {
	case n.NetnsPath == "" && !own:
		return fmt.Errorf("%w: no session namespace was given and the profile's bwrap args lack --unshare-net/--unshare-all", ErrSharedNetwork)
	case n.NetnsPath == "" && p.Network != profile.NetworkNone:
		return fmt.Errorf("profile %s wants network %s but no session namespace was given", p.Name, p.Network)
	case n.NetnsPath != "":
		// Our own namespace is the one we started in (startNet); pid 1's
		// may be hidden from us (as on our CI machines), and is then
		// compared only when it is not.
		if startNetErr != nil {
			return fmt.Errorf("check network namespace: our own: %w", startNetErr)
		}
		id, err := hostsession.ReadNetnsID(n.NetnsPath)
		if err != nil {
			return fmt.Errorf("check network namespace: %w", err)
		}
		if id == startNet {
			return fmt.Errorf("%w: %s is the namespace this process started in", ErrSharedNetwork, n.NetnsPath)
		}
		same, err := sameNetns(n.NetnsPath, "/proc/1/ns/net")
		if err != nil && !errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("check network namespace: %w", err)
		}
		if same {
			return fmt.Errorf("%w: %s is the same namespace as /proc/1/ns/net", ErrSharedNetwork, n.NetnsPath)
		}
	}
	if !unsharesUser(SectionOf(p).Args) {
		return fmt.Errorf("profile %s: bwrap args need --unshare-user (or --unshare-all) so that paths can set the uid", p.Name)
	}
	return nil
}

// unsharesNet reports whether bwrap itself gives the sandbox a new, empty
// network namespace.
func unsharesNet(args []string) bool {
	// bwrap applies these in order: the last one wins.
	net := false
	for _, a := range args {
		switch a {
		case "--unshare-net", "--unshare-all":
			net = true
		case "--share-net":
			net = false
		}
	}
	return net
}

func unsharesUser(args []string) bool {
	for _, a := range args {
		switch a {
		case "--unshare-user", "--unshare-user-try", "--unshare-all", "--userns":
			return true
		}
	}
	return false
}

func sameNetns(a, b string) (bool, error) {
	var sa, sb syscall.Stat_t
	if err := syscall.Stat(a, &sa); err != nil {
		return false, err
	}
	if err := syscall.Stat(b, &sb); err != nil {
		return false, err
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino, nil
}

// startNet is the network namespace this process started in, read while
// package initialisation holds the main thread. Not /proc/self/ns/net at
// check time: that is the main thread's, and a locked goroutine that ran on
// the main thread and joined a session's namespace leaves it there (Go
// parks the main thread instead of ending it).
var startNet, startNetErr = hostsession.ReadNetnsID("/proc/thread-self/ns/net")

// PidsInNetns lists the processes whose network namespace is the one at
// path, as `ip netns pids` does.
func PidsInNetns(path string) ([]int, error) {
	id, err := hostsession.ReadNetnsID(path)
	if err != nil {
		return nil, fmt.Errorf("bwrap: netns pids: %w", err)
	}
	return id.Pids()
}
