package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/moby/moby/client"
)

// BusyboxPath is the static busybox that busybox-static installs.
const BusyboxPath = "/bin/busybox"

// baseApplets are the busybox applets the probe image links; the probe
// itself is copied in per session.
var baseApplets = []string{"sh", "cat", "sleep", "env", "id", "uname", "ls", "ip", "nc", "kill", "mkdir", "true", "grep", "test"}

// BaseImage imports the probe base image into the daemon at host (no
// registry: a FROM-scratch root filesystem with a static busybox, made
// here as a tar) and returns its reference, gatehouse/probe-base:<digest>.
// The tar is deterministic, so the tag names its exact content and a
// second call finds the image already there.
func BaseImage(ctx context.Context, host, busybox string) (string, error) {
	tarball, err := baseRootfs(busybox)
	if err != nil {
		return "", fmt.Errorf("docker: base image: %w", err)
	}
	sum := sha256.Sum256(tarball)
	ref := "gatehouse/probe-base:" + hex.EncodeToString(sum[:])[:12]
	cli, err := client.New(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		return "", fmt.Errorf("docker: base image: %w", err)
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	}
	res, err := cli.ImageImport(ctx, client.ImageImportSource{Source: bytes.NewReader(tarball), SourceName: "-"}, ref,
		client.ImageImportOptions{Message: "gatehouse probe base (busybox-static)", Changes: []string{`CMD ["/bin/sleep", "infinity"]`}})
	if err != nil {
		return "", fmt.Errorf("docker: base image: import: %w", err)
	}
	defer res.Close()
	// The import finishes when the progress stream ends.
	if _, err := new(bytes.Buffer).ReadFrom(res); err != nil {
		return "", fmt.Errorf("docker: base image: import: %w", err)
	}
	if _, err := cli.ImageInspect(ctx, ref); err != nil {
		return "", fmt.Errorf("docker: base image: after import: %w", err)
	}
	return ref, nil
}

// baseRootfs builds the root filesystem tar: /bin/busybox, applet
// symlinks, /tmp (1777), /gatehouse/bin for the probe, and passwd/group
// entries so a numeric user shows a name.
func baseRootfs(busybox string) ([]byte, error) {
	bin, err := os.ReadFile(busybox)
	if err != nil {
		return nil, err
	}
	if err := checkStatic(busybox); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, ModTime: epoch})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	steps := []func() error{
		func() error { return dir("bin/", 0o755) },
		func() error { return dir("etc/", 0o755) },
		func() error { return dir("tmp/", 0o1777) },
		func() error { return dir("gatehouse/", 0o755) },
		func() error { return dir("gatehouse/bin/", 0o755) },
		// A folder every exec of a session may write (the conformance
		// suite's WorkDir); a read-only root gets it through the volume.
		func() error { return dir("gatehouse/work/", 0o1777) },
		func() error { return file("bin/busybox", 0o755, bin) },
		func() error {
			return file("etc/passwd", 0o644, []byte("root:x:0:0:root:/:/bin/sh\nagent:x:1000:1000:agent:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"))
		},
		func() error { return file("etc/group", 0o644, []byte("root:x:0:\nagent:x:1000:\nnogroup:x:65534:\n")) },
	}
	for _, a := range baseApplets {
		steps = append(steps, func() error {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: epoch})
		})
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// checkStatic refuses a dynamically linked busybox: a FROM-scratch image
// has no loader or libc.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (install busybox-static)", path)
		}
	}
	return nil
}
