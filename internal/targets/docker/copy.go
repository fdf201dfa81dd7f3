package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
)

// CopyIn writes one file through the daemon's archive API, owned by root.
// The archive is unpacked at the deepest folder that surely exists (the
// tools folder, or the file's own folder) because the daemon judges
// read-only-ness by that folder: on a read-only root, only copies into a
// writable volume (the tools volume) are allowed.
func (s *Session) CopyIn(ctx context.Context, p string, r io.Reader, mode fs.FileMode) error {
	if !path.IsAbs(p) || path.Clean(p) == "/" {
		return fmt.Errorf("docker: copy in: %q is not an absolute file path", p)
	}
	p = path.Clean(p)
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("docker: copy in %s: %w", p, err)
	}
	dest := path.Dir(p)
	if strings.HasPrefix(p, toolsDir+"/") {
		dest = toolsDir
	}
	err = s.copyTar(ctx, dest, p, data, mode)
	if cerrdefs.IsNotFound(err) && dest != "/" {
		// The folder is missing: unpack at / with its parents in the archive.
		err = s.copyTar(ctx, "/", p, data, mode)
	}
	if err != nil {
		return fmt.Errorf("docker: copy in %s: %w", p, err)
	}
	if p == wire.SandboxPath {
		s.hasProbe.Store(true)
	}
	return nil
}

// copyTar sends a tar holding p (relative to dest, with any folders in
// between) to be unpacked at dest.
func (s *Session) copyTar(ctx context.Context, dest, p string, data []byte, mode fs.FileMode) error {
	rel := strings.TrimPrefix(strings.TrimPrefix(p, dest), "/")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	now := time.Now()
	parts := strings.Split(rel, "/")
	// Folders made under the session's work folder are the session's own
	// to write in, whatever user it runs as (an agent's home, say).
	dirMode := int64(0o755)
	if strings.HasPrefix(p, workDir+"/") {
		dirMode = 0o1777
	}
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/") + "/"
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: dirMode, ModTime: now}); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Mode: int64(mode.Perm()), Size: int64(len(data)), ModTime: now}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	_, err := s.cli.CopyToContainer(ctx, s.id, client.CopyToContainerOptions{DestinationPath: dest, Content: &buf})
	return err
}
