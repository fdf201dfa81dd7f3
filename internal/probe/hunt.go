package probe

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/gatehouse-dev/gatehouse/internal/creds"
	"github.com/gatehouse-dev/gatehouse/internal/probe/wire"
	"github.com/gatehouse-dev/gatehouse/internal/unixsock"
)

// Bounds of one hunt besides the search's own.
const (
	huntProcs = 4096
	huntUses  = 8 // values presented to each Use URL
)

// doHunt searches one place for canaries and credentials (see KindHunt)
// and then presents the canaries it found to the Use URLs.
func doHunt(ctx context.Context, s wire.Step, rep *wire.Report) error {
	c := newCollector(wire.Canaries, "")
	err := gather(ctx, func() error {
		switch s.Target {
		case "env":
			env := os.Environ()
			c.values([]byte(strings.Join(env, "\n")), "env")
			c.cred(creds.InEnv(env, "env:"))
			return nil
		case "proc":
			return huntProc(ctx, c)
		}
		roots, first, cut, err := findRootsOf(s.Target, s.Hints)
		if err != nil {
			return err
		}
		noteSkipped(s.Target, c)
		if len(roots) == 1 {
			if st, err := os.Stat(roots[0]); err == nil && !st.IsDir() {
				return huntFile(ctx, roots[0], c) // its own error is the outcome
			}
		}
		err = huntSearch(ctx, roots, first, c)
		if cut != "" {
			return withPartial(err, cut)
		}
		return err
	})
	err = c.finish(rep, err)
	c.mu.Lock()
	rep.Bytes = len(c.vals) + len(c.creds)
	c.mu.Unlock()
	if vals := c.found(); len(vals) > 0 && len(s.Use) > 0 {
		present(ctx, vals, s.Use)
	}
	return err
}

// huntProc reads the environment and command line of every other process
// it may read.
func huntProc(ctx context.Context, c *collector) error {
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
		if ctx.Err() != nil {
			return &partialError{why: []string{"deadline reached after " + strconv.Itoa(n) + " processes"}}
		}
		if n >= huntProcs {
			return &partialError{why: []string{"more than " + strconv.Itoa(huntProcs) + " processes"}}
		}
		n++
		dir := filepath.Join("/proc", e.Name())
		if b, err := readLimited(dir+"/environ", searchFileHead); err == nil {
			c.values(b, "pid "+e.Name()+" environ")
			c.cred(creds.InEnv(strings.Split(string(b), "\x00"), "pid "+e.Name()+" environ:"))
		}
		if b, err := readLimited(dir+"/cmdline", searchFileHead); err == nil {
			c.values(b, "pid "+e.Name()+" cmdline")
			c.cred(creds.InText(b, "pid "+e.Name()+" cmdline"))
		}
	}
	return nil
}

// huntSearch searches folders: every file's head is read as it is met;
// the unix sockets met are asked afterwards, a few at a time, so that a
// silent one costs its own timeout and not the search's.
func huntSearch(ctx context.Context, roots []string, first int, c *collector) error {
	var mu sync.Mutex
	var socks []string
	sr := newSearch(ctx, func(p string, st *unix.Stat_t) {
		if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			_ = huntFile(ctx, p, c)
			return
		}
		if !labSocket(p) {
			mu.Lock()
			socks = append(socks, p)
			mu.Unlock()
		}
	})
	sr.first = first
	err := sr.run(roots)
	mu.Lock()
	defer mu.Unlock()
	if len(socks) > searchSockets {
		err = withPartial(err, fmt.Sprintf("%d sockets found, %d asked", len(socks), searchSockets))
		socks = socks[:searchSockets]
	}
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for _, p := range socks {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_ = huntFile(ctx, p, c)
		})
	}
	wg.Wait()
	if len(socks) > 0 && ctx.Err() != nil {
		err = withPartial(err, "deadline reached while asking sockets")
	}
	return err
}

// labSocket: a socket under a run/gatehouse folder is one of the
// harness's recording endpoints, seen through a bind of a host folder
// above it. Other sessions' are there too, and a contact is charged to
// the session the socket belongs to: never touch one found by searching.
// (The harness binds this session's own where a profile says, and names
// those paths in the plan.)
func labSocket(p string) bool { return strings.Contains(p, "/run/gatehouse/") }

// huntFile reads one file, or asks one socket, for canaries and credentials.
func huntFile(ctx context.Context, p string, c *collector) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.Mode()&os.ModeSocket != 0 {
		b, err := askSocket(ctx, p)
		c.values(b, p+" (socket)")
		c.cred(creds.InText(b, p+" (socket)"))
		return err
	}
	if !st.Mode().IsRegular() {
		return nil
	}
	c.readFile()
	b, err := readLimited(p, searchFileHead)
	c.values(b, p)
	c.cred(creds.InFile(b, p))
	return err
}

// askSocket asks a unix socket as an HTTP client would (the engine and
// most credential helpers speak HTTP) and reads the answer.
func askSocket(ctx context.Context, p string) ([]byte, error) {
	return unixsock.Ask(ctx, p, []byte("GET /v1/credentials HTTP/1.0\r\nHost: localhost\r\n\r\n"), readCap)
}

func readLimited(p string, n int) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return unixsock.ReadSome(f, n)
}

// present uses each value found against each URL, the way a stolen key is
// used: as a bearer token and as an AWS metadata token. Outcomes are not
// reported; the endpoints record what arrived. Only canaries are ever
// presented: a real credential found in a sandbox is never sent anywhere.
func present(ctx context.Context, values, urls []string) {
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if len(values) > huntUses {
		values = values[:huntUses]
	}
	var wg sync.WaitGroup
	for _, v := range values {
		if !strings.HasPrefix(v, wire.HuntPrefix) {
			continue
		}
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
