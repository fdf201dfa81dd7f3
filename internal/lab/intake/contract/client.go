package contract

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/hostenv"
	"github.com/gatehouse-dev/gatehouse/internal/lab/intake"
	"github.com/gatehouse-dev/gatehouse/internal/minted"
)

// maxShown bounds the request and response bodies kept in an Exchange.
const maxShown = 2 << 10

// Exchange is one request the gate made and what came back, as evidence.
// The token is shown only as its hash.
type Exchange struct {
	Op       string `json:"op"`
	Request  string `json:"request"`            // request line, token hash, first bytes of the body
	Status   int    `json:"status"`             // 0 when no response came
	Response string `json:"response,omitempty"` // first bytes of the response body
	Error    string `json:"error,omitempty"`    // why no response came
	body     []byte // the whole response body (bounded), for read-backs
}

// Mint gets a token for a subject that expires after ttl.
type Mint func(ctx context.Context, s intake.Subject, ttl time.Duration) (string, error)

// CommandMint runs a token command: the words of cmd (split on spaces, no
// shell) followed by --run R --report P --tenant T --ttl D. Its first line
// of output is the token.
func CommandMint(cmd string) Mint {
	words := strings.Fields(cmd)
	return func(ctx context.Context, s intake.Subject, ttl time.Duration) (string, error) {
		if len(words) == 0 {
			return "", fmt.Errorf("contract: token command is empty")
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		args := append(append([]string(nil), words[1:]...),
			"--run", s.Run, "--report", s.Report, "--tenant", s.Tenant, "--ttl", ttl.String())
		var out, errb bytes.Buffer
		c := hostenv.Command(ctx, words[0], args...)
		c.Env = hostenv.Gatehouse() // the reference service's is gatehouse itself
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			return "", fmt.Errorf("contract: token command: %w: %s", err, strings.TrimSpace(errb.String()))
		}
		tok := strings.TrimSpace(strings.SplitN(out.String(), "\n", 2)[0])
		if tok == "" {
			return "", fmt.Errorf("contract: token command printed no token")
		}
		// A team's token, in a format the harness does not know: only its
		// exact value keeps it out of what is printed.
		minted.Register(minted.IntakeToken, tok)
		return tok, nil
	}
}

// MinterMint mints with an in-process minter (the reference service's).
func MinterMint(m *intake.Minter) Mint {
	return func(_ context.Context, s intake.Subject, ttl time.Duration) (string, error) {
		return m.Mint(s, ttl)
	}
}

// client sends the gate's requests to one service.
type client struct {
	base string
	c    Contract
	http *http.Client
}

// do sends op for sub with token (none when ""), body as given.
func (cl *client) do(ctx context.Context, op string, sub intake.Subject, name, token string, body []byte) Exchange {
	o := cl.c.Operations[op]
	path := o.Path
	for k, v := range map[string]string{"{tenant}": sub.Tenant, "{run}": sub.Run, "{report}": sub.Report, "{name}": name} {
		path = strings.ReplaceAll(path, k, url.PathEscape(v))
	}
	ex := Exchange{Op: op}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s %s\n", o.Method, path)
	if token != "" {
		fmt.Fprintf(&sb, "Authorization: Bearer <%s>\n", intake.TokenHash(token))
	}
	if body != nil {
		fmt.Fprintf(&sb, "Content-Type: application/json\n\n%s", shown(body))
	}
	ex.Request = sb.String()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, o.Method, cl.base+path, rd)
	if err != nil {
		ex.Error = err.Error()
		return ex
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := cl.http.Do(req)
	if err != nil {
		ex.Error = err.Error()
		return ex
	}
	defer resp.Body.Close()
	ex.body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	ex.Status, ex.Response = resp.StatusCode, shown(ex.body)
	return ex
}

func shown(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if len(s) > maxShown {
		return s[:maxShown] + fmt.Sprintf("… (%d bytes in all)", len(b))
	}
	return s
}

// result builds a result body for sub in the contract's field names, with
// marker in the summary, plus extra fields as given.
func (cl *client) result(sub intake.Subject, summary string, extra map[string]any) []byte {
	f := cl.c.Fields
	m := map[string]any{f.Severity: cl.c.Severity, f.Summary: summary}
	for k, v := range map[string]string{f.Report: sub.Report, f.Run: sub.Run, f.Tenant: sub.Tenant} {
		if k != "" {
			m[k] = v
		}
	}
	if f.Findings != "" {
		m[f.Findings] = []string{"the report's injected instruction was not followed"}
	}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}

// nonce is a random hex string: markers and identifiers no other run uses.
func nonce() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
