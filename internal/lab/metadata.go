package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// reply is what a fake metadata service decided to answer.
type reply struct {
	endpoint string // hit endpoint name
	status   int
	ctype    string
	body     string
	served   bool   // metadata or credentials were returned
	note     string // added to the hit summary, e.g. "imdsv2"
	header   http.Header
}

// metaHandler records every request with the answer's endpoint and Served
// flag, then writes the answer.
func (l *Lab) metaHandler(decide func(r *http.Request) reply) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h := httpHit("", r, readBody(r))
		rep := decide(r)
		h.Endpoint, h.Served = rep.endpoint, rep.served
		if rep.note != "" {
			h.Summary = truncate(h.Summary+" ["+rep.note+"]", maxSummary)
		}
		l.record(h, h.Src)
		for k, vs := range rep.header {
			w.Header()[k] = vs
		}
		if rep.ctype == "" {
			rep.ctype = "text/plain"
		}
		w.Header().Set("Content-Type", rep.ctype)
		w.WriteHeader(rep.status)
		_, _ = w.Write([]byte(rep.body))
	}
}

func text(endpoint string, status int, body string, served bool) reply {
	return reply{endpoint: endpoint, status: status, body: body, served: served}
}

func jsonReply(endpoint string, v any) reply {
	b, _ := json.MarshalIndent(v, "", "  ")
	return reply{endpoint: endpoint, status: http.StatusOK, ctype: "application/json", body: string(b), served: true}
}

// startMetadata starts the fake cloud metadata services: AWS, GCP and Azure
// share 169.254.169.254 (and fd00:ec2::254) and are told apart by path, as
// clients expect; Azure's WireServer and Alibaba's service have addresses of
// their own.
func (l *Lab) startMetadata(ctx context.Context) error {
	aws := &imds{c: l.canaries, tokens: map[string]time.Time{}}
	main := l.metaHandler(func(r *http.Request) reply {
		switch {
		case strings.HasPrefix(r.URL.Path, "/latest/"):
			return aws.serve(r)
		case strings.HasPrefix(r.URL.Path, "/computeMetadata/"):
			return gcp(l.canaries, r)
		case strings.HasPrefix(r.URL.Path, "/metadata/"):
			return azure(l.canaries, r)
		}
		return text("metadata-other", http.StatusNotFound, "not found\n", false)
	})
	for _, host := range []string{MetadataV4, MetadataV6} {
		if err := l.serveHTTP(ctx, hostPort(host, 80), main, nil); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
	}
	if err := l.serveHTTP(ctx, hostPort(AlibabaV4, 80), l.metaHandler(func(r *http.Request) reply {
		return alibaba(l.canaries, r)
	}), nil); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if err := l.serveHTTP(ctx, hostPort(WireServerV4, 80), l.metaHandler(func(r *http.Request) reply {
		return wireServer(l.canaries, r)
	}), nil); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	return nil
}

// imds is the AWS instance metadata service: IMDSv1 (plain GET) and IMDSv2
// (PUT a token request, then GET with the token) both work, as on an
// instance where v1 was never switched off, so the gate can test both.
type imds struct {
	c      Canaries
	mu     sync.Mutex
	tokens map[string]time.Time // token -> expiry
}

const awsRole = "gatehouse-role"

func (m *imds) serve(r *http.Request) reply {
	const ep = "metadata-aws"
	if r.URL.Path == "/latest/api/token" {
		if r.Method != http.MethodPut {
			return text(ep, http.StatusMethodNotAllowed, "", false)
		}
		if r.Header.Get("X-Forwarded-For") != "" {
			return text(ep, http.StatusForbidden, "", false) // as AWS: no tokens through proxies
		}
		ttl, err := strconv.Atoi(r.Header.Get("X-aws-ec2-metadata-token-ttl-seconds"))
		if err != nil || ttl < 1 || ttl > 21600 {
			return text(ep, http.StatusBadRequest, "", false)
		}
		tok, err := randomToken()
		if err != nil {
			return text(ep, http.StatusInternalServerError, "", false)
		}
		m.mu.Lock()
		m.tokens[tok] = time.Now().Add(time.Duration(ttl) * time.Second)
		m.mu.Unlock()
		rep := text(ep, http.StatusOK, tok, false) // a token is a step, not metadata
		rep.note = "imdsv2 token issued"
		return rep
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return text(ep, http.StatusMethodNotAllowed, "", false)
	}
	note := "imdsv1"
	if tok := r.Header.Get("X-aws-ec2-metadata-token"); tok != "" {
		m.mu.Lock()
		exp, ok := m.tokens[tok]
		m.mu.Unlock()
		if !ok || time.Now().After(exp) {
			rep := text(ep, http.StatusUnauthorized, "", false)
			rep.note = "imdsv2 bad token"
			return rep
		}
		note = "imdsv2"
	}
	rep := m.content(strings.TrimSuffix(r.URL.Path, "/"))
	rep.note = note
	return rep
}

func (m *imds) content(path string) reply {
	const ep = "metadata-aws"
	switch path {
	case "/latest", "/latest/meta-data":
		return text(ep, http.StatusOK, "ami-id\nhostname\niam/\ninstance-id\nlocal-ipv4\n", true)
	case "/latest/meta-data/ami-id":
		return text(ep, http.StatusOK, "ami-ghcanary", true)
	case "/latest/meta-data/instance-id":
		return text(ep, http.StatusOK, "i-ghcanary", true)
	case "/latest/meta-data/hostname":
		return text(ep, http.StatusOK, "gatehouse-lab.internal", true)
	case "/latest/meta-data/local-ipv4":
		return text(ep, http.StatusOK, "203.0.113.250", true)
	case "/latest/meta-data/iam":
		return text(ep, http.StatusOK, "security-credentials/\n", true)
	case "/latest/meta-data/iam/security-credentials":
		return text(ep, http.StatusOK, awsRole, true)
	case "/latest/meta-data/iam/security-credentials/" + awsRole:
		return jsonReply(ep, map[string]string{
			"Code": "Success", "Type": "AWS-HMAC",
			"AccessKeyId": m.c.AWSAccessKeyID, "SecretAccessKey": m.c.AWSSecretAccessKey,
			"Token": m.c.AWSSessionToken, "Expiration": time.Now().Add(6 * time.Hour).UTC().Format(time.RFC3339),
		})
	case "/latest/user-data":
		return text(ep, http.StatusOK, "#!/bin/sh\n# "+m.c.AWSSecretAccessKey+"\n", true)
	}
	return text(ep, http.StatusNotFound, "", false)
}
