package probe

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// proxyVars are the variables that name a proxy.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// commonProxyPorts are where in-sandbox proxy bridges listen (socks 1080,
// squid 3128, privoxy 8118, the usual 8080/8888, tor 9050), besides the
// ports the proxy variables name.
var commonProxyPorts = []int{1080, 3128, 8080, 8118, 8888, 9050}

// takeDownProxy clears the proxy settings and kills the processes that
// listen on loopback on a proxy port: a bridge that carries the sandbox's
// traffic to a proxy outside. Killing needs the probe's own pid namespace.
func takeDownProxy(s wire.Step, l *tdLog) error {
	ports := map[int]bool{}
	for _, p := range commonProxyPorts {
		ports[p] = true
	}
	var set []string
	for _, v := range proxyVars {
		val, ok := os.LookupEnv(v)
		if !ok {
			continue
		}
		set = append(set, v)
		if u, err := url.Parse(val); err == nil && loopbackHost(u.Hostname()) {
			if p, err := strconv.Atoi(u.Port()); err == nil {
				ports[p] = true
			}
		}
		_ = os.Unsetenv(v)
	}
	if len(set) > 0 {
		// Only this process's copy changes; the attempts never honour them
		// anyway (the ignore-proxy attempt), so no control falls here.
		l.add(wire.TakedownUnchanged, "proxy settings %s dropped from this process: advice the attempts already ignore, not a control", strings.Join(set, " "))
	}
	if err := ownNamespace("pid", s.Outside); err != nil {
		l.add(wire.TakedownSkipped, "kill proxy bridges: %v", err)
		return err
	}
	listeners, err := loopbackListeners(ports)
	if err != nil {
		l.add(wire.TakedownFailed, "list loopback listeners: %v", err)
		return nil
	}
	if len(listeners) == 0 {
		l.add(wire.TakedownUnchanged, "no process listens on loopback on a proxy port")
		return nil
	}
	owners, unread := socketOwners()
	for _, ino := range sortedInodes(listeners) {
		pids := owners[ino]
		if len(pids) == 0 {
			l.add(wire.TakedownSkipped, "listener on %s: owner not visible (%d processes' fds unreadable)", listeners[ino], unread)
			continue
		}
		for _, pid := range pids {
			what := fmt.Sprintf("kill pid %d (%s) listening on %s", pid, comm(pid), listeners[ino])
			if pid == 1 || pid == os.Getpid() {
				l.add(wire.TakedownSkipped, "%s: the sandbox's init or the probe itself", what)
				continue
			}
			l.result(what, syscall.Kill(pid, syscall.SIGKILL))
		}
	}
	return nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// loopbackListeners maps socket inode -> "addr:port" for TCP sockets in
// LISTEN on a loopback (or any) address and one of ports.
func loopbackListeners(ports map[int]bool) (map[uint64]string, error) {
	out := map[uint64]string{}
	var errs []error
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, err) // no tcp6 where IPv6 is off: fine if tcp reads
			continue
		}
		for ino, addr := range parseListeners(string(b), ports) {
			out[ino] = addr
		}
	}
	if len(errs) == 2 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// parseListeners reads /proc/net/tcp{,6} lines:
// "sl local_address rem_address st ... uid timeout inode".
func parseListeners(table string, ports map[int]bool) map[uint64]string {
	out := map[uint64]string{}
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) < 10 || f[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		hexAddr, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseUint(hexPort, 16, 16)
		ino, err2 := strconv.ParseUint(f[9], 10, 64)
		if err != nil || err2 != nil || !ports[int(port)] {
			continue
		}
		ip := procIP(hexAddr)
		if ip == nil || !(ip.IsLoopback() || ip.IsUnspecified()) {
			continue
		}
		out[ino] = net.JoinHostPort(ip.String(), strconv.Itoa(int(port)))
	}
	return out
}

// procIP decodes /proc/net/tcp's address: 32-bit words in host order.
func procIP(h string) net.IP {
	if len(h) != 8 && len(h) != 32 {
		return nil
	}
	b := make(net.IP, len(h)/2)
	for i := 0; i < len(h)/8; i++ {
		w, err := strconv.ParseUint(h[i*8:i*8+8], 16, 32)
		if err != nil {
			return nil
		}
		// The kernel prints each network-order word as a host u32.
		binary.NativeEndian.PutUint32(b[i*4:], uint32(w))
	}
	return b
}

// socketOwners maps socket inode -> pids holding it, and counts the
// processes whose fds could not be read.
func socketOwners() (map[uint64][]int, int) {
	out := map[uint64][]int{}
	unread := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*/fd")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if err != nil {
			continue
		}
		ents, err := os.ReadDir(d)
		if err != nil {
			unread++
			continue
		}
		for _, e := range ents {
			link, err := os.Readlink(filepath.Join(d, e.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]"), 10, 64); err == nil {
				out[ino] = append(out[ino], pid)
			}
		}
	}
	return out, unread
}

func comm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return "?"
	}
	return clip(strings.TrimSpace(string(b)), 32)
}

func sortedInodes(m map[uint64]string) []uint64 {
	out := make([]uint64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// readFirstLine is the first line of a small file.
func readFirstLine(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if sc.Scan() {
		return strings.TrimSpace(sc.Text()), nil
	}
	return "", sc.Err()
}
