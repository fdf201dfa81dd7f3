package probe

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

const (
	factFileCap = 64 << 10 // bytes read from one /proc file
	resolvCap   = 4096     // bytes of resolv.conf kept
	mountsCap   = 500      // mount lines kept
)

// ReadFacts reads what the sandbox looks like from inside. Nothing is
// guessed: a value that cannot be read stays empty and is named in Errors.
func ReadFacts() wire.Facts {
	var f wire.Facts
	fail := func(what string, err error) { f.Errors = append(f.Errors, what+": "+err.Error()) }

	if status, err := readCapped("/proc/self/status", factFileCap); err != nil {
		fail("status", err)
	} else {
		fillStatus(&f, status, fail)
	}
	if m, err := readCapped("/proc/self/uid_map", factFileCap); err != nil {
		fail("uid_map", err)
	} else {
		f.UIDMap = strings.TrimSpace(m)
	}
	if m, err := readCapped("/proc/self/gid_map", factFileCap); err != nil {
		fail("gid_map", err)
	} else {
		f.GIDMap = strings.TrimSpace(m)
	}
	f.Namespaces = readNamespaces(fail)
	if mi, err := readCapped("/proc/self/mountinfo", 1<<20); err != nil {
		fail("mountinfo", err)
	} else {
		f.Mounts = parseMountinfo(mi)
	}
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		fail("uname", err)
	} else {
		f.Hostname = unix.ByteSliceToString(uts.Nodename[:])
		f.Kernel = unix.ByteSliceToString(uts.Release[:]) + " " + unix.ByteSliceToString(uts.Version[:])
	}
	if addrs, err := interfaceAddrs(); err != nil {
		fail("addrs", err)
	} else {
		f.Addrs = addrs
	}
	if rc, err := readCapped("/etc/resolv.conf", resolvCap); err != nil {
		fail("resolv.conf", err)
	} else {
		f.Resolv = rc
	}
	return f
}

// fillStatus takes the effective IDs and security fields of a status file.
func fillStatus(f *wire.Facts, status string, fail func(string, error)) {
	fields := map[string]string{}
	for line := range strings.Lines(status) {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	id := func(key string, dst *int) {
		ids := strings.Fields(fields[key]) // real, effective, saved, fs
		if len(ids) < 2 {
			fail("status", fmt.Errorf("no %s line", key))
			return
		}
		n, err := strconv.Atoi(ids[1])
		if err != nil {
			fail("status", fmt.Errorf("%s: %w", key, err))
			return
		}
		*dst = n
	}
	id("Uid", &f.UID)
	id("Gid", &f.GID)
	f.CapEff, f.CapBnd = fields["CapEff"], fields["CapBnd"]
	f.Seccomp, f.NoNewPrivs = fields["Seccomp"], fields["NoNewPrivs"]
}

func readNamespaces(fail func(string, error)) map[string]string {
	entries, err := os.ReadDir("/proc/self/ns")
	if err != nil {
		fail("ns", err)
		return nil
	}
	ns := make(map[string]string, len(entries))
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join("/proc/self/ns", e.Name()))
		if err != nil {
			fail("ns "+e.Name(), err)
			continue
		}
		ns[e.Name()] = link
	}
	return ns
}

// parseMountinfo turns mountinfo lines into "mountpoint fstype options".
// Fields after the optional tags start behind the " - " separator.
func parseMountinfo(mi string) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(mi))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() && len(out) < mountsCap {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, fld := range fields {
			if fld == "-" && i >= 6 {
				sep = i
				break
			}
		}
		if sep < 0 || len(fields) < sep+2 {
			continue
		}
		out = append(out, fields[4]+" "+fields[sep+1]+" "+fields[5])
	}
	return out
}

func interfaceAddrs() ([]string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			return out, fmt.Errorf("%s: %w", ifc.Name, err)
		}
		for _, a := range addrs {
			out = append(out, ifc.Name+" "+a.String())
		}
	}
	sort.Strings(out)
	return out, nil
}

func readCapped(path string, n int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, io.LimitReader(f, n)); err != nil {
		return "", err
	}
	return b.String(), nil
}
